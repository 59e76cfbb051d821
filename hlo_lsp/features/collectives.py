"""Collectives in hover and inlay hints: the replica groups expanded, what their
ids are, the bytes each device moves, and the ``-start``/``-done`` pairing.

The facts come from :mod:`hlo_lsp.model.collectives`; this module only words
them. :func:`collective_parts` is the hover's **Collective** block,
:func:`collective_hint` the short inlay hint
(``8 devices · 2 groups of 4 · 6.0 KiB/dev``).
"""

from __future__ import annotations

from hlo_lsp.model.collectives import (EXPLAINED_OPCODES, CollectiveExplanation,
                                       ReplicaGroups, async_partner, explain_collective,
                                       wrapped_collective)
from hlo_lsp.model.hlo import HloModule, Instruction
from hlo_lsp.model.shapes import format_bytes
from hlo_lsp.model.markdown import code
from hlo_lsp.model.units import plural

#: At most this many groups (or pairs) listed in a hover.
MAX_GROUPS_LISTED = 8
#: At most this many ids listed per group.
MAX_IDS_LISTED = 16

MODE_SOURCE = "xla/service/collective_ops_utils.h, CollectiveOpGroupMode"
TRAFFIC_SOURCE = "nccl-tests doc/PERFORMANCE.md, bus bandwidth"
FORMS = {"list": "explicit list", "all": "empty: every participant", "iota": "iota",
         "mesh": "mesh axes", "invalid": "invalid"}



def _ids(group: tuple[int, ...]) -> str:
    shown = ",".join(map(str, group[:MAX_IDS_LISTED]))
    return "{" + shown + (",…" if len(group) > MAX_IDS_LISTED else "") + "}"


def groups_lines(groups: ReplicaGroups, ids: str) -> list[str]:
    """Markdown lines for ``replica_groups``: the form as written, its reading
    (iota reshape/transpose, mesh axes and grouped axes), counts and the first
    :data:`MAX_GROUPS_LISTED` groups of ``ids`` (e.g. "partition ids")."""
    lines = [f"- `replica_groups` ({FORMS[groups.form]}): {code(groups.text)}"]
    if groups.error:
        lines.append(f"  - ⚠ {groups.error}")
        return lines
    if groups.form == "iota":
        lines.append("  - the ids 0…N-1 reshaped and transposed as written, read in "
                     "row-major order, cut into groups (xla/hlo/ir/tile_assignment.h)")
    if groups.mesh:
        mesh = ", ".join(f"{code(a.name)}={a.size}" for a in groups.mesh)
        axes = ", ".join(f"{code(a.text)}" for a in groups.axes) or "none (groups of one)"
        lines.append(f"  - mesh {mesh}; grouped over {axes}"
                     + (f"; device_ids {code(groups.device_ids)}" if groups.device_ids else ""))
    if groups.form != "all":
        if groups.group_size is not None:
            lines.append(f"  - {plural(groups.group_count, 'group')} of "
                         f"{groups.group_size} {ids}")
        elif groups.sizes:
            lines.append(f"  - {groups.group_count} groups of different sizes: "
                         + ", ".join(map(str, groups.sizes[:MAX_GROUPS_LISTED]))
                         + ("…" if len(groups.sizes) > MAX_GROUPS_LISTED else ""))
        elif groups.group_count is not None:
            lines.append(f"  - {groups.group_count} groups")
    if groups.groups is not None:
        shown = groups.groups[:MAX_GROUPS_LISTED]
        lines.append("  - " + ", ".join(_ids(g) for g in shown)
                     + (f" and {len(groups.groups) - len(shown)} more"
                        if len(groups.groups) > len(shown) else ""))
    elif groups.truncated:
        lines.append(f"  - not expanded: more ids than hlo-lsp lists "
                     f"({groups.id_count if groups.id_count is not None else 'too many'}); "
                     "counted only")
    return lines


def _mode_line(ex: CollectiveExplanation) -> str:
    said = []
    if ex.channel_id is not None:
        said.append(f"`channel_id={ex.channel_id}`")
    else:
        said.append("no `channel_id`")
    if ex.use_global_device_ids is not None:
        said.append(f"`use_global_device_ids={str(ex.use_global_device_ids).lower()}`")
    if ex.mode is None:
        return f"- {' and '.join(said)}: ⚠ {ex.mode_error} (*{MODE_SOURCE}*)"
    return (f"- {' and '.join(said)}: {code(ex.mode.value)}, {ex.mode.meaning} "
            f"(*{MODE_SOURCE}*)")


def explanation_markdown(ex: CollectiveExplanation) -> str:
    """The **Collective** block of a hover for one explanation."""
    head = (f"**Collective** {code(ex.opcode)} — {ex.devices} devices "
            f"(replica_count={ex.replicas} × num_partitions={ex.partitions})")
    lines = [head, "", _mode_line(ex)]
    if ex.warning:
        lines.append(f"- ⚠ {ex.warning}")
    ids = ex.mode.ids if ex.mode is not None else "ids"
    if ex.groups is not None:
        lines.extend(groups_lines(ex.groups, ids))
    elif ex.pairs is None:
        lines.append("- no `replica_groups`: one group of every participant")
    if ex.pairs is not None:
        p = ex.pairs
        if p.error:
            lines.append(f"- `source_target_pairs`: ⚠ {p.error}")
        else:
            what = f"- `source_target_pairs`: {p.count} pairs (source → target, {ids})"
            if p.shift:
                what += f", {p.shift}"
            lines.append(what)
            if p.pairs:
                shown = p.pairs[:MAX_GROUPS_LISTED]
                lines.append("  - " + ", ".join(f"{s}→{t}" for s, t in shown)
                             + (f" and {len(p.pairs) - len(shown)} more"
                                if len(p.pairs) > len(shown) else ""))
    as_written = (ex.groups.group_size, ex.groups.group_count) if ex.groups else None
    if ex.devices_per_group is not None and ex.group_count is not None and \
            as_written != (ex.devices_per_group, ex.group_count):
        lines.append(f"- {plural(ex.group_count, 'device group')} of "
                     f"{ex.devices_per_group} take part")
    t = ex.traffic
    if t is not None:
        moved = (f"- per device: sends {format_bytes(t.sent)}, receives "
                 f"{format_bytes(t.received)}: {t.formula}")
        if ex.pairs is not None:
            lines.append(f"{moved}, buffer {format_bytes(t.buffer)} (point to point)")
        else:
            bound = ("an upper bound" if not t.exact else
                     "a lower bound for any algorithm of point-to-point sends (a ring "
                     "reaches it; in-network reduction can move less)")
            lines.append(f"{moved} with n={t.n}, buffer {format_bytes(t.buffer)}: {bound} "
                         f"(*{TRAFFIC_SOURCE}*)")
    return "\n".join(lines)


def collective_parts(module: HloModule, ins: Instruction) -> list[str]:
    """Hover blocks for ``ins``: for a collective (and a ``-start``) its
    **Collective** block and, for a ``-start``, which ``-done`` completes it;
    for a ``-done``, which ``-start`` it completes and that start's block.
    [] for any other instruction."""
    out: list[str] = []
    partner = async_partner(ins)
    if ins.opcode.endswith("-done") and partner:
        start = partner[0]
        out.append(f"completes {code('%' + start.name.name)} ({code(start.opcode)})")
        ex = explain_collective(start, module)
        if ex is not None:
            out.append(explanation_markdown(ex))
        return out
    wrapped = wrapped_collective(ins, module)
    if wrapped is not None:
        out.append(f"runs {code('%' + wrapped.name.name)} ({code(wrapped.opcode)}) asynchronously")
    ex = explain_collective(ins, module)
    if ex is not None:
        out.append(explanation_markdown(ex))
    if ins.opcode.endswith("-start") and partner:
        out.append("completed by " + ", ".join(f"{code('%' + d.name.name)}" for d in partner))
    return out


def collective_hint(module: HloModule, ins: Instruction) -> tuple[int, str, str] | None:
    """``(offset, label, tooltip)`` of the inlay hint of a collective: after its
    ``replica_groups`` value (after ``device_ids`` for a mesh form with device
    ids, after ``source_target_pairs`` for collective-permute, else after the
    opcode), e.g. ``8 devices · 2 groups of 4 · 6.0 KiB/dev`` (bytes each device
    sends, ring lower bound). None for other instructions."""
    if ins.opcode not in EXPLAINED_OPCODES and ins.opcode != "async-start":
        return None
    # Counts only: a short iota or mesh form can stand for 65536 ids, and a
    # whole-document request asks for every collective.
    ex = explain_collective(ins, module, limit=0)
    if ex is None:
        return None
    offset = ins.opcode_start + len(ins.opcode)
    for name in ("device_ids", "replica_groups", "source_target_pairs"):
        attr = ins.attribute(name)
        if attr is not None and (name != "device_ids" or
                                 ins.attribute("replica_groups") is not None):
            offset = attr.value_end
            break
    tooltip = explanation_markdown(ex).replace("**", "").replace("`", "")
    tooltip = "\n".join(line for line in tooltip.splitlines() if "not expanded" not in line)
    return offset, ex.hint(), tooltip
