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
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from hlo_lsp.dump.reports import load_buffer_assignment_for
from hlo_lsp.features.definition import definition
from hlo_lsp.features.folding import folding_ranges
from hlo_lsp.features.hover import hover
from hlo_lsp.features.inline_regions import KINDS, inline_regions
from hlo_lsp.features.references import references
from hlo_lsp.features.symbols import document_symbols
from hlo_lsp.lsp import messages
from hlo_lsp.lsp.convert import to_document_symbol, to_location, to_offset, to_range
from hlo_lsp.lsp.handlers import reports
from hlo_lsp.lsp.protocol import HloLanguageServer
from hlo_lsp.lsp.requests import guarded
from hlo_lsp.model.index import Kind, find_at
from hlo_lsp.syntax.chunks import partial_module, quick_definition

MAX_OUTLINE_INSTRUCTIONS = 20_000
#: Documents up to this many characters answer a hover during their analysis on
#: the event loop (see on_hover).
QUICK_INLINE_CHARS = 64 * 1024
#: What a quick hover can answer from one computation (callers need the module).
_LOCAL_KINDS = {Kind.INSTRUCTION_DEF, Kind.INSTRUCTION_USE, Kind.OPCODE, Kind.SHAPE}
_FOLDING_KINDS = {"region": types.FoldingRangeKind.Region,
                  "imports": types.FoldingRangeKind.Imports,
                  "comment": types.FoldingRangeKind.Comment}


def register(server: HloLanguageServer) -> None:
    """Register the lifecycle and core request handlers on ``server``."""

    @server.feature(types.INITIALIZE)
    def on_initialize(ls: HloLanguageServer, params: types.InitializeParams) -> None:
        ls.configure(params.initialization_options)

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
        uri = params.text_document.uri
        path = to_fs_path(uri)
        snap = ls.store.pending_snapshot(uri)
        if snap is not None:
            # Indexing is still running: hover from the computation under the
            # cursor, with everything the full hover has (buffers, sources).
            assignment = await asyncio.to_thread(load_buffer_assignment_for, path) \
                if path else None
            dirs = ls.source_dirs(uri)

            def quick():
                lines = snap.lines
                offset = to_offset(lines, params.position)
                module = partial_module(snap.text, snap.skeleton, offset, snap.chunks)
                occ = find_at(module, offset) if module is not None else None
                if occ is None or occ.kind not in _LOCAL_KINDS:
                    return lines, None
                return lines, hover(module, offset, assignment, dirs)
            if len(snap.text) <= QUICK_INLINE_CHARS:
                # One computation of a small file: a few ms with this thread's
                # parser (built at initialize); a pool thread would first build
                # its own (~0.2 s) while the analysis competes for the GIL.
                lines, result = quick()
            else:
                lines, result = await asyncio.get_running_loop().run_in_executor(
                    ls.quick_pool, quick)
            if result is not None:
                return _hover(lines, result)
        async with ls.lease(uri) as a:
            if a is None:
                return None
            # The buffer assignment XLA wrote beside this dump, if any.
            assignment = await asyncio.to_thread(load_buffer_assignment_for, path) \
                if path else None
            result = hover(a.module, to_offset(a.lines, params.position), assignment,
                           ls.source_dirs(uri))
            return _hover(a.lines, result) if result is not None else None

    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    @guarded(default=[])
    async def on_definition(ls: HloLanguageServer,
                            params: types.DefinitionParams) -> list[types.Location]:
        uri = params.text_document.uri
        if reports.is_report_uri(uri):
            return await reports.report_definition(ls, uri, params.position)
        snap = ls.store.pending_snapshot(uri)
        if snap is not None:
            # Indexing is still running: answer from the two lines that matter.
            # A few milliseconds of work, done right here before the full parse
            # competes for the interpreter.
            lines = snap.lines
            spans = quick_definition(snap.text, snap.skeleton, to_offset(lines, params.position))
            if spans:
                return [types.Location(uri=uri, range=to_range(lines, s.start, s.end))
                        for s in spans]
        async with ls.lease(uri) as a:
            if a is None:
                return []
            dirs = ls.source_dirs(uri)
            targets = definition(a.module, to_offset(a.lines, params.position), dirs)
            return [loc for t in targets if (loc := to_location(uri, a.lines, t)) is not None]

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
                                 ) -> list[types.DocumentSymbol]:
        async with ls.lease(params.text_document.uri) as a:
            if a is None:
                return []
            full = a.module.instruction_count() <= MAX_OUTLINE_INSTRUCTIONS
            return [to_document_symbol(s, a.lines) for s in document_symbols(a.module, full)]

    @server.feature(types.TEXT_DOCUMENT_FOLDING_RANGE)
    @guarded(default=[])
    async def on_folding_range(ls: HloLanguageServer,
                               params: types.FoldingRangeParams) -> list[types.FoldingRange]:
        async with ls.lease(params.text_document.uri) as a:
            if a is None:
                return []
            return [types.FoldingRange(start_line=f.start_line, end_line=f.end_line,
                                       kind=_FOLDING_KINDS[f.kind],
                                       collapsed_text=f.collapsed_text)
                    for f in folding_ranges(a.module, a.lines)]

    @server.feature(messages.INLINE_REGIONS)
    @guarded(default=[])
    async def on_inline_regions(ls: HloLanguageServer, params: Any) -> list[dict]:
        parsed = messages.parse_params(messages.DocumentParams, params)
        if parsed is None:
            return []
        async with ls.lease(parsed.text_document.uri) as a:
            if a is None:
                return []
            return messages.to_json([
                messages.InlineRegion(to_range(a.lines, r.start, r.end), r.kind)
                for r in inline_regions(a.module, KINDS)])


def _hover(lines, result) -> types.Hover:
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown,
                                                    value=result.markdown),
                       range=to_range(lines, result.start, result.end))
