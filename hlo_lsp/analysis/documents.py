"""The document store: every document the server reads, and its analyses.

No pygls here (the layering test checks it): the server feeds the store the
protocol's events (open, change, close) and asks it for analyses; a test can
drive it with nothing but asyncio.

- **Opened documents** (the client's copy of the text is the truth): each has a
  :class:`Snapshot` per version (the text and the cheap indexes built on demand
  for answers that cannot wait for the full parse) and, once the worker thread
  has parsed it, an :class:`Analysis`. One analysis runs per document at a time;
  edits made meanwhile coalesce into the next one, which reuses every
  computation outside the edited window (:func:`hlo_lsp.syntax.chunks.parse_chunked`).
- **Files read from disk** (the other files of a dump directory, reached by
  definition, counterparts, reports): a bounded cache keyed by path, mtime and
  size, read and parsed off the event loop, so a dump rewritten on disk (a
  recompile) is read again.

Invariants:

- An :class:`Analysis` never changes once published. An edit that reuses the
  computations of the previous analysis moves them in place only when no
  request holds that analysis (a :meth:`DocumentStore.lease`); otherwise it moves
  copies.
- A request that used an analysis of a version that is no longer current when
  it answers gets :class:`DocumentChanged` from :meth:`DocumentStore.check_current`
  (the server answers ``ContentModified``, LSP 3.17 "Error codes").
- Closing a document drops everything the store held of it, and wakes every
  request waiting for its analysis (they get None).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import os
import time
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable, Protocol, Sequence

from cachetools import LRUCache

from hlo_lsp.dump.names import is_non_hlo_dump_file
from hlo_lsp.dump.untrusted import UntrustedFileError, read_text
from hlo_lsp.features.diagnostics import diagnostics, edited_diagnostics
from hlo_lsp.analysis import collector
from hlo_lsp.analysis.work import INTERACTIVE, submit
from hlo_lsp.model.hlo import HloModule, Problem, Severity
from hlo_lsp.syntax.chunks import ChunkCache, Skeleton, edited_chunk, parse_chunked
from hlo_lsp.syntax.edits import EditWindow, apply_changes, compose
from hlo_lsp.syntax.lines import LineIndex
from hlo_lsp.syntax.parser import parse

log = logging.getLogger("hlo_lsp")

CHUNKED_PARSE_CHARS = 16 * 1024    # parse bigger documents computation by computation
BIG_DOCUMENT_CHARS = 256 * 1024    # answer from the snapshot while these are indexed
PROGRESS_CHARS = 1024 * 1024       # report indexing progress for bigger documents
OPEN_YIELD_S = 0.005               # big documents: let the first requests run first
#: An edit of a chunked document is analysed this long after it arrives: the
#: requests an editor sends with an edit (hover, inlay hints, semantic tokens)
#: are answered from the latest analysis, mapped, before the new analysis moves
#: its computations (while it moves them, requests wait for its model).
EDIT_YIELD_S = 0.005
MAX_FULL_PARSE_CHARS = int(os.environ.get("HLO_LSP_MAX_FULL_PARSE_MB", "48")) * 1024 * 1024
#: Files read from disk: at most this many characters of text held (the models
#: they parse to are about 15x bigger in memory), least recently used first out.
DISK_CACHE_CHARS = 32 * 1024 * 1024


class DocumentChanged(Exception):
    """The document changed while a request was answering from an older version.

    The server answers the request with ``ContentModified`` (-32801)."""


@dataclass(frozen=True, slots=True, weakref_slot=True)
class Analysis:
    """One parsed version of a document; never changes once published.

    ``problems``: ours, in text order. ``derived``: values computed from this
    analysis on demand and kept as long as it lives (the XLA parser's verdict
    under ``"xla"``, the kernel summary, semantic tokens); they die with it, so a
    closed document's model is freed at once."""

    uri: str
    version: int
    module: HloModule
    lines: LineIndex
    seconds: float
    problems: tuple[Problem, ...] = ()
    lazy_only: bool = False   # no full model: answers come from the snapshot
    derived: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def xla_problems(self) -> list[Problem]:
        """The XLA parser's verdict as problems ([] until it has run)."""
        return self.derived.get("xla", [])


def analyze(uri: str, version: int, text: str, encoding: str = "utf-16",
            previous: HloModule | None = None, window: EditWindow | None = None,
            snapshot: Snapshot | None = None, keep_previous: bool = True,
            on_model: Callable[[HloModule], None] | None = None,
            previous_problems: Sequence[Problem] | None = None,
            on_edited: Callable[[list[Problem]], None] | None = None) -> Analysis:
    """Parse ``text`` (runs in a worker thread) and check it.

    Documents over :data:`CHUNKED_PARSE_CHARS` are parsed computation by
    computation, reusing the computations of ``previous`` outside ``window`` (the
    edit from ``previous.text`` to ``text``; None: found by comparing text); with
    ``keep_previous`` the reused computations that move are copied, else moved
    in place. Documents over :data:`MAX_FULL_PARSE_CHARS` get no full model
    (bounded memory). ``snapshot`` (of this text) lends its line index and
    skeleton. ``on_model`` is called (in this thread) with the finished model
    before the semantic checks run, so that requests can be answered from it
    while they do. ``on_edited`` is called (in this thread) with the first
    diagnostics of an edit inside one computation, before the rest of the module
    is moved and checked: those of the edited computation and ``previous_problems``
    (the previous analysis' problems) elsewhere
    (:func:`hlo_lsp.features.diagnostics.edited_diagnostics`). Never raises: an
    internal error becomes a diagnostic on the first character."""
    lines = snapshot.lines if snapshot is not None else LineIndex(text, encoding)
    if len(text) > MAX_FULL_PARSE_CHARS:
        module = HloModule(text)
        module.problems.append(Problem(0, 0, (
            f"this file ({len(text) / 2**20:.0f} MiB) is larger than the full-index limit "
            f"({MAX_FULL_PARSE_CHARS / 2**20:.0f} MiB): hover and go-to-definition work per "
            "computation; references, outline and diagnostics are off"),
            Severity.INFORMATION))
        return Analysis(uri, version, module, lines, 0.0, tuple(module.problems),
                        lazy_only=True)
    t0 = time.perf_counter()
    try:
        # The collector paused, the model frozen before it resumes: the
        # garbage-collection policy (analysis/collector.py).
        with collector.paused_gc():
            module = None
            if len(text) >= CHUNKED_PARSE_CHARS:
                skeleton = snapshot.skeleton if snapshot is not None else None
                edited = None
                if (on_edited is not None and previous_problems is not None
                        and skeleton is not None and window is not None):
                    found = edited_chunk(text, skeleton, previous, window, keep_previous)
                    if found is not None:
                        edited, old_end = found
                        first = edited_diagnostics(previous_problems, edited, old_end,
                                                   window.delta, len(previous.frames.frames))
                        if first is not None:
                            on_edited(first)
                module = parse_chunked(text, skeleton, previous, window, keep_previous,
                                       edited)
            if module is None:
                module = parse(text)
            if on_model is not None:
                on_model(module)
            problems = diagnostics(module)
            # The index of calls, which hover needs on matrix kernels (tracing
            # their operands across fusions) and references on computations:
            # built here, in the analysis' thread, rather than by the first
            # request after each edit on the event loop.
            module.callers  # noqa: B018 - a cached_property, built now
            collector.freeze()
    except Exception as exc:  # noqa: BLE001 - the server must survive any input
        log.exception("parse failed for %s", uri)
        module = HloModule(text)
        module.problems.append(Problem(0, min(1, len(text)),
                                       f"hlo-lsp internal error while parsing: {exc!r}"))
        problems = list(module.problems)
    return Analysis(uri, version, module, lines, time.perf_counter() - t0, tuple(problems))


@dataclass(frozen=True, slots=True)
class View:
    """An analysis seen from the text the client has now.

    While edits are being analysed, a request can be answered from the latest
    finished analysis: ``window`` is the edit from its text to the current text
    (None when the analysis is of the current version) and ``lines`` is the
    current text's line index. Offsets inside the window have no counterpart
    (the text there changed): :meth:`offset` and :meth:`span` give None for them.
    """

    analysis: Analysis
    lines: LineIndex
    window: EditWindow | None = None

    def offset(self, line: int, character: int) -> int | None:
        """The offset in the analysis' text of a position in the current text."""
        offset = self.lines.offset(line, character)
        w = self.window
        if w is None or offset < w.start:
            return offset
        if offset >= w.new_end and (w.new_end > w.start or offset > w.start):
            return offset - w.delta
        return None

    def span(self, start: int, end: int) -> tuple[int, int] | None:
        """``[start, end)`` of the analysis' text in the current text; None when
        it touches the edited window."""
        w = self.window
        if w is None or end <= w.start:
            return start, end
        if start >= w.old_end and (w.old_end > w.start or start > w.start):
            return start + w.delta, end + w.delta
        return None


class Snapshot:
    """The text of one document version, with the cheap indexes built on demand
    for answers that cannot wait for the full parse (see :mod:`hlo_lsp.syntax.chunks`)."""

    def __init__(self, version: int, text: str, encoding: str,
                 lines: LineIndex | None = None,
                 seed: tuple[Skeleton, EditWindow] | None = None) -> None:
        self.version = version
        self.text = text
        self.encoding = encoding
        if lines is not None:
            self.__dict__["lines"] = lines
        # An older skeleton and the edit since its text: the skeleton of this
        # version is derived from it instead of searching the whole text.
        self._seed = seed

    def successor(self, version: int, text: str, lines: LineIndex,
                  window: EditWindow | None) -> Snapshot:
        """The snapshot of the next version, ``window`` being the edit from this
        text to ``text`` (None: unknown)."""
        seed = None
        if window is not None:
            if "skeleton" in self.__dict__:
                seed = (self.skeleton, window)
            elif self._seed is not None:
                seed = (self._seed[0], self._seed[1].then(window))
        return Snapshot(version, text, self.encoding, lines, seed)

    @functools.cached_property
    def lines(self) -> LineIndex:
        return LineIndex(self.text, self.encoding)

    @functools.cached_property
    def skeleton(self) -> Skeleton:
        seed, self._seed = self._seed, None
        if seed is not None:
            return seed[0].edited(self.text, seed[1])
        return Skeleton(self.text)

    @functools.cached_property
    def chunks(self) -> ChunkCache:
        """Computations parsed on demand by quick answers (see chunks.partial_module)."""
        return ChunkCache()


class _Document:
    """An opened document: its latest snapshot and analysis, and a way to wait
    for the analysis of the current version."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.version = snapshot.version
        self.latest: Analysis | None = None
        self.task: asyncio.Task | None = None
        self.closed = False
        # One analysis at a time: edits made meanwhile coalesce behind it.
        self.analysing = asyncio.Lock()
        self.running = False
        # (version before, version after, window) of the edits not analysed yet.
        self.edits: list[tuple[int, int, EditWindow | None]] = []
        # version -> requests holding the analysis of that version.
        self.leases: dict[int, int] = {}
        # The version of the analysis whose computations the running analysis
        # moves in place (no request may read it any more), else None.
        self.consumed: int | None = None
        # The running analysis' model once it is built, before its semantic
        # checks end: requests are answered from it meanwhile (see peek).
        self.provisional: Analysis | None = None
        # Set (and replaced) whenever what peek returns may have changed.
        self.stage = asyncio.Event()

    def advance(self) -> None:
        """Wake the requests waiting in :meth:`DocumentStore.views`."""
        self.stage.set()
        self.stage = asyncio.Event()

    def window_since(self, base: int, version: int) -> EditWindow | None:
        """The edit from version ``base`` to ``version``, if every step is known."""
        steps = []
        at = base
        for before, after, window in self.edits:
            if after <= base:
                continue
            if before != at or after > version:
                return None
            steps.append(window)
            at = after
        return compose(steps) if at == version else None

    def ready(self) -> Analysis | None:
        """The analysis of the current version if it is done, else None."""
        if self.latest is not None and self.latest.version >= self.version:
            return self.latest
        return None

    async def current(self, model: bool = False) -> Analysis | None:
        """The analysis of the version current when this is called, or of a later
        one, once done (with ``model``: once its model is built, before its
        semantic checks end, see :attr:`provisional`); None once closed. It
        does not chase the edits made while it waits: during a typing storm a
        request waits for one analysis, not for the storm to end."""
        version = self.version
        while not self.closed:
            if self.latest is not None and self.latest.version >= version:
                return self.latest
            if model and self.provisional is not None and self.provisional.version >= version:
                return self.provisional
            await self.stage.wait()
        return None


class StoreListener(Protocol):
    """What the store tells the server (see :class:`hlo_lsp.lsp.protocol.HloLanguageServer`)."""

    def analysed(self, analysis: Analysis, current: bool) -> None:
        """A new analysis of an opened document; ``current``: of its latest version."""

    def edited(self, uri: str, version: int, problems: list[Problem],
               lines: LineIndex) -> None:
        """The first diagnostics of version ``version`` (of its latest version),
        known before its analysis ends (see :func:`analyze`, ``on_edited``)."""

    async def begin_progress(self, title: str) -> str | None:
        """Start a progress report; its token or None."""

    def end_progress(self, token: str, message: str) -> None:
        """End the progress report ``token``."""


@dataclass(slots=True)
class _DiskEntry:
    key: tuple[int, int]          # (mtime_ns, size) when read
    analysis: asyncio.Future      # of Analysis | None
    chars: int = 0


#: (uri, version when it arrived) of the request being received (see
#: :meth:`DocumentStore.arriving`).
_ARRIVAL: contextvars.ContextVar[tuple[str, int | None] | None] = contextvars.ContextVar(
    "hlo_lsp_arrival", default=None)

#: (uri, version) of every analysis the running request read (set by
#: :meth:`DocumentStore.lease`, checked by :meth:`DocumentStore.check_current`).
_READ: contextvars.ContextVar[list[tuple[str, int]] | None] = contextvars.ContextVar(
    "hlo_lsp_read_versions", default=None)


class DocumentStore:
    """Opened documents and files read from disk, by URI; see the module docstring.

    ``to_path(uri) -> str | None`` turns a ``file:`` URI into a path (the server
    passes pygls' ``to_fs_path``); ``pool`` runs parses; ``derive_pool`` (default:
    ``pool``) computes derived values (:meth:`derive`); ``listener`` hears of
    each analysis of an opened document."""

    def __init__(self, to_path: Callable[[str], str | None], pool: Executor,
                 listener: StoreListener | None = None,
                 disk_cache_chars: int = DISK_CACHE_CHARS,
                 derive_pool: Executor | None = None) -> None:
        self.to_path = to_path
        self.pool = pool
        self.derive_pool = derive_pool or pool
        self.listener = listener
        self.encoding = "utf-16"
        self._docs: dict[str, _Document] = {}
        self._shut = False
        self._disk: LRUCache = LRUCache(maxsize=disk_cache_chars,
                                        getsizeof=lambda e: max(1, e.chars))
        #: (id(analysis), key) -> the computation of a derived value under way
        self._deriving: dict[tuple[int, str], asyncio.Future] = {}

    # -- which documents ------------------------------------------------------
    def handles(self, uri: str) -> bool:
        """Whether ``uri`` is HLO text this store analyses (not a report of a dump
        directory, see :func:`hlo_lsp.dump.names.is_non_hlo_dump_file`)."""
        path = self.to_path(uri) or uri
        return not is_non_hlo_dump_file(os.path.basename(path))

    def is_open(self, uri: str) -> bool:
        return uri in self._docs

    def open_uris(self) -> list[str]:
        """The URIs of the opened documents."""
        return list(self._docs)

    def analysing(self) -> bool:
        """Whether an analysis of an opened document is running or scheduled."""
        return any(doc.task is not None and not doc.task.done() for doc in self._docs.values())

    def version(self, uri: str) -> int | None:
        """The current version of an opened document, else None."""
        doc = self._docs.get(uri)
        return doc.version if doc is not None else None

    def snapshot(self, uri: str) -> Snapshot | None:
        """The snapshot of the current version of an opened document."""
        doc = self._docs.get(uri)
        return doc.snapshot if doc is not None else None

    def pending_snapshot(self, uri: str) -> Snapshot | None:
        """The current snapshot of ``uri`` while it is indexed for the first time
        (or after a whole-text change), and always for documents too big for a
        full model; else None. After an edit, waiting for the incremental
        analysis (tens of milliseconds) is cheaper than parsing a computation
        again for a quick answer, and :meth:`peek` maps the latest one."""
        doc = self._docs.get(uri)
        if doc is None or doc.snapshot.version != doc.version:
            return None
        latest = doc.latest
        if latest is None or latest.lazy_only:
            return doc.snapshot
        ready = doc.ready()
        return doc.snapshot if ready is None and not doc.edits else None

    # -- events ---------------------------------------------------------------
    def open(self, uri: str, version: int, text: str) -> None:
        """didOpen: analyse ``text`` (big documents after :data:`OPEN_YIELD_S`, so
        the requests sent with didOpen are answered from the snapshot first).
        A document that is open already is opened afresh, whatever its version
        (a client that restarts may send a lower one): what was known of it is
        dropped as by :meth:`close`, and its waiting requests answer empty."""
        if uri in self._docs:
            self.close(uri)
        delay = OPEN_YIELD_S if len(text) >= BIG_DOCUMENT_CHARS else 0.0
        self._schedule(uri, Snapshot(version, text, self.encoding), None, None, delay)

    def change(self, uri: str, version: int,
               changes: list[tuple[tuple[int, int, int, int] | None, str]]) -> str:
        """didChange: apply ``changes`` (``((start line, start character, end line,
        end character) | None for the whole text, new text)``, positions in the
        negotiated encoding) to the current text as slices; returns the new text.
        Raises KeyError for a document that is not open."""
        doc = self._docs[uri]
        base = doc.snapshot
        text, lines, window = apply_changes(base.text, base.lines, changes)
        delay = EDIT_YIELD_S if len(text) >= CHUNKED_PARSE_CHARS else 0.0
        self._schedule(uri, base.successor(version, text, lines, window), window,
                       base.version, delay)
        return text

    def replace(self, uri: str, version: int, text: str) -> None:
        """The whole new text of an opened document (analysed afresh)."""
        self._schedule(uri, Snapshot(version, text, self.encoding), None, None, 0.0)

    def close(self, uri: str) -> None:
        """didClose: forget the document and wake the requests waiting for it."""
        doc = self._docs.pop(uri, None)
        if doc is None:
            return
        doc.closed = True
        if doc.task is not None and not doc.task.done():
            doc.task.cancel()
        # The cancelled task keeps its CancelledError, whose traceback holds the
        # task's frame, which holds this document: without this reference back
        # that is no cycle, and the document and its models are freed by
        # reference counting rather than by the next full collection.
        doc.task = None
        doc.latest = None
        doc.provisional = None
        doc.advance()  # the requests waiting for it get None

    def close_all(self) -> None:
        """Forget every document and stop their analyses (at shutdown); later
        events are ignored."""
        self._shut = True
        for uri in list(self._docs):
            self.close(uri)
        self._disk.clear()

    def _schedule(self, uri: str, snapshot: Snapshot, window: EditWindow | None,
                  base_version: int | None, delay: float) -> None:
        if self._shut:
            return
        doc = self._docs.get(uri)
        if doc is None:
            doc = self._docs[uri] = _Document(snapshot)
        elif base_version is None:
            doc.edits.clear()  # a new text, not an edit: nothing to reuse by window
        else:
            doc.edits.append((base_version, snapshot.version, window))
        doc.snapshot = snapshot
        doc.version = snapshot.version
        if doc.task is not None and not doc.task.done() and not doc.running:
            doc.task.cancel()  # not started yet: the new version replaces it
        doc.task = asyncio.get_running_loop().create_task(
            self._analyse_later(uri, doc, snapshot, delay))

    async def _analyse_later(self, uri: str, doc: _Document, snapshot: Snapshot,
                             delay: float) -> None:
        if delay:
            await asyncio.sleep(delay)
        loop = asyncio.get_running_loop()
        version, text = snapshot.version, snapshot.text
        async with doc.analysing:
            if doc.closed or version != doc.version:
                return  # a newer version was scheduled while this one waited
            previous = doc.latest
            window = doc.window_since(previous.version, version) \
                if previous is not None else None
            # Requests holding the previous analysis keep it unchanged: the
            # computations that move are copied rather than moved in place.
            keep = previous is not None and doc.leases.get(previous.version, 0) > 0
            doc.consumed = previous.version if previous is not None and not keep else None
            # From here on a newer version waits for this analysis instead of
            # cancelling it: a cancel inside begin_progress would leave the
            # client's answer to workDoneProgress/create without its request.
            doc.running = True
            progress = None
            if self.listener is not None and len(text) >= PROGRESS_CHARS and previous is None:
                progress = await self.listener.begin_progress(
                    f"Indexing {os.path.basename(self.to_path(uri) or uri)}")
            def model_ready(module: HloModule) -> None:  # in the worker thread
                provisional = Analysis(uri, version, module, snapshot.lines, 0.0)
                loop.call_soon_threadsafe(self._model_ready, doc, provisional)

            def edited(problems: list[Problem]) -> None:  # in the worker thread
                loop.call_soon_threadsafe(self._edited, uri, doc, version, problems,
                                          snapshot.lines)

            try:
                if self._shut:
                    return
                result = await loop.run_in_executor(
                    self.pool, functools.partial(
                        analyze, uri, version, text, snapshot.encoding,
                        previous.module if previous is not None else None, window, snapshot,
                        keep, on_model=model_ready,
                        previous_problems=previous.problems if previous is not None else None,
                        on_edited=edited if self.listener is not None else None))
            finally:
                doc.running = False
                provisional, doc.provisional = doc.provisional, None
                if progress is not None:
                    self.listener.end_progress(progress, "indexed")
            if provisional is not None and provisional.module is result.module:
                # What requests derived from the model meanwhile stays valid.
                for key, value in provisional.derived.items():
                    result.derived.setdefault(key, value)
            if doc.latest is None or result.version >= doc.latest.version:
                doc.latest = result
                doc.edits = [e for e in doc.edits if e[1] > result.version]
            # Only now: until the new analysis replaced it, the moved one
            # must not be handed out.
            doc.consumed = None
            doc.advance()
        log.info("analyzed %s v%s (%d chars) in %.3f s", uri, version, len(text),
                 result.seconds)
        if self.listener is not None and not doc.closed:
            self.listener.analysed(result, result.version == doc.version)

    # -- reading --------------------------------------------------------------
    def peek(self, uri: str) -> View | None:
        """The analysis to answer from now, without waiting: the current one, or
        while newer edits are being analysed the latest finished one with the
        edit since (requests never wait behind typing); None when there is none
        (a document being indexed for the first time, after a whole-text change,
        or while the running analysis moves the latest one's computations).

        Not leased: compute the answer before the next ``await`` (no analysis
        can start meanwhile). The version remembered for :meth:`check_current`
        is the current one, since answers are given in the current text."""
        doc = self._docs.get(uri)
        if doc is None or (doc.latest is None and doc.provisional is None):
            return None
        # The positions of the request are in the text of the version it arrived
        # with: a later edit already applied means they are not in doc.snapshot's.
        self.check_current()
        latest = doc.latest
        read = _READ.get()
        if read is not None:
            read.append((uri, doc.version))
        if doc.ready() is not None:
            return View(latest, latest.lines)
        if latest is None or doc.consumed == latest.version:
            # None yet, or being moved: the running analysis' model, once built.
            latest = doc.provisional
            if latest is None:
                return None
            if latest.version == doc.version:
                return View(latest, latest.lines)
        window = doc.window_since(latest.version, doc.version)
        return View(latest, doc.snapshot.lines, window) if window is not None else None

    def _edited(self, uri: str, doc: _Document, version: int, problems: list[Problem],
                lines: LineIndex) -> None:
        if not doc.closed and version == doc.version and self.listener is not None:
            self.listener.edited(uri, version, problems, lines)

    def _model_ready(self, doc: _Document, provisional: Analysis) -> None:
        if doc.closed or not doc.running or (
                doc.latest is not None and provisional.version <= doc.latest.version):
            return  # its analysis finished meanwhile
        doc.provisional = provisional
        doc.advance()

    async def views(self, uri: str, seen: View | None = None) -> AsyncIterator[View]:
        """The views :meth:`peek` gives as the analyses of ``uri`` progress, from
        now until one of the current version: each differs from the one before
        (the first from ``seen``, a view the caller already tried). A request
        that cannot be answered from a view (its position is in text changed
        since) takes the next; it never waits for more than the analysis
        running now. Ends when the document closes. A file that is not open
        gives one view, of its text on disk (none when it cannot be read). Each
        view is valid until the caller's next ``await``."""
        if uri not in self._docs:
            analysis = await self.analysis(uri)
            if analysis is not None and uri not in self._docs:
                yield View(analysis, analysis.lines)
            return
        while True:
            doc = self._docs.get(uri)
            if doc is None or doc.closed:
                return
            stage = doc.stage
            view = self.peek(uri)
            if view is not None and (seen is None or view.analysis is not seen.analysis
                                     or view.window != seen.window):
                yield view
                seen = view
                if view.window is None and view.analysis is doc.latest:
                    return  # the current version: nothing newer to wait for
                continue
            if doc.ready() is not None and view is not None:
                return
            await stage.wait()

    async def analysis(self, uri: str) -> Analysis | None:
        """The analysis of the current version of ``uri``: of the opened document,
        else of the file on disk (read again when its mtime or size changed);
        None for URIs this store does not handle, missing files, closed documents."""
        if not self.handles(uri):
            return None
        doc = self._docs.get(uri)
        if doc is not None:
            return await doc.current()
        return await self._from_disk(uri)

    @contextlib.asynccontextmanager
    async def lease(self, uri: str) -> AsyncIterator[Analysis | None]:
        """``async with store.lease(uri) as analysis``: the current analysis, which
        no edit changes until the block ends (edits copy what they move while a
        lease is held). It may be an analysis whose semantic checks still run
        (its ``problems`` are not known yet): a lease is for reading the model.
        The version read is remembered for :meth:`check_current`."""
        doc = self._docs.get(uri)
        if doc is not None and self.handles(uri):
            analysis = await doc.current(model=True)
        else:
            analysis = await self.analysis(uri)
        doc = self._docs.get(uri)
        held = doc is not None and analysis is not None and (
            doc.latest is analysis or doc.provisional is analysis)
        if held:
            doc.leases[analysis.version] = doc.leases.get(analysis.version, 0) + 1
        read = _READ.get()
        if read is not None and analysis is not None and doc is not None:
            read.append((uri, analysis.version))
        try:
            yield analysis
        finally:
            if held:
                left = doc.leases[analysis.version] - 1
                if left:
                    doc.leases[analysis.version] = left
                else:
                    del doc.leases[analysis.version]

    @contextlib.contextmanager
    def arriving(self, uri: str):
        """While a request about ``uri`` is received: remember the document's
        version now, for :meth:`track_reads` in the request's handler (which runs
        later, in a copy of this context)."""
        token = _ARRIVAL.set((uri, self.version(uri)))
        try:
            yield
        finally:
            _ARRIVAL.reset(token)

    def track_reads(self, uri: str | None = None) -> contextvars.Token:
        """Start remembering the versions the current request reads (see
        :meth:`check_current`); returns the token to pass to :meth:`untrack`.
        ``uri``: the document the request is about; its version is the one it had
        when the request arrived (:meth:`arriving`; else now), the text the
        request's positions refer to."""
        read: list[tuple[str, int]] = []
        arrival = _ARRIVAL.get()
        version = arrival[1] if arrival is not None and arrival[0] == uri else \
            self.version(uri) if uri is not None else None
        if uri is not None and version is not None:
            read.append((uri, version))
        return _READ.set(read)

    @staticmethod
    def untrack(token: contextvars.Token) -> None:
        _READ.reset(token)

    def check_current(self) -> None:
        """Raise :class:`DocumentChanged` when an opened document that the current
        request is about or read (through :meth:`lease` or :meth:`view`) has a
        newer version now."""
        for uri, version in _READ.get() or ():
            current = self.version(uri)
            if current is not None and current != version:
                raise DocumentChanged(f"{uri} changed from version {version} to {current}")

    async def _from_disk(self, uri: str) -> Analysis | None:
        path = self.to_path(uri)
        if not path:
            return None
        loop = asyncio.get_running_loop()
        try:
            st = await loop.run_in_executor(None, os.stat, path)
        except OSError:
            return None
        key = (st.st_mtime_ns, st.st_size)
        entry = self._disk.get(path)
        if entry is None or entry.key != key:
            entry = _DiskEntry(key, loop.create_future(), st.st_size)
            self._disk[path] = entry
            loop.create_task(self._read(uri, path, entry))
        return await asyncio.shield(entry.analysis)

    async def _read(self, uri: str, path: str, entry: _DiskEntry) -> None:
        def read_and_analyse() -> Analysis | None:
            try:
                text = read_text(path)
            except UntrustedFileError as exc:  # a FIFO, /dev/zero, unreadable...
                log.warning("not read: %s", exc)
                return None
            return analyze(uri, 0, text, self.encoding)
        try:
            result = await asyncio.get_running_loop().run_in_executor(
                self.pool, read_and_analyse)
        except Exception:  # noqa: BLE001 - the waiters get None, the log says why
            log.exception("reading %s failed", path)
            result = None
        if not entry.analysis.done():
            entry.analysis.set_result(result)

    def forget_file(self, path: str) -> None:
        """Drop the cached analysis of a file read from disk (it changed)."""
        self._disk.pop(path, None)

    async def derive(self, analysis: Analysis, key: str, fn: Callable[..., Any],
                     *args: Any, priority: int = INTERACTIVE) -> Any:
        """``fn(*args)``, computed in ``derive_pool`` once per analysis and kept in
        ``analysis.derived[key]`` (it lives as long as the analysis); queued at
        ``priority`` when ``derive_pool`` is a :class:`hlo_lsp.analysis.work.WorkQueue`
        (the priority of the first request that asks for it).

        Requests that ask for the same value while it is being computed (a code
        lens, ``hlo.showSummary`` and ``hlo.compareDumps`` sent with the didOpen
        of a big dump all want its kernel summary) wait for that computation
        instead of starting their own. An exception of ``fn`` reaches each of
        them, and the next request computes again."""
        try:
            return analysis.derived[key]
        except KeyError:
            pass
        slot = (id(analysis), key)
        pending = self._deriving.get(slot)
        if pending is None:
            # the pending entry holds the analysis: its id stays its own meanwhile
            pending = asyncio.ensure_future(self._derive(analysis, key, fn, args, priority))
            self._deriving[slot] = pending

            def done(f: asyncio.Future) -> None:
                self._deriving.pop(slot, None)
                if not f.cancelled():
                    f.exception()   # retrieved: its waiters, if any are left, raise it

            pending.add_done_callback(done)
        return await asyncio.shield(pending)

    async def _derive(self, analysis: Analysis, key: str, fn: Callable[..., Any],
                      args: tuple, priority: int) -> Any:
        value = await asyncio.wrap_future(submit(self.derive_pool, priority, fn, *args))
        return analysis.derived.setdefault(key, value)

