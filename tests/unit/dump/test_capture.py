"""Capture (issue 43): ``hlo-lsp dump --profile [N]``'s arguments, the recipe's
``profile``, the command line that runs the program under the profiling hook
(inside the deviceless runner for a target GPU), the hook's record read as
untrusted input, and the profile folder swapped with the dump. No JAX program
runs here (the real runs: tests/e2e/test_profile_capture.py); the records and
programs below are written by the tests themselves."""

from __future__ import annotations

import asyncio
import json
import os
import sys

import pytest

from hlo_lsp.cli.main import build_parser
from hlo_lsp.dump import capture
from hlo_lsp.dump.environment import deviceless_command, new_recipe, profiled_command
from hlo_lsp.dump.recipe import (MAX_PROFILE_CALLS, Recipe, RecipeError, load_recipe,
                                 save_recipe)
from hlo_lsp.dump.recompile import recompile, swap_dump
from hlo_lsp.dump.targets import RUNNER


# ------------------------------------------------------------- arguments ---

@pytest.mark.parametrize("argv, calls", [
    (["dump", "--", "python", "x.py"], None),
    (["dump", "--profile", "--", "python", "x.py"], capture.DEFAULT_CALLS),
    (["dump", "--profile", "3", "--", "python", "x.py"], 3),
    (["dump", "--profile", "--platform", "cpu", "--", "python", "x.py"], capture.DEFAULT_CALLS),
    (["dump", "--platform", "cpu", "--profile=7", "--", "python", "x.py"], 7),
])
def test_profile_option(argv, calls):
    args = build_parser().parse_args(argv)
    assert args.profile == calls
    assert args.program[-2:] == ["python", "x.py"]


@pytest.mark.parametrize("value", ["0", "-1", "x", str(MAX_PROFILE_CALLS + 1)])
def test_profile_option_refuses_what_is_not_a_number_of_calls(value, capsys):
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["dump", "--profile", value, "--", "python", "x.py"])
    assert exc.value.code == 2
    assert "--profile" in capsys.readouterr().err


# ---------------------------------------------------------------- recipe ---

def test_the_recipe_records_profile_only_when_profiled(tmp_path):
    plain = new_recipe(["python", "x.py"], str(tmp_path), str(tmp_path / "d"), "cpu")
    assert "profile" not in plain.to_json() and plain.profile is None
    profiled = new_recipe(["python", "x.py"], str(tmp_path), str(tmp_path / "d"), "cpu",
                          profile=5)
    save_recipe(profiled, tmp_path)
    assert json.loads((tmp_path / "hlo-lsp-recipe.json").read_text())["profile"] == 5
    assert load_recipe(tmp_path).profile == 5


@pytest.mark.parametrize("value", [0, -3, True, "5", 2.5, MAX_PROFILE_CALLS + 1, [5]])
def test_a_recipe_with_a_bad_profile_is_refused(value):
    with pytest.raises(RecipeError, match="profile"):
        Recipe.from_json({"command": ["python", "x.py"], "cwd": "/w", "profile": value})


def test_a_null_profile_is_no_profile():
    assert Recipe.from_json({"command": ["python", "x.py"], "cwd": "/w",
                             "profile": None}).profile is None


# ---------------------------------------------------------- command line ---

def test_the_hook_runs_between_the_interpreter_and_the_program():
    assert profiled_command(["env", "A=1", "/v/python3", "train.py", "--lr", "1"],
                            "/d/profile", 4) == [
        "env", "A=1", "/v/python3", str(capture.HOOK), "--profile-dir", "/d/profile",
        "--calls", "4", "--", "train.py", "--lr", "1"]
    assert profiled_command(["python", "-m", "pkg.train"], "/p", 1)[-3:] == \
        ["--", "-m", "pkg.train"]


@pytest.mark.parametrize("argv", [["bash", "run.sh"], ["python"], ["python", "-u", "x.py"]])
def test_the_hook_needs_a_python_program(argv):
    with pytest.raises(RecipeError, match="profiling"):
        profiled_command(argv, "/p", 3)


def test_for_a_target_the_deviceless_runner_runs_the_hook():
    # The runner strips the dump flags before jax is imported: it must come first.
    argv = deviceless_command(profiled_command(["python", "x.py"], "/d/profile", 2),
                              "/t/h100.txtpb", "h100", "/d")
    assert argv[:2] == ["python", str(RUNNER)]
    hook = argv.index(str(capture.HOOK))
    assert argv[hook - 1] == "--" and argv[hook + 1:] == [
        "--profile-dir", "/d/profile", "--calls", "2", "--", "x.py"]


# ---------------------------------------------------------------- record ---

def _record(folder, **fields):
    folder.mkdir(parents=True, exist_ok=True)
    data = {"format": capture.RECORD_FORMAT, "calls": 5, "traced": 5,
            "modules": {"jit_net": 5}, "platform": "cpu", "devices": ["cpu:0"],
            "jax_version": "0.10.2", "errors": [], **fields}
    (folder / capture.RECORD_FILE).write_text(json.dumps(data))


def test_the_record_is_read(tmp_path):
    _record(tmp_path)
    record = capture.read_record(tmp_path)
    assert record == capture.ProfileRecord(5, 5, {"jit_net": 5}, "cpu", ("cpu:0",),
                                           "0.10.2", ())


@pytest.mark.parametrize("text", ["", "not json", "[]", '{"format": "other/1"}',
                                  '{"format": "hlo-lsp-profile/1", "calls": "5", "traced": 1}',
                                  '{"format": "hlo-lsp-profile/1", "calls": 5, "traced": -1}'])
def test_a_record_that_cannot_be_used_is_none(tmp_path, text):
    (tmp_path / capture.RECORD_FILE).write_text(text)
    assert capture.read_record(tmp_path) is None


def test_a_fifo_record_is_not_read(tmp_path):
    os.mkfifo(tmp_path / capture.RECORD_FILE)
    assert capture.read_record(tmp_path) is None


def test_the_statement_when_nothing_was_traced(tmp_path):
    _record(tmp_path / capture.PROFILE_DIR, traced=0, modules={})
    said = capture.statement(tmp_path)
    assert said.startswith("Nothing was profiled: no jitted function was called twice")
    assert "not the H100" in capture.statement(tmp_path, "H100")
    assert capture.run_directory(tmp_path) is None


def test_the_statement_when_no_run_was_written(tmp_path):
    _record(tmp_path / capture.PROFILE_DIR, errors=["could not start jax.profiler: \x1b[31m"])
    assert capture.statement(tmp_path) == (
        "No profile was written (could not start jax.profiler: \\x1b[31m).")


# ------------------------------------------------------------------ swap ---

def test_the_profile_folder_is_swapped_with_the_dump(tmp_path):
    dump, new = tmp_path / "dump", tmp_path / "new"
    (dump / "profile" / "old").mkdir(parents=True)
    (dump / "mine.txt").write_text("the user's")
    (new / "profile" / "fresh").mkdir(parents=True)
    swap_dump(dump, new)
    assert sorted(os.listdir(dump / "profile")) == ["fresh"]
    assert (dump / "mine.txt").read_text() == "the user's"
    # A run without a profile removes the old one: it measured the previous compile.
    (tmp_path / "new2").mkdir()
    swap_dump(dump, tmp_path / "new2")
    assert not (dump / "profile").exists() and (dump / "mine.txt").exists()


def test_a_failed_profiled_run_leaves_the_old_dump_and_profile(tmp_path):
    pytest.importorskip("jax")  # the hook imports it before the program fails
    dump = tmp_path / "dump"
    (dump / "profile" / "old").mkdir(parents=True)
    (dump / "module_0001.jit_f.before_optimizations.txt").write_text("HloModule f\n")
    (tmp_path / "fails.py").write_text("raise SystemExit(4)\n")
    recipe = Recipe([sys.executable, "fails.py"], str(tmp_path))
    result = asyncio.run(recompile(recipe, dump, platform="cpu", profile=3, probe=False))
    assert not result.ok and result.returncode == 4
    assert sorted(os.listdir(dump)) == ["module_0001.jit_f.before_optimizations.txt",
                                        "profile"]
    assert os.listdir(dump / "profile") == ["old"]


def test_a_profiled_run_that_cannot_take_the_hook_runs_nothing(tmp_path):
    recipe = Recipe(["/bin/sh", "-c", "touch ran"], str(tmp_path))
    result = asyncio.run(recompile(recipe, tmp_path / "dump", platform="cpu", profile=3,
                                   probe=False))
    assert not result.ok and "profiling needs a command that starts with a Python" in \
        result.error
    assert not (tmp_path / "ran").exists()
