"""The pass history of the dumps the editor shows (issue 44): for a file of a
dump directory with pass snapshots, the history of its module and where each
of its instructions came from (:func:`hlo_lsp.dump.passes.file_history`: one
walk over the snapshots, not one per question), read in a thread and kept.

What is kept is keyed by the file and known by the version of the dump
directory it was read from (the directory's and the file's stat: a snapshot
written or removed changes the directory, a recompile rewrites the file), so a
walk is done once per version: :class:`~hlo_lsp.analysis.refreshed.Refreshed`
answers at once after the first read and looks again in the background after
:data:`PASSES_TTL_S`, walking again only when the version changed. The
server's file-change events drop it at once (:meth:`PassHistories.forget`).

A file with no history costs one listing of its directory, once per
:data:`PASSES_TTL_S` at most: hover asks only of after-optimizations files, and
waits at most :data:`HOVER_WAIT_S` for a first walk (the hover goes on without
the paragraph; the next one has it).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from hlo_lsp.analysis.documents import DocumentStore
from hlo_lsp.analysis.refreshed import Refreshed
from hlo_lsp.dump.file_summary import stat_key
from hlo_lsp.dump.names import AFTER_OPTIMIZATIONS, parse_dump_name
from hlo_lsp.dump.passes import Blame, FileHistory, HistoryError, file_history, history_of_file
from hlo_lsp.model.hlo import Instruction
from hlo_lsp.model.index import Kind, find_at

#: How long a file's history is given without looking at its directory again (seconds).
PASSES_TTL_S = 5.0
#: The most a hover waits for a first walk of its file's history (seconds): the
#: benchmark's 98 snapshots take 0.41 s (docs/benchmarks.md); a larger history
#: answers the next hover.
HOVER_WAIT_S = 1.0
#: Files whose history is kept (the walks of the most recent).
MAX_FILES = 32


@dataclass(frozen=True)
class BlameAt:
    """What :meth:`PassHistories.blame_at` found: the file's history (None
    without one), the instruction's :class:`~hlo_lsp.dump.passes.Blame` (None
    when there is no instruction at the position or no history) and a
    sentence for the user when there is no blame ("" otherwise)."""

    history: FileHistory | None
    blame: Blame | None
    message: str = ""


def _version(path: str) -> tuple | None:
    """The version of ``path``'s dump directory as the walk saw it: the stat
    key (:func:`hlo_lsp.dump.file_summary.stat_key`, the one every cache of a
    dump directory keys on) of the directory (a snapshot written or removed)
    and of the file (a recompile rewrote it); None when either is gone."""
    d, f = stat_key(os.path.dirname(path) or "."), stat_key(path)
    return None if d is None or f is None else (d, f)


class PassHistories:
    """The pass histories of the files the editor asks about (module
    docstring). ``store`` gives the instruction at a position
    (:meth:`blame_at`)."""

    def __init__(self, store: DocumentStore, ttl: float = PASSES_TTL_S) -> None:
        self.store = store
        #: ("file", path) -> its FileHistory or why there is none (a str);
        #: ("module", path) -> the history of its module's last file
        self._answers = Refreshed(ttl, maxsize=4 * MAX_FILES)
        #: path -> (version, FileHistory | str): the walks done, by version
        self._walked: dict[str, tuple[tuple, FileHistory | str]] = {}
        self._lock = threading.Lock()

    # -- in a thread ---------------------------------------------------------

    def _walk(self, path: str) -> FileHistory | str:
        """The history of the file ``path``, walked again only when its
        directory's version changed; a str says why there is none."""
        version = _version(path)
        if version is None:
            return f"{path}: the file or its directory is gone"
        with self._lock:  # one walk of a file at a time; the second asker reuses it
            known = self._walked.get(path)
            if known is not None and known[0] == version:
                return known[1]
            try:
                found: FileHistory | str = file_history(path)
            except (HistoryError, OSError) as exc:
                found = str(exc)
            self._walked.pop(path, None)
            self._walked[path] = (version, found)
            while len(self._walked) > MAX_FILES:
                self._walked.pop(next(iter(self._walked)))
            return found

    def _module(self, path: str) -> FileHistory | str:
        """The history of the module of the file ``path``, to its last file."""
        try:
            history, _ = history_of_file(path)
        except (HistoryError, OSError) as exc:
            return str(exc)
        return self._walk(history.stages[-1].path)

    # -- on the event loop ---------------------------------------------------

    async def of_file(self, path: str) -> FileHistory | str:
        """The :class:`~hlo_lsp.dump.passes.FileHistory` of the dump file
        ``path``, or why it has none (one line)."""
        if not path:
            return "not a file"
        return await self._answers.get(("file", path), self._walk, path)

    async def of_module(self, path: str) -> FileHistory | str:
        """The history of the module of the dump file ``path`` up to its last
        file (the after-optimizations file when XLA wrote it), or why there is
        none: what the *Pass History* view lists, whichever file of the module
        is open."""
        if not path:
            return "not a file"
        return await self._answers.get(("module", path), self._module, path)

    async def for_hover(self, path: str) -> FileHistory | None:
        """The history of the after-optimizations file ``path`` for hover's
        **Pass history** paragraph: None for other files (no cost), for a dump
        without pass snapshots, and while a first walk takes longer than
        :data:`HOVER_WAIT_S`."""
        name = parse_dump_name(os.path.basename(path)) if path else None
        if name is None or name.stage != AFTER_OPTIMIZATIONS:
            return None
        try:
            found = await self._answers.get(("file", path), self._walk, path,
                                            wait=HOVER_WAIT_S)
        except Exception:  # noqa: BLE001 - a bug here must not cost the whole hover
            return None
        return found if isinstance(found, FileHistory) else None

    async def blame_at(self, path: str, uri: str, line: int, character: int) -> BlameAt:
        """The blame of the instruction at ``(line, character)`` of the open
        document ``uri`` (the dump file ``path``): the instruction named there
        (a definition or a use), else the one defined on the line."""
        found = await self.of_file(path)
        if isinstance(found, str):
            return BlameAt(None, None, found)
        name, computation = await self._name_at(uri, line, character)
        key = found.key_of(name, computation) if name else None
        if key is None:
            key = found.key_at_line(line)
        if key is None:
            where = f"%{name}" if name else f"line {line + 1}"
            return BlameAt(found, None, f"No instruction of the pass history at {where}")
        return BlameAt(found, found.blame(key))

    async def _name_at(self, uri: str, line: int, character: int
                       ) -> tuple[str | None, str | None]:
        """The name of the instruction at the position of the open document and
        of its computation ((None, None) when there is none)."""
        async with self.store.lease(uri) as a:
            if a is None:
                return None, None
            occ = find_at(a.module, a.lines.offset(line, character))
            ins = occ.target if occ is not None and occ.kind == Kind.INSTRUCTION_USE \
                and isinstance(occ.target, Instruction) else (occ.instruction if occ else None)
            if ins is None:
                return None, None
            comp = ins.computation
            return ins.name.name, comp.name.name if comp is not None else None

    def forget(self, path: str) -> None:
        """Drop what was read for the directory of ``path`` (a file there changed)."""
        directory = os.path.dirname(path)
        self._answers.forget(lambda key: os.path.dirname(key[1]) == directory)
        # not under the lock (a walk holds it): a walk stored meanwhile has the old
        # version and is walked again when next asked
        for known in [p for p in list(self._walked) if os.path.dirname(p) == directory]:
            self._walked.pop(known, None)


__all__ = ["BlameAt", "HOVER_WAIT_S", "MAX_FILES", "PASSES_TTL_S", "PassHistories"]
