"""Which definition or use is at a position: the one question behind hover,
definition and references (as in MLIR's AsmParserState).

Lookup is a binary search for the computation and the instruction containing
the offset, then a scan of that instruction's few names: no per-document table
of every occurrence has to be built before the first answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from hlo_lsp.model.hlo import Computation, HloModule, Instruction, Ref


class Kind(Enum):
    INSTRUCTION_DEF = "instruction definition"
    INSTRUCTION_USE = "instruction use"
    COMPUTATION_DEF = "computation definition"
    COMPUTATION_USE = "computation reference"
    SIGNATURE_PARAM = "computation parameter"
    PARAMETER_OPCODE = "parameter(N)"
    OPCODE = "opcode"
    SHAPE = "shape"
    METADATA = "metadata"
    MODULE = "module"


_KEYWORD = "HloModule"


def module_keyword(module: HloModule) -> tuple[int, int] | None:
    """(start, end) offsets of the ``HloModule`` keyword of the header (the one
    before the first part's name), or None without a header."""
    if module.name is None:
        return None
    before = module.text[max(0, module.name.start - 256):module.name.start]
    stripped = before.rstrip()
    if not stripped.endswith(_KEYWORD):
        return None
    end = module.name.start - (len(before) - len(stripped))
    return end - len(_KEYWORD), end


@dataclass(slots=True)
class Occurrence:
    """The name (or other navigable token) at a position.

    ``instruction`` is the instruction containing the position (if any);
    ``target`` the instruction or computation the name resolves to (None when
    undefined); ``index`` is the operand index for INSTRUCTION_USE, the parameter
    number for SIGNATURE_PARAM / PARAMETER_OPCODE.
    """

    kind: Kind
    start: int
    end: int
    name: str
    computation: Computation | None
    instruction: Instruction | None = None
    target: Instruction | Computation | None = None
    index: int = -1
    attr: str = ""



def find_at(module: HloModule, offset: int) -> Occurrence | None:
    """The occurrence at ``offset`` (a character offset), or None. The module's
    name and the ``HloModule`` keyword before it are both the module (Kind.MODULE,
    spanning the word under the cursor)."""
    if module.name is not None and module.name.start <= offset <= module.name.end:
        return Occurrence(Kind.MODULE, module.name.start, module.name.end, module.name.name,
                          None)
    keyword = module_keyword(module)
    if keyword is not None and keyword[0] <= offset <= keyword[1]:
        return Occurrence(Kind.MODULE, *keyword, module.name.name, None)  # type: ignore[union-attr]
    comp = module.computation_at(offset)
    if comp is None:
        return None
    if comp.name.start <= offset <= comp.name.end:
        return Occurrence(Kind.COMPUTATION_DEF, comp.name.start, comp.name.end,
                          comp.name.name, comp, target=comp)
    if offset < comp.body_start:
        for i, p in enumerate(comp.params):
            if p.ref.start <= offset <= p.ref.end:
                return Occurrence(Kind.SIGNATURE_PARAM, p.ref.start, p.ref.end, p.ref.name,
                                  comp, target=comp.parameters().get(i), index=i)
        return None
    ins = module.instruction_at(offset)
    if ins is None:
        return None
    return _in_instruction(module, comp, ins, offset)


def _hit(ref: Ref, offset: int) -> bool:
    return ref.start <= offset <= ref.end


def _in_instruction(module: HloModule, comp: Computation, ins: Instruction,
                    offset: int) -> Occurrence | None:
    if _hit(ins.name, offset):
        return Occurrence(Kind.INSTRUCTION_DEF, ins.name.start, ins.name.end, ins.name.name,
                          comp, ins, ins)
    if ins.opcode_start <= offset <= ins.opcode_start + len(ins.opcode):
        kind = Kind.PARAMETER_OPCODE if ins.parameter_number is not None else Kind.OPCODE
        return Occurrence(kind, ins.opcode_start, ins.opcode_start + len(ins.opcode),
                          ins.opcode, comp, ins, ins,
                          ins.parameter_number if ins.parameter_number is not None else -1)
    for i, op in enumerate(ins.operands):
        if _hit(op.ref, offset):
            return Occurrence(Kind.INSTRUCTION_USE, op.ref.start, op.ref.end, op.ref.name,
                              comp, ins, comp.by_name.get(op.ref.name), i)
        if op.shape is not None and op.shape.start <= offset <= op.shape.end:
            return Occurrence(Kind.SHAPE, op.shape.start, op.shape.end, op.shape.text,
                              comp, ins, comp.by_name.get(op.ref.name), i)
    for ref in ins.control_predecessors:
        if _hit(ref, offset):
            return Occurrence(Kind.INSTRUCTION_USE, ref.start, ref.end, ref.name, comp, ins,
                              comp.by_name.get(ref.name), attr="control-predecessors")
    for cref in ins.called:
        if _hit(cref.ref, offset):
            return Occurrence(Kind.COMPUTATION_USE, cref.ref.start, cref.ref.end,
                              cref.ref.name, comp, ins, module.resolve(cref.ref.name, cref.ref.start),
                              attr=cref.attr)
    if ins.shape is not None and ins.shape.start <= offset <= ins.shape.end:
        return Occurrence(Kind.SHAPE, ins.shape.start, ins.shape.end, ins.shape.text,
                          comp, ins, ins)
    meta = ins.attribute("metadata")
    if meta is not None and meta.name_start <= offset <= meta.value_end:
        return Occurrence(Kind.METADATA, meta.name_start, meta.value_end, "metadata",
                          comp, ins, ins)
    return None

