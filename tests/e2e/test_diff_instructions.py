"""Issue 13 point 4 end to end: `hlo-lsp diff` on real dumps of a JAX program
before and after a change (a layer size; an added tanh) names the changed and
added instructions per Python line, and warns about dumps of two programs.
Runs JAX on the CPU (slow)."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("jax")
pytestmark = pytest.mark.slow

ROOT = pathlib.Path(__file__).resolve().parents[2]

PROGRAM = """\
import jax
import jax.numpy as jnp

HIDDEN = {hidden}


@jax.jit
def mlp(w1, w2, x):
    h = {hidden_layer}
    return (h @ w2).sum()


print(mlp(jnp.ones((64, HIDDEN)), jnp.ones((HIDDEN, 10)), jnp.ones((32, 64))))
"""
RELU = "jnp.maximum(x @ w1, 0.0)"


def _dump(tmp: pathlib.Path, name: str, hidden: int, layer: str) -> pathlib.Path:
    work = tmp / name
    work.mkdir()
    (work / "prog.py").write_text(PROGRAM.format(hidden=hidden, hidden_layer=layer))
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               XLA_FLAGS=f"--xla_dump_to={work / 'dump'} --xla_dump_hlo_as_text")
    subprocess.run([sys.executable, "prog.py"], cwd=work, env=env, check=True,
                   capture_output=True, timeout=300)
    [after] = (work / "dump").glob("*jit_mlp.cpu_after_optimizations.txt")
    return after


def _diff(a: pathlib.Path, b: pathlib.Path, *extra: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "hlo_lsp", "diff", str(a), str(b), *extra],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_diff_names_changed_shapes_and_added_ops_per_python_line(tmp_path):
    base = _dump(tmp_path, "base", 128, RELU)
    wider = _dump(tmp_path, "wider", 256, RELU)
    tanh = _dump(tmp_path, "tanh", 128, f"jnp.tanh({RELU})")

    out = _diff(base, wider)
    assert "Warning: the entry signatures differ" in out
    assert "prog.py:9" in out                               # the hidden layer's line
    assert "shape f32[32,128] -> f32[32,256]" in out
    assert "No change in custom-calls or fusion kinds." in out  # what it said before: not all

    out = _diff(base, tanh)
    assert "added %tanh" in out and "0 instructions changed" in out
    data = json.loads(_diff(base, tanh, "--json"))
    added = [c for c in data["instructions"]["changes"] if c["status"] == "added"]
    assert any(c["new"]["opcode"] == "tanh" and c["source"] == "prog.py:9" for c in added)

    stage = next(base.parent.glob("*jit_stage.cpu_after_optimizations.txt"), None) or \
        next(p for p in base.parent.glob("*cpu_after_optimizations.txt") if p != base)
    out = _diff(stage, base)
    assert "Warning: the modules have different names" in out
