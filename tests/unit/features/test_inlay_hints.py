"""Inlay hints (hlo_lsp.features.inlay_hints) on the real dumps in examples/."""

from __future__ import annotations

from tests.helpers import FP8_DUMP, FP8_REGRESSION, TRAIN_AFTER, offset_of, read
from hlo_lsp.features.inlay_hints import inlay_hints
from hlo_lsp.syntax.parser import parse


def _at(hints, offset):
    return [h for h in hints if h.offset == offset]


def test_bare_operand_gets_the_shape_of_its_definition():
    text = read(TRAIN_AFTER)
    hints = inlay_hints(parse(text))
    # `%copy.31 = f32[128]{0} copy(%params__b1__.1)`
    end = offset_of(text, "%params__b1__.1)", len("%params__b1__.1"))
    [h] = _at(hints, end)
    assert (h.label, h.kind, h.category) == (": f32[128]", "type", "operandShape")
    assert h.tooltip == "%params__b1__.1: f32[128]{0}"
    # A tuple-shaped operand: the layouts are dropped from every element.
    end = offset_of(text, "get-tuple-element(%arg_tuple.5)", len("get-tuple-element(%arg_tuple.5"))
    [h] = _at(hints, end)
    assert h.label == ": (f32[128], f32[10], f32[64,128], f32[128,10])"
    # Operands that already print their shape get none (as_text() style dump).
    fp8 = read(FP8_REGRESSION)
    assert [h for h in inlay_hints(parse(fp8)) if h.category == "operandShape"] == []


def test_python_source_at_the_end_of_the_instruction_line():
    text = read(TRAIN_AFTER)
    module = parse(text)
    hints = inlay_hints(module)
    line = offset_of(text, "%wrapped_clamp = ")
    eol = text.index("\n", line)
    [h] = _at(hints, eol)
    assert (h.label, h.kind, h.category, h.padding_left) == \
        ("make_dump.py:112", None, "source", True)
    # The tooltip: the innermost frame of stack_frame_id=26 and its caller.
    assert h.tooltip.split("\n") == [
        "/work/main/examples/make_dump.py:112:18 (run_program.<locals>.train_step)",
        "called from /work/main/examples/make_dump.py:130:30 (run_program) "
        "and 2 more frames",
    ]
    # One per instruction with a stack_frame_id (215 in this dump, see examples/README.md).
    sources = [h for h in hints if h.category == "source"]
    assert len(sources) == text.count("stack_frame_id=") == 215
    # `source_file=""` does not resolve: no hint on seed 000's dump.
    assert [h for h in inlay_hints(parse(read(FP8_DUMP))) if h.category == "source"] == []


def test_cublaslt_tuple_element_meaning_after_index():
    text = read(FP8_DUMP)
    hints = inlay_hints(parse(text))
    [h] = hints
    assert h.offset == offset_of(text, "index=0", len("index=0"))
    assert (h.label, h.kind, h.category) == ("output", "parameter", "tupleElement")
    assert h.tooltip == ('element {0} of %cublas-gemm.1.0 (custom-call '
                         '"__cublas$lt$matmul$f8"): output')


def test_damax_output_names_the_second_element():
    # Seed 000's call with damax_output=true returns (d, d_amax, workspace).
    text = read(FP8_DUMP)
    text = text.replace('"damax_output":false', '"damax_output":true')
    text = text.replace("(f8e5m2[128,128]{1,0}, s8[33554432]{0})",
                        "(f8e5m2[128,128]{1,0}, f32[], s8[33554432]{0})")
    text = text.replace("index=0, metadata", "index=1, metadata")
    [h] = inlay_hints(parse(text))
    assert h.label == "d_amax"
    assert h.tooltip.endswith("d_amax (max |output|, for FP8 rescaling)")


def test_range_and_categories():
    text = read(TRAIN_AFTER)
    module = parse(text)
    start = offset_of(text, "%copy.31 = ")
    end = text.index("\n", offset_of(text, "%copy.34 = "))
    hints = inlay_hints(module, start, end)
    assert [h.label for h in hints] == [": f32[128]", ": f32[10]", ": f32[64,128]",
                                        ": f32[128,10]"]
    only = inlay_hints(module, categories=("source",))
    assert only and {h.category for h in only} == {"source"}
    assert [h.offset for h in only] == sorted(h.offset for h in only)
