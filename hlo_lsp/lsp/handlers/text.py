"""The document lifecycle and the core requests on HLO text.

``initialize`` (settings), ``didOpen``/``didChange``/``didClose`` (into the
document store), ``hover``, ``definition``, ``references``, ``documentSymbol``,
``foldingRange`` and the custom request ``hlo/inlineRegions``. Each answer is a
feature of :mod:`hlo_lsp.features` on the leased analysis, converted by
:mod:`hlo_lsp.lsp.convert`. While a big document is still being indexed, hover
and definition are answered from its snapshot (:mod:`hlo_lsp.syntax.chunks`).
Definition inside an XLA buffer-assignment or memory-usage report goes to
:mod:`hlo_lsp.lsp.handlers.reports`.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from cachetools import TTLCache
from lsprotocol import types
from pygls.uris import to_fs_path

from hlo_lsp.dump.reports import cached_buffer_assignment_for, load_buffer_assignment_for
from hlo_lsp.dump.targets import deviceless_statement
from hlo_lsp.dump.names import device_for
from hlo_lsp.features.definition import definition
from hlo_lsp.features.folding import folding_ranges
from hlo_lsp.features.hover import hover
from hlo_lsp.features.inline_regions import KINDS, inline_regions
from hlo_lsp.features.references import references
from hlo_lsp.features.symbols import document_symbols
from hlo_lsp.lsp import messages
from hlo_lsp.lsp import wire
from hlo_lsp.lsp.convert import file_location, to_offset, to_range
from hlo_lsp.analysis.documents import View
from hlo_lsp.lsp.handlers import reports
from hlo_lsp.lsp.protocol import HloLanguageServer
from hlo_lsp.lsp.requests import guarded
from hlo_lsp.analysis.work import INTERACTIVE
from hlo_lsp.model.hlo import HloModule
from hlo_lsp.model.index import Kind, find_at
from hlo_lsp.model.spans import Span
from hlo_lsp.syntax.chunks import partial_module, quick_definition
from hlo_lsp.syntax.lines import LineIndex

MAX_OUTLINE_INSTRUCTIONS = 20_000
#: Documents up to this many characters answer a hover during their analysis on
#: the event loop (see on_hover).
QUICK_INLINE_CHARS = 64 * 1024
#: What a quick hover can answer from one computation (callers need the module).
_LOCAL_KINDS = {Kind.INSTRUCTION_DEF, Kind.INSTRUCTION_USE, Kind.OPCODE, Kind.SHAPE}


def register(server: HloLanguageServer) -> None:
    """Register the lifecycle and core request handlers on ``server``."""

    @server.feature(types.INITIALIZE)
    def on_initialize(ls: HloLanguageServer, params: types.InitializeParams) -> None:
        ls.configure(params.initialization_options)

    @server.feature(types.SHUTDOWN)
    def on_shutdown(ls: HloLanguageServer, params: Any) -> None:
        ls.shutdown_requested = True
        ls.shut_down()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: HloLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        doc = params.text_document
        if ls.store.handles(doc.uri):
            ls.store.open(doc.uri, doc.version, doc.text)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: HloLanguageServer,
                         params: types.DidChangeTextDocumentParams) -> None:
        """An edit that :class:`~hlo_lsp.lsp.protocol.HloProtocol` did not apply
        through the store (pygls applied it): analyse the whole new text."""
        uri = params.text_document.uri
        if ls.store.handles(uri):
            doc = ls.workspace.get_text_document(uri)
            ls.store.replace(uri, params.text_document.version, doc.source)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    async def did_close(ls: HloLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.store.close(uri)
        ls.clear_diagnostics(uri)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    @guarded()
    async def on_hover(ls: HloLanguageServer, params: types.HoverParams) -> types.Hover | None:
        uri, pos = params.text_document.uri, params.position
        path = to_fs_path(uri) or ""
        # The buffer assignment XLA wrote beside this dump, if any: read once off
        # the event loop, then from the cache (so hovers while typing do not
        # wait for a thread).
        known, assignment = cached_buffer_assignment_for(path)
        if not known:
            assignment = await asyncio.to_thread(load_buffer_assignment_for, path)
        # A dump compiled for a GPU without it says so (hlo_lsp.dump.targets).
        dump_dir = os.path.dirname(path)
        deviceless = _DEVICELESS.get(dump_dir, _UNKNOWN)
        if deviceless is _UNKNOWN:
            deviceless = _DEVICELESS[dump_dir] = \
                await asyncio.to_thread(deviceless_statement, path) if path else None
        dirs = await ls.source_dirs(uri)
        roots = ls.source_roots(uri)
        device = device_for(path, ls.settings.device)

        async def header_memory(view: View | None):
            """Memory over the schedule for a hover of the module header."""
            offset = _offset_in(view, pos)
            occ = find_at(view.analysis.module, offset) if offset is not None else None
            if occ is None or occ.kind != Kind.MODULE:
                return None
            return await reports.memory_of(ls, view.analysis, INTERACTIVE)

        def answer(view: View | None, memory=None):
            offset = _offset_in(view, pos)
            if offset is None:
                return _UNKNOWN
            result = hover(view.analysis.module, offset, assignment,
                           deviceless=deviceless, source_dirs=dirs, device=device,
                           source_roots=roots,
                           memory=memory)
            if result is None:
                return None
            span = view.span(result.start, result.end)
            return _hover(view.lines, result.markdown, span) if span else _UNKNOWN

        # While edits are analysed: the latest finished analysis, mapped.
        seen = ls.store.peek(uri)
        memory = await header_memory(seen)
        if memory is not None:
            seen = ls.store.peek(uri)  # a view is read before the next await only
        if (got := answer(seen, memory)) is not _UNKNOWN:
            return got
        snap = ls.store.pending_snapshot(uri)
        if snap is not None:
            # No analysis to map from (first indexing, or the cursor is in text
            # not analysed yet): hover from the computation under the cursor.
            def quick():
                lines = snap.lines
                offset = to_offset(lines, pos)
                module = partial_module(snap.text, snap.skeleton, offset, snap.chunks)
                occ = find_at(module, offset) if module is not None else None
                if occ is None or occ.kind not in _LOCAL_KINDS:
                    return lines, None
                return lines, hover(module, offset, assignment, deviceless=deviceless,
                                    source_dirs=dirs, device=device, source_roots=roots)
            if len(snap.text) <= QUICK_INLINE_CHARS:
                # One computation of a small file: a few ms with this thread's
                # parser (built at initialize); a pool thread would first build
                # its own (~0.2 s) while the analysis competes for the GIL.
                lines, result = quick()
            else:
                lines, result = await asyncio.get_running_loop().run_in_executor(
                    ls.quick_pool, quick)
            if result is not None:
                return _hover(lines, result.markdown, (result.start, result.end))
        # Else the next model the running analysis builds (never a wait behind
        # the edits typed after this request).
        async for view in ls.store.views(uri, seen):
            if (got := answer(view)) is not _UNKNOWN:
                return got
        return None

    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    @guarded(default=[])
    async def on_definition(ls: HloLanguageServer,
                            params: types.DefinitionParams) -> list[types.Location]:
        uri, pos = params.text_document.uri, params.position
        if reports.is_report_uri(uri):
            return await reports.report_definition(ls, uri, pos)

        dirs = await ls.source_dirs(uri)

        def answer(view: View | None):
            offset = _offset_in(view, pos)
            if offset is None:
                return _UNKNOWN
            out = []
            for target in definition(view.analysis.module, offset, dirs):
                if isinstance(target, Span):
                    span = view.span(target.start, target.end)
                    if span is None:
                        continue
                    out.append(types.Location(uri=uri, range=to_range(view.lines, *span)))
                elif (loc := file_location(target)) is not None:
                    out.append(loc)
            return out

        seen = ls.store.peek(uri)
        if (got := answer(seen)) is not _UNKNOWN and got:
            return got
        snap = ls.store.pending_snapshot(uri)
        if snap is not None:
            # No analysis to map from: answer from the two lines that matter, a
            # few milliseconds of work done right here.
            lines = snap.lines
            spans = quick_definition(snap.text, snap.skeleton, to_offset(lines, pos))
            if spans:
                return [types.Location(uri=uri, range=to_range(lines, s.start, s.end))
                        for s in spans]
        async for view in ls.store.views(uri, seen):
            if (got := answer(view)) is not _UNKNOWN:
                return got
        return []

    @server.feature(types.TEXT_DOCUMENT_REFERENCES)
    @guarded(default=[])
    async def on_references(ls: HloLanguageServer,
                            params: types.ReferenceParams) -> list[types.Location]:
        uri = params.text_document.uri
        async with ls.lease(uri) as a:
            if a is None:
                return []
            spans = references(a.module, to_offset(a.lines, params.position),
                               params.context.include_declaration)
            return [types.Location(uri=uri, range=to_range(a.lines, s.start, s.end))
                    for s in spans]

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    @guarded(default=[])
    async def on_document_symbol(ls: HloLanguageServer, params: types.DocumentSymbolParams
                                 ) -> list[types.DocumentSymbol] | wire.Encoded:
        async with ls.lease(params.text_document.uri) as a:
            if a is None:
                return []
            # Tens of thousands of entries on a dump of megabytes: computed in
            # the work pool, once per analysis (an editor asks again after a
            # save, a focus change, a configuration change).
            return await ls.store.derive(a, "outline", _outline, a.module, a.lines)

    @server.feature(types.TEXT_DOCUMENT_FOLDING_RANGE)
    @guarded(default=[])
    async def on_folding_range(ls: HloLanguageServer,
                               params: types.FoldingRangeParams
                               ) -> list[types.FoldingRange] | wire.Encoded:
        async with ls.lease(params.text_document.uri) as a:
            if a is None:
                return []
            # every computation and multi-line instruction of a dump of
            # megabytes: once per analysis, in the work pool
            return await ls.store.derive(a, "folding ranges", _folding_answer, a.module,
                                         a.lines)

    @server.feature(messages.INLINE_REGIONS)
    @guarded(default=[])
    async def on_inline_regions(ls: HloLanguageServer, params: Any) -> list | wire.Encoded:
        parsed = messages.parse_params(messages.DocumentParams, params)
        if parsed is None:
            return []
        async with ls.lease(parsed.text_document.uri) as a:
            if a is None:
                return []
            return await ls.store.derive(a, "inline regions", _inline_regions, a.module, a.lines)


def _outline(module: HloModule, lines: LineIndex) -> wire.Encoded:
    """The outline of ``module`` as the LSP ``DocumentSymbol[]`` answer (every
    instruction up to :data:`MAX_OUTLINE_INSTRUCTIONS`, computations only past)."""
    full = module.instruction_count() <= MAX_OUTLINE_INSTRUCTIONS
    return wire.encode([wire.document_symbol(s, lines) for s in document_symbols(module, full)])


def _folding_answer(module: HloModule, lines: LineIndex) -> wire.Encoded:
    """The ``textDocument/foldingRange`` answer for ``module``."""
    return wire.encode(wire.folding_ranges(folding_ranges(module, lines)))


def _inline_regions(module: HloModule, lines: LineIndex) -> wire.Encoded:
    """The ``hlo/inlineRegions`` answer: messages.InlineRegion, field by field."""
    return wire.encode([{"range": wire.range_(lines, r.start, r.end), "kind": r.kind}
                        for r in inline_regions(module, KINDS)])


#: dump directory -> what hover says of a dump compiled without a device, read
#: off the event loop at most every few seconds.
_DEVICELESS: TTLCache = TTLCache(maxsize=256, ttl=5.0)

#: "This view cannot answer" (no analysis, or the position or the answer lies
#: in text edited since): the handler tries the next way.
_UNKNOWN = object()


def _offset_in(view: View | None, position: types.Position) -> int | None:
    """The offset of ``position`` in the text of the view's analysis; None when
    there is no usable view or the position is in text edited since."""
    if view is None or view.analysis.lazy_only:
        return None
    return view.offset(position.line, position.character)


def _hover(lines: LineIndex, markdown: str, span: tuple[int, int]) -> types.Hover:
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown,
                                                    value=markdown),
                       range=to_range(lines, *span))
