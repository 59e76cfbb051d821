"""The language server: pygls wiring around the pure features.

Documents are parsed off the event loop (a worker thread), one analysis per
document at a time: edits made during an analysis coalesce into the next one.
Edits are applied as slices (:class:`HloProtocol`, :mod:`hlo_lsp.syntax.edits`), and
documents over CHUNKED_PARSE_CHARS are parsed computation by computation,
reusing what an edit did not touch (:mod:`hlo_lsp.syntax.chunks`). Request handlers
await the analysis of the latest version and only read it; while a big
document is still being indexed, definition and hover are answered from its
snapshot instead. Every handler is guarded: an internal error is logged and
answered with an empty result, never a crash. Handler groups for the other
features live in :mod:`hlo_lsp.lsp.handlers`.

Custom protocol (docs/protocol.md): request ``hlo/inlineRegions``.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import logging
import os
import pkgutil
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method
from pygls.uris import from_fs_path, to_fs_path

from hlo_lsp import __version__
from hlo_lsp.dump.reports import load_buffer_assignment_for
from hlo_lsp.model.spans import FileTarget, Span
from hlo_lsp.features.definition import definition
from hlo_lsp.features.diagnostics import diagnostics, merge_xla, xla_problem
from hlo_lsp.features.folding import folding_ranges
from hlo_lsp.features.hover import hover
from hlo_lsp.features.inline_regions import KINDS, inline_regions
from hlo_lsp.features.references import references
from hlo_lsp.features.symbols import Symbol, document_symbols
from hlo_lsp.dump.names import is_non_hlo_dump_file
from hlo_lsp.model.hlo import HloModule, Problem, Severity
from hlo_lsp.model.index import Kind, find_at
from hlo_lsp.lsp.collector import ModelCollector
from hlo_lsp.syntax.edits import EditWindow, apply_changes, compose
from hlo_lsp.syntax.chunks import ChunkCache, Skeleton, parse_chunked, partial_module, quick_definition
from hlo_lsp.syntax.parser import parse, paused_gc, warm_up as parser_threads_ready
from hlo_lsp.dump.sources import source_dirs
from hlo_lsp.syntax.lines import LineIndex
from hlo_lsp.syntax.xla import XlaOracle, available as xla_available

log = logging.getLogger("hlo_lsp")

INLINE_REGIONS = "hlo/inlineRegions"
EDIT_DEBOUNCE_S = 0.0             # edits during an analysis coalesce behind it
OPEN_YIELD_S = 0.03               # big documents: let the first requests run first
MAX_OUTLINE_INSTRUCTIONS = 20_000
CHUNKED_PARSE_CHARS = 16 * 1024    # parse bigger documents computation by computation
BIG_DOCUMENT_CHARS = 256 * 1024    # answer from the snapshot while these are indexed
PROGRESS_CHARS = 1024 * 1024       # report indexing progress for bigger documents
MAX_XLA_CHECK_CHARS = 64 * 1024 * 1024
MAX_FULL_PARSE_CHARS = int(os.environ.get("HLO_LSP_MAX_FULL_PARSE_MB", "48")) * 1024 * 1024


@dataclass(slots=True)
class Analysis:
    """One parsed version of a document."""

    uri: str
    version: int
    module: HloModule
    lines: LineIndex
    seconds: float
    problems: list[Problem] = field(default_factory=list)  # ours, in text order
    xla_problems: list[Problem] | None = None
    lazy_only: bool = False   # no full model: answers come from the snapshot


def analyze(uri: str, version: int, text: str, encoding: str = "utf-16",
            previous: HloModule | None = None, window: EditWindow | None = None,
            snapshot: Snapshot | None = None) -> Analysis:
    """Parse ``text`` (runs in a worker thread). Documents over
    CHUNKED_PARSE_CHARS are parsed computation by computation, reusing the
    computations of ``previous`` outside ``window`` (the edit from
    ``previous.text`` to ``text``; None: found by comparing text); documents over
    MAX_FULL_PARSE_CHARS get no full model (bounded memory). ``snapshot`` (of
    this text) lends its line index and skeleton, which it may have built
    incrementally. Never raises: an internal error becomes a diagnostic on the
    first character."""
    lines = snapshot.lines if snapshot is not None else LineIndex(text, encoding)
    if len(text) > MAX_FULL_PARSE_CHARS:
        # Too big for a full model in bounded memory: hover and definition work
        # computation by computation from the snapshot (see _pending_snapshot).
        module = HloModule(text)
        module.problems.append(Problem(0, 0, (
            f"this file ({len(text) / 2**20:.0f} MiB) is larger than the full-index limit "
            f"({MAX_FULL_PARSE_CHARS / 2**20:.0f} MiB): hover and go-to-definition work per "
            "computation; references, outline and diagnostics are off"),
            Severity.INFORMATION))
        return Analysis(uri, version, module, lines, 0.0, list(module.problems),
                        lazy_only=True)
    t0 = time.perf_counter()
    try:
        # The model is hundreds of thousands of objects that all outlive the
        # parse: the collector would traverse them repeatedly and free nothing.
        with paused_gc():
            module = None
            if len(text) >= CHUNKED_PARSE_CHARS:
                skeleton = snapshot.skeleton if snapshot is not None else None
                module = parse_chunked(text, skeleton, previous, window)
            if module is None:
                module = parse(text)
            problems = diagnostics(module)  # here, off the event loop
    except Exception as exc:  # noqa: BLE001 - the server must survive any input
        log.exception("parse failed for %s", uri)
        module = HloModule(text)
        module.problems.append(Problem(0, min(1, len(text)),
                                       f"hlo-lsp internal error while parsing: {exc!r}"))
        problems = list(module.problems)
    return Analysis(uri, version, module, lines, time.perf_counter() - t0, problems)


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
        """Computations parsed on demand by quick answers (see lazy.partial_module)."""
        return ChunkCache()


class _DocState:
    """The latest analysis of a document and a way to wait for the current one."""

    def __init__(self) -> None:
        self.version = -1
        self.latest: Analysis | None = None
        self.snapshot: Snapshot | None = None
        self.changed = asyncio.Condition()
        self.task: asyncio.Task | None = None
        self.closed = False
        # One analysis at a time: it may move the computations of the previous
        # one (lazy.parse_chunked), and edits made meanwhile coalesce behind it.
        self.analysing = asyncio.Lock()
        self.running = False
        # (version before, version after, window) of the edits not analysed yet.
        self.edits: list[tuple[int, int, EditWindow | None]] = []

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

    async def current(self) -> Analysis | None:
        async with self.changed:
            await self.changed.wait_for(
                lambda: self.closed or (self.latest is not None
                                        and self.latest.version >= self.version))
            return None if self.closed else self.latest


class HloProtocol(LanguageServerProtocol):
    """pygls' protocol, except that edits to the documents the server analyses are
    applied by :meth:`HloLanguageServer.apply_changes`: a slice per change
    instead of pygls' pass over every line (tens of milliseconds on a dump of
    megabytes), and the edited window is kept for incremental analysis."""

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        uri = params.text_document.uri
        server = self._server
        if (_is_handled(uri) and isinstance(server, HloLanguageServer)
                and server.apply_changes(uri, params)):
            return
        yield from super().lsp_text_document__did_change(params)


class HloLanguageServer(LanguageServer):
    """pygls server for HLO text; see module docstring."""

    def __init__(self) -> None:
        super().__init__("hlo-lsp", __version__, protocol_cls=HloProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.docs: dict[str, _DocState] = {}
        self.options: dict[str, Any] = {}
        self._oracle: XlaOracle | None = None
        self._parse_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="parse")
        self.quick_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="quick")
        self._oracle_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="xla")
        self.collector = ModelCollector(self._parse_pool)

    def oracle(self) -> XlaOracle | None:
        """XLA's parser in a worker process, unless disabled by the initialization
        option ``xlaDiagnostics: false`` or jaxlib is missing."""
        if self.options.get("xlaDiagnostics", True) is False or not xla_available():
            return None
        if self._oracle is None:
            self._oracle = XlaOracle()
        return self._oracle

    def warm_up(self) -> None:
        """Build the grammar's parsers for this thread now (quick definitions run
        here), so the first answer does not pay for it. Worker threads build their
        own on first use (see parser._parser); warming them here would compete
        with the first requests for the interpreter."""
        parser_threads_ready()

    def position_encoding(self) -> str:
        """The position encoding negotiated at initialize ("utf-16" by default)."""
        try:
            enc = self.server_capabilities.position_encoding
        except Exception:  # noqa: BLE001 - before initialize
            return "utf-16"
        return str(getattr(enc, "value", enc) or "utf-16")

    # -- document lifecycle --------------------------------------------------
    def schedule(self, uri: str, version: int, text: str, delay: float,
                 snapshot: Snapshot | None = None, window: EditWindow | None = None,
                 base_version: int | None = None) -> None:
        """Analyse version ``version`` of ``uri`` after ``delay`` seconds. An edit
        passes the ``snapshot`` it made and its ``window`` from ``base_version``;
        an open (no window) starts the document afresh."""
        state = self.docs.setdefault(uri, _DocState())
        if base_version is None:
            state.edits.clear()
        else:
            state.edits.append((base_version, version, window))
        state.version = version
        state.snapshot = snapshot or Snapshot(version, text, self.position_encoding())
        state.closed = False
        if state.task is not None and not state.task.done() and not state.running:
            state.task.cancel()  # not started yet: the new version replaces it
        state.task = asyncio.get_running_loop().create_task(
            self._analyze_later(uri, state, state.snapshot, delay))

    async def _analyze_later(self, uri: str, state: _DocState, snapshot: Snapshot,
                             delay: float) -> None:
        if delay:
            await asyncio.sleep(delay)
        loop = asyncio.get_running_loop()
        version, text = snapshot.version, snapshot.text
        async with state.analysing:
            if state.closed or version != state.version:
                return  # a newer version was scheduled while this one waited
            previous = state.latest
            window = state.window_since(previous.version, version) \
                if previous is not None else None
            progress = await self.begin_progress(f"Indexing {os.path.basename(uri)}") \
                if len(text) >= PROGRESS_CHARS and previous is None else None
            state.running = True
            try:
                result = await loop.run_in_executor(
                    self._parse_pool, analyze, uri, version, text, snapshot.encoding,
                    previous.module if previous is not None else None, window, snapshot)
            finally:
                state.running = False
                if progress is not None:
                    self._end_progress(progress, "indexed")
            async with state.changed:
                if state.latest is None or result.version >= state.latest.version:
                    state.latest = result
                    state.edits = [e for e in state.edits if e[1] > result.version]
                state.changed.notify_all()
        self.collector.analysed()
        if result.version == state.version and not state.closed:
            self.publish(result)
        log.info("analyzed %s v%s (%d chars) in %.3f s", uri, version, len(text),
                 result.seconds)
        oracle = self.oracle()
        if oracle is not None and len(text) <= MAX_XLA_CHECK_CHARS and not result.lazy_only:
            verdict = await loop.run_in_executor(self._oracle_pool, oracle.check, text)
            if verdict is not None and not verdict.ok:
                result.xla_problems = [xla_problem(verdict, result.lines)]
            else:
                result.xla_problems = []
            if result.version == state.version and not state.closed and result.xla_problems:
                self.publish(result)

    def apply_changes(self, uri: str, params: types.DidChangeTextDocumentParams) -> bool:
        """Apply an edit to a document this server analyses, keeping pygls'
        workspace copy in step; False (nothing done) for other documents, which
        pygls then updates itself."""
        state = self.docs.get(uri)
        if state is None or state.snapshot is None or state.closed:
            return False
        base = state.snapshot
        changes = [((c.range.start.line, c.range.start.character,
                     c.range.end.line, c.range.end.character), c.text)
                   if isinstance(c, types.TextDocumentContentChangePartial) else (None, c.text)
                   for c in params.content_changes]
        try:
            text, lines, window = apply_changes(base.text, base.lines, changes)
        except Exception:  # noqa: BLE001 - pygls then applies the edit its own way
            log.exception("applying an edit to %s failed; reading the whole text", uri)
            return False
        version = params.text_document.version
        language_id = self.workspace.get_text_document(uri).language_id or "hlo"
        self.workspace.put_text_document(types.TextDocumentItem(
            uri=uri, language_id=language_id, version=version, text=text))
        self.schedule(uri, version, text, EDIT_DEBOUNCE_S,
                      base.successor(version, text, lines, window), window, base.version)
        return True

    async def begin_progress(self, title: str, message: str | None = None,
                             cancellable: bool = False, percentage: int | None = None,
                             kind: str = "parse") -> str | None:
        """Create and begin a window/workDoneProgress report; returns its token
        (``hlo-<kind>-<uuid>``), or None when the client does not support progress
        (it is never an error)."""
        caps = self.client_capabilities
        if caps is None or caps.window is None or not caps.window.work_done_progress:
            return None
        token = f"hlo-{kind}-{uuid.uuid4()}"
        try:
            await self.work_done_progress.create_async(token)
            self.work_done_progress.begin(token, types.WorkDoneProgressBegin(
                title=title, cancellable=cancellable, message=message,
                percentage=percentage))
        except Exception:  # noqa: BLE001 - progress is a courtesy, never a failure
            log.info("window/workDoneProgress is not available", exc_info=True)
            return None
        return token

    def _end_progress(self, token: str, message: str) -> None:
        try:
            self.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))
        except Exception:  # noqa: BLE001
            log.debug("progress end failed", exc_info=True)

    def publish(self, analysis: Analysis) -> None:
        problems = merge_xla(analysis.problems, analysis.xla_problems or [],
                             analysis.lines)
        diags = [to_diagnostic(p, analysis.lines) for p in problems]
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=analysis.uri, version=analysis.version, diagnostics=diags))

    async def analysis(self, uri: str) -> Analysis | None:
        if not _is_handled(uri):
            return None
        state = self.docs.get(uri)
        if state is None:
            # Not opened by the client: read from disk (e.g. a definition into
            # another file of the dump directory).
            path = to_fs_path(uri)
            if path is None or not os.path.isfile(path):
                return None
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            self.schedule(uri, 0, text, 0)
            state = self.docs[uri]
        return await state.current()

    def close(self, uri: str) -> None:
        state = self.docs.pop(uri, None)
        if state is not None:
            state.closed = True
            if state.task is not None:
                state.task.cancel()
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


# ---------------------------------------------------------------- conversion --

_SEVERITY = {Severity.ERROR: types.DiagnosticSeverity.Error,
             Severity.WARNING: types.DiagnosticSeverity.Warning,
             Severity.INFORMATION: types.DiagnosticSeverity.Information,
             Severity.HINT: types.DiagnosticSeverity.Hint}


def to_range(lines: LineIndex, start: int, end: int) -> types.Range:
    sl, sc = lines.position(start)
    el, ec = lines.position(max(start, end))
    return types.Range(start=types.Position(line=sl, character=sc),
                       end=types.Position(line=el, character=ec))


def to_diagnostic(p: Problem, lines: LineIndex) -> types.Diagnostic:
    return types.Diagnostic(range=to_range(lines, p.start, max(p.end, p.start + 1)),
                            message=p.message, severity=_SEVERITY[p.severity],
                            source=p.source)


def to_location(analysis: Analysis, target: Span | FileTarget) -> types.Location | None:
    if isinstance(target, Span):
        return types.Location(uri=analysis.uri,
                              range=to_range(analysis.lines, target.start, target.end))
    uri = from_fs_path(target.path)
    if uri is None:
        return None
    line = max(target.line - 1, 0)
    col = max(target.column - 1, 0) if target.column else 0
    end_line = max(target.end_line - 1, line) if target.end_line else line
    end_col = max(target.end_column - 1, 0) if target.end_column else col
    return types.Location(uri=uri, range=types.Range(
        start=types.Position(line=line, character=col),
        end=types.Position(line=end_line, character=end_col)))


_SYMBOL_KINDS = {"module": types.SymbolKind.Module, "computation": types.SymbolKind.Function,
                 "entry": types.SymbolKind.Function, "instruction": types.SymbolKind.Variable,
                 "parameter": types.SymbolKind.Field, "table": types.SymbolKind.Namespace}


def to_document_symbol(sym: Symbol, lines: LineIndex) -> types.DocumentSymbol:
    return types.DocumentSymbol(
        name=sym.name or "?", kind=_SYMBOL_KINDS[sym.kind], detail=sym.detail or None,
        range=to_range(lines, sym.start, sym.end),
        selection_range=to_range(lines, sym.selection_start, sym.selection_end),
        children=[to_document_symbol(c, lines) for c in sym.children] or None)


# ------------------------------------------------------------------- server --

server = HloLanguageServer()


def guarded(default: Any = None) -> Callable:
    """Wrap an async handler so an internal error is logged and answered with
    ``default`` instead of an error response or a crash."""
    def wrap(fn):
        @functools.wraps(fn)
        async def run(ls, params):
            try:
                return await fn(ls, params)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001
                log.exception("%s failed", fn.__name__)
                return default
        return run
    return wrap


def _is_handled(uri: str) -> bool:
    path = to_fs_path(uri) or uri
    return not is_non_hlo_dump_file(os.path.basename(path))


@server.feature(types.INITIALIZE)
def on_initialize(ls: HloLanguageServer, params: types.InitializeParams) -> None:
    opts = params.initialization_options
    if isinstance(opts, dict):
        ls.options.update(opts)
    ls.warm_up()


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
async def did_open(ls: HloLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
    doc = params.text_document
    if _is_handled(doc.uri):
        # The requests an editor sends with didOpen (definition, hover) are answered from the snapshot before the full parse takes the CPU.
        delay = OPEN_YIELD_S if len(doc.text) >= BIG_DOCUMENT_CHARS else 0
        ls.schedule(doc.uri, doc.version, doc.text, delay)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
async def did_change(ls: HloLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
    """An edit HloProtocol did not apply itself (an HLO document this server has
    no snapshot of): pygls applied it; analyse the whole new text."""
    uri = params.text_document.uri
    if _is_handled(uri):
        doc = ls.workspace.get_text_document(uri)
        ls.schedule(uri, params.text_document.version, doc.source, EDIT_DEBOUNCE_S)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
async def did_close(ls: HloLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.close(params.text_document.uri)


_LOCAL_KINDS = {Kind.INSTRUCTION_DEF, Kind.INSTRUCTION_USE, Kind.OPCODE, Kind.SHAPE}


def _pending_snapshot(ls: HloLanguageServer, uri: str) -> Snapshot | None:
    """The current snapshot of ``uri`` while its full analysis is still running,
    or always for documents too big for a full model."""
    state = ls.docs.get(uri)
    if state is None or state.snapshot is None:
        return None
    ready = state.ready()
    if ready is not None and not ready.lazy_only:
        return None
    if state.snapshot.version != state.version:
        return None
    return state.snapshot


@server.feature(types.TEXT_DOCUMENT_HOVER)
@guarded()
async def on_hover(ls: HloLanguageServer, params: types.HoverParams) -> types.Hover | None:
    uri = params.text_document.uri
    snap = _pending_snapshot(ls, uri)
    if snap is not None:
        # Indexing is still running: hover from the computation under the cursor.
        def quick():
            lines = snap.lines
            offset = lines.offset(params.position.line, params.position.character)
            module = partial_module(snap.text, snap.skeleton, offset, snap.chunks)
            # Callers of a computation need the whole module: only instructions here.
            occ = find_at(module, offset) if module is not None else None
            if occ is None or occ.kind not in _LOCAL_KINDS:
                return lines, None
            return lines, hover(module, offset)
        lines, result = await asyncio.get_running_loop().run_in_executor(ls.quick_pool, quick)
        if result is not None:
            return _hover(lines, result)
    a = await ls.analysis(uri)
    if a is None:
        return None
    offset = a.lines.offset(params.position.line, params.position.character)
    # The buffer assignment XLA wrote beside this dump, if any (reads the disk).
    assignment = await asyncio.to_thread(load_buffer_assignment_for, to_fs_path(a.uri) or "")
    result = hover(a.module, offset, assignment)
    if result is None:
        return None
    return _hover(a.lines, result)


def _hover(lines: LineIndex, result) -> types.Hover:
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown,
                                                    value=result.markdown),
                       range=to_range(lines, result.start, result.end))


@server.feature(types.TEXT_DOCUMENT_DEFINITION)
@guarded(default=[])
async def on_definition(ls: HloLanguageServer,
                        params: types.DefinitionParams) -> list[types.Location]:
    uri = params.text_document.uri
    reported = await report_definition(ls, params)  # buffer-assignment reports
    if reported is not None:
        return reported
    snap = _pending_snapshot(ls, uri)
    if snap is not None:
        # Indexing is still running: answer from the two lines that matter.
        # A few milliseconds of work: done right here, before the full parse
        # (started OPEN_YIELD_S after didOpen) competes for the interpreter.
        lines = snap.lines
        offset = lines.offset(params.position.line, params.position.character)
        spans = quick_definition(snap.text, snap.skeleton, offset)
        if spans:
            return [types.Location(uri=uri, range=to_range(lines, s.start, s.end))
                    for s in spans]
    a = await ls.analysis(uri)
    if a is None:
        return []
    offset = a.lines.offset(params.position.line, params.position.character)
    folders = [p for f in ls.workspace.folders.values() if (p := to_fs_path(f.uri))]
    dirs = source_dirs(to_fs_path(a.uri), folders, ls.options.get("sourceRoot"))
    targets = definition(a.module, offset, dirs)
    return [loc for t in targets if (loc := to_location(a, t)) is not None]


@server.feature(types.TEXT_DOCUMENT_REFERENCES)
@guarded(default=[])
async def on_references(ls: HloLanguageServer,
                        params: types.ReferenceParams) -> list[types.Location]:
    a = await ls.analysis(params.text_document.uri)
    if a is None:
        return []
    offset = a.lines.offset(params.position.line, params.position.character)
    spans = references(a.module, offset, params.context.include_declaration)
    return [types.Location(uri=a.uri, range=to_range(a.lines, s.start, s.end)) for s in spans]


@server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
@guarded(default=[])
async def on_document_symbol(ls: HloLanguageServer,
                             params: types.DocumentSymbolParams) -> list[types.DocumentSymbol]:
    a = await ls.analysis(params.text_document.uri)
    if a is None:
        return []
    full = a.module.instruction_count() <= MAX_OUTLINE_INSTRUCTIONS
    return [to_document_symbol(s, a.lines) for s in document_symbols(a.module, full)]


@server.feature(types.TEXT_DOCUMENT_FOLDING_RANGE)
@guarded(default=[])
async def on_folding_range(ls: HloLanguageServer,
                           params: types.FoldingRangeParams) -> list[types.FoldingRange]:
    a = await ls.analysis(params.text_document.uri)
    if a is None:
        return []
    kinds = {"region": types.FoldingRangeKind.Region, "imports": types.FoldingRangeKind.Imports,
             "comment": types.FoldingRangeKind.Comment}
    return [types.FoldingRange(start_line=f.start_line, end_line=f.end_line,
                               kind=kinds[f.kind], collapsed_text=f.collapsed_text)
            for f in folding_ranges(a.module, a.lines)]


def _uri_of(params: Any) -> str | None:
    doc = params.get("textDocument") if isinstance(params, dict) else getattr(
        params, "textDocument", None) or getattr(params, "text_document", None)
    if isinstance(doc, dict):
        return doc.get("uri")
    return getattr(doc, "uri", None)


@server.feature(INLINE_REGIONS)
@guarded(default=[])
async def on_inline_regions(ls: HloLanguageServer, params: Any) -> list[dict]:
    uri = _uri_of(params)
    if not uri:
        return []
    a = await ls.analysis(uri)
    if a is None:
        return []
    out = []
    for r in inline_regions(a.module, KINDS):
        rng = to_range(a.lines, r.start, r.end)
        out.append({"range": {"start": {"line": rng.start.line,
                                        "character": rng.start.character},
                              "end": {"line": rng.end.line, "character": rng.end.character}},
                    "kind": r.kind})
    return out


async def report_definition(ls: HloLanguageServer, params: types.DefinitionParams):
    """Definition inside an XLA buffer-assignment or memory report (not HLO text),
    answered by :mod:`hlo_lsp.lsp.handlers.workspace`; None for HLO documents."""
    from hlo_lsp.lsp.handlers.workspace import report_definition as answer
    return await answer(ls, params)


def register_handlers(ls: HloLanguageServer) -> list[str]:
    """Import every module of :mod:`hlo_lsp.lsp.handlers` and call its ``register``.
    Returns the names registered; failures are logged and skipped."""
    from hlo_lsp.lsp import handlers

    done = []
    for info in sorted(pkgutil.iter_modules(handlers.__path__), key=lambda i: i.name):
        try:
            module = importlib.import_module(f"{handlers.__name__}.{info.name}")
            module.register(ls)
            done.append(info.name)
        except Exception:  # noqa: BLE001
            log.exception("handler module %s failed to register", info.name)
    return done


register_handlers(server)
