"""Kernel summary (hlo_lsp.model.summary, reports in hlo_lsp.features.summary), dump comparison (hlo_lsp.features.compare) and the
``summary`` / ``diff`` commands, on the real dumps in examples/."""

from __future__ import annotations

import json
from collections import Counter

from tests.helpers import (CPU_DUMP, FP8_DUMP, FP8_FUSED, FP8_REGRESSION, TRAIN_AFTER, offset_of,
                      read)
from hlo_lsp.cli.main import main
from hlo_lsp.features.compare import TargetChange, compare
from hlo_lsp.syntax.parser import parse
from hlo_lsp.features.summary import format_text
from hlo_lsp.model.summary import kernel_summary


def _summary(path):
    return kernel_summary(parse(read(path)))


def test_seed_000_one_transpose_fusion_one_cublaslt_fp8_call():
    text = read(FP8_DUMP)
    s = kernel_summary(parse(text))
    assert [(k.category, k.name, k.label) for k in s.kernels] == [
        ("fusion", "wrapped_transpose", "input fusion"),
        ("custom-call", "cublas-gemm.1.0", "cuBLASLt FP8 call")]
    gemm = s.kernels[1]
    assert (gemm.target, gemm.library) == ("__cublas$lt$matmul$f8", "cuBLASLt FP8")
    assert gemm.offset == offset_of(text, "%cublas-gemm.1.0 =")
    assert s.kernels[0].called == "wrapped_transpose_computation"
    assert s.kernels[0].contains == []  # a transpose is data movement, not compute
    assert s.headline() == "1 fusion · 1 cuBLASLt FP8 call · 0 collectives"


def test_seed_001_regression_triton_gemm_inferred_from_the_name():
    s = _summary(FP8_REGRESSION)
    fusions = s.of("fusion")
    assert [(k.name, k.hlo_kind, k.backend_kind, k.backend_kind_inferred) for k in fusions] == [
        ("input_slice_fusion", "kInput", "", False),
        ("gemm_fusion_dot.19.0", "kCustom", "__triton_gemm", True),
        ("loop_convert_fusion", "kLoop", "", False)]
    assert fusions[1].label == "Triton GEMM fusion" and fusions[1].contains == ["dot"]
    assert s.of("custom-call") == [] and s.of("op") == []  # bitcasts and GTEs launch nothing
    assert s.headline() == "3 fusions (1 Triton GEMM) · 0 custom-calls · 0 collectives"


def test_cpu_train_step_walks_while_and_conditional_but_not_fusions():
    s = _summary(TRAIN_AFTER)
    c = s.counts()
    # examples/README.md: 43 fusions, 37 kLoop and 6 kCustom YNNPACK ones.
    assert c["fusion"] == 43
    assert c["fusion_by_hlo_kind"] == {"kLoop": 37, "kCustom": 6}
    assert c["fusion_by_backend_kind"] == {"__ynn_fusion": 6}
    assert (c["custom-call"], c["collective"]) == (0, 0)
    assert s.headline() == "43 fusions (6 YNNPACK) · 0 custom-calls · 0 collectives"
    # Only ENTRY and the control-flow callees are walked.
    assert {k.computation for k in s.kernels} == {
        "main.29", "wide.region_0.17.clone", "wide.region_15.18.clone", "region_16.19",
        "region_17.20", "region_18.25"}
    contexts = Counter(" > ".join(k.context) for k in s.kernels)
    assert contexts["while %while.1 body"] == 21 + 5  # 21 fusions, 3 copies and 2 dots
    assert contexts["while %while.1 condition"] == 1
    assert contexts["conditional %cond.11 branch 0"] == 4  # four copies
    assert contexts["conditional %cond.11 branch 1"] == 4
    assert contexts["conditional %cond.11 branch 2"] == 4
    # The two weight-gradient dots run unfused in the loop body.
    dots = [k for k in s.of("op") if k.opcode == "dot"]
    assert [(k.name, k.where) for k in dots] == [("dot.5", "make_dump.py:77"),
                                                 ("dot.4", "make_dump.py:76")]
    ynn = next(k for k in s.kernels if k.name == "ynn_fusion.5")
    assert (ynn.label, ynn.contains, ynn.where, ynn.context) == \
        ("YNNPACK fusion", ["dot"], "make_dump.py:76", [])
    assert ynn.source[0].function == "run_program.<locals>.mlp"
    json.dumps(s.to_dict())  # JSON-ready


def test_collectives_and_cublas_on_a_real_gpu_dump(corpus_dir):
    path = corpus_dir / ("HeydrichBeillschmidt__alpa_trimming__tests__hlo__module_0096."
                         "func_shard_parallel__2.68.sm_7.0_gpu_after_optimizations.txt")
    s = _summary(path)
    assert s.headline() == "5 fusions · 5 cuBLAS calls · 1 collective"
    [ar] = s.of("collective")
    assert (ar.name, ar.opcode, ar.shape) == ("all-reduce.2", "all-reduce", "f32[512]{0}")
    assert {k.target for k in s.of("custom-call")} == {"__cublas$gemm"}


def test_seed_001_diff_says_cublaslt_fp8_disappeared_and_triton_gemm_appeared():
    diff = compare(_summary(FP8_FUSED), _summary(FP8_REGRESSION))
    assert diff.custom_calls == [TargetChange("__cublas$lt$matmul$f8", "cuBLASLt FP8", 1, 0)]
    assert diff.custom_calls[0].status == "disappeared"
    assert [k.name for k in diff.fusions_added] == ["input_slice_fusion", "gemm_fusion_dot.19.0",
                                                    "loop_convert_fusion"]
    assert diff.fusions_removed == [] and diff.fusions_changed == []
    assert diff.findings()[:2] == [
        "cuBLASLt FP8 call `__cublas$lt$matmul$f8` disappeared (1 -> 0)",
        "Triton GEMM fusion appeared: %gemm_fusion_dot.19.0 "
        "(kCustom, __triton_gemm (inferred from the name))"]
    assert diff.counts["fusion"] == (0, 3) and diff.counts["custom-call"] == (1, 0)
    assert diff.counts["fusion:__triton_gemm"] == (0, 1)
    assert diff.counts["custom-call:cuBLASLt FP8"] == (1, 0)
    # And the other way round.
    back = compare(_summary(FP8_REGRESSION), _summary(FP8_FUSED))
    assert back.custom_calls[0].status == "appeared"
    assert back.findings()[1].startswith("Triton GEMM fusion disappeared: %gemm_fusion_dot.19.0")


def test_fusions_match_by_op_name_when_renamed_and_report_kind_changes():
    text = read(TRAIN_AFTER)
    line = text[offset_of(text, "%ynn_fusion.5 = "):]
    line = line[:line.index("\n")]
    changed = line.replace("kind=kCustom", "kind=kOutput").split(", backend_config=")[0]
    new_text = text.replace(line, changed).replace("%ynn_fusion.5", "%dot_fusion.5")
    diff = compare(kernel_summary(parse(text)), kernel_summary(parse(new_text)))
    [ch] = diff.fusions_changed
    assert (ch.old.name, ch.new.name, ch.matched_by) == ("ynn_fusion.5", "dot_fusion.5",
                                                         "op_name")
    assert (ch.old.hlo_kind, ch.old.backend_kind) == ("kCustom", "__ynn_fusion")
    assert (ch.new.hlo_kind, ch.new.backend_kind) == ("kOutput", "")
    assert diff.fusions_added == [] and diff.fusions_removed == []
    assert diff.findings() == ["fusion %dot_fusion.5 changed kind: kCustom, __ynn_fusion -> "
                               "kOutput (matched by op_name)"]
    assert diff.counts["fusion:__ynn_fusion"] == (6, 5)


def test_cli_summary_and_diff(capsys):
    assert main(["summary", str(FP8_REGRESSION), "--all"]) == 0
    out = capsys.readouterr().out
    assert out == format_text(_summary(FP8_REGRESSION))
    assert "  %gemm_fusion_dot.19.0  kCustom __triton_gemm*  Triton GEMM fusion  dot" in out
    assert main(["summary", str(CPU_DUMP), "--module", "jit_train_step", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["headline"] == "43 fusions (6 YNNPACK) · 0 custom-calls · 0 collectives"
    assert data["path"].endswith("module_0028.jit_train_step.cpu_after_optimizations.txt")
    assert main(["diff", str(FP8_FUSED), str(FP8_REGRESSION)]) == 0
    out = capsys.readouterr().out
    assert "  - cuBLASLt FP8 call `__cublas$lt$matmul$f8` disappeared (1 -> 0)\n" in out
    assert "  - Triton GEMM fusion appeared: %gemm_fusion_dot.19.0" in out
    assert main(["diff", str(FP8_FUSED), str(FP8_REGRESSION), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["custom_calls"] == [{"target": "__cublas$lt$matmul$f8",
                                     "library": "cuBLASLt FP8", "before": 1, "after": 0,
                                     "status": "disappeared"}]
    assert data["counts"]["fusion"] == {"before": 0, "after": 3}


def test_one_huge_cell_does_not_pad_every_row():
    """Found by the fuzz harness: a tuple shape 10,000 levels deep in one op of a
    19,700-op module padded every row of the text summary to 20,000 characters
    (a 397 MB answer to hlo.showSummary, 9 s). The cell is kept whole, on its row.
    (A tuple that deep is now written as a short text: here a tuple 3,000
    elements wide makes the huge cell.)"""
    text = read(TRAIN_AFTER)
    deep = "(" + ", ".join(["f32[]"] * 3000) + ")"
    at = text.index("ROOT ", text.index("ENTRY "))
    text = text[:at] + f"%deep = {deep} copy(f32[] %copy.35)\n  " + text[at:]
    s = kernel_summary(parse(text))
    assert any(k.shape == deep for k in s.kernels)
    report = format_text(s)
    assert deep in report
    rows = [ln for ln in report.splitlines() if ln.startswith("  %")]
    assert len(rows) > 10 and sum(len(r) > 500 for r in rows) == 1
