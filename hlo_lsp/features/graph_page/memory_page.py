"""The self-contained HTML page of ``hlo-lsp memory``: bytes live over the
schedule as an inline SVG step chart (no script library), the peak marked, and
the buffers alive at the peak as a table. Every name from the dump is escaped
with :func:`html.escape`. ``data-*`` attributes carry the figures for tools
and tests: ``#peak[data-bytes]``, ``#peak[data-step]``, each ``tr.buffer``'s
``data-bytes``."""

from __future__ import annotations

import html
import json

from hlo_lsp.features.graph_page import asset, csp_meta, new_nonce, script_json
from hlo_lsp.features.memory import MemoryTimeline
from hlo_lsp.model.shapes import format_bytes, format_integer
from hlo_lsp.syntax.lines import LineIndex

WIDTH, HEIGHT, PAD_LEFT, PAD_BOTTOM, PAD_TOP = 960, 320, 90, 36, 16
#: What the page shows, after the module's name in its title.
MEMORY_TITLE = "memory over the schedule"


def _chart(t: MemoryTimeline) -> str:
    n = max(len(t.live), 1)
    top = max(t.live or [0]) or 1
    w = (WIDTH - PAD_LEFT - 10) / n
    plot_h = HEIGHT - PAD_BOTTOM - PAD_TOP

    def y(v: int) -> float:
        return PAD_TOP + plot_h * (1 - v / top)

    parts = [f'<svg id="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
             f'role="img" aria-label="bytes live per step">']
    for k in range(5):  # grid and y labels
        v = top * k / 4
        parts.append(f'<line x1="{PAD_LEFT}" x2="{WIDTH - 10}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                     'stroke="#e9ecef"/>')
        parts.append(f'<text x="{PAD_LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end" '
                     f'font-size="10">{html.escape(format_bytes(int(v)).split(" (")[-1].rstrip(")"))}</text>')
    for step, bytes_ in enumerate(t.live):
        x = PAD_LEFT + step * w
        name = t.steps[step] if step < len(t.steps) and t.steps[step] else "end"
        peak = step == t.peak_step
        parts.append(
            f'<rect class="step{" peak" if peak else ""}" data-step="{step}" data-bytes="{bytes_}" '
            f'x="{x:.2f}" y="{y(bytes_):.2f}" width="{max(w - (1 if w > 3 else 0), 0.5):.2f}" '
            f'height="{max(PAD_TOP + plot_h - y(bytes_), 0):.2f}" '
            f'fill="{"#e03131" if peak else "#4dabf7"}"><title>step {step}: '
            f'{html.escape(name)}\n{html.escape(format_bytes(bytes_))}</title></rect>')
    px = PAD_LEFT + t.peak_step * w + w / 2
    parts.append(f'<text x="{px:.1f}" y="{max(y(t.peak_bytes) - 4, 10):.1f}" text-anchor="middle" '
                 f'font-size="11" fill="#c92a2a">peak {html.escape(format_bytes(t.peak_bytes))}</text>')
    parts.append(f'<text x="{PAD_LEFT}" y="{HEIGHT - 8}" font-size="11">step 0</text>')
    parts.append(f'<text x="{WIDTH - 10}" y="{HEIGHT - 8}" font-size="11" text-anchor="end">'
                 f'step {len(t.live) - 1} (end)</text>')
    parts.append("</svg>")
    return "".join(parts)


def memory_html(t: MemoryTimeline, title: str, file: str, uri: str | None = None,
                lines: LineIndex | None = None, nonce: str | None = None) -> str:
    """The page for timeline ``t`` of the HLO ``file`` (a name shown, not read).
    With ``uri`` and ``lines`` (the line index of that file's text), a click on
    a buffer's row posts ``{type: "hlo-graph-reveal", name, uri, range}`` (its
    defining instruction's start) to the page's host, as the graph page does.
    ``nonce``: of its scripts and style (:func:`hlo_lsp.features.graph_page.csp_meta`),
    fresh when None."""
    nonce = nonce or new_nonce()
    name = t.steps[t.peak_step] if t.peak_step < len(t.steps) and t.steps[t.peak_step] \
        else "end"
    rows = []
    for b in t.peak_buffers:
        where = f"{b.allocation} +{b.offset}" if b.allocation is not None else b.size_source
        at = ""
        if lines is not None and b.offset_in_text is not None:
            line, character = lines.position(b.offset_in_text)
            pos = {"line": line, "character": character}
            at = f' data-range="{html.escape(json.dumps({"start": pos, "end": pos}))}"'
        rows.append(
            f'<tr class="buffer" data-bytes="{b.size}" data-name="{html.escape(b.instruction)}"{at}>'
            f"<td class=num>{format_integer(b.size)}</td><td><code>{html.escape(b.key)}</code></td>"
            f"<td><code>{html.escape(b.shape)}</code></td><td>{b.start}-{b.end}</td>"
            f"<td>{html.escape(where)}</td></tr>")
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in t.notes)
    report = "" if t.report_peak_bytes is None else (
        f' · the report\'s peak: <span id="report-peak" data-bytes="{t.report_peak_bytes}">'
        f"{html.escape(format_bytes(t.report_peak_bytes))}</span>")
    estimate = " (estimate)" if t.source == "estimate" else ""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"{csp_meta(nonce)}<title>{html.escape(title)}</title><style nonce=\"{nonce}\">"
        "body{font:13px/1.4 system-ui,sans-serif;margin:0;padding:12px;color:#212529;background:#fff}"
        "h1{font-size:15px;margin:0 0 4px}#chart{width:100%;max-width:960px;display:block}"
        "rect.step:hover{fill:#1864ab}table{border-collapse:collapse;margin-top:8px}"
        "td,th{padding:2px 8px;border-bottom:1px solid #e9ecef;text-align:left}"
        "td.num{text-align:right;font-variant-numeric:tabular-nums}.notes{color:#495057}"
        "tr.buffer[data-range]{cursor:pointer}tr.buffer[data-range]:hover{background:#e7f5ff}"
        "h2{font-size:14px}"
        "</style></head>\n<body>\n"
        f"<h1>{html.escape(title)}</h1>"
        f'<div>peak{estimate}: <strong id="peak" data-bytes="{t.peak_bytes}" '
        f'data-step="{t.peak_step}">{html.escape(format_bytes(t.peak_bytes))}</strong> '
        f"at step {t.peak_step} of {len(t.steps)} (<code>{html.escape(name)}</code>){report}"
        f" · {html.escape(file)}</div>\n{_chart(t)}\n"
        f"<ul class=notes>{notes}</ul>"
        f"<h2>{len(t.peak_buffers)} buffers live at the peak</h2>"
        "<table><tr><th>bytes</th><th>value</th><th>shape</th><th>live steps</th>"
        f"<th>allocation +offset</th></tr>{''.join(rows)}</table>\n"
        f"<script nonce=\"{nonce}\">{asset('post.js')}</script>\n"
        f"<script nonce=\"{nonce}\">{_REVEAL_SCRIPT % script_json(uri or '')}</script>\n"
        "</body></html>\n")


#: A click on a buffer row posts where its instruction is (see :func:`memory_html`).
_REVEAL_SCRIPT = """(function () {
  const uri = %s;
  for (const row of document.querySelectorAll("tr.buffer[data-range]")) {
    row.addEventListener("click", () => hloPost({ type: "hlo-graph-reveal",
      name: row.dataset.name, uri, range: JSON.parse(row.dataset.range) }));
  }
})();"""


__all__ = ["MEMORY_TITLE", "memory_html"]
