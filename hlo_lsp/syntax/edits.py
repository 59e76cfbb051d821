"""Text edits as the server receives them, and the window of text they touched.

An editor sends each keystroke as ``didChange`` with one or more incremental
changes (a range in the previous text and its replacement). Applying them by
splitting a multi-megabyte document into lines costs tens of milliseconds; here
each change is a slice and a concatenation, using the :class:`LineIndex` of the
text before it (kept up to date by :meth:`LineIndex.edited`).

Every change (or run of changes) is summarised by an :class:`EditWindow`: the
text before ``start`` is unchanged, and the text from ``old_end`` in the old
document equals the text from ``new_end`` in the new one. The window is what
the incremental steps need: the line index, the computation skeleton
(:mod:`hlo_lsp.syntax.chunks`) and the chunked parse reuse everything outside it. The window itself is
:mod:`hlo_lsp.syntax.window` (the line index needs it too), exported here as
well.
"""

from __future__ import annotations

from typing import Iterable

from hlo_lsp.syntax.lines import LineIndex
from hlo_lsp.syntax.window import EditWindow, compose


Change = tuple[tuple[int, int, int, int] | None, str]
"""One content change: ((start line, start character, end line, end character)
in the code units of the position encoding, or None for the whole text; the
replacement text)."""


def apply_changes(text: str, lines: LineIndex,
                  changes: Iterable[Change]) -> tuple[str, LineIndex, EditWindow | None]:
    """Apply LSP content changes in order to ``text`` (whose line index is
    ``lines``). Returns the new text, its line index and the window of all the
    changes together (None when one of them replaced the whole text).

    Positions past the end of a line or of the text clamp, as LSP requires.
    """
    window: EditWindow | None = None
    whole = False
    for rng, new in changes:
        if rng is None:
            text, lines, whole = new, LineIndex(new, lines.encoding), True
            continue
        start = lines.offset(rng[0], rng[1])
        end = max(start, lines.offset(rng[2], rng[3]))
        start, end, new = _join_surrogates(text, start, end, new)
        step = EditWindow(start, end, start + len(new))
        text = text[:start] + new + text[end:]
        lines = lines.edited(text, step)
        window = step if window is None else window.then(step)
    return text, lines, (None if whole else window)


def _is_high(c: str) -> bool:
    return "\ud800" <= c <= "\udbff"


def _is_low(c: str) -> bool:
    return "\udc00" <= c <= "\udfff"


def _join_surrogates(text: str, start: int, end: int, new: str) -> tuple[int, int, str]:
    r"""The replacement of ``text[start:end]`` by ``new`` as (start, end, new),
    widened by one character on a side where a lone surrogate of ``text`` meets
    its other half, which are then one character: the document is UTF-16 (LSP
    3.17), where ``\ud800`` then ``\udc80`` *is* U+10080, as it is in the text
    a client sends on didOpen (JSON's ``"\ud800\udc80"``). Joined, the server's
    copy after such an edit equals a fresh open of the same document."""
    lo = start - 1 if start and _is_high(text[start - 1]) else start
    hi = end + 1 if end < len(text) and _is_low(text[end]) else end
    if lo == start and hi == end:
        return start, end, new
    region = text[lo:start] + new + text[end:hi]
    return lo, hi, region.encode("utf-16-le", "surrogatepass").decode(
        "utf-16-le", "surrogatepass")


__all__ = ["Change", "EditWindow", "apply_changes", "compose"]
