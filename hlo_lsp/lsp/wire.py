"""Answers of thousands of items, encoded as JSON in one step.

lsprotocol's types type every answer the server gives. For the answers that cover
a whole document (the outline, inlay hints, semantic tokens, inline regions) one
attrs object per item, then cattrs unstructuring them, is work the event loop
does not need: here the dicts and ``json.dumps`` cost less than the lsprotocol
objects and cattrs did alone, and run off the event loop (docs/benchmarks.md).

The functions here build the same JSON values from the features' plain data,
with the field names of the LSP 3.17 specification (``tests/unit/lsp/test_wire.py``
structures each one with lsprotocol's converter and compares it with the
lsprotocol object it stands for), and :func:`encode` turns them into an
:class:`Encoded` result that :class:`hlo_lsp.lsp.pygls_adapter.HloProtocol` writes
into the response as it is.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from typing import Any, Callable, Iterable, Iterator

import attrs

from lsprotocol import types

from hlo_lsp.features.folding import Fold
from hlo_lsp.features.symbols import Symbol
from hlo_lsp.lsp.convert import SYMBOL_KINDS
from hlo_lsp.syntax.lines import LineIndex

_SYMBOL_KINDS = {k: int(v) for k, v in SYMBOL_KINDS.items()}
#: The features' inlay hint kinds as LSP ``InlayHintKind`` numbers.
INLAY_HINT_KINDS = {"type": int(types.InlayHintKind.Type),
                    "parameter": int(types.InlayHintKind.Parameter)}


@attrs.frozen
class Encoded:
    """A request's result already encoded as JSON text (ASCII: ``json.dumps``
    escapes everything else, lone surrogates included)."""

    text: str


def encode(value: Any) -> Encoded:
    """``value`` (JSON data: dicts, lists, strings, numbers, None) as an
    :class:`Encoded` result."""
    return Encoded(json.dumps(value, separators=(",", ":"), check_circular=False))


def converter(lines: LineIndex) -> Callable[[int], dict]:
    r"""``offset -> `` the LSP ``Position`` of that character in ``lines``
    (:meth:`LineIndex.position`), for converting many offsets of one document.
    For ASCII text that ends its lines at ``\n`` only, where a column is an
    offset, the conversion is one binary search over local names. A whole-file
    answer converts its offsets together, with :func:`positions`."""
    if lines.ascii and not lines.cr:
        starts, size = lines.starts, len(lines.text)

        def fast(offset: int) -> dict:
            if offset < 0:
                offset = 0
            elif offset > size:
                offset = size
            line = bisect_right(starts, offset) - 1
            return {"line": line, "character": offset - starts[line]}
        return fast

    def general(offset: int) -> dict:
        line, character = lines.position(offset)
        return {"line": line, "character": character}
    return general


def positions(lines: LineIndex, offsets: list[int]) -> list[dict]:
    r"""The LSP ``Position`` of each of ``offsets`` in ``lines``, in their order:
    what :func:`converter` gives for each, in one pass. For ASCII text that ends
    its lines at ``\n`` only, the offsets are visited in ascending order against
    the line starts (a step to the next line, a binary search for a longer
    jump), so that each costs a comparison instead of a call and a binary
    search: the 139,084 offsets of the outline of the 3 MB Llama dump take
    0.085 s one call at a time, 0.059 s here (best of 7, the model frozen)."""
    if not lines.ascii or lines.cr:
        at = converter(lines)
        return [at(offset) for offset in offsets]
    starts, size = lines.starts, len(lines.text)
    last = len(starts) - 1
    out: list[Any] = [None] * len(offsets)
    line, line_start = 0, 0
    after = starts[1] if last else size + 1  # where the next line starts
    for i in sorted(range(len(offsets)), key=offsets.__getitem__):
        offset = offsets[i]
        if offset < 0:
            offset = 0
        elif offset > size:
            offset = size
        if offset >= after:
            line += 1
            if line < last and offset >= starts[line + 1]:
                line = bisect_right(starts, offset, line) - 1
            line_start = starts[line]
            after = starts[line + 1] if line < last else size + 1
        out[i] = {"line": line, "character": offset - line_start}
    return out


def range_(lines: LineIndex, start: int, end: int) -> dict:
    """The LSP ``Range`` of characters ``[start, end)`` (empty when ``end < start``)."""
    at = converter(lines)
    return {"start": at(start), "end": at(max(start, end))}


def document_symbol(sym: Symbol, lines: LineIndex) -> dict:
    """An outline entry and its children as an LSP ``DocumentSymbol``. The
    positions of the whole tree are converted in one pass (:func:`positions`)."""
    offsets: list[int] = []
    _symbol_offsets(sym, offsets)
    return _document_symbol(sym, iter(positions(lines, offsets)))


def _symbol_offsets(sym: Symbol, out: list[int]) -> None:
    # The four offsets of each symbol's two ranges, parents before children:
    # the order in which _document_symbol takes their positions.
    out += (sym.start, max(sym.start, sym.end),
            sym.selection_start, max(sym.selection_start, sym.selection_end))
    for child in sym.children:
        _symbol_offsets(child, out)


def _document_symbol(sym: Symbol, at: Iterator[dict]) -> dict:
    # A function of the module, not a closure that calls itself: that would be a
    # reference cycle holding what it captured (see hlo_lsp.analysis.collector).
    out = {"name": sym.name or "?", "kind": _SYMBOL_KINDS[sym.kind],
           "range": {"start": next(at), "end": next(at)},
           "selectionRange": {"start": next(at), "end": next(at)}}
    if sym.detail:
        out["detail"] = sym.detail
    if sym.children:
        out["children"] = [_document_symbol(c, at) for c in sym.children]
    return out


def folding_ranges(folds: Iterable[Fold]) -> list[dict]:
    """The features' folds (:class:`hlo_lsp.features.folding.Fold`) as LSP
    ``FoldingRange`` values (lines only: no columns to convert)."""
    out = []
    for f in folds:
        fold = {"startLine": f.start_line, "endLine": f.end_line, "kind": f.kind}
        if f.collapsed_text is not None:
            fold["collapsedText"] = f.collapsed_text
        out.append(fold)
    return out


def inlay_hints(hints: Iterable[Any], lines: LineIndex) -> list[dict]:
    """The features' inlay hints (:class:`hlo_lsp.features.inlay_hints.InlayHint`)
    as LSP ``InlayHint`` values."""
    hints = list(hints)
    kinds = INLAY_HINT_KINDS
    out = []
    for h, position in zip(hints, positions(lines, [h.offset for h in hints])):
        hint = {"position": position, "label": h.label}
        kind = kinds.get(h.kind)
        if kind is not None:
            hint["kind"] = kind
        if h.tooltip:
            hint["tooltip"] = h.tooltip
        if h.padding_left:
            hint["paddingLeft"] = True
        out.append(hint)
    return out
