"""Issue 43, capture with a target GPU: ``hlo-lsp dump --target h100 --profile 3`` on
the profiled example's program outside the repository. The program runs on the CPU
under the deviceless runner, which runs the profiling hook as its program: the dump
is XLA's H100 dump, the profile is of the CPU run, and the output, the record and
the recipe say so; nothing claims to have measured the GPU. Needs the cuda extra
(``jax[cuda12]``), like tests/e2e/test_gpu_deviceless.py."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys

from hlo_lsp.dump import capture
from hlo_lsp.dump.profiles import find_runs
from hlo_lsp.dump.recipe import load_recipe

from tests.helpers import EXAMPLES, compile_env, needs_gpu_compile

pytestmark = needs_gpu_compile()


def test_a_deviceless_dump_profiles_the_cpu_run_and_says_so(tmp_path):
    shutil.copy(EXAMPLES / "profiled_net.py", tmp_path / "profiled_net.py")
    done = subprocess.run(
        [sys.executable, "-m", "hlo_lsp", "dump", "--target", "h100", "--profile", "3",
         "--out", "dump", "--", sys.executable, "profiled_net.py"],
        cwd=tmp_path, env=dict(compile_env(), HLO_LSP_STATE_DIR=str(tmp_path / "state")),
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    dump = tmp_path / "dump"
    [after] = dump.glob("module_*.jit_net.sm_9.0a_gpu_after_optimizations.txt")
    assert "profiling_hook" not in after.read_text()  # the stacks end at the program
    err = done.stderr
    assert "(the program's run on the CPU, not on the H100" in err
    assert "Profiled 3 calls (jit_net x3) on CPU" in err
    assert ("The program ran on the CPU: the profile measures the CPU's compile of each "
            "function, not the H100") in err
    recipe = load_recipe(dump)
    assert (recipe.target, recipe.platform, recipe.profile) == ("h100", "cpu", 3)
    record = capture.read_record(dump / "profile")
    assert (record.traced, record.platform) == (3, "cpu")
    [run] = find_runs(dump)
    [trace] = [f for f in run.files if f.endswith(".trace.json.gz")]
    with gzip.open(trace, "rt") as f:
        data = json.load(f)["traceEvents"]
    events = [e for e in data if e.get("args", {}).get("hlo_module") == "jit_net"]
    assert len({e["args"]["run_id"] for e in events}) == 3
    # Measured on the CPU: the trace has no GPU device (its processes are the planes).
    planes = [e["args"]["name"] for e in data
              if e.get("ph") == "M" and e.get("name") == "process_name"]
    assert any("CPU" in p for p in planes) and not any("GPU" in p for p in planes), planes
