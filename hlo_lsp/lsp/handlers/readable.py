"""Readable HLO over LSP (docs/protocol.md, "Readable HLO"): inlay hints,
semantic tokens, a code lens with the kernel summary on the ENTRY computation,
and the commands ``hlo.showSummary``, ``hlo.readableView`` and
``hlo.compareDumps``.

The features themselves are pure (:mod:`hlo_lsp.features.inlay_hints`,
:mod:`hlo_lsp.features.semantic_tokens`, :mod:`hlo_lsp.features.summary`,
:mod:`hlo_lsp.features.compare`, :mod:`hlo_lsp.features.readable`); this module
converts offsets to LSP positions and runs the heavier ones in a worker thread.
Derived values (semantic tokens, the kernel summary) are kept on the analysis
they come from, so they live exactly as long as it does.
"""

from __future__ import annotations

import contextlib
from typing import Any, AsyncIterator

from lsprotocol import types
from pygls.uris import to_fs_path

from hlo_lsp.dump.names import device_for
from hlo_lsp.dump.targets import deviceless_statement
from hlo_lsp.features.compare import compare, format_markdown as diff_markdown, \
    format_text as diff_text
from hlo_lsp.features.inlay_hints import inlay_hints
from hlo_lsp.features.memory import format_text as memory_text, peak_markdown
from hlo_lsp.features.readable import render
from hlo_lsp.features.semantic_tokens import TOKEN_MODIFIERS, TOKEN_TYPES, semantic_tokens
from hlo_lsp.features.summary import format_markdown, format_text, row_targets
from hlo_lsp.lsp import messages, wire
from hlo_lsp.lsp.convert import to_offset, to_range
from hlo_lsp.analysis.documents import Analysis
from hlo_lsp.lsp.handlers.reports import memory_of
from hlo_lsp.lsp.messages import COMPARE_DUMPS, READABLE_VIEW, SHOW_SUMMARY
from hlo_lsp.lsp.protocol import HloLanguageServer
from hlo_lsp.lsp.requests import guarded
from hlo_lsp.analysis.work import REPORT, in_thread
from hlo_lsp.model.folding import fold_summary
from hlo_lsp.model.summary import KernelSummary, cost_kernels, kernel_summary

LEGEND = types.SemanticTokensLegend(token_types=list(TOKEN_TYPES),
                                    token_modifiers=list(TOKEN_MODIFIERS))


async def summary_of(ls: HloLanguageServer, a: Analysis) -> KernelSummary:
    """The kernel summary of ``a``, computed once per analysis in the work pool."""
    return await ls.store.derive(a, "summary", kernel_summary, a.module)


async def costed_summary_of(ls: HloLanguageServer, a: Analysis) -> KernelSummary:
    """The kernel summary of ``a`` with the cost of every kernel counted, once
    per analysis in the work pool (:func:`hlo_lsp.model.summary.cost_kernels`):
    ``hlo.showSummary`` and ``hlo.compareDumps`` sent together then rank and
    compare from the module's memo instead of costing every kernel twice."""
    summary = await summary_of(ls, a)
    await ls.store.derive(a, "kernel costs", cost_kernels, a.module, summary, priority=REPORT)
    return summary


@contextlib.asynccontextmanager
async def _command_document(ls: HloLanguageServer, args: tuple, options: type
                            ) -> AsyncIterator[tuple[Analysis | None, Any]]:
    """The leased analysis and the options of a command whose arguments are
    ``[uri, options?]``; (None, None) for malformed arguments or an unknown
    document."""
    parsed = messages.parse_arguments(args, str, options)
    if parsed is None:
        yield None, None
        return
    async with ls.lease(parsed[0]) as a:
        yield a, parsed[1]


def register(server: HloLanguageServer) -> None:
    """Register the readable-HLO handlers and commands on ``server``."""

    @server.feature(types.TEXT_DOCUMENT_INLAY_HINT,
                    types.InlayHintOptions(resolve_provider=False))
    @guarded(default=[])
    async def on_inlay_hint(ls: HloLanguageServer,
                            params: types.InlayHintParams) -> list | wire.Encoded:
        async with ls.lease(params.text_document.uri) as a:
            if a is None:
                return []
            start = to_offset(a.lines, params.range.start)
            end = to_offset(a.lines, params.range.end)
            categories = ls.settings.inlay_hints.categories()

            if _whole(a, start, end):
                # Tens of thousands of hints on a large dump: the answer for the
                # whole document is kept with the analysis (a client that cannot
                # ask for ranges asks for it again after each scroll or focus).
                return await ls.store.derive(a, f"inlay hints:{','.join(categories)}",
                                             _inlay_answer, a, 0, len(a.module.text),
                                             categories)
            return await ls.work(_inlay_answer, a, start, end, categories)

    @server.feature(types.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, LEGEND)
    @guarded(default=None)
    async def on_semantic_tokens_full(ls: HloLanguageServer,
                                      params: types.SemanticTokensParams
                                      ) -> wire.Encoded | None:
        async with ls.lease(params.text_document.uri) as a:
            if a is None:
                return None
            data = await ls.store.derive(a, "tokens", semantic_tokens, a.module, a.lines)
            # hundreds of thousands of integers: one json.dumps, no cattrs
            return wire.encode({"data": data})

    @server.feature(types.TEXT_DOCUMENT_SEMANTIC_TOKENS_RANGE, LEGEND)
    @guarded(default=None)
    async def on_semantic_tokens_range(ls: HloLanguageServer,
                                       params: types.SemanticTokensRangeParams
                                       ) -> wire.Encoded | None:
        async with ls.lease(params.text_document.uri) as a:
            if a is None:
                return None
            start = to_offset(a.lines, params.range.start)
            end = to_offset(a.lines, params.range.end)
            if _whole(a, start, end):
                # the tokens starting in the whole document are the full answer's
                data = await ls.store.derive(a, "tokens", semantic_tokens, a.module, a.lines)
            else:
                data = semantic_tokens(a.module, a.lines, start, end)
            return wire.encode({"data": data})

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    @guarded(default=[])
    async def on_code_lens(ls: HloLanguageServer,
                           params: types.CodeLensParams) -> list[types.CodeLens]:
        async with ls.lease(params.text_document.uri) as a:
            if a is None or a.module.entry is None:
                return []
            entry = a.module.entry
            summary = await summary_of(ls, a)
            return [types.CodeLens(
                range=to_range(a.lines, entry.start, entry.name.end),
                command=types.Command(title=summary.headline(), command=SHOW_SUMMARY,
                                      arguments=[a.uri]))]

    @server.command(SHOW_SUMMARY)
    @guarded(default=None)
    async def show_summary(ls: HloLanguageServer, *args: Any) -> str | dict | None:
        """[uri, {format?: "markdown"|"text", targets?}] -> the kernel summary
        (with ``targets`` and the text format: messages.SummaryTable)."""
        async with _command_document(ls, args, messages.SummaryOptions) as (a, options):
            if a is None:
                return None
            summary = await costed_summary_of(ls, a)
            path = to_fs_path(a.uri)
            note = (await in_thread(deviceless_statement, path) if path else None) or ""
            # The short report first (top kernel groups by estimated time, repeated
            # structure folded), then every kernel under "All kernels".
            device = device_for(path, ls.settings.device)
            folded = await ls.store.derive(a, f"folded:{device.key}", fold_summary, a.module,
                                           summary, device, priority=REPORT)
            memory = await memory_of(ls, a)
            if options.format == "text":
                text = format_text(summary, note, folded) + (
                    "\nMemory at the peak\n" + memory_text(memory, 5) if memory else "")
                if options.targets:
                    return await ls.work(_summary_table, a, summary, text, priority=REPORT)
                return text
            return format_markdown(summary, note, folded) + (
                "\n\n#### Memory at the peak\n\n" + peak_markdown(memory) if memory else "")

    @server.command(READABLE_VIEW)
    @guarded(default=None)
    async def readable_view(ls: HloLanguageServer, *args: Any) -> dict | None:
        """[uri, {inlineFusions?, keepMetadata?}] -> {text, lineMap, sourceLines}."""
        async with _command_document(ls, args, messages.ReadableOptions) as (a, options):
            if a is None:
                return None
            # megabytes of text for a large dump: once per analysis and options
            return await ls.store.derive(
                a, f"readable view:{options.inline_fusions}:{options.keep_metadata}",
                _readable_answer, a, options.inline_fusions, options.keep_metadata,
                priority=REPORT)

    @server.command(COMPARE_DUMPS)
    @guarded(default=None)
    async def compare_dumps(ls: HloLanguageServer, *args: Any) -> str | None:
        """[oldUri, newUri, {format?: "text"|"markdown"}] -> the comparison."""
        parsed = messages.parse_arguments(args, str, str, messages.SummaryOptions)
        if parsed is None:
            return None
        old_uri, new_uri, options = parsed
        async with ls.lease(old_uri) as old, ls.lease(new_uri) as new:
            if old is None or new is None:
                return None
            sa, sb = await costed_summary_of(ls, old), await costed_summary_of(ls, new)
            # times on the device of the new dump, as hlo.showSummary and `hlo-lsp diff`
            device = device_for(to_fs_path(new_uri), ls.settings.device)
            diff = await ls.work(compare, sa, sb, old.module, new.module, device,
                                 priority=REPORT)
        render_diff = diff_markdown if options.format == "markdown" else diff_text
        return render_diff(diff, f"old {_name(old_uri)}", f"new {_name(new_uri)}")


def _whole(a: Analysis, start: int, end: int) -> bool:
    """Whether the character range ``[start, end)`` covers all of ``a``'s text."""
    return start <= 0 and end >= len(a.module.text)


def _inlay_answer(a: Analysis, start: int, end: int, categories: tuple[str, ...]
                  ) -> wire.Encoded:
    """The ``textDocument/inlayHint`` answer for the instructions of ``a`` that
    overlap ``[start, end]`` (character offsets), hints of ``categories`` only."""
    return wire.encode(wire.inlay_hints(inlay_hints(a.module, start, end, categories),
                                        a.lines))


def _readable_answer(a: Analysis, inline_fusions: bool, keep_metadata: bool) -> dict:
    """The ``hlo.readableView`` answer for ``a`` (messages.ReadableView as JSON)."""
    view = render(a.module, inline_fusions, keep_metadata)
    return messages.to_json(messages.ReadableView(
        view.text, view.line_offsets,
        [None if o is None else a.lines.line_of(o) for o in view.line_offsets]))


def _summary_table(a: Analysis, summary: KernelSummary, text: str) -> dict:
    """The ``hlo.showSummary`` answer with targets (messages.SummaryTable as JSON):
    each row of ``text`` naming a kernel of ``summary`` goes to its name in ``a``."""
    targets = []
    for t in row_targets(text, summary):
        ins = a.module.instruction_at(t.offset)
        start, end = (ins.name.start, ins.name.end) if ins is not None else (t.offset, t.offset)
        targets.append(messages.SummaryTarget(t.line, t.start, t.end, types.Location(
            a.uri, to_range(a.lines, start, end))))
    return messages.to_json(messages.SummaryTable(text, targets))


def _name(uri: str) -> str:
    return uri.rsplit("/", 1)[-1]
