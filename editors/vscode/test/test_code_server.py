"""The extension in a real VS Code (code-server from npm, Debian's Chromium):
editors/vscode/test-real-client/run.sh, run from pytest so the README's test
command covers it. A JAX program outside any git repository, dumped two levels
below itself; hover, hidden metadata, F12 from ``stack_frame_id=`` into the
program, the recompile code action after a layer size change (its report names
the changed shapes), *HLO: Recompile* offering the code actions' choices,
"Recompile and profile" writing a profile of the new dump beside it, the H100
code action on a CPU dump writing an ``sm_9.0a`` dump (deviceless: the program's
Python needs the ``cuda`` extra, ``jax[cuda12]``), the Measured line in hover on a real
profiled dump and *HLO: Load Profile...* (issue 43), and one notification naming the cause when the server
cannot start (no package for that Python; the package without its dependencies). Screenshots: ``$HLO_LSP_ARTIFACTS/vscode`` (default
``.ci/artifacts/vscode``).

code-server and puppeteer-core are installed once into a cache directory
(run.sh; .ci/real-vscode.sh does it before the tests in CI). Skipped when node 20,
npm, chromium, ripgrep, jax or its cuda extra is missing, unless HLO_LSP_REQUIRE_EDITORS is set:
then it fails.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
RUN = REPO / "editors" / "vscode" / "test-real-client" / "run.sh"
REQUIRED = bool(os.environ.get("HLO_LSP_REQUIRE_EDITORS"))


def _node_major() -> str | None:
    node = shutil.which("node")
    if node is None:
        return None
    out = subprocess.run([node, "-p", "process.versions.node.split('.')[0]"],
                         capture_output=True, text=True, timeout=60)
    return out.stdout.strip() or None


def _missing() -> list[str]:
    missing = [name for name in ("npm", "chromium", "rg") if shutil.which(name) is None]
    major = _node_major()
    if major != "20":
        missing.append(f"node 20 (code-server 4.100 needs it; have {major or 'none'})")
    if importlib.util.find_spec("jax") is None:
        missing.append("jax")
    if importlib.util.find_spec("jax_cuda12_plugin") is None:
        missing.append("jax[cuda12] (the cuda extra: the H100 code action compiles for one)")
    return missing


MISSING = _missing()
if MISSING and REQUIRED:
    raise RuntimeError("HLO_LSP_REQUIRE_EDITORS is set but these are missing: " + ", ".join(MISSING))
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(bool(MISSING), reason=f"not installed: {', '.join(MISSING)}")]


def test_vscode_in_code_server():
    env = dict(os.environ, HLO_LSP_PYTHON=sys.executable)
    env.pop("JAX_PLATFORMS", None)
    env.pop("HLO_REAL_CLIENT_ONLY", None)  # every mode
    # Its own process group: on a timeout, code-server, its extension host and
    # server and Chromium are stopped with it.
    proc = subprocess.Popen(["bash", str(RUN)], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=1200)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"{RUN} took more than 20 minutes:\n{out[-12000:]}")
    assert proc.returncode == 0, f"{RUN} failed (exit {proc.returncode}):\n{out[-12000:]}"
    # Every mode ran and reported (a mode that silently did nothing would pass).
    for mode, checks in (("first-hour", 8), ("examples", 12), ("profile", 4), ("no-server", 1),
                         ("broken-server", 1), ("experiment", 1), ("kernels", 2), ("passes", 6)):
        assert f"{mode}: {checks} passed, 0 failed" in out, f"{mode} did not run all its checks:\n{out[-6000:]}"
