"""Experiments with XLA flags (issue 44): the table, which entries apply to an
instruction of a real dump, the variant's recipe and directory, and the report
on a real deviceless pair: examples/gpu/deviceless/fp8_triton_gemm (XLA's
defaults) and fp8_cublaslt (the same program with
--xla_gpu_enable_triton_gemm=false, its recipe says so), both compiled for H100
without a GPU by jax 0.10.2."""

from __future__ import annotations

import re

import pytest

from hlo_lsp.dump.experiments import (experiments_at, read_debug_options, variant_dir,
                                      variant_recipe, with_flag)
from hlo_lsp.dump.names import device_for
from hlo_lsp.dump.recipe import Recipe, load_recipe
from hlo_lsp.model.flag_experiments import (EXPERIMENTS, FUSION, GEMM, COLLECTIVE,
                                            applicable, find_experiment, instruction_kind,
                                            outcome)
from hlo_lsp.syntax.parser import parse

from tests.helpers import EXAMPLES

DEVICELESS = EXAMPLES / "gpu" / "deviceless"
AFTER = "sm_9.0a_gpu_after_optimizations.txt"


def _file(name: str):
    [path] = (DEVICELESS / name).glob(f"*.{AFTER}")
    return path


def _line(path, name: str) -> int:
    lines = path.read_text().split("\n")
    return next(i for i, s in enumerate(lines) if s.lstrip().startswith(f"%{name} =")
                or s.lstrip().startswith(f"ROOT %{name} ="))


def _ins(module, name):
    return next(i for c in module.computations for i in c.instructions if i.name.name == name)


def test_the_table_names_its_source_and_each_key_once():
    keys = [e.key for e in EXPERIMENTS]
    assert len(keys) == len(set(keys))
    for e in EXPERIMENTS:
        assert re.fullmatch(r"xla/xla\.proto DebugOptions\.xla_\w+ \(field \d+\)", e.source), e
        assert e.flag in e.source and e.what.endswith(".") and e.platform in ("gpu", "cpu")
        assert find_experiment(e.key) is e
    assert find_experiment("--xla_gpu_enable_triton_gemm=false").key == "triton-gemm-off"
    assert find_experiment("xla_gpu_enable_triton_gemm=true").key == "triton-gemm-on"
    assert find_experiment("--xla_gpu_enable_triton_gemm=maybe") is None
    assert find_experiment("triton-gemm-off").action_title == (
        "Recompile with Triton GEMM off (--xla_gpu_enable_triton_gemm=false)")


def test_debug_options_of_a_real_dump():
    assert read_debug_options(_file("fp8_cublaslt"))["xla_gpu_enable_triton_gemm"] == "false"
    assert "xla_gpu_enable_triton_gemm" not in read_debug_options(_file("fp8_triton_gemm"))
    assert read_debug_options(_file("fp8_triton_gemm"))["xla_gpu_autotune_level"] == "0"


def test_triton_gemm_off_is_offered_where_it_is_on_and_on_where_it_is_off():
    path = _file("fp8_triton_gemm")
    ins, offered = experiments_at(path, _line(path, "gemm_fusion_dot_general.1"), True)
    assert ins.name.name == "gemm_fusion_dot_general.1"
    keys = [e.key for e in offered]
    assert keys[0] == "triton-gemm-off" and "triton-gemm-on" not in keys
    # compiled without a GPU: nothing that needs autotuning is offered
    assert "cudnn-gemm-fusions" not in keys and "autotune-off" not in keys
    path = _file("fp8_cublaslt")
    ins, offered = experiments_at(path, _line(path, "cublas-gemm.clone.1"), True)
    keys = [e.key for e in offered]
    assert "triton-gemm-on" in keys and "triton-gemm-off" not in keys


def test_which_kinds_apply():
    fusion = parse(_file("fp8_triton_gemm").read_text())
    assert instruction_kind(fusion, _ins(fusion, "loop_multiply_fusion")) == FUSION
    assert instruction_kind(fusion, _ins(fusion, "gemm_fusion_dot_general.1")) == GEMM
    assert instruction_kind(fusion, _ins(fusion, "a_fp8.1")) == ""
    assert applicable(fusion, _ins(fusion, "a_fp8.1"), "gpu") == []
    [loop] = [e.key for e in applicable(fusion, _ins(fusion, "loop_multiply_fusion"), "gpu")
              if e.key == "no-priority-fusion"]
    assert loop
    mesh = parse(_file("spmd_mesh8").read_text())
    start = _ins(mesh, "all-reduce-start")
    assert instruction_kind(mesh, start) == COLLECTIVE
    keys = [e.key for e in applicable(mesh, start, "gpu")]
    assert "sync-all-reduce" in keys and "all-reduce-no-combine" in keys
    assert "sync-all-gather" not in keys
    # already synchronous in the dump: not offered again
    keys = [e.key for e in applicable(mesh, start, "gpu",
                                      {"xla_gpu_disable_async_collectives": "ALLGATHER,ALLREDUCE"})]
    assert "sync-all-reduce" not in keys


def test_cpu_dumps_get_the_cpu_entries():
    [path] = (EXAMPLES / "cpu_passes").glob("*cpu_after_optimizations.txt")
    module = parse(path.read_text())
    kinds = {i.name.name: [e.key for e in applicable(module, i, "cpu")]
             for c in module.computations for i in c.instructions if i.opcode == "fusion"}
    assert ["no-ynnpack"] in kinds.values() and ["no-cpu-fusion"] in kinds.values()


def test_the_variant_recipe_adds_the_flag_and_keeps_the_users():
    e = find_experiment("triton-gemm-off")
    assert with_flag("--xla_dump_to=/d --xla_gpu_enable_triton_gemm=true", e) == \
        "--xla_dump_to=/d --xla_gpu_enable_triton_gemm=false"
    passes = find_experiment("no-priority-fusion")
    assert with_flag("--xla_disable_hlo_passes=algsimp", passes) == \
        "--xla_disable_hlo_passes=algsimp,priority-fusion"
    assert with_flag(None, passes) == "--xla_disable_hlo_passes=priority-fusion"
    recipe = load_recipe(DEVICELESS / "fp8_triton_gemm")
    variant = variant_recipe(recipe, e)
    assert variant.env["XLA_FLAGS"].endswith(" --xla_gpu_enable_triton_gemm=false")
    assert variant.command == recipe.command and variant.target == "h100"
    assert "enable_triton_gemm" not in recipe.env["XLA_FLAGS"]  # the dump's own recipe is not changed
    assert variant_dir("/x/dump", e).as_posix() == \
        "/x/dump.experiments/xla_gpu_enable_triton_gemm=false"
    assert isinstance(variant, Recipe)


def test_the_report_on_a_real_pair():
    """fp8_cublaslt is fp8_triton_gemm's program compiled with Triton GEMM off."""
    assert "--xla_gpu_enable_triton_gemm=false" in \
        load_recipe(DEVICELESS / "fp8_cublaslt").env["XLA_FLAGS"]
    old_path, new_path = _file("fp8_triton_gemm"), _file("fp8_cublaslt")
    old, new = parse(old_path.read_text()), parse(new_path.read_text())
    e = find_experiment("triton-gemm-off")
    got = outcome(e, old, _ins(old, "gemm_fusion_dot_general.1"), new, device_for(str(new_path)))
    assert got.counterpart == "cublas-gemm.clone.1"
    assert (got.before, got.after) == ("Triton GEMM fusion", "cuBLASLt FP8 call")
    assert got.seconds_before > 0 and got.seconds_after > 0
    assert re.fullmatch(
        r"with `--xla_gpu_enable_triton_gemm=false`: `%gemm_fusion_dot_general\.1` -> one "
        r"cuBLASLt FP8 call \(`%cublas-gemm\.clone\.1`\), was a Triton GEMM fusion; estimated "
        r"\S+ [nµ]s -> \S+ [nµ]s on H100 SXM\.", got.sentence()), got.sentence()
    # the dot inside the fusion is followed as its kernel
    inner = next(i for c in old.computations for i in c.instructions if i.opcode == "dot")
    assert outcome(e, old, inner, new, device_for(str(new_path))).name == \
        "gemm_fusion_dot_general.1"
    # a fusion the variant has no counterpart of
    gone = outcome(e, old, _ins(old, "loop_multiply_fusion"), new, device_for(str(new_path)))
    assert gone.counterpart is None and "has no counterpart" in gone.sentence()


@pytest.mark.parametrize("name", ["gemm_fusion_dot_general.1"])
def test_names_in_the_sentence_are_escaped(name):
    old = parse(_file("fp8_triton_gemm").read_text())
    e = find_experiment("triton-gemm-off")
    got = outcome(e, old, _ins(old, name), old, device_for(None, "h100"))
    fake = type(got)(e, "a\x1b[2Jb", got.counterpart, got.before, got.after, None, None, "x")
    assert "\x1b" not in fake.sentence() and "\\x1b" in fake.sentence()


def test_a_failed_variant_leaves_everything_as_it_was(tmp_path):
    """The program fails: one sentence, the dump untouched, no variant directory left."""
    import asyncio
    import shutil
    import sys

    from hlo_lsp.dump.experiments import run_experiment

    dump = tmp_path / "dump"
    shutil.copytree(DEVICELESS / "fp8_triton_gemm", dump)
    before = {p.name: p.read_bytes() for p in dump.iterdir()}
    path = _file("fp8_triton_gemm")
    e = find_experiment("triton-gemm-off")
    recipe = variant_recipe(Recipe([sys.executable, "-c", "raise SystemExit(3)"],
                                   str(tmp_path)), e)
    got = asyncio.run(run_experiment(recipe, dump / path.name, _line(path, "a_fp8.1"), e,
                                     platform="cpu", probe=False))
    assert not got.ok and got.error == "the program exited with status 3"
    assert got.message.startswith("Experiment with `--xla_gpu_enable_triton_gemm=false` "
                                  "failed: the program exited with status 3. Your dump in ")
    assert not (tmp_path / "dump.experiments").exists()
    assert {p.name: p.read_bytes() for p in dump.iterdir()} == before
