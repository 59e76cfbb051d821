"""Capture (issue 43), for real: ``hlo-lsp dump --platform cpu --profile 5`` on a JAX
program outside the repository (the session's ``profiled_dump``: a convolution, a
sort, a while loop, a conditional, an FFT), the profile found beside the dump by
``find_runs`` and measuring the dump's own instructions; a recompile from the
editor's side repeating the profile its recipe records and replacing the run;
and the committed ``examples/cpu_profiled/`` being what
``examples/make_profiled_dump.py`` makes. Slow: each runs JAX."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import pathlib
import re
import shutil

import pytest

from hlo_lsp.dump import capture
from hlo_lsp.dump.profiles import find_runs, read_run
from hlo_lsp.dump.recipe import load_recipe
from hlo_lsp.syntax.parser import parse

from tests.helpers import EXAMPLES

jax = pytest.importorskip("jax")
pytestmark = pytest.mark.slow

COMMITTED = EXAMPLES / "cpu_profiled"
MODULE = "jit_net"


def _after(dump: pathlib.Path) -> pathlib.Path:
    [after] = dump.glob(f"module_*.{MODULE}.cpu_after_optimizations.txt")
    return after


def _instructions(path: pathlib.Path) -> dict[str, str]:
    """Instruction name -> opcode of every computation of the HLO file."""
    module = parse(path.read_text())
    return {i.name.name: i.opcode for c in module.computations for i in c.instructions}


def _trace_events(run) -> list[dict]:
    """The run's trace JSON read here, independently of hlo_lsp's reader: the
    complete events of ``jit_net``'s instructions."""
    [trace] = [f for f in run.files if f.endswith(".trace.json.gz")]
    with gzip.open(trace, "rt", encoding="utf-8") as f:
        data = json.load(f)
    return [e for e in data["traceEvents"]
            if e.get("ph") == "X" and e.get("args", {}).get("hlo_module") == MODULE]


def check_profile_of_its_dump(dump: pathlib.Path, calls: int) -> None:
    runs = find_runs(dump)
    assert [pathlib.Path(r.path).parent.parent.parent.name for r in runs] == ["profile"]
    [run] = runs
    assert {pathlib.Path(f).name.split(".", 1)[1] for f in run.files} == {
        "xplane.pb", "trace.json.gz"}
    events = _trace_events(run)
    names = _instructions(_after(dump))
    measured = {e["args"]["hlo_op"] for e in events}
    assert measured and measured <= set(names), measured - set(names)
    opcodes = {names[n] for n in measured}
    assert {"convolution", "sort", "while", "conditional"} <= opcodes, opcodes
    # Exactly the traced calls, each function's first (its compile) left out.
    assert len({e["args"]["run_id"] for e in events}) == calls
    # hlo_lsp's own reader reads the same events.
    read = [e for e in read_run(run).events if e.module == MODULE]
    assert len(read) == len(events)
    # The xplane names the compile: program_id is the dump's module number.
    number = int(re.match(r"module_(\d+)\.", _after(dump).name).group(1))
    [xplane] = [f for f in run.files if f.endswith(".xplane.pb")]
    data = jax.profiler.ProfileData.from_file(xplane)
    ids = {dict(ev.stats).get("program_id") for plane in data.planes for line in plane.lines
           for ev in line.events if dict(ev.stats).get("hlo_module") == MODULE}
    assert ids == {number}


def test_the_profile_found_beside_the_dump_measures_its_instructions(profiled_dump):
    check_profile_of_its_dump(profiled_dump, 5)
    assert load_recipe(profiled_dump).profile == 5
    record = capture.read_record(profiled_dump / "profile")
    assert (record.calls, record.traced, record.modules, record.platform) == (
        5, 5, {MODULE: 5}, "cpu")
    # The Python stacks of the dump name the program, never the hook.
    text = _after(profiled_dump).read_text()
    assert '"profiled_net.py"' in text and "profiling_hook" not in text


class _UI:
    """The user of a recompile from the editor: answers Run, records the rest."""

    def __init__(self):
        self.cancel = asyncio.Event()
        self.said, self.asked = [], []

    def say(self, kind, message):
        self.said.append((kind, message))

    async def confirm(self, message, choices):
        self.asked.append(message)
        return "Run"

    async def begin_progress(self, title, message):
        self.said.append(("progress", title))

    def report_progress(self, message):
        pass

    def end_progress(self, message):
        pass

    def log(self, line, kind="log"):
        pass

    def publish(self, path, problems, lines):
        pass

    async def show(self, path, take_focus):
        return False


def _recompile(dump: pathlib.Path, options: dict) -> tuple[dict, _UI]:
    from hlo_lsp.analysis.host import AnalysisHost
    from hlo_lsp.analysis.recompile import RecompileRequest
    from hlo_lsp.lsp.settings import RecompileSettings

    path = str(_after(dump))
    ui = _UI()

    async def main():
        host = AnalysisHost(lambda uri: uri[len("file://"):])
        try:
            request = RecompileRequest(pathlib.Path(path).as_uri(), path, options,
                                       RecompileSettings(), str(dump.parent))
            return await host.recompiles.run(request, ui)
        finally:
            host.close()
    return asyncio.run(main()), ui


def test_a_recompile_repeats_the_recipes_profile_and_replaces_the_run(profiled_dump, tmp_path,
                                                                      monkeypatch):
    monkeypatch.setenv("HLO_LSP_STATE_DIR", str(tmp_path / "state"))
    dump = tmp_path / "dump"
    shutil.copytree(profiled_dump, dump)
    [old] = find_runs(dump)
    os.rename(old.path, pathlib.Path(old.path).with_name("2000_01_01_00_00_00"))
    answer, ui = _recompile(dump, {})  # the plain recompile: the recipe profiles
    assert answer["ok"], answer
    assert "tracing 5 calls" in ui.asked[0]  # the confirmation says it
    [run] = find_runs(dump)
    assert run.name != "2000_01_01_00_00_00" and answer["profile_run"] == run.path
    assert f"Profiled 5 calls ({MODULE} x5) on CPU" in answer["summary"]
    check_profile_of_its_dump(dump, 5)
    # "Recompile without profiling": the profile of the previous compile goes.
    answer, _ = _recompile(dump, {"profile": 0})
    assert answer["ok"] and find_runs(dump) == [] and answer["profile_run"] is None
    assert "The profile of the previous compile" in answer["profile"]
    assert load_recipe(dump).profile is None
    # "Recompile and profile" ({"profile": N}) profiles again, and records it.
    answer, _ = _recompile(dump, {"profile": 2})
    assert answer["ok"] and len(find_runs(dump)) == 1
    check_profile_of_its_dump(dump, 2)
    assert load_recipe(dump).profile == 2


def _kinds(dump: pathlib.Path) -> set[str]:
    """The dump's files with module numbers and the run's name and host left out."""
    out = set()
    for p in dump.rglob("*"):
        if p.is_file():
            rel = p.relative_to(dump).as_posix()
            rel = re.sub(r"^module_\d+\.", "", rel)
            rel = re.sub(r"plugins/profile/[^/]+/[^/]+?\.", "plugins/profile/RUN/HOST.", rel)
            out.add(rel)
    return out


def test_the_committed_example_is_what_make_profiled_dump_makes(profiled_dump):
    assert _kinds(COMMITTED) == _kinds(profiled_dump) == {
        "hlo-lsp-recipe.json", "profile/hlo-lsp-profile.json",
        f"{MODULE}.cpu_after_optimizations.txt",
        f"{MODULE}.cpu_after_optimizations-buffer-assignment.txt",
        f"{MODULE}.cpu_after_optimizations-memory-usage-report.txt",
        "profile/plugins/profile/RUN/HOST.xplane.pb",
        "profile/plugins/profile/RUN/HOST.trace.json.gz"}
    assert sum(p.stat().st_size for p in COMMITTED.rglob("*") if p.is_file()) < 300_000
    assert _after(COMMITTED).read_text() == _after(profiled_dump).read_text()
    check_profile_of_its_dump(COMMITTED, 5)
    from jax._src.lib import xla_client as xc
    xc.hlo.hlo_module_from_text(_after(COMMITTED).read_text())
    # The committed recipe is portable: the program beside the example, any `python`.
    recipe = load_recipe(COMMITTED)
    assert (recipe.command, recipe.cwd, recipe.profile) == (
        ["python", "profiled_net.py"], str(EXAMPLES), 5)


def test_the_programs_own_module_named_like_a_runner_sibling_is_its_own(tmp_path):
    """The runners import the files beside them (runner_support, xla_flags) by
    their bare names; a program with a module of its own of the same name gets its
    own, and the hook's frames stay out of the stacks it dumps."""
    import subprocess
    import sys

    (tmp_path / "xla_flags.py").write_text("WHOSE = 'the program'\n")
    (tmp_path / "runner_support.py").write_text("WHOSE = 'the program too'\n")
    (tmp_path / "prog.py").write_text(
        "import jax, jax.numpy as jnp\nimport xla_flags, runner_support\n"
        "print(xla_flags.WHOSE, '/', runner_support.WHOSE)\n"
        "f = jax.jit(lambda x: x * 2)\nfor _ in range(3):\n    f(jnp.ones(4)).block_until_ready()\n")
    env = {**os.environ, "JAX_PLATFORMS": "cpu",
           "XLA_FLAGS": f"--xla_dump_to={tmp_path / 'dump'} --xla_dump_hlo_as_text"}
    done = subprocess.run([sys.executable, str(capture.HOOK), "--profile-dir",
                           str(tmp_path / "profile"), "--calls", "1", "--", "prog.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "the program / the program too"
    record = json.loads((tmp_path / "profile" / capture.RECORD_FILE).read_text())
    assert record["traced"] == 1, record
    [after] = (tmp_path / "dump").glob("module_*.jit__lambda*.cpu_after_optimizations.txt")
    text = after.read_text()
    assert "prog.py" in text and "profiling_hook" not in text and "runner_support" not in text
