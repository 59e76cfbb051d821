"""The recompile machinery without JAX (hlo_lsp.dump.recompile): mapping files
between dumps, swapping a dump in safely, running and killing programs, and
the "what changed" report, which counts what ``hlo-lsp diff`` counts."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import time

import pytest

from tests.helpers import FP8_FUSED, FP8_REGRESSION, alive, snapshot
from hlo_lsp.cli.main import main
from hlo_lsp.dump.loading import load
from hlo_lsp.dump.names import parse_dump_name
from hlo_lsp.dump.recipe import RECIPE_FILE, Recipe
from hlo_lsp.dump.recompile import (RecompileResult, compare_dumps, hlo_files, map_files,
                                    run_program, summarize, swap_dump)
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

    # In cost terms, the report and the diff agree too (both on the CPU default:
    # the diff's files are not named like a dump, so no device is implied; the
    # report is asked for the same device).
    [on_cpu] = compare_dumps(old, hlo_files(old), new, hlo_files(new), device="cpu")
    assert on_cpu.costs.to_dict() == diff["cost"]
    assert as_json["costs"]["flops"] == diff["cost"]["flops"]
    assert as_json["costs"]["device"] == "h100-sxm"  # sm_9.0 in the dump's file name
    lines = "\n".join(on_cpu.report())
    assert "  Cost (ENTRY as XLA's cost analysis counts it; time: roofline on" in lines
    assert "    kernels whose cost changed (" in lines
    assert "cuBLASLt FP8 call %cublas-gemm.clone.1.0 (0 -> 1)" in lines
    # the text states the cost change of the modules of the open files only
    assert "Cost (ENTRY" not in report
    assert "Cost (ENTRY" in summarize(result, focus={"jit_matmul_fn_with_scale"})
    # The text of both says the same about the Triton GEMM fusion.
    assert main(["diff", str(FP8_REGRESSION), str(FP8_FUSED)]) == 0
    text = capsys.readouterr().out
    assert "fusion:__triton_gemm (Triton GEMM)          1 -> 0" in text
    assert "cuBLASLt FP8 call `__cublas$lt$matmul$f8` appeared (0 -> 1)" in text


def test_map_files_follows_module_names_not_numbers():
    def names(*files):
        return {f: parse_dump_name(f) for f in files}

    old = names("module_0004.jit_step.before_optimizations.txt",
                "module_0004.jit_step.cpu_after_optimizations.txt",
                "module_0009.jit_step.cpu_after_optimizations.txt",
                "module_0006.jit_gone.cpu_after_optimizations.txt")
    new = names("module_0007.jit_step.before_optimizations.txt",
                "module_0007.jit_step.sm_9.0_gpu_after_optimizations.txt",
                "module_0012.jit_step.sm_9.0_gpu_after_optimizations.txt",
                "module_0003.jit_warmup.cpu_after_optimizations.txt")
    assert map_files(old, new) == {
        "module_0004.jit_step.before_optimizations.txt":
            "module_0007.jit_step.before_optimizations.txt",
        "module_0004.jit_step.cpu_after_optimizations.txt":
            "module_0007.jit_step.sm_9.0_gpu_after_optimizations.txt",
        "module_0009.jit_step.cpu_after_optimizations.txt":
            "module_0012.jit_step.sm_9.0_gpu_after_optimizations.txt",
        "module_0006.jit_gone.cpu_after_optimizations.txt": None,
    }


def test_swap_dump_rolls_back_on_failure(tmp_path, monkeypatch):
    dump, new = tmp_path / "dump", tmp_path / "new"
    dump.mkdir()
    new.mkdir()
    for n in ("module_0001.a.before_optimizations.txt", "module_0001.a.txt", RECIPE_FILE,
              "notes.md"):
        (dump / n).write_text(f"old {n}")
    (dump / "module_0001.a").mkdir()
    (dump / "module_0001.a" / "module.mlir").write_text("old mlir")
    for n in ("module_0002.a.before_optimizations.txt", "module_0002.a.txt"):
        (new / n).write_text(f"new {n}")
    before = snapshot(dump)
    real_replace, calls = os.replace, []

    def flaky(src, dst):
        calls.append(src)
        if len(calls) == 5:
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", flaky)
    with pytest.raises(OSError):
        swap_dump(dump, new)
    monkeypatch.setattr(os, "replace", real_replace)
    assert snapshot(dump) == before
    assert sorted(os.listdir(new)) == ["module_0002.a.before_optimizations.txt",
                                       "module_0002.a.txt"]
    swap_dump(dump, new)
    assert sorted(os.listdir(dump)) == sorted([RECIPE_FILE, "notes.md",
                                               "module_0002.a.before_optimizations.txt",
                                               "module_0002.a.txt"])
    assert [p.name for p in tmp_path.iterdir() if "backup" in p.name] == []


async def test_run_program_timeout_kills_the_process_tree(tmp_path):
    script = ("sleep 300 & echo $! > child; echo started; wait")
    t0 = time.monotonic()
    result = await run_program(["sh", "-c", script], str(tmp_path), dict(os.environ),
                               timeout=1.0)
    assert result.timed_out and result.returncode is None
    assert time.monotonic() - t0 < 120   # a hang guard: the program sleeps 300 s
    child = int((tmp_path / "child").read_text())
    for _ in range(50):
        if not alive(child):
            break
        await asyncio.sleep(0.1)
    assert not alive(child)


async def test_program_that_dumps_nothing_leaves_old_dump(tmp_path):
    from hlo_lsp.dump.recompile import recompile

    dump = tmp_path / "dump"
    dump.mkdir()
    (dump / "module_0001.jit_f.before_optimizations.txt").write_text("HloModule jit_f\n")
    before = snapshot(dump)
    seen = []
    result = await recompile(Recipe([sys.executable, "-c", "print('hello')"], str(tmp_path)),
                             dump, platform="cpu", probe=False,
                             on_output=lambda stream, line: seen.append((stream, line)))
    assert not result.ok and "wrote no HLO text" in result.error
    assert seen == [("stdout", "hello")]
    assert snapshot(dump) == before and sorted(os.listdir(tmp_path)) == ["dump"]
    assert "unchanged" in result.summary


# Not JAX: writes one dump file where XLA_FLAGS says, as XLA would, and
# appends a line to the file `ran` in its working directory.
WRITES_A_DUMP = (
    "import os, re\n"
    "where = re.search(r'--xla_dump_to=(\\S+)', os.environ['XLA_FLAGS']).group(1)\n"
    "open(os.path.join(where, 'module_0001.jit_f.before_optimizations.txt'), 'w')"
    ".write('HloModule jit_f\\n')\n"
    "open('ran', 'a').write('x\\n')\n")


async def test_recompile_runs_the_plan_it_is_given(tmp_path, monkeypatch):
    """What runs is the confirmed plan (argv and directory), not a second
    reading of the recipe; the plan's command line is the result's."""
    from hlo_lsp.dump.environment import RunPlan
    from hlo_lsp.dump.recompile import recompile

    monkeypatch.setenv("HLO_LSP_STATE_DIR", str(tmp_path / "state"))
    dump, there = tmp_path / "dump", tmp_path / "there"
    dump.mkdir()
    there.mkdir()
    recipe = Recipe([sys.executable, "-c", "raise SystemExit(3)"], str(tmp_path))
    plan = RunPlan((sys.executable, "-c", WRITES_A_DUMP), str(there), sys.executable)
    result = await recompile(recipe, dump, platform="cpu", probe=False, plan=plan)
    assert result.ok, result.error
    assert (there / "ran").read_text() == "x\n" and not (tmp_path / "ran").exists()
    assert result.command == plan.display_command()
    # Only the user's own command line (hlo-lsp dump) is remembered as confirmed.
    assert not (tmp_path / "state").exists()


async def test_the_command_line_of_hlo_lsp_dump_is_remembered_as_confirmed(tmp_path,
                                                                            monkeypatch):
    from hlo_lsp.dump import trust
    from hlo_lsp.dump.environment import new_recipe, plan_run
    from hlo_lsp.dump.recipe import load_recipe
    from hlo_lsp.dump.recompile import recompile

    monkeypatch.setenv("HLO_LSP_STATE_DIR", str(tmp_path / "state"))
    dump = tmp_path / "dump"
    recipe = new_recipe([sys.executable, "-c", WRITES_A_DUMP], str(tmp_path), str(dump),
                        "cpu", origin="cli")
    result = await recompile(recipe, dump, platform="cpu", probe=False)
    assert result.ok, result.error
    saved = load_recipe(dump)
    assert trust.is_confirmed(plan_run(saved))
    # The same recipe edited by someone else is not.
    saved.command[-1] += "\nopen('other', 'w')"
    assert not trust.is_confirmed(plan_run(saved))
