#!/usr/bin/env python3
"""Regenerate ``examples/cpu_passes/``: the pass history of a small JAX function
compiled by XLA on the CPU, one HLO snapshot per pass that changed it.

    python examples/make_cpu_passes.py            # from the repository root
    python examples/make_cpu_passes.py --out DIR  # somewhere else

Runs this file's ``layer`` (``tanh(x @ w + b).sum(0)``) through ``hlo-lsp dump
--platform cpu`` with ``XLA_FLAGS=--xla_dump_hlo_pass_re=.*
--xla_dump_hlo_module_re=jit_layer`` (XLA writes
``module_NNNN.jit_layer.SSSS.<pipeline>.after_<pass>.before_<next>.txt`` after
each pass that changed the module and at the start of each pipeline), then
keeps only the HLO text files (before optimizations, the snapshots, after
optimizations): LLVM IR, objects, buffer-assignment reports, debug options and
the recipe (machine paths) are removed. ``hlo-lsp passes examples/cpu_passes``
shows the history; ``hlo-lsp blame`` on the after-optimizations file's
``%ynn_fusion`` names ``dot-library-rewriter``.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "cpu_passes"
FLAGS = "--xla_dump_hlo_pass_re=.* --xla_dump_hlo_module_re=jit_layer"


def program() -> None:
    import jax
    import jax.numpy as jnp

    @jax.jit
    def layer(x, w, b):
        return jnp.tanh(x @ w + b).sum(axis=0)

    print(layer(jnp.ones((8, 16)), jnp.ones((16, 4)), jnp.ones((4,))))


def keep(name: str) -> bool:
    from hlo_lsp.dump.names import parse_dump_name

    return parse_dump_name(name) is not None and not name.endswith("-values.txt")


def main(out: pathlib.Path = OUT) -> int:
    out = out.resolve()
    if out.exists():
        shutil.rmtree(out)
    env = dict(os.environ, XLA_FLAGS=FLAGS, JAX_PLATFORMS="cpu")
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    subprocess.run([sys.executable, "-m", "hlo_lsp", "dump", "--platform", "cpu", "--out",
                    str(out), "--", sys.executable,
                    str(pathlib.Path(__file__).relative_to(ROOT)), "--program"],
                   cwd=ROOT, env=env, check=True)
    sys.path.insert(0, str(ROOT))
    for path in out.iterdir():
        if path.is_dir():
            shutil.rmtree(path)
        elif not keep(path.name):
            path.unlink()
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--program"]:
        program()
        sys.exit(0)
    if sys.argv[1:2] == ["--out"] and len(sys.argv) == 3:
        sys.exit(main(pathlib.Path(sys.argv[2])))
    sys.exit(main())
