#!/usr/bin/env python3
"""Regenerate the pass snapshots of this directory: XLA's renaming passes
(``rename-instructions``, ``rename_fusions``) on seed 001's scaled FP8 matmul
(examples/gpu/programs/fp8_matmul.py) compiled for an H100 without a GPU.

    python tests/data/matching/make_rename_snapshots.py

Runs ``hlo-lsp dump --target h100`` (needs the ``cuda`` extra) with
``XLA_FLAGS=--xla_dump_hlo_pass_re=.* --xla_dump_hlo_module_re=jit_matmul_fn_with_scale``
into a temporary directory and copies the snapshots before and after each
renaming pass here, unchanged (XLA numbers them; jax 0.10.2 gave 0028/0029 and
0032/0033).
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
PROGRAM = ROOT / "examples" / "gpu" / "programs" / "fp8_matmul.py"
#: The renaming passes: the snapshot just before each and the one after it.
PASSES = ("rename-instructions", "rename_fusions")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "dump"
        env = dict(os.environ, PYTHONPATH=str(ROOT),
                   XLA_FLAGS="--xla_dump_hlo_pass_re=.* "
                             "--xla_dump_hlo_module_re=jit_matmul_fn_with_scale")
        env.pop("JAX_PLATFORMS", None)
        subprocess.run([sys.executable, "-m", "hlo_lsp", "dump", "--target", "h100",
                        "--out", str(out), "--", sys.executable, str(PROGRAM)],
                       env=env, check=True, timeout=600)
        for old in HERE.glob("module_*.txt"):
            old.unlink()
        for name in PASSES:
            before = [p for p in out.glob("*.txt") if f".before_{name}." in p.name]
            after = [p for p in out.glob("*.txt") if f".after_{name}." in p.name]
            for p in before + after:
                if re.search(r"\.\d{4}\.", p.name):
                    shutil.copy(p, HERE / p.name)
                    print(p.name)


if __name__ == "__main__":
    main()
