"""Recompiling a dump, as the analysis layer answers it (hlo_lsp.analysis.recompile),
without a server or pygls: the actions offered for the real dumps of examples/,
and the command's refusals, confirmation and recipe problems seen through a
fake :class:`~hlo_lsp.analysis.recompile.RecompileUI` that records what the user
would be shown. No program runs here: each case ends before one would (the end
to end runs are tests/e2e/test_recompile.py, test_recipe_trust.py)."""

from __future__ import annotations

import asyncio
import os
import pathlib
import shutil
import sys
from urllib.parse import unquote, urlparse

import pytest

from hlo_lsp.analysis import recompile as rc
from hlo_lsp.analysis.host import AnalysisHost
from hlo_lsp.analysis.recompile import NOT_CONFIRMED, RecompileRequest
from hlo_lsp.dump import platforms
from hlo_lsp.dump.recipe import RECIPE_FILE, Recipe, save_recipe
from hlo_lsp.dump.trust import STATE_DIR_ENV
from hlo_lsp.lsp.settings import RecompileSettings

from tests.helpers import ROOT

CPU_DUMP = ROOT / "examples/cpu_dump"
CPU_FILE = CPU_DUMP / "module_0028.jit_train_step.cpu_after_optimizations.txt"
H100_DUMP = ROOT / "examples/gpu/deviceless/fp8_cublaslt"
H100_FILE = H100_DUMP / "module_0001.jit_matmul_fn_with_scale.sm_9.0a_gpu_after_optimizations.txt"

#: A program that leaves ./canary in its directory when it runs.
CANARY = "open('canary', 'a').write('ran')"


def _to_path(uri: str) -> str | None:
    return unquote(urlparse(uri).path) if uri.startswith("file:") else None


class FakeUI:
    """A RecompileUI that records what it is told and answers the confirmation
    with ``answer`` (after ``release`` is set, when given)."""

    def __init__(self, answer: str | None = None, release: asyncio.Event | None = None):
        self.cancel = asyncio.Event()
        self.answer, self.release = answer, release
        self.said: list[tuple[str, str]] = []
        self.asked: list[str] = []
        self.progress: list[str] = []
        self.logged: list[str] = []

    def say(self, kind, message):
        self.said.append((kind, message))

    async def confirm(self, message, choices):
        assert choices == [rc.RUN, rc.CANCEL]
        self.asked.append(message)
        if self.release is not None:
            await self.release.wait()
        return self.answer

    async def begin_progress(self, title, message):
        self.progress.append(title)

    def report_progress(self, message):
        self.progress.append(message)

    def end_progress(self, message):
        self.progress.append(message)

    def log(self, line, kind="log"):
        self.logged.append(line)

    def publish(self, path, problems, lines):
        raise AssertionError("nothing ran: nothing to refresh")

    async def show(self, path, take_focus):
        raise AssertionError("nothing ran: nothing to show")


def run(coro_fn):
    """``await coro_fn(host)`` on a fresh host."""
    async def main():
        host = AnalysisHost(_to_path)
        try:
            return await coro_fn(host)
        finally:
            host.close()
    return asyncio.run(main())


@pytest.fixture(autouse=True)
def state(tmp_path, monkeypatch):
    """This test's own trust state (nothing confirmed), and no GPU here."""
    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path / "state"))
    monkeypatch.setattr(rc, "default_platform", lambda: None)
    monkeypatch.setattr(platforms, "default_platform", lambda: None)


@pytest.fixture
def dump(tmp_path) -> pathlib.Path:
    """A copy of the CPU dump of examples/ with a recipe whose program would
    leave ``canary`` in ``tmp_path``."""
    out = tmp_path / "dump"
    shutil.copytree(CPU_DUMP, out)
    save_recipe(Recipe([sys.executable, "-c", CANARY], str(tmp_path)), out)
    return out


def _request(dump: pathlib.Path, **settings) -> RecompileRequest:
    path = str(dump / CPU_FILE.name)
    return RecompileRequest(pathlib.Path(path).as_uri(), path, {},
                            RecompileSettings(**settings), str(dump.parent))


def check_actions(path: pathlib.Path, expected: list[tuple[str, list]]) -> None:
    said = []
    got = run(lambda host: host.recompiles.actions(str(path), RecompileSettings(),
                                                   lambda *m: said.append(m)))
    assert got == expected
    assert said == []


def test_actions_of_a_cpu_dump():
    check_actions(CPU_FILE, [("Recompile with JAX on CPU and refresh", []),
                             ("Recompile and profile", [{"profile": 10}]),
                             ("Compile for H100 here, no GPU needed", [{"target": "h100"}])])


def test_actions_of_a_dump_whose_recipe_profiles(tmp_path):
    # Issue 43: `hlo-lsp dump --profile 5` recorded it; the plain recompile repeats it,
    # the second action runs without it.
    out = tmp_path / "dump"
    shutil.copytree(CPU_DUMP, out)
    save_recipe(Recipe([sys.executable, "x.py"], str(tmp_path), profile=5), out)
    check_actions(out / CPU_FILE.name,
                  [("Recompile with JAX on CPU, profile and refresh", []),
                   ("Recompile without profiling", [{"profile": 0}]),
                   ("Compile for H100 here, no GPU needed", [{"target": "h100"}])])


@pytest.mark.parametrize("options, recorded, calls", [
    ({}, None, None), ({}, 5, 5), ({"profile": 3}, None, 3), ({"profile": 0}, 5, None),
    ({"profile": True}, None, 10), ({"profile": 10**9}, None, 10), ({"profile": "x"}, 5, None),
    ({"platform": "cpu"}, 7, 7)])
def test_profile_calls_from_the_options_else_the_recipe(options, recorded, calls):
    recipe = Recipe(["python", "x.py"], "/tmp", profile=recorded)
    assert rc.profile_calls(options, recipe) == calls
    assert rc.profile_calls(options, None) == (None if not options.get("profile") or
                                               options["profile"] == "x" else calls)


def test_actions_of_a_deviceless_h100_dump():
    # its recipe compiled for the H100: that first, then a run on the CPU
    check_actions(H100_FILE, [("Compile for H100 here, no GPU needed", []),
                              ("Run on the CPU and refresh", [{"platform": "cpu"}])])


def test_a_declined_confirmation_runs_nothing(dump, tmp_path):
    ui = FakeUI(answer=rc.CANCEL)
    got = run(lambda host: host.recompiles.run(_request(dump, platform="cpu"), ui))
    assert got["cancelled"] and got["error"] == "not confirmed"
    assert got["summary"] == NOT_CONFIRMED and sys.executable in got["command"]
    [asked] = ui.asked
    assert asked.startswith(f"The recipe {dump / RECIPE_FILE} asks to run a command you "
                            "have not confirmed.")
    assert ui.said == [("info", NOT_CONFIRMED)]
    assert ui.progress == [] and ui.logged == []
    assert not (tmp_path / "canary").exists()
    assert not (tmp_path / "state").exists()  # nothing remembered


def test_a_recompile_in_progress_refuses_another_of_the_same_directory(dump, tmp_path):
    async def both(host):
        release = asyncio.Event()
        first_ui, second_ui = FakeUI(rc.CANCEL, release), FakeUI(rc.RUN)
        first = asyncio.ensure_future(host.recompiles.run(_request(dump, platform="cpu"),
                                                          first_ui))
        while not first_ui.asked:  # the first waits for its confirmation
            await asyncio.sleep(0.01)
        second = await host.recompiles.run(_request(dump, platform="cpu"), second_ui)
        release.set()
        return await first, second, second_ui, host.recompiles.running

    first, second, second_ui, running = run(both)
    refused = f"A recompile of {dump} is already running."
    assert second == {"error": refused, "summary": refused}
    assert second_ui.said == [("error", refused)] and second_ui.asked == []
    assert first["cancelled"] and running == set()
    assert not (tmp_path / "canary").exists()


def test_an_unusable_recipe_is_said_once_per_version_and_refuses_the_recompile(dump):
    recipe = dump / RECIPE_FILE
    recipe.write_text("{not json", encoding="utf-8")

    async def ask(host):
        said: list[tuple[str, str]] = []
        for _ in range(2):  # e.g. links, then the code action
            await host.recompiles.recipe(str(dump), lambda *m: said.append(m))
        once = list(said)
        recipe.write_text("[1, 2", encoding="utf-8")  # another version of the file
        os.utime(recipe, ns=(1, 1))
        await host.recompiles.recipe(str(dump), lambda *m: said.append(m))
        ui = FakeUI(rc.RUN)
        return once, said, await host.recompiles.run(_request(dump), ui), ui

    once, said, got, ui = run(ask)
    [(kind, message)] = once
    assert kind == "warning" and message.startswith(
        "hlo-lsp does not use this dump's recipe: ") and message.endswith(
        "Links, definitions and hover work without it; to recompile, fix or remove the "
        "file (or set hlo.recompile.command).")
    assert len(said) == 2
    assert got["error"].startswith("Cannot recompile: ") and ui.asked == []
    assert ui.said == [("error", got["error"])]


# ----------------------------------------------- experiments with flags ---

def _line_of(path: pathlib.Path, needle: str) -> int:
    return next(i for i, s in enumerate(path.read_text().split("\n")) if needle in s)


def test_experiment_actions_at_an_instruction():
    """Issue 44: at the cuBLASLt call of the Triton-GEMM-off H100 example, after the
    recompile actions, 'Triton GEMM on' (its debug_options say off); none elsewhere."""
    line = _line_of(H100_FILE, "custom_call_target=")
    plain = run(lambda host: host.recompiles.actions(str(H100_FILE), RecompileSettings(),
                                                      lambda *m: None))
    got = run(lambda host: host.recompiles.actions(str(H100_FILE), RecompileSettings(),
                                                    lambda *m: None, line))
    assert got[:len(plain)] == plain
    assert ("Recompile with Triton GEMM on (--xla_gpu_enable_triton_gemm=true)",
            [{"experiment": "triton-gemm-on", "line": line}]) in got[len(plain):]
    assert not [t for t, _ in got if "Triton GEMM off" in t]
    assert run(lambda host: host.recompiles.actions(str(H100_FILE), RecompileSettings(),
                                                    lambda *m: None, 0)) == plain


def test_an_experiment_is_confirmed_with_its_flag_and_a_cancel_runs_nothing(dump, tmp_path):
    path = dump / CPU_FILE.name
    line = _line_of(path, " fusion(")
    ui = FakeUI(rc.CANCEL)
    request = RecompileRequest(path.as_uri(), str(path),
                               {"experiment": "no-cpu-fusion", "line": line},
                               RecompileSettings(), str(tmp_path))
    answer = run(lambda host: host.recompiles.run(request, ui))
    assert answer["cancelled"] and answer["summary"] == NOT_CONFIRMED
    [asked] = ui.asked
    assert "XLA_FLAGS=--xla_disable_hlo_passes=fusion" in asked
    assert f"{dump}.experiments" in asked
    assert not (tmp_path / "canary").exists()
    assert not pathlib.Path(f"{dump}.experiments").exists()


def test_an_experiment_not_in_the_table_is_refused(dump, tmp_path):
    path = dump / CPU_FILE.name
    ui = FakeUI(rc.RUN)
    request = RecompileRequest(path.as_uri(), str(path), {"experiment": "rm -rf", "line": 3},
                               RecompileSettings(), str(tmp_path))
    answer = run(lambda host: host.recompiles.run(request, ui))
    assert "not an entry of hlo-lsp's table" in answer["error"] and ui.asked == []
    assert not (tmp_path / "canary").exists()


def test_the_debug_options_are_read_once_and_again_after_a_change(tmp_path, monkeypatch):
    """The experiments' code actions ask the module's *.debug_options on every
    request: read once per version of the dump directory (DumpInputs.debug_options),
    read again after a file-change event of the dump (here a recompile that left
    Triton GEMM on)."""
    from hlo_lsp.analysis.inputs import DumpInputs
    from hlo_lsp.dump import experiments

    out = tmp_path / "fp8_cublaslt"
    shutil.copytree(H100_DUMP, out)
    path = out / H100_FILE.name
    [options] = out.glob("*.debug_options")
    line = _line_of(path, "custom_call_target=")
    reads = []

    def counted(file, *args, **kwargs):
        if str(file).endswith(".debug_options"):
            reads.append(str(file))
        return read_text(file, *args, **kwargs)

    read_text = experiments.read_text
    monkeypatch.setattr(experiments, "read_text", counted)

    async def ask(host):
        # kept while the dump does not change, however slow this machine is
        host.inputs = host.recompiles.inputs = DumpInputs(deviceless_ttl=3600)

        async def titles():
            got = await host.recompiles.actions(str(path), RecompileSettings(),
                                                lambda *m: None, line)
            return [t for t, _ in got if "Triton GEMM" in t]

        first, second = await titles(), await titles()
        once = list(reads)
        options.write_text(options.read_text().replace("xla_gpu_enable_triton_gemm: false\n",
                                                        ""))
        await host.files_changed([str(path)], [], lambda message: None)
        return first, second, once, await titles()

    first, second, once, changed = run(ask)
    on = "Recompile with Triton GEMM on (--xla_gpu_enable_triton_gemm=true)"
    off = "Recompile with Triton GEMM off (--xla_gpu_enable_triton_gemm=false)"
    assert first == second == [on]
    assert once == [str(options)]
    assert changed == [off] and reads == [str(options)] * 2


def test_an_experiment_with_several_flags_is_confirmed_with_them_all(dump, tmp_path):
    """The command also takes a list of keys: those flags together; one flag at two
    values is refused before anything is asked."""
    path = dump / CPU_FILE.name
    line = _line_of(path, " fusion(")
    ui = FakeUI(rc.CANCEL)
    request = RecompileRequest(path.as_uri(), str(path),
                               {"experiment": ["no-ynnpack", "no-cpu-fusion"], "line": line},
                               RecompileSettings(), str(tmp_path))
    answer = run(lambda host: host.recompiles.run(request, ui))
    assert answer["cancelled"] and answer["summary"] == NOT_CONFIRMED
    [asked] = ui.asked
    assert ("XLA_FLAGS='--xla_cpu_experimental_ynn_fusion_type= "
            "--xla_disable_hlo_passes=fusion'") in asked, asked
    assert (f"{dump}.experiments/xla_cpu_experimental_ynn_fusion_type=+"
            "xla_disable_hlo_passes=fusion") in asked
    ui = FakeUI(rc.RUN)
    request = RecompileRequest(path.as_uri(), str(path),
                               {"experiment": ["triton-gemm-on", "triton-gemm-off"],
                                "line": line}, RecompileSettings(), str(tmp_path))
    answer = run(lambda host: host.recompiles.run(request, ui))
    assert answer["error"] == (
        "Cannot run the experiment: triton-gemm-off (--xla_gpu_enable_triton_gemm=false) and "
        "triton-gemm-on (--xla_gpu_enable_triton_gemm=true) set --xla_gpu_enable_triton_gemm "
        "to different values; give one of them.")
    assert ui.asked == [] and not (tmp_path / "canary").exists()
    assert not pathlib.Path(f"{dump}.experiments").exists()
