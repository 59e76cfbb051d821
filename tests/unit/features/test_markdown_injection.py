"""Text from a dump is data in every Markdown answer (issue 41 item 3): hover,
the summary's tables and the comparison, rendered by a real CommonMark renderer
(markdown-it-py, the ``test`` extra), give no element (image, link, heading,
HTML, emphasis, list, table cell) that a hostile op_name, source_file,
custom_call_target or backend_config value wrote; their ESC, bidi and newline
characters are shown escaped. On main the hover of the issue's op_name renders
``<h1>``, ``<a href`` and ``<img src=https://attacker.invalid/b.png>``."""

from __future__ import annotations

import collections
import json
import re

import pytest

from hlo_lsp.features.compare import compare, format_markdown as compare_markdown
from hlo_lsp.features.hover import hover
from hlo_lsp.features.summary import format_markdown as summary_markdown
from hlo_lsp.model import markdown
from hlo_lsp.model.summary import kernel_summary
from hlo_lsp.model.visible import visible
from hlo_lsp.syntax.parser import parse

markdown_it = pytest.importorskip("markdown_it")

#: Strings an attacker shipping a dump would write (Markdown, HTML, entities,
#: autolinks, terminal control, bidi overrides, newlines, backtick runs, pipes).
HOSTILE = [
    "x` \n\n# H [l](https://attacker.invalid/a) ![t](https://attacker.invalid/b.png) `y",
    "<img src=https://attacker.invalid/p.png onerror=alert(1)><script>alert(1)</script>"
    "<a href='https://attacker.invalid'>x</a>",
    "\x1b]0;owned\x07\x1b[2J\x1b[31mred",
    "\u202eevil\u2066txt.exe\u2069",
    "```\n# fenced\n```\n<h2>after</h2>",
    "a|b| c\n\n| x | y |\n|---|---|\n| 1 | 2 |",
    "https://attacker.invalid/auto www.attacker.invalid <https://attacker.invalid/x>",
    "&lt;img src=x&gt; &#60;b&#62; &amp;",
    "*em* _u_ ~~s~~ **b** [ref]\n\n[ref]: https://attacker.invalid/r",
    "\\`\\*` `` ``` ```` `",
    " ` ",
    "\n- item\n1. one\n> quote\n===",
]

BENIGN = "plain"


def _hlo_string(s: str) -> str:
    """``s`` as an HLO quoted string (xla/hlo/parser/hlo_lexer.cc: C escapes)."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _module(s: str) -> str:
    config = _hlo_string('{"name":' + _json(s) + ',"kind":' + _json(s) + "}")
    return (
        "HloModule m, entry_computation_layout={(f32[2]{0})->f32[2]{0}}\n\n"
        "ENTRY %main (p: f32[2]) -> f32[2] {\n"
        "  %p = f32[2]{0} parameter(0)\n"
        f"  ROOT %cc = f32[2]{{0}} custom-call(f32[2]{{0}} %p), "
        f"custom_call_target={_hlo_string(s)}, backend_config={config}, "
        f"metadata={{op_type={_hlo_string(s)} op_name={_hlo_string(s)} "
        f"source_file={_hlo_string(s)} source_line=3}}\n"
        "}\n")


def _json(s: str) -> str:
    return json.dumps(s)


def _render(md: str) -> str:
    return markdown_it.MarkdownIt("commonmark").enable("table").enable("strikethrough") \
        .render(md)


def _elements(html: str) -> collections.Counter:
    return collections.Counter(re.findall(r"<([a-zA-Z][a-zA-Z0-9]*)", html))


def _answers(text: str, tmp_path) -> dict[str, str]:
    module = parse(text)
    at = {"name": text.index("%cc =") + 1, "metadata": text.index("op_name=")}
    out = {}
    for where, offset in at.items():
        result = hover(module, offset, source_dirs=[str(tmp_path)])
        assert result is not None, where
        out[f"hover at {where}"] = result.markdown
    summary = kernel_summary(module)
    out["summary"] = summary_markdown(summary)
    out["compare"] = compare_markdown(compare(summary, kernel_summary(parse(_module("reference")))),
                                      "old", "new")
    return out


@pytest.mark.parametrize("hostile", HOSTILE, ids=range(len(HOSTILE)))
def test_dump_text_renders_as_text_in_hover_summary_and_compare(hostile, tmp_path):
    benign = _answers(_module(BENIGN), tmp_path)
    answers = _answers(_module(hostile), tmp_path)
    for name, md in answers.items():
        html = _render(md)
        # Nothing but the benign answer's elements: no <img>, <a>, heading,
        # raw HTML, emphasis, list item or table cell came from the dump's text.
        assert _elements(html) == _elements(_render(benign[name])), (name, md, html)
        for tag in ("<img", "<a ", "<script", "<iframe", "<h1", "<h2"):
            assert tag not in html, (name, tag, html)
        # Control, bidi and line-separator characters only as visible escapes.
        assert all(ch.isprintable() or ch in "\n" for ch in md), (name, md)


def test_the_issues_op_name_is_shown_whole_in_one_code_span(tmp_path):
    hostile = HOSTILE[0]
    text = _module(hostile)
    md = hover(parse(text), text.index("op_name=")).markdown
    html = _render(md)
    assert "<code>x` \\n\\n# H [l](https://attacker.invalid/a) " \
           "![t](https://attacker.invalid/b.png) `y</code>" in html, html


def test_code_span_and_text_round_trip_through_commonmark():
    for s in HOSTILE + ["", "`", "``", " ", "a  b", "plain"]:
        want = visible(s)
        html = markdown_it.MarkdownIt("commonmark").renderInline(markdown.code(s))
        if want.strip(" "):
            assert html == "<code>" + _html_escape(want) + "</code>", (s, html)
        html = markdown_it.MarkdownIt("commonmark").renderInline(markdown.text(s))
        assert html == _html_escape(want), (s, html)


def test_a_pipe_in_a_table_cell_stays_in_its_cell():
    for s in ("a|b", "`|`", "\\|", "x\\\\|y"):
        row = f"| {markdown.cell(markdown.code(s))} | {markdown.cell(markdown.text(s))} |"
        html = _render("| a | b |\n|---|---|\n" + row + "\n")
        assert html.count("<td>") == 2, (s, row, html)


def _html_escape(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") \
        .replace('"', "&quot;")
