"""`hlo-lsp diff` of seed 001's two dumps (issue 44's acceptance): the cuBLASLt
FP8 call and the Triton GEMM fusion that replaced it are named as the same dot,
in the text report, the JSON and the compare command's Markdown."""

from __future__ import annotations

import json
import pathlib

from tests.helpers import EXAMPLES, FP8_FUSED, FP8_REGRESSION, read
from hlo_lsp.cli.main import main
from hlo_lsp.features.compare import compare, format_markdown
from hlo_lsp.model.summary import kernel_summary
from hlo_lsp.syntax.parser import parse

SAME_DOT = "the same dot, now a Triton GEMM fusion (was a cuBLASLt FP8 call)"


def test_diff_names_the_cublas_call_and_the_gemm_fusion_the_same_dot(capsys):
    assert main(["diff", str(FP8_FUSED), str(FP8_REGRESSION)]) == 0
    out = capsys.readouterr().out
    assert f"  - %cublas-gemm.clone.1.0 -> %gemm_fusion_dot.19.0: {SAME_DOT}\n" in out
    assert ("    changed %gemm_fusion_dot.19.0 fusion (was %cublas-gemm.clone.1.0 custom-call): "
            f"{SAME_DOT}; opcode custom-call -> fusion;") in out
    assert "instructions not compared" not in out
    assert main(["diff", str(FP8_FUSED), str(FP8_REGRESSION), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    [dot] = [c for c in data["instructions"]["changes"] if c["status"] == "changed"]
    assert (dot["old"]["name"], dot["new"]["name"]) == ("cublas-gemm.clone.1.0",
                                                        "gemm_fusion_dot.19.0")
    assert dot["summary"] == SAME_DOT
    assert (dot["old"]["kernel"], dot["new"]["kernel"]) == ("cuBLASLt FP8 call",
                                                            "Triton GEMM fusion")
    assert data["findings"][0] == f"%cublas-gemm.clone.1.0 -> %gemm_fusion_dot.19.0: {SAME_DOT}"


def test_deviceless_h100_dumps_with_triton_gemm_off_and_on():
    """The dumps made here for an H100 (examples/gpu/deviceless): the same words
    for the call and the fusion, whose config fields are not compared."""
    name = "module_0001.jit_matmul_fn_with_scale.sm_9.0a_gpu_after_optimizations.txt"
    a = parse(read(EXAMPLES / "gpu" / "deviceless" / "fp8_cublaslt" / name))
    b = parse(read(EXAMPLES / "gpu" / "deviceless" / "fp8_triton_gemm" / name))
    diff = compare(kernel_summary(a), kernel_summary(b), a, b)
    assert diff.findings()[0] == f"%cublas-gemm.clone.1 -> %gemm_fusion_dot_general.1: {SAME_DOT}"
    [dot] = [c for c in diff.instructions.changes if c.now_runs_as]
    assert not any(f.startswith("backend_config") for f, _, _ in dot.fields)
    assert SAME_DOT in format_markdown(diff)


def test_diff_across_xlas_rename_fusions_pass_changes_nothing(capsys):
    """The snapshots before and after `rename_fusions` (tests/data/matching):
    `%fusion.2` is `%loop_multiply_fusion.1` now, the same instruction."""
    data = pathlib.Path(__file__).resolve().parents[2] / "data" / "matching"
    [before] = data.glob("*.0032.*before_rename_fusions.txt")
    [after] = data.glob("*.0033.*after_rename_fusions*.txt")
    assert main(["diff", str(before), str(after)]) == 0
    out = capsys.readouterr().out
    assert "Instructions (matched by structure, stable names and op_name): " \
           "no instruction changed\n" in out
    assert "No change in custom-calls or fusion kinds." in out
