r"""Offsets <-> LSP positions for large documents; the one definition of lines.

LSP positions are 0-based lines and columns counted in the code units of the
negotiated position encoding: "utf-16" (the LSP default), "utf-8" or "utf-32".
A LineIndex is built once per document version (one pass over the text) so each
conversion is a binary search plus, on non-ASCII lines only, an encoding of the
line's prefix.

Lines end as the LSP specification says (3.17, "Text Documents"): at ``\n``,
``\r\n`` or ``\r``. The terminator is not part of the line: a column past the
end of a line means the line's end, before its terminator, so an edit that
ends "past the end of the line" keeps the ``\r\n``. The static helpers
(:meth:`LineIndex.bounds`, :meth:`LineIndex.split`) answer with the same rules
without building an index, for one lookup or one pass.
"""

from __future__ import annotations

import bisect
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from hlo_lsp.syntax.window import EditWindow


#: A line terminator (LSP 3.17): ``\r\n`` is one terminator, not two.
_BREAK = re.compile(r"\r\n?|\n")
#: ``\n`` alone, for text without ``\r`` (a regex search for one character is
#: faster than a loop of ``str.find``: docs/benchmarks.md).
_NEWLINE = re.compile("\n")


def _starts_after_breaks(text: str, start: int, end: int, cr: bool) -> list[int]:
    r"""The offsets just after every line terminator that begins in
    ``text[start:end]`` (a ``\r\n`` that begins there counts whole); ``cr``:
    whether ``text`` may hold a ``\r`` (else only ``\n`` is searched for)."""
    if not cr:
        return [m.end() for m in _NEWLINE.finditer(text, start, end)]
    return [m.end() for m in _BREAK.finditer(text, start, min(len(text), end + 1))
            if m.start() < end]


class LineIndex:
    """Line start offsets of ``text``; converts between offsets and positions."""

    __slots__ = ("text", "starts", "encoding", "cr", "ascii")

    def __init__(self, text: str, encoding: str = "utf-16") -> None:
        self.text = text
        self.encoding = encoding
        self.cr = "\r" in text   # False: every line ends at "\n" (the fast paths)
        # True: a column is a character count in every encoding, without looking
        # at the line (lines of 40,000 characters are common in dumps)
        self.ascii = text.isascii()
        self.starts = [0, *_starts_after_breaks(text, 0, len(text), self.cr)]

    def edited(self, text: str, window: EditWindow) -> LineIndex:
        """The line index of ``text``, the result of an edit of this index's text
        described by ``window``: line starts before the window are kept, those
        after it shifted, and only the window itself is searched for line breaks
        (O(window + lines) instead of a pass over the whole text)."""
        starts = self.starts
        delta = window.delta
        index = LineIndex.__new__(LineIndex)
        index.text = text
        index.encoding = self.encoding
        index.cr = self.cr or "\r" in text[window.start:window.new_end]
        index.ascii = self.ascii and text[window.start:window.new_end].isascii()
        if not index.cr:
            keep = bisect.bisect_right(starts, window.start)
            after = bisect.bisect_right(starts, window.old_end)
            out = starts[:keep]
            out.extend(_starts_after_breaks(text, window.start, window.new_end, False))
        else:
            # A "\r\n" may straddle either end of the window: the breaks that end
            # within one character of it are found again.
            lo, hi = window.start - 1, window.new_end + 1
            out = starts[:bisect.bisect_right(starts, lo)] or [0]
            out.extend(q for m in _BREAK.finditer(text, max(0, window.start - 2),
                                                   min(len(text), window.new_end + 2))
                       if lo < (q := m.end()) <= hi)
            after = bisect.bisect_right(starts, window.old_end + 1)
        out.extend([s + delta for s in starts[after:]] if delta else starts[after:])
        index.starts = out
        return index

    @property
    def line_count(self) -> int:
        """Number of lines (a text ending with ``\n`` has an empty last line)."""
        return len(self.starts)

    def line_of(self, offset: int) -> int:
        """0-based line of the character ``offset`` (not clamped)."""
        return bisect.bisect_right(self.starts, offset) - 1

    def line_col(self, offset: int) -> tuple[int, int]:
        """``offset`` -> (0-based line, column in characters), whatever the
        encoding: the positions of the workspace index and report links."""
        line = bisect.bisect_right(self.starts, offset) - 1
        return line, offset - self.starts[line]

    def _end(self, line: int) -> int:
        """The offset where ``line``'s text ends, before its terminator."""
        starts = self.starts
        if line + 1 >= len(starts):
            return len(self.text)
        end = starts[line + 1] - 1
        if self.cr and end > starts[line] and self.text[end - 1:end + 1] == "\r\n":
            end -= 1
        return end

    def spans(self) -> list[tuple[int, int]]:
        """``(start, end)`` of every line, ``end`` at its terminator (excluded)."""
        return [(start, self._end(line)) for line, start in enumerate(self.starts)]

    @staticmethod
    def bounds(text: str, offset: int) -> tuple[int, int]:
        """``(start, end)`` of the line of ``text`` holding ``offset``, found by
        searching (no index): ``end`` is the offset of its terminator or ``len(text)``."""
        if 0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n":
            offset -= 1  # inside a "\r\n": the line it ends
        start = text.rfind("\n", 0, offset) + 1
        # a lone "\r" after that "\n" (searched back to it only, and forward to
        # the first break only: a call costs a line, never the document)
        start = max(start, text.rfind("\r", start, offset) + 1)
        m = _BREAK.search(text, offset)
        return start, (m.start() if m else len(text))

    @staticmethod
    def split(text: str) -> list[str]:
        r"""The lines of ``text`` as a LineIndex numbers them (at ``\n``, ``\r\n``
        and ``\r``; unlike ``str.splitlines``, not at form feeds or U+2028)."""
        return _BREAK.split(text) if "\r" in text else text.split("\n")

    def _units(self, segment: str) -> int:
        if self.encoding == "utf-8":
            return len(segment.encode("utf-8", "surrogatepass"))
        if self.encoding == "utf-32":
            return len(segment)
        return len(segment.encode("utf-16-le", "surrogatepass")) // 2

    def _char_units(self, ch: str) -> int:
        if self.encoding == "utf-8":
            return len(ch.encode("utf-8", "surrogatepass"))
        if self.encoding == "utf-32":
            return 1
        return 2 if ord(ch) > 0xFFFF else 1

    def position(self, offset: int) -> tuple[int, int]:
        """``offset`` -> (line, column in code units). Offsets past the end clamp;
        one inside a ``\r\n`` is the end of the line it ends."""
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self.starts, offset) - 1
        start = self.starts[line]
        if self.cr and start < offset < len(self.text) and \
                self.text[offset - 1] == "\r" and self.text[offset] == "\n":
            offset -= 1
        if self.ascii:
            return line, offset - start
        segment = self.text[start:offset]
        if segment.isascii():
            return line, offset - start
        return line, self._units(segment)

    def offset(self, line: int, character: int) -> int:
        """(line, column in code units) -> offset, clamped to the line and the text."""
        if line < 0:
            return 0
        if line >= len(self.starts):
            return len(self.text)
        start = self.starts[line]
        end = self._end(line)
        if self.ascii:
            return start + max(0, min(character, end - start))
        text = self.text[start:end]
        if text.isascii():
            return start + max(0, min(character, len(text)))
        units = 0
        for i, ch in enumerate(text):
            if units >= character:
                return start + i
            units += self._char_units(ch)
        return end

    def line_text(self, line: int) -> str:
        """The text of 0-based ``line`` without its terminator. Raises IndexError
        for a line past the end."""
        return self.text[self.starts[line]:self._end(line)]
