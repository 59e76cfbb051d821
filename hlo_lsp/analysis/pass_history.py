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

The histories an editor shows follow their directory (:class:`ShownHistories`):
once an editor asked for a module's history (:meth:`PassHistories.of_module`,
``hlo/passHistory``), a change of its directory (a recompile, an experiment,
XLA writing more snapshots) is told back (:attr:`PassHistories.changed`, the
server's ``hlo/passHistoryChanged``) once per burst of changes, from the
file-change events and, for the changes no event reports, from a look at the
directory every :data:`LOOK_S`.

A blame also carries what XLA:GPU's priority-fusion log decided of the
instruction (:func:`hlo_lsp.features.pass_history.blamed_decisions`, the one
answer ``hlo-lsp blame`` gives too), from the log the hover reads
(:meth:`hlo_lsp.analysis.inputs.DumpInputs.fusion_dump`, kept there with the
matcher's names), not read again.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass

from hlo_lsp.analysis.documents import DocumentStore
from hlo_lsp.analysis.inputs import DumpInputs
from hlo_lsp.analysis.refreshed import Refreshed
from hlo_lsp.analysis.work import in_thread
from hlo_lsp.dump.file_summary import stat_key
from hlo_lsp.dump.names import AFTER_OPTIMIZATIONS, parse_dump_name
from hlo_lsp.dump.fusion_dump import FusionDump, ProducerDecisions
from hlo_lsp.dump.passes import Blame, FileHistory, HistoryError, file_history, history_of_file
from hlo_lsp.features.pass_history import blamed_decisions
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
#: A shown history's directory is told changed once it was quiet this long
#: (seconds): a recompile or XLA writing its snapshots changes dozens of files
#: in a burst, told once ...
QUIET_S = 1.0
#: ... and at the latest this long after the burst's first change (seconds),
#: so a long compile's snapshots appear while XLA writes them.
MAX_QUIET_WAIT_S = 4.0
#: How often the directories of the shown histories are looked at for a change
#: no file-change event reported (seconds): Neovim on Linux watches no files,
#: VS Code only those of its workspace folders. Two stats per shown module.
LOOK_S = 2.0
#: Directories whose shown histories are followed (those asked most recently).
MAX_SHOWN = 8


@dataclass(frozen=True)
class BlameAt:
    """What :meth:`PassHistories.blame_at` found: the file's history (None
    without one), the instruction's :class:`~hlo_lsp.dump.passes.Blame` (None
    when there is no instruction at the position or no history) and a
    sentence for the user when there is no blame ("" otherwise); with a
    blame, the module's priority-fusion log (``fusion``, None without one)
    and what it decided of the instruction (``decisions``,
    :func:`~hlo_lsp.features.pass_history.blamed_decisions`; None when the
    log does not name it or could not be read)."""

    history: FileHistory | None
    blame: Blame | None
    message: str = ""
    fusion: FusionDump | None = None
    decisions: ProducerDecisions | None = None


def _versions(files: dict[str, dict[str, object]]) -> dict[str, dict[str, tuple | None]]:
    """The :func:`_version` now of each file of ``{directory: {file: ...}}``."""
    return {d: {f: _version(f) for f in known} for d, known in files.items()}


def _version(path: str) -> tuple | None:
    """The version of ``path``'s dump directory as the walk saw it: the stat
    key (:func:`hlo_lsp.dump.file_summary.stat_key`, the one every cache of a
    dump directory keys on) of the directory (a snapshot written or removed)
    and of the file (a recompile rewrote it); None when either is gone."""
    d, f = stat_key(os.path.dirname(path) or "."), stat_key(path)
    return None if d is None or f is None else (d, f)


#: The version of a file whose change was told: the next look records it silently.
_TOLD = ("told",)


class ShownHistories:
    """The dump directories whose pass history an editor shows, followed: an
    editor given the history of a module (:meth:`shown`, with the version of
    the directory the answer was read from) is told ``tell(directory)`` when
    the directory changed since, once per burst of changes: when it was quiet
    for ``quiet`` seconds (:data:`QUIET_S`), at the latest ``max_wait``
    (:data:`MAX_QUIET_WAIT_S`) after the burst's first change. A change is a
    file-change event of a file there (:meth:`touched`) or another version of
    the directory seen by a look every ``look`` seconds (:data:`LOOK_S`, in a
    thread). ``forget(directory)`` is called first, so that the editor's next
    question reads the directory again. At most :data:`MAX_SHOWN`
    directories, the least recently shown dropped. On the event loop."""

    def __init__(self, forget: Callable[[str], None], tell: Callable[[str], None],
                 quiet: float = QUIET_S, max_wait: float = MAX_QUIET_WAIT_S,
                 look: float = LOOK_S) -> None:
        self._forget, self._tell = forget, tell
        self.quiet, self.max_wait, self.look = quiet, max_wait, look
        #: directory -> {a shown module's last file: the version shown}, most recent last
        self._shown: dict[str, dict[str, tuple | None]] = {}
        #: directory -> how often it was shown (a look that began before ignores it)
        self._generation: dict[str, int] = {}
        #: directory -> (loop time of the first change not told, its timer)
        self._pending: dict[str, tuple[float, asyncio.TimerHandle]] = {}
        self._looking: asyncio.Task | None = None

    def shown(self, directory: str, last: str, version: tuple | None) -> None:
        """An editor was given the history whose last file is ``last`` (in
        ``directory``) read at ``version`` (:func:`_version`)."""
        files = self._shown.pop(directory, {})
        files[last] = version
        self._shown[directory] = files
        self._generation[directory] = self._generation.get(directory, 0) + 1
        while len(self._shown) > MAX_SHOWN:
            self._drop(next(iter(self._shown)))
        if self._looking is None or self._looking.done():
            self._looking = asyncio.get_running_loop().create_task(self._look())

    def touched(self, directory: str) -> None:
        """A file of ``directory`` changed (a file-change event): told after the
        burst, when an editor shows a history there."""
        if directory not in self._shown:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        first, timer = self._pending.get(directory, (now, None))
        if timer is not None:
            timer.cancel()
        delay = min(self.quiet, max(0.0, first + self.max_wait - now))
        self._pending[directory] = (first, loop.call_later(delay, self._due, directory))

    def _due(self, directory: str) -> None:
        self._pending.pop(directory, None)
        files = self._shown.get(directory)
        if files is None:
            return
        # what the editor has is out of date: the next look records what it sees
        # without telling again (the editor's next question records its own)
        for f in files:
            files[f] = _TOLD
        self._forget(directory)
        self._tell(directory)

    async def _look(self) -> None:
        """Every ``look`` seconds: the versions of the shown directories, a
        change touched."""
        while self._shown:
            await asyncio.sleep(self.look)
            asked = {d: dict(files) for d, files in self._shown.items()}
            generation = dict(self._generation)
            now = await in_thread(_versions, asked)
            for directory, versions in now.items():
                files = self._shown.get(directory)
                if files is None or self._generation.get(directory) != generation[directory]:
                    continue  # dropped, or shown anew meanwhile
                changed = False
                for f, version in versions.items():
                    # against the version known now, not when the look began: a
                    # change told while the look ran (_due) is recorded silently
                    known = files.get(f)
                    if f in files and version != known:
                        changed = changed or known is not _TOLD
                        files[f] = version
                if changed:
                    self.touched(directory)

    def _drop(self, directory: str) -> None:
        self._shown.pop(directory, None)
        self._generation.pop(directory, None)
        pending = self._pending.pop(directory, None)
        if pending is not None:
            pending[1].cancel()

    def close(self) -> None:
        """Stop following (the server shuts down)."""
        for directory in list(self._shown):
            self._drop(directory)
        if self._looking is not None:
            try:
                self._looking.cancel()
            except RuntimeError:  # its event loop is closed already
                pass


class PassHistories:
    """The pass histories of the files the editor asks about (module
    docstring). ``store`` gives the instruction at a position
    (:meth:`blame_at`), ``inputs`` the priority-fusion log of a blame (None:
    blames without it); :attr:`changed` is told the directory of a shown
    history that changed (the server sets it)."""

    def __init__(self, store: DocumentStore, ttl: float = PASSES_TTL_S,
                 inputs: DumpInputs | None = None) -> None:
        self.store = store
        #: ``changed(directory)``: a history an editor shows changed there
        #: (:class:`ShownHistories`); the server tells the editor
        self.changed: Callable[[str], None] = lambda directory: None
        #: the directories of the histories shown, followed
        self.watch = ShownHistories(self._forget_directory,
                                    lambda directory: self.changed(directory))
        self.inputs = inputs
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

    def _module(self, path: str) -> tuple[str, tuple | None, FileHistory | str]:
        """The history of the module of the file ``path``, to its last file:
        ``(that file, the version of the directory read, the history or why
        there is none)``; the version is taken before the directory is listed,
        so a file written meanwhile makes it out of date, never missed."""
        last = os.path.abspath(path)
        version = _version(last)
        try:
            history, _ = history_of_file(path)
        except (HistoryError, OSError) as exc:
            return last, version, str(exc)
        last = history.stages[-1].path
        version = None if version is None else (version[0], stat_key(last))
        return last, version, self._walk(last)

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
        last, version, found = await self._answers.get(("module", path), self._module, path)
        self.watch.shown(os.path.dirname(last), last, version)
        return found

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
        (a definition or a use), else the one defined on the line; with
        the priority-fusion decisions of the instruction (:class:`BlameAt`)."""
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
        blame = found.blame(key)
        fusion = await self.inputs.fusion_dump(path) if self.inputs is not None else None
        if fusion is None or fusion.problem:
            return BlameAt(found, blame, fusion=fusion)
        async with self.store.lease(uri) as a:  # the open document's module: a fusion's root
            decisions = blamed_decisions(blame, fusion, a.module if a is not None else None)
        return BlameAt(found, blame, fusion=fusion, decisions=decisions)

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
        """Drop what was read for the directory of ``path`` (a file there
        changed: a file-change event); a history shown there is told changed
        after the burst (:meth:`ShownHistories.touched`)."""
        directory = os.path.dirname(path)
        self._forget_directory(directory)
        self.watch.touched(directory)

    def close(self) -> None:
        """Stop following the shown histories (the server shuts down)."""
        self.watch.close()

    def _forget_directory(self, directory: str) -> None:
        self._answers.forget(lambda key: os.path.dirname(key[1]) == directory)
        # not under the lock (a walk holds it): a walk stored meanwhile has the old
        # version and is walked again when next asked
        for known in [p for p in list(self._walked) if os.path.dirname(p) == directory]:
            self._walked.pop(known, None)


__all__ = ["BlameAt", "HOVER_WAIT_S", "LOOK_S", "MAX_FILES", "MAX_QUIET_WAIT_S", "MAX_SHOWN",
           "PASSES_TTL_S", "PassHistories", "QUIET_S", "ShownHistories"]
