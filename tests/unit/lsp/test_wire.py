"""The JSON of the whole-document answers (hlo_lsp.lsp.wire) is the LSP types'
JSON: lsprotocol's converter structures every value into the type it stands
for, and unstructuring that object gives the same JSON back (no key dropped, none
misspelled, no value of the wrong type)."""

from __future__ import annotations

import json
import pathlib

import pytest
from lsprotocol import types
from pygls.protocol import default_converter

from hlo_lsp.features.folding import folding_ranges
from hlo_lsp.features.inlay_hints import CATEGORIES, inlay_hints
from hlo_lsp.features.inline_regions import KINDS, inline_regions
from hlo_lsp.features.symbols import document_symbols
from hlo_lsp.lsp import messages, wire
from hlo_lsp.analysis.documents import analyze

ROOT = pathlib.Path(__file__).resolve().parents[3]
DUMPS = [ROOT / "examples/gpu/jit_matmul_fn.fp8_cublaslt.sm90_gpu_after_optimizations.txt",
         *sorted((ROOT / "examples/cpu_dump").glob("*after_optimizations.txt"))[:1],
         *sorted((ROOT / "examples/sharded").rglob("*after_optimizations.txt"))[:1]]


@pytest.fixture(scope="module", params=DUMPS, ids=lambda p: p.name)
def analysis(request):
    text = request.param.read_text()
    # a character outside the BMP and a CRLF line: UTF-16 columns and the
    # specification's line ends go into the positions
    text = text.replace("\n", "  // 𝔁\r\n", 3)
    return analyze("file:///dump.txt", 1, text)


def _round_trip(value, type_, converter=None):
    converter = converter or default_converter()
    decoded = json.loads(wire.encode(value).text)
    typed = converter.structure(decoded, type_)
    assert converter.unstructure(typed, type_) == decoded
    return typed


def test_document_symbols_are_lsp_document_symbols(analysis):
    symbols = document_symbols(analysis.module, True)
    typed = _round_trip([wire.document_symbol(s, analysis.lines) for s in symbols],
                        list[types.DocumentSymbol])
    assert typed[0].kind == types.SymbolKind.Module
    flat, stack = [], list(typed)
    while stack:
        s = stack.pop()
        flat.append(s)
        stack.extend(s.children or [])
    assert len(flat) > analysis.module.instruction_count() // 2
    entry = analysis.module.entry
    line, character = analysis.lines.position(entry.name.start)
    assert any(s.selection_range.start == types.Position(line, character) for s in flat)


def test_folding_ranges_are_lsp_folding_ranges(analysis):
    folds = folding_ranges(analysis.module, analysis.lines)
    typed = _round_trip(wire.folding_ranges(folds), list[types.FoldingRange])
    assert len(typed) == len(folds) >= 1
    assert {f.kind for f in typed} >= {types.FoldingRangeKind.Region}
    entry = analysis.module.entry
    assert types.FoldingRange(analysis.lines.line_of(entry.start),
                              analysis.lines.line_of(entry.end - 1),
                              kind=types.FoldingRangeKind.Region,
                              collapsed_text=entry.name.name) in typed


def test_inlay_hints_are_lsp_inlay_hints(analysis):
    hints = inlay_hints(analysis.module, 0, len(analysis.module.text), CATEGORIES)
    assert hints
    typed = _round_trip(wire.inlay_hints(hints, analysis.lines), list[types.InlayHint])
    for h, t in zip(hints, typed):
        assert (t.position.line, t.position.character) == analysis.lines.position(h.offset)
        assert t.label == h.label
        assert (t.tooltip or None) == (h.tooltip or None)
        assert bool(t.padding_left) == bool(h.padding_left)
    assert {t.kind for t in typed} <= {None, types.InlayHintKind.Type,
                                        types.InlayHintKind.Parameter}


def test_inline_regions_are_the_messages_type(analysis):
    regions = inline_regions(analysis.module, KINDS)
    assert regions
    value = [{"range": wire.range_(analysis.lines, r.start, r.end), "kind": r.kind}
             for r in regions]
    typed = _round_trip(value, list[messages.InlineRegion], messages._converter)
    assert [r.kind for r in typed] == [r.kind for r in regions]


def test_encoded_text_is_ascii_even_for_lone_surrogates():
    out = wire.encode([{"label": "a\udc80\U0001d4c1"}]).text
    assert out.isascii()
    assert json.loads(out) == [{"label": "a\udc80\U0001d4c1"}]


@pytest.mark.parametrize("text", ["", "a\nbc\n\ndef", "x = 1\n" * 50 + "tail",
                                  "a\r\nb", "é\n𝔁x\n"], ids=repr)
def test_positions_agree_with_the_line_index_on_every_offset(text):
    """The inlined ASCII path and the line index's own answer, every offset
    and a few outside the text (which clamp)."""
    from hlo_lsp.syntax.lines import LineIndex
    lines = LineIndex(text)
    at = wire.converter(lines)
    for offset in range(-2, len(text) + 3):
        line, character = lines.position(offset)
        assert at(offset) == {"line": line, "character": character}
