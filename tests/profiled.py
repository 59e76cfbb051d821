"""A real profiled dump, made at test time: a JAX program (a convolution, a
sort, a while loop, a conditional) run on the CPU with XLA's dump flags and
under ``jax.profiler.trace`` twice, so that the dump directory holds two runs
of different lengths (the editors' tests tell which run a hover comes from by
its count). Nothing here is written by hand: XLA writes the dump and
``jax.profiler`` the runs; :func:`op_count` reads the counts back from the
run's trace JSON on its own, as the oracle of the tests. (The readers' real
profile, :func:`tests.helpers.real_cpu_profile`, holds two compiles of the
module instead, one run each.)

    python -m tests.profiled OUT     # make it in OUT, print its paths as JSON

Layout (``OUT/proj``, the program beside its dump)::

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
from dataclasses import dataclass

#: Steps measured in the first and the second (newest) run.
FIRST_STEPS = 3
SECOND_STEPS = 5

PROGRAM = f"""\
import sys
import time

import jax
import jax.numpy as jnp
from jax import lax


def net(x, k):
    y = lax.conv_general_dilated(x, k, (1, 1), "SAME")
    y = jnp.sort(y.reshape(-1))

    def body(c):
        i, v = c
        return i + 1, jnp.tanh(v) * 1.01

    _, y = lax.while_loop(lambda c: c[0] < 3, body, (0, y))
    y = lax.cond(y.sum() > 0, lambda v: v * 2, lambda v: v - 1, y)
    return y.sum()


f = jax.jit(net)
x = jnp.ones((2, 3, 16, 16))
k = jnp.ones((4, 3, 3, 3))
f(x, k).block_until_ready()  # compiled before the profiles
for steps in ({FIRST_STEPS}, {SECOND_STEPS}):
    with jax.profiler.trace(sys.argv[1]):
        for _ in range(steps):
            f(x, k).block_until_ready()
    time.sleep(1.2)  # runs are named by the second they start
"""


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
    """Run :data:`PROGRAM` with ``python`` (JAX on the CPU) in ``out/proj``;
    raises RuntimeError with its output when it fails."""
    proj = pathlib.Path(out) / "proj"
    proj.mkdir(parents=True, exist_ok=True)
    program = proj / "net.py"
    program.write_text(PROGRAM)
    dump = proj / "dump"
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               XLA_FLAGS=f"--xla_dump_to={dump} --xla_dump_hlo_as_text")
    done = subprocess.run([python, str(program), str(dump / "prof")], cwd=proj, env=env,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{program} failed ({done.returncode}):\n{done.stderr[-4000:]}")
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
