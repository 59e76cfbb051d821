"""Navigation between the optimization stages of one module.

XLA dumps each module before and after optimization
(``module_0028.jit_train_step.before_optimizations.txt`` and
``module_0028.jit_train_step.cpu_after_optimizations.txt``). The two files of
one function can carry different module numbers, so :func:`counterpart_files`
matches by module name (the ``HloModule`` header, else the dump name).
:func:`find_counterparts` maps an instruction of one file to the other: by
instruction name first (XLA keeps names through its passes), else by
``metadata`` ``op_name`` plus the source location (innermost resolved
``stack_frame_id`` frame, or ``source_file``/``source_line``), since stack frame
ids are numbered per file. No LSP types here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable, Protocol

from hlo_lsp.dump.file_summary import FileSummary, name_fields, stat_key
from hlo_lsp.dump.names import counterpart_stage, parse_dump_name
from hlo_lsp.model.frames import SourceKey, source_key
from hlo_lsp.model.hlo import HloModule, Instruction

MAX_COUNTERPARTS = 50


class _Index(Protocol):
    """What the counterparts read of :class:`hlo_lsp.dump.index.WorkspaceIndex`
    (which imports this module)."""

    def get(self, path: str) -> FileSummary | None: ...

    def modules(self, name: str) -> Iterable[FileSummary]: ...


def summary_of(path: str, index: _Index | None = None,
               module_name: str | None = None) -> FileSummary:
    """The indexed summary of ``path``, else a name-only one (no symbols) from the
    dump name, with ``module_name`` (the parsed header) when given."""
    s = index.get(path) if index is not None else None
    if s is not None:
        return s
    fields = name_fields(path)
    if module_name:
        fields["module"] = module_name
    stamp = stat_key(path) or (0, 0)
    return FileSummary(os.path.abspath(path), stamp[0], stamp[1], **fields)


def counterpart_files(path: str, index: _Index | None = None,
                      module_name: str | None = None) -> list[FileSummary]:
    """The files holding the other optimization stage of ``path``'s module,
    best first.

    ``before_optimizations`` -> the ``*after_optimizations`` files; an after or
    per-pass file -> the ``before_optimizations`` files. Files match by module
    name, not number (the before and after files of one function may be numbered
    differently). Candidates come from ``index`` plus the dump names in ``path``'s
    own directory (so it works before or without indexing). Order: same module
    number, then same directory, then nearest number.
    """
    path = os.path.abspath(path)
    me = summary_of(path, index, module_name)
    want = counterpart_stage(me.stage)
    if want is None or not me.module:
        return []
    found: dict[str, FileSummary] = {}
    if index is not None:
        for s in index.modules(me.module):
            if s.stage == want and s.path != path:
                found[s.path] = s
    directory = os.path.dirname(path)
    try:
        names = os.listdir(directory)
    except OSError:
        names = []
    for name in names:
        dn = parse_dump_name(name)
        candidate = os.path.join(directory, name)
        if dn is None or candidate in found or candidate == path or dn.stage != want:
            continue
        indexed = index.get(candidate) if index is not None else None
        module = indexed.module if indexed is not None else dn.module_name
        if module == me.module:
            found[candidate] = indexed or summary_of(candidate, None)

    def rank(s: FileSummary):
        same_number = s.number is not None and s.number == me.number
        distance = abs(s.number - me.number) if s.number is not None and me.number is not None \
            else 1 << 30
        return (not same_number, os.path.dirname(s.path) != directory, distance, s.path)

    return sorted(found.values(), key=rank)


class _ModuleIndex:
    __slots__ = ("names", "keys", "fusion_caller", "order")

    def __init__(self, module: HloModule) -> None:
        self.names: dict[str, Instruction] = {}
        self.keys: dict[SourceKey, list[Instruction]] = {}
        self.order: dict[int, int] = {}
        i = 0
        for comp in module.computations:
            for ins in comp.instructions:
                self.names.setdefault(ins.name.name, ins)
                self.order[id(ins)] = i
                i += 1
                key = source_key(module, ins)
                if key is not None:
                    self.keys.setdefault(key, []).append(ins)
        # computation name -> the fusion instruction calling it (fused computations)
        self.fusion_caller: dict[str, Instruction] = {}
        for name, callers in module.callers.items():
            for ins, cref in callers:
                if ins.opcode == "fusion" and cref.attr == "calls":
                    self.fusion_caller.setdefault(name, ins)
                    break


def _index_of(module: HloModule) -> _ModuleIndex:
    return module.derived("workspace_index", _ModuleIndex)


def instruction_names(module: HloModule) -> dict[str, Instruction]:
    """Every instruction of ``module`` by name (XLA names are unique per module;
    the first definition wins), cached per module object."""
    return _index_of(module).names


@dataclass(frozen=True, slots=True)
class Counterpart:
    """A matched instruction of the target module and how it matched:
    ``via`` is "name" or "source" (op_name + source location); ``fused`` is the
    instruction inside a fused computation that matched when ``instruction`` is
    the fusion containing it."""

    instruction: Instruction
    via: str
    fused: Instruction | None = None


def _fused_keys(module: HloModule, ins: Instruction, depth: int = 0) -> list[SourceKey]:
    out: list[SourceKey] = []
    if depth > 4:
        return out
    for cref in ins.called:
        if cref.attr != "calls" or ins.opcode != "fusion":
            continue
        comp = module.by_name.get(cref.ref.name)
        if comp is None:
            continue
        for inner in comp.instructions:
            key = source_key(module, inner)
            if key is not None and key not in out:
                out.append(key)
            for k in _fused_keys(module, inner, depth + 1):
                if k not in out:
                    out.append(k)
    return out


def _lift(idx: _ModuleIndex, ins: Instruction) -> Instruction:
    """The outermost fusion instruction whose fused computation contains ``ins``
    (``ins`` itself when it is not inside a fusion)."""
    seen = 0
    while ins.computation is not None and seen < 16:
        caller = idx.fusion_caller.get(ins.computation.name.name)
        if caller is None:
            break
        ins = caller
        seen += 1
    return ins


def _shape_text(ins: Instruction) -> str:
    from hlo_lsp.model.kernels import short_shape
    return short_shape(ins.shape.text) if ins.shape is not None else ""


def find_counterparts(source: HloModule, ins: Instruction, target: HloModule,
                      limit: int = MAX_COUNTERPARTS) -> list[Counterpart]:
    """The instructions of ``target`` (the other optimization stage of the same
    module) that correspond to ``ins`` of ``source``.

    1. An instruction of the same name whose opcode or metadata ``op_name`` is the
       same: that instruction alone (``via="name"``).
    2. Else instructions with the same :func:`source_key` (``via="source"``); among
       them those with the same opcode and shape when there are any. When ``ins``
       is a fusion, the keys of its fused instructions count too (where the fused
       ops came from). Matches inside a fused computation of ``target`` are
       reported as the fusion instruction containing them (``fused`` = the inner
       one). In ``target``'s text order, own-key matches first; at most ``limit``.
    """
    tidx = _index_of(target)
    same = tidx.names.get(ins.name.name)
    if same is not None:
        my_op = ins.metadata.get("op_name")
        if same.opcode == ins.opcode or (my_op and same.metadata.get("op_name") == my_op):
            return [Counterpart(same, "name")]
    out: list[Counterpart] = []
    seen: set[int] = set()

    def add(matches: list[Instruction]) -> None:
        for m in sorted(matches, key=lambda x: tidx.order.get(id(x), 0)):
            lifted = _lift(tidx, m)
            if id(lifted) in seen:
                continue
            seen.add(id(lifted))
            out.append(Counterpart(lifted, "source", m if lifted is not m else None))

    own = source_key(source, ins)
    if own is not None:
        matches = tidx.keys.get(own, [])
        shape = _shape_text(ins)
        best = [m for m in matches if m.opcode == ins.opcode and _shape_text(m) == shape] or \
            [m for m in matches if m.opcode == ins.opcode] or matches
        add(best)
    if ins.opcode == "fusion":
        for key in _fused_keys(source, ins):
            if key != own:
                add(tidx.keys.get(key, []))
    return out[:limit]


__all__ = ["Counterpart", "counterpart_files", "find_counterparts", "instruction_names",
           "summary_of"]
