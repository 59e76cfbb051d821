"""Syntax XLA's parser accepts beyond what dumps print (hlo_parser.cc): inline
computations, nested operand instructions, empty operand slots. Each text is
also given to XLA's own parser when jaxlib is installed, so the expectations
here are XLA's, not ours."""

from __future__ import annotations

import pytest

from hlo_lsp.features.diagnostics import diagnostics
from hlo_lsp.features.definition import definition
from hlo_lsp.features.folding import folding_ranges
from hlo_lsp.features.symbols import document_symbols
from hlo_lsp.model.hlo import Severity
from hlo_lsp.syntax.lines import LineIndex
from hlo_lsp.syntax.parser import parse
from hlo_lsp.syntax import xla as xla_oracle
from tests.helpers import offset_of

# As in XLA's Triton and fusion tests: a reduction whose combiner is written
# inline, and operands written as instructions in place.
INLINE = """HloModule inline_reduce

ENTRY main {
  p0 = bf16[4,8] parameter(0)
  c0 = bf16[] constant(-inf)
  ROOT r = bf16[4] reduce(bf16[4,8] negate(p0), c0), dimensions={1}, to_apply={
    a = bf16[] parameter(0)
    b = bf16[] parameter(1)
    ROOT maximum = bf16[] maximum(a, bf16[] negate(b))
  }
}
"""

EMPTY_SLOTS = """HloModule slots

ENTRY main {
  p0 = f32[] parameter(0)
  x = f32[] add(, p0, p0,)
  ROOT y = f32[] add(p0,, x)
}
"""


@pytest.fixture(scope="module")
def oracle():
    if not xla_oracle.available():
        pytest.skip("jaxlib (XLA's parser) is not installed")
    o = xla_oracle.XlaOracle()
    yield o
    o.close()


def _errors(text):
    return [p for p in diagnostics(parse(text)) if p.severity == Severity.ERROR]


# CR-only line breaks after a comment line: the comment ends at the first `\r`.
CR_ONLY = "// a comment\r" + INLINE.replace("\n", "\r")


@pytest.mark.parametrize("text", [INLINE, EMPTY_SLOTS, CR_ONLY])
def test_xla_and_we_accept_with_the_same_counts(text, oracle):
    verdict = oracle.check(text)
    module = parse(text)
    assert verdict.ok
    assert _errors(text) == []
    assert (len(module.computations), module.instruction_count()) == \
        (verdict.computations, verdict.instructions)


def test_inline_computation_is_a_computation_with_exact_ranges():
    m = parse(INLINE)
    entry, inline = m.computations
    assert entry.name.name == "main" and inline.inline and inline.name.name == "_"
    assert m.entry is entry and entry.nested == [inline]
    assert INLINE[inline.start] == "{" and INLINE[inline.end - 1] == "}"
    assert [i.name.name for i in inline.instructions] == ["a", "b", "negate.anon", "maximum"]
    # The reduce names no computation: its body is in place.
    reduce = entry.by_name["r"]
    assert reduce.called == [] and reduce.attribute("to_apply") is not None
    # What is at an offset is the innermost: the inline instruction, not the reduce.
    assert m.instruction_at(offset_of(INLINE, "maximum(a")).name.name == "maximum"
    assert m.computation_at(offset_of(INLINE, "maximum(a")) is inline
    assert m.computation_at(offset_of(INLINE, "\n}\n", 1)) is entry


def test_nested_operand_is_an_instruction_before_its_user():
    m = parse(INLINE)
    entry = m.computations[0]
    names = [i.name.name for i in entry.instructions]
    assert names == ["p0", "c0", "negate.anon", "r"]
    nested = entry.by_name["negate.anon"]
    assert INLINE[nested.name.start:nested.name.end] == "negate"
    assert INLINE[nested.start:nested.end] == "bf16[4,8] negate(p0)"
    assert [o.ref.name for o in entry.by_name["r"].operands] == ["negate.anon", "c0"]
    assert m.instruction_at(offset_of(INLINE, "p0), c0")).name.name == "negate.anon"


def test_navigation_inside_inline_computation():
    m = parse(INLINE)
    use = offset_of(INLINE, "maximum(a", len("maximum("))
    [span] = definition(m, use)
    assert INLINE[span.start:span.end] == "a" and span.start == offset_of(INLINE, "a = bf16")
    [span] = definition(m, offset_of(INLINE, "negate(b)"))
    assert INLINE[span.start:span.end] == "negate"
    # The outline nests the inline computation under the reduce that holds it.
    [module] = document_symbols(m)
    [main] = module.children
    reduce = next(s for s in main.children if s.name == "r")
    assert [c.name for c in reduce.children] == ["_"]
    assert [s.name for s in reduce.children[0].children] == ["a", "b", "negate.anon", "maximum"]
    folds = folding_ranges(m, LineIndex(INLINE))
    lines = LineIndex(INLINE)
    inline = m.computations[1]
    assert any(f.collapsed_text == "_" and f.start_line == lines.line_of(inline.start)
               and f.end_line == lines.line_of(inline.end - 1) for f in folds)


def test_empty_operand_slots():
    m = parse(EMPTY_SLOTS)
    comp = m.computations[0]
    assert [o.ref.name for o in comp.by_name["x"].operands] == ["p0", "p0"]
    assert [o.ref.name for o in comp.by_name["y"].operands] == ["p0", "x"]
    assert comp.by_name["x"].opcode == "add"


# One mistake each, as users make them; XLA's parser rejects every one (checked
# against the oracle below), and so must our own checks, on XLA's line.
def _entry(body):
    return ("HloModule m\n\nENTRY e {\n  p0 = f32[7,2]{1,0} parameter(0)\n"
            "  c = f32[] constant(0)\n" + body + "\n}\n")


MISTAKES = {
    "operand count": _entry("  ROOT r = f32[7,2] bitcast(p0, p0)"),
    "duplicate attribute": _entry("  ROOT r = f32[7,2] negate(p0), sharding={replicated}, "
                                  "sharding={replicated}"),
    "attribute of another opcode": _entry("  ROOT r = f32[7,2] negate(p0), dimensions={0}"),
    "missing required attribute": _entry("  ROOT r = f32[] reduce(p0, c), dimensions={0,1}"),
    "empty dimension": _entry("  ROOT r = f32[7,] negate(p0)"),
    "layout rank": _entry("  ROOT r = f32[7,2]{1} negate(p0)"),
    "operand annotation": _entry("  ROOT r = f32[7,2] negate(f32[7,3] p0)"),
    "keyword as a name": _entry("  ROOT = f32[7,2] negate(p0)"),
    "no computation": "HloModule m\n// nothing here\n",
    "empty entry in a dimension list": _entry("  ROOT r = f32[7,2] reverse(p0), dimensions={0,,1}"),
    "open slice": _entry("  ROOT r = f32[7,1] slice(p0), slice={[0:7], [0:]}"),
    "empty padding": _entry("  ROOT r = f32[9,2] pad(p0, c), padding=0__2x0_0"),
    "window without size": _entry(
        "  ROOT r = f32[7,2] reduce-window(p0, c), window={stride=1x1}, to_apply={\n"
        "    a = f32[] parameter(0)\n    b = f32[] parameter(1)\n"
        "    ROOT s = f32[] add(a, b)\n  }"),
    "metadata without key": _entry('  ROOT r = f32[7,2] negate(p0), metadata={="x"}'),
    "metadata string unquoted": _entry("  ROOT r = f32[7,2] negate(p0), metadata={op_name=x}"),
    "metadata key twice": _entry('  ROOT r = f32[7,2] negate(p0), metadata={op_name="a" '
                                 'op_name="b"}'),
    "dim labels without result": _entry(
        "  ROOT r = f32[7,2] convolution(p0, p0), window={size=1}, dim_labels=bf_io"),
    "layout items out of order": _entry("  ROOT r = f32[7,2]{1,0:S(1)E(4)} negate(p0)"),
    "tuple arity": _entry("  ROOT r = (f32[7,2], f32[]) tuple(p0, c, p0)"),
    "literal rows": _entry("  ROOT r = f32[2,3] constant({{1,2,3},{4,5}})"),
    "literal length": _entry("  ROOT r = s32[4] constant({0, 1, 2})"),
    "values for a scalar-broadcast literal": _entry("  ROOT r = s8[10] constant(1, 1)"),
    "empty layout of an array": _entry("  ROOT r = f32[7,2]{} negate(p0)"),
    "entry_computation_layout dimension": _entry("  ROOT r = f32[7,2] negate(p0)").replace(
        "HloModule m", "HloModule m, entry_computation_layout={(f32[,2])->f32[7,2]}"),
    "operand annotation layout": _entry("  ROOT r = f32[7,2] negate(f32[7,2]{,0} p0)"),
    "entry_computation_layout": _entry("  ROOT r = f32[7,2] negate(p0)").replace(
        "HloModule m", "HloModule m, entry_computation_layout={(f32[7,2]->f32[7,2]}"),
}

# Mistakes XLA finds only once the whole instruction is read, so that its
# position is the token after it (the next line): we mark the opcode, where the
# mistake is, and say so here rather than follow XLA to the next line.
MISTAKES_AFTER_INSTRUCTION = {
    "reduce without init values": _entry(
        "  ROOT r = f32[] reduce(p0, c, p0), dimensions={0,1}, to_apply={\n"
        "    a = f32[] parameter(0)\n    b = f32[] parameter(1)\n"
        "    ROOT s = f32[] add(a, b)\n  }"),
    "dynamic-slice indices": _entry(
        "  i = s32[] constant(0)\n"
        "  ROOT r = f32[1,2] dynamic-slice(p0, i, i, i), dynamic_slice_sizes={1,2}"),
    "broadcast without dimensions": _entry("  ROOT r = f32[3,7,2] broadcast(p0)"),
    "layout constraint shape": _entry(
        '  ROOT r = f32[7,2] custom-call(p0), custom_call_target="x", '
        "operand_layout_constraints={f32[7,3]{1,0}}"),
    "dynamic-update-slice indices": _entry(
        "  i = s32[] constant(0)\n"
        "  ROOT r = f32[7,2] dynamic-update-slice(p0, p0, i, i, i)"),
}

# Valid text that an earlier hlo-lsp rejected: XLA accepts, and so must we.
ACCEPTED = {
    "parameter without colon": "HloModule m\n\nENTRY e (a f32[], b: f32[]) -> f32[] {\n"
                               "  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                               "  ROOT c = f32[] add(a, b)\n}\n",
    "unbalanced bracket in a braced value": _entry(
        '  ROOT r = f32[7,2] negate(p0), backend_config={"x":[{"a":"("}}'),
    "layout items in order": _entry("  ROOT r = f32[7,2]{1,0:T(8,128)(2,1)E(32)S(1)} "
                                    "negate(p0)"),
    "scalar broadcast without dimensions": _entry("  ROOT r = f32[3] broadcast(c)"),
    "literal with index comments and without commas": _entry(
        "  ROOT r = f32[1,2,1] constant({ /*i0=0*/ { {1} {2} } })"),
    "elided literal": _entry("  ROOT r = f32[16] constant({...})"),
    "layout with a missing last parenthesis": _entry("  ROOT r = f32[7,2]{1,0:E(32} negate(p0)"),
    "a // comment ended by a lone CR": _entry(
        "  // the next instruction is on this line for XLA\r  r = f32[7,2] negate(p0)\n"
        "  ROOT s = f32[7,2] negate(r)"),
    "a // comment in metadata ended by a lone CR": _entry(
        '  ROOT r = f32[7,2] negate(p0), metadata={op_name="x" // }\r}'),
    "comments between metadata fields": _entry(
        '  ROOT r = f32[7,2] negate(p0), metadata={op_name="a//b" /* c */ source_line=3}'),
    "dynamic-slice with an index vector": _entry(
        "  i = s32[2] constant({0, 0})\n"
        "  ROOT r = f32[1,2] dynamic-slice(p0, i), dynamic_slice_sizes={1,2}"),
}


@pytest.mark.parametrize("what", sorted(MISTAKES))
def test_mistakes_rejected_on_xlas_line(what, oracle):
    text = MISTAKES[what]
    verdict = oracle.check(text)
    assert not verdict.ok
    errors = _errors(text)
    assert errors, f"{what}: XLA says {verdict.message!r}, we accept"
    assert LineIndex(text).line_of(errors[0].start) == verdict.line - 1, \
        (what, verdict, errors[0])


def test_attribute_newer_than_jaxlib_is_a_warning():
    text = _entry("  ROOT r = f32[7] topk(p0), k=1, largest=true, is_stable=true")
    problems = diagnostics(parse(text))
    assert [p.severity for p in problems if "is_stable" in p.message] == [Severity.WARNING]
    assert [p for p in problems if p.severity == Severity.ERROR] == []


@pytest.mark.parametrize("what", sorted(MISTAKES_AFTER_INSTRUCTION))
def test_mistakes_found_after_the_instruction_marked_at_its_opcode(what, oracle):
    text = MISTAKES_AFTER_INSTRUCTION[what]
    verdict = oracle.check(text)
    assert not verdict.ok
    errors = _errors(text)
    assert errors, f"{what}: XLA says {verdict.message!r}, we accept"
    lines = LineIndex(text)
    root = text.index("ROOT r")
    assert lines.line_of(errors[0].start) == lines.line_of(root), (what, errors[0])
    assert verdict.line - 1 > lines.line_of(root)  # XLA: the token after the instruction


@pytest.mark.parametrize("what", sorted(ACCEPTED))
def test_valid_text_accepted_as_by_xla(what, oracle):
    text = ACCEPTED[what]
    verdict = oracle.check(text)
    assert verdict.ok, verdict
    assert _errors(text) == []


def test_unknown_metadata_key_is_a_warning():
    text = _entry('  ROOT r = f32[7,2] negate(p0), metadata={op_name="a" newer_key=1}')
    problems = diagnostics(parse(text))
    assert [p.severity for p in problems if "newer_key" in p.message] == [Severity.WARNING]
    assert [p for p in problems if p.severity == Severity.ERROR] == []


def test_value_opened_at_a_line_end_is_no_error_when_recovery_runs():
    """A `={` ending a line, its value on the next lines: when another mistake in
    the file makes the parser recover line by line, the value is still one
    attribute and the only error is the real one, on XLA's line."""
    text = _entry('  b = f32[7,2] negate(p0), backend_config={\n    "x": [1,\n      2]\n  }\n'
                  "  ROOT r = f32[7,2] negate(nosuch")
    lines = LineIndex(text)
    errors = _errors(text)
    assert len(errors) == 1, errors
    assert lines.line_of(errors[0].start) == lines.line_of(text.index("negate(nosuch"))
