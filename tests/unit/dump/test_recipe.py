"""Recipes (hlo_lsp.dump.recipe): XLA flags, platforms, the program's interpreter,
and the recipe inferred from a dump's stack frames. No JAX program runs here."""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import threading

import pytest

from hlo_lsp.dump import platforms
from hlo_lsp.dump import recipe as recipe_mod
from hlo_lsp.dump.environment import python_interpreter
from hlo_lsp.dump.inference import infer_recipe
from hlo_lsp.dump.platforms import choose_platform
from hlo_lsp.dump.recipe import PlatformError, Recipe
from hlo_lsp.dump.xla_flags import set_dump_flags

from tests.helpers import CPU_DUMP, ROOT


def test_set_dump_flags_replaces_dump_to_and_keeps_user_flags():
    flags = set_dump_flags('--xla_foo=1 --xla_dump_to=/old "--xla_bar=a b" '
                           '--xla_dump_hlo_as_text', "/new dir")
    assert flags == '--xla_foo=1 "--xla_bar=a b" --xla_dump_to="/new dir" ' \
                    '--xla_dump_hlo_as_text'
    assert set_dump_flags(None, "/d") == "--xla_dump_to=/d --xla_dump_hlo_as_text"


def test_choose_platform(monkeypatch):
    monkeypatch.setattr(platforms, "accelerator_visible", lambda p: p == "cpu")
    assert choose_platform("cpu") == ("cpu", "")
    platform, note = choose_platform(None, "cuda")
    assert platform == "cpu" and "no GPU is visible" in note
    with pytest.raises(PlatformError, match="no NVIDIA GPU is visible"):
        choose_platform("cuda")
    with pytest.raises(PlatformError, match="Use it"):
        choose_platform("auto", allow_cpu_fallback=False, hint="Use it.")
    monkeypatch.setattr(platforms, "accelerator_visible", lambda p: p in ("cpu", "cuda"))
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
    from hlo_lsp.dump.environment import find_program, resolved_command

    env_exe = find_program("env", "/", os.environ.get("PATH"))
    python3 = find_program("python3", "/", os.environ.get("PATH"))
    assert env_exe and os.path.isabs(env_exe) and python3
    r = Recipe(["env", "A=1", "python", "x.py"], str(tmp_path), python=sys.executable)
    assert resolved_command(r) == [env_exe, "A=1", sys.executable, "x.py"]
    # The program is the file that runs, relative to the recipe's directory.
    (tmp_path / "run.sh").write_text("#!/bin/sh\n")
    (tmp_path / "run.sh").chmod(0o755)
    r = Recipe(["./run.sh", "python"], str(tmp_path), python=sys.executable)
    assert resolved_command(r) == [str(tmp_path / "run.sh"), "python"]
    r = Recipe(["python3", "x.py"], str(tmp_path), python=str(tmp_path / "gone"))
    assert resolved_command(r) == [python3, "x.py"]
    r = Recipe(["no-such-program-here", "x"], str(tmp_path))
    assert resolved_command(r) == ["no-such-program-here", "x"]


def test_find_program_resolves_relative_path_entries_against_cwd(tmp_path):
    """As execvp after chdir: a relative PATH entry (".", "") is the program's
    working directory, not the server's."""
    from hlo_lsp.dump.environment import find_program

    (tmp_path / "bin").mkdir()
    tool = tmp_path / "bin" / "tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    assert find_program("tool", str(tmp_path), "bin") == str(tool)
    assert find_program("tool", str(tmp_path / "bin"), ":/nonexistent") == str(tool)
    assert find_program("tool", str(tmp_path), "/nonexistent") is None
    tool.chmod(0o644)
    assert find_program("tool", str(tmp_path), "bin") is None


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


SHARDED = ("ROCm__xla__perf_tools__hlo_eval_tools__science__alphafold3__"
           "inference__8gpu__module_0052.jit_apply_fn.before_optimizations.txt")


def test_jax_config_and_xla_flags_are_recorded_and_applied():
    from hlo_lsp.dump.environment import program_env, recorded_env

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
    from hlo_lsp.dump.inference import device_count
    from hlo_lsp.syntax.parser import parse
    from tests.helpers import corpus_file

    sharded = corpus_file(SHARDED)
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


# ------------------------------------------- recipes are untrusted input ---

def _write(dump, data) -> None:
    dump.mkdir(exist_ok=True)
    (dump / recipe_mod.RECIPE_FILE).write_text(json.dumps(data))


def _hostile(tmp_path, kind: str):
    """A dump directory whose recipe is of the hostile ``kind``."""
    dump = tmp_path / kind
    dump.mkdir()
    path = dump / recipe_mod.RECIPE_FILE
    if kind == "not-utf8":
        path.write_bytes(b'{"command": ["python3", "\xff.py"], "cwd": "/tmp"}')
    elif kind == "not-json":
        path.write_text('{"command": ["python3"], "cwd": ')
    elif kind == "deep":
        path.write_text("[" * 100_000 + "]" * 100_000)
    elif kind == "deep-in-field":
        path.write_text('{"command": ["a"], "cwd": "/", "x": ' + "[" * 40 + "]" * 40 + "}")
    elif kind == "large":
        path.write_text(json.dumps({"command": ["a"], "cwd": "/", "pad": "x" * (2 << 20)}))
    elif kind == "zero":
        path.symlink_to("/dev/zero")
    elif kind == "directory":
        path.mkdir()
    elif kind == "env-types":
        path.write_text(json.dumps({"command": ["a"], "cwd": "/", "env": {"A": {"x": 1}}}))
    elif kind == "env-name":
        path.write_text(json.dumps({"command": ["a"], "cwd": "/", "env": {"A=B": "1"}}))
    elif kind == "nul":
        path.write_text(json.dumps({"command": ["a\u0000b"], "cwd": "/"}))
    elif kind == "platform-list":
        path.write_text(json.dumps({"command": ["a"], "cwd": "/", "platform": ["cpu"]}))
    elif kind == "python-number":
        path.write_text(json.dumps({"command": ["a"], "cwd": "/", "python": 3}))
    return dump


HOSTILE = {"not-utf8": "is not UTF-8", "not-json": "is not valid JSON",
           "deep": "nested more than 32 levels", "deep-in-field": "nested more than 32",
           "large": "is larger than 1 MiB", "zero": "is not a regular file",
           "directory": "is not a regular file", "env-types": "'env' is not an object",
           "env-name": "'env' is not an object", "nul": "NUL character",
           "platform-list": "platform ['cpu']", "python-number": "'python' is not a string"}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_recipe_is_a_recipe_error_naming_the_file(tmp_path, kind):
    """Every unusable recipe raises RecipeError with one sentence naming the
    file (never UnicodeDecodeError, RecursionError or MemoryError), and the
    dump's source directories are found without it."""
    from hlo_lsp.dump.sources import source_dirs

    dump = _hostile(tmp_path, kind)
    with pytest.raises(recipe_mod.RecipeError) as caught:
        recipe_mod.load_recipe(dump)
    assert str(dump / recipe_mod.RECIPE_FILE) in str(caught.value)
    assert HOSTILE[kind] in str(caught.value)
    dirs = source_dirs(str(dump / "module_0001.jit_f.before_optimizations.txt"))
    assert dirs[0] == str(dump)


def test_a_fifo_recipe_is_refused_without_blocking(tmp_path):
    dump = tmp_path / "dump"
    dump.mkdir()
    fifo = dump / recipe_mod.RECIPE_FILE
    os.mkfifo(fifo)
    outcome = []

    def read():
        try:
            recipe_mod.load_recipe(dump)
        except recipe_mod.RecipeError as exc:
            outcome.append(str(exc))

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(5)
    if worker.is_alive():  # unblock it before failing
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert not worker.is_alive(), "load_recipe blocked on a FIFO"
    assert outcome and "is not a regular file" in outcome[0]


def test_relative_cwd_and_python_are_relative_to_the_dump_directory(tmp_path, monkeypatch):
    monkeypatch.chdir("/")
    dump = tmp_path / "runs" / "dump"
    _write(dump.parent, {})
    _write(dump, {"command": ["python", "train.py"], "cwd": "..", "python": "tool/python"})
    recipe = recipe_mod.load_recipe(dump)
    assert recipe.cwd == str(tmp_path / "runs")
    assert recipe.python == str(dump / "tool" / "python")
    _write(dump, {"command": ["python3", "train.py"], "cwd": "."})
    assert recipe_mod.load_recipe(dump).cwd == str(dump)
    _write(dump, {"command": ["python3", "train.py"], "cwd": "/abs/elsewhere"})
    assert recipe_mod.load_recipe(dump).cwd == "/abs/elsewhere"


def test_the_plan_shows_the_program_that_runs(tmp_path):
    """A recipe saying `python train.py` whose 'python' is a script shipped in
    the dump directory: the plan's command line is that script, as it runs."""
    from hlo_lsp.dump.environment import plan_run

    dump = tmp_path / "dump"
    dump.mkdir()
    script = dump / "python"
    script.write_text("#!/bin/sh\ntouch pwned\n")
    script.chmod(0o755)
    _write(dump, {"command": ["python", "train.py"], "cwd": ".", "python": "python",
                  "host": socket.gethostname()})
    recipe = recipe_mod.load_recipe(dump)
    plan = plan_run(recipe, {"PATH": os.defpath})
    assert plan.argv == (str(script), "train.py")
    assert plan.display_command() == f"{script} train.py"
    assert plan.cwd == str(dump) and plan.interpreter == str(script)


def test_the_plan_names_environment_changes_and_its_fingerprint_follows_them(tmp_path):
    from hlo_lsp.dump.environment import plan_run

    base = {"PATH": os.defpath, "XLA_FLAGS": "--xla_foo=1", "HOME": "/root"}
    r = Recipe([sys.executable, "x.py"], str(tmp_path),
               {"XLA_FLAGS": f"--xla_dump_to={tmp_path} --xla_dump_hlo_as_text --xla_foo=1",
                "JAX_PLATFORMS": "cuda", "JAX_ENABLE_X64": "1", "LD_PRELOAD": "/evil.so"})
    plan = plan_run(r, base)
    # Dump flags and JAX_PLATFORMS are hlo-lsp's; LD_PRELOAD is never applied.
    assert dict(plan.env) == {"XLA_FLAGS": "--xla_foo=1", "JAX_ENABLE_X64": "1"}
    assert plan.env_changes == (("JAX_ENABLE_X64", "1"),)
    assert plan.display_env() == "JAX_ENABLE_X64=1"
    assert plan.interpreter == os.path.normpath(sys.executable)
    same = plan_run(Recipe(list(r.command), str(tmp_path), dict(r.env), host="elsewhere",
                           created="2020-01-01T00:00:00Z"), base)
    assert same.fingerprint() == plan.fingerprint()
    for changed in (Recipe([sys.executable, "y.py"], str(tmp_path), dict(r.env)),
                    Recipe(list(r.command), str(tmp_path / "sub"), dict(r.env)),
                    Recipe(list(r.command), str(tmp_path), {**r.env, "JAX_ENABLE_X64": "0"}),
                    Recipe(list(r.command), str(tmp_path), {**r.env, "XLA_FLAGS": "--xla_x"})):
        assert plan_run(changed, base).fingerprint() != plan.fingerprint()
    with pytest.raises(recipe_mod.RecipeError, match="not an absolute path"):
        plan_run(Recipe(["a"], "relative/dir"), base)


def test_json_depth_ignores_strings_and_is_linear():
    import time

    from hlo_lsp.dump.recipe import json_depth

    assert json_depth("1") == 0 and json_depth("[[], {}]") == 2
    assert json_depth('{"a": [1, "[[[", {"b": "\\\\"}], "c": "]\\"]"}') == 3
    assert json_depth("[" * 1000, limit=32) == 33
    # Escaped quotes without an end: a backtracking scan would be quadratic.
    t0 = time.thread_time()   # processor time (a busy machine does not count)
    assert json_depth('"' + '\\"' * 200_000) == 0
    assert json_depth('["' + '\\' * 200_001) == 1
    assert time.thread_time() - t0 < 5
