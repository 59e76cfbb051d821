"""What the analysis reads from beside a dump, with caches and explicit
invalidation: the buffer assignment XLA wrote (``*-buffer-assignment.txt``,
:mod:`hlo_lsp.dump.reports`) and the deviceless statement
(:func:`hlo_lsp.dump.targets.deviceless_statement`). Read off the event loop at
most once per cache period; :meth:`DumpInputs.forget` drops what was read for a
file that changed on disk (the server's file-change events).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

from cachetools import TTLCache

from hlo_lsp.dump.reports import (BufferAssignment, cached_buffer_assignment_for,
                                  load_buffer_assignment_for)
from hlo_lsp.dump.targets import deviceless_statement

_UNKNOWN = object()


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

    def __init__(self, deviceless_ttl: float = 5.0) -> None:
        #: dump directory -> the deviceless statement (or None), re-read at most
        #: every ``deviceless_ttl`` seconds
        self._deviceless: TTLCache = TTLCache(maxsize=256, ttl=deviceless_ttl)

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

    def forget(self, path: str) -> None:
        """Drop what was read for the directory of ``path`` (a file there changed)."""
        self._deviceless.pop(os.path.dirname(path), None)
