"""The LSP features as pure functions, on the real dumps in examples/."""

from __future__ import annotations

from tests.helpers import (FP8_DUMP, FP8_REGRESSION, TRAIN_AFTER, offset_of, read)
from hlo_lsp.model.spans import FileTarget
from hlo_lsp.features.definition import definition
from hlo_lsp.features.folding import folding_ranges
from hlo_lsp.features.hover import hover
from hlo_lsp.features.inline_regions import inline_regions
from hlo_lsp.features.references import references
from hlo_lsp.features.symbols import document_symbols
from hlo_lsp.syntax.parser import parse
from hlo_lsp.syntax.lines import LineIndex


def _texts(text, spans):
    return [text[s.start:s.end] for s in spans]


def test_hover_on_cublas_gemm_expands_backend_config():
    text = read(FP8_DUMP)
    m = parse(text)
    h = hover(m, offset_of(text, "%cublas-gemm.1.0 =", 3))
    md = h.markdown
    assert "`custom-call`" in md
    assert "`__cublas$lt$matmul$f8`" in md and "cuBLASLt FP8" in md
    assert '"gemm_backend_config": {' in md  # pretty-printed, indented JSON
    assert "`gemm_backend_config.epilogue` = DEFAULT" in md
    assert "`gemm_backend_config.selected_algorithm` = 4" in md
    # Operands are resolved with their shapes and sizes.
    assert "0. `%Arg_0.1.0`: `f8e4m3fn[128,128]{1,0}` (16,384 B (16.0 KiB))" in md
    assert "{0} output, {1} workspace" in md
    assert "**Users** (1): `%get-tuple-element.1`" in md


def test_hover_at_a_bare_name_use_resolves_the_shape():
    text = read(TRAIN_AFTER)
    m = parse(text)
    # Dumps print bare operand names; hover on a use shows the definition's shape.
    comp = m.entry
    ins = next(i for i in comp.instructions if i.operands and i.operands[0].shape is None
               and i.operands[0].ref.name in comp.by_name)
    op = ins.operands[0]
    h = hover(m, op.ref.start + 1)
    definition_shape = comp.by_name[op.ref.name].shape.text
    assert h is not None and definition_shape in h.markdown
    assert h.start == op.ref.start and h.end == op.ref.end


def test_hover_on_computation_shows_signature_and_callers():
    text = read(FP8_DUMP)
    m = parse(text)
    h = hover(m, offset_of(text, "calls=%wrapped_transpose_computation", 8))
    assert "wrapped_transpose_computation(param_0: f8e5m2[128,128]) -> f8e5m2[128,128]" \
        in h.markdown
    assert "2 instructions" in h.markdown
    assert "**Callers** (1): `%wrapped_transpose` (fusion, `calls`)" in h.markdown


def test_definition_of_calls_lands_on_computation_header():
    text = read(FP8_DUMP)
    m = parse(text)
    targets = definition(m, offset_of(text, "calls=%wrapped_transpose_computation", 10))
    assert len(targets) == 1
    t = targets[0]
    assert text[t.start:t.end] == "%wrapped_transpose_computation"
    line_start = text.rfind("\n", 0, t.start) + 1
    assert line_start == t.start  # the header, at column 0


def test_definition_of_operand_and_of_fused_parameter():
    text = read(FP8_DUMP)
    m = parse(text)
    gemm = offset_of(text, "%cublas-gemm.1.0 =")
    use = offset_of(text, "%Arg_0.1.0", 2, occurrence=0)
    use = text.index("%Arg_0.1.0", gemm)
    [t] = definition(m, use + 3)
    assert text[t.start:text.index("\n", t.start)].startswith(
        "%Arg_0.1.0 = f8e4m3fn[128,128]{1,0} parameter(0)")
    # From the fused parameter (its name, or its parameter(0)) to the fusion's operand.
    for probe in (offset_of(text, "%param_0 = ", 2), offset_of(text, "parameter(0)", 2)):
        [site] = definition(m, probe)
        assert text[site.start:site.end] == "%Arg_1.2.0"
        assert site.start > offset_of(text, "%wrapped_transpose = ")
    # From the signature's parameter too.
    [site] = definition(m, offset_of(text, "(param_0: f8e5m2", 2))
    assert text[site.start:site.end] == "%Arg_1.2.0"


def test_definition_through_while_and_conditional():
    text = read(TRAIN_AFTER)
    m = parse(text)
    whiles = [i for c in m.computations for i in c.instructions if i.opcode == "while"]
    assert whiles
    w = whiles[0]
    body = next(c for c in w.called if c.attr == "body")
    body_comp = m.by_name[body.ref.name]
    param = body_comp.parameters()[0]
    [site] = definition(m, param.name.start + 1)
    assert text[site.start:site.end].lstrip("%") == w.operands[0].ref.name
    cond = next(i for c in m.computations for i in c.instructions if i.opcode == "conditional")
    branches = [c for c in cond.called if c.attr == "branch_computations"]
    assert len(branches) >= 2
    for k, cref in enumerate(branches):
        [target] = definition(m, cref.ref.start + 1)
        assert text[target.start:target.end].lstrip("%") == cref.ref.name
        branch = m.by_name[cref.ref.name]
        [site] = definition(m, branch.parameters()[0].name.start + 1)
        assert text[site.start:site.end].lstrip("%") == cond.operands[k + 1].ref.name


def test_definition_of_metadata_goes_to_python_source():
    text = read(TRAIN_AFTER)
    m = parse(text)
    ins = next(i for c in m.computations for i in c.instructions
               if "stack_frame_id" in i.metadata)
    meta = ins.attribute("metadata")
    [target] = definition(m, meta.value_start + 3)
    assert isinstance(target, FileTarget)
    assert target.path.endswith("make_dump.py") and target.line > 0


def test_references_of_instruction_and_computation():
    text = read(FP8_DUMP)
    m = parse(text)
    refs = references(m, offset_of(text, "%constant_1 =", 2))
    assert _texts(text, refs) == ["%constant_1"] * 5  # definition + 4 operand uses
    refs = references(m, offset_of(text, "%wrapped_transpose_computation (", 3), False)
    assert _texts(text, refs) == ["%wrapped_transpose_computation"]
    assert refs[0].start == offset_of(text, "calls=%wrapped_transpose_computation", 6)


def test_document_symbols_outline():
    text = read(FP8_REGRESSION)
    m = parse(text)
    [module] = document_symbols(m)
    assert module.name == "jit_matmul_fn_with_scale" and module.kind == "module"
    names = [c.name for c in module.children]
    assert names[0] == "gemm_fusion_dot.19_computation" and names[-1] == "main.25"
    entry = module.children[-1]
    assert entry.kind == "entry"
    gemm = next(s for s in entry.children if s.name == "gemm_fusion_dot.19.0")
    assert gemm.detail == "bf16[32,128]{1,0} fusion"
    assert text[gemm.selection_start:gemm.selection_end] == "%gemm_fusion_dot.19.0"


def test_folding_ranges_cover_bodies_and_stack_frame_tables():
    text = read(TRAIN_AFTER)
    m = parse(text)
    lines = LineIndex(text)
    folds = folding_ranges(m, lines)
    by_kind = {f.collapsed_text: f for f in folds}
    for c in m.computations:
        f = by_kind[c.name.name]
        assert (f.start_line, f.end_line) == (lines.line_of(c.start), lines.line_of(c.end - 1))
    assert {"FileNames", "FunctionNames", "FileLocations", "StackFrames"} <= set(by_kind)
    assert by_kind["StackFrames"].kind == "imports"


def test_multiline_attribute_is_folded():
    text = ("HloModule m\n\nENTRY e {\n  ROOT c = f32[] custom-call(), custom_call_target=\"x\",\n"
            "    backend_config={\n      \"a\": 1,\n      \"b\": [1, 2]\n    }\n}\n")
    m = parse(text)
    assert m.problems == []
    folds = folding_ranges(m, LineIndex(text))
    assert any(f.collapsed_text == "backend_config" and (f.start_line, f.end_line) == (4, 7)
               for f in folds)


def test_inline_regions_cover_separator_and_attribute():
    text = read(FP8_DUMP)
    m = parse(text)
    regions = inline_regions(m)
    kinds = {r.kind for r in regions}
    assert kinds == {"metadata", "backend_config"}
    for r in regions:
        snippet = text[r.start:r.end]
        assert snippet.startswith(", " + r.kind + "={") and snippet.endswith("}")
        assert "\n" not in snippet
    # Hiding every region leaves each instruction line readable HLO without them.
    gemm_line = next(line for line in text.splitlines() if "%cublas-gemm.1.0 =" in line)
    start = text.index(gemm_line)
    kept = "".join(text[i] for i in range(start, start + len(gemm_line))
                   if not any(r.start <= i < r.end for r in regions))
    assert kept.endswith('custom_call_target="__cublas$lt$matmul$f8"')
