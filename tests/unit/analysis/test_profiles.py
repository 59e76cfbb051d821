"""Profiles as inputs of a dump (hlo_lsp.analysis.profiles) through the host's
snapshot, without a server: the run found beside the dump, hover's Measured
paragraph equal to sums taken from the trace's events by the test itself, the
per-computation code lens, the graph shaded, a profile of another compile
refused, and every profile file that cannot be read told once and nothing else.

The profile is the bundled real one (examples/cpu_profiled: `hlo-lsp dump
--platform cpu --profile 5`, examples/make_profiled_dump.py). Broken files are
made here from it (cut short, overwritten, a sparse file past the limit) and
say so."""

from __future__ import annotations

import asyncio
import json
import pathlib
import shutil

import pytest

from hlo_lsp.analysis.host import AnalysisHost
from hlo_lsp.analysis.inputs import HoverInputs
from hlo_lsp.analysis.profiles import Profiles
from hlo_lsp.dump.profile_data import MAX_PROFILE_BYTES

from tests.helpers import EXAMPLES, position_of, trace_event_sums

EXAMPLE = EXAMPLES / "cpu_profiled"
DUMP = EXAMPLE / "module_0006.jit_net.cpu_after_optimizations.txt"
[RUN] = (EXAMPLE / "profile" / "plugins" / "profile").iterdir()
[TRACE] = RUN.glob("*.trace.json.gz")


def hover(path: pathlib.Path, needle: str, setting: str = "", told: list | None = None,
          times: int = 1):
    """Hover at ``needle``'s start in ``path`` (opened, analysed) with the
    profile the host's profiles find for it, ``times`` times on one host:
    (the last markdown, the code lenses' titles); what the host told the user
    is appended to ``told``."""
    text = path.read_text()
    uri = path.as_uri()
    told = [] if told is None else told

    async def run():
        host = AnalysisHost(lambda u: str(path) if u == uri else None)
        host.profiles.tell = told.append
        try:
            host.store.open(uri, 1, text)
            await host.store.analysis(uri)
            for _ in range(times):
                profile = await profile_of(host, path, setting)
                inputs = HoverInputs(None, None, [], [], None, profile)
                pos = position_of(text, needle)
                got = await host.snapshot().hover(uri, pos.line, pos.character, inputs,
                                                  _no_memory)
            lenses = await host.snapshot().code_lens(uri, profile)
            return got.markdown, [lens.title for lens in lenses]
        finally:
            host.close()

    return asyncio.run(run())


async def profile_of(host: AnalysisHost, path: pathlib.Path, setting: str = ""):
    """The host's profile for ``path``, its read awaited when it outlasted the
    answer's wait (a slow machine)."""
    profile = await host.profiles.for_file(str(path), setting)
    pending = host.profiles.pending(str(path), setting)
    if profile is None and pending is not None:
        await asyncio.wait_for(pending, 120)
        profile = await host.profiles.for_file(str(path), setting)
    return profile


async def _no_memory(analysis):
    return None


def _us(us: float) -> str:
    from hlo_lsp.model.units import format_seconds
    return format_seconds(us * 1e-6)


@pytest.mark.parametrize("name", ["convolution", "sort.0", "while.9", "cond.1.clone",
                                  "broadcast_multiply_fusion"])
def test_hover_gives_the_count_and_total_of_the_traces_events(name):
    count, total = trace_event_sums(TRACE, "jit_net")[name]
    markdown, _ = hover(DUMP, f"%{name} =")
    measured = next(p for p in markdown.split("\n\n") if p.startswith("**Measured**"))
    assert f" {count} run{'s' if count != 1 else ''}" in measured
    assert f"{_us(total)} in all" in measured           # 3 significant digits: within 1%


def test_a_loop_says_its_self_time_and_a_kernel_its_roofline_ratio():
    markdown, _ = hover(DUMP, "%while.9 =")
    assert "(self " in markdown
    markdown, _ = hover(DUMP, "%convolution =")
    assert "roofline estimate" in markdown and "x the estimate" in markdown


def test_code_lens_on_each_measured_computation():
    _, lenses = hover(DUMP, "%convolution =")
    measured = [t for t in lenses if t.startswith("measured ")]
    assert len(measured) >= 2 and any("(5 calls)" in t for t in measured)
    assert any("(15 calls)" in t for t in measured)      # the loop body, 3 iterations


def test_a_profile_of_another_compile_is_refused_naming_both(tmp_path):
    other = tmp_path / "dump" / "module_0099.jit_net.cpu_after_optimizations.txt"
    other.parent.mkdir()
    shutil.copy(DUMP, other)
    shutil.copytree(EXAMPLE / "profile", tmp_path / "dump" / "profile")
    markdown, lenses = hover(other, "%convolution =")
    assert "**Measured**" not in markdown
    assert "No measured time" in markdown
    assert "module_0006" in markdown and "module_0099" in markdown
    assert not [t for t in lenses if t.startswith("measured ")]


def test_the_setting_names_a_profile_elsewhere(tmp_path):
    dump = tmp_path / "dump"
    dump.mkdir()
    shutil.copy(DUMP, dump / DUMP.name)
    markdown, _ = hover(dump / DUMP.name, "%convolution =")
    assert "**Measured**" not in markdown                 # nothing beside it
    markdown, _ = hover(dump / DUMP.name, "%convolution =", setting=str(EXAMPLE / "profile"))
    assert "**Measured**" in markdown


def _broken_run(root: pathlib.Path, name: str, files: dict[str, bytes | int]) -> pathlib.Path:
    run = root / "profile" / "plugins" / "profile" / name
    run.mkdir(parents=True)
    for file, data in files.items():
        if isinstance(data, int):                           # a sparse file of that size
            with open(run / file, "wb") as f:
                f.truncate(data)
        else:
            (run / file).write_bytes(data)
    return run


@pytest.mark.parametrize("files,reasons", [
    # the real files cut in half
    ({"vm.xplane.pb": "half", "vm.trace.json.gz": "half"}, ["vm.xplane.pb", "vm.trace.json.gz"]),
    # garbage in place of both
    ({"vm.xplane.pb": b"\x00garbage" * 10, "vm.trace.json.gz": b"not gzip"},
     ["vm.xplane.pb", "gzip"]),
    # JSON that is not a trace, and past the size limit
    ({"vm.trace.json": json.dumps({"displayTimeUnit": "ns"}).encode(),
      "vm.xplane.pb": MAX_PROFILE_BYTES + 1}, ["not a trace", "larger than"]),
])
def test_each_file_that_cannot_be_read_is_told_once_and_nothing_is_shown(tmp_path, files,
                                                                         reasons):
    dump = tmp_path / "dump"
    dump.mkdir()
    shutil.copy(DUMP, dump / DUMP.name)
    real = {p.name: p.read_bytes() for p in RUN.iterdir()}
    made = {f: (real[f][:len(real[f]) // 2] if d == "half" else d) for f, d in files.items()}
    _broken_run(dump, "2030_01_01_00_00_00", made)
    told: list[str] = []
    # asked three times: told once
    markdown, lenses = hover(dump / DUMP.name, "%convolution =", told=told, times=3)
    assert "**Measured**" not in markdown and "No measured time" not in markdown
    assert not [t for t in lenses if t.startswith("measured ")]
    assert len(told) == len(files)
    for line in told:
        assert line.startswith("Profile not read: ") and "\n" not in line
    for reason in reasons:
        assert any(reason in line for line in told), (reason, told)


def test_a_readable_file_is_used_when_the_runs_other_file_is_broken(tmp_path):
    dump = tmp_path / "dump"
    dump.mkdir()
    shutil.copy(DUMP, dump / DUMP.name)
    _broken_run(dump, "2030_01_01_00_00_00", {"vm.xplane.pb": b"\x00garbage",
                                                "vm.trace.json.gz": TRACE.read_bytes()})
    told: list[str] = []
    markdown, _ = hover(dump / DUMP.name, "%convolution =", told=told)
    assert "**Measured**" in markdown
    assert len(told) == 1 and "vm.xplane.pb" in told[0]


def test_load_chooses_a_run_and_says_what_it_measured(tmp_path):
    async def run():
        profiles = Profiles()
        runs, loaded, message = await profiles.runs(str(DUMP), None, "")
        assert [r.path for r in runs] == [str(RUN)] and loaded is None and not message
        path, message = await profiles.load(str(DUMP), str(RUN), "")
        assert path == str(RUN) and "jit_net" in message and RUN.name in message
        assert (await profiles.runs(str(DUMP), None, ""))[1] == str(RUN)
        path, message = await profiles.load(str(DUMP), str(tmp_path), "")
        assert path is None and "No profile in" in message
    asyncio.run(run())


def test_the_graph_page_shades_the_nodes_the_profile_measured():
    text = DUMP.read_text()
    uri = DUMP.as_uri()

    async def run():
        host = AnalysisHost(lambda u: str(DUMP) if u == uri else None)
        try:
            host.store.open(uri, 1, text)
            await host.store.analysis(uri)
            profile = await profile_of(host, DUMP)
            snapshot = host.snapshot()
            shaded = await snapshot.graph(uri, "main.11", None, None, None, True,
                                          lambda g, lines, page: (g, page), profile)
            plain = await snapshot.graph(uri, "main.11", None, None, None, True,
                                         lambda g, lines, page: (g, page))
            return shaded, plain
        finally:
            host.close()

    (g, page), (g0, page0) = asyncio.run(run())
    measured = {n.name: n.measured for n in g.nodes if n.measured is not None}
    sums = trace_event_sums(TRACE, "jit_net")
    assert "convolution" in measured and "while.9" in measured
    assert measured["convolution"].total_us == pytest.approx(sums["convolution"][1], rel=0.01)
    assert g.measured_max_us and g0.measured_max_us is None
    assert page != page0


def test_a_profile_in_the_recipes_working_directory_is_found(tmp_path):
    from hlo_lsp.analysis.profiles import runs_near
    from hlo_lsp.dump.recipe import Recipe, save_recipe

    dump = tmp_path / "deep" / "dumps" / "xla_dump"
    dump.mkdir(parents=True)
    shutil.copy(DUMP, dump / DUMP.name)
    work = tmp_path / "work"
    shutil.copytree(EXAMPLE / "profile" / "plugins", work / "prof" / "plugins")
    assert runs_near(str(dump / DUMP.name), None, "") == []
    save_recipe(Recipe(command=["python", "train.py"], cwd=str(work)), dump)
    [run] = runs_near(str(dump / DUMP.name), None, "")
    assert run.name == RUN.name and run.path.startswith(str(work))


def test_a_slow_first_read_does_not_hold_the_answer_and_is_announced(monkeypatch):
    import time

    from hlo_lsp.analysis import profiles as module

    real_read_first = module.read_first

    def slow(run):
        time.sleep(0.5)
        return real_read_first(run)

    monkeypatch.setattr(module, "read_first", slow)
    monkeypatch.setattr(module, "FIRST_READ_WAIT_S", 0.05)

    async def run():
        profiles = Profiles()
        arrived = asyncio.Event()
        profiles.arrived = arrived.set
        first = await profiles.for_file(str(DUMP), "")
        await asyncio.wait_for(arrived.wait(), 30)
        return first, await profiles.for_file(str(DUMP), "")

    first, later = asyncio.run(run())
    assert first is None and later is not None and later.run.path == str(RUN)


def test_a_stage_xla_does_not_run_is_not_looked_up(monkeypatch, tmp_path):
    from hlo_lsp.analysis import profiles as module

    before = tmp_path / "module_0006.jit_net.before_optimizations.txt"
    before.write_text("HloModule jit_net\n")
    monkeypatch.setattr(module, "runs_near", lambda *a: pytest.fail("looked up"))
    assert asyncio.run(Profiles().for_file(str(before), "")) is None
