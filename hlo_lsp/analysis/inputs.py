"""What the analysis reads from beside a dump, with caches and explicit
invalidation: the buffer assignment XLA wrote (``*-buffer-assignment.txt``,
:mod:`hlo_lsp.dump.reports`), the deviceless statement
(:func:`hlo_lsp.dump.targets.deviceless_statement`) and the directories the
dump's Python paths are looked for in (:func:`hlo_lsp.dump.sources.source_dirs`,
which reads its recipe). Read off the event loop at most once per cache period;
:meth:`DumpInputs.forget` drops what was read for a file that changed on disk
(the server's file-change events).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import dataclass

from cachetools import TTLCache

from hlo_lsp.dump.reports import (BufferAssignment, cached_buffer_assignment_for,
                                  load_buffer_assignment_for)
from hlo_lsp.dump.sources import source_dirs, trusted_roots
from hlo_lsp.dump.targets import deviceless_statement

_UNKNOWN = object()
#: How long the Python source directories of a dump are kept (seconds): a recipe
#: written by a recompile is seen within this time.
SOURCE_DIRS_TTL_S = 5.0
#: A source root setting: one directory, a list, or None.
SourceRoot = str | Sequence[str] | None


@dataclass(frozen=True)
class HoverInputs:
    """What hover needs beside the model: the buffer assignment (None without
    one), the deviceless statement (None for a dump made on a device), the
    directories relative Python paths are looked for in, the trusted source
    roots, and the device (a target name, or None)."""

    assignment: BufferAssignment | None
    deviceless: str | None
    source_dirs: list[str]
    source_roots: list[str]
    device: str | None


class DumpInputs:
    """The files beside a dump that answers read, cached per dump directory."""

    def __init__(self, deviceless_ttl: float = 5.0,
                 source_dirs_ttl: float = SOURCE_DIRS_TTL_S) -> None:
        #: dump directory -> the deviceless statement (or None), re-read at most
        #: every ``deviceless_ttl`` seconds
        self._deviceless: TTLCache = TTLCache(maxsize=256, ttl=deviceless_ttl)
        #: (dump directory, workspace folders, source root) -> the source
        #: directories, re-read at most every ``source_dirs_ttl`` seconds
        self._source_dirs: TTLCache = TTLCache(maxsize=256, ttl=source_dirs_ttl)

    async def buffer_assignment(self, path: str) -> BufferAssignment | None:
        """The buffer assignment beside the dump file ``path``: from the cache
        of :mod:`hlo_lsp.dump.reports` when known (hovers while typing do not
        wait for a thread), else read in a thread."""
        known, assignment = cached_buffer_assignment_for(path)
        if not known:
            assignment = await asyncio.to_thread(load_buffer_assignment_for, path)
        return assignment

    async def deviceless(self, path: str) -> str | None:
        """What hover says of a dump compiled for a GPU without it (the
        directory of ``path``), None for one made on a device or no path."""
        if not path:
            return None
        dump_dir = os.path.dirname(path)
        statement = self._deviceless.get(dump_dir, _UNKNOWN)
        if statement is _UNKNOWN:
            statement = self._deviceless[dump_dir] = \
                await asyncio.to_thread(deviceless_statement, path)
        return statement

    async def source_dirs(self, path: str | None, folders: Sequence[str],
                          source_root: SourceRoot) -> list[str]:
        """Where relative Python paths in the metadata of the dump file ``path``
        are looked for, given the workspace ``folders`` and the ``sourceRoot``
        setting: the one answer for hover, definition, documentLink and recipe
        inference (:func:`hlo_lsp.dump.sources.source_dirs`). It reads the
        dump's recipe and stats directories, so it runs off the event loop (a
        recipe file could be a FIFO); the answer is kept for
        :data:`SOURCE_DIRS_TTL_S` per dump directory, folders and source root."""
        key = (os.path.dirname(path or ""), tuple(folders), str(source_root))
        dirs = self._source_dirs.get(key)
        if dirs is None:
            dirs = self._source_dirs[key] = await asyncio.to_thread(
                source_dirs, path, list(folders), source_root)
        return dirs

    @staticmethod
    def source_roots(path: str | None, folders: Sequence[str],
                     source_root: SourceRoot) -> list[str]:
        """Where a source file named by the dump file ``path`` may lie without
        hover and the link's tooltip saying so: the dump directory, the source
        roots and the workspace ``folders`` (:func:`hlo_lsp.dump.sources.trusted_roots`;
        a few ``realpath`` calls, not cached)."""
        return trusted_roots(path, list(folders), source_root)

    def forget(self, path: str) -> None:
        """Drop what was read for the directory of ``path`` (a file there
        changed): its deviceless statement and source directories."""
        dump_dir = os.path.dirname(path)
        self._deviceless.pop(dump_dir, None)
        for key in [k for k in list(self._source_dirs) if k[0] == dump_dir]:
            self._source_dirs.pop(key, None)
