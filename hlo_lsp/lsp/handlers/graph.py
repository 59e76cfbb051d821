"""Pictures over LSP: the dataflow graph, request ``hlo/graph`` (docs/protocol.md,
"Custom request hlo/graph"), and memory over the schedule, request ``hlo/memory``;
with ``format: "text"`` each answers the picture as text
(:mod:`hlo_lsp.features.text_pictures`, a :class:`hlo_lsp.lsp.messages.TextPictureReply`:
Neovim's view for a terminal without a browser).

The pictures are the analysis layer's (:mod:`hlo_lsp.analysis.pictures`, asked
through the host's snapshot): this module only converts positions to
``(line, character)``, and the graph's offsets to LSP ranges with the document's
line index and its dataclasses to :class:`hlo_lsp.lsp.messages.GraphReply`
(with the page of :mod:`hlo_lsp.features.graph_page` when asked: VS Code's "HLO:
Show Graph" panel, Neovim's ``:HloGraph``), in the work queue where the
analysis layer computes them.
"""

from __future__ import annotations

from typing import Any

from pygls.uris import to_fs_path

from hlo_lsp.features.graph import Graph
from hlo_lsp.features.text_pictures import TextPicture
from hlo_lsp.lsp import messages
from hlo_lsp.lsp.convert import to_range
from hlo_lsp.lsp.dispatch import route
from hlo_lsp.lsp.protocol import HloLanguageServer
from hlo_lsp.syntax.lines import LineIndex


def graph_reply(g: Graph, lines: LineIndex, page: str = "") -> messages.GraphReply:
    """``g`` with LSP ranges (instruction and name) instead of offsets, and its
    ``page`` ("" when not asked)."""
    nodes = [messages.GraphNodeInfo(
        n.id, n.name, n.opcode, n.shape, n.kind, n.computation,
        to_range(lines, n.start, n.end), to_range(lines, n.name_start, n.name_end),
        n.cluster, n.label, n.library, n.target, n.is_root, n.hidden, list(n.calls))
        for n in g.nodes]
    edges = [messages.GraphEdgeInfo(e.source, e.target, e.operand, e.shape) for e in g.edges]
    clusters = [messages.GraphClusterInfo(c.id, c.computation, c.owner, c.attr, c.size,
                                          c.shown, c.expanded, c.parent) for c in g.clusters]
    return messages.GraphReply(g.computation, g.focus, nodes, edges, clusters, g.total,
                               g.omitted, g.message, g.hops, g.limit, page)


def graph_json(g: Graph, lines: LineIndex, page: str) -> dict:
    """The ``hlo/graph`` answer (:func:`graph_reply`) as JSON."""
    return messages.to_json(graph_reply(g, lines, page))


def picture_reply(pic: TextPicture, lines: LineIndex) -> dict:
    """``pic`` as the JSON of :class:`messages.TextPictureReply`: its lines, and
    LSP ranges instead of offsets for the lines that name an instruction."""
    targets = [messages.PictureTarget(i, to_range(lines, line.start, line.end))
               for i, line in enumerate(pic.lines) if line.start is not None]
    return messages.to_json(messages.TextPictureReply(
        pic.title, [line.text for line in pic.lines], targets, pic.cursor, pic.message))


def register(server: HloLanguageServer) -> None:
    """Register ``hlo/graph`` and ``hlo/memory`` on ``server``, each as its row of
    :data:`hlo_lsp.lsp.dispatch.ROUTES` says."""

    @route(server, messages.GRAPH)
    async def on_graph(ls: HloLanguageServer, params: Any) -> dict | None:
        """:class:`messages.GraphParams` -> :class:`messages.GraphReply` (with
        ``format: "text"``: :class:`messages.TextPictureReply`); null for no such
        computation or instruction."""
        parsed = messages.parse_params(messages.GraphParams, params)
        if parsed is None:
            return None
        uri, pos = parsed.text_document.uri, parsed.position
        at = None if pos is None else (pos.line, pos.character)
        snapshot = ls.host.snapshot()
        if parsed.format == "text":
            return await snapshot.graph_text(uri, parsed.computation, at, parsed.hops,
                                             picture_reply)
        profile = await ls.host.profiles.for_file(to_fs_path(uri) or "", ls.settings.profile)
        return await snapshot.graph(uri, parsed.computation, at, parsed.hops, parsed.limit,
                                    bool(parsed.page), graph_json, profile)

    @route(server, messages.MEMORY)
    async def on_memory(ls: HloLanguageServer, params: Any) -> dict | None:
        """``{textDocument}`` -> ``{page, peakBytes, peakStep, source}``: memory over
        the schedule from XLA's reports beside the dump, as the page ``hlo-lsp
        memory -o`` writes (with ``format: "text"``: the chart as text,
        :class:`messages.TextPictureReply`); null without reports."""
        parsed = messages.parse_params(messages.MemoryParams, params)
        if parsed is None:
            return None
        uri = parsed.text_document.uri
        if parsed.format == "text":
            return await ls.host.snapshot().memory_text(uri, picture_reply)
        got = await ls.host.snapshot().memory_page(uri)
        return None if got is None else {"page": got.html, "peakBytes": got.peak_bytes,
                                         "peakStep": got.peak_step, "source": got.source}
