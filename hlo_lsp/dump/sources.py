"""Where the Python files named in a dump are on this machine.

Stack frames and ``source_file`` metadata (xla/xla_data.proto ``OpMetadata``,
xla/hlo/ir/stack_frames.cc) record paths as the JAX program saw them: absolute,
or relative to the directory it ran in. That directory is a fact of the dump
directory: the ``cwd`` of its recipe (``hlo-lsp-recipe.json``,
:mod:`hlo_lsp.dump.recipe`); the editor adds its own guesses (a configured
source root, the workspace folders).

- :func:`source_dirs`: the directories a relative path is looked for in, in order.
- :func:`resolve_source_path`: a path as written in the dump -> the file to open.
"""

from __future__ import annotations

import os
from typing import Sequence

from hlo_lsp.dump.recipe import RecipeError, load_recipe


def source_dirs(document_path: str | None, workspace_dirs: Sequence[str] = (),
                source_root: str | None = None) -> list[str]:
    """Where relative Python paths of the dump ``document_path`` are looked for,
    in order: ``source_root`` (the ``sourceRoot`` initialization option), the
    ``cwd`` of the recipe in the document's directory, the ``workspace_dirs``
    (the editor's workspace folders), the document's own directory (the dump
    directory). Absolute paths, without duplicates or empty entries.

    Reads the recipe file when there is one; a malformed or unreadable recipe is
    ignored (never raises).
    """
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
    """``path`` unchanged when absolute or when ``dirs`` is empty; else joined with
    the first of ``dirs`` where that file exists, else with the first of ``dirs``
    (normalised). Checks the disk (``os.path.isfile``) once per directory tried."""
    if os.path.isabs(path) or not dirs:
        return path
    for d in dirs:
        candidate = os.path.normpath(os.path.join(d, path))
        if os.path.isfile(candidate):
            return candidate
    return os.path.normpath(os.path.join(dirs[0], path))


__all__ = ["resolve_source_path", "source_dirs"]
