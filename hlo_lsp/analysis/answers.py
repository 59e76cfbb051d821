"""Hover and definition at a position of an opened document, answered without
waiting behind edits: the fallbacks for answering while edits are analysed live
here, once.

In order, each tried when the one before cannot answer (no analysis yet, or
the position or the answer lies in text edited since):

1. the latest finished analysis, mapped through the edits since
   (:meth:`~hlo_lsp.analysis.documents.DocumentStore.peek`);
2. the text being analysed, from the computation under the cursor
   (:func:`hlo_lsp.syntax.chunks.partial_module` for hover,
   :func:`~hlo_lsp.syntax.chunks.quick_definition` for definition);
3. the next model the running analysis builds
   (:meth:`~hlo_lsp.analysis.documents.DocumentStore.views`), never a wait
   behind the edits typed after the request.

Positions are ``(line, character)`` in the current text, counted in the
document's position encoding; answers are plain data placed in a text by its
:class:`~hlo_lsp.syntax.lines.LineIndex` (:class:`Placed`). No pygls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from dataclasses import dataclass

from hlo_lsp.analysis.documents import Analysis, DocumentStore, View
from hlo_lsp.analysis.inputs import HoverInputs
from hlo_lsp.analysis.profiles import measured_in
from hlo_lsp.dump.kernels import KernelIndex
from hlo_lsp.features.definition import definition
from hlo_lsp.features.hover import hover
from hlo_lsp.features.memory import MemoryTimeline
from hlo_lsp.model.index import Kind, find_at
from hlo_lsp.model.spans import FileTarget, Span
from hlo_lsp.syntax.chunks import partial_module, quick_definition
from hlo_lsp.syntax.lines import LineIndex

#: Documents up to this many characters answer a hover during their analysis on
#: the calling thread (the event loop), larger ones in ``quick_pool``.
QUICK_INLINE_CHARS = 64 * 1024
#: What a quick hover can answer from one computation (callers need the module).
_LOCAL_KINDS = {Kind.INSTRUCTION_DEF, Kind.INSTRUCTION_USE, Kind.OPCODE, Kind.SHAPE}

#: "This view cannot answer": the next way is tried.
_UNKNOWN = object()


@dataclass(frozen=True)
class Placed:
    """``[start, end)`` of the text whose line index is ``lines`` (the current
    text), with ``markdown`` for a hover."""

    lines: LineIndex
    start: int
    end: int
    markdown: str = ""


def _offset_in(view: View | None, line: int, character: int) -> int | None:
    """The offset of the position in the text of the view's analysis; None when
    there is no usable view or the position is in text edited since."""
    if view is None or view.analysis.lazy_only:
        return None
    return view.offset(line, character)


async def hover_at(store: DocumentStore, uri: str, line: int, character: int,
                   inputs: HoverInputs, quick_pool: Executor,
                   memory: Callable[[Analysis], Awaitable[MemoryTimeline | None]]
                   ) -> Placed | None:
    """The hover at ``(line, character)`` of ``uri``
    (:func:`hlo_lsp.features.hover.hover`), or None. ``memory(analysis)`` gives
    the memory over the schedule for a hover of the module header."""

    async def header_memory(view: View | None):
        offset = _offset_in(view, line, character)
        occ = find_at(view.analysis.module, offset) if offset is not None else None
        if occ is None or occ.kind != Kind.MODULE:
            return None
        return await memory(view.analysis)

    def answer(view: View | None, timeline=None):
        offset = _offset_in(view, line, character)
        if offset is None:
            return _UNKNOWN
        module = view.analysis.module
        result = hover(module, offset, inputs.assignment,
                       deviceless=inputs.deviceless, source_dirs=inputs.source_dirs,
                       device=inputs.device, source_roots=inputs.source_roots,
                       memory=timeline, measured=measured_in(module, inputs.profile),
                       fusion=inputs.fusion,
                       autotuning=inputs.autotuning, passes=inputs.passes)
        if result is None:
            return None
        span = view.span(result.start, result.end)
        return Placed(view.lines, *span, result.markdown) if span else _UNKNOWN

    async def answered(view: View | None):
        # The module header's hover says the memory over the schedule, whichever
        # view answers it (the answer must not depend on how far the analysis
        # had come when the hover arrived).
        timeline = await header_memory(view)
        if timeline is not None:
            view = store.peek(uri)  # a view is valid until the next await only
        return answer(view, timeline)

    # 1. While edits are analysed: the latest finished analysis, mapped.
    seen = store.peek(uri)
    if (got := await answered(seen)) is not _UNKNOWN:
        return got
    # 2. No analysis to map from (first indexing, or the cursor is in text not
    # analysed yet): the computation under the cursor.
    snap = store.pending_snapshot(uri)
    if snap is not None:
        def quick() -> Placed | None:
            lines = snap.lines
            offset = lines.offset(line, character)
            module = partial_module(snap.text, snap.skeleton, offset, snap.chunks)
            occ = find_at(module, offset) if module is not None else None
            if occ is None or occ.kind not in _LOCAL_KINDS:
                return None
            result = hover(module, offset, inputs.assignment, deviceless=inputs.deviceless,
                           source_dirs=inputs.source_dirs, device=inputs.device,
                           source_roots=inputs.source_roots, fusion=inputs.fusion,
                           autotuning=inputs.autotuning, passes=inputs.passes)
            return None if result is None else \
                Placed(lines, result.start, result.end, result.markdown)
        if len(snap.text) <= QUICK_INLINE_CHARS:
            # One computation of a small file: a few ms with this thread's
            # parser (built at initialize); a pool thread would first build
            # its own (~0.2 s) while the analysis competes for the GIL.
            placed = quick()
        else:
            placed = await asyncio.get_running_loop().run_in_executor(quick_pool, quick)
        if placed is not None:
            return placed
    # 3. The next model the running analysis builds.
    async for view in store.views(uri, seen):
        if (got := await answered(view)) is not _UNKNOWN:
            return got
    return None


async def definition_at(store: DocumentStore, uri: str, line: int, character: int,
                        source_dirs: list[str], kernels: KernelIndex | None = None
                        ) -> list[Placed | FileTarget]:
    """Where the name at ``(line, character)`` of ``uri`` is defined
    (:func:`hlo_lsp.features.definition.definition`): places in the current
    text, and files (Python sources; with the dump's ``kernels``, a fusion's
    kernel in its PTX and LLVM IR)."""

    def answer(view: View | None):
        offset = _offset_in(view, line, character)
        if offset is None:
            return _UNKNOWN
        out: list[Placed | FileTarget] = []
        for target in definition(view.analysis.module, offset, source_dirs, kernels):
            if isinstance(target, Span):
                span = view.span(target.start, target.end)
                if span is not None:
                    out.append(Placed(view.lines, *span))
            else:
                out.append(target)
        return out

    seen = store.peek(uri)
    if (got := answer(seen)) is not _UNKNOWN and got:
        return got
    snap = store.pending_snapshot(uri)
    if snap is not None:
        # No analysis to map from: the two lines that matter, a few
        # milliseconds of work done right here.
        lines = snap.lines
        spans = quick_definition(snap.text, snap.skeleton, lines.offset(line, character))
        if spans:
            return [Placed(lines, s.start, s.end) for s in spans]
    async for view in store.views(uri, seen):
        if (got := answer(view)) is not _UNKNOWN:
            return got
    return []
