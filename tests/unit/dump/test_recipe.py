"""Recipes (hlo_lsp.dump.recipe): XLA flags, platforms, the program's interpreter,
and the recipe inferred from a dump's stack frames. No JAX program runs here."""

from __future__ import annotations

import re
import sys

import pytest

from hlo_lsp.dump import recipe as recipe_mod
from hlo_lsp.dump.recipe import (PlatformError, Recipe, choose_platform, infer_recipe,
                                 python_interpreter, set_dump_flags)

from tests.helpers import CPU_DUMP, ROOT


def test_set_dump_flags_replaces_dump_to_and_keeps_user_flags():
    flags = set_dump_flags('--xla_foo=1 --xla_dump_to=/old "--xla_bar=a b" '
                           '--xla_dump_hlo_as_text', "/new dir")
    assert flags == '--xla_foo=1 "--xla_bar=a b" --xla_dump_to="/new dir" ' \
                    '--xla_dump_hlo_as_text'
    assert set_dump_flags(None, "/d") == "--xla_dump_to=/d --xla_dump_hlo_as_text"


def test_choose_platform(monkeypatch):
    monkeypatch.setattr(recipe_mod, "accelerator_visible", lambda p: p == "cpu")
    assert choose_platform("cpu") == ("cpu", "")
    platform, note = choose_platform(None, "cuda")
    assert platform == "cpu" and "no GPU is visible" in note
    with pytest.raises(PlatformError, match="no NVIDIA GPU is visible"):
        choose_platform("cuda")
    with pytest.raises(PlatformError, match="Use it"):
        choose_platform("auto", allow_cpu_fallback=False, hint="Use it.")
    monkeypatch.setattr(recipe_mod, "accelerator_visible", lambda p: p in ("cpu", "cuda"))
    assert choose_platform("auto") == ("cuda", "")
    assert choose_platform(None, "cpu") == ("cpu", "")
    assert choose_platform("gpu") == ("cuda", "")


def test_python_interpreter():
    py = sys.executable
    assert python_interpreter([py, "x.py"], "/") == py
    assert python_interpreter(["env", "A=1", py, "-m", "m"], "/") == py
    assert python_interpreter(["bash", "run.sh"], "/") is None
    assert python_interpreter(["./train.py"], "/") is None


def test_resolved_command_uses_the_recorded_interpreter(tmp_path):
    from hlo_lsp.dump.recipe import resolved_command

    r = Recipe(["env", "A=1", "python", "x.py"], str(tmp_path), python=sys.executable)
    assert resolved_command(r) == ["env", "A=1", sys.executable, "x.py"]
    r = Recipe(["./run.sh", "python"], str(tmp_path), python=sys.executable)
    assert resolved_command(r) == ["./run.sh", "python"]
    r = Recipe(["python3", "x.py"], str(tmp_path), python=str(tmp_path / "gone"))
    assert resolved_command(r) == ["python3", "x.py"]


def test_infer_recipe_from_stack_frames_of_the_example_dump(tmp_path):
    from hlo_lsp.syntax.parser import parse

    text = (CPU_DUMP / "module_0028.jit_train_step.cpu_after_optimizations.txt").read_text()
    # The committed dump names the program by the absolute path it was made at;
    # point it at this checkout, wherever that is.
    made_at = text[text.index('"', text.index("FileNames")) + 1:]
    made_at = made_at[:made_at.index("examples/make_dump.py")]
    module = parse(text.replace(made_at, str(ROOT) + "/"))
    proposal = infer_recipe(CPU_DUMP, module, workspace=str(ROOT), python="python3")
    assert proposal is not None and proposal.origin == "inferred"
    assert proposal.command == ["python3", "examples/make_dump.py"]
    assert proposal.cwd == str(ROOT)
    assert "outermost Python file" in proposal.note
    # No module given: the dump directory's files are read.
    dump = tmp_path / "dump"
    dump.mkdir()
    (dump / "module_0028.jit_train_step.cpu_after_optimizations.txt").write_text(
        text.replace(made_at, str(ROOT) + "/"))
    assert infer_recipe(dump, None, workspace=str(ROOT), python="python3").command == \
        proposal.command


SHARDED = ("/work/shared/corpus/ROCm__xla__perf_tools__hlo_eval_tools__science__alphafold3__"
           "inference__8gpu__module_0052.jit_apply_fn.before_optimizations.txt")


def test_jax_config_and_xla_flags_are_recorded_and_applied():
    from hlo_lsp.dump.recipe import program_env, recorded_env

    env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_ENABLE_X64": "1",
           "JAX_DEFAULT_MATMUL_PRECISION": "highest", "HOME": "/root", "PATH": "/bin"}
    rec = recorded_env(env)
    assert rec == {"JAX_DEFAULT_MATMUL_PRECISION": "highest", "JAX_ENABLE_X64": "1",
                   "XLA_FLAGS": "--xla_force_host_platform_device_count=8"}
    run = program_env({"PATH": "/bin"}, Recipe(["python3", "p.py"], "/tmp", rec), "/d", "cpu")
    assert run["JAX_ENABLE_X64"] == "1" and run["JAX_PLATFORMS"] == "cpu"
    assert "--xla_force_host_platform_device_count=8" in run["XLA_FLAGS"]
    assert "--xla_dump_to=/d" in run["XLA_FLAGS"]


def test_without_a_recipe_the_device_count_comes_from_the_module_header(tmp_path):
    """A program run with 8 devices (num_partitions=8 in the real header): the
    proposal carries the host device count flag and says what was inferred."""
    import pathlib

    from hlo_lsp.dump.recipe import device_count
    from hlo_lsp.syntax.parser import parse

    sharded = pathlib.Path(SHARDED)
    if not sharded.is_file():
        pytest.skip("the shared corpus is not here")
    header = sharded.open(encoding="utf-8").readline()
    assert device_count(parse(header + "\n")) == (8, "num_partitions=8")
    text = (CPU_DUMP / "module_0028.jit_train_step.cpu_after_optimizations.txt").read_text()
    assert device_count(parse(text)) == (1, "")
    prog = tmp_path / "make_dump.py"
    prog.write_text("")
    first, rest = text.split("\n", 1)
    text = re.sub(r'^(\d+) "[^"\n]*/make_dump\.py"$', r'\1 "make_dump.py"', rest, flags=re.M)
    module = parse(f"{first}, replica_count=2, num_partitions=4\n{text}")
    dump = tmp_path / "runs" / "dump"
    dump.mkdir(parents=True)
    proposal = infer_recipe(dump, module, python="python3")
    assert proposal.command == ["python3", "make_dump.py"] and proposal.cwd == str(tmp_path)
    assert proposal.env == {"XLA_FLAGS": "--xla_force_host_platform_device_count=8"}
    assert "replica_count=2, num_partitions=4" in proposal.note and "8 devices" in proposal.note
