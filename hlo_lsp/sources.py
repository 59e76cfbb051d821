"""From an instruction to the Python source that produced it.

Current JAX dumps carry ``metadata={... stack_frame_id=N}`` resolved through
the module's stack-frame tables (:meth:`StackFrameTables.resolve`); older dumps
carry ``source_file=".." source_line=N`` directly (xla/xla_data.proto
OpMetadata). Relative paths are resolved against ``base_dir`` (the recipe's
working directory or the workspace) when given.
"""

from __future__ import annotations

import os

from .features import FileTarget
from .model import HloModule, Instruction, SourceFrame


def python_stack(module: HloModule, ins: Instruction) -> list[SourceFrame]:
    """The Python call stack of ``ins``, innermost first; [] when unknown."""
    meta = ins.metadata
    frame_id = meta.get("stack_frame_id")
    if isinstance(frame_id, int) and frame_id > 0:
        stack = module.frames.resolve(frame_id)
        if stack:
            return stack
    file = meta.get("source_file")
    line = meta.get("source_line")
    if isinstance(file, str) and file and isinstance(line, int):
        col = meta.get("source_column", 0)
        return [SourceFrame(file, "", line, col if isinstance(col, int) else 0)]
    return []


def resolve_path(path: str, base_dir: str | None) -> str:
    """``path`` made absolute against ``base_dir`` when it is relative."""
    if os.path.isabs(path) or not base_dir:
        return path
    return os.path.normpath(os.path.join(base_dir, path))


def source_targets(module: HloModule, ins: Instruction,
                   base_dir: str | None = None) -> list[FileTarget]:
    """The innermost Python frame of ``ins`` as a FileTarget, or []."""
    stack = python_stack(module, ins)
    if not stack:
        return []
    top = stack[0]
    return [FileTarget(resolve_path(top.file, base_dir), top.line, top.column,
                       top.end_line, top.end_column)]


def format_frame(frame: SourceFrame) -> str:
    """``file.py:12:5 (fn)``."""
    where = f"{frame.file}:{frame.line}"
    if frame.column:
        where += f":{frame.column}"
    return f"{where} ({frame.function})" if frame.function else where
