"""Readable HLO, answered from the analyses of the document store: inlay hints,
semantic tokens, the ENTRY computation's code lens, the kernel summary, the
readable view and the comparison of two dumps (docs/protocol.md, "Readable
HLO"; asked through :class:`hlo_lsp.analysis.host.AnalysisSnapshot`).

The features are pure (:mod:`hlo_lsp.features.inlay_hints`,
:mod:`~hlo_lsp.features.semantic_tokens`, :mod:`~hlo_lsp.features.summary`,
:mod:`~hlo_lsp.features.readable`, :mod:`~hlo_lsp.features.compare`); here they
are run in the work queue (:mod:`hlo_lsp.analysis.work`): what the editor asks
by itself at :data:`~hlo_lsp.analysis.work.INTERACTIVE`, what a command asks at
:data:`~hlo_lsp.analysis.work.REPORT`. Values derived from an analysis are
kept on it (:meth:`~hlo_lsp.analysis.documents.DocumentStore.derive`, the keys
below), so they live exactly as long as it does and are computed once however
many requests ask: the kernel summary (``"summary"``), its kernels' costs
(``"kernel costs"``), the folded summary per device (``"folded:<device>"``),
the whole document's semantic tokens (``"semantic tokens"``) and inlay hints
(``"inlay hints:<categories>"``), the readable view per options (``"readable
view:<inline>:<metadata>"``), the memory over the schedule (``"memory"``).

Every function leases the current analysis of its document(s) and raises
:class:`~hlo_lsp.analysis.documents.DocumentChanged` (the host's
``ContentModified``) when one of them was edited while it answered. No pygls.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from hlo_lsp.analysis.answers import Placed
from hlo_lsp.analysis.documents import Analysis, DocumentChanged, DocumentStore
from hlo_lsp.analysis.inputs import DumpInputs
from hlo_lsp.analysis.pictures import timeline_of
from hlo_lsp.analysis.profiles import ProfileInput, measured_in
from hlo_lsp.analysis.work import INTERACTIVE, REPORT
from hlo_lsp.dump.names import device_for
from hlo_lsp.features.autotuning import autotuning_note
from hlo_lsp.features.compare import compare as compare_summaries, \
    format_markdown as diff_markdown, format_text as diff_text
from hlo_lsp.features.inlay_hints import InlayHint, inlay_hints as hints_in
from hlo_lsp.features.measured import computation_lens
from hlo_lsp.features.memory import MemoryTimeline, format_text as memory_text, \
    peak_markdown
from hlo_lsp.features.readable import ReadableView, render
from hlo_lsp.features.semantic_tokens import semantic_tokens as tokens_in
from hlo_lsp.features.summary import format_markdown, format_text, row_targets
from hlo_lsp.model.accelerators import Accelerator
from hlo_lsp.model.folding import FoldedSummary, fold_summary
from hlo_lsp.model.summary import KernelSummary, cost_kernels, kernel_summary
from hlo_lsp.syntax.lines import LineIndex

T = TypeVar("T")

#: ``work(fn, *args, priority=...)``: ``fn(*args)`` in the work queue, awaited
#: (:meth:`hlo_lsp.analysis.host.AnalysisSnapshot._work`).
Work = Callable[..., Awaitable[Any]]
#: A position of the current text: (line, character) in the position encoding.
Position = tuple[int, int]


@dataclass(frozen=True, slots=True)
class ComputationLens:
    """A code lens on a computation: ``place`` from its start to the end of its
    name, ``title`` the kernel summary's headline
    (:meth:`hlo_lsp.model.summary.KernelSummary.headline`) on ENTRY, the measured
    time per call on a computation a profile measured."""

    place: Placed
    title: str


@dataclass(frozen=True, slots=True)
class SummaryRow:
    """A row of the text summary naming a kernel: ``line`` (0-based) of the
    summary's text, ``start``/``end`` the ``%name`` on it (code points; the row
    starts with ASCII), ``target`` the kernel instruction's name in its
    document (its start when it has no instruction there)."""

    line: int
    start: int
    end: int
    target: Placed


# -- derived once per analysis ------------------------------------------------

async def summary_of(store: DocumentStore, a: Analysis,
                     priority: int = INTERACTIVE) -> KernelSummary:
    """The kernel summary of ``a`` (:func:`hlo_lsp.model.summary.kernel_summary`),
    computed once per analysis in the work queue."""
    return await store.derive(a, "summary", kernel_summary, a.module, priority=priority)


async def costed_summary_of(store: DocumentStore, a: Analysis) -> KernelSummary:
    """The kernel summary of ``a`` with the cost of every kernel counted, once
    per analysis in the work queue (:func:`hlo_lsp.model.summary.cost_kernels`):
    ``hlo.showSummary`` and ``hlo.compareDumps`` sent together then rank and
    compare from the module's memo instead of costing every kernel twice."""
    summary = await summary_of(store, a)
    await store.derive(a, "kernel costs", cost_kernels, a.module, summary, priority=REPORT)
    return summary


async def _folded(store: DocumentStore, a: Analysis, summary: KernelSummary,
                  device: Accelerator) -> FoldedSummary:
    """The summary folded to fit a screen, times on ``device``
    (:func:`hlo_lsp.model.folding.fold_summary`), once per analysis and device."""
    return await store.derive(a, f"folded:{device.key}", fold_summary, a.module, summary,
                              device, priority=REPORT)


# -- the questions ------------------------------------------------------------

def _unchanged(store: DocumentStore, *analyses: Analysis) -> None:
    """Raise :class:`DocumentChanged` when an opened document of ``analyses``
    has a version other than the analysis' now (edited while answering)."""
    for a in analyses:
        current = store.version(a.uri)
        if current is not None and current != a.version:
            raise DocumentChanged(f"{a.uri} changed from version {a.version} to {current}")


def _whole(a: Analysis, start: int, end: int) -> bool:
    """Whether the character range ``[start, end)`` covers all of ``a``'s text."""
    return start <= 0 and end >= len(a.module.text)


def _hints(a: Analysis, start: int, end: int, categories: tuple[str, ...],
           encode: Callable[[list[InlayHint], LineIndex], T]) -> T:
    return encode(hints_in(a.module, start, end, categories), a.lines)


async def inlay_hints(store: DocumentStore, work: Work, uri: str, start: Position,
                      end: Position, categories: tuple[str, ...],
                      encode: Callable[[list[InlayHint], LineIndex], T]) -> T | None:
    """``encode(hints, lines)`` of the inlay hints of ``categories`` for the
    instructions overlapping ``[start, end]``
    (:func:`hlo_lsp.features.inlay_hints.inlay_hints`), in the work queue; for
    the whole document (tens of thousands of hints on a large dump, asked again
    after each scroll or focus by a client that cannot ask for ranges) once per
    analysis and categories. None for a document not analysable."""
    async with store.lease(uri) as a:
        if a is None:
            return None
        lo, hi = a.lines.offset(*start), a.lines.offset(*end)
        if _whole(a, lo, hi):
            got = await store.derive(a, f"inlay hints:{','.join(categories)}", _hints, a,
                                     0, len(a.module.text), categories, encode)
        else:
            got = await work(_hints, a, lo, hi, categories, encode, priority=INTERACTIVE)
        _unchanged(store, a)
        return got


def _tokens(a: Analysis, encode: Callable[[list[int]], T]) -> T:
    return encode(tokens_in(a.module, a.lines))


async def semantic_tokens(store: DocumentStore, uri: str,
                          span: tuple[Position, Position] | None,
                          encode: Callable[[list[int]], T]) -> T | None:
    """``encode(data)`` of the semantic tokens (LSP's relative encoding, 5
    integers per token, :func:`hlo_lsp.features.semantic_tokens.semantic_tokens`)
    that start in ``span`` (None: the whole document). The whole document's
    (hundreds of thousands of integers) are computed and encoded in the work
    queue once per analysis, and a span covering the whole document answers
    them; a smaller span's are computed here. None for a document not
    analysable."""
    async with store.lease(uri) as a:
        if a is None:
            return None
        lo, hi = (0, len(a.module.text)) if span is None else \
            (a.lines.offset(*span[0]), a.lines.offset(*span[1]))
        if _whole(a, lo, hi):
            got = await store.derive(a, "semantic tokens", _tokens, a, encode)
        else:
            got = encode(tokens_in(a.module, a.lines, lo, hi))
        _unchanged(store, a)
        return got


async def code_lens(store: DocumentStore, uri: str,
                    profile: ProfileInput | None = None) -> list[ComputationLens]:
    """The lens on the ENTRY computation with the kernel summary's headline
    (:class:`ComputationLens`), and with a profile (:mod:`hlo_lsp.analysis.profiles`)
    one on each computation it measured: its measured time per call
    (:func:`hlo_lsp.features.measured.computation_lens`); [] without an ENTRY
    or for a document not analysable."""
    async with store.lease(uri) as a:
        if a is None or a.module.entry is None:
            return []
        entry = a.module.entry
        summary = await summary_of(store, a)
        _unchanged(store, a)
        lenses = [ComputationLens(Placed(a.lines, entry.start, entry.name.end), summary.headline())]
        joined = measured_in(a.module, profile)
        if joined is None or joined.measured is None:
            return lenses
        for comp in a.module.computations:
            title = computation_lens(joined.measured, comp)
            if title:
                lenses.append(ComputationLens(Placed(a.lines, comp.start, comp.name.end), title))
        return lenses


def _rows(a: Analysis, summary: KernelSummary, text: str) -> list[SummaryRow]:
    """The rows of ``text`` (the text summary) naming a kernel of ``summary``,
    each to that kernel's name in ``a`` (:func:`hlo_lsp.features.summary.row_targets`)."""
    out = []
    for t in row_targets(text, summary):
        ins = a.module.instruction_at(t.offset)
        start, end = (ins.name.start, ins.name.end) if ins is not None else (t.offset, t.offset)
        out.append(SummaryRow(t.line, t.start, t.end, Placed(a.lines, start, end)))
    return out


def _report(a: Analysis, summary: KernelSummary, note: str, folded: FoldedSummary,
            memory: MemoryTimeline | None, markdown: bool,
            encode: Callable[[str, list[SummaryRow]], T] | None) -> str | T:
    """The summary report: the short report first (top kernel groups by
    estimated time, repeated structure folded), then every kernel under "All
    kernels", then the memory at the peak when XLA's reports say it."""
    if markdown:
        return format_markdown(summary, note, folded) + (
            "\n\n#### Memory at the peak\n\n" + peak_markdown(memory) if memory else "")
    text = format_text(summary, note, folded) + (
        "\nMemory at the peak\n" + memory_text(memory, 5) if memory else "")
    return text if encode is None else encode(text, _rows(a, summary, text))


async def summary(store: DocumentStore, inputs: DumpInputs, work: Work, uri: str,
                  device: str | None, markdown: bool,
                  encode: Callable[[str, list[SummaryRow]], T] | None = None
                  ) -> str | T | None:
    """The kernel summary report of ``uri`` (Markdown, or text), times
    estimated on ``device`` (a key or name of
    :data:`hlo_lsp.model.accelerators.ACCELERATORS`; None: the device the dump's
    file name implies, :func:`hlo_lsp.dump.names.device_for`), headed by the
    deviceless statement of a dump compiled without its GPU
    (:meth:`DumpInputs.deviceless`). Text with ``encode``: ``encode(text,
    rows)``, the rows naming a kernel (:class:`SummaryRow`). Computed in the
    work queue at :data:`REPORT`; None for a document not analysable."""
    async with store.lease(uri) as a:
        if a is None:
            return None
        summary = await costed_summary_of(store, a)
        path = store.to_path(a.uri)
        note = await inputs.deviceless(path or "") or ""
        tuning = await work(autotuning_note, a.module, [k.offset for k in summary.kernels],
                            await inputs.autotuning(path or ""), bool(note), priority=REPORT)
        note = "\n".join(n for n in (note, tuning) if n)
        folded = await _folded(store, a, summary, device_for(path, device))
        memory = await timeline_of(store, a, REPORT)
        got = await work(_report, a, summary, note, folded, memory, markdown, encode,
                         priority=REPORT)
        _unchanged(store, a)
        return got


def _view(a: Analysis, inline_fusions: bool, keep_metadata: bool,
          encode: Callable[[ReadableView, LineIndex], T]) -> T:
    return encode(render(a.module, inline_fusions, keep_metadata), a.lines)


async def readable_view(store: DocumentStore, uri: str, inline_fusions: bool,
                        keep_metadata: bool,
                        encode: Callable[[ReadableView, LineIndex], T]) -> T | None:
    """``encode(view, lines)`` of the readable view of ``uri``
    (:func:`hlo_lsp.features.readable.render`: the view's text and per line the
    offset it shows; ``lines`` indexes the document), megabytes of text for a
    large dump: once per analysis and options, in the work queue at
    :data:`REPORT`. None for a document not analysable."""
    async with store.lease(uri) as a:
        if a is None:
            return None
        got = await store.derive(a, f"readable view:{inline_fusions}:{keep_metadata}",
                                 _view, a, inline_fusions, keep_metadata, encode,
                                 priority=REPORT)
        _unchanged(store, a)
        return got


def _diff(old: Analysis, new: Analysis, sa: KernelSummary, sb: KernelSummary,
          device: Accelerator, markdown: bool, labels: tuple[str, str]) -> str:
    diff = compare_summaries(sa, sb, old.module, new.module, device)
    return (diff_markdown if markdown else diff_text)(diff, *labels)


async def compare(store: DocumentStore, work: Work, uri: str, other_uri: str,
                  device: str | None, markdown: bool, labels: tuple[str, str]
                  ) -> str | None:
    """The comparison of the dump ``uri`` (the old one) with ``other_uri`` (the
    new one) (:func:`hlo_lsp.features.compare.compare`) as text or Markdown,
    ``labels`` naming them; times on the new dump's device as for
    :func:`summary` (``device``). Either document opened or read from disk;
    computed in the work queue at :data:`REPORT`. None when either is not
    analysable."""
    async with store.lease(uri) as old, store.lease(other_uri) as new:
        if old is None or new is None:
            return None
        sa, sb = await costed_summary_of(store, old), await costed_summary_of(store, new)
        accelerator = device_for(store.to_path(other_uri), device)
        got = await work(_diff, old, new, sa, sb, accelerator, markdown, labels,
                         priority=REPORT)
        _unchanged(store, old, new)
        return got
