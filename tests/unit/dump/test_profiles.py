"""A profile run's files (hlo_lsp.dump.profiles.read_run): the xplane first (it
says which compile it measured), the trace JSON when the xplane cannot be read,
one ProfileError when neither can. The run is a real one made by running JAX
(tests/unit/dump/conftest.py); the bad xplanes are made here from it."""

from __future__ import annotations

import os
import shutil

import pytest

from hlo_lsp.dump.profiles import ProfileError, find_runs, read_run, run_at


def test_a_runs_xplane_comes_before_its_trace_json(tmp_path):
    run = tmp_path / "plugins" / "profile" / "2026_11_29_06_10_12"
    run.mkdir(parents=True)
    for name in ("vm.trace.json.gz", "vm.xplane.pb", "perfetto_trace.json.gz"):
        (run / name).write_bytes(b"")
    (found,) = find_runs(tmp_path)
    assert [os.path.basename(f) for f in found.files] == ["vm.xplane.pb", "vm.trace.json.gz"]


@pytest.mark.slow
def test_read_run_reads_the_xplane(cpu_profile):
    trace = read_run(run_at(cpu_profile.run))
    assert trace.path == cpu_profile.xplane
    assert {e.program_id for e in trace.events} == {cpu_profile.number}


def _copy_run(cpu_profile, where) -> str:
    run = where / "plugins" / "profile" / os.path.basename(cpu_profile.run)
    shutil.copytree(cpu_profile.run, run)
    return str(run)


@pytest.mark.slow
def test_a_run_whose_xplane_cannot_be_read_is_read_from_its_trace_json(
        cpu_profile, tmp_path, capfd):
    run = _copy_run(cpu_profile, tmp_path)
    xplane = os.path.join(run, os.path.basename(cpu_profile.xplane))
    with open(xplane, "r+b") as f:   # the real xplane, its first 64 bytes 0xff
        f.write(b"\xff" * 64)
    trace = read_run(run_at(run))
    assert trace.path.endswith(".trace.json.gz") and trace.events
    assert {e.program_id for e in trace.events} == {None}
    assert capfd.readouterr() == ("", "")


@pytest.mark.slow
def test_without_jax_a_run_is_read_from_its_trace_json(cpu_profile, tmp_path, monkeypatch):
    """jax hidden from the worker by a package ``jax`` that cannot be imported
    (a stand-in on its PYTHONPATH, not jax)."""
    fake = tmp_path / "nojax" / "jax"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'jax'\")\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "nojax"))
    trace = read_run(run_at(cpu_profile.run))
    assert trace.path == cpu_profile.trace and trace.events


@pytest.mark.slow
def test_a_run_with_no_file_that_can_be_read_is_one_error(cpu_profile, tmp_path, capfd):
    run = _copy_run(cpu_profile, tmp_path)
    for name in os.listdir(run):   # both files cut to their first 100 bytes
        path = os.path.join(run, name)
        data = open(path, "rb").read()
        open(path, "wb").write(data[:100])
    with pytest.raises(ProfileError) as info:
        read_run(run_at(run))
    assert info.value.path.endswith(".trace.json.gz")
    assert "\n" not in str(info.value)
    assert capfd.readouterr() == ("", "")


def test_a_directory_with_a_nul_character_has_no_runs():
    """(found by the fuzz run through hlo/profileRuns: os.listdir raises ValueError)"""
    from hlo_lsp.dump.profiles import find_runs, run_at
    assert find_runs("/tmp/a\0b") == [] and run_at("/tmp/a\0b") is None
