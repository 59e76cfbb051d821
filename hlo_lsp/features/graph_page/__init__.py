"""Self-contained HTML pages that ``hlo-lsp graph`` writes: the graph's DOT,
rendered in the browser by Graphviz compiled to WebAssembly
(``graphviz.js``: @hpcc-js/wasm-graphviz bundled by editors/graph-page/build.mjs,
inlined into the page, so it opens offline), with ``page.js`` (clicks, pan and
zoom, collapsible clusters), ``post.js`` (how a page tells its host where to go)
and ``page.css``.

Everything from the dump is escaped: text in HTML with :func:`html.escape`, the
data in a JSON ``<script>`` with ``<``, ``>`` and ``&`` as ``\\uXXXX``, names in
DOT by :func:`hlo_lsp.features.graph.dot_quote`. Should one escaping fail, the
page's Content-Security-Policy (:func:`csp_meta`, the first element of its
head) still runs no script and loads nothing the page did not bring: scripts
and styles only with the page's nonce, WebAssembly for Graphviz, images only
``data:``, no connections, frames, forms or fonts (issue 41 item 4).
"""

from __future__ import annotations

import html
import json
import os
import secrets
from importlib import resources

from hlo_lsp.features.graph import (KIND_COLORS, UNMEASURED_COLOR, Graph, dot_ids, heat_color,
                                   stub_edges, to_dot)
from hlo_lsp.model.units import format_seconds
from hlo_lsp.model.hlo import HloModule
from hlo_lsp.syntax.lines import LineIndex


def asset(name: str) -> str:
    """The text of one file of this directory (``graphviz.js``, ``page.js``, ``page.css``)."""
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def new_nonce() -> str:
    """A fresh nonce for one page's ``<script>`` and ``<style>`` elements (128
    bits from :mod:`secrets`, URL-safe base64: valid in a CSP source)."""
    return secrets.token_urlsafe(16)


def csp_meta(nonce: str) -> str:
    """The ``<meta http-equiv="Content-Security-Policy">`` of a page whose own
    scripts and styles carry ``nonce``: ``default-src 'none'``; scripts by nonce
    (and ``'wasm-unsafe-eval'``: Graphviz is WebAssembly compiled in the page);
    styles by nonce (no ``style`` attributes); images ``data:`` only; no base
    URL, form target or frame ancestor. VS Code's webviews and a browser
    opening the file apply it alike (CSP Level 3, https://www.w3.org/TR/CSP3/)."""
    policy = (f"default-src 'none'; script-src 'nonce-{nonce}' 'wasm-unsafe-eval'; "
              f"style-src 'nonce-{nonce}'; img-src data:; base-uri 'none'; "
              "form-action 'none'")
    return f'<meta http-equiv="Content-Security-Policy" content="{policy}">'


def script_json(data: object) -> str:
    """``data`` as JSON safe inside ``<script type="application/json">``: no
    ``<``, ``>`` or ``&`` characters (``</script>`` cannot end it early)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") \
        .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def page_title(module: HloModule, path: str, what: str) -> str:
    """``<module name>: <what>``, the module's file name standing in for a module
    without a name: the title of a page of ``path``."""
    return f"{module.name.name if module.name else os.path.basename(path)}: {what}"


def graph_title(module: HloModule, path: str, g: Graph, around: bool) -> str:
    """The title of the page of ``g``: the instruction it is ``around`` (a
    neighbourhood), else its computation."""
    return page_title(module, path, f"around {g.focus}" if around and g.focus
                      else g.computation)


def _range(lines: LineIndex, start: int, end: int) -> dict:
    (l1, c1), (l2, c2) = lines.position(start), lines.position(max(start, end))
    return {"start": {"line": l1, "character": c1}, "end": {"line": l2, "character": c2}}


def page_data(g: Graph, lines: LineIndex, file: str, uri: str) -> dict:
    """What ``page.js`` reads: the DOT, and per node its SVG id, name, kind and
    LSP range (0-based line, UTF-16 character) of its name (stubs, the copies of
    a hub drawn beside its users, with ``stub: true`` and the hub's name and
    range); clusters and edges by SVG id; ``focus`` the SVG id of the node the
    graph is around, ``root`` that of the computation's ROOT (where a graph too
    big to fit opens when it is around none), each None when not drawn."""
    node_ids, cluster_ids = dot_ids(g)
    by_id = {n.id: n for n in g.nodes}
    nodes = [{"svgId": node_ids[n.id], "id": n.id, "name": n.name, "kind": n.kind,
              "clusterSvgId": cluster_ids.get(n.cluster) if n.cluster else None,
              "range": _range(lines, n.name_start, n.name_end)} for n in g.nodes]
    for i in sorted(stub_edges(g)):  # a hub drawn beside a user: a click goes to the hub
        hub, user = by_id[g.edges[i].source], by_id[g.edges[i].target]
        nodes.append({"svgId": f"s{i}", "id": hub.id, "name": hub.name, "kind": hub.kind,
                      "stub": True,
                      "clusterSvgId": cluster_ids.get(user.cluster) if user.cluster else None,
                      "range": _range(lines, hub.name_start, hub.name_end)})
    return {
        "dot": to_dot(g), "file": file, "uri": uri, "message": g.message,
        "focus": node_ids.get(g.focus) if g.focus else None,
        "root": next((node_ids[n.id] for n in g.nodes if n.is_root and n.cluster is None),
                     None),
        "nodes": nodes,
        "clusters": [{"svgId": cluster_ids[c.id], "computation": c.computation,
                      "parentSvgId": cluster_ids.get(c.parent) if c.parent else None}
                     for c in g.clusters],
        "edges": [{"svgId": f"e{i}", "source": node_ids[e.source],
                   "target": node_ids[e.target]} for i, e in enumerate(g.edges)],
    }


def graph_html(g: Graph, lines: LineIndex, file: str, uri: str, title: str,
               nonce: str | None = None) -> str:
    """The page for ``g`` (see the module docstring); ``file`` and ``uri`` name
    the HLO file a click refers to, ``title`` heads the page. ``nonce``: of its
    scripts and styles (:func:`csp_meta`), fresh (:func:`new_nonce`) when None."""
    data = page_data(g, lines, file, uri)
    nonce = nonce or new_nonce()
    # Colours by class: a CSP without 'unsafe-inline' drops style attributes.
    legend = "".join(f'<span class="kind{i}">{html.escape(kind)}</span>'
                     for i, kind in enumerate(KIND_COLORS))
    legend_css = "".join(f".legend .kind{i}{{background:{color}}}"
                         for i, color in enumerate(KIND_COLORS.values()))
    if g.measured_max_us is not None:  # shaded by measured self time, not by kind
        top = format_seconds(g.measured_max_us * 1e-6)
        legend = ('measured self time: <span class="heat0">0</span>'
                  f'<span class="heat1">{html.escape(top)}</span>'
                  '<span class="heat2">not measured</span>')
        legend_css = "".join(f".legend .heat{i}{{background:{color}}}" for i, color in enumerate(
            (heat_color(0, 1), heat_color(1, 1), UNMEASURED_COLOR)))
        legend_css += ".legend .heat1{color:#ffffff}"
    counts = f"{len(g.nodes)} nodes, {len(g.edges)} edges"
    note = f'<div class="note" id="omitted">{html.escape(g.message)}</div>' if g.message else ""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"{csp_meta(nonce)}<title>{html.escape(title)}</title>"
        f"<style nonce=\"{nonce}\">{asset('page.css')}{legend_css}</style></head>\n<body>\n"
        f"<header><h1>{html.escape(title)}</h1>"
        f"<div>{html.escape(counts)} · <span class=\"legend\">{legend}</span></div>{note}"
        "<div id=\"selected\">click a node to go to its instruction</div></header>\n"
        "<div id=\"graph\"></div><div id=\"error\"></div>\n"
        f"<script type=\"application/json\" id=\"hlo-graph-data\">{script_json(data)}</script>\n"
        f"<script nonce=\"{nonce}\">{asset('graphviz.js')}</script>\n"
        f"<script nonce=\"{nonce}\">{asset('post.js')}</script>\n"
        f"<script nonce=\"{nonce}\">{asset('page.js')}</script>\n</body></html>\n")


__all__ = ["asset", "csp_meta", "graph_html", "new_nonce", "graph_title", "page_data", "page_title", "script_json"]
