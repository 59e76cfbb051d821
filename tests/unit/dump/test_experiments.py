"""Experiments with XLA flags (issue 44): the table, which entries apply to an
instruction of a real dump, the variant's recipe and directory, and the report
on a real deviceless pair: examples/gpu/deviceless/fp8_triton_gemm (XLA's
defaults) and fp8_cublaslt (the same program with
--xla_gpu_enable_triton_gemm=false, its recipe says so), both compiled for H100
without a GPU by jax 0.10.2."""

from __future__ import annotations

import re

import pytest

from hlo_lsp.dump.experiments import (MAX_VARIANT_NAME, experiments_at, read_debug_options,
                                      variant_dir, variant_name, variant_recipe, with_flag)
from hlo_lsp.dump.names import device_for
from hlo_lsp.dump.recipe import Recipe, load_recipe
from hlo_lsp.model.flag_experiments import (EXPERIMENTS, FUSION, GEMM, COLLECTIVE,
                                            FlagConflict, FlagExperiment, applicable, combine,
                                            find_experiment, instruction_kind, outcome)
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
    variant = variant_recipe(recipe, combine([e]))
    assert variant.env["XLA_FLAGS"].endswith(" --xla_gpu_enable_triton_gemm=false")
    assert variant.command == recipe.command and variant.target == "h100"
    assert "enable_triton_gemm" not in recipe.env["XLA_FLAGS"]  # the dump's own recipe is not changed
    assert variant_dir("/x/dump", combine([e])).as_posix() == \
        "/x/dump.experiments/xla_gpu_enable_triton_gemm=false"
    assert isinstance(variant, Recipe)


def test_the_report_on_a_real_pair():
    """fp8_cublaslt is fp8_triton_gemm's program compiled with Triton GEMM off."""
    assert "--xla_gpu_enable_triton_gemm=false" in \
        load_recipe(DEVICELESS / "fp8_cublaslt").env["XLA_FLAGS"]
    old_path, new_path = _file("fp8_triton_gemm"), _file("fp8_cublaslt")
    old, new = parse(old_path.read_text()), parse(new_path.read_text())
    e = combine([find_experiment("triton-gemm-off")])
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
    e = combine([find_experiment("triton-gemm-off")])
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
    e = combine([find_experiment("triton-gemm-off")])
    recipe = variant_recipe(Recipe([sys.executable, "-c", "raise SystemExit(3)"],
                                   str(tmp_path)), e)
    got = asyncio.run(run_experiment(recipe, dump / path.name, _line(path, "a_fp8.1"), e,
                                     platform="cpu", probe=False))
    assert not got.ok and got.error == "the program exited with status 3"
    assert got.message.startswith("Experiment with `--xla_gpu_enable_triton_gemm=false` "
                                  "failed: the program exited with status 3. Your dump in ")
    assert not (tmp_path / "dump.experiments").exists()
    assert {p.name: p.read_bytes() for p in dump.iterdir()} == before


# ------------------------------------------------- several flags at once ---

def _set(*keys):
    return combine([find_experiment(k) for k in keys])


def test_several_flags_are_one_experiment_whatever_their_order():
    """Triton GEMM off and cuBLASLt off together (seed 002: what runs the dot then)."""
    both = _set("triton-gemm-off", "cublaslt-off")
    assert both == _set("cublaslt-off", "--xla_gpu_enable_triton_gemm=false")
    assert [e.key for e in both.entries] == ["cublaslt-off", "triton-gemm-off"]
    assert both.argument == "--xla_gpu_enable_cublaslt=false --xla_gpu_enable_triton_gemm=false"
    assert both.title == "cuBLASLt off and Triton GEMM off"
    # the same flag and value twice (two entries of the table) is one flag
    assert _set("autotune-off", "autotune-off-conv").argument == "--xla_gpu_autotune_level=0"
    assert _set("triton-gemm-off", "triton-gemm-off") == _set("triton-gemm-off")
    # a list flag's values are added together, as XLA adds a repeated field's
    sync = _set("sync-all-reduce", "sync-all-gather")
    assert sync.arguments == ("--xla_gpu_disable_async_collectives=ALLGATHER,ALLREDUCE",)
    with pytest.raises(ValueError):
        combine([])


def test_one_flag_set_to_two_values_is_one_clear_error():
    with pytest.raises(FlagConflict) as got:
        _set("triton-gemm-on", "cublaslt-off", "triton-gemm-off")
    assert str(got.value) == (
        "triton-gemm-off (--xla_gpu_enable_triton_gemm=false) and triton-gemm-on "
        "(--xla_gpu_enable_triton_gemm=true) set --xla_gpu_enable_triton_gemm to different "
        "values; give one of them")


def test_the_variant_of_several_flags_has_them_all():
    recipe = load_recipe(DEVICELESS / "fp8_triton_gemm")
    both = _set("triton-gemm-off", "cublaslt-off")
    flags = variant_recipe(recipe, both).env["XLA_FLAGS"].split()
    assert flags[-2:] == ["--xla_gpu_enable_cublaslt=false",
                          "--xla_gpu_enable_triton_gemm=false"]
    assert flags[:-2] == recipe.env["XLA_FLAGS"].split()
    # a list flag keeps the recipe's own values and gets both of the experiment's
    sync = Recipe(["python", "x.py"], "/tmp",
                  env={"XLA_FLAGS": "--xla_gpu_disable_async_collectives=ALLTOALL"})
    assert variant_recipe(sync, _set("sync-all-reduce", "sync-all-gather")).env["XLA_FLAGS"] \
        == "--xla_gpu_disable_async_collectives=ALLTOALL,ALLGATHER,ALLREDUCE"
    assert with_flag("--xla_gpu_disable_async_collectives=ALLGATHER",
                     find_experiment("sync-all-reduce")) == \
        "--xla_gpu_disable_async_collectives=ALLGATHER,ALLREDUCE"


def test_the_variant_directory_of_several_flags_is_deterministic_safe_and_bounded():
    both = variant_dir("/x/dump", _set("triton-gemm-off", "cublaslt-off"))
    assert both.as_posix() == ("/x/dump.experiments/xla_gpu_enable_cublaslt=false+"
                               "xla_gpu_enable_triton_gemm=false")
    assert both == variant_dir("/x/dump", _set("cublaslt-off", "triton-gemm-off"))
    # every GPU entry that can go together: a long name, cut, with a digest of the whole
    gpu = {}
    for e in EXPERIMENTS:
        if e.platform == "gpu" and (e.list_flag or e.flag not in gpu):
            gpu.setdefault(e.flag, []).append(e)
    entries = [e for group in gpu.values() for e in group]
    name = variant_name(combine(entries))
    assert len(name) <= MAX_VARIANT_NAME and re.fullmatch(r"[\w.,=+-]+~[0-9a-f]{16}", name)
    assert name == variant_name(combine(reversed(entries)))
    assert name != variant_name(combine(entries[1:]))
    # a flag outside the table (as the tests make one) cannot leave the directory
    odd = combine([FlagExperiment("odd", "../../x y", "a/b\n", "odd", "None.", "none", GEMM,
                                  "gpu")])
    got = variant_dir("/x/dump", odd)
    assert got.parent.as_posix() == "/x/dump.experiments"
    assert re.fullmatch(r"_\.\._\.\._x_y=a_b_~[0-9a-f]{16}", got.name), got.name


def test_the_report_names_every_flag():
    old_path, new_path = _file("fp8_triton_gemm"), _file("fp8_cublaslt")
    old, new = parse(old_path.read_text()), parse(new_path.read_text())
    both = _set("triton-gemm-off", "cublaslt-off")
    got = outcome(both, old, _ins(old, "gemm_fusion_dot_general.1"), new,
                  device_for(str(new_path)))
    assert got.sentence().startswith(
        "with `--xla_gpu_enable_cublaslt=false --xla_gpu_enable_triton_gemm=false`: "
        "`%gemm_fusion_dot_general.1` -> one cuBLASLt FP8 call")
    fields = got.to_dict()
    assert [e["key"] for e in fields["experiments"]] == ["cublaslt-off", "triton-gemm-off"]
    assert fields["experiment"]["key"] == "cublaslt-off"


def test_the_command_line_takes_several_flags_and_refuses_a_conflict(tmp_path, monkeypatch,
                                                                     capsys):
    """`hlo-lsp experiment FILE:LINE --flag A --flag B`: the plan to confirm has both
    flags and the variant's directory; nothing runs unconfirmed; one flag at two
    values, or a key not in the table, is one error (exit 2)."""
    import shutil

    from hlo_lsp.cli.main import main
    from hlo_lsp.dump.trust import STATE_DIR_ENV

    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path / "state"))
    dump = tmp_path / "dump"
    shutil.copytree(DEVICELESS / "fp8_triton_gemm", dump)
    at = f"{dump / _file('fp8_triton_gemm').name}:" \
         f"{_line(_file('fp8_triton_gemm'), 'gemm_fusion_dot_general.1') + 1}"
    assert main(["experiment", at, "--flag", "triton-gemm-off",
                 "--flag=--xla_gpu_enable_cublaslt=false"]) == 2
    asked = capsys.readouterr().err
    assert ("with --xla_gpu_enable_cublaslt=false --xla_gpu_enable_triton_gemm=false added "
            "to its XLA_FLAGS, compiling into "
            f"{tmp_path}/dump.experiments/xla_gpu_enable_cublaslt=false+"
            "xla_gpu_enable_triton_gemm=false, has not been confirmed") in asked
    assert ("Environment changes: XLA_FLAGS='--xla_gpu_enable_cublaslt=false "
            "--xla_gpu_enable_triton_gemm=false'") in asked
    assert main(["experiment", at, "--flag", "triton-gemm-off", "--flag", "cublaslt-off",
                 "--flag", "triton-gemm-on", "--yes"]) == 2
    assert capsys.readouterr().err == (
        "hlo-lsp experiment: error: triton-gemm-off (--xla_gpu_enable_triton_gemm=false) and "
        "triton-gemm-on (--xla_gpu_enable_triton_gemm=true) set --xla_gpu_enable_triton_gemm "
        "to different values; give one of them\n")
    assert main(["experiment", at, "--flag", "triton-gemm-off", "--flag", "nope", "--yes"]) == 2
    assert "error: 'nope' is not in the table; one of: triton-gemm-off, " in \
        capsys.readouterr().err
    assert not (tmp_path / "dump.experiments").exists() and not (tmp_path / "state").exists()
