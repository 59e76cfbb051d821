"""The analysis host: what the server keeps between requests, and the questions
asked of it.

:class:`AnalysisHost` owns the opened documents and their incremental analyses
(:class:`~hlo_lsp.analysis.documents.DocumentStore`), the files read beside a
dump (:class:`~hlo_lsp.analysis.inputs.DumpInputs`), and the threads that
compute: ``parse`` (2 threads, analyses), ``quick`` (2 threads, hover of a big
document while its analysis runs) and the work queue (``work``, one thread,
whole-document answers; :mod:`hlo_lsp.analysis.work`).

:meth:`AnalysisHost.snapshot` gives an :class:`AnalysisSnapshot`, an immutable
handle with one method per question, answering with the features' plain data
placed in the current text (:class:`~hlo_lsp.analysis.answers.Placed`), as
rust-analyzer's ``AnalysisHost``/``Analysis`` do. Positions are
``(line, character)`` of the current text in the negotiated position encoding.
A question about a document edited while it was answered ends in
:class:`ContentModified` (the lease check of
:meth:`~hlo_lsp.analysis.documents.DocumentStore.check_current`), which the
protocol adapter answers with LSP's ``ContentModified``. No pygls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from hlo_lsp.analysis.answers import Placed, definition_at, hover_at
from hlo_lsp.analysis.documents import Analysis, DocumentChanged, DocumentStore, StoreListener
from hlo_lsp.analysis.inputs import DumpInputs, HoverInputs
from hlo_lsp.analysis.work import INTERACTIVE, WorkQueue
from hlo_lsp.features.folding import Fold, folding_ranges
from hlo_lsp.features.memory import MemoryTimeline
from hlo_lsp.features.references import references
from hlo_lsp.features.symbols import Symbol, document_symbols
from hlo_lsp.model.spans import FileTarget
from hlo_lsp.syntax.lines import LineIndex

T = TypeVar("T")

#: The typed "content modified" outcome: the document changed while a question
#: about it was answered (raised by the snapshot's methods, or found by
#: :meth:`~hlo_lsp.analysis.documents.DocumentStore.check_current` afterwards).
ContentModified = DocumentChanged

#: Past this many instructions the outline lists computations only.
MAX_OUTLINE_INSTRUCTIONS = 20_000


class AnalysisHost:
    """The analysis state of one server; see the module docstring.

    ``to_path(uri) -> str | None`` turns a ``file:`` URI into a path;
    ``listener`` hears of each analysis and edit (the server publishes
    diagnostics from it)."""

    def __init__(self, to_path: Callable[[str], str | None],
                 listener: StoreListener | None = None) -> None:
        self.parse_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="parse")
        self.quick_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="quick")
        #: whole-document answers, one at a time, the editor's own first
        self.work_pool = WorkQueue("work")
        #: the files beside a dump that hover reads, cached; forgotten on
        #: file-change events (:meth:`DumpInputs.forget`)
        self.inputs = DumpInputs()
        self.store = DocumentStore(to_path, self.parse_pool, listener,
                                   derive_pool=self.work_pool)

    def snapshot(self) -> AnalysisSnapshot:
        """The questions' entry point (:class:`AnalysisSnapshot`)."""
        return AnalysisSnapshot(self.store, self.inputs, self.quick_pool, self.work_pool)

    def close(self) -> None:
        """Stop the threads (queued work is dropped). Idempotent."""
        for pool in (self.parse_pool, self.quick_pool, self.work_pool):
            pool.shutdown(wait=False, cancel_futures=True)


@dataclass(frozen=True)
class AnalysisSnapshot:
    """One method per question about the documents of a host, each answering
    with plain data placed in the current text of the document, or raising
    :data:`ContentModified`. Whole-document answers (``symbols``, ``folding``)
    are computed in the work queue once per analysis; ``encode`` turns the
    features' data into the reply there too (the protocol adapter passes its
    pre-encoding), so a reply of tens of thousands of entries is built off the
    event loop."""

    store: DocumentStore
    inputs: DumpInputs
    quick_pool: ThreadPoolExecutor
    work_pool: WorkQueue

    async def _work(self, fn: Callable[..., T], *args: Any, priority: int = INTERACTIVE) -> T:
        """``fn(*args)`` in the work queue at ``priority``, awaited."""
        return await asyncio.wrap_future(self.work_pool.submit_at(priority, fn, *args))

    async def hover(self, uri: str, line: int, character: int, inputs: HoverInputs,
                    memory: Callable[[Analysis], Awaitable[MemoryTimeline | None]]
                    ) -> Placed | None:
        """The hover at the position (:func:`hlo_lsp.analysis.answers.hover_at`),
        answered while edits are analysed; ``memory(analysis)`` gives the memory
        over the schedule for a hover of the module header."""
        return await hover_at(self.store, uri, line, character, inputs, self.quick_pool,
                              memory)

    async def definition(self, uri: str, line: int, character: int,
                         source_dirs: list[str]) -> list[Placed | FileTarget]:
        """Where the name at the position is defined
        (:func:`hlo_lsp.analysis.answers.definition_at`)."""
        return await definition_at(self.store, uri, line, character, source_dirs)

    async def references(self, uri: str, line: int, character: int,
                         include_declaration: bool) -> list[Placed]:
        """The uses (and with ``include_declaration`` the definition) of the name
        at the position (:func:`hlo_lsp.features.references.references`), in the
        current analysis; [] for a document not analysable."""
        async with self.store.lease(uri) as a:
            if a is None:
                return []
            spans = references(a.module, a.lines.offset(line, character),
                               include_declaration)
            return [Placed(a.lines, s.start, s.end) for s in spans]

    async def symbols(self, uri: str,
                      encode: Callable[[list[Symbol], LineIndex], T]) -> T | None:
        """``encode(symbols, lines)`` of the outline
        (:func:`hlo_lsp.features.symbols.document_symbols`: every instruction up
        to :data:`MAX_OUTLINE_INSTRUCTIONS`, computations only past); None for a
        document not analysable."""
        return await self._derived(uri, "outline", _outline, encode)

    async def folding(self, uri: str,
                      encode: Callable[[list[Fold], LineIndex], T]) -> T | None:
        """``encode(ranges, lines)`` of the folding ranges
        (:func:`hlo_lsp.features.folding.folding_ranges`); None for a document
        not analysable."""
        return await self._derived(uri, "folding ranges", _folding, encode)

    # -- readable HLO: inlay hints, semantic tokens, code lens, summary, readable
    # view, comparison (lsp/handlers/readable.py) ---------------------------


    # (end of readable HLO)

    # -- pictures and reports: graph, memory, XLA's reports beside a dump
    # (lsp/handlers/graph.py, reports.py) -------------------------------------


    # (end of pictures and reports)

    # -- the dump directory: workspace symbols, counterparts, document links
    # (lsp/handlers/workspace.py, recompile.py) --------------------------------


    # (end of the dump directory)

    async def _derived(self, uri: str, key: str, fn: Callable[..., Any],
                       encode: Callable[..., Any]) -> Any:
        async with self.store.lease(uri) as a:
            if a is None:
                return None
            return await self.store.derive(a, key, fn, a, encode, priority=INTERACTIVE)


def _outline(a: Analysis, encode: Callable[[list[Symbol], LineIndex], T]) -> T:
    full = a.module.instruction_count() <= MAX_OUTLINE_INSTRUCTIONS
    return encode(document_symbols(a.module, full), a.lines)


def _folding(a: Analysis, encode: Callable[[list[Fold], LineIndex], T]) -> T:
    return encode(folding_ranges(a.module, a.lines), a.lines)
