"""Real profiles, made at test time: the one JAX program the tests profile
(:data:`PROGRAM`: a convolution, a sort, a while loop, a conditional, jitted as
``jit_net``) run on the CPU with XLA's dump flags and under ``jax.profiler.trace``
(:func:`run_profiled_program`, the one function that makes them). Nothing here
is written by hand: XLA writes the dump and ``jax.profiler`` the runs;
:func:`op_count` reads the counts back from a run's trace JSON on its own, as
the oracle of the tests. Its users, each making the profile it needs once:

- :func:`make_profiled_dump` (the editors' tests, the profile commands): one
  compile, two runs of different lengths in the dump directory (the editors'
  tests tell which run a hover comes from by its count);
- :func:`tests.helpers.real_cpu_profile` (the readers' end-to-end tests): two
  compiles of the module (other shapes), one run each in its own directory;
- ``cpu_profile`` of tests/unit/dump/conftest.py: one compile, one run.

(:func:`tests.helpers.make_profiled_dump` is another path: ``hlo-lsp dump
--profile`` on examples/profiled_net.py, the committed example.)

    python -m tests.profiled OUT     # make_profiled_dump in OUT, print its paths as JSON

Layout of :func:`make_profiled_dump` (``OUT/proj``, the program beside its dump)::

    net.py
    dump/module_NNNN.jit_net.cpu_after_optimizations.txt   (and XLA's other files)
    dump/prof/plugins/profile/<run 1>/<host>.trace.json.gz  (FIRST_STEPS steps)
    dump/prof/plugins/profile/<run 2>/<host>.trace.json.gz  (SECOND_STEPS steps)
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass

#: Steps measured in the first and the second (newest) run of make_profiled_dump.
FIRST_STEPS = 3
SECOND_STEPS = 5
#: The spatial size of the program's input at which it is compiled by default
#: (another size is another compile, with one step less: no ``sin``).
SIZE = 16

#: The JAX program: ``python net.py SESSIONS`` with SESSIONS a JSON list of
#: ``[trace directory, input size, steps]``: for each, ``jit_net`` compiled for
#: that size before the trace starts, then ``steps`` executions under
#: ``jax.profiler.trace(directory)``; 1.2 s between sessions (a run is named by
#: the second it starts, so two runs in one directory need distinct seconds).
PROGRAM = """\
import json
import sys
import time

import jax
import jax.numpy as jnp
from jax import lax


def net(x, k):
    y = lax.conv_general_dilated(x, k, (1, 1), "SAME")
    if x.shape[-1] > 8:  # the other shapes compile a program with one step less
        y = jnp.sin(y)
    y = jnp.sort(y.reshape(-1))

    def body(c):
        i, v = c
        return i + 1, jnp.tanh(v) * 1.01

    _, y = lax.while_loop(lambda c: c[0] < 3, body, (0, y))
    y = lax.cond(y.sum() > 0, lambda v: v * 2, lambda v: v - 1, y)
    return y.sum()


f = jax.jit(net)
for i, (where, n, steps) in enumerate(json.loads(sys.argv[1])):
    if i:
        time.sleep(1.2)
    x, k = jnp.ones((2, 3, n, n)), jnp.ones((4, 3, 3, 3))
    f(x, k).block_until_ready()  # compiled before the profile starts
    with jax.profiler.trace(where):
        for _ in range(steps):
            f(x, k).block_until_ready()
"""


def run_profiled_program(workdir: pathlib.Path, dump: pathlib.Path,
                         sessions: Sequence[tuple[pathlib.Path, int, int]],
                         python: str = sys.executable) -> pathlib.Path:
    """Write :data:`PROGRAM` to ``workdir/net.py`` and run it with ``python`` (JAX
    on the CPU, ``JAX_PLATFORMS=cpu``) in ``workdir``, XLA dumping the HLO text of
    its compiles into ``dump``; ``sessions``: ``(trace directory, input size,
    steps)`` each (see :data:`PROGRAM`). Returns the program's path. Slow (a JAX
    process, several seconds); raises RuntimeError with its output when it
    fails (a 600 s hang guard)."""
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    program = workdir / "net.py"
    program.write_text(PROGRAM)
    env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3",
               XLA_FLAGS=f"--xla_dump_to={dump} --xla_dump_hlo_as_text")
    arg = json.dumps([[str(where), n, steps] for where, n, steps in sessions])
    done = subprocess.run([python, str(program), arg], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{program} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return program


@dataclass(frozen=True)
class ProfiledDump:
    """``dump``: the dump directory; ``after``: jit_net's after-optimizations
    file; ``runs``: the two run directories, oldest first; ``program``."""

    dump: pathlib.Path
    after: pathlib.Path
    runs: tuple[pathlib.Path, ...]
    program: pathlib.Path

    def as_json(self) -> dict:
        return {"dump": str(self.dump), "after": str(self.after),
                "runs": [str(r) for r in self.runs], "program": str(self.program)}


def make_profiled_dump(out: pathlib.Path, python: str = sys.executable) -> ProfiledDump:
    """:func:`run_profiled_program` in ``out/proj``: one compile, runs of
    :data:`FIRST_STEPS` then :data:`SECOND_STEPS` steps in ``dump/prof``; raises
    RuntimeError with its output when it fails."""
    proj = pathlib.Path(out) / "proj"
    dump = proj / "dump"
    program = run_profiled_program(proj, dump, [(dump / "prof", SIZE, FIRST_STEPS),
                                                (dump / "prof", SIZE, SECOND_STEPS)], python)
    [after] = dump.glob("module_*.jit_net.cpu_after_optimizations.txt")
    runs = tuple(sorted(p for p in (dump / "prof" / "plugins" / "profile").iterdir()
                        if p.is_dir()))
    if len(runs) != 2:
        raise RuntimeError(f"expected two profile runs, found {[r.name for r in runs]}")
    return ProfiledDump(dump, after, runs, program)


def op_count(run: pathlib.Path, op: str, module: str = "jit_net") -> int:
    """How many times the run's trace JSON measured instruction ``op`` of
    ``module`` (:func:`tests.helpers.trace_event_sums`: its complete events,
    read with gzip and json alone)."""
    from tests.helpers import trace_event_sums

    [trace] = run.glob("*.trace.json.gz")
    return trace_event_sums(trace, module).get(op, (0, 0.0))[0]


if __name__ == "__main__":
    made = make_profiled_dump(pathlib.Path(sys.argv[1]))
    print(json.dumps(made.as_json()))
