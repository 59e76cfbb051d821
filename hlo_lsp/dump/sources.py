"""Where the Python files named in a dump are on this machine.

Stack frames and ``source_file`` metadata (xla/xla_data.proto ``OpMetadata``,
xla/hlo/ir/stack_frames.cc) record paths as the JAX program saw them: absolute,
or relative to the directory it ran in (Python's ``co_filename`` of a script
started as ``python sub/prog.py`` is ``sub/prog.py``). That directory is a fact
of the dump directory only when it has a recipe (``hlo-lsp-recipe.json``,
:mod:`hlo_lsp.dump.recipe`: its ``cwd`` and the script's directory); otherwise
it is guessed: a configured source root, the dump directory and its parents
(a dump written to ``<project>/out/dump`` by a program in ``<project>``), the
workspace folders and their parents, the server's working directory.

- :func:`source_dirs`: the directories a relative path is looked for in, in order.
- :func:`resolve_source_path`: a path as written in the dump -> the file to open,
  or None when no such file exists (no link, no definition is offered then).
- :func:`unresolved_hint`: the sentence hover shows when a path was not found.
- :func:`trusted_roots`, :func:`outside_note`: the sentence hover and the link's
  tooltip show when the file found lies outside the dump directory, the source
  roots and the workspace folders (``/etc/shadow``, ``../../../../etc/passwd``).
"""

from __future__ import annotations

import os
from typing import Iterable, Sequence

from hlo_lsp.dump.recipe import RecipeError, load_recipe
from hlo_lsp.model.visible import visible
from hlo_lsp.model.markdown import code

MAX_PARENTS = 8
"""How many parent directories of the dump directory and of each workspace
folder are tried (the filesystem root is never tried)."""


def _with_parents(path: str, limit: int = MAX_PARENTS) -> list[str]:
    out = [path]
    cur = path
    for _ in range(limit):
        parent = os.path.dirname(cur)
        if parent == cur or os.path.dirname(parent) == parent:   # stop below "/"
            break
        out.append(parent)
        cur = parent
    return out


def _recipe_dirs(dump_dir: str) -> list[str]:
    """The recipe's ``cwd`` and the directory of the first ``*.py`` argument of its
    command (the program), relative to that ``cwd``; [] without a readable recipe."""
    try:
        recipe = load_recipe(dump_dir)
    except (RecipeError, OSError, ValueError):
        return []
    if recipe is None:
        return []
    dirs = [recipe.cwd]
    for arg in recipe.command[1:]:
        if arg.endswith(".py"):
            dirs.append(os.path.dirname(os.path.join(recipe.cwd, arg)))
            break
    return dirs


def source_dirs(document_path: str | None, workspace_dirs: Sequence[str] = (),
                source_root: str | Sequence[str] | None = None,
                cwd: str | None = None) -> list[str]:
    """Where relative Python paths of the dump ``document_path`` are looked for,
    in order:

    1. ``source_root``: one directory or a list (the ``sourceRoot`` setting);
    2. the recipe's ``cwd`` and program directory, when the dump has a recipe;
    3. the dump directory (the document's directory) and its parents;
    4. each of ``workspace_dirs`` (the editor's workspace folders) and its parents;
    5. ``cwd`` (the server's working directory; ``os.getcwd()`` when None).

    Parents: at most :data:`MAX_PARENTS`, never the filesystem root. Absolute,
    normalised paths, without duplicates or empty entries; a ``~`` in a source
    root is expanded. Reads the recipe file when there is one; a malformed or
    unreadable recipe is ignored (never raises).
    """
    dirs: list[str] = []
    roots = [source_root] if isinstance(source_root, str) else list(source_root or ())
    dirs.extend(os.path.expanduser(r) for r in roots if isinstance(r, str) and r)
    dump_dir = os.path.dirname(os.path.abspath(document_path)) if document_path else None
    if dump_dir:
        dirs.extend(_recipe_dirs(dump_dir))
        dirs.extend(_with_parents(dump_dir))
    for d in workspace_dirs:
        if d:
            dirs.extend(_with_parents(os.path.abspath(d)))
    if cwd is None:
        try:
            cwd = os.getcwd()
        except OSError:
            cwd = None
    if cwd:
        dirs.append(cwd)
    out: list[str] = []
    for d in dirs:
        d = os.path.normpath(os.path.abspath(d))
        if d not in out:
            out.append(d)
    return out


def resolve_source_path(path: str, dirs: Sequence[str]) -> str | None:
    """The file ``path`` (as written in a dump) names: itself when absolute and it
    exists; for a relative path, ``path`` joined with the first of ``dirs`` where
    that file exists (normalised). None when no candidate is a file: callers offer
    no link or definition then. Checks the disk (``os.path.isfile``) once per
    directory tried; never raises."""
    if not path:
        return None
    if os.path.isabs(path):
        return path if os.path.isfile(path) else None
    for d in dirs:
        candidate = os.path.normpath(os.path.join(d, path))
        if os.path.isfile(candidate):
            return candidate
    return None


def trusted_roots(document_path: str | None, workspace_dirs: Sequence[str] = (),
                  source_root: str | Sequence[str] | None = None) -> list[str]:
    """The directories a source file named by the dump ``document_path`` may lie
    in without a word: the dump directory, the source roots (the ``sourceRoot``
    setting, ``~`` expanded) and the workspace folders; real paths (links
    resolved), without duplicates. Not the parents, the recipe's directories or
    the working directory :func:`source_dirs` also looks in: a path such as
    ``../../../../etc/passwd`` or ``/etc/shadow`` in the metadata is found there,
    and the user is told it lies outside (:func:`outside_note`)."""
    dirs: list[str] = []
    if document_path:
        dirs.append(os.path.dirname(os.path.abspath(document_path)))
    roots = [source_root] if isinstance(source_root, str) else list(source_root or ())
    dirs.extend(os.path.expanduser(r) for r in roots if isinstance(r, str) and r)
    dirs.extend(d for d in workspace_dirs if d)
    out: list[str] = []
    for d in dirs:
        d = os.path.realpath(d)
        if d not in out:
            out.append(d)
    return out


def outside_note(path: str, roots: Sequence[str], markdown: bool = False) -> str:
    """"" when the file ``path`` (as resolved, :func:`resolve_source_path`) lies
    in one of ``roots`` (:func:`trusted_roots`) once links are resolved; else the
    sentence the link's tooltip shows, e.g. ``/etc/shadow is outside the dump
    directory, the source roots and the workspace folders.`` (control characters
    escaped, :func:`hlo_lsp.model.visible.visible`); with ``markdown`` (hover)
    the path is a code span no backtick in it can close."""
    real = os.path.realpath(path)
    for root in roots:
        if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
            return ""
    shown = visible(real)
    if markdown:
        shown = code(real)
    return (f"{shown} is outside the dump directory, the source roots and the "
            "workspace folders.")


def unresolved_hint(path: str, dirs: Iterable[str] = ()) -> str:
    """One Markdown paragraph for hover: which path was looked for, where, and how
    to set the source root (the ``sourceRoot`` setting: ``hlo.sourceRoot`` in VS
    Code, ``source_root`` in the Neovim plugin's ``setup``)."""
    dirs = list(dirs)
    if os.path.isabs(path):
        where = "it does not exist on this machine"
    else:
        shown = ", ".join(f"{code(d)}" for d in dirs[:4])
        more = f" and {len(dirs) - 4} more" if len(dirs) > 4 else ""
        where = f"looked in {shown}{more}" if dirs else "no directory to look in"
    return (f"Python file {code(path)} not found ({where}). Set the source root to the "
            "directory the program ran in: `hlo.sourceRoot` in VS Code, "
            "`source_root` in Neovim's `require('hlo_lsp').setup{}`.")


__all__ = ["MAX_PARENTS", "outside_note", "resolve_source_path", "source_dirs", "trusted_roots",
           "unresolved_hint"]
