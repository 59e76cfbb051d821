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

from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from hlo_lsp.dump.names import device_for
from hlo_lsp.analysis.answers import Placed, definition_at, hover_at
from hlo_lsp.analysis.inputs import HoverInputs
from hlo_lsp.features.folding import folding_ranges
from hlo_lsp.features.inline_regions import KINDS, inline_regions
from hlo_lsp.features.references import references
from hlo_lsp.features.symbols import document_symbols
from hlo_lsp.lsp import messages
from hlo_lsp.lsp import wire
from hlo_lsp.lsp.convert import file_location, to_offset, to_range
from hlo_lsp.lsp.handlers import reports
from hlo_lsp.lsp.protocol import HloLanguageServer
from hlo_lsp.lsp.requests import guarded
from hlo_lsp.analysis.work import INTERACTIVE
from hlo_lsp.model.hlo import HloModule
from hlo_lsp.syntax.lines import LineIndex

MAX_OUTLINE_INSTRUCTIONS = 20_000


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
        """An edit that :class:`~hlo_lsp.lsp.pygls_adapter.HloProtocol` did not apply
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
        inputs = HoverInputs(await ls.inputs.buffer_assignment(path),
                             await ls.inputs.deviceless(path), await ls.source_dirs(uri),
                             ls.source_roots(uri), device_for(path, ls.settings.device))

        async def memory(analysis):
            return await reports.memory_of(ls, analysis, INTERACTIVE)

        got = await hover_at(ls.store, uri, pos.line, pos.character, inputs,
                             ls.quick_pool, memory)
        return None if got is None else _hover(got.lines, got.markdown, (got.start, got.end))

    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    @guarded(default=[])
    async def on_definition(ls: HloLanguageServer,
                            params: types.DefinitionParams) -> list[types.Location]:
        uri, pos = params.text_document.uri, params.position
        if reports.is_report_uri(uri):
            return await reports.report_definition(ls, uri, pos)
        targets = await definition_at(ls.store, uri, pos.line, pos.character,
                                      await ls.source_dirs(uri))
        out = []
        for target in targets:
            if isinstance(target, Placed):
                out.append(types.Location(uri=uri, range=to_range(target.lines, target.start,
                                                                  target.end)))
            elif (loc := file_location(target)) is not None:
                out.append(loc)
        return out

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


def _hover(lines: LineIndex, markdown: str, span: tuple[int, int]) -> types.Hover:
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown,
                                                    value=markdown),
                       range=to_range(lines, *span))
