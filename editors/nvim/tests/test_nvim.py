"""Runs the headless Neovim tests of editors/nvim (the Lua files beside this one) in a
real Neovim.

Skipped when `nvim` is not installed (run.sh here installs it with apt-get), unless
HLO_LSP_REQUIRE_EDITORS is set.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

NVIM_TESTS = Path(__file__).resolve().parent
REPO = NVIM_TESTS.parents[2]
NVIM = os.environ.get("NVIM") or shutil.which("nvim")

if NVIM is None and os.environ.get("HLO_LSP_REQUIRE_EDITORS"):
    raise RuntimeError("HLO_LSP_REQUIRE_EDITORS is set but nvim is not installed")
pytestmark = pytest.mark.skipif(NVIM is None, reason="nvim is not installed")


def _run_nvim(script: str, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = dict(os.environ)
    full_env["HLO_LSP_CMD"] = f"{sys.executable} -m hlo_lsp"
    full_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p
    )
    full_env.update(env)
    return subprocess.run(
        [
            NVIM,
            "--headless",
            "-i",
            "NONE",
            "-u",
            str(NVIM_TESTS / "minimal_init.lua"),
            "-c",
            f"luafile {NVIM_TESTS / script}",
        ],
        cwd=REPO,
        env=full_env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _assert_ok(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 0, (
        f"nvim exited {proc.returncode}\n--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"
    )


def test_nvim_plugin_without_server() -> None:
    """Filetype detection, syntax, inline conceal with fake regions, setup()."""
    _assert_ok(_run_nvim("test_unit.lua", HLO_TEST_SETUP="0"))


def test_nvim_with_real_server() -> None:
    """Opens a real GPU dump with the plugin and `python -m hlo_lsp`."""
    _assert_ok(_run_nvim("test_lsp.lua"))
