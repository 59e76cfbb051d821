"""The recompile machinery without JAX (hlo_lsp.dump.recompile): mapping files
between dumps, swapping a dump in safely, running and killing programs, and
the "what changed" report, which counts what ``hlo-lsp diff`` counts."""

from __future__ import annotations

import json
import shutil

from tests.helpers import FP8_FUSED, FP8_REGRESSION
from hlo_lsp.cli.main import main
from hlo_lsp.dump.loading import load
from hlo_lsp.dump.recompile import RecompileResult, compare_dumps, hlo_files, summarize
from hlo_lsp.model.summary import kernel_summary

SEED_001_NAME = "module_0007.jit_matmul_fn_with_scale.sm_9.0_gpu_after_optimizations.txt"


def _dump(directory, source):
    directory.mkdir()
    shutil.copy(source, directory / SEED_001_NAME)
    return directory


def test_seed_001_diff_and_recompile_report_count_the_same(tmp_path, capsys):
    """Seed 001: the regressed dump (Triton GEMM fusion) against the fixed one
    (cuBLASLt FP8 call). The recompile report and `hlo-lsp diff` give the same
    counts per custom-call target and per fusion kind, the inferred
    __triton_gemm kind included."""
    old, new = _dump(tmp_path / "old", FP8_REGRESSION), _dump(tmp_path / "new", FP8_FUSED)
    [change] = compare_dumps(old, hlo_files(old), new, hlo_files(new))
    assert change.module == "jit_matmul_fn_with_scale"
    assert change.custom_calls == {"__cublas$lt$matmul$f8": (0, 1)}
    assert change.fusions == {"kInput": (1, 0), "kCustom:__triton_gemm": (1, 0),
                              "kLoop": (1, 0)}
    result = RecompileResult(True, str(old), "python prog.py", "cuda", seconds=1.0,
                             changes=[change])
    report = summarize(result)
    assert ("jit_matmul_fn_with_scale (module_0007): fusions 3 → 0 "
            "(kCustom:__triton_gemm 1 → 0, kInput 1 → 0, kLoop 1 → 0), "
            "custom-calls 0 → 1 (__cublas$lt$matmul$f8 0 → 1)") in report
    [as_json] = result.to_json()["changes"]
    assert as_json["customCalls"] == {"__cublas$lt$matmul$f8": [0, 1]}
    assert as_json["totals"] == {"custom-calls": [0, 1], "fusions": [3, 0]}

    # hlo-lsp diff on the same two files.
    assert main(["diff", str(FP8_REGRESSION), str(FP8_FUSED), "--json"]) == 0
    diff = json.loads(capsys.readouterr().out)
    counts = {k: (v["before"], v["after"]) for k, v in diff["counts"].items()}
    # Per custom-call target: the changed ones are the diff's custom_calls...
    assert {c["target"]: (c["before"], c["after"]) for c in diff["custom_calls"]} == {
        t: ba for t, ba in change.custom_calls.items() if ba[0] != ba[1]}
    # ... and every target counts the same as in the summaries the diff compares.
    by_target = [kernel_summary(load(str(p)).module).counts()["custom_call_by_target"]
                 for p in (FP8_REGRESSION, FP8_FUSED)]
    for target, (b, a) in change.custom_calls.items():
        assert (by_target[0].get(target, 0), by_target[1].get(target, 0)) == (b, a)
    assert counts["custom-call"] == change.totals["custom-calls"]
    # Per fusion kind: the report's "kCustom:__triton_gemm" is the diff's
    # fusion:kCustom and fusion:__triton_gemm.
    by_kind: dict[str, list[int]] = {}
    for kind, (b, a) in change.fusions.items():
        hlo, _, backend = kind.partition(":")
        for key in filter(None, (hlo, backend)):
            acc = by_kind.setdefault(key, [0, 0])
            acc[0] += b
            acc[1] += a
    assert {k: tuple(v) for k, v in by_kind.items()} == {
        k[len("fusion:"):]: v for k, v in counts.items() if k.startswith("fusion:")}
    assert by_kind["__triton_gemm"] == [1, 0]
    assert counts["fusion"] == change.totals["fusions"] == (3, 0)
    # The text of both says the same about the Triton GEMM fusion.
    assert main(["diff", str(FP8_REGRESSION), str(FP8_FUSED)]) == 0
    text = capsys.readouterr().out
    assert "fusion:__triton_gemm (Triton GEMM)          1 -> 0" in text
    assert "cuBLASLt FP8 call `__cublas$lt$matmul$f8` appeared (0 -> 1)" in text
