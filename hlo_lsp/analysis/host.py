"""The analysis host: what the server keeps between requests, and the questions
asked of it.

:class:`AnalysisHost` owns the opened documents and their incremental analyses
(:class:`~hlo_lsp.analysis.documents.DocumentStore`), the files read beside a
dump (:class:`~hlo_lsp.analysis.inputs.DumpInputs`), the workspace index
(:class:`~hlo_lsp.analysis.workspace.Workspace`), XLA's second opinion on each
analysis (:class:`~hlo_lsp.analysis.xla_check.XlaCheck`), and the threads that
compute: ``parse`` (2 threads, analyses), ``quick`` (2 threads, hover of a big
document while its analysis runs), the work queue (``work``, one thread,
whole-document answers; :mod:`hlo_lsp.analysis.work`) and ``xla`` (one thread
talking to XLA's parser).

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

from hlo_lsp.analysis import pictures, readable, reports
from hlo_lsp.analysis.answers import Placed, definition_at, hover_at
from hlo_lsp.analysis.documents import Analysis, DocumentChanged, DocumentStore
from hlo_lsp.analysis.inputs import DumpInputs, HoverInputs
from hlo_lsp.analysis.pass_history import PassHistories
from hlo_lsp.analysis.profiles import ProfileInput, Profiles
from hlo_lsp.dump.profiles import PROFILE_SUFFIXES
from hlo_lsp.analysis.recompile import Recompiles
from hlo_lsp.analysis.work import INTERACTIVE, REPORT, WorkQueue
from hlo_lsp.analysis.workspace import MAX_SYMBOLS, Workspace
from hlo_lsp.analysis.xla_check import XlaCheck, XlaListener
from hlo_lsp.dump.index import SymbolHit
from hlo_lsp.dump.kernels import KernelIndex
from hlo_lsp.dump.sources import outside_note, resolve_source_path
from hlo_lsp.features.folding import Fold, folding_ranges
from hlo_lsp.features.inline_regions import KINDS, InlineRegion, inline_regions
from hlo_lsp.features.links import SourceLink, source_links
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

    ``to_path(uri) -> str | None`` turns a ``file:`` URI into a path and
    ``to_uri(path) -> str | None`` a path into the URI documents are known by
    (default: ``file:`` and the path as it is); ``listener`` hears of each
    analysis and edit, after which XLA's parser is asked (the server publishes
    diagnostics from it)."""

    def __init__(self, to_path: Callable[[str], str | None],
                 listener: XlaListener | None = None,
                 to_uri: Callable[[str], str | None] = lambda path: "file://" + path) -> None:
        self.parse_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="parse")
        self.quick_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="quick")
        #: whole-document answers, one at a time, the editor's own first
        self.work_pool = WorkQueue("work")
        #: the files beside a dump that hover reads, cached; forgotten on
        #: file-change events (:meth:`DumpInputs.forget`)
        self.inputs = DumpInputs()
        #: XLA's verdict on each analysis, between the store and ``listener``
        self.xla = XlaCheck(listener, lambda uri: self.store.snapshot(uri))
        self.store = DocumentStore(to_path, self.parse_pool,
                                   self.xla if listener is not None else None,
                                   derive_pool=self.work_pool)
        #: the workspace index (on once the server turns it on)
        self.workspace = Workspace(self.store, to_uri)
        #: the recompiles running and the unusable recipes reported
        #: (:class:`~hlo_lsp.analysis.recompile.Recompiles`)
        self.recompiles = Recompiles(self.store, self.parse_pool, self.inputs)
        #: the profiles of the dumps (:class:`~hlo_lsp.analysis.profiles.Profiles`);
        #: the server sets its ``tell``
        self.profiles = Profiles()
        #: the pass histories of the dumps (:class:`~hlo_lsp.analysis.pass_history.PassHistories`)
        self.passes = PassHistories(self.store, inputs=self.inputs)

    async def hover_inputs(self, path: str, source_dirs: Awaitable[list[str]],
                           source_roots: list[str], device: str | None,
                           profile_setting: str) -> HoverInputs:
        """What hover needs beside the model for the dump file ``path``
        (:class:`HoverInputs`), its reads awaited together: each waits its own
        budget for a first read (the profile :data:`hlo_lsp.analysis.profiles.FIRST_READ_WAIT_S`,
        the pass history :data:`hlo_lsp.analysis.pass_history.HOVER_WAIT_S`)
        at the same time, so a first hover waits for the slowest of them, not
        their sum. ``source_dirs`` is the server's (it knows the workspace
        folders), awaited with them."""
        inputs = self.inputs
        assignment, deviceless, dirs, profile, fusion, autotuning, passes = await asyncio.gather(
            inputs.buffer_assignment(path), inputs.deviceless(path), source_dirs,
            self.profiles.for_file(path, profile_setting), inputs.fusion_dump(path),
            inputs.autotuning(path), self.passes.for_hover(path))
        return HoverInputs(assignment, deviceless, dirs, source_roots, device, profile,
                           fusion=fusion, autotuning=autotuning, passes=passes)

    def snapshot(self) -> AnalysisSnapshot:
        """The questions' entry point (:class:`AnalysisSnapshot`)."""
        return AnalysisSnapshot(self.store, self.inputs, self.quick_pool, self.work_pool,
                                workspace=self.workspace)

    async def files_changed(self, changed: list[str], deleted: list[str],
                            tell: Callable[[str], None]) -> None:
        """Files ``changed`` (or created) and ``deleted`` on disk (paths): forget
        what was read of them (the store's analysis of a file read from disk,
        the inputs beside them) and re-index or drop them
        (:meth:`Workspace.files_changed`, ``tell`` shows a warning); a profile
        file's events are read again (:meth:`Profiles.forget`)."""
        profiles = [p for p in (*changed, *deleted) if p.endswith(PROFILE_SUFFIXES)]
        for path in profiles:
            self.profiles.forget(path)
        changed = [p for p in changed if not p.endswith(PROFILE_SUFFIXES)]
        deleted = [p for p in deleted if not p.endswith(PROFILE_SUFFIXES)]
        for path in (*changed, *deleted):
            self.store.forget_file(path)
            self.inputs.forget(path)
            self.passes.forget(path)
        await self.workspace.files_changed(changed, deleted, tell)

    def close(self) -> None:
        """Stop the workspace index, XLA's check and the threads (queued work is
        dropped). Idempotent."""
        self.workspace.close()
        self.xla.close()
        self.passes.close()
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
    workspace: Workspace | None = None

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
                         source_dirs: list[str], kernels: KernelIndex | None = None
                         ) -> list[Placed | FileTarget]:
        """Where the name at the position is defined
        (:func:`hlo_lsp.analysis.answers.definition_at`; ``kernels``: the dump's,
        :meth:`hlo_lsp.analysis.inputs.DumpInputs.kernels`)."""
        return await definition_at(self.store, uri, line, character, source_dirs, kernels)

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

    async def inlay_hints(self, uri: str, start_line: int, start_char: int, end_line: int,
                          end_char: int, categories: tuple[str, ...],
                          encode: Callable[[list[readable.InlayHint], LineIndex], T]) -> T | None:
        """``encode(hints, lines)`` of the inlay hints of ``categories`` for the
        instructions overlapping the range
        (:func:`hlo_lsp.analysis.readable.inlay_hints`: the whole document's
        once per analysis); None for a document not analysable."""
        return await readable.inlay_hints(self.store, self._work, uri,
                                          (start_line, start_char), (end_line, end_char),
                                          categories, encode)

    async def semantic_tokens(self, uri: str,
                              span: tuple[tuple[int, int], tuple[int, int]] | None,
                              encode: Callable[[list[int]], T]) -> T | None:
        """``encode(data)`` of the semantic tokens starting in ``span``
        (``((line, character), (line, character))``; None: the whole document,
        once per analysis; :func:`hlo_lsp.analysis.readable.semantic_tokens`);
        None for a document not analysable."""
        return await readable.semantic_tokens(self.store, uri, span, encode)

    async def code_lens(self, uri: str,
                        profile: ProfileInput | None = None) -> list[readable.ComputationLens]:
        """The ENTRY computation's lens with the kernel summary's headline, and
        with ``profile`` the measured time of each computation it measured
        (:func:`hlo_lsp.analysis.readable.code_lens`); [] without an ENTRY."""
        return await readable.code_lens(self.store, uri, profile)

    async def summary(self, uri: str, device: str | None, markdown: bool,
                      encode: Callable[[str, list[readable.SummaryRow]], T] | None = None
                      ) -> str | T | None:
        """The kernel summary report, Markdown or text (with ``encode``:
        ``encode(text, rows)``), times on ``device`` (a setting; None: the
        dump's own) (:func:`hlo_lsp.analysis.readable.summary`); None for a
        document not analysable."""
        return await readable.summary(self.store, self.inputs, self._work, uri, device,
                                      markdown, encode)

    async def readable_view(self, uri: str, inline_fusions: bool, keep_metadata: bool,
                            encode: Callable[[readable.ReadableView, LineIndex], T]) -> T | None:
        """``encode(view, lines)`` of the readable view, once per analysis and
        options (:func:`hlo_lsp.analysis.readable.readable_view`); None for a
        document not analysable."""
        return await readable.readable_view(self.store, uri, inline_fusions, keep_metadata,
                                            encode)

    async def compare(self, uri: str, other_uri: str, device: str | None, markdown: bool,
                      labels: tuple[str, str]) -> str | None:
        """The comparison of the dump ``uri`` (old) with ``other_uri`` (new) as
        text or Markdown (:func:`hlo_lsp.analysis.readable.compare`); None when
        either is not analysable."""
        return await readable.compare(self.store, self._work, uri, other_uri, device,
                                      markdown, labels)

    async def inline_regions(self, uri: str,
                             encode: Callable[[list[InlineRegion], LineIndex], T]) -> T | None:
        """``encode(regions, lines)`` of the regions an editor can fold away
        (:func:`hlo_lsp.features.inline_regions.inline_regions`: ``metadata``,
        ``backend_config`` and the other kinds of
        :data:`~hlo_lsp.features.inline_regions.KINDS`), computed in the work queue
        once per analysis; None for a document not analysable."""
        return await self._derived(uri, "inline regions", _inline_regions, encode)

    # (end of readable HLO)

    # -- pictures and reports: graph, memory, XLA's reports beside a dump
    # (lsp/handlers/graph.py, reports.py) -------------------------------------

    async def graph(self, uri: str, computation: str | None,
                    position: tuple[int, int] | None, hops: int | None, limit: int | None,
                    page: bool, encode: pictures.GraphEncoder,
                    profile: ProfileInput | None = None) -> T | None:
        """``encode(graph, lines, page)`` of the dataflow graph of ``computation``
        (a name) or around ``position`` (``(line, character)``: an instruction's
        neighbourhood of ``hops`` hops, or a computation header's computation),
        at most ``limit`` nodes, with its HTML page when ``page`` (else ""),
        nodes shaded by the measured self time of ``profile``
        (:func:`hlo_lsp.analysis.pictures.graph_answer`); computed and encoded in
        the work queue at :data:`~hlo_lsp.analysis.work.REPORT`. None for a
        document not analysable or no such computation or instruction. Raises
        :data:`ContentModified` when the document was edited meanwhile."""
        async with self.store.lease(uri) as a:
            if a is None:
                return None
            got = await self._work(pictures.graph_answer, self.store, a, computation,
                                   position, hops, limit, page, encode, profile,
                                   priority=REPORT)
        self.store.check_current()
        return got

    async def graph_text(self, uri: str, computation: str | None,
                         position: tuple[int, int] | None, hops: int | None,
                         encode: pictures.PictureEncoder) -> T | None:
        """``encode(picture, lines)`` of the dataflow as text for a terminal
        (:func:`hlo_lsp.analysis.pictures.graph_text_answer`; arguments as
        :meth:`graph`'s), in the work queue at :data:`~hlo_lsp.analysis.work.REPORT`;
        None as :meth:`graph`. Raises :data:`ContentModified` as :meth:`graph`."""
        async with self.store.lease(uri) as a:
            if a is None:
                return None
            got = await self._work(pictures.graph_text_answer, a, computation,
                                   position, hops, encode, priority=REPORT)
        self.store.check_current()
        return got

    async def memory(self, of: str | Analysis, priority: int = REPORT
                     ) -> MemoryTimeline | None:
        """Memory over the schedule (bytes live per step) of the dump ``of``, a
        URI (its current analysis) or an analysis (a hover's, maybe of an earlier
        version), from the reports XLA wrote beside it; read in the work queue at
        ``priority`` once per analysis (:func:`hlo_lsp.analysis.pictures.timeline_of`).
        None without reports, outside the file system, for a document too big
        for a full model or not analysable."""
        if not isinstance(of, str):
            return await pictures.timeline_of(self.store, of, priority)
        async with self.store.lease(of) as a:
            return None if a is None else await pictures.timeline_of(self.store, a, priority)

    async def memory_page(self, uri: str) -> pictures.MemoryPage | None:
        """The memory page of the dump ``uri`` (:class:`~hlo_lsp.analysis.pictures.MemoryPage`:
        the HTML ``hlo-lsp memory -o`` writes, the peak), built in the work queue
        at :data:`~hlo_lsp.analysis.work.REPORT`; None as :meth:`memory`. Raises
        :data:`ContentModified` when the document was edited meanwhile."""
        async with self.store.lease(uri) as a:
            t = None if a is None else await pictures.timeline_of(self.store, a)
            if t is None:
                return None
            got = await self._work(pictures.memory_page_answer, a,
                                   pictures.dump_path(self.store, a), t, priority=REPORT)
        self.store.check_current()
        return got

    async def memory_text(self, uri: str, encode: pictures.PictureEncoder) -> T | None:
        """``encode(picture, lines)`` of memory over the schedule as a bar chart of
        text (:func:`hlo_lsp.analysis.pictures.memory_text_answer`), in the work
        queue at :data:`~hlo_lsp.analysis.work.REPORT`; None as :meth:`memory`.
        Raises :data:`ContentModified` as :meth:`memory_page`."""
        async with self.store.lease(uri) as a:
            t = None if a is None else await pictures.timeline_of(self.store, a)
            if t is None:
                return None
            got = await self._work(pictures.memory_text_answer, a, t, encode,
                                   priority=REPORT)
        self.store.check_current()
        return got

    async def report_links(self, uri: str, text: str | None, to_uri: reports.ToUri
                           ) -> list[reports.ReportLink]:
        """The links of the report ``uri`` (``text``: the editor's copy when it is
        open, else None to read the file) into the HLO dump it describes and the
        buffer-assignment report (:func:`hlo_lsp.analysis.reports.report_links`);
        ``to_uri(path)``: a file's URI. [] when the report cannot be read."""
        return await reports.report_links(self.store, uri, text, to_uri)

    async def report_definition(self, uri: str, line: int, character: int,
                                text: str | None, to_uri: reports.ToUri
                                ) -> reports.Elsewhere | None:
        """The instructions of the HLO dump that the report ``uri`` names at the
        position (:func:`hlo_lsp.analysis.reports.report_definition`; ``text`` and
        ``to_uri`` as :meth:`report_links`'s); None when there are none."""
        return await reports.report_definition(self.store, uri, line, character, text,
                                               to_uri)

    # (end of pictures and reports)

    # -- the dump directory: workspace symbols, counterparts, document links
    # (lsp/handlers/workspace.py, recompile.py) --------------------------------

    async def counterparts(self, uri: str, line: int, character: int
                           ) -> list[tuple[str, Placed]]:
        """``(uri, place)`` of the instruction(s) (or the computation) of the
        other optimization stage of the same module matching the one at the
        position (:meth:`hlo_lsp.analysis.workspace.Workspace.counterparts`);
        [] when there is none."""
        if self.workspace is None:
            return []
        return await self.workspace.counterparts(uri, line, character)

    async def counterpart_files(self, uri: str) -> list[str]:
        """The paths of the files of the other optimization stage of ``uri``'s
        module, best first, wherever the cursor is
        (:meth:`hlo_lsp.analysis.workspace.Workspace.counterpart_files`)."""
        if self.workspace is None:
            return []
        return await self.workspace.counterpart_files(uri)

    async def workspace_symbols(self, query: str, limit: int = MAX_SYMBOLS
                                ) -> list[SymbolHit]:
        """The symbols of the indexed files matching ``query``, best first, at
        most ``limit`` (:meth:`hlo_lsp.analysis.workspace.Workspace.symbols`);
        [] while indexing is off."""
        if self.workspace is None:
            return []
        return await self.workspace.symbols(query, limit)

    async def source_links(self, uri: str, dirs: list[str], roots: list[str],
                           encode: Callable[[list[SourceLink], LineIndex], T]) -> T | None:
        """``encode(links, lines)`` of the metadata's source locations whose file
        exists (:func:`hlo_lsp.features.links.source_links`: looked for in
        ``dirs``, :func:`hlo_lsp.dump.sources.resolve_source_path`; the tooltip
        opened by a sentence when the file lies outside ``roots``,
        :func:`hlo_lsp.dump.sources.outside_note`), computed in the work queue
        (every instruction's metadata, and the disk for each file it names);
        None for a document not analysable."""
        def answer(a: Analysis) -> T:
            return encode(source_links(a.module, lambda p: resolve_source_path(p, dirs),
                                       lambda p: outside_note(p, roots)), a.lines)

        async with self.store.lease(uri) as a:
            if a is None:
                return None
            return await self._work(answer, a)

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


def _inline_regions(a: Analysis, encode: Callable[[list[InlineRegion], LineIndex], T]) -> T:
    return encode(inline_regions(a.module, KINDS), a.lines)


def _folding(a: Analysis, encode: Callable[[list[Fold], LineIndex], T]) -> T:
    return encode(folding_ranges(a.module, a.lines), a.lines)

