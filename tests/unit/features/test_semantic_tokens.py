"""Semantic tokens (hlo_lsp.features.semantic_tokens): encode, decode back,
and check specific tokens on real lines of the dumps in examples/."""

from __future__ import annotations

import pytest

from tests.helpers import FP8_DUMP, TRAIN_AFTER, offset_of, read
from hlo_lsp.features.semantic_tokens import TOKEN_MODIFIERS, TOKEN_TYPES, decode, semantic_tokens
from hlo_lsp.syntax.parser import parse
from hlo_lsp.syntax.lines import LineIndex


def _tokens(text: str, encoding: str = "utf-16"):
    lines = LineIndex(text, encoding)
    data = semantic_tokens(parse(text), lines)
    assert len(data) % 5 == 0
    return {(line, col): (length, ttype, set(mods))
            for line, col, length, ttype, mods in decode(data)}, lines


def _at(text: str, lines: LineIndex, offset: int) -> tuple[int, int]:
    return lines.position(offset)


def test_legend_is_what_the_data_indexes():
    assert TOKEN_TYPES == ("namespace", "function", "variable", "parameter", "keyword",
                           "comment")
    assert TOKEN_MODIFIERS == ("declaration", "elementwise", "dataMovement", "compute",
                               "collective", "controlFlow", "customCall", "metadata",
                               "backendConfig")


def test_cublas_line_of_seed_000():
    text = read(FP8_DUMP)
    toks, lines = _tokens(text)
    gemm = offset_of(text, "%cublas-gemm.1.0 =")
    assert toks[_at(text, lines, gemm)] == (16, "variable", {"declaration"})
    assert toks[_at(text, lines, offset_of(text, "custom-call("))] == \
        (11, "keyword", {"customCall"})
    # Operands: uses, not declarations; a parameter(N) instruction reads as a parameter.
    arg0 = text.index("%Arg_0.1.0", gemm)
    assert toks[_at(text, lines, arg0)] == (10, "parameter", set())
    wrapped = text.index("%wrapped_transpose,", gemm)
    assert toks[_at(text, lines, wrapped)] == (18, "variable", set())
    # metadata and backend_config are de-emphasised, the whole attribute each.
    meta = text.index("metadata=", gemm)
    meta_length, ttype, mods = toks[_at(text, lines, meta)]
    assert (ttype, mods) == ("comment", {"metadata"})
    assert text[meta:meta + meta_length].endswith('source_line=3}')
    config = text.index("backend_config=", gemm)
    length, ttype, mods = toks[_at(text, lines, config)]
    assert (ttype, mods) == ("comment", {"backendConfig"})
    assert text[config + length - 1] == "}" and text[config + length] == "\n"
    # Nothing is classified inside the de-emphasised ranges.
    inside = [k for k in toks
              if _at(text, lines, meta) < k < _at(text, lines, meta + meta_length)]
    assert inside == []


def test_computations_keywords_and_references():
    text = read(FP8_DUMP)
    toks, lines = _tokens(text)
    assert toks[(0, 0)] == (9, "keyword", set())                      # HloModule
    assert toks[(0, 10)] == (13, "namespace", {"declaration"})       # jit_matmul_fn
    header = offset_of(text, "%wrapped_transpose_computation (")
    assert toks[_at(text, lines, header)] == (30, "function", {"declaration"})
    use = offset_of(text, "calls=%wrapped_transpose_computation", len("calls="))
    assert toks[_at(text, lines, use)] == (30, "function", set())
    assert toks[_at(text, lines, offset_of(text, "ENTRY"))] == (5, "keyword", set())
    sig = offset_of(text, "Arg_0.1.0: ")
    assert toks[_at(text, lines, sig)] == (9, "parameter", {"declaration"})
    root = offset_of(text, "ROOT %get-tuple-element.1")
    assert toks[_at(text, lines, root)] == (4, "keyword", set())
    assert toks[_at(text, lines, root + 5)] == (20, "variable", {"declaration"})
    param = offset_of(text, "%param_0 = ")
    assert toks[_at(text, lines, param)] == (8, "parameter", {"declaration"})
    assert toks[_at(text, lines, offset_of(text, "parameter(0)"))] == \
        (9, "keyword", {"dataMovement"})


def test_opcode_families_and_control_flow_references_on_the_cpu_dump():
    text = read(TRAIN_AFTER)
    toks, lines = _tokens(text)

    def tok(needle, delta=0, occurrence=0):
        return toks[_at(text, lines, offset_of(text, needle, delta, occurrence))]

    assert tok("while(%tuple.15)") == (5, "keyword", {"controlFlow"})
    assert tok("condition=%wide.region_15.18.clone", len("condition=")) == \
        (len("%wide.region_15.18.clone"), "function", set())
    assert tok("body=%wide.region_0.17.clone", len("body=")) == \
        (len("%wide.region_0.17.clone"), "function", set())
    for name in ("%region_16.19", "%region_17.20", "%region_18.25"):
        assert tok(f"{name}", 0, 1)[1] == "function"  # the reference in branch_computations
    assert tok("dot(%param_0.1") == (3, "keyword", {"compute"})
    assert tok("add(%reduce_sum.66") == (3, "keyword", {"elementwise"})
    assert tok("copy(%params__b1__.1)") == (4, "keyword", {"dataMovement"})
    assert tok("%ynn_fusion.5 = ") == (13, "variable", {"declaration"})
    assert tok("backend_config=", 0, 0)[1:] == ("comment", {"backendConfig"})


@pytest.mark.parametrize("path", [FP8_DUMP, TRAIN_AFTER])
def test_tokens_are_ordered_disjoint_and_inside_their_line(path):
    text = read(path)
    lines = LineIndex(text)
    decoded = decode(semantic_tokens(parse(text), lines))
    assert decoded
    previous_end = (-1, 0)
    for line, col, length, ttype, mods in decoded:
        assert (line, col) >= previous_end
        assert length > 0 and col + length <= len(lines.line_text(line))
        previous_end = (line, col + length)
        assert ttype in TOKEN_TYPES


def test_range_variant_returns_the_same_tokens_for_that_range():
    text = read(TRAIN_AFTER)
    module = parse(text)
    lines = LineIndex(text)
    full = decode(semantic_tokens(module, lines))
    start = offset_of(text, "ENTRY %main.29")
    end = offset_of(text, "%while.1 = ")
    part = decode(semantic_tokens(module, lines, start, end))
    first, last = lines.line_of(start), lines.line_of(end)
    expected = [t for t in full if first <= t[0] < last]
    assert part == expected and len(part) > 50


def test_multi_line_attribute_is_split_per_line():
    text = read(FP8_DUMP).replace('metadata={op_name="a"}',
                                  'metadata={op_name="a"\n    source_line=7}')
    toks, lines = _tokens(text)
    meta = offset_of(text, 'metadata={op_name="a"')
    line, col = _at(text, lines, meta)
    assert toks[(line, col)] == (len('metadata={op_name="a"'), "comment", {"metadata"})
    assert toks[(line + 1, 4)] == (len("source_line=7}"), "comment", {"metadata"})


def test_columns_and_lengths_count_utf16_code_units():
    # An astral character (1 code point, 2 UTF-16 code units) in the metadata of
    # the cuBLAS call: the metadata token grows and the backend_config token
    # after it moves by 2 units in UTF-16, by 1 in UTF-32.
    ascii_text = read(FP8_DUMP)
    text = ascii_text.replace('source_file="" source_line=3}, backend_config',
                              'source_file="\U0001F600" source_line=3}, backend_config')
    before, _ = _tokens(ascii_text)
    after, lines = _tokens(text)
    row = lines.line_of(text.index("backend_config="))
    old = sorted(k for k in before if k[0] == row)
    new = sorted(k for k in after if k[0] == row)
    assert [c for _, c in new[-2:]] == [old[-2][1], old[-1][1] + 2]  # metadata, config
    assert after[new[-2]][0] == before[old[-2]][0] + 2
    assert after[new[-1]] == before[old[-1]]  # backend_config itself is ASCII
    utf32, _ = _tokens(text, "utf-32")
    new32 = sorted(k for k in utf32 if k[0] == row)
    assert new32[-1][1] == old[-1][1] + 1
    assert utf32[new32[-2]][0] == before[old[-2]][0] + 1


def test_tokens_are_in_text_order_when_the_model_is_not():
    """Found by the fuzz run (seed 21): a split file whose first part lost its
    header takes its module name from the second part, so the header's tokens
    came before those of the first part's computation and the relative encoding
    put tokens past the end of their line. An instruction nested as an operand
    (placed before its user in the model) is another such case."""
    text = ("e {\n  ROOT t = f32[4]{0} negate(f32[4]{0} a)\n}\n// -----\n"
            "HloModule m, is_scheduled=true\n\nENTRY %main (p: f32[]) -> f32[] {\n"
            "  ROOT %e = f32[] exponential(f32[] negate(f32[] parameter(0)))\n}\n")
    lines = LineIndex(text)
    data = semantic_tokens(parse(text), lines)
    line = col = 0
    seen = []
    for i in range(0, len(data), 5):
        dl, dc, length = data[i:i + 3]
        assert dl >= 0 and (dl > 0 or dc >= 0), (i // 5, data[i:i + 5])
        line, col = line + dl, (col + dc if dl == 0 else dc)
        start, end = lines.offset(line, 0), lines.offset(line + 1, 0)
        assert col + length <= len(text[start:end].rstrip("\n")), (line, col, length)
        seen.append(text[start + col:start + col + length])
    assert "HloModule" in seen and "m" in seen and "exponential" in seen and "negate" in seen
