"""What changed between two HLO modules of the same program, instruction by
instruction: the instruction part of the one comparison
(:mod:`hlo_lsp.model.comparison`) behind ``hlo-lsp diff``, the compare command
and the "what changed" report of a recompile (:mod:`hlo_lsp.dump.recompile`).

Instructions are matched by :func:`hlo_lsp.model.matching.match_structure`,
which survives renames (XLA numbers names afresh in every compile and renames
between passes): exact subgraphs by structure, names where they are stable,
the ``op_name`` of the metadata with the innermost Python frame (the file's
base name, function, column and line, :func:`hlo_lsp.model.frames.source_key`:
a copy of the program elsewhere is the same program), then propagation and a
bottom-up search by similarity; an instruction that does the same work on
another kernel (a cuBLASLt call that became a Triton GEMM fusion) is matched
too. The matcher by metadata alone, :func:`match_instructions`, pairs by that
key, then without the line (an edit above moves the lines of everything below
it), then by ``op_name`` and opcode, each key's instructions in text order.

Changes are reported for the instructions :func:`reported` names: those with
an ``op_name``, and the kernels XLA made (fusions, library calls) outside
fused computations; parameters, tuples, bitcasts without ``op_name`` and the
insides of fused computations show in the kernels that hold them. Every
computation is looked at, fused ones included, so an ``add`` that joined a
fusion is seen.

A matched pair is *changed* when one of these differs (:data:`FIELDS`): the
opcode (the same work now runs otherwise: "the same dot, now a Triton GEMM
fusion", :attr:`InstructionChange.now_runs_as`), the shape (element types and
dimensions, layout removed), the layout, the fusion kind (``kind=``), the
custom-call target, or, for the same opcode, a scalar field of a JSON
``backend_config`` (a dotted path such as
``gemm_backend_config.selected_algorithm``; xla/service/gpu/backend_configs.proto).

Pure and deterministic; never raises on any parsed module.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from hlo_lsp.model.backend_config import is_json_object
from hlo_lsp.model.frames import python_stack, short_frame, source_key
from hlo_lsp.model.hlo import HloModule, Instruction, unquote
from hlo_lsp.model.kernels import custom_call_target
from hlo_lsp.model.matching import (Matching, instruction_role, kernel_label, match_structure,
                                    op_name_text)
from hlo_lsp.model.summary import NOT_KERNELS

#: The properties compared, in report order.
FIELDS = ("opcode", "shape", "layout", "fusion kind", "custom-call target", "backend_config")
#: backend_config fields that differ in every compile and say nothing.
IGNORED_CONFIG = frozenset({"operation_queue_id", "wait_on_operation_queues"})
#: At most this many differing backend_config fields per instruction.
MAX_CONFIG_FIELDS = 4

_LAYOUT = re.compile(r"\{[^{}]*\}")
#: The source of an instruction without a Python frame (made by the compiler).
NO_SOURCE = "(no Python source)"
#: Without a Python source, this many changes of one status and opcode make one line.
COLLAPSE_AT = 3


@dataclass(frozen=True, slots=True)
class Facts:
    """What is compared of one instruction. ``name`` without ``%``; ``shape``
    without layouts (``f32[64,128]``); ``layout`` the layouts only
    (``{1,0}``); ``config``: scalar leaves of the JSON backend_config by dotted
    path; ``source``: ``file.py:12`` of the innermost frame, or
    :data:`NO_SOURCE`; ``role``: the work it does when another opcode could do
    it (:func:`hlo_lsp.model.matching.instruction_role`: "dot"...), else "";
    ``kernel``: what it runs as (:func:`hlo_lsp.model.matching.kernel_label`:
    "Triton GEMM fusion", "cuBLASLt FP8 call", else the opcode); ``reported``:
    whether its change is worth a line (:func:`reported`)."""

    name: str
    opcode: str
    shape: str
    layout: str
    fusion_kind: str | None
    target: str | None
    config: tuple[tuple[str, str], ...]
    source: str
    role: str = ""
    kernel: str = ""
    reported: bool = True

    def values(self) -> dict[str, str | None]:
        """The :data:`FIELDS` except backend_config, as display strings."""
        return {"opcode": self.opcode, "shape": self.shape, "layout": self.layout,
                "fusion kind": self.fusion_kind, "custom-call target": self.target}

    def label(self) -> str:
        """``%dot.3 = f32[64,128] dot``."""
        return f"%{self.name} = {self.shape} {self.opcode}"


@dataclass(frozen=True, slots=True)
class InstructionChange:
    """``status``: "added", "removed" or "changed"; ``old``/``new``: the facts
    on each side (None for the side without it); ``fields``: for a change,
    ``(field, old, new)`` per differing property (a backend_config field is
    named ``backend_config.<path>``)."""

    status: str
    old: Facts | None
    new: Facts | None
    fields: tuple[tuple[str, str | None, str | None], ...] = ()

    @property
    def source(self) -> str:
        """The Python line both sides come from (the new side's when both)."""
        return (self.new or self.old).source  # type: ignore[union-attr]

    def describe(self) -> str:
        """One line: ``changed %dot.3 dot: shape f32[64,128] -> f32[64,256]``; an
        instruction now run otherwise says so first: ``changed
        %gemm_fusion_dot.19.0 fusion (was %cublas-gemm.clone.1.0 custom-call):
        the same dot, now a Triton GEMM fusion (was a cuBLASLt FP8 call); ...``."""
        if self.status == "added":
            return f"added {self.new.label()}"  # type: ignore[union-attr]
        if self.status == "removed":
            return f"removed {self.old.label()}"  # type: ignore[union-attr]
        old, new = self.old, self.new
        assert old is not None and new is not None
        parts = [f"{f} {a if a is not None else '-'} -> {b if b is not None else '-'}"
                 for f, a, b in self.fields]
        head = f"changed %{new.name} {new.opcode}"
        if old.opcode != new.opcode:
            head += f" (was %{old.name} {old.opcode})"
        if self.now_runs_as:
            parts.insert(0, self.now_runs_as)
        return f"{head}: " + "; ".join(parts)

    @property
    def now_runs_as(self) -> str:
        """For a change of what runs the same work: ``the same dot, now a Triton
        GEMM fusion (was a cuBLASLt FP8 call)``; "" otherwise."""
        old, new = self.old, self.new
        if self.status != "changed" or old is None or new is None:
            return ""
        if old.kernel == new.kernel or not (old.role or new.role):
            return ""
        role = new.role or old.role
        return f"the same {role}, now {_a(new.kernel)} (was {_a(old.kernel)})"


def _a(noun: str) -> str:
    """``a loop fusion``, ``an input fusion``."""
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


@dataclass(slots=True)
class ModuleDiff:
    """Result of :func:`diff_modules`: ``changes`` in the new module's text
    order (removed ones after); ``warnings``: complete sentences (different
    module names or entry signatures); ``compared``: the instructions whose
    changes are reported (:func:`reported`) on each side (old, new)."""

    old_name: str
    new_name: str
    changes: list[InstructionChange] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    compared: tuple[int, int] = (0, 0)

    def counts(self) -> dict[str, int]:
        """``{"added": n, "removed": n, "changed": n}``."""
        out = {"added": 0, "removed": 0, "changed": 0}
        for c in self.changes:
            out[c.status] += 1
        return out

    def by_source(self) -> dict[str, list[InstructionChange]]:
        """The changes grouped per Python source line: the lines in order of
        first change, the changes without a Python source (:data:`NO_SOURCE`:
        broadcasts, copies... the compiler made) last — the lines the user
        edited come first."""
        groups: dict[str, list[InstructionChange]] = {}
        for c in self.changes:
            groups.setdefault(c.source, []).append(c)
        if NO_SOURCE in groups:
            groups[NO_SOURCE] = groups.pop(NO_SOURCE)
        return groups

    def headline(self) -> str:
        """``3 instructions changed, 1 added, 0 removed`` (or ``no instruction
        changed``, or why the instructions could not be compared)."""
        n = self.counts()
        if not self.changes and 0 in self.compared:
            # Nothing to report of a side: no op_name metadata and no kernel
            # (hand-made HLO of parameters and plumbing).
            return ("instructions not compared: the "
                    f"{'old' if self.compared[0] == 0 else 'new'} module has no kernel "
                    "nor op_name metadata to compare")
        if not self.changes:
            return "no instruction changed"
        return (f"{n['changed']} instruction{'s' if n['changed'] != 1 else ''} changed, "
                f"{n['added']} added, {n['removed']} removed")

    def lines(self, max_lines: int = 20, indent: str = "  ") -> list[str]:
        """The report: warnings, the headline, then per source line its changes
        (:meth:`by_source`: Python lines first), at most ``max_lines`` change
        lines (then ``... N more``). Without a Python source, at least
        :data:`COLLAPSE_AT` changes of one status and opcode are one line with
        their count (``changed 7 broadcast: shape``)."""
        out = [f"warning: {w}" for w in self.warnings]
        out.append(self.headline())
        shown = covered = 0
        for source, changes in self.by_source().items():
            if shown >= max_lines:
                break
            out.append(f"{indent}{source}")
            for text, n in (_collapsed(changes) if source == NO_SOURCE
                            else [(c.describe(), 1) for c in changes]):
                if shown >= max_lines:
                    break
                out.append(f"{indent}{indent}{text}")
                shown += 1
                covered += n
        if len(self.changes) > covered:
            out.append(f"{indent}... {len(self.changes) - covered} more instruction changes")
        return out

    def to_dict(self) -> dict:
        """JSON-ready: names, warnings, counts, and per change its status, the
        names, opcode, source and differing fields."""
        def side(f: Facts | None):
            return None if f is None else {"name": f.name, "opcode": f.opcode,
                                            "shape": f.shape, "layout": f.layout,
                                            "kernel": f.kernel}
        return {"old": self.old_name, "new": self.new_name, "warnings": list(self.warnings),
                "counts": self.counts(),
                "changes": [{"status": c.status, "source": c.source, "old": side(c.old),
                             "new": side(c.new), "summary": c.now_runs_as,
                             "fields": [list(f) for f in c.fields]} for c in self.changes]}


def _collapsed(changes: list[InstructionChange]) -> list[tuple[str, int]]:
    """(line, number of changes it stands for) for ``changes``: those of one
    status and opcode, when at least :data:`COLLAPSE_AT`, as one line with their
    count at the place of the first (``changed 7 broadcast: shape, layout``,
    ``added 3 copy``); the others as :meth:`InstructionChange.describe`."""
    def kind(c: InstructionChange) -> tuple[str, str]:
        return c.status, (c.new or c.old).opcode  # type: ignore[union-attr]

    kinds: dict[tuple[str, str], list[InstructionChange]] = {}
    for c in changes:
        kinds.setdefault(kind(c), []).append(c)
    out: list[tuple[str, int]] = []
    for c in changes:
        status, opcode = kind(c)
        same = kinds[(status, opcode)]
        if len(same) < COLLAPSE_AT:
            out.append((c.describe(), 1))
        elif c is same[0]:
            fields = list(dict.fromkeys(f for ch in same for f, _, _ in ch.fields))
            out.append((f"{status} {len(same)} {opcode}"
                        + (f": {', '.join(fields)}" if fields else ""), len(same)))
    return out


def _flatten(data, prefix: str, out: dict[str, str]) -> None:
    if isinstance(data, dict):
        for k, v in data.items():
            _flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(data, list):
        if all(not isinstance(v, (dict, list)) for v in data):
            out[prefix] = json.dumps(data)
        else:
            for i, v in enumerate(data):
                _flatten(v, f"{prefix}[{i}]", out)
    else:
        out[prefix] = json.dumps(data) if not isinstance(data, str) else data


def _config(ins: Instruction) -> tuple[tuple[str, str], ...]:
    attr = ins.attribute("backend_config")
    if attr is None:
        return ()
    raw = attr.value
    if raw.startswith('"') and raw.endswith('"'):
        raw = unquote(raw)
    if not is_json_object(raw):
        return ()
    try:
        data = json.loads(raw)
    except ValueError:
        return ()
    flat: dict[str, str] = {}
    _flatten(data, "", flat)
    return tuple(sorted((k, v) for k, v in flat.items()
                        if k.rsplit(".", 1)[-1] not in IGNORED_CONFIG))


def facts(module: HloModule, ins: Instruction) -> Facts:
    """The :class:`Facts` of ``ins`` in ``module``, made once per instruction
    (kept on the module: comparisons of one dump with several others ask again)."""
    return module.remembered("diff_facts", id(ins), lambda: _facts(module, ins))


def _facts(module: HloModule, ins: Instruction) -> Facts:
    text = ins.shape.text if ins.shape is not None else ""
    kind = ins.attribute("kind") if ins.opcode == "fusion" else None
    stack = python_stack(module, ins)
    return Facts(ins.name.name, ins.opcode, _LAYOUT.sub("", text),
                 "".join(_LAYOUT.findall(text)), kind.value if kind is not None else None,
                 custom_call_target(ins), _config(ins),
                 short_frame(stack[0]) if stack else NO_SOURCE,
                 instruction_role(module, ins), kernel_label(ins), reported(module, ins))


def reported(module: HloModule, ins: Instruction) -> bool:
    """Whether a change of ``ins`` is reported: it has an ``op_name`` (it comes
    from the program), or it is a kernel XLA made (not one of
    :data:`hlo_lsp.model.summary.NOT_KERNELS`: parameters, tuples, bitcasts...)
    outside a fused computation. What a fused computation or a bitcast without
    ``op_name`` holds shows in the kernel that uses it."""
    if op_name_text(ins):
        return True
    if ins.opcode in NOT_KERNELS:
        return False
    comp = ins.computation
    if comp is None:
        return True
    return all(caller.opcode in _CONTROL_FLOW
               for caller, _ in module.callers_of(comp.name.name, comp.start))


#: Callers whose computations run kernels of their own (a fusion's, a reduce's
#: computation runs inside one kernel).
_CONTROL_FLOW = frozenset({"while", "conditional", "call", "async-start"})


def _keyed(module: HloModule) -> dict[tuple, list[tuple[int, Instruction]]]:
    """(op_name, opcode, file base name, function, column, line) -> (text position,
    instruction), in text order. The key's prefixes are the later passes of
    :func:`_pairs`. Made once per module; not to be changed."""
    return module.derived("diff_keys", _make_keyed)


def _make_keyed(module: HloModule) -> dict[tuple, list[tuple[int, Instruction]]]:
    out: dict[tuple, list[tuple[int, Instruction]]] = defaultdict(list)
    i = 0
    for comp in module.computations:
        for ins in comp.instructions:
            key = source_key(module, ins)
            if key is not None:
                op_name, file, line = key
                base = posixpath.basename(file.replace("\\", "/")) if file else None
                stack = python_stack(module, ins) if file else []
                where = (stack[0].function, stack[0].column) if stack else (None, None)
                out[(op_name, ins.opcode, base, *where, line)].append((i, ins))
            i += 1
    return out


#: Key lengths of the passes of :func:`_pairs`: the whole key; without the line
#: (an edit above moved it; function and column stay); op_name and opcode alone.
_PASSES = (6, 5, 2)


def _pairs(a: dict[tuple, list[tuple[int, Instruction]]],
           b: dict[tuple, list[tuple[int, Instruction]]]):
    """Matched (old, new) pairs, the unmatched old and the unmatched new
    instructions: pass after pass (:data:`_PASSES`), each pairing what the
    previous one left by a shorter key prefix, each side in text order."""
    pairs: list[tuple[Instruction, Instruction]] = []
    for n in _PASSES:
        ga: dict[tuple, list[tuple[int, Instruction]]] = defaultdict(list)
        gb: dict[tuple, list[tuple[int, Instruction]]] = defaultdict(list)
        for key, items in a.items():
            ga[key[:n]] += items
        for key, items in b.items():
            gb[key[:n]] += items
        a, b = {}, {}
        for key in list(gb) + [k for k in ga if k not in gb]:
            olds, news = sorted(ga.get(key, [])), sorted(gb.get(key, []))
            pairs += [(o, nw) for (_, o), (_, nw) in zip(olds, news)]
            if len(olds) > len(news):
                a[key] = olds[len(news):]
            if len(news) > len(olds):
                b[key] = news[len(olds):]
    removed = [o for items in a.values() for _, o in items]
    added = [n for items in b.values() for _, n in items]
    return pairs, removed, added


def match_instructions(old: HloModule, new: HloModule) -> Matching:
    """The matcher by metadata alone (before issue 44's
    :func:`hlo_lsp.model.matching.match_structure`) (see the module docstring): instructions with an
    ``op_name`` paired by op_name, opcode and innermost Python frame, pass
    after pass with a shorter key (:func:`_pairs`), each side in text order."""
    return Matching(*_pairs(_keyed(old), _keyed(new)))


def _fields(a: Facts, b: Facts) -> tuple[tuple[str, str | None, str | None], ...]:
    out = [(f, va, vb) for (f, va), vb in zip(a.values().items(), b.values().values())
           if va != vb]
    if a.opcode != b.opcode:  # a library call's config against a fusion's: apples and pears
        return tuple(out)
    ca, cb = dict(a.config), dict(b.config)
    diff = [k for k in sorted(set(ca) | set(cb)) if ca.get(k) != cb.get(k)]
    for k in diff[:MAX_CONFIG_FIELDS]:
        out.append((f"backend_config.{k}", ca.get(k), cb.get(k)))
    if len(diff) > MAX_CONFIG_FIELDS:
        out.append((f"backend_config (+{len(diff) - MAX_CONFIG_FIELDS} more fields)", None, None))
    return tuple(out)


def _reported_count(module: HloModule) -> int:
    """The instructions of ``module`` whose changes are reported (:func:`reported`)."""
    return module.derived("diff_reported", lambda m: sum(
        reported(m, ins) for comp in m.computations for ins in comp.instructions))


def _signature(module: HloModule) -> str | None:
    return module.entry.signature(with_name=False) if module.entry is not None else None


def diff_modules(old: HloModule, new: HloModule,
                 match: Callable[[HloModule, HloModule], Matching] | None = None
                 ) -> ModuleDiff:
    """Instruction-level changes from ``old`` to ``new`` (see the module
    docstring), with a warning when the module names or the ENTRY signatures
    differ (two different programs, or the same one with other inputs). A
    module compared with itself has no changes, found without pairing.
    ``match`` pairs the instructions (default
    :func:`hlo_lsp.model.matching.match_structure`, which survives renames).
    Changes are reported for the instructions :func:`reported` says (either
    side of a pair); ``compared`` counts those of each module."""
    old_name = old.name.name if old.name else "?"
    new_name = new.name.name if new.name else "?"
    result = ModuleDiff(old_name, new_name)
    if old_name != new_name:
        result.warnings.append(f"the modules have different names ({old_name} and "
                               f"{new_name}): are these dumps of the same program?")
    sa, sb = _signature(old), _signature(new)
    if sa != sb:
        result.warnings.append(f"the entry signatures differ: {sa} and {sb}")
    result.compared = (_reported_count(old), _reported_count(new))
    if old is new:  # a module against itself: every instruction pairs with itself
        return result
    order = {id(ins): i for i, ins in enumerate(
        ins for comp in new.computations for ins in comp.instructions)}
    found = (match or match_structure)(old, new)
    placed: list[tuple[int, InstructionChange]] = []
    for o, n in found.pairs:
        of, nf = facts(old, o), facts(new, n)
        if not (of.reported or nf.reported):
            continue
        changed = _fields(of, nf)
        if changed:
            placed.append((order[id(n)], InstructionChange("changed", of, nf, changed)))
    placed += [(order[id(n)], InstructionChange("added", None, f)) for n in found.added
               if (f := facts(new, n)).reported]
    removed = [InstructionChange("removed", f, None) for o in found.removed
               if (f := facts(old, o)).reported]
    result.changes = [c for _, c in sorted(placed, key=lambda t: t[0])] + removed
    return result


__all__ = ["COLLAPSE_AT", "FIELDS", "Facts", "InstructionChange", "Matching", "ModuleDiff",
           "NO_SOURCE", "diff_modules", "facts", "match_instructions", "reported"]
