"""The dump directory as a workspace, for the analysis layer: the index of the
HLO files of the workspace folders and its background indexing, the other
optimization stage of a document (counterparts) and the workspace's symbols.

:class:`Workspace` (one per :class:`~hlo_lsp.analysis.host.AnalysisHost`) holds
the :class:`~hlo_lsp.dump.index.WorkspaceIndex` once indexing is on, indexes
the workspace folders in its worker processes once the opened documents are
analysed (:func:`documents_settled`), re-indexes files that changed on disk,
and answers the questions the snapshot asks of it (``counterpart_files``,
``counterparts``, ``symbols``). No pygls: progress and warnings reach the
editor through the callbacks of a :class:`Reporter` that the protocol adapter
passes; paths become the URIs the store knows documents by through the host's
``to_uri``.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import logging
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hlo_lsp.analysis.answers import Placed
from hlo_lsp.analysis.collector import paused_call
from hlo_lsp.analysis.documents import DocumentStore
from hlo_lsp.analysis.work import in_thread
from hlo_lsp.dump.index import (SymbolHit, WorkspaceIndex, counterpart_files, find_counterparts,
                                special_reports, summarize_many)
from hlo_lsp.model.hlo import Computation, HloModule, Instruction
from hlo_lsp.model.index import Kind, find_at
from hlo_lsp.model.visible import visible

log = logging.getLogger("hlo_lsp.workspace")

def workspace_index(**settings: Any) -> WorkspaceIndex:
    """A :class:`~hlo_lsp.dump.index.WorkspaceIndex` with ``settings`` (its
    keyword arguments) whose worker processes summarise with the garbage
    collector paused (:func:`hlo_lsp.analysis.collector.paused_call`: a 4 MB
    parse takes 1.8x as long with it on; docs/architecture.md, Garbage
    collection)."""
    return WorkspaceIndex(**settings, summarize=functools.partial(paused_call, summarize_many))


#: Seconds between two progress reports of one indexing pass.
PROGRESS_EVERY_S = 0.2
#: Indexing passes shorter than this (seconds), or of fewer files, show no progress.
PROGRESS_DELAY_S = 0.3
PROGRESS_MIN_FILES = 16
#: Workspace symbols answered at most.
MAX_SYMBOLS = 500
#: Counterpart files tried, best first, until one yields a match.
MAX_COUNTERPART_FILES = 4
#: Skipped files named in one message; the rest are counted.
MAX_SKIPPED_NAMED = 5
#: Indexing waits until no document has been analysed for this long (seconds),
#: at most :data:`INDEX_WAIT_S` after it was asked for: the documents an editor
#: opens with the workspace are analysed and answered first, instead of sharing
#: the machine with the index's worker processes (on 2 cores that more than
#: doubled the first hover's time: docs/benchmarks.md).
INDEX_QUIET_S = 0.3
INDEX_WAIT_S = 5.0


@dataclass(frozen=True)
class IndexStatus:
    """Where indexing stands: ``indexing`` (a pass runs), ``done`` of ``total``
    files of the running pass (else both the files indexed), ``files`` and
    ``symbols`` indexed, ``seconds`` of the last finished pass."""

    indexing: bool = False
    done: int = 0
    total: int = 0
    files: int = 0
    symbols: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class Reporter:
    """How indexing reaches the editor, every call on the event loop:
    ``begin(title, message)`` starts a progress report at 0 % and gives its
    handle (None: the editor shows no progress); ``report(handle, message,
    percentage)``; ``end(handle, message)``; ``tell(message)`` shows the user a
    warning."""

    begin: Callable[[str, str], Awaitable[Any]]
    report: Callable[[Any, str, int], None]
    end: Callable[[Any, str], None]
    tell: Callable[[str], None]


async def documents_settled(store: DocumentStore, quiet: float = INDEX_QUIET_S,
                            limit: float = INDEX_WAIT_S) -> None:
    """Return once no analysis of an opened document of ``store`` has run for
    ``quiet`` seconds, or after ``limit`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    calm_since = loop.time()
    while loop.time() < deadline:
        if store.analysing():
            calm_since = loop.time()
        elif loop.time() - calm_since >= quiet:
            return
        await asyncio.sleep(0.05)


def skipped_message(skipped: Sequence[tuple[str, str]]) -> str:
    """The warning naming files of the workspace that were not read
    (``(path, reason)``, at least one), e.g. ``hlo-lsp did not read 2 files of
    the workspace: /w/d/x.txt: not a regular file (a FIFO); ...``; paths are
    escaped (:func:`hlo_lsp.model.visible.visible`), past
    :data:`MAX_SKIPPED_NAMED` they are counted."""
    named = "; ".join(f"{visible(path)}: {reason}"
                      for path, reason in skipped[:MAX_SKIPPED_NAMED])
    more = len(skipped) - MAX_SKIPPED_NAMED
    return (f"hlo-lsp did not read {len(skipped)} file{'s' if len(skipped) > 1 else ''} of the "
            f"workspace: {named}{f'; and {more} more (see the log)' if more > 0 else ''}.")


class Workspace:
    """The workspace index of one host and its background indexing; see the
    module docstring. ``to_uri(path) -> str | None`` names a file as the store
    knows it. :attr:`index` is None until :meth:`open` (indexing is off)."""

    def __init__(self, store: DocumentStore, to_uri: Callable[[str], str | None]) -> None:
        self.store = store
        self.to_uri = to_uri
        self.index: WorkspaceIndex | None = None
        self.task: asyncio.Task | None = None
        self.folders: list[str] = []
        self.started = 0.0
        #: set when the last indexing pass ended (or there was none to run)
        self.finished = asyncio.Event()
        #: (path, reason) of the files skipped that the user was told of
        self.skipped_told: set[tuple[str, str]] = set()

    # -- indexing -------------------------------------------------------------
    def open(self, index: WorkspaceIndex, folders: list[str], reporter: Reporter) -> None:
        """Turn indexing on with ``index`` (its workers are stopped at exit) and
        index ``folders`` (:meth:`start`)."""
        self.index = index
        atexit.register(index.close)
        if folders:
            self.start(folders, reporter)
        else:
            self.finished.set()

    def start(self, folders: list[str], reporter: Reporter) -> None:
        """(Re)start the background indexing of ``folders``, once the opened
        documents are analysed (:func:`documents_settled`); the pass running is
        cancelled. Needs a running event loop."""
        self.folders = folders
        if self.task is not None and not self.task.done():
            self.task.cancel()
        self.finished.clear()
        self.started = time.perf_counter()

        async def run() -> None:
            try:
                await documents_settled(self.store)
                await self.index_folders(folders, reporter)
            finally:
                self.finished.set()

        self.task = asyncio.get_running_loop().create_task(run())

    def folders_changed(self, removed: list[str], folders: list[str],
                        reporter: Reporter) -> None:
        """Workspace folders ``removed`` (paths): forget their files, and index
        the workspace's ``folders`` now. Nothing when indexing is off."""
        if self.index is None:
            return
        self.index.remove(removed)
        self.start(folders, reporter)

    async def index_folders(self, folders: list[str], reporter: Reporter) -> None:
        """Discover and index ``folders`` in the workers (best effort: a failure
        is logged). Progress (``indexed 120/500 files``) is shown when at least
        :data:`PROGRESS_MIN_FILES` files need indexing and the pass is still
        running after :data:`PROGRESS_DELAY_S`, so quick passes do not flicker;
        files that were not read are told (:meth:`tell_skipped`)."""
        index = self.index
        assert index is not None
        t0 = time.perf_counter()
        handle: Any = None
        last = 0.0
        latest = (0, 0)
        total_files = 0

        def report(done: int, total: int) -> None:
            nonlocal last, latest
            latest = (done, total)
            now = time.monotonic()
            if handle is None or (now - last < PROGRESS_EVERY_S and done < total):
                return
            last = now
            reporter.report(handle, f"indexed {done}/{total} files",
                            int(100 * done / total) if total else 100)

        async def show_progress() -> None:
            nonlocal handle
            await asyncio.sleep(PROGRESS_DELAY_S)
            handle = await reporter.begin("Indexing HLO files", "looking for HLO files")
            if handle is not None and latest[1]:
                report(*latest)

        shower: asyncio.Task | None = None
        try:
            paths = await index.scan_async(folders)
            total_files = len(paths)
            if len(index.stale(paths)) >= PROGRESS_MIN_FILES:
                shower = asyncio.get_running_loop().create_task(show_progress())
            summaries = await index.index_async(paths, report)
            skipped = [(s.path, s.error) for s in summaries if s.skipped]
            skipped += await in_thread(special_reports, {os.path.dirname(p) for p in paths})
            self.tell_skipped(skipped, reporter.tell)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - indexing is best effort
            log.exception("indexing %s failed", folders)
        finally:
            if shower is not None:
                shower.cancel()
            seconds = time.perf_counter() - t0
            if handle is not None:
                reporter.end(handle, f"indexed {total_files} files in {seconds:.1f} s")
            log.info("indexed %d HLO files under %s in %.2f s", total_files, folders, seconds)

    def tell_skipped(self, skipped: list[tuple[str, str]], tell: Callable[[str], None]) -> None:
        """``tell`` one warning (:func:`skipped_message`) naming the files of the
        workspace that were not read (``(path, reason)``: a FIFO or a link to a
        device named like a dump or a report, an unreadable file;
        :mod:`hlo_lsp.dump.untrusted`) that the user was not told of yet; each
        is logged."""
        new = [s for s in dict.fromkeys(skipped) if s not in self.skipped_told]
        if not new:
            return
        self.skipped_told.update(new)
        for path, reason in new:
            log.warning("skipped %s: %s", path, reason)
        tell(skipped_message(new))

    async def files_changed(self, changed: list[str], deleted: list[str],
                            tell: Callable[[str], None]) -> None:
        """Files ``changed`` (or created) and ``deleted`` on disk: re-index the
        first, drop the others from the index (best effort: a failure is
        logged); files that could not be read are told. Nothing when indexing
        is off."""
        if self.index is None:
            return
        try:
            self.index.remove(deleted)
            if changed:
                summaries = await self.index.update(changed)
                self.tell_skipped([(s.path, s.error) for s in summaries if s.skipped], tell)
        except Exception:  # noqa: BLE001 - indexing is best effort
            log.exception("re-indexing watched files failed")

    def status(self) -> IndexStatus:
        """Where indexing stands (:class:`IndexStatus`; all zero when it is off)."""
        index = self.index
        if index is None:
            return IndexStatus()
        running = self.task is not None and not self.task.done()
        done, total = index.progress or (len(index), len(index))
        symbols = sum(len(s.computations) + len(s.fusions) + len(s.custom_calls)
                      + len(s.instructions) + 1 for s in index.summaries())
        return IndexStatus(running, done, total, len(index), symbols,
                           round(index.last_index_seconds, 3))

    def close(self) -> None:
        """Stop indexing and the index's worker processes; indexing is off
        afterwards. Idempotent."""
        if self.task is not None:
            self.task.cancel()
        index, self.index = self.index, None
        if index is not None:
            index.close()

    # -- questions --------------------------------------------------------------
    async def symbols(self, query: str, limit: int = MAX_SYMBOLS) -> list[SymbolHit]:
        """The indexed symbols matching ``query``, best first, at most ``limit``
        (:meth:`hlo_lsp.dump.index.WorkspaceIndex.symbols`); answered from what
        is indexed so far while indexing runs; [] when indexing is off."""
        if self.index is None:
            return []
        return await in_thread(self.index.symbols, query, limit)

    async def counterpart_files(self, uri: str) -> list[str]:
        """The paths of the files holding the other optimization stage of
        ``uri``'s module, best first, as :func:`hlo_lsp.dump.index.counterpart_files`
        ranks them (the module named by the document's ``HloModule`` header,
        else by its dump name); [] for a document that is no file, is not
        analysable or has no counterpart."""
        path = self.store.to_path(uri)
        if not path:
            return []
        async with self.store.lease(uri) as a:
            if a is None:
                return []
            name = _module_name(a.module)
        return [s.path for s in await in_thread(counterpart_files, path, self.index, name)]

    async def counterparts(self, uri: str, line: int, character: int
                           ) -> list[tuple[str, Placed]]:
        """``(uri, place)`` of the counterpart(s) of the instruction (or
        computation) at the position of ``uri`` in the other optimization
        stage's file of the same module (:func:`hlo_lsp.dump.index.find_counterparts`;
        a computation by its name), the first of the best
        :data:`MAX_COUNTERPART_FILES` files with one; [] when there is none.
        The other file is read through the document store: opened, or from disk
        as it is now."""
        path = self.store.to_path(uri)
        if not path:
            return []
        async with self.store.lease(uri) as a:
            if a is None:
                return []
            target = _target_of(a.module, a.lines.offset(line, character))
            if target is None:
                return []
            files = await in_thread(counterpart_files, path, self.index, _module_name(a.module))
            for summary in files[:MAX_COUNTERPART_FILES]:
                other = self.to_uri(summary.path)
                if not other:
                    continue
                async with self.store.lease(other) as b:
                    if b is None:
                        continue
                    if isinstance(target, Computation):
                        comp = b.module.by_name.get(target.name.name)
                        if comp is not None:
                            return [(b.uri, Placed(b.lines, comp.name.start, comp.name.end))]
                        continue
                    matches = await in_thread(find_counterparts, a.module, target, b.module)
                    if matches:
                        return [(b.uri, Placed(b.lines, m.instruction.name.start,
                                               m.instruction.name.end)) for m in matches]
        return []


def _module_name(module: HloModule) -> str | None:
    return module.name.name if module.name is not None else None


def _target_of(module: HloModule, offset: int) -> Instruction | Computation | None:
    """The instruction or computation whose counterpart is asked for at ``offset``."""
    occ = find_at(module, offset)
    if occ is not None:
        if occ.kind == Kind.INSTRUCTION_USE and isinstance(occ.target, Instruction):
            return occ.target
        if occ.kind in (Kind.COMPUTATION_DEF, Kind.COMPUTATION_USE) and \
                isinstance(occ.target, Computation):
            return occ.target
        if occ.instruction is not None:
            return occ.instruction
    return module.instruction_at(offset)
