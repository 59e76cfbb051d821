"""Split files: several modules in one file, separated by ``// -----`` lines.

XLA's tests and many bug reports are written so; XLA's tools parse each part
alone (``--split_input_file`` of xla/tools/hlo_opt and run_hlo_module, after
MLIR's ``mlir-opt``). The parser (:func:`hlo_lsp.syntax.parser.parse`) and
XLA's verdict (:meth:`hlo_lsp.syntax.xla.XlaOracle.check`) read them part by
part through the functions here.
"""

from __future__ import annotations

import re

__all__ = ["SPLIT_MARKER", "blank_outside", "blanked", "split_parts"]

#: The separator line.
SPLIT_MARKER = re.compile(r"^// -----[^\n]*", re.MULTILINE)


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


def blanked(text: str) -> str:
    """``text`` with every character but ``\\n`` turned into a space (the
    offsets and lines of ``text``, nothing on them)."""
    return "\n".join(" " * len(line) for line in text.split("\n"))


def blank_outside(text: str, start: int, end: int, blank: str | None = None) -> str:
    """``text`` with everything outside ``[start, end)`` turned into spaces, line
    breaks kept: one part, at the offsets and on the lines it has in the file.
    ``blank``: :func:`blanked` of ``text``, made once by a caller that blanks
    around each of many parts (a file of 135 parts and 172 KB blanked each part's
    surroundings anew in 0.4 s, made of one blank copy in milliseconds)."""
    if blank is None:
        blank = blanked(text)
    return blank[:start] + text[start:end] + blank[end:]
