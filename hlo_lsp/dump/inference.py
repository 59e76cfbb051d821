"""A recipe for a dump made without ``hlo-lsp dump``: :func:`infer_recipe`
*proposes* one from the Python stack frames in the dump (the program is the
outermost file that is not a library's) and the devices its module was
compiled for (:func:`device_count`); :func:`configured_recipe` makes one from
the ``hlo.recompile.command`` setting. A proposal is only ever run after the
user confirmed it (:mod:`hlo_lsp.dump.trust`).
"""

from __future__ import annotations

import os
import pathlib
import re
import shlex
import shutil
import socket
import sys
from collections import Counter
from typing import Sequence

from hlo_lsp.dump.environment import python_interpreter
from hlo_lsp.dump.recipe import HOST_DEVICE_COUNT_FLAG, Recipe, RecipeError, now_iso
from hlo_lsp.dump.sources import resolve_source_path, source_dirs
from hlo_lsp.dump.untrusted import read_text
from hlo_lsp.model.collectives import replica_and_partition_count
from hlo_lsp.model.frames import python_stack

def device_count(module) -> tuple[int, str]:
    """How many devices the HloModule ``module`` was compiled for, from its header
    (``replica_count=R``, ``num_partitions=P``, printed by
    xla/hlo/ir/hlo_module.cc when not 1): ``(R * P, "replica_count=R,
    num_partitions=P")``; ``(1, "")`` when the header names neither. The numbers:
    :func:`hlo_lsp.model.collectives.replica_and_partition_count`."""
    replicas, partitions = replica_and_partition_count(module)
    said = [f"{name}={value}" for name, value in (("replica_count", replicas),
                                                  ("num_partitions", partitions))
            if module.header_attribute(name) is not None]
    return replicas * partitions, ", ".join(said)


_LIBRARY = re.compile(r"(?:^<|/site-packages/|/dist-packages/|/lib/python\d)")


def _default_python(workspace: str | None) -> str:
    for rel in (".venv/bin/python", "venv/bin/python"):
        if workspace and os.access(os.path.join(workspace, rel), os.X_OK):
            return os.path.join(workspace, rel)
    import importlib.util
    if importlib.util.find_spec("jax") is not None:
        return sys.executable
    return shutil.which("python3") or "python3"


def _outermost_files(module) -> Counter:
    """(file, function) of the outermost frame of every stack of ``module``'s
    stack-frame tables, counted; without tables, of every instruction's stack
    (:func:`hlo_lsp.model.frames.python_stack`: the ``source_file`` of older
    metadata, function "")."""
    found: Counter = Counter()
    frames = module.frames
    for fid in frames.frames:
        stack = frames.resolve(fid)
        if stack:
            found[(stack[-1].file, stack[-1].function)] += 1
    if found:
        return found
    for comp in module.computations:
        for ins in comp.instructions:
            stack = python_stack(module, ins)
            if stack:
                found[(stack[-1].file, stack[-1].function)] += 1
    return found


def infer_recipe(dump_dir: str | os.PathLike, module=None, workspace: str | None = None,
                 python: str | None = None,
                 dirs: Sequence[str] | None = None) -> Recipe | None:
    """Propose a recipe for a dump made without ``hlo-lsp dump``; None when the
    dump names no Python file.

    The program is the outermost Python file of the stack-frame tables (the last
    frame of every resolved stack, xla/hlo/ir/stack_frames.cc), or the
    ``source_file`` of older metadata. Files that exist on disk, that are not library
    code, and whose outermost function is ``<module>`` (the script itself) are
    preferred, then the most frequent. Relative paths are looked for in ``dirs``
    (default: :func:`hlo_lsp.dump.sources.source_dirs` of the dump with
    ``workspace``: the dump directory and its parents, the workspace...). ``module`` (an HloModule) is looked at
    first, then up to 8 other HLO files of ``dump_dir``. The command is
    ``[python, file]`` relative to ``cwd`` = ``workspace`` when the file is inside
    it, else the file's directory. The result has ``origin="inferred"`` and a
    ``note``; it must be confirmed by the user before it is run.
    """
    from hlo_lsp.dump.names import parse_dump_name
    from hlo_lsp.syntax.parser import parse

    dump_dir = pathlib.Path(dump_dir).resolve()
    modules = [module] if module is not None else []
    candidates: Counter = Counter()
    source = ""
    chosen = None
    for m in modules:
        candidates = _outermost_files(m)
        source = m.name.name if getattr(m, "name", None) else ""
        chosen = m
    if not candidates and dump_dir.is_dir():
        files = sorted((p for p in dump_dir.iterdir()
                        if p.is_file() and parse_dump_name(p.name) is not None),
                       key=lambda p: p.stat().st_size)
        for p in files[:8]:
            try:
                m = parse(read_text(p))
            except OSError:  # UntrustedFileError: not a regular file, too large
                continue
            candidates = _outermost_files(m)
            if candidates:
                source = p.name
                chosen = m
                break
    if not candidates:
        return None
    # Where relative paths are: the one answer of hlo_lsp.dump.sources.
    bases = list(dirs) if dirs is not None else source_dirs(
        str(dump_dir / "_"), [workspace] if workspace else [])

    def where(file: str) -> str | None:
        return resolve_source_path(file, bases)

    def rank(item):
        (file, function), count = item
        return (where(file) is not None, not _LIBRARY.search(file),
                function == "<module>", count)

    (file, function), _ = max(candidates.items(), key=rank)
    path = where(file) or (file if os.path.isabs(file) else
                           os.path.normpath(os.path.join(bases[0], file)))
    if workspace and os.path.commonpath([os.path.abspath(workspace), path]) == \
            os.path.abspath(workspace):
        cwd = os.path.abspath(workspace)
    else:
        cwd = os.path.dirname(path)
    python = python or _default_python(workspace)
    note = (f"{os.path.relpath(path, cwd)} is the outermost Python file in the stack "
            f"frames of {source or 'the dump'}")
    if where(file) is None:
        note += " (it does not exist on this machine)"
    env: dict[str, str] = {}
    devices, said = device_count(chosen) if chosen is not None else (1, "")
    if devices > 1:
        # Without it a CPU run has one device and a sharded program fails.
        env["XLA_FLAGS"] = f"{HOST_DEVICE_COUNT_FLAG}={devices}"
        note += (f"; the module header says {said}, so it runs with "
                 f"XLA_FLAGS={HOST_DEVICE_COUNT_FLAG}={devices} ({devices} devices)")
    return Recipe([python, os.path.relpath(path, cwd)], cwd, env, "cpu", python=python,
                  created=now_iso(), host=socket.gethostname(), origin="inferred", note=note)


def configured_recipe(command: str | Sequence[str], cwd: str | None,
                      fallback_cwd: str) -> Recipe:
    """A recipe from the setting ``hlo.recompile.command`` (a shell-like string or
    an argv list) and ``hlo.recompile.cwd``. Raises RecipeError when empty."""
    argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
    if not argv:
        raise RecipeError("the setting hlo.recompile.command is empty")
    where = os.path.abspath(os.path.expanduser(cwd)) if cwd else fallback_cwd
    return Recipe(argv, where, {}, "cpu", python=python_interpreter(argv, where),
                  created=now_iso(), host=socket.gethostname(), origin="setting")
