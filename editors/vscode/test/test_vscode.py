"""The Node.js halves of the editor tests, run from pytest so the README's one
test command covers them:

- editors/vscode/test/run.sh: the TextMate grammar under vscode-textmate +
  vscode-oniguruma (VS Code's own engine) on real dumps, and the extension's
  pure modules plus a smoke run against the real server;
- editors/vscode/build.sh: the extension bundles, type-checks and packages
  into a .vsix with @vscode/vsce.

Skipped without npm, unless HLO_LSP_REQUIRE_EDITORS is set (CI sets it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
NPM = shutil.which("npm")

if NPM is None and os.environ.get("HLO_LSP_REQUIRE_EDITORS"):
    raise RuntimeError("HLO_LSP_REQUIRE_EDITORS is set but npm is not installed")
pytestmark = pytest.mark.skipif(NPM is None, reason="npm (Node.js) is not installed")


def _run(script: Path) -> None:
    env = dict(os.environ, HLO_LSP_PYTHON=sys.executable)
    proc = subprocess.run(["bash", str(script)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, f"{script} failed:\n{proc.stdout[-6000:]}\n{proc.stderr[-3000:]}"


def test_textmate_grammar_and_extension_modules():
    _run(HERE / "run.sh")


def test_vscode_extension_builds_and_packages():
    _run(REPO / "editors" / "vscode" / "build.sh")
    assert list((REPO / "editors" / "vscode").glob("hlo-lsp-*.vsix"))
