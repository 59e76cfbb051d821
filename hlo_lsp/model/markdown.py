"""Text from a dump written into Markdown as data: the one answer to "how does
dump text go into a hover, a message or a Markdown report" (issue 41 item 3).

Three writers, pure and standard library only, following CommonMark 0.31
(https://spec.commonmark.org/0.31.2/):

- :func:`code`: an inline code span the text cannot close (section 6.1: a
  backtick string longer than any backtick run inside, and a space on each side,
  one of which the renderer strips), e.g. ``code("a`b") == "`` a`b ``"``;
- :func:`fence`: a fenced code block the text cannot close (section 4.5: a fence
  of backticks longer than any run of backticks in the text);
- :func:`text`: plain inline text in which no character starts Markdown: the
  ASCII punctuation CommonMark lets a backslash escape (section 2.4) that
  starts emphasis, links, images, headings, lists, tables, autolinks, HTML and
  code is backslash-escaped, ``&`` is written ``&amp;`` (no entity reference).

All three first write every non-printable character (newlines, ESC, the
bidirectional overrides) as its Python escape with
:func:`hlo_lsp.model.visible.visible`, so a dump string stays on one line and
shows what it holds. In a GitHub-flavoured table cell, :func:`cell` also
escapes ``|``, which splits a cell even inside a code span.
"""

from __future__ import annotations

import re

from hlo_lsp.model.visible import visible

#: CommonMark's backslash-escapable punctuation that can start markup inline or
#: at the start of a line, and ``:`` (a bare ``https://`` is a link to renderers
#: with autolinking, GitHub's and VS Code's among them).
_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~:=\"'$^])")
_BACKTICKS = re.compile("`+")


def _longest_backtick_run(s: str) -> int:
    return max(map(len, _BACKTICKS.findall(s)), default=0)


def code(s: str) -> str:
    """``s`` as one Markdown code span that nothing in ``s`` can end: control,
    line and bidi characters made visible (``\\n``, ``\\x1b``, ``\\u202e``), a
    backtick fence one longer than the longest backtick run in ``s``, and a space
    inside each side when ``s`` starts or ends with a backtick or a space (a
    renderer strips one space from each side). ``code("") == "` `"``."""
    shown = visible(s)
    if not shown:
        return "` `"
    ticks = "`" * (_longest_backtick_run(shown) + 1)
    if shown[0] in "` " or shown[-1] in "` ":
        return f"{ticks} {shown} {ticks}"
    return f"{ticks}{shown}{ticks}"


def fence(s: str, lang: str = "") -> str:
    """``s`` (may span lines) as a fenced code block with info string ``lang``
    that no line of ``s`` can close: a fence of backticks one longer than the
    longest backtick run in ``s`` (at least three). Newlines and tabs are kept;
    other control and bidi characters are made visible."""
    shown = visible(s, keep="\n\t")
    ticks = "`" * max(3, _longest_backtick_run(shown) + 1)
    return f"{ticks}{visible(lang).replace('`', '')}\n{shown}\n{ticks}"


def text(s: str) -> str:
    """``s`` as Markdown that renders as exactly these characters: control
    characters made visible, CommonMark punctuation backslash-escaped (no
    emphasis, link, image, heading, list, HTML, autolink or code span starts in
    it), ``&`` written ``&amp;``."""
    return _PUNCTUATION.sub(r"\\\1", visible(s)).replace("&", "&amp;")


def cell(markdown: str) -> str:
    """A Markdown fragment (already escaped) made safe for one cell of a
    GitHub-flavoured table: each ``|`` not already escaped is written ``\\|``
    (a table splits cells at ``|`` even inside code spans; its ``\\|`` is a
    ``|`` there)."""
    return re.sub(r"(?<!\\)((?:\\\\)*)\|", r"\1\\|", markdown)


__all__ = ["code", "fence", "text", "cell"]
