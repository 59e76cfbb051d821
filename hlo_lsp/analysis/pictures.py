"""The pictures of a dump, computed for the protocol adapter: the dataflow graph
(:func:`hlo_lsp.features.graph.graph`, with the page of
:mod:`hlo_lsp.features.graph_page` when asked), memory over the schedule from
the reports XLA wrote beside the dump (:func:`hlo_lsp.features.memory.timeline_for`,
its page :func:`hlo_lsp.features.graph_page.memory_page.memory_html`), and both
as text for a terminal (:mod:`hlo_lsp.features.text_pictures`).

The functions here run in the work queue (the snapshot's methods in
:mod:`hlo_lsp.analysis.host` queue them at
:data:`~hlo_lsp.analysis.work.REPORT`, what a command or a page asks for) on an
analysis leased for the question; the caller's ``encode`` turns the features'
plain data into its reply there too. :func:`timeline_of` is the one way to the
memory over the schedule of an analysis (hover of the module header, the
summary, ``hlo/memory``). No pygls.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from hlo_lsp.analysis.profiles import ProfileInput, measured_in
from hlo_lsp.analysis.documents import Analysis, DocumentStore
from hlo_lsp.analysis.work import REPORT
from hlo_lsp.features.graph import DEFAULT_LIMIT, Graph, graph
from hlo_lsp.features.graph_page import graph_html, graph_title, page_title
from hlo_lsp.features.graph_page.memory_page import MEMORY_TITLE, memory_html
from hlo_lsp.features.memory import MemoryTimeline, timeline_for
from hlo_lsp.features.text_pictures import TextPicture, graph_text, memory_text
from hlo_lsp.syntax.lines import LineIndex

T = TypeVar("T")

#: ``encode(graph, lines, page)`` of :func:`graph_answer`: the graph, the line
#: index of the text its offsets are in, and its page ("" when not asked).
GraphEncoder = Callable[[Graph, LineIndex, str], T]
#: ``encode(picture, lines)`` of a text picture and the line index of the text
#: its offsets are in.
PictureEncoder = Callable[[TextPicture, LineIndex], T]


@dataclass(frozen=True)
class MemoryPage:
    """The ``hlo/memory`` page of a dump: ``html`` (as ``hlo-lsp memory -o``
    writes it), the peak in bytes, the schedule step it is at (0-based) and where
    the timeline comes from (``"live-range"``: XLA's live-range report;
    ``"estimate"``: the buffer assignment and the ENTRY schedule;
    :attr:`hlo_lsp.features.memory.MemoryTimeline.source`)."""

    html: str
    peak_bytes: int
    peak_step: int
    source: str


def dump_path(store: DocumentStore, a: Analysis) -> str | None:
    """The file ``a`` analyses, when it is one (not a document outside the file
    system) with a full model: the pictures' condition."""
    path = store.to_path(a.uri)
    return path if path and not a.lazy_only else None


async def timeline_of(store: DocumentStore, a: Analysis, priority: int = REPORT
                      ) -> MemoryTimeline | None:
    """Memory over the schedule of the dump ``a`` analyses, from the reports XLA
    wrote beside it (:func:`hlo_lsp.features.memory.timeline_for`: sizes in
    bytes, steps of the schedule), read in the work queue once per analysis at
    ``priority`` (a hover's is :data:`~hlo_lsp.analysis.work.INTERACTIVE`); None
    without reports, outside the file system or without a full model."""
    path = dump_path(store, a)
    if path is None:
        return None
    return await store.derive(a, "memory", timeline_for, path, a.module, priority=priority)


def _offset(a: Analysis, position: tuple[int, int] | None) -> int | None:
    return None if position is None else a.lines.offset(*position)


def graph_answer(store: DocumentStore, a: Analysis, computation: str | None,
                 position: tuple[int, int] | None, hops: int | None, limit: int | None,
                 page: bool, encode: GraphEncoder,
                 profile: ProfileInput | None = None) -> T | None:
    """``encode(graph, lines, page)`` of the graph of ``computation`` or around
    ``position`` (``(line, character)`` in ``a``'s text)
    (:func:`hlo_lsp.features.graph.graph`: at most ``limit``
    nodes, default :data:`~hlo_lsp.features.graph.DEFAULT_LIMIT`), with its page
    when ``page`` (:func:`hlo_lsp.features.graph_page.graph_html`, as ``hlo-lsp
    graph`` writes it, titled by the module and what it shows), else "". With
    the dump's ``profile`` (:mod:`hlo_lsp.analysis.profiles`) the nodes it
    measured are shaded by their self time. None when there is no such
    computation or instruction. Work of the work queue."""
    around = _offset(a, position)
    joined = measured_in(a.module, profile)
    g = graph(a.module, computation, around, hops, DEFAULT_LIMIT if limit is None else limit,
              profile=joined.measured if joined is not None else None)
    if g is None:
        return None
    html = ""
    if page:
        path = store.to_path(a.uri) or a.uri
        html = graph_html(g, a.lines, os.path.basename(path), a.uri,
                          graph_title(a.module, path, g, around is not None))
    return encode(g, a.lines, html)


def graph_text_answer(a: Analysis, computation: str | None,
                      position: tuple[int, int] | None, hops: int | None,
                      encode: PictureEncoder) -> T | None:
    """``encode(picture, lines)`` of the dataflow as text around ``position``
    or of ``computation`` (:func:`hlo_lsp.features.text_pictures.graph_text`);
    None when there is no such computation or instruction. Work of the work
    queue."""
    pic = graph_text(a.module, computation, _offset(a, position), hops)
    return None if pic is None else encode(pic, a.lines)


def memory_page_answer(a: Analysis, path: str, t: MemoryTimeline) -> MemoryPage:
    """The page of timeline ``t`` of the dump ``path`` (:class:`MemoryPage`), its
    buffers' rows revealing their instruction in ``a``'s text. Work of the work
    queue."""
    html = memory_html(t, page_title(a.module, path, MEMORY_TITLE), os.path.basename(path),
                       a.uri, a.lines)
    return MemoryPage(html, t.peak_bytes, t.peak_step, t.source)


def memory_text_answer(a: Analysis, t: MemoryTimeline, encode: PictureEncoder) -> T:
    """``encode(picture, lines)`` of timeline ``t`` as a bar chart of text
    (:func:`hlo_lsp.features.text_pictures.memory_text`), its lines naming
    instructions of ``a``. Work of the work queue."""
    return encode(memory_text(t, a.module), a.lines)
