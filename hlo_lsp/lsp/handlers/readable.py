"""Readable HLO over LSP (docs/protocol.md, "Readable HLO"): inlay hints,
semantic tokens, a code lens with the kernel summary on the ENTRY computation,
and the commands ``hlo.showSummary``, ``hlo.readableView`` and
``hlo.compareDumps``.

The features themselves are pure (:mod:`hlo_lsp.features.inlay_hints`,
:mod:`hlo_lsp.features.semantic_tokens`, :mod:`hlo_lsp.features.summary`,
:mod:`hlo_lsp.features.compare`, :mod:`hlo_lsp.features.readable`); this module converts offsets
to LSP positions and runs the heavier ones in a worker thread.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from lsprotocol import types

from hlo_lsp.features.compare import compare, format_markdown as diff_markdown, format_text as diff_text
from hlo_lsp.features.inlay_hints import CATEGORIES, inlay_hints
from hlo_lsp.features.semantic_tokens import TOKEN_MODIFIERS, TOKEN_TYPES, semantic_tokens
from hlo_lsp.features.readable import render
from hlo_lsp.features.summary import format_markdown, format_text
from hlo_lsp.model.summary import KernelSummary, kernel_summary

log = logging.getLogger("hlo_lsp")

SHOW_SUMMARY = "hlo.showSummary"
READABLE_VIEW = "hlo.readableView"
COMPARE_DUMPS = "hlo.compareDumps"

LEGEND = types.SemanticTokensLegend(token_types=list(TOKEN_TYPES),
                                    token_modifiers=list(TOKEN_MODIFIERS))

#: initialization option ``inlayHints`` key -> inlay hint category.
INLAY_OPTIONS = {"operandShapes": "operandShape", "pythonSource": "source",
                 "tupleElements": "tupleElement"}
_KINDS = {"type": types.InlayHintKind.Type, "parameter": types.InlayHintKind.Parameter}


class _PerAnalysis:
    """The last computed value per URI, valid while the analysis object is the same."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[Any, Any]] = {}

    async def get(self, analysis, compute):
        hit = self._cache.get(analysis.uri)
        if hit is not None and hit[0] is analysis:
            return hit[1]
        value = await asyncio.to_thread(compute, analysis)
        self._cache[analysis.uri] = (analysis, value)
        return value


def _categories(ls) -> tuple[str, ...]:
    opts = ls.options.get("inlayHints")
    if not isinstance(opts, dict):
        return CATEGORIES
    return tuple(cat for key, cat in INLAY_OPTIONS.items() if opts.get(key, True) is not False)


def _arg_uri(args: tuple) -> str | None:
    if not args:
        return None
    first = args[0]
    if isinstance(first, dict):
        first = first.get("uri") or (first.get("textDocument") or {}).get("uri")
    return first if isinstance(first, str) else None


def _arg_options(args: tuple, index: int) -> dict:
    return args[index] if len(args) > index and isinstance(args[index], dict) else {}


def register(server) -> None:
    """Register the handlers and commands on ``server`` (an HloLanguageServer)."""
    from hlo_lsp.lsp.server import HloLanguageServer, guarded, to_range

    tokens_cache = _PerAnalysis()
    summary_cache = _PerAnalysis()

    def position(lines, offset: int) -> types.Position:
        line, char = lines.position(offset)
        return types.Position(line=line, character=char)

    @server.feature(types.TEXT_DOCUMENT_INLAY_HINT,
                    types.InlayHintOptions(resolve_provider=False))
    @guarded(default=[])
    async def on_inlay_hint(ls: HloLanguageServer,
                            params: types.InlayHintParams) -> list[types.InlayHint]:
        a = await ls.analysis(params.text_document.uri)
        if a is None:
            return []
        rng = params.range
        start = a.lines.offset(rng.start.line, rng.start.character)
        end = a.lines.offset(rng.end.line, rng.end.character)
        categories = _categories(ls)

        def compute() -> list[types.InlayHint]:
            return [types.InlayHint(position=position(a.lines, h.offset), label=h.label,
                                    kind=_KINDS.get(h.kind) if h.kind else None,
                                    tooltip=h.tooltip or None,
                                    padding_left=h.padding_left or None)
                    for h in inlay_hints(a.module, start, end, categories)]

        # A whole-document request on a large dump is tens of thousands of hints.
        return await asyncio.to_thread(compute)

    @server.feature(types.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, LEGEND)
    @guarded(default=None)
    async def on_semantic_tokens_full(ls: HloLanguageServer,
                                      params: types.SemanticTokensParams
                                      ) -> types.SemanticTokens | None:
        a = await ls.analysis(params.text_document.uri)
        if a is None:
            return None
        data = await tokens_cache.get(a, lambda an: semantic_tokens(an.module, an.lines))
        return types.SemanticTokens(data=data)

    @server.feature(types.TEXT_DOCUMENT_SEMANTIC_TOKENS_RANGE, LEGEND)
    @guarded(default=None)
    async def on_semantic_tokens_range(ls: HloLanguageServer,
                                       params: types.SemanticTokensRangeParams
                                       ) -> types.SemanticTokens | None:
        a = await ls.analysis(params.text_document.uri)
        if a is None:
            return None
        rng = params.range
        start = a.lines.offset(rng.start.line, rng.start.character)
        end = a.lines.offset(rng.end.line, rng.end.character)
        return types.SemanticTokens(data=semantic_tokens(a.module, a.lines, start, end))

    async def summary_of(a) -> KernelSummary:
        return await summary_cache.get(a, lambda an: kernel_summary(an.module))

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    @guarded(default=[])
    async def on_code_lens(ls: HloLanguageServer,
                           params: types.CodeLensParams) -> list[types.CodeLens]:
        a = await ls.analysis(params.text_document.uri)
        if a is None:
            return []
        entry = a.module.entry
        if entry is None:
            return []
        summary = await summary_of(a)
        return [types.CodeLens(
            range=to_range(a.lines, entry.start, entry.name.end),
            command=types.Command(title=summary.headline(), command=SHOW_SUMMARY,
                                  arguments=[a.uri]))]

    # Command handlers take ``ls`` unannotated: pygls resolves their annotations
    # with typing.get_type_hints, in this module's globals.
    @server.command(SHOW_SUMMARY)
    async def show_summary(ls, *args: Any) -> str | None:
        """[uri, {format?: "markdown"|"text"}] -> the kernel summary."""
        try:
            uri = _arg_uri(args)
            a = await ls.analysis(uri) if uri else None
            if a is None:
                return None
            summary = await summary_of(a)
            fmt = _arg_options(args, 1).get("format", "markdown")
            return format_text(summary) if fmt == "text" else format_markdown(summary)
        except Exception:  # noqa: BLE001
            log.exception("%s failed", SHOW_SUMMARY)
            return None

    @server.command(READABLE_VIEW)
    async def readable_view(ls, *args: Any) -> dict | None:
        """[uri, {inlineFusions?, keepMetadata?}] -> {text, lineMap, sourceLines}."""
        try:
            uri = _arg_uri(args)
            a = await ls.analysis(uri) if uri else None
            if a is None:
                return None
            opts = _arg_options(args, 1)
            view = await asyncio.to_thread(
                render, a.module, bool(opts.get("inlineFusions", False)),
                bool(opts.get("keepMetadata", False)))
            lines = a.lines
            return {"text": view.text, "lineMap": view.line_offsets,
                    "sourceLines": [None if o is None else lines.line_of(o)
                                    for o in view.line_offsets]}
        except Exception:  # noqa: BLE001
            log.exception("%s failed", READABLE_VIEW)
            return None

    @server.command(COMPARE_DUMPS)
    async def compare_dumps(ls, *args: Any) -> str | None:
        """[oldUri, newUri, {format?: "text"|"markdown"}] -> the comparison."""
        try:
            if len(args) < 2 or not all(isinstance(u, str) for u in args[:2]):
                return None
            old = await ls.analysis(args[0])
            new = await ls.analysis(args[1])
            if old is None or new is None:
                return None
            diff = compare(await summary_of(old), await summary_of(new))
            fmt = _arg_options(args, 2).get("format", "text")
            render_diff = diff_markdown if fmt == "markdown" else diff_text
            return render_diff(diff, f"old {_name(args[0])}", f"new {_name(args[1])}")
        except Exception:  # noqa: BLE001
            log.exception("%s failed", COMPARE_DUMPS)
            return None


def _name(uri: str) -> str:
    return uri.rsplit("/", 1)[-1]
