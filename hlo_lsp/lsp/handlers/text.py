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

from hlo_lsp.dump.kernels import is_kernel_file
from hlo_lsp.dump.names import device_for
from hlo_lsp.analysis.answers import Placed
from hlo_lsp.features.folding import Fold
from hlo_lsp.features.inline_regions import InlineRegion
from hlo_lsp.features.symbols import Symbol
from hlo_lsp.lsp import messages
from hlo_lsp.lsp import wire
from hlo_lsp.lsp.convert import file_location, to_range
from hlo_lsp.lsp.handlers import reports
from hlo_lsp.lsp.protocol import HloLanguageServer
from hlo_lsp.lsp.dispatch import route
from hlo_lsp.analysis.work import INTERACTIVE
from hlo_lsp.syntax.lines import LineIndex


def register(server: HloLanguageServer) -> None:
    """Register the lifecycle and core request handlers on ``server``, each as
    its row of :data:`hlo_lsp.lsp.dispatch.ROUTES` says."""

    @route(server, types.INITIALIZE)
    def on_initialize(ls: HloLanguageServer, params: types.InitializeParams) -> None:
        ls.configure(params.initialization_options)

    @route(server, types.SHUTDOWN)
    def on_shutdown(ls: HloLanguageServer, params: Any) -> None:
        ls.shutdown_requested = True
        ls.shut_down()

    # The document store keeps the text of the documents it handles (pygls'
    # workspace keeps none: HloProtocol). Plain functions, so that pygls runs
    # them at once, in the order the client sent them, before the requests
    # read after them.
    @route(server, types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: HloLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        doc = params.text_document
        if ls.store.handles(doc.uri):
            ls.store.open(doc.uri, doc.version, doc.text)

    @route(server, types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: HloLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        if ls.store.is_open(uri):
            ls.store.change(uri, params.text_document.version,
                            [_change(c) for c in params.content_changes])

    @route(server, types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: HloLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.store.close(uri)
        ls.clear_diagnostics(uri)

    @route(server, types.TEXT_DOCUMENT_HOVER)
    async def on_hover(ls: HloLanguageServer, params: types.HoverParams) -> types.Hover | None:
        uri, pos = params.text_document.uri, params.position
        path = to_fs_path(uri) or ""
        if is_kernel_file(path):  # a kernel's .entry: the HLO instruction it runs
            md = await ls.inputs.kernel_hover(path, pos.line)
            return None if md is None else types.Hover(contents=types.MarkupContent(
                kind=types.MarkupKind.Markdown, value=md))
        inputs = await ls.host.hover_inputs(path, ls.source_dirs(uri), ls.source_roots(uri),
                                            device_for(path, ls.settings.device),
                                            ls.settings.profile)
        snapshot = ls.host.snapshot()
        got = await snapshot.hover(uri, pos.line, pos.character, inputs,
                                   lambda a: snapshot.memory(a, INTERACTIVE))
        return None if got is None else _hover(got.lines, got.markdown, (got.start, got.end))

    @route(server, types.TEXT_DOCUMENT_DEFINITION)
    async def on_definition(ls: HloLanguageServer,
                            params: types.DefinitionParams) -> list[types.Location]:
        uri, pos = params.text_document.uri, params.position
        if reports.is_report_uri(uri):
            return await reports.report_definition(ls, uri, pos)
        if is_kernel_file(path := to_fs_path(uri) or ""):  # a kernel's .entry -> its HLO
            origin = await ls.inputs.kernel_origin(path, pos.line)
            return [loc] if origin and (loc := file_location(origin)) else []
        targets = await ls.host.snapshot().definition(
            uri, pos.line, pos.character, await ls.source_dirs(uri),
            await ls.inputs.kernels(path))
        out = []
        for target in targets:
            if isinstance(target, Placed):
                out.append(types.Location(uri=uri, range=to_range(target.lines, target.start,
                                                                  target.end)))
            elif (loc := file_location(target)) is not None:
                out.append(loc)
        return out

    @route(server, types.TEXT_DOCUMENT_REFERENCES)
    async def on_references(ls: HloLanguageServer,
                            params: types.ReferenceParams) -> list[types.Location]:
        uri, pos = params.text_document.uri, params.position
        places = await ls.host.snapshot().references(uri, pos.line, pos.character,
                                                      params.context.include_declaration)
        return [types.Location(uri=uri, range=to_range(p.lines, p.start, p.end))
                for p in places]

    @route(server, types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    async def on_document_symbol(ls: HloLanguageServer, params: types.DocumentSymbolParams
                                 ) -> list[types.DocumentSymbol] | wire.Encoded:
        # Tens of thousands of entries on a dump of megabytes: computed and
        # encoded in the work queue, once per analysis (an editor asks again
        # after a save, a focus change, a configuration change).
        got = await ls.host.snapshot().symbols(params.text_document.uri, _outline)
        return [] if got is None else got

    @route(server, types.TEXT_DOCUMENT_FOLDING_RANGE)
    async def on_folding_range(ls: HloLanguageServer,
                               params: types.FoldingRangeParams
                               ) -> list[types.FoldingRange] | wire.Encoded:
        got = await ls.host.snapshot().folding(params.text_document.uri, _folding_answer)
        return [] if got is None else got

    @route(server, messages.INLINE_REGIONS)
    async def on_inline_regions(ls: HloLanguageServer, params: Any) -> list | wire.Encoded:
        parsed = messages.parse_params(messages.DocumentParams, params)
        if parsed is None:
            return []
        got = await ls.host.snapshot().inline_regions(parsed.text_document.uri, _inline_regions)
        return [] if got is None else got


def _change(change: types.TextDocumentContentChangeEvent
            ) -> tuple[tuple[int, int, int, int] | None, str]:
    """An LSP content change as :meth:`DocumentStore.change` takes it: ((start
    line, start character, end line, end character), new text), the range None
    for a whole new text."""
    if isinstance(change, types.TextDocumentContentChangePartial):
        r = change.range
        return (r.start.line, r.start.character, r.end.line, r.end.character), change.text
    return None, change.text


def _outline(symbols: list[Symbol], lines: LineIndex) -> wire.Encoded:
    """The outline as the LSP ``DocumentSymbol[]`` answer."""
    return wire.encode([wire.document_symbol(s, lines) for s in symbols])


def _folding_answer(folds: list[Fold], lines: LineIndex) -> wire.Encoded:
    """The ``textDocument/foldingRange`` answer."""
    return wire.encode(wire.folding_ranges(folds))


def _inline_regions(regions: list[InlineRegion], lines: LineIndex) -> wire.Encoded:
    """The ``hlo/inlineRegions`` answer: messages.InlineRegion, field by field."""
    return wire.encode([{"range": wire.range_(lines, r.start, r.end), "kind": r.kind}
                        for r in regions])


def _hover(lines: LineIndex, markdown: str, span: tuple[int, int]) -> types.Hover:
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown,
                                                    value=markdown),
                       range=to_range(lines, *span))
