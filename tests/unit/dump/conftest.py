"""A real profile for the readers' tests: the tests' JAX program (a convolution,
a sort, a while loop, a conditional; :func:`tests.profiled.run_profiled_program`)
run on the CPU under ``jax.profiler.trace``, with XLA's dump beside it, made once
per session by running JAX (the tests using it are ``slow``)."""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass

import pytest


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
    from tests.profiled import SIZE, run_profiled_program

    where = tmp_path_factory.mktemp("cpu_profile")
    run_profiled_program(where, where / "dump", [(where / "prof", SIZE, 4)])
    (run,) = glob.glob(str(where / "prof" / "plugins" / "profile" / "*"))
    (xplane,) = glob.glob(os.path.join(run, "*.xplane.pb"))
    (trace,) = glob.glob(os.path.join(run, "*.trace.json.gz"))
    (dump,) = glob.glob(str(where / "dump" / "module_*.jit_net.cpu_after_optimizations.txt"))
    number = int(re.search(r"module_(\d+)\.", os.path.basename(dump)).group(1))
    return CpuProfile(run, xplane, trace, "jit_net", number)
