"""The window of text an edit touched (:class:`EditWindow`), and the window of
a run of edits (:func:`compose`): plain offsets, what the line index
(:meth:`hlo_lsp.syntax.lines.LineIndex.edited`), the computation skeleton and
the chunked parse (:mod:`hlo_lsp.syntax.chunks`) need to reuse everything
outside it. Edits are applied in :mod:`hlo_lsp.syntax.edits`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True, slots=True)
class EditWindow:
    """Offsets (characters) of the region an edit replaced.

    ``old[:start] == new[:start]`` and ``old[old_end:] == new[new_end:]``;
    ``0 <= start <= old_end`` and ``start <= new_end``.
    """

    start: int
    old_end: int
    new_end: int

    @property
    def delta(self) -> int:
        """How far the text after the window moved (characters, may be < 0)."""
        return self.new_end - self.old_end

    def map(self, offset: int) -> int:
        """Where an offset of the old text lands in the new text: unchanged before
        the window, shifted after it, the window's new end inside it."""
        if offset <= self.start:
            return offset
        if offset >= self.old_end:
            return offset + self.delta
        return self.new_end

    def then(self, later: EditWindow) -> EditWindow:
        """The window of this edit followed by ``later`` (whose offsets are in the
        text this edit produced), relative to the text before this edit."""
        start = min(self.start, later.start)
        new_end = max(later.map(self.new_end), later.new_end)
        return EditWindow(start, new_end - self.delta - later.delta, new_end)


def compose(windows: Iterable[EditWindow | None]) -> EditWindow | None:
    """One window for a sequence of edits; None if any of them is unknown (a
    full-text replacement) or there are none."""
    out: EditWindow | None = None
    for i, w in enumerate(windows):
        if w is None:
            return None
        out = w if i == 0 else out.then(w)
    return out
