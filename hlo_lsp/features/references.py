"""textDocument/references: the uses of an instruction, the call sites of a
computation (with the definition itself when the client asks for it). The
references of an asynchronous ``X-start`` also hold the name of its ``X-done``
(:func:`hlo_lsp.model.collectives.async_partner`), which completes it."""

from __future__ import annotations

from hlo_lsp.model.collectives import async_partner
from hlo_lsp.model.index import Kind, find_at
from hlo_lsp.model.hlo import Computation, HloModule, Instruction
from hlo_lsp.model.spans import Span


def references(module: HloModule, offset: int, include_declaration: bool = True) -> list[Span]:
    """Spans of every reference to the instruction or computation at ``offset``."""
    occ = find_at(module, offset)
    if occ is None:
        return []
    target = occ.target
    if occ.kind == Kind.SIGNATURE_PARAM:
        return []
    if isinstance(target, Instruction) and occ.kind in (
            Kind.INSTRUCTION_DEF, Kind.INSTRUCTION_USE, Kind.PARAMETER_OPCODE):
        out = instruction_references(target, include_declaration)
        if target.opcode.endswith("-start"):
            out += [Span(d.name.start, d.name.end) for d in async_partner(target)]
        return out
    if isinstance(target, Computation) and occ.kind in (Kind.COMPUTATION_DEF,
                                                         Kind.COMPUTATION_USE):
        out = [Span(c.ref.start, c.ref.end)
               for _, c in module.callers_of(target.name.name, target.start)]
        if include_declaration:
            out.insert(0, Span(target.name.start, target.name.end))
        return out
    return []


def instruction_references(target: Instruction, include_declaration: bool = True) -> list[Span]:
    """Every use of ``target`` in its computation (operands, control predecessors)."""
    comp = target.computation
    out: list[Span] = []
    if include_declaration:
        out.append(Span(target.name.start, target.name.end))
    if comp is None:
        return out
    name = target.name.name
    for ins in comp.instructions:
        for ref in ins.uses():
            if ref.name == name and comp.by_name.get(name) is target:
                out.append(Span(ref.start, ref.end))
    return out


def users(target: Instruction) -> list[Instruction]:
    """Instructions of the same computation that use ``target`` (each once)."""
    comp = target.computation
    if comp is None or comp.by_name.get(target.name.name) is not target:
        return []
    return list(comp.users_by_name.get(target.name.name, ()))
