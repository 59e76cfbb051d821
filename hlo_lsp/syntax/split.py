"""Split files: several modules in one file, separated by ``// -----`` lines.

XLA's tests and many bug reports are written so; XLA's tools parse each part
alone (``--split_input_file`` of xla/tools/hlo_opt and run_hlo_module, after
MLIR's ``mlir-opt``). The parser (:func:`hlo_lsp.syntax.parser.parse`) and
XLA's verdict (:meth:`hlo_lsp.syntax.xla.XlaOracle.check`) read them part by
part through the two functions here.
"""

from __future__ import annotations

import re

__all__ = ["SPLIT_MARKER", "blank_outside", "split_parts"]

#: The separator line.
SPLIT_MARKER = re.compile(r"^// -----[^\n]*", re.MULTILINE)
_NOT_NEWLINE = re.compile(r"[^\n]+")


def split_parts(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` offsets of the modules of a split file, the
    separator lines excluded; ``[]`` when ``text`` has no ``// -----`` line."""
    bounds = []
    start = 0
    for m in SPLIT_MARKER.finditer(text):
        bounds.append((start, m.start()))
        start = m.end()
    if not bounds:
        return []
    bounds.append((start, len(text)))
    return bounds


def blank_outside(text: str, start: int, end: int) -> str:
    """``text`` with everything outside ``[start, end)`` turned into spaces, line
    breaks kept: one part, at the offsets and on the lines it has in the file."""
    def blank(m: re.Match) -> str:
        return " " * len(m.group())
    return _NOT_NEWLINE.sub(blank, text[:start]) + text[start:end] + _NOT_NEWLINE.sub(
        blank, text[end:])
