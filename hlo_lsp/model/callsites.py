"""How a called computation's parameters bind to its callers' operands.

Mirrors the calling conventions of xla/hlo/ir/hlo_instructions.cc: fusion,
call and async-start pass operand N as parameter N; a while loop passes its
single operand to both body and condition; a conditional passes operand k+1 to
branch k (``true_computation`` is branch 0, ``false_computation`` branch 1).
Reductions, sorts, scatters and collectives call their ``to_apply`` on scalars
that are not operands: they bind to the caller itself.
"""

from __future__ import annotations

from hlo_lsp.model.hlo import Computation, ComputationRef, HloModule, Instruction, Ref

_PASS_THROUGH = {"calls", "called_computations"}


def operand_for_parameter(caller: Instruction, cref: ComputationRef, n: int) -> Ref | None:
    """The operand of ``caller`` bound to parameter ``n`` of the computation that
    ``cref`` references, or None when the parameter is not an operand."""
    attr = cref.attr
    ops = caller.operands
    if attr in _PASS_THROUGH or (attr == "to_apply" and caller.opcode == "call"):
        return ops[n].ref if n < len(ops) else None
    if attr in ("body", "condition"):
        return ops[0].ref if ops and n == 0 else None
    if attr in ("true_computation", "false_computation", "branch_computations"):
        if attr == "true_computation":
            branch = 0
        elif attr == "false_computation":
            branch = 1
        else:
            branch = [c.ref.name for c in caller.called
                      if c.attr == "branch_computations"].index(cref.ref.name)
        k = branch + 1
        return ops[k].ref if n == 0 and k < len(ops) else None
    return None


def call_sites(module: HloModule, computation: Computation, n: int) -> list[Ref]:
    """For parameter ``n`` of ``computation``: the bound operand at every call site,
    or the caller's name where the parameter is not an operand."""
    out: list[Ref] = []
    for caller, cref in module.callers_of(computation.name.name, computation.start):
        ref = operand_for_parameter(caller, cref, n)
        out.append(ref if ref is not None else caller.name)
    return out
