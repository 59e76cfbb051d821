"""Text from a dump written into Markdown as data: the one answer to "how does
dump text go into a hover, a message or a Markdown report" (issue 41 item 3).

Three writers, pure and standard library only, following CommonMark 0.31
(https://spec.commonmark.org/0.31.2/):

- :func:`code`: an inline code span the text cannot close (section 6.1: a
  backtick string longer than any backtick run inside, and a space on each side,
  one of which the renderer strips), e.g. ``code("a`b") == "`` a`b ``"``;
- :func:`fence`: a fenced code block the text cannot close (section 4.5: a fence
  of backticks longer than any run of backticks in the text);
- :func:`text`: plain inline text in which no character starts Markdown: each
  character that would start emphasis, a link, an image, an autolink (GitHub's
  bare ``https://`` and ``www.`` too), raw HTML, code, a table cell or, first on
  the line, a heading, list, quote or rule is backslash-escaped (section 2.4),
  ``&`` is written ``&amp;`` (no entity reference); punctuation that is text
  where it stands is left alone, so names like ``KERNEL_STRATEGY_ONE_SHOT``
  read the same in a client that shows the Markdown source (Neovim 0.7).

All three first write every non-printable character (newlines, ESC, the
bidirectional overrides) as its Python escape with
:func:`hlo_lsp.model.visible.visible`, so a dump string stays on one line and
shows what it holds. In a GitHub-flavoured table cell, :func:`cell` also
escapes ``|``, which splits a cell even inside a code span.
"""

from __future__ import annotations

import re

from hlo_lsp.model.visible import visible

#: Characters that start inline markup wherever they are (CommonMark 6.x and
#: GitHub's strikethrough, tables): backslash, code, emphasis, links and images,
#: autolinks and raw HTML, tables; ``&`` (entity references) is written ``&amp;``.
_ALWAYS = re.compile(r"([\\`*\[\]!<>|~])")
#: ``_`` opens or closes emphasis only when not between two letters or digits
#: (CommonMark 6.2, left- and right-flanking runs).
_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
#: Bare autolinks of GitHub-flavoured renderers (VS Code's among them):
#: ``scheme://`` and ``www.``.
_AUTOLINK = re.compile(r"(?<=[A-Za-z]):(?=//)|(?<=www)\.", re.IGNORECASE)
#: What makes a block of a line's first characters: a heading, a list item, a
#: block quote, a thematic break or setext underline, an ordered list item.
_LINE_START = re.compile(r"^(?:[#+\-=]|\d+(?=[.)]))")
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
    """``s`` as Markdown that renders as exactly these characters, on one line:
    control characters made visible; backslash-escaped (CommonMark 2.4) every
    character that starts inline markup (`` \\ ` * [ ] ! < > | ~ ``), ``_`` where it
    could delimit emphasis, the ``:`` of ``scheme://`` and the ``.`` of ``www.``
    (GitHub-flavoured bare links), and a first character that would start a
    heading, list, quote or rule; ``&`` written ``&amp;``. Characters that are
    text wherever they stand (``.``, ``-``, ``(``, ``{`` ... mid-line) stay as they
    are, so ``KERNEL_STRATEGY_ONE_SHOT (block_k)`` is unchanged."""
    out = _ALWAYS.sub(r"\\\1", visible(s))
    out = _UNDERSCORE.sub(r"\\_", out)
    out = _AUTOLINK.sub(lambda m: "\\" + m.group(0), out)
    out = out.replace("&", "&amp;")
    m = _LINE_START.match(out)
    if m:
        out = out[:m.end()] + "\\" + out[m.end():] if m.group(0)[0].isdigit() \
            else "\\" + out
    return out


def cell(markdown: str) -> str:
    """A Markdown fragment (already escaped) made safe for one cell of a
    GitHub-flavoured table: each ``|`` not already escaped is written ``\\|``
    (a table splits cells at ``|`` even inside code spans; its ``\\|`` is a
    ``|`` there)."""
    return re.sub(r"(?<!\\)((?:\\\\)*)\|", r"\1\\|", markdown)


__all__ = ["code", "fence", "text", "cell"]
