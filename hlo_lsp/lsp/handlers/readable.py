"""Readable HLO over LSP (docs/protocol.md, "Readable HLO"): inlay hints,
semantic tokens, a code lens with the kernel summary on the ENTRY computation,
and the commands ``hlo.showSummary``, ``hlo.readableView`` and
``hlo.compareDumps``.

Each handler converts: LSP params to positions and plain values, one question
to the analysis host's snapshot (:mod:`hlo_lsp.analysis.readable` answers
them, in the work queue, once per analysis where a value is asked again), its
plain data to LSP types. Large answers (inlay hints, semantic tokens, the
readable view, the summary table) are encoded by the functions here, called in
the work queue.
"""

from __future__ import annotations

import functools
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from hlo_lsp.analysis.readable import SummaryRow
from hlo_lsp.features.inlay_hints import InlayHint
from hlo_lsp.features.readable import ReadableView
from hlo_lsp.features.semantic_tokens import TOKEN_MODIFIERS, TOKEN_TYPES
from hlo_lsp.lsp import messages, wire
from hlo_lsp.lsp.convert import to_range
from hlo_lsp.lsp.dispatch import route
from hlo_lsp.lsp.messages import COMPARE_DUMPS, READABLE_VIEW, SHOW_SUMMARY
from hlo_lsp.lsp.protocol import HloLanguageServer
from hlo_lsp.syntax.lines import LineIndex

LEGEND = types.SemanticTokensLegend(token_types=list(TOKEN_TYPES),
                                    token_modifiers=list(TOKEN_MODIFIERS))


def register(server: HloLanguageServer) -> None:
    """Register the readable-HLO handlers and commands on ``server``, each as
    its row of :data:`hlo_lsp.lsp.dispatch.ROUTES` says."""

    @route(server, types.TEXT_DOCUMENT_INLAY_HINT,
           types.InlayHintOptions(resolve_provider=False))
    async def on_inlay_hint(ls: HloLanguageServer,
                            params: types.InlayHintParams) -> list | wire.Encoded:
        r = params.range
        got = await ls.host.snapshot().inlay_hints(
            params.text_document.uri, r.start.line, r.start.character, r.end.line,
            r.end.character, ls.settings.inlay_hints.categories(), _inlay_answer)
        return [] if got is None else got

    @route(server, types.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, LEGEND)
    async def on_semantic_tokens_full(ls: HloLanguageServer,
                                      params: types.SemanticTokensParams
                                      ) -> wire.Encoded | None:
        return await ls.host.snapshot().semantic_tokens(params.text_document.uri, None,
                                                        _tokens_answer)

    @route(server, types.TEXT_DOCUMENT_SEMANTIC_TOKENS_RANGE, LEGEND)
    async def on_semantic_tokens_range(ls: HloLanguageServer,
                                       params: types.SemanticTokensRangeParams
                                       ) -> wire.Encoded | None:
        r = params.range
        span = ((r.start.line, r.start.character), (r.end.line, r.end.character))
        return await ls.host.snapshot().semantic_tokens(params.text_document.uri, span,
                                                        _tokens_answer)

    @route(server, types.TEXT_DOCUMENT_CODE_LENS)
    async def on_code_lens(ls: HloLanguageServer,
                           params: types.CodeLensParams) -> list[types.CodeLens]:
        uri = params.text_document.uri
        profile = await ls.host.profiles.for_file(to_fs_path(uri) or "", ls.settings.profile)
        return [types.CodeLens(
            range=to_range(lens.place.lines, lens.place.start, lens.place.end),
            command=types.Command(title=lens.title, command=SHOW_SUMMARY, arguments=[uri]))
            for lens in await ls.host.snapshot().code_lens(uri, profile)]

    @route(server, SHOW_SUMMARY)
    async def show_summary(ls: HloLanguageServer, *args: Any) -> str | dict | None:
        """[uri, {format?: "markdown"|"text", targets?}] -> the kernel summary
        (with ``targets`` and the text format: messages.SummaryTable)."""
        parsed = messages.parse_arguments(args, str, messages.SummaryOptions)
        if parsed is None:
            return None
        uri, options = parsed
        text = options.format == "text"
        table = functools.partial(_summary_table, uri) if text and options.targets else None
        return await ls.host.snapshot().summary(uri, ls.settings.device, not text, table)

    @route(server, READABLE_VIEW)
    async def readable_view(ls: HloLanguageServer, *args: Any) -> dict | None:
        """[uri, {inlineFusions?, keepMetadata?}] -> {text, lineMap, sourceLines}."""
        parsed = messages.parse_arguments(args, str, messages.ReadableOptions)
        if parsed is None:
            return None
        uri, options = parsed
        return await ls.host.snapshot().readable_view(
            uri, options.inline_fusions, options.keep_metadata, _readable_answer)

    @route(server, COMPARE_DUMPS)
    async def compare_dumps(ls: HloLanguageServer, *args: Any) -> str | None:
        """[oldUri, newUri, {format?: "text"|"markdown"}] -> the comparison."""
        parsed = messages.parse_arguments(args, str, str, messages.SummaryOptions)
        if parsed is None:
            return None
        old_uri, new_uri, options = parsed
        # times on the device of the new dump, as hlo.showSummary and `hlo-lsp diff`
        return await ls.host.snapshot().compare(
            old_uri, new_uri, ls.settings.device, options.format == "markdown",
            (f"old {_name(old_uri)}", f"new {_name(new_uri)}"))


def _inlay_answer(hints: list[InlayHint], lines: LineIndex) -> wire.Encoded:
    """The ``textDocument/inlayHint`` answer."""
    return wire.encode(wire.inlay_hints(hints, lines))


def _tokens_answer(data: list[int]) -> wire.Encoded:
    """The ``SemanticTokens`` answer: hundreds of thousands of integers, one
    json.dumps, no cattrs."""
    return wire.encode({"data": data})


def _readable_answer(view: ReadableView, lines: LineIndex) -> dict:
    """The ``hlo.readableView`` answer (messages.ReadableView as JSON)."""
    return messages.to_json(messages.ReadableView(
        view.text, view.line_offsets,
        [None if o is None else lines.line_of(o) for o in view.line_offsets]))


def _summary_table(uri: str, text: str, rows: list[SummaryRow]) -> dict:
    """The ``hlo.showSummary`` answer with targets (messages.SummaryTable as JSON):
    each row of ``text`` naming a kernel goes to its name in ``uri``."""
    return messages.to_json(messages.SummaryTable(text, [
        messages.SummaryTarget(r.line, r.start, r.end, types.Location(
            uri, to_range(r.target.lines, r.target.start, r.target.end))) for r in rows]))


def _name(uri: str) -> str:
    return uri.rsplit("/", 1)[-1]
