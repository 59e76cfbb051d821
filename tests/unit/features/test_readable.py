"""The readable view (hlo_lsp.features.readable) and ``hlo-lsp show`` on the real dumps."""

from __future__ import annotations

import re

import pytest

from tests.helpers import (CPU_DUMP, FP8_DUMP, FP8_FUSED, FP8_REGRESSION, TRAIN_AFTER, offset_of,
                      read)
from hlo_lsp.cli.main import main
from hlo_lsp.features.diagnostics import diagnostics
from hlo_lsp.syntax.parser import parse
from hlo_lsp.features.readable import render


def _lines(view):
    lines = view.text.split("\n")
    assert len(lines) == len(view.line_offsets)
    return lines


def test_seed_000_cublas_call_is_readable():
    text = read(FP8_DUMP)
    view = render(parse(text))
    lines = _lines(view)
    assert "metadata=" not in view.text  # metadata removed (source_file="" resolves to nothing)
    i = next(i for i, s in enumerate(lines) if s.startswith("  %cublas-gemm.1.0 = "))
    assert lines[i].endswith('/*index=5*/f32[] %constant_1), '
                             'custom_call_target="__cublas$lt$matmul$f8"')
    assert lines[i + 1] == ("    // __cublas$lt$matmul$f8: cuBLASLt FP8: FP8 matmul on cuBLASLt "
                            "with fused operand and output scaling (and amax when damax_output)")
    assert lines[i + 2] == "    // results: {0} output, {1} workspace (s8 scratch)"
    assert lines[i + 3] == "    // backend_config:"
    assert lines[i + 4:i + 7] == ["    //   {", '    //     "operation_queue_id": "0",',
                                  '    //     "wait_on_operation_queues": [],']
    assert '    //       "selected_algorithm": "4",' in lines
    assert ("    //   - gemm_backend_config.epilogue = DEFAULT: no epilogue: "
            "D = alpha * A @ B (+ beta * C)") in lines
    # The get-tuple-element says which element it takes.
    assert lines[i + 1:].count("}") == 1
    root = next(s for s in lines if s.startswith("  ROOT %get-tuple-element.1"))
    assert root.endswith("%cublas-gemm.1.0), index=0  // output")
    # Line map: instruction lines -> the instruction, config lines -> the attribute.
    assert view.line_offsets[i] == offset_of(text, "%cublas-gemm.1.0 =")
    assert view.line_offsets[i + 1] == view.line_offsets[i]
    assert view.line_offsets[i + 3] == offset_of(text, "backend_config=")
    assert view.line_offsets[1] is None and lines[1] == ""


def test_bare_operands_get_shapes_and_metadata_becomes_a_source_comment():
    text = read(TRAIN_AFTER)
    view = render(parse(text))
    lines = _lines(view)
    assert "  %copy.31 = f32[128]{0} copy(f32[128]{0} %params__b1__.1)" in lines
    assert ("  %wrapped_clamp = s32[] fusion(s32[] %constant.50, s32[] %schedule.1, "
            "s32[] %constant.48), kind=kLoop, calls=%wrapped_clamp_computation  "
            "// make_dump.py:112") in lines
    assert "stack_frame_id" not in view.text and "FileNames" not in view.text
    # The YNNPACK fusion's backend_config is expanded and explained.
    i = next(i for i, s in enumerate(lines) if s.startswith("  %ynn_fusion.5 = "))
    assert lines[i].endswith("kind=kCustom, calls=%fused_computation.5  // make_dump.py:76")
    assert lines[i + 1:i + 8] == [
        "    // backend_config:", "    //   {", '    //     "outer_dimension_partitions": [],',
        '    //     "fusion_config": {', '    //       "kind": "__ynn_fusion"', "    //     }",
        "    //   }"]
    assert lines[i + 8] == \
        "    //   - fusion_config.kind = __ynn_fusion: a CPU fusion run by YNNPACK"
    # Every instruction line maps back to that instruction's text.
    checked = 0
    for line, offset in zip(lines, view.line_offsets):
        m = re.match(r"\s+(ROOT )?(%[\w.\-]+) = ", line)
        if m:
            assert text.startswith(m.group(0).strip(), offset)
            checked += 1
    assert checked == parse(text).instruction_count() == 432


@pytest.mark.parametrize("path", [FP8_DUMP, FP8_REGRESSION, FP8_FUSED, TRAIN_AFTER])
def test_view_without_inlined_fusions_is_still_valid_hlo(path):
    module = parse(read(path))
    view = render(module)
    again = parse(view.text)
    assert [p.message for p in diagnostics(again)] == []
    assert again.instruction_count() == module.instruction_count()
    assert [c.name.name for c in again.computations] == \
        [c.name.name for c in module.computations]
    # Every operand of the re-parsed view carries its shape.
    assert all(op.shape is not None for c in again.computations for i in c.instructions
               for op in i.operands)


def test_xla_accepts_the_readable_view():
    xla_oracle = pytest.importorskip("hlo_lsp.syntax.xla")
    if not xla_oracle.available():
        pytest.skip("jaxlib is not installed")
    oracle = xla_oracle.XlaOracle()
    try:
        for path in (FP8_DUMP, FP8_REGRESSION, TRAIN_AFTER):
            module = parse(read(path))
            verdict = oracle.check(render(module).text)
            assert verdict is not None and verdict.ok, (path, verdict)
            assert verdict.instructions == module.instruction_count()
    finally:
        oracle.close()


def test_inline_fusions_prints_fused_computations_under_their_fusion():
    text = read(FP8_REGRESSION)
    view = render(parse(text), inline_fusions=True)
    lines = _lines(view)
    # Fused computations are no longer at top level.
    tops = [s for s in lines if s.startswith("%") or s.startswith("ENTRY")]
    assert tops == [next(s for s in lines if s.startswith("ENTRY %main.25"))]
    i = lines.index("  ROOT %loop_convert_fusion = f8e4m3fn[32,128]{1,0} fusion("
                    "bf16[32,128]{1,0} %gemm_fusion_dot.19.0), kind=kLoop, calls=%fused_convert")
    assert lines[i + 1] == "      %fused_convert (param_0.15: bf16[32,128]) -> f8e4m3fn[32,128] {"
    assert lines[i + 2] == "        %constant_8_2 = bf16[] constant(-448)"
    assert lines[i + 12] == "      }"
    assert view.line_offsets[i + 1] == offset_of(text, "%fused_convert (")
    assert view.line_offsets[i + 2] == offset_of(text, "%constant_8_2 =")
    # The Triton GEMM fusion has no backend_config in this dump: say what it is anyway.
    j = next(k for k, s in enumerate(lines) if s.startswith("  %gemm_fusion_dot.19.0 = "))
    assert lines[j + 1].startswith("    // __triton_gemm (inferred from the name gemm_fusion_*, "
                                   "no backend_config): a matmul emitted as a Triton GEMM")
    assert lines[j + 3].startswith("      %gemm_fusion_dot.19_computation (parameter_0: ")


def test_keep_metadata_keeps_attributes_and_tables():
    text = read(TRAIN_AFTER)
    view = render(parse(text), keep_metadata=True)
    assert view.text.count("stack_frame_id=") == text.count("stack_frame_id=")
    assert "\nFileNames\n1 \"/work/main/examples/make_dump.py\"\n" in view.text
    assert "%wrapped_clamp_computation, metadata={op_name=\"jit(train_step)/clamp\" " \
           "stack_frame_id=26}  // make_dump.py:112" in view.text


def test_cli_show(capsys):
    assert main(["show", str(FP8_DUMP)]) == 0
    assert capsys.readouterr().out == render(parse(read(FP8_DUMP)), op_names=True).text
    assert main(["show", str(CPU_DUMP), "--module", "jit_train_step", "--inline-fusions"]) == 0
    out = capsys.readouterr().out
    assert out == render(parse(read(TRAIN_AFTER)), inline_fusions=True, op_names=True).text
    assert main(["show", str(CPU_DUMP)]) == 2
    err = capsys.readouterr().err
    assert "several modules, choose one with --module: jit__threefry_seed, jit_stage, " \
           "jit_train_step" in err


def test_cli_show_picks_a_module_of_a_multi_module_file(tmp_path, capsys):
    both = tmp_path / "two.hlo"
    both.write_text(read(FP8_DUMP) + "\n" + read(FP8_REGRESSION), encoding="utf-8")
    assert main(["show", str(both), "--module", "jit_matmul_fn_with_scale"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("HloModule jit_matmul_fn_with_scale, is_scheduled=true")
    assert "%cublas-gemm" not in out and "%gemm_fusion_dot.19.0 = " in out
    assert main(["show", str(both), "--module", "nope"]) == 2
    assert "no module 'nope'; modules: jit_matmul_fn, jit_matmul_fn_with_scale" in \
        capsys.readouterr().err
