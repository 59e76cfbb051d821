"""Semantic checks on a parsed module, agreeing with XLA's parser.

XLA (xla/hlo/parser/hlo_parser.cc) rejects a module when an operand names an
instruction not defined earlier in its computation ("instruction does not
exist"), when a computation is referenced before it is defined ("computation
does not exist"), on duplicate names ("instruction already exists",
"computation already exists") and on unknown opcodes. Those are errors here.
Findings XLA only warns about (a ``stack_frame_id`` outside the tables) or does
not check at parse time (``backend_config`` that is not valid JSON) are warnings.
"""

from __future__ import annotations

import json
import weakref

from hlo_lsp.model.backend_config import is_json_object
from hlo_lsp.model.hlo import Computation, ComputationRef, HloModule, Problem, Severity
from hlo_lsp.model.opcodes import OPCODES


def check(module: HloModule) -> list[Problem]:
    """Semantic problems of ``module`` (its syntax problems are already in
    ``module.problems``). Pure: the module is not changed.

    The checks inside one computation depend only on its text (and the size of
    the StackFrames table), so they are cached per Computation object: after an
    edit reused every other computation (:func:`hlo_lsp.syntax.chunks.parse_chunked`),
    only the edited one is checked again.
    """
    out: list[Problem] = []
    defined_comps: dict[str, int] = {}
    entries = 0
    frame_count = len(module.frames.frames)
    for comp in module.computations:
        name = comp.name.name
        if comp.inline:  # `_`, XLA's name for every inline computation
            out.extend(_local_problems(comp, frame_count)[0])
            continue
        if name in defined_comps:
            out.append(Problem(comp.name.start, comp.name.end,
                               f"computation already exists: {name}"))
        if comp.is_entry:
            entries += 1
            if entries > 1:
                out.append(Problem(comp.name.start, comp.name.end,
                                   "a module has at most one ENTRY computation"))
        local, called = _local_problems(comp, frame_count)
        for cref in called:
            target = cref.ref.name
            if target not in defined_comps and target != name:
                later = target in module.by_name
                out.append(Problem(cref.ref.start, cref.ref.end, (
                    f"computation {target} is used before it is defined "
                    "(XLA requires callees first)" if later
                    else f"computation does not exist: {target}")))
            elif target == name:
                out.append(Problem(cref.ref.start, cref.ref.end,
                                   f"computation {target} calls itself"))
        out.extend(local)
        defined_comps.setdefault(name, comp.name.start)
    return out


#: Computation -> (StackFrames size, comp.start then, problems then, its
#: computation references). Weak keys: an entry lives as long as some parse
#: still holds its computation.
_LOCAL_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _local_problems(comp: Computation,
                    frame_count: int) -> tuple[list[Problem], list[ComputationRef]]:
    """The problems found inside ``comp`` alone, at its current offsets, and the
    computation references of its instructions (moved along with ``comp``)."""
    cached = _LOCAL_CACHE.get(comp)
    if cached is not None and cached[0] == frame_count:
        delta = comp.start - cached[1]
        if not delta:
            return cached[2], cached[3]
        return [Problem(p.start + delta, p.end + delta, p.message, p.severity, p.source)
                for p in cached[2]], cached[3]
    problems = _check_computation(comp, frame_count)
    called = [cref for ins in comp.instructions for cref in ins.called]
    _LOCAL_CACHE[comp] = (frame_count, comp.start, problems, called)
    return problems, called


def _check_computation(comp: Computation, frame_count: int) -> list[Problem]:
    """Uses before definitions, duplicate names, ROOTs, opcodes, attributes.
    Written for speed: it runs once per instruction of every opened dump."""
    out: list[Problem] = []
    seen: set[str] = set()
    roots = 0
    for ins in comp.instructions:
        for op in ins.operands:
            ref = op.ref
            if ref.name not in seen and not ref.name.isdigit():  # digits: old format
                out.append(_undefined(comp, ref))
        for ref in ins.control_predecessors:
            if ref.name not in seen:
                out.append(_undefined(comp, ref))
        name = ins.name
        if name.name in seen:
            out.append(Problem(name.start, name.end, f"instruction already exists: {name.name}"))
        seen.add(name.name)
        if ins.is_root:
            roots += 1
            if roots > 1:
                out.append(Problem(name.start, name.end,
                                   "a computation has at most one ROOT instruction"))
        if ins.opcode not in OPCODES and ins.opcode:
            out.append(Problem(ins.opcode_start, ins.opcode_start + len(ins.opcode),
                               f"unknown opcode: {ins.opcode}"))
        if ins.attributes:
            _check_attributes(ins, frame_count, out)
    return out


def _undefined(comp: Computation, ref) -> Problem:
    return Problem(ref.start, ref.end, (
        f"instruction {ref.name} is used before it is defined" if ref.name in comp.by_name
        else f"instruction does not exist: {ref.name}"))


def _check_attributes(ins, frame_count: int, out: list[Problem]) -> None:
    """Append the problems of ``ins``'s backend_config and metadata to ``out``."""
    for attr in ins.attributes:
        if attr.name == "backend_config" and (attr.value.startswith('{"')
                                              or is_json_object(attr.value)):
            try:
                json.loads(attr.value)
            except ValueError as exc:
                pos = getattr(exc, "pos", 0) or 0
                at = attr.value_start + pos
                out.append(Problem(at, min(at + 1, attr.value_end),
                                   f"backend_config is not valid JSON: {exc}",
                                   Severity.WARNING))
        elif attr.name == "metadata" and frame_count and "stack_frame_id=" in attr.value:
            idx = attr.value.index("stack_frame_id=")
            digits = attr.value[idx + 15:].split(maxsplit=1)[0].rstrip("}")
            if digits.isdigit() and not 1 <= int(digits) <= frame_count:
                at = attr.value_start + idx
                out.append(Problem(at, at + 15 + len(digits),
                                   f"stack_frame_id {digits} is not in the StackFrames "
                                   f"table (1..{frame_count})", Severity.WARNING))
