"""The dump directory as a workspace: an index of every HLO file under some
folders, and navigation between the stages of one module.

No LSP types here (indexing in the server: :mod:`hlo_lsp.analysis.workspace`).

Index
    :func:`discover` walks folders for HLO files (:func:`hlo_lsp.dump.names.is_hlo_path`:
    ``*.hlo``, XLA dump names, ``.txt`` files whose first line starts with
    ``HloModule``; the non-HLO reports are skipped). :func:`summarize_file` turns one
    file into a small picklable :class:`FileSummary`: module name, stage and platform
    from the dump name (:func:`hlo_lsp.dump.names.parse_dump_name`), and the symbols
    (computations, fusions with their HLO and backend kinds, custom-calls with their
    targets), lines and columns 0-based (columns in characters). Files larger than
    ``size_limit`` are summarised by a regular expression pass over their lines
    instead of a full parse (``FileSummary.partial``). :class:`WorkspaceIndex` runs
    both in a ``ProcessPoolExecutor`` (spawned workers, 1-2 of them), so indexing
    never holds the language server's GIL, caches summaries by (path, mtime, size)
    and takes incremental ``update``/``remove`` calls for watched-file events.

Counterparts
    The other optimization stage of a file and of an instruction
    (:func:`counterpart_files`, :func:`find_counterparts`) are
    :mod:`hlo_lsp.dump.counterparts`; one file's summary is
    :mod:`hlo_lsp.dump.file_summary`. Both are exported here too.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import concurrent.futures.process
import logging
import multiprocessing
import os
import threading
import time
from typing import Callable, Iterable, NamedTuple, Sequence

from hlo_lsp.dump.counterparts import (Counterpart, counterpart_files, find_counterparts,
                                       instruction_names, summary_of)
from hlo_lsp.dump.file_summary import (DEFAULT_SIZE_LIMIT, ComputationSymbol, CustomCallSymbol,
                                       FileSummary, FusionSymbol, name_fields, stat_key,
                                       summarize_file, summarize_many, summarize_text)
from hlo_lsp.dump.names import is_hlo_path, parse_dump_name
from hlo_lsp.model.frames import source_key
from hlo_lsp.model.opcodes import family

log = logging.getLogger("hlo_lsp.dump.index")

DEFAULT_MAX_FILES = 20_000
#: Directory entries (files of any kind) looked at before discovery stops: a
#: workspace that is a huge repository is not walked to its end.
DEFAULT_MAX_SCANNED = 200_000
#: Directory names never descended into.
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv",
                       ".tox", ".mypy_cache", ".pytest_cache", ".ruff_cache",
                       "site-packages", ".cache"})
#: Files per worker task: small enough for smooth progress, large enough to
#: amortise the inter-process round trip.
CHUNK = 8


# ---------------------------------------------------------------- discovery ---

def is_dump_directory(filenames: Iterable[str]) -> bool:
    """Whether a directory holding ``filenames`` (base names) is an XLA dump
    directory: one of them is an HLO dump file by its name alone
    (:func:`hlo_lsp.dump.names.parse_dump_name`, xla/service/dump.cc naming).
    Reads nothing."""
    return any(parse_dump_name(n) is not None for n in filenames)


def discover(folders: Sequence[str], max_files: int = DEFAULT_MAX_FILES,
             exclude: Sequence[str] = (), dump_dirs_only: bool = True,
             max_scanned: int = DEFAULT_MAX_SCANNED) -> list[str]:
    """Absolute paths of the HLO files under ``folders`` (recursively; hidden
    directories, :data:`SKIP_DIRS` and the directory names in ``exclude`` are not
    entered), sorted, at most ``max_files``. With ``dump_dirs_only`` only the
    files of dump directories (:func:`is_dump_directory`) count, so a dump inside
    a large repository does not index the repository's other text files (and
    their first lines are never read). Stops after looking at ``max_scanned``
    directory entries. A folder given as a file is taken as it is."""
    skip = SKIP_DIRS | set(exclude)
    out: list[str] = []
    seen: set[str] = set()
    scanned = 0
    for folder in folders:
        folder = os.path.abspath(folder)
        if os.path.isfile(folder):
            if is_hlo_path(folder) and folder not in seen:
                seen.add(folder)
                out.append(folder)
            continue
        for root, dirs, files in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d not in skip and not d.startswith("."))
            scanned += len(files)
            if scanned > max_scanned:
                log.info("workspace discovery stopped after %d files (maxScannedFiles)",
                         max_scanned)
                return out
            if dump_dirs_only and not is_dump_directory(files):
                continue
            for name in sorted(files):
                path = os.path.join(root, name)
                if path in seen or not is_hlo_path(path):
                    continue
                seen.add(path)
                out.append(path)
                if len(out) >= max_files:
                    return out
    return out


def special_reports(directories: Iterable[str], limit: int = 1000) -> list[tuple[str, str]]:
    """``(path, reason)`` of the files of ``directories`` named like XLA's reports
    and other non-HLO dump files (:func:`hlo_lsp.dump.names.is_non_hlo_dump_file`)
    that are not regular files once links are resolved (a FIFO, a link to
    ``/dev/zero``): files the readers refuse (:mod:`hlo_lsp.dump.untrusted`),
    listed so that the user hears of them. At most ``limit``; reads nothing,
    one ``stat`` per such name."""
    from hlo_lsp.dump.names import is_non_hlo_dump_file
    from hlo_lsp.dump.untrusted import special_file_problem

    out: list[tuple[str, str]] = []
    for directory in sorted(set(directories)):
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        for name in names:
            if not is_non_hlo_dump_file(name):
                continue
            path = os.path.join(directory, name)
            problem = special_file_problem(path)
            if problem:
                out.append((path, problem))
                if len(out) >= limit:
                    return out
    return out


# -------------------------------------------------------------------- index ---

class SymbolHit(NamedTuple):
    """One workspace-symbol result: ``kind`` is "module", "computation", "entry",
    "fusion", "custom-call", "collective", "control flow" (while, conditional,
    call...) or "instruction" (any other opcode); ``label`` the name shown (with the fusion kinds or
    custom-call target in brackets); position 0-based, columns in characters."""

    kind: str
    label: str
    name: str
    summary: FileSummary
    line: int
    column: int
    end_column: int
    score: int


def _entries(s: FileSummary) -> list[tuple[str, str, str, str, int, int, int]]:
    """(haystack, kind, label, name, line, column, end_column) for each symbol."""
    out = []
    module = s.module or os.path.basename(s.path)
    hay = " ".join(x for x in (module, s.stage, s.platform, os.path.basename(s.path)) if x)
    out.append((hay.lower(), "module", module, module, 0, 0, 0))
    for c in s.computations:
        kind = "entry" if c.is_entry else "computation"
        label = f"{c.name} [ENTRY]" if c.is_entry else c.name
        out.append((f"{c.name} {'entry' if c.is_entry else ''}".lower(), kind, label, c.name,
                    c.line, c.column, c.end_column))
    for f in s.fusions:
        kinds = " ".join(k for k in (f.kind, f.backend_kind) if k)
        label = f"{f.name} [{kinds}]" if kinds else f.name
        out.append((f"{f.name} fusion {kinds}".lower(), "fusion", label, f.name, f.line,
                    f.column, f.end_column))
    for c in s.custom_calls:
        label = f"{c.name} [{c.target}]" if c.target else c.name
        out.append((f"{c.name} custom-call {c.target}".lower(), "custom-call", label, c.name,
                    c.line, c.column, c.end_column))
    for i in s.instructions:
        fam = family(i.opcode) or ""
        kind = {"collective": "collective", "control flow": "control flow"}.get(fam,
                                                                                "instruction")
        out.append((f"{i.name} {i.opcode} {fam}".lower(), kind, f"{i.name} [{i.opcode}]",
                    i.name, i.line, i.column, i.end_column))
    return out


def _score(tokens: list[str], hay: str, name: str) -> int | None:
    """None when a token is missing from ``hay``; else lower is better: the
    name is the query, starts with a token, contains a token, or only the other
    fields (kinds, target) match."""
    for t in tokens:
        if t not in hay:
            return None
    if not tokens:
        return 3
    lname = name.lower()
    if lname == " ".join(tokens):
        return 0
    if any(lname.startswith(t) for t in tokens):
        return 1
    if any(t in lname for t in tokens):
        return 2
    return 3


class _WorkerContext:
    """A ``spawn`` multiprocessing context that remembers the processes it starts.

    ``ProcessPoolExecutor`` launches its workers with ``mp_context.Process``
    (its documented use of ``mp_context``), so :func:`stop_workers` can end
    exactly the workers of one pool without the executor's private attributes.
    Everything else is the ``spawn`` context's (a fork of a threaded server
    could inherit held locks)."""

    def __init__(self) -> None:
        self._context = multiprocessing.get_context("spawn")
        self.processes: list = []

    def __getattr__(self, name: str):
        return getattr(self._context, name)

    def Process(self, *args, **kwargs):  # noqa: N802 - the context API's name
        """A spawn-context ``Process(*args, **kwargs)``, remembered in ``processes``."""
        process = self._context.Process(*args, **kwargs)
        self.processes.append(process)
        return process


#: How long :func:`stop_workers` waits for workers to end before killing them (s).
STOP_WORKERS_S = 2.0


def stop_workers(executor: concurrent.futures.ProcessPoolExecutor,
                 context: _WorkerContext) -> None:
    """Cancel ``executor``'s pending work and terminate its worker processes
    (those ``context`` started), waiting a few milliseconds for them to end
    (at most :data:`STOP_WORKERS_S`, then SIGKILL). Uses the executor's own
    ``terminate_workers`` where Python has it (3.14). Never raises."""
    terminate = getattr(executor, "terminate_workers", None)
    if terminate is not None:
        try:
            terminate()
            return
        except Exception:  # noqa: BLE001 - fall back to our own list
            log.debug("terminate_workers failed", exc_info=True)
    executor.shutdown(wait=False, cancel_futures=True)
    # A worker being launched by a submit that raced with the shutdown starts
    # after a first pass: look again until every started worker has ended
    # (a few milliseconds), at most STOP_WORKERS_S, then kill what is left.
    deadline = time.monotonic() + STOP_WORKERS_S
    while True:
        alive = []
        for process in list(context.processes):
            try:
                if process.is_alive():
                    process.terminate()
                    process.join(0.05)
                    if process.is_alive():
                        alive.append(process)
            except Exception:  # noqa: BLE001 - a process not started or already reaped
                pass
        if not alive or time.monotonic() > deadline:
            break
    for process in alive:
        try:
            process.kill()
        except Exception:  # noqa: BLE001
            pass


class WorkspaceIndex:
    """Summaries of the HLO files of some folders, built in worker processes.

    ``workers``: processes of the pool (1-2; spawned lazily on first use).
    ``size_limit``: bytes above which a file is summarised without a full parse.
    Thread-safe for reads; mutate from one thread (the event loop).
    """

    def __init__(self, workers: int = 1, size_limit: int = DEFAULT_SIZE_LIMIT,
                 max_files: int = DEFAULT_MAX_FILES, exclude: Sequence[str] = (),
                 dump_dirs_only: bool = True, max_scanned: int = DEFAULT_MAX_SCANNED,
                 summarize: Callable[[list[str], int], list[FileSummary]] = summarize_many
                 ) -> None:
        self.workers = max(1, min(int(workers), 4))
        #: what a worker runs on a chunk of paths (:func:`summarize_many`, or the
        #: server's wrapper of it that pauses the garbage collector)
        self.summarize = summarize
        self.size_limit = size_limit
        self.max_files = max_files
        self.exclude = tuple(exclude)
        self.dump_dirs_only = dump_dirs_only
        self.max_scanned = max_scanned
        self._summaries: dict[str, FileSummary] = {}
        self._entries: dict[str, list] = {}
        self._executor: concurrent.futures.ProcessPoolExecutor | None = None
        self._context: _WorkerContext | None = None
        # Reentrant: a signal handler that closes the index runs in the thread
        # (the event loop's) that may hold it at that moment.
        self._lock = threading.RLock()
        self.generation = 0
        #: (done, total) of the indexing pass in progress, else None.
        self.progress: tuple[int, int] | None = None
        self.last_index_seconds = 0.0

    # -- pool ---------------------------------------------------------------
    def executor(self) -> concurrent.futures.ProcessPoolExecutor:
        """The worker pool (``spawn`` start method: a fork of a threaded server
        could inherit held locks), started on first use."""
        with self._lock:
            if self._executor is None:
                self._context = _WorkerContext()
                self._executor = concurrent.futures.ProcessPoolExecutor(
                    max_workers=self.workers, mp_context=self._context)
            return self._executor

    def _discard_executor(self) -> None:
        """Forget a broken pool (its workers are gone); the next use starts another."""
        with self._lock:
            ex, self._executor = self._executor, None
            self._context = None
        if ex is not None:
            ex.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        """Cancel pending work and stop the worker processes (only those this
        index started)."""
        with self._lock:
            ex, self._executor = self._executor, None
            context, self._context = self._context, None
        if ex is not None and context is not None:
            stop_workers(ex, context)

    # -- contents -----------------------------------------------------------
    def get(self, path: str) -> FileSummary | None:
        """The summary of ``path`` (absolute), if indexed."""
        return self._summaries.get(os.path.abspath(path))

    def summaries(self) -> list[FileSummary]:
        """All summaries, sorted by path."""
        return sorted(self._summaries.values(), key=lambda s: s.path)

    def __len__(self) -> int:
        return len(self._summaries)

    def add(self, summary: FileSummary) -> None:
        """Insert or replace a summary."""
        self._summaries[summary.path] = summary
        self._entries[summary.path] = _entries(summary)
        self.generation += 1

    def remove(self, paths: Iterable[str]) -> list[str]:
        """Forget ``paths`` (files, or folders: everything under them). Returns
        the paths removed."""
        removed = []
        for p in paths:
            p = os.path.abspath(p)
            prefix = p.rstrip(os.sep) + os.sep
            for known in list(self._summaries):
                if known == p or known.startswith(prefix):
                    del self._summaries[known]
                    self._entries.pop(known, None)
                    removed.append(known)
        if removed:
            self.generation += 1
        return removed

    def stale(self, paths: Iterable[str]) -> list[str]:
        """The paths whose (mtime, size) differ from the cached summary, or that
        are not indexed yet. Missing files are not returned."""
        out = []
        for p in paths:
            p = os.path.abspath(p)
            stamp = stat_key(p)
            if stamp is None:
                continue
            s = self._summaries.get(p)
            if s is None or (s.mtime_ns, s.size) != stamp:
                out.append(p)
        return out

    # -- synchronous API (CLI, tests) ----------------------------------------
    def scan(self, folders: Sequence[str]) -> list[str]:
        """:func:`discover` in a worker process."""
        return self.executor().submit(discover, list(folders), self.max_files, self.exclude,
                                      self.dump_dirs_only, self.max_scanned).result()

    def index(self, paths: Sequence[str]) -> list[FileSummary]:
        """Summarise the stale ``paths`` in the workers and add them; blocks."""
        todo = self.stale(paths)
        out = []
        futures = [self.executor().submit(self.summarize, todo[i:i + CHUNK], self.size_limit)
                   for i in range(0, len(todo), CHUNK)]
        for fut in futures:
            for s in fut.result():
                self.add(s)
                out.append(s)
        return out

    # -- asynchronous API (the server) ----------------------------------------
    async def scan_async(self, folders: Sequence[str]) -> list[str]:
        """:func:`discover` in a worker process, awaited."""
        fut = self.executor().submit(discover, list(folders), self.max_files, self.exclude,
                                     self.dump_dirs_only, self.max_scanned)
        return await asyncio.wrap_future(fut)

    async def index_async(self, paths: Sequence[str],
                          progress: Callable[[int, int], None] | None = None
                          ) -> list[FileSummary]:
        """Summarise the stale ``paths`` in the workers, adding each chunk as it
        arrives; ``progress(done, total)`` after each chunk (total counts every
        path given, cached ones are done at once). Cancelling the task cancels
        the chunks not started yet."""
        t0 = time.perf_counter()
        paths = [os.path.abspath(p) for p in paths]
        todo = await asyncio.to_thread(self.stale, paths)
        total = len(paths)
        done = total - len(todo)
        self.progress = (done, total)
        if progress:
            progress(done, total)
        out: list[FileSummary] = []
        chunks = iter([todo[i:i + CHUNK] for i in range(0, len(todo), CHUNK)])
        pending: dict[asyncio.Future, list[str]] = {}
        # A bounded window of chunks in flight: cancelling (or exiting) never
        # waits for a long queue of submitted work.
        window = self.workers * 2

        def fill() -> None:
            while len(pending) < window:
                chunk = next(chunks, None)
                if chunk is None:
                    return
                fut = asyncio.wrap_future(
                    self.executor().submit(self.summarize, chunk, self.size_limit))
                pending[fut] = chunk

        try:
            fill()
            while pending:
                finished, _ = await asyncio.wait(list(pending),
                                                 return_when=asyncio.FIRST_COMPLETED)
                for fut in finished:
                    chunk = pending.pop(fut)
                    try:
                        results = fut.result()
                    except Exception as exc:  # noqa: BLE001 - a crashed worker
                        log.warning("indexing %d files failed: %r", len(chunk), exc)
                        if isinstance(exc, concurrent.futures.process.BrokenProcessPool):
                            self._discard_executor()
                        results = [FileSummary(p, *(stat_key(p) or (0, 0)), error=repr(exc),
                                               **name_fields(p)) for p in chunk]
                    for s in results:
                        self.add(s)
                        out.append(s)
                    done += len(chunk)
                    self.progress = (done, total)
                    if progress:
                        progress(done, total)
                fill()
        except asyncio.CancelledError:
            for fut in pending:
                fut.cancel()
            raise
        finally:
            self.progress = None
            self.last_index_seconds = time.perf_counter() - t0
        return out

    async def update(self, paths: Sequence[str]) -> list[FileSummary]:
        """Watched-file event "created/changed": re-summarise the HLO files among
        ``paths`` whose (mtime, size) changed; non-HLO files are ignored and
        vanished files removed."""
        paths = [os.path.abspath(p) for p in paths]
        gone = [p for p in paths if not os.path.exists(p)]
        self.remove(gone)
        present = [p for p in paths if p not in gone]
        hlo = await asyncio.to_thread(lambda: [p for p in present if is_hlo_path(p)])
        return await self.index_async(hlo)

    # -- queries --------------------------------------------------------------
    def symbols(self, query: str, limit: int = 500) -> list[SymbolHit]:
        """Symbols matching ``query``: every whitespace-separated token must occur
        (case-insensitively) in the symbol's name or, for fusions, its HLO kind and
        backend kind, for custom-calls its target, for modules the module name,
        stage, platform and file name. Best first (exact name, prefix, substring),
        then by file and line; at most ``limit``."""
        tokens = query.lower().split()
        hits: list[SymbolHit] = []
        for path, entries in list(self._entries.items()):
            summary = self._summaries.get(path)
            if summary is None:
                continue
            for hay, kind, label, name, line, col, end in entries:
                score = _score(tokens, hay, name)
                if score is None:
                    continue
                if kind == "module" and not tokens:
                    score = 0
                hits.append(SymbolHit(kind, label, name, summary, line, col, end, score))
        hits.sort(key=lambda h: (h.score, h.summary.path, h.line))
        return hits[:limit]

    def modules(self, name: str) -> list[FileSummary]:
        """The indexed files of module ``name``, sorted by path."""
        return sorted((s for s in self._summaries.values() if s.module == name),
                      key=lambda s: s.path)

__all__ = [
    "ComputationSymbol", "Counterpart", "CustomCallSymbol", "FileSummary", "FusionSymbol",
    "SymbolHit", "WorkspaceIndex", "counterpart_files", "discover", "find_counterparts",
    "special_reports",
    "instruction_names", "source_key", "summarize_file", "summarize_many", "summarize_text",
    "summary_of",
]
