"""Offsets <-> LSP positions for large documents; the one definition of lines.

LSP positions are 0-based lines and columns counted in the code units of the
negotiated position encoding: "utf-16" (the LSP default), "utf-8" or "utf-32".
A LineIndex is built once per document version (one pass over the text) so each
conversion is a binary search plus, on non-ASCII lines only, an encoding of the
line's prefix.

A line ends at ``\n`` (a ``\r`` before it stays part of the line, as LSP
clients count columns); line ``i`` starts just after the ``i``-th ``\n``. The
static helpers (:meth:`LineIndex.bounds`, :meth:`LineIndex.split`) answer with
the same convention without building an index, for one lookup or one pass.
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from hlo_lsp.syntax.edits import EditWindow


class LineIndex:
    """Line start offsets of ``text``; converts between offsets and positions."""

    __slots__ = ("text", "starts", "encoding")

    def __init__(self, text: str, encoding: str = "utf-16") -> None:
        self.text = text
        self.encoding = encoding
        starts = [0]
        find = text.find
        pos = find("\n")
        while pos >= 0:
            starts.append(pos + 1)
            pos = find("\n", pos + 1)
        self.starts = starts

    def edited(self, text: str, window: EditWindow) -> LineIndex:
        """The line index of ``text``, the result of an edit of this index's text
        described by ``window``: line starts before the window are kept, those
        after it shifted, and only the window itself is searched for newlines
        (O(window + lines) instead of a pass over the whole text)."""
        starts = self.starts
        keep = bisect.bisect_right(starts, window.start)
        after = bisect.bisect_right(starts, window.old_end)
        out = starts[:keep]
        find = text.find
        pos = find("\n", window.start, window.new_end)
        while pos >= 0:
            out.append(pos + 1)
            pos = find("\n", pos + 1, window.new_end)
        delta = window.delta
        out.extend([s + delta for s in starts[after:]] if delta else starts[after:])
        index = LineIndex.__new__(LineIndex)
        index.text = text
        index.encoding = self.encoding
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

    def spans(self) -> list[tuple[int, int]]:
        """``(start, end)`` of every line, ``end`` at its ``\n`` (excluded)."""
        starts = self.starts
        ends = [s - 1 for s in starts[1:]]
        ends.append(len(self.text))
        return list(zip(starts, ends))

    @staticmethod
    def bounds(text: str, offset: int) -> tuple[int, int]:
        """``(start, end)`` of the line of ``text`` holding ``offset``, found by
        searching (no index): ``end`` is the offset of its ``\n`` or ``len(text)``."""
        start = text.rfind("\n", 0, offset) + 1
        end = text.find("\n", offset)
        return start, (len(text) if end < 0 else end)

    @staticmethod
    def split(text: str) -> list[str]:
        """The lines of ``text`` as a LineIndex numbers them (at ``\n`` only, unlike
        ``str.splitlines``), each without a trailing ``\r``."""
        lines = text.split("\n")
        if "\r" in text:
            lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
        return lines

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
        """``offset`` -> (line, column in code units). Offsets past the end clamp."""
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self.starts, offset) - 1
        start = self.starts[line]
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
        end = self.starts[line + 1] - 1 if line + 1 < len(self.starts) else len(self.text)
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
        """The text of 0-based ``line`` without its ``\\n`` (a ``\\r`` stays).
        Raises IndexError for a line past the end."""
        start = self.starts[line]
        end = self.starts[line + 1] - 1 if line + 1 < len(self.starts) else len(self.text)
        return self.text[start:end]
