"""The kernel summary as reports: the plain-text table of ``hlo-lsp summary``
and the Markdown of the ``hlo.showSummary`` command; with a profile, the kernels
by measured time (:func:`measured_summary`, :func:`format_measured`).

The summary itself (which kernels a module runs, their kinds, targets and
Python source) is :func:`hlo_lsp.model.summary.kernel_summary`; the measured
times are :mod:`hlo_lsp.model.profile`'s, their estimate
:func:`hlo_lsp.features.measured.estimate_seconds`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hlo_lsp.model.markdown import cell, code, fence, text
from hlo_lsp.model.visible import visible
from hlo_lsp.model.units import format_count, format_microseconds as _us, format_seconds
from hlo_lsp.model.accelerators import Accelerator
from hlo_lsp.model.folding import FoldedSummary
from hlo_lsp.model.op_names import op_name_pattern, short_op_name
from hlo_lsp.model.summary import CATEGORIES, Kernel, KernelGroup, KernelSummary
from hlo_lsp.model.hlo import HloModule
from hlo_lsp.model.profile import Measured, ModuleProfile
from hlo_lsp.features.measured import estimate_seconds, ratio_text


def _kernel_line(k: Kernel) -> list[str]:
    cells = [f"%{k.name}"]
    if k.category == "fusion":
        kind = k.hlo_kind or "?"
        if k.backend_kind:
            kind += f" {k.backend_kind}" + ("*" if k.backend_kind_inferred else "")
        cells.append(kind)
        cells.append(k.label)
        cells.append(", ".join(k.contains))
    elif k.category == "custom-call":
        cells.append(k.target)
        cells.append(k.library)
        cells.append("")
    else:
        cells.append(k.opcode)
        cells.append(k.shape)
        cells.append("")
    cells.append(k.where)
    cells.append(" > ".join(k.context))
    return cells


#: Widest a text column is padded to: a longer cell (a tuple shape thousands of
#: levels deep, a long custom-call target) is kept whole but overflows its
#: column on its own row, instead of padding every row of the table to it (a
#: 20,000-character shape made a 19,700-row summary 397 MB).
MAX_COLUMN = 48


def _table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    """Rows of cells as aligned text lines (columns padded to at most
    :data:`MAX_COLUMN`; empty columns left out). Cells hold text from the dump
    (labels, op_names): each is one line, control characters shown escaped."""
    if not rows:
        return []
    rows = [[visible(c) for c in r] for r in rows]
    widths = [min(max(len(r[i]) for r in rows), MAX_COLUMN) for i in range(len(rows[0]))]
    out = []
    for r in rows:
        line = "  ".join(c.ljust(w) for c, w in zip(r, widths) if w)
        out.append(indent + line.rstrip())
    return out


_TITLES = {"fusion": "Fusions", "custom-call": "Custom-calls", "collective": "Collectives",
           "op": "Other ops (outside fusions)"}


def format_text(summary: KernelSummary, note: str = "",
                folded: FoldedSummary | None = None) -> str:
    """The plain-text report of ``hlo-lsp summary --all``: headline, ``note`` (e.g.
    that the dump was compiled for a GPU without it, so its kernels were chosen
    without autotuning: :meth:`hlo_lsp.dump.targets.DevicelessRecord.statement`),
    then one table per category (name, kind/target, label, contents, Python
    source, control-flow context). With ``folded`` (of the same summary), the
    short report of :func:`format_folded` comes first and the tables follow
    under "All kernels", indented (they fold by indentation)."""
    if folded is not None:
        head = format_folded(folded, note).rstrip("\n").splitlines()[:-2]
        full = format_text(summary).splitlines()[3:]
        return "\n".join(head + ["", f"All kernels ({len(summary.kernels)})"] +
                          [("  " + ln) if ln else "" for ln in full]).rstrip() + "\n"
    lines = [f"HloModule {summary.module or '?'}, ENTRY %{summary.entry or '?'}",
             summary.headline(), *([note] if note else []), ""]
    inferred = False
    for cat in CATEGORIES:
        ks = summary.of(cat)
        lines.append(f"{_TITLES[cat]} ({len(ks)})")
        lines.extend(_table([_kernel_line(k) for k in ks]))
        lines.extend(_note_lines(ks))
        inferred |= any(k.backend_kind_inferred for k in ks)
        lines.append("")
    if inferred:
        lines.append("* backend kind inferred from the fusion name (XLA's GemmFusion pass "
                     "names its Triton GEMM fusions gemm_fusion_*); the dump has no "
                     "backend_config")
    return "\n".join(lines).rstrip() + "\n"


def format_markdown(summary: KernelSummary, note: str = "",
                    folded: FoldedSummary | None = None) -> str:
    """Markdown report (the ``hlo.showSummary`` command): headline, ``note`` (see
    :func:`format_text`) in italics, and one table per category under a
    ``####`` heading (headings fold in an editor). With ``folded``, the short
    report of :func:`format_folded_markdown` comes first."""
    if folded is not None:
        tables = format_markdown(summary).replace("#### ", "##### ").split("\n\n", 2)[2:]
        return (format_folded_markdown(folded, note) + "\n" +
                f"#### All kernels ({len(summary.kernels)})\n\n" + "".join(tables))
    parts = [f"### Kernels of {code(summary.module or '?')} (ENTRY {code('%' + (summary.entry or '?'))})",
             f"**{summary.headline()}**", *([f"*{note}*"] if note else [])]
    headers = {"fusion": "| fusion | kind | backend | contains | source | in |",
               "custom-call": "| custom-call | target | library | | source | in |",
               "collective": "| collective | opcode | shape | | source | in |",
               "op": "| op | opcode | shape | | source | in |"}
    for cat in CATEGORIES:
        ks = summary.of(cat)
        if not ks:
            continue
        rows = [f"#### {_TITLES[cat]} ({len(ks)})", "", headers[cat], "|---" * 6 + "|"]
        rows.extend(_markdown_row(_kernel_line(k)) for k in ks)
        notes = _note_lines(ks, "")
        if notes:
            # Text from the dump (names) in a code block: nothing to escape.
            rows += ["", notes[0], "", fence("\n".join(notes[1:]))]
        parts.append("\n".join(rows))
    return "\n\n".join(parts) + "\n"


def _note_lines(kernels: list[Kernel], indent: str = "  ",
                limit: int | None = None) -> list[str]:
    """``Notes:`` and one line per note of ``kernels`` (``%name: note``, what a
    matrix kernel computes in and its split-K:
    :func:`hlo_lsp.model.precision.kernel_notes`), at most ``limit`` lines and
    a count of the rest; [] without notes."""
    lines = [f"{indent}  %{k.name}: {note}" for k in kernels for note in k.notes]
    if not lines:
        return []
    if limit is not None and len(lines) > limit:
        lines = lines[:limit] + [f"{indent}  ... {len(lines) - limit} more "
                                 "(hlo-lsp summary --all)"]
    return [f"{indent}Notes:"] + lines


def _markdown_row(cells: list[str]) -> str:
    """One table row of :func:`format_markdown`: the name and the kind (or
    target, or opcode) as code, the other cells with ``|`` escaped."""
    name, kind, *rest = cells
    return "| " + " | ".join([cell(code(name)) if name else name,
                              cell(code(kind)) if kind else kind,
                              *(cell(text(c)) for c in rest)]) + " |"


def format_top(groups: list[KernelGroup], device: Accelerator, top: int) -> str:
    """The ``--top N`` table of ``hlo-lsp summary``: the ``top`` slowest kernels
    (kernels of one structure folded into one row, ``Nx``) by roofline time
    on ``device``, with their share of the estimated total, FLOPs, bytes
    accessed and what bounds them (:func:`hlo_lsp.model.summary.ranked_kernels`)."""
    total = sum(g.seconds for g in groups)
    lines = [f"Top {min(top, len(groups))} of {len(groups)} kernel structures by estimated "
             f"time on {device.name} (roofline; total {format_seconds(total)}; a kernel "
             "in a loop counted once)"]
    rows = [["#", "kernel", "count", "time", "share", "FLOPs", "bytes", "bound", "label"]]
    for i, g in enumerate(groups[:top], 1):
        first = g.kernels[0]
        rows.append([str(i), f"%{first.name}", f"{len(g.kernels)}x", format_seconds(g.seconds),
                     f"{100 * g.share:.1f}%", format_count(g.cost.known_flops, ""),
                     format_count(g.cost.known_bytes, "B"), g.bound, first.label])
    lines.extend(_table(rows))
    return "\n".join(lines) + "\n"


#: Rows of each table of the folded report (``--top`` changes the first).
FOLDED_ROWS = 10
#: Loop bodies and branches shown (slowest first), and rows of each.
CONTROL_FLOW_GROUPS = 3
CONTROL_FLOW_ROWS = 5


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _group_row(g: KernelGroup, scope: str | None, repeats: int = 0) -> list[str]:
    first = g.kernels[0]
    n = len(g.kernels)
    count = f"{n // repeats}x{repeats}" if repeats > 1 and n % repeats == 0 else f"{n}x"
    return [f"%{first.name}", count, format_seconds(g.seconds),
            f"{100 * g.share:.1f}%", format_count(g.cost.known_flops, "FLOP"),
            format_count(g.cost.known_bytes, "B"), g.bound, first.label,
            short_op_name(op_name_pattern(first.op_name, scope), 70) or first.where]


_GROUP_HEAD = ["kernel", "count", "time", "share", "FLOPs", "bytes", "bound", "label",
               "op_name (or source)"]


def _sections(folded: FoldedSummary, note: str, top: int) -> list[tuple[str, list[str]]]:
    """(title, body lines) of the folded report; the first title is the head."""
    summary, scope = folded.summary, folded.scope
    t = folded.totals
    head = [summary.headline(), *([note] if note else []),
            f"Totals of ENTRY as XLA's cost analysis counts them: "
            f"{format_count(t.flops, 'FLOP')}, "
            f"{format_count(t.transcendentals, '').strip()} transcendentals, "
            f"{format_count(t.bytes_accessed, 'B')} accessed",
            f"Estimated time: {format_seconds(folded.seconds)} on {folded.device.name} "
            f"(roofline sum of {len(summary.kernels)} kernels, a loop body counted once)"]
    out = [(f"HloModule {summary.module or '?'}, ENTRY %{summary.entry or '?'}", head)]
    rows = [["#", *_GROUP_HEAD]]
    rows += [[str(i), *_group_row(g, scope)] for i, g in enumerate(folded.groups[:top], 1)]
    out.append((f"Top {min(top, len(folded.groups))} of {len(folded.groups)} kernel groups "
                f"by estimated time (same structure and op_name pattern folded)",
                _table(rows)))
    noted = [k for k in summary.kernels if k.notes]
    if noted:
        out.append((f"Precision and split-K ({_plural(len(noted), 'kernel')})",
                    _note_lines(noted, "", top)[1:]))
    flow = [r for r in folded.repeats if r.kind != "scope"]
    flow_shown = sorted(flow, key=lambda r: -r.seconds)[:CONTROL_FLOW_GROUPS]
    for r in folded.repeats:
        if r.kind != "scope" and r not in flow_shown:
            continue
        rows_shown = top
        if r.kind == "scope":
            title = (f"Repeated: {r.name} x{r.count}: {len(r.kernels)} kernels, "
                     f"{100 * r.share:.1f}% of the time ({format_seconds(r.seconds)})")
            body = [f"  {r.per_repeat} kernels per repeat in {r.regular} of {r.count}; "
                    f"{r.identical} of {r.count} run the very same kernels; "
                    f"its slowest kernels (count per repeat x repeats):"]
        else:
            trips = f"{r.trip_count} iterations, " if r.trip_count is not None else ""
            title = (f"{r.name}: {_plural(len(r.kernels), 'kernel')}, {100 * r.share:.1f}% "
                     f"of the time ({trips}counted once)")
            body = []
            rows_shown = min(top, CONTROL_FLOW_ROWS)
        rows = [_GROUP_HEAD] + [_group_row(g, scope, r.count) for g in r.rows[:rows_shown]]
        body += _table(rows, "    " if r.kind == "scope" else "  ")
        if len(r.rows) > rows_shown:
            body.append(f"    ... {len(r.rows) - rows_shown} more kernel groups")
        out.append((title, body))
    if len(flow) > len(flow_shown):
        rest = [r for r in flow if r not in flow_shown]
        out.append((f"... {len(rest)} more loop bodies and branches "
                     f"({100 * sum(r.share for r in rest):.1f}% of the time)", []))
    if folded.collectives:
        rows = [["collective", "count", "sent per device", "devices", "time", "op_name"]]
        for c in folded.collectives[:top]:
            first = c.group.kernels[0]
            rows.append([f"%{first.name} ({first.opcode})", f"{len(c.group.kernels)}x",
                         "?" if c.sent is None else format_count(c.sent, "B"),
                         "?" if c.devices is None else str(c.devices),
                         format_seconds(c.group.seconds),
                         short_op_name(op_name_pattern(first.op_name, scope), 70)])
        sent = sum(c.sent or 0 for c in folded.collectives)
        body = _table(rows)
        if len(folded.collectives) > top:
            body.append(f"  ... {len(folded.collectives) - top} more")
        out.append((f"Collectives ({len(summary.of('collective'))}; "
                    f"{format_count(sent, 'B')} sent per device)", body))
    else:
        out.append(("Collectives (0)", []))
    c = summary.counts()
    counts = []
    for cat, key in (("fusion", "fusion_by_hlo_kind"), ("custom-call", "custom_call_by_target"),
                     ("collective", "collective_by_opcode"), ("op", "op_by_opcode")):
        detail = sorted(c[key].items(), key=lambda kv: -kv[1])
        shown = ", ".join(f"{k} {n}" for k, n in detail[:8])
        more = f", +{len(detail) - 8} more" if len(detail) > 8 else ""
        counts.append(f"  {_TITLES[cat]}: {c[cat]}" + (f" ({shown}{more})" if shown else ""))
    out.append(("Kernels per kind", counts))
    return out


def format_folded(folded: FoldedSummary, note: str = "", top: int = FOLDED_ROWS) -> str:
    """The default report of ``hlo-lsp summary``, short for any module: head
    (headline, ``note``, totals of ENTRY as XLA counts them and the estimated
    time), the ``top`` slowest kernel groups with their share of the estimated
    total, each repeated structure folded into one section (the layers of an
    unrolled loop as ``layer_{0..47} x48``, each loop body), collectives with
    the bytes each device sends, and counts per kind
    (:func:`hlo_lsp.model.folding.fold_summary`). Sections are separated by a
    blank line, their bodies indented (they fold by indentation)."""
    lines: list[str] = []
    for i, (title, body) in enumerate(_sections(folded, note, top)):
        if i:
            lines.append("")
        lines.append(title)
        lines.extend(body)
    lines += ["", "The full list of kernels: hlo-lsp summary --all"]
    return "\n".join(lines) + "\n"


def format_folded_markdown(folded: FoldedSummary, note: str = "",
                           top: int = FOLDED_ROWS) -> str:
    """:func:`format_folded` as Markdown: one ``####`` heading per section (they
    fold in an editor's Markdown view), the tables in code blocks."""
    parts = []
    for i, (title, body) in enumerate(_sections(folded, note, top)):
        if i == 0:
            parts.append(f"### {text(title)}\n\n" + "\n\n".join(
                f"**{text(body[0])}**" if j == 0 else text(b) for j, b in enumerate(body)))
        else:
            # Dump text (names, labels) in a block no backtick run in it can close.
            parts.append(f"#### {text(title)}" + ("\n\n" + fence("\n".join(body))
                                                  if body else ""))
    return "\n\n".join(parts) + "\n"


@dataclass(frozen=True, slots=True)
class RowTarget:
    """A row of a text report that names a kernel: ``line`` (0-based) of the
    report, ``start``/``end`` the ``%name`` on it (code points), ``offset`` the
    kernel instruction's start in the module's text (:attr:`Kernel.offset`)."""

    line: int
    start: int
    end: int
    offset: int


#: The first ``%name`` of a row: after the indentation and a rank column ("  3  %x").
_ROW_NAME = re.compile(r"^ *(?:\d+ +)?%([^\s%]+)")


def row_targets(text: str, summary: KernelSummary) -> list[RowTarget]:
    """The rows of :func:`format_text` (or :func:`format_folded`) of ``summary``
    that start with a kernel's ``%name``, each with where that kernel is: what a
    client links so that a row goes to its instruction. A name that is no kernel
    of ``summary`` (a title, a note) is no target; of two kernels of one name
    (not XLA's output: its names are unique in a module) the first counts."""
    where: dict[str, int] = {}
    for k in summary.kernels:
        where.setdefault(k.name, k.offset)
    out = []
    for i, line in enumerate(text.split("\n")):
        m = _ROW_NAME.match(line)
        if m is not None and m.group(1) in where:
            out.append(RowTarget(i, m.start(1) - 1, m.end(1), where[m.group(1)]))
    return out


# --------------------------------------------------------------- measured ---

#: Opcodes whose measured time holds the time of the instructions they run
#: (a loop's body, a branch, a callee): reported apart from the kernels.
CONTROL_FLOW_OPCODES = frozenset("while conditional call async-start async-done".split())
#: Kernels called out as furthest from their roofline, and the least share of
#: the step they take (a kernel of a few ns is far from any roofline by its
#: launch alone: not what to look at first).
FURTHEST_ROWS = 5
FURTHEST_MIN_SHARE = 0.01


@dataclass(frozen=True, slots=True)
class MeasuredRow:
    """One measured instruction of a :class:`MeasuredSummary`: ``name``,
    ``opcode``, ``label`` (the kernel's, else the opcode), ``computation``,
    ``offset`` (its start in the module's text), ``measured`` (count, total and
    self time in µs, summed over every event of the profile), ``share`` (of the
    module's execution time, 0..1, None when unknown), ``estimate_s`` (the
    roofline time of one execution on the profile's device, seconds, None
    without one) and ``ratio`` (mean self time over that estimate)."""

    name: str
    opcode: str
    label: str
    computation: str
    offset: int
    measured: Measured
    share: float | None
    estimate_s: float | None = None
    ratio: float | None = None


@dataclass(slots=True)
class MeasuredSummary:
    """A module's kernels with their measured times (:func:`measured_summary`).

    ``kernels``: the measured kernels of ``summary``, most total time first;
    ``control_flow``: the measured ``while``/``conditional``/``call`` (their
    time holds their bodies'); ``other``: any other measured instruction that
    is no kernel; ``unmeasured``: the kernels the profile has no event of.
    ``device``: the accelerator of the estimates (None: no ratio)."""

    summary: KernelSummary
    profile: ModuleProfile
    device: Accelerator | None
    kernels: list[MeasuredRow]
    control_flow: list[MeasuredRow]
    other: list[MeasuredRow]
    unmeasured: list[Kernel]

    def furthest(self, n: int = FURTHEST_ROWS) -> list[MeasuredRow]:
        """The ``n`` kernels whose measured self time is the largest multiple of
        their roofline estimate, among those with an estimate that take at least
        :data:`FURTHEST_MIN_SHARE` of the step."""
        rated = [r for r in self.kernels if r.ratio is not None
                 and (r.share or 0.0) >= FURTHEST_MIN_SHARE]
        return sorted(rated, key=lambda r: -r.ratio)[:n]

    def rows(self) -> list[MeasuredRow]:
        """Every measured instruction: kernels, control flow, the others."""
        return self.kernels + self.control_flow + self.other


def measured_summary(module: HloModule, summary: KernelSummary, profile: ModuleProfile,
                     device: Accelerator | None) -> MeasuredSummary:
    """Join ``profile`` (of ``module``'s compile: the caller checked it,
    :func:`hlo_lsp.dump.profiles.join_file`) to the kernels of ``summary``:
    each measured kernel with its share of the step and its measured mean self
    time over its roofline estimate on ``device`` (the device the profile ran
    on, :func:`hlo_lsp.features.measured.profile_device`; None: no estimate);
    the measured control flow and other instructions apart. Pure."""
    instructions = {i.name.name: i for c in module.computations for i in c.instructions}

    def row(name: str, label: str, computation: str, offset: int) -> MeasuredRow:
        m = profile.ops[name]
        ins = instructions.get(name)
        estimate = estimate_seconds(module, ins, device) \
            if ins is not None and device is not None else None
        ratio = m.mean_self_us * 1e-6 / estimate if estimate else None
        return MeasuredRow(name, ins.opcode if ins is not None else "", label, computation,
                           offset, m, profile.share(name), estimate, ratio)

    kernels, unmeasured, seen = [], [], set()
    for k in summary.kernels:
        seen.add(k.name)
        if k.name in profile.ops:
            kernels.append(row(k.name, k.label, k.computation, k.offset))
        else:
            unmeasured.append(k)
    flow, other = [], []
    for name in profile.ops:
        ins = instructions.get(name)
        if name in seen or ins is None:
            continue
        comp = ins.computation
        r = row(name, ins.opcode, comp.name.name if comp is not None else "", ins.start)
        (flow if ins.opcode in CONTROL_FLOW_OPCODES else other).append(r)
    by_time = lambda r: (-r.measured.total_us, r.name)  # noqa: E731
    return MeasuredSummary(summary, profile, device, sorted(kernels, key=by_time),
                           sorted(flow, key=by_time), sorted(other, key=by_time), unmeasured)


def measured_dict(m: Measured) -> dict:
    """The ``"measured"`` object of ``hlo-lsp summary --profile --json`` (the
    contract for scripts, docs/profiles.md): ``count`` (events), ``total_us`` and
    ``self_us`` (µs, summed over every event of the profile)."""
    return {"count": m.count, "total_us": m.total_us, "self_us": m.self_us}


def measured_row_dict(r: MeasuredRow, offset: int = 0) -> dict:
    """One row of the JSON's ``control_flow``/``other_measured`` lists: name,
    opcode, computation, offset (plus ``offset``), ``measured``
    (:func:`measured_dict`), ``share``, ``estimate_seconds``, ``measured_vs_estimate``."""
    return {"name": r.name, "opcode": r.opcode, "computation": r.computation,
            "offset": r.offset + offset, "measured": measured_dict(r.measured),
            "share": r.share, "estimate_seconds": r.estimate_s, "measured_vs_estimate": r.ratio}


def _ratio(r: MeasuredRow) -> str:
    if r.ratio is None:
        return ""
    return ratio_text(r.ratio)


def _share(share: float | None) -> str:
    return "" if share is None else f"{100 * share:.1f}%"


def format_measured(ms: MeasuredSummary, run: str, top: int = FOLDED_ROWS) -> str:
    """The report of ``hlo-lsp summary FILE --profile DIR``: the module's
    executions and step time in the profile ``run``, the ``top`` kernels by
    measured total time (count, total, mean, self, share of the step, the
    roofline estimate and measured mean self time over it), the kernels
    furthest from their roofline, the measured control flow (a loop's time
    holds its body's: its self time is its own) and what was not measured."""
    p = ms.profile
    where = ", ".join(p.devices) or "device unknown"
    lines = [f"HloModule {ms.summary.module or '?'}, ENTRY %{ms.summary.entry or '?'}: "
             f"measured in profile {run} ({where})",
             f"  {_plural(p.executions, 'execution')}, {_us(p.step_mean_us)} each "
             f"({_us(p.step_us)} in all); {len(ms.kernels)} of "
             f"{len(ms.summary.kernels)} kernels measured"
             + (f"; estimates: roofline on {ms.device.name}" if ms.device is not None else
                "; no roofline estimate for this device"), ""]
    head = ["#", "kernel", "count", "total", "mean", "self", "share", "estimate",
            "measured/est", "label"]
    rows = [head]
    for i, r in enumerate(ms.kernels[:top], 1):
        m = r.measured
        rows.append([str(i), f"%{r.name}", f"{m.count}x", _us(m.total_us), _us(m.mean_us),
                     _us(m.self_us), _share(r.share),
                     "" if r.estimate_s is None else format_seconds(r.estimate_s),
                     _ratio(r), r.label])
    lines.append(f"Kernels by measured time (top {min(top, len(ms.kernels))} of "
                 f"{len(ms.kernels)}; share of the step; measured/est: mean self time over "
                 "the roofline estimate)")
    lines.extend(_table(rows))
    if len(ms.kernels) > top:
        lines.append(f"  ... {len(ms.kernels) - top} more (--top N)")
    furthest = ms.furthest()
    if furthest:
        lines += ["", f"Furthest from their roofline (mean self time over the estimate; "
                      f"kernels of at least {FURTHEST_MIN_SHARE:.0%} of the step)"]
        lines.extend(_table([[f"%{r.name}", _ratio(r), f"{_us(r.measured.mean_self_us)} "
                              f"measured, {format_seconds(r.estimate_s or 0)} estimated",
                              r.label] for r in furthest]))
    if ms.control_flow or ms.other:
        lines += ["", "Control flow and other instructions measured (a loop's or branch's "
                  "total holds its body's; self: its own)"]
        lines.extend(_table([[f"%{r.name}", r.opcode, f"{r.measured.count}x",
                              f"total {_us(r.measured.total_us)}",
                              f"self {_us(r.measured.self_us)}", _share(r.share), r.computation]
                             for r in ms.control_flow + ms.other]))
    if ms.unmeasured:
        names = ", ".join(f"%{k.name}" for k in ms.unmeasured[:6])
        more = f" and {len(ms.unmeasured) - 6} more" if len(ms.unmeasured) > 6 else ""
        lines += ["", f"Not measured ({len(ms.unmeasured)}): {names}{more}"]
    return "\n".join(lines) + "\n"


__all__ = ["CONTROL_FLOW_OPCODES", "FOLDED_ROWS", "MeasuredRow", "MeasuredSummary",
           "RowTarget", "format_measured", "measured_dict", "measured_row_dict",
           "measured_summary", "format_folded", "format_folded_markdown",
           "format_markdown", "format_text", "format_top", "row_targets"]
