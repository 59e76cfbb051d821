"""textDocument/definition: where the name under the cursor is defined.

- an operand or control predecessor -> its defining instruction;
- a computation reference (``calls=``, ``to_apply=``, ``body=``, ...) -> the
  computation's header;
- a parameter of a called computation (the parameter instruction's name, its
  ``parameter(N)``, or the signature's ``param_N:``) -> the operand bound to it
  at each call site (see :mod:`hlo_lsp.model.callsites`);
- ``metadata={...}`` -> the Python source line (:func:`source_targets`);
- a row of the ``FileLocations`` or ``StackFrames`` table -> the Python line it
  names, a ``FileNames`` row -> the file (:func:`hlo_lsp.model.frames.table_row_frame`);
- a fusion's or custom-call's name where it is defined, or its opcode -> its
  kernel's ``.entry`` in the dump's PTX (else its function in the LLVM IR), when
  given the dump's kernels
  (:func:`hlo_lsp.features.fusion_decisions.kernel_targets`).
"""

from __future__ import annotations

from typing import Sequence

from hlo_lsp.dump.kernels import KernelIndex
from hlo_lsp.dump.sources import resolve_source_path
from hlo_lsp.features.fusion_decisions import kernel_targets
from hlo_lsp.model.callsites import call_sites
from hlo_lsp.model.frames import python_stack, table_row_frame
from hlo_lsp.model.hlo import Computation, HloModule, Instruction, SourceFrame
from hlo_lsp.model.index import Kind, find_at
from hlo_lsp.model.spans import FileTarget, Span


def definition(module: HloModule, offset: int,
               base_dir: str | Sequence[str] | None = None,
               kernels: KernelIndex | None = None) -> list[Span | FileTarget]:
    """Definition targets for the character ``offset``: spans of this document,
    or a :class:`FileTarget` in a Python file for metadata; [] when there is none.
    ``base_dir``: where relative Python paths are resolved, one directory or the
    list of :func:`hlo_lsp.dump.sources.source_dirs` (see :func:`source_targets`).
    ``kernels``: the kernels of the dump (:func:`hlo_lsp.dump.kernels.read_kernels`);
    on the definition or opcode of a fusion or custom-call that has one, its
    PTX ``.entry`` is the target (its LLVM IR function when the dump holds no
    PTX of it)."""
    occ = find_at(module, offset)
    if occ is None:
        frame = table_row_frame(module, offset)
        return _file_targets(frame, base_dir) if frame is not None else []
    if occ.kind in (Kind.INSTRUCTION_USE, Kind.SHAPE) and occ.index >= 0 or \
            occ.kind == Kind.INSTRUCTION_USE:
        target = occ.target
        if isinstance(target, Instruction):
            return [Span(target.name.start, target.name.end)]
        return []
    if occ.kind == Kind.COMPUTATION_USE:
        if isinstance(occ.target, Computation):
            return [Span(occ.target.name.start, occ.target.name.end)]
        return []
    if occ.kind in (Kind.PARAMETER_OPCODE, Kind.SIGNATURE_PARAM) or (
            occ.kind == Kind.INSTRUCTION_DEF and occ.instruction is not None
            and occ.instruction.parameter_number is not None):
        comp = occ.computation
        n = occ.index if occ.kind != Kind.INSTRUCTION_DEF else occ.instruction.parameter_number
        sites = call_sites(module, comp, n)
        if sites:
            return [Span(r.start, r.end) for r in sites]
        if occ.kind == Kind.SIGNATURE_PARAM and isinstance(occ.target, Instruction):
            return [Span(occ.target.name.start, occ.target.name.end)]
        return [Span(occ.start, occ.end)]
    if kernels is not None and occ.kind in (Kind.INSTRUCTION_DEF, Kind.OPCODE) \
            and occ.instruction is not None:
        targets = kernel_targets(kernels, occ.instruction)
        if targets:  # one target, so that an editor opens it (not a list to pick from)
            return targets[:1]
    if occ.kind == Kind.MODULE and module.name is not None:
        return [Span(module.name.start, module.name.end)]
    if occ.kind in (Kind.INSTRUCTION_DEF, Kind.COMPUTATION_DEF):
        return [Span(occ.start, occ.end)]
    if occ.kind == Kind.METADATA and occ.instruction is not None:
        return list(source_targets(module, occ.instruction, base_dir))
    return []


def source_targets(module: HloModule, ins: Instruction,
                   base_dir: str | Sequence[str] | None = None) -> list[FileTarget]:
    """The innermost Python frame of ``ins`` (:func:`hlo_lsp.model.frames.python_stack`)
    as a FileTarget (1-based line and column, 0 when unknown), or [] when its
    metadata names none. With ``base_dir`` (one directory or a list of them) the
    path is resolved on disk (:func:`hlo_lsp.dump.sources.resolve_source_path`:
    the first directory where the file exists) and [] is returned when no such
    file exists, so that an editor never opens an empty buffer; with
    ``base_dir=None`` the path is kept as written (no disk access)."""
    stack = python_stack(module, ins)
    return _file_targets(stack[0], base_dir) if stack else []


def _file_targets(frame: SourceFrame,
                  base_dir: str | Sequence[str] | None) -> list[FileTarget]:
    """``frame`` as a FileTarget, its path resolved on disk with ``base_dir``
    ([] when no such file exists; see :func:`source_targets`)."""
    path: str | None = frame.file
    if base_dir is not None:
        dirs = [base_dir] if isinstance(base_dir, str) else list(base_dir)
        path = resolve_source_path(frame.file, dirs)
        if path is None:
            return []
    return [FileTarget(path, frame.line, frame.column, frame.end_line, frame.end_column)]
