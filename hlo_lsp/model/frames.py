"""The Python source of an instruction: its call stack, from its metadata.

The one answer to "which Python line made this instruction", used by hover,
inlay hints, links, the readable view, the kernel summary, counterpart
matching (:func:`hlo_lsp.dump.index.source_key`) and recipe inference.

Facts (xla/xla_data.proto ``OpMetadata``, xla/hlo/ir/stack_frames.cc):

- Current JAX dumps print ``metadata={... stack_frame_id=N}``: N indexes the
  module's ``StackFrames`` table (``StackFrameIndexProto``), printed in the text
  with the ``FileNames``, ``FunctionNames`` and ``FileLocations`` tables;
  :meth:`hlo_lsp.model.hlo.StackFrameTables.resolve` follows the parent chain.
- Older dumps print ``source_file=".." source_line=N`` (and sometimes
  ``source_column=N``) directly: one frame, without a function name.
  ``OpMetadataToString`` omits ``source_line`` when it is 0, so a
  ``source_file`` without ``source_line`` has an unknown line (0 here).

Pure: reads the module, never the disk (relative paths are resolved by
:func:`hlo_lsp.dump.sources.resolve_source_path`).
"""

from __future__ import annotations

import os
import re

from hlo_lsp.model.hlo import HloModule, Instruction, SourceFrame

#: Where a stack came from: the metadata key, "" when there is no stack.
STACK_FRAME_ID = "stack_frame_id"
SOURCE_FILE = "source_file"


def frame_origin(module: HloModule, ins: Instruction) -> tuple[str, list[SourceFrame]]:
    """``(origin, stack)``: the Python call stack of ``ins``, innermost frame first,
    and the metadata key it was read from, :data:`STACK_FRAME_ID` or
    :data:`SOURCE_FILE`; ``("", [])`` when the metadata names no source.

    A ``stack_frame_id`` that resolves through ``module.frames`` wins; otherwise
    ``source_file`` gives one frame (``line`` 0 when ``source_line`` is absent,
    ``column`` from ``source_column``, 0 when absent). Frames carry 1-based lines
    and columns. Never raises; the list is the caller's to keep.
    """
    meta = ins.metadata
    frame_id = meta.get("stack_frame_id")
    if isinstance(frame_id, int) and frame_id > 0:
        stack = module.frames.resolve(frame_id)
        if stack:
            return STACK_FRAME_ID, stack
    file = meta.get("source_file")
    if isinstance(file, str) and file:
        line = meta.get("source_line", 0)
        col = meta.get("source_column", 0)
        return SOURCE_FILE, [SourceFrame(file, "", line if isinstance(line, int) else 0,
                                         col if isinstance(col, int) else 0)]
    return "", []


_ROW_ID = re.compile(r"[ \t]*(\d+)[ \t]")


def table_row_frame(module: HloModule, offset: int) -> SourceFrame | None:
    """The Python frame named by the row of the stack-frame tables at ``offset``
    (a character offset anywhere on the row): a ``FileLocations`` row -> its
    file, function, line and columns; a ``StackFrames`` row -> the innermost
    frame of that id (its own location); a ``FileNames`` row -> the file (line
    0, unknown). None elsewhere (``FunctionNames`` rows, headers, other text)."""
    tables = module.frames
    section = next((kind for kind, start, end in tables.sections if start <= offset <= end),
                   None)
    if section not in ("FileLocations", "StackFrames", "FileNames"):
        return None
    text = module.text
    line_end = text.find("\n", offset)
    row = _ROW_ID.match(text, text.rfind("\n", 0, offset) + 1,
                        len(text) if line_end < 0 else line_end)
    if row is None:
        return None
    number = int(row.group(1))
    if section == "FileLocations":
        return tables.location(number)
    if section == "StackFrames":
        stack = tables.resolve(number, limit=1)
        return stack[0] if stack else None
    name = tables.file_names.get(number)
    return SourceFrame(name, "", 0, 0) if name else None


def python_stack(module: HloModule, ins: Instruction) -> list[SourceFrame]:
    """The Python call stack of ``ins``, innermost frame first; [] when unknown
    (see :func:`frame_origin`)."""
    return frame_origin(module, ins)[1]


def format_frame(frame: SourceFrame) -> str:
    """``file.py:12:5 (fn)``: the path as written in the dump, the line and column
    when known (non-zero), the function when known."""
    where = frame.file
    if frame.line:
        where += f":{frame.line}"
        if frame.column:
            where += f":{frame.column}"
    return f"{where} ({frame.function})" if frame.function else where


def short_frame(frame: SourceFrame) -> str:
    """``file.py:12``: the file's base name and the line (when known), as shown in
    inlay hints, the readable view and kernel tables."""
    name = os.path.basename(frame.file)
    return f"{name}:{frame.line}" if frame.line else name


SourceKey = tuple[str, str | None, int | None]


def source_key(module: HloModule, ins: Instruction) -> SourceKey | None:
    """``(op_name, file, line)`` of ``ins``'s metadata: the innermost Python frame
    (:func:`python_stack`: ``stack_frame_id`` resolved through ``module``'s own
    tables, or ``source_file``/``source_line``); file and line None when there is
    no source location, line None when it is unknown. None without an
    ``op_name``. What matches an instruction across two dumps of one program
    (counterparts, :mod:`hlo_lsp.model.instruction_diff`)."""
    op_name = ins.metadata.get("op_name")
    if not isinstance(op_name, str) or not op_name:
        return None
    stack = python_stack(module, ins)
    if stack:
        return (op_name, stack[0].file, stack[0].line or None)
    return (op_name, None, None)
