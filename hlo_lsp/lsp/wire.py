"""Answers of thousands of items, encoded as JSON in one step.

lsprotocol's types type every answer the server gives. For the answers that cover
a whole document (the outline, inlay hints, semantic tokens, inline regions) one
attrs object per item, then cattrs unstructuring them, is work the event loop
does not need. On the 2.7 MB corpus dump ``module_3940.jit_train_step``, the
33,000 inlay hints of the whole file (best of 3, the model frozen out of the
collector as in the server): 0.104 s of lsprotocol objects, 0.045 s of cattrs
and 0.049 s of ``json.dumps`` before; 0.146 s for the dicts and ``json.dumps``
here, off the event loop.

The functions here build the same JSON values from the features' plain data,
with the field names of the LSP 3.17 specification (``tests/unit/lsp/test_wire.py``
structures each one with lsprotocol's converter and compares it with the
lsprotocol object it stands for), and :func:`encode` turns them into an
:class:`Encoded` result that :class:`hlo_lsp.lsp.protocol.HloProtocol` writes
into the response as it is.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from typing import Any, Callable, Iterable

import attrs

from lsprotocol import types

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
    offset, the conversion is one binary search over local names: a whole-file
    answer (the outline of the 3 MB Llama dump) converts 140,000 offsets."""
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


def range_(lines: LineIndex, start: int, end: int) -> dict:
    """The LSP ``Range`` of characters ``[start, end)`` (empty when ``end < start``)."""
    at = converter(lines)
    return {"start": at(start), "end": at(max(start, end))}


def document_symbol(sym: Symbol, lines: LineIndex) -> dict:
    """An outline entry and its children as an LSP ``DocumentSymbol``."""
    return _document_symbol(sym, converter(lines))


def _document_symbol(sym: Symbol, at: Callable[[int], dict]) -> dict:
    # A function of the module, not a closure that calls itself: that would be a
    # reference cycle holding ``at``, hence the document's text (see
    # hlo_lsp.lsp.collector).
    out = {"name": sym.name or "?", "kind": _SYMBOL_KINDS[sym.kind],
           "range": {"start": at(sym.start), "end": at(max(sym.start, sym.end))},
           "selectionRange": {"start": at(sym.selection_start),
                              "end": at(max(sym.selection_start, sym.selection_end))}}
    if sym.detail:
        out["detail"] = sym.detail
    if sym.children:
        out["children"] = [_document_symbol(c, at) for c in sym.children]
    return out


def inlay_hints(hints: Iterable[Any], lines: LineIndex) -> list[dict]:
    """The features' inlay hints (:class:`hlo_lsp.features.inlay_hints.InlayHint`)
    as LSP ``InlayHint`` values."""
    out = []
    at = converter(lines)
    for h in hints:
        hint = {"position": at(h.offset), "label": h.label}
        if h.kind in INLAY_HINT_KINDS:
            hint["kind"] = INLAY_HINT_KINDS[h.kind]
        if h.tooltip:
            hint["tooltip"] = h.tooltip
        if h.padding_left:
            hint["paddingLeft"] = True
        out.append(hint)
    return out
