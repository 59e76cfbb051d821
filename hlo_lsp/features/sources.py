"""From an instruction to the Python source that produced it.

Current JAX dumps carry ``metadata={... stack_frame_id=N}`` resolved through
the module's stack-frame tables (:meth:`StackFrameTables.resolve`); older dumps
carry ``source_file=".." source_line=N`` directly (xla/xla_data.proto
OpMetadata). Relative paths are resolved against ``base_dir`` (the recipe's
working directory or the workspace) when given, or against the first of a list
of directories (:func:`search_dirs`) where the file exists.
"""

from __future__ import annotations

import os
from typing import Sequence

from hlo_lsp.model.spans import FileTarget
from hlo_lsp.model.frames import python_stack
from hlo_lsp.model.hlo import HloModule, Instruction


def resolve_path(path: str, base_dir: str | None) -> str:
    """``path`` made absolute against ``base_dir`` when it is relative."""
    if os.path.isabs(path) or not base_dir:
        return path
    return os.path.normpath(os.path.join(base_dir, path))


def search_dirs(document_path: str | None, workspace_dirs: Sequence[str] = (),
                source_root: str | None = None) -> list[str]:
    """Where relative Python paths of a dump are looked for, in order: ``source_root``
    (the ``sourceRoot`` initialization option), the ``cwd`` of the recipe beside
    the document (``hlo-lsp-recipe.json``, see :mod:`hlo_lsp.dump.recipe`), the
    workspace folders, the document's own directory (the dump directory).
    Absolute, without duplicates; a malformed recipe is ignored."""
    from hlo_lsp.dump.recipe import RecipeError, load_recipe

    dirs: list[str] = []
    if source_root:
        dirs.append(source_root)
    dump_dir = os.path.dirname(os.path.abspath(document_path)) if document_path else None
    if dump_dir:
        try:
            recipe = load_recipe(dump_dir)
        except RecipeError:
            recipe = None
        if recipe is not None:
            dirs.append(recipe.cwd)
    dirs.extend(d for d in workspace_dirs if d)
    if dump_dir:
        dirs.append(dump_dir)
    out: list[str] = []
    for d in dirs:
        d = os.path.abspath(d)
        if d not in out:
            out.append(d)
    return out


def resolve_source_path(path: str, dirs: Sequence[str]) -> str:
    """``path`` unchanged when absolute; else joined with the first of ``dirs`` where
    the file exists, else with the first of ``dirs``; unchanged without ``dirs``."""
    if os.path.isabs(path) or not dirs:
        return path
    for d in dirs:
        candidate = os.path.normpath(os.path.join(d, path))
        if os.path.isfile(candidate):
            return candidate
    return os.path.normpath(os.path.join(dirs[0], path))


def source_targets(module: HloModule, ins: Instruction,
                   base_dir: str | Sequence[str] | None = None) -> list[FileTarget]:
    """The innermost Python frame of ``ins`` as a FileTarget, or []. ``base_dir`` is
    one directory (:func:`resolve_path`) or a list of them (:func:`search_dirs`,
    :func:`resolve_source_path`)."""
    stack = python_stack(module, ins)
    if not stack:
        return []
    top = stack[0]
    path = (resolve_path(top.file, base_dir) if base_dir is None or isinstance(base_dir, str)
            else resolve_source_path(top.file, base_dir))
    return [FileTarget(path, top.line, top.column, top.end_line, top.end_column)]
