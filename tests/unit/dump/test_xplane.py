"""The xplane reader (hlo_lsp.dump.xplane): a real CPU profile read through
``jax.profiler.ProfileData`` in a worker process gives the events its trace JSON
gives, with ``program_id``; a file that is not one is one ProfileError and
nothing else; the worker cannot hang, crash or load jax into the caller.

The profile is made by running JAX (tests/unit/dump/conftest.py); the bad files
are made here from it (cut short, garbage bytes written over its start, a
sparse file past the limit) or are plainly not profiles, as each test says."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import defaultdict

import pytest

from hlo_lsp.dump.profiles import MAX_PROFILE_BYTES, ProfileError, read_trace_json
from hlo_lsp.dump.xplane import read_xplane

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def _totals(events):
    out = defaultdict(lambda: [0, 0.0])
    for e in events:
        out[(e.module, e.op)][0] += 1
        out[(e.module, e.op)][1] += e.duration_us
    return out


@pytest.mark.slow
def test_the_xplane_and_the_trace_json_of_one_run_give_the_same_events(cpu_profile):
    xplane = read_xplane(cpu_profile.xplane)
    trace = read_trace_json(cpu_profile.trace)
    assert xplane.events and xplane.skipped == 0
    assert xplane.devices == trace.devices == ("/host:CPU",)
    # one event for one event: same instruction, run, start and duration (the
    # JSON prints µs with 3 decimals, the xplane has integer ns)
    key = lambda e: (e.module, e.op, e.run, round(e.start_us, 3))  # noqa: E731
    assert sorted(map(key, xplane.events)) == sorted(map(key, trace.events))
    by_key = {key(e): e for e in trace.events}
    for e in xplane.events:
        assert e.duration_us == pytest.approx(by_key[key(e)].duration_us, abs=1e-3)
    x, t = _totals(xplane.events), _totals(trace.events)
    assert x.keys() == t.keys()
    for k in x:
        assert x[k][0] == t[k][0]
        assert x[k][1] == pytest.approx(t[k][1], abs=1e-3 * x[k][0])
    ops = {e.op for e in xplane.events}
    assert any(op.startswith("while") for op in ops) and any("sort" in op for op in ops)
    assert len({e.run for e in xplane.events}) == 4   # the 4 calls under the profiler


@pytest.mark.slow
def test_the_xplane_says_which_compile_it_measured(cpu_profile):
    """program_id is the number of the dump's module_NNNN files (the trace JSON
    does not have it)."""
    events = [e for e in read_xplane(cpu_profile.xplane).events
              if e.module == cpu_profile.module]
    assert events and {e.program_id for e in events} == {cpu_profile.number}
    assert {e.program_id for e in read_trace_json(cpu_profile.trace).events} == {None}
    assert all(e.track.startswith("/host:CPU/") and e.kernel == "" for e in events)


def _one_error(capfd, path, **kw) -> str:
    """The reason of the one ProfileError reading ``path`` raises; nothing
    printed by the worker reaches the caller's output."""
    with pytest.raises(ProfileError) as info:
        read_xplane(str(path), **kw)
    assert capfd.readouterr() == ("", "")
    reason = info.value.reason
    assert "\n" not in reason and str(info.value) == f"{path}: {reason}"
    return reason


@pytest.mark.slow
def test_a_corrupt_or_truncated_xplane_is_one_error(cpu_profile, tmp_path, capfd):
    data = open(cpu_profile.xplane, "rb").read()
    corrupt = tmp_path / "corrupt.xplane.pb"   # the real file, its first 64 bytes 0xff
    corrupt.write_bytes(b"\xff" * 64 + data[64:])
    assert _one_error(capfd, corrupt) == "not a profile: not an XSpace proto that can be read"
    truncated = tmp_path / "truncated.xplane.pb"   # the real file cut in half
    truncated.write_bytes(data[:len(data) // 2])
    assert _one_error(capfd, truncated) == "not a profile: not an XSpace proto that can be read"


def test_empty_fifo_huge_and_non_profile_files_are_one_error_each(tmp_path, capfd):
    empty = tmp_path / "empty.xplane.pb"
    empty.write_bytes(b"")
    assert _one_error(capfd, empty) == "not a profile: no planes"
    text = tmp_path / "notes.xplane.pb"   # not a profile: a text file under the name
    text.write_text("these are my notes, not a profile\n")
    assert _one_error(capfd, text) == "not a profile: not an XSpace proto that can be read"
    huge = tmp_path / "huge.xplane.pb"    # a sparse file one byte over the limit
    with open(huge, "wb") as f:
        f.truncate(MAX_PROFILE_BYTES + 1)
    assert _one_error(capfd, huge) == "larger than 256 MiB"
    fifo = tmp_path / "fifo.xplane.pb"
    os.mkfifo(fifo)
    assert _one_error(capfd, fifo) == "not a regular file (a FIFO)"
    assert _one_error(capfd, tmp_path / "missing.xplane.pb") == "No such file or directory"


def test_the_worker_refuses_a_fifo_itself(tmp_path):
    """The file may be replaced by a FIFO after the caller looked at it: the
    worker reads it as untrusted input too, and answers at once."""
    fifo = tmp_path / "swapped.xplane.pb"
    os.mkfifo(fifo)
    out = subprocess.run([sys.executable, "-m", "hlo_lsp.dump.xplane", str(fifo)], cwd=ROOT,
                         capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(out.stdout) == {"error": "not a regular file (a FIFO)"}


def test_a_worker_that_hangs_is_stopped(tmp_path, capfd):
    """A slow fake in place of the interpreter (a script that sleeps): the
    caller stops it after its timeout and says so."""
    slow = tmp_path / "slow-python"
    slow.write_text("#!/bin/sh\nexec sleep 600\n")
    slow.chmod(0o755)
    xplane = tmp_path / "any.xplane.pb"
    xplane.write_bytes(b"")
    reason = _one_error(capfd, xplane, python=str(slow), timeout=1)
    assert reason == "reading the xplane took longer than 1 s; stopped"


def test_a_worker_that_crashes_is_one_error(tmp_path, capfd):
    """A fake in place of the interpreter that dies of SIGSEGV, as a parser
    crashing in C++ would."""
    crash = tmp_path / "crashing-python"
    crash.write_text("#!/bin/sh\necho 'Fatal Python error: Segmentation fault' >&2\n"
                     "kill -SEGV $$\n")
    crash.chmod(0o755)
    xplane = tmp_path / "any.xplane.pb"
    xplane.write_bytes(b"")
    assert _one_error(capfd, xplane, python=str(crash)) == (
        "the xplane reader failed (signal SIGSEGV; out of memory, or not an xplane): "
        "Fatal Python error: Segmentation fault")


@pytest.mark.slow
def test_the_workers_answer_is_size_limited(cpu_profile, tmp_path):
    """Its answer goes to a file (as read_xplane has it), limited in size."""
    with open(tmp_path / "answer.json", "wb") as answer:
        out = subprocess.run([sys.executable, "-m", "hlo_lsp.dump.xplane", "--output-limit",
                              "100", cpu_profile.xplane], cwd=ROOT, stdout=answer,
                             stderr=subprocess.PIPE, text=True, timeout=300)
    assert out.returncode == 3 and "larger than the output limit" in out.stderr
    assert (tmp_path / "answer.json").stat().st_size == 0


def test_a_worker_out_of_memory_is_one_error(tmp_path, capfd):
    xplane = tmp_path / "any.xplane.pb"
    xplane.write_bytes(b"")
    reason = _one_error(capfd, xplane, memory=16 << 20)   # too little to start Python
    assert reason.startswith(("the xplane reader failed (", "out of memory")), reason


def test_without_jax_the_xplane_is_an_error_that_says_so(tmp_path, capfd, monkeypatch):
    """jax made impossible to import for the worker: a package ``jax`` that
    raises ModuleNotFoundError, first on its PYTHONPATH (a stand-in, not jax)."""
    fake = tmp_path / "nojax" / "jax"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'jax'\")\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "nojax"))
    xplane = tmp_path / "any.xplane.pb"
    xplane.write_bytes(b"")
    assert _one_error(capfd, xplane) == "reading an xplane needs jax, which is not installed"


@pytest.mark.slow
def test_reading_an_xplane_does_not_load_jax_into_the_caller(cpu_profile):
    check = textwrap.dedent(f"""
        import sys
        from hlo_lsp.dump.profiles import find_runs, read_run
        (run,) = find_runs({cpu_profile.run!r})
        trace = read_run(run)
        assert trace.path.endswith(".xplane.pb"), trace.path
        assert trace.events and trace.events[0].program_id == {cpu_profile.number}
        assert not any(m == "jax" or m.startswith(("jax.", "jaxlib")) for m in sys.modules)
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", check], cwd=ROOT, capture_output=True,
                         text=True, timeout=300, env=dict(os.environ, PYTHONPATH=ROOT))
    assert out.stdout.strip() == "ok", out.stderr


GPU_PROFILE = os.environ.get("HLO_LSP_GPU_PROFILE", "")


@pytest.mark.skipif(not GPU_PROFILE, reason="no real GPU profile given: set "
                    "HLO_LSP_GPU_PROFILE to a jax.profiler GPU run's .xplane.pb (none is "
                    "public and small enough to ship; see hlo_lsp/dump/profile_layout.py)")
def test_a_real_gpu_profile():
    """A real GPU profile: its measurements are kernels on the device planes'
    stream lines, never events of the derived lines."""
    trace = read_xplane(GPU_PROFILE)
    for e in trace.events:
        line = e.track.removeprefix(e.device + "/")
        assert not line.startswith(("XLA Ops", "XLA Modules", "Steps")), e
        if e.device.startswith("/device:GPU:"):
            assert e.kernel and e.program_id is not None, e
