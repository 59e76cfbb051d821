"""A real profile for the readers' tests: a JAX program (a convolution, a sort,
a while loop, a conditional) run on the CPU under ``jax.profiler.trace``, with
XLA's dump beside it, made once per session by running JAX (the tests using it
are ``slow``)."""

from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
from dataclasses import dataclass

import pytest

PROGRAM = """
import jax, jax.numpy as jnp
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
x = jnp.ones((2, 3, 16, 16)); k = jnp.ones((4, 3, 3, 3))
f(x, k).block_until_ready()
with jax.profiler.trace("prof"):
    for _ in range(4):
        f(x, k).block_until_ready()
"""


@dataclass(frozen=True)
class CpuProfile:
    """``run``: the run directory (``prof/plugins/profile/<run>``); ``xplane``,
    ``trace``: its two files; ``module``: the profiled module's name
    (``jit_net``); ``number``: its dump's ``module_NNNN`` number."""

    run: str
    xplane: str
    trace: str
    module: str
    number: int


@pytest.fixture(scope="session")
def cpu_profile(tmp_path_factory) -> CpuProfile:
    where = tmp_path_factory.mktemp("cpu_profile")
    (where / "net.py").write_text(PROGRAM)
    env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3",
               XLA_FLAGS=f"--xla_dump_to={where / 'dump'}")
    subprocess.run([sys.executable, "net.py"], cwd=where, env=env, check=True, timeout=600,
                   capture_output=True)
    (run,) = glob.glob(str(where / "prof" / "plugins" / "profile" / "*"))
    (xplane,) = glob.glob(os.path.join(run, "*.xplane.pb"))
    (trace,) = glob.glob(os.path.join(run, "*.trace.json.gz"))
    (dump,) = glob.glob(str(where / "dump" / "module_*.jit_net.cpu_after_optimizations.txt"))
    number = int(re.search(r"module_(\d+)\.", os.path.basename(dump)).group(1))
    return CpuProfile(run, xplane, trace, "jit_net", number)
