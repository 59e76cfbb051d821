"""Pictures over LSP: the dataflow graph, request ``hlo/graph`` (docs/protocol.md,
"Custom request hlo/graph"), and memory over the schedule, request ``hlo/memory``;
with ``format: "text"`` each answers the picture as text
(:mod:`hlo_lsp.features.text_pictures`, a :class:`hlo_lsp.lsp.messages.TextPictureReply`:
Neovim's view for a terminal without a browser).

The graph is :func:`hlo_lsp.features.graph.graph` (offsets in, plain data out);
this module only converts its offsets to LSP ranges with the document's line
index and its dataclasses to :class:`hlo_lsp.lsp.messages.GraphReply`, with
the page of :mod:`hlo_lsp.features.graph_page` when asked (VS Code's "HLO: Show
Graph" panel, Neovim's ``:HloGraph``).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import attrs
from pygls.uris import to_fs_path

from hlo_lsp.features.graph import DEFAULT_LIMIT, Graph, graph
from hlo_lsp.features.graph_page import graph_html, graph_title, page_title
from hlo_lsp.features.graph_page.memory_page import MEMORY_TITLE, memory_html
from hlo_lsp.features.text_pictures import TextPicture, graph_text, memory_text
from hlo_lsp.lsp import messages
from hlo_lsp.analysis.documents import Analysis
from hlo_lsp.lsp.handlers.reports import memory_of
from hlo_lsp.lsp.convert import to_offset, to_range
from hlo_lsp.lsp.protocol import HloLanguageServer
from hlo_lsp.lsp.requests import guarded
from hlo_lsp.analysis.work import REPORT
from hlo_lsp.syntax.lines import LineIndex


def graph_reply(g: Graph, lines: LineIndex) -> messages.GraphReply:
    """``g`` with LSP ranges (instruction and name) instead of offsets."""
    nodes = [messages.GraphNodeInfo(
        n.id, n.name, n.opcode, n.shape, n.kind, n.computation,
        to_range(lines, n.start, n.end), to_range(lines, n.name_start, n.name_end),
        n.cluster, n.label, n.library, n.target, n.is_root, n.hidden, list(n.calls))
        for n in g.nodes]
    edges = [messages.GraphEdgeInfo(e.source, e.target, e.operand, e.shape) for e in g.edges]
    clusters = [messages.GraphClusterInfo(c.id, c.computation, c.owner, c.attr, c.size,
                                          c.shown, c.expanded, c.parent) for c in g.clusters]
    return messages.GraphReply(g.computation, g.focus, nodes, edges, clusters, g.total,
                               g.omitted, g.message, g.hops, g.limit)


def picture_reply(pic: TextPicture, lines: LineIndex) -> dict:
    """``pic`` as the JSON of :class:`messages.TextPictureReply`: its lines, and
    LSP ranges instead of offsets for the lines that name an instruction."""
    targets = [messages.PictureTarget(i, to_range(lines, line.start, line.end))
               for i, line in enumerate(pic.lines) if line.start is not None]
    return messages.to_json(messages.TextPictureReply(
        pic.title, [line.text for line in pic.lines], targets, pic.cursor, pic.message))


def page_of(g: Graph, a: Analysis, around: bool) -> str:
    """The graph's page (:func:`hlo_lsp.features.graph_page.graph_html`, as
    ``hlo-lsp graph`` writes it), titled by the module and what it shows."""
    path = to_fs_path(a.uri) or a.uri
    return graph_html(g, a.lines, os.path.basename(path), a.uri,
                      graph_title(a.module, path, g, around))


def register(server: HloLanguageServer) -> None:
    """Register ``hlo/graph`` and ``hlo/memory`` on ``server``."""

    @server.feature(messages.GRAPH)
    @guarded(default=None)
    async def on_graph(ls: HloLanguageServer, params: Any) -> dict | None:
        parsed = messages.parse_params(messages.GraphParams, params)
        if parsed is None:
            return None
        async with ls.lease(parsed.text_document.uri) as a:
            if a is None:
                return None
            around = None if parsed.position is None else to_offset(a.lines, parsed.position)
            limit = parsed.limit if parsed.limit is not None else DEFAULT_LIMIT

            def compute() -> dict | None:
                if parsed.format == "text":
                    pic = graph_text(a.module, parsed.computation, around, parsed.hops)
                    return None if pic is None else picture_reply(pic, a.lines)
                g = graph(a.module, parsed.computation, around, parsed.hops, limit)
                if g is None:
                    return None
                reply = graph_reply(g, a.lines)
                if parsed.page:
                    reply = attrs.evolve(reply, page=page_of(g, a, around is not None))
                return messages.to_json(reply)

            return await ls.work(compute, priority=REPORT)

    @server.feature(messages.MEMORY)
    @guarded(default=None)
    async def on_memory(ls: HloLanguageServer, params: Any) -> dict | None:
        """``{textDocument}`` -> ``{page, peakBytes, peakStep, source}``: memory over
        the schedule from XLA's reports beside the dump, as the page ``hlo-lsp
        memory -o`` writes (with ``format: "text"``: the chart as text,
        :class:`messages.TextPictureReply`); null without reports."""
        parsed = messages.parse_params(messages.MemoryParams, params)
        if parsed is None:
            return None
        async with ls.lease(parsed.text_document.uri) as a:
            path = to_fs_path(parsed.text_document.uri) if a is not None else None
            if a is None or not path or a.lazy_only:
                return None
            timeline = await memory_of(ls, a)
            if timeline is None:
                return None
            if parsed.format == "text":
                return await ls.work(lambda: picture_reply(memory_text(timeline, a.module),
                                                           a.lines), priority=REPORT)
            page = await ls.work(
                memory_html, timeline, page_title(a.module, path, MEMORY_TITLE),
                os.path.basename(path), a.uri, a.lines, priority=REPORT)
            return {"page": page, "peakBytes": timeline.peak_bytes,
                    "peakStep": timeline.peak_step, "source": timeline.source}
