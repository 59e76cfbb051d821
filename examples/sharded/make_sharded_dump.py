"""Regenerate ``examples/sharded/dump/``: a real XLA CPU dump of an SPMD program
on 8 virtual CPU devices whose optimized HLO holds every collective XLA:CPU
writes, in the replica-group forms JAX 0.10.2 prints.

The program (:func:`run_program`) runs on a 2x4 device mesh, axes ``data`` (2)
and ``model`` (4):

* ``collectives_step`` -- a ``jax.shard_map`` with one explicit collective per
  line: ``psum`` over ``model`` (``all-reduce``), ``all_gather`` over ``data``
  (``all-gather``), ``psum_scatter`` over ``model`` (``reduce-scatter``),
  ``all_to_all`` over ``model`` (``all-to-all``), ``ppermute`` (a ring shift)
  over ``model`` (``collective-permute``) and ``psum`` over both axes (an
  ``all-reduce`` of all 8 devices).
* ``sharded_matmul`` -- a plain ``jax.jit`` matmul whose contracting dimension
  is sharded over ``model``, then (a second module) over ``data``: the SPMD
  partitioner (Shardy) adds an ``all-reduce`` whose replica groups XLA writes
  in the mesh-axes form, ``mesh['axis_0'=1,'axis_1'=4,'axis_2'=2],
  device_ids=([2,4]T(1,0)) {'axis_1'}`` and ``mesh[...] {'axis_1'}``.

Usage (from the repository root)::

    /work/main/.venv/bin/python examples/sharded/make_sharded_dump.py
    /work/main/.venv/bin/python examples/sharded/make_sharded_dump.py --out DIR

The same mechanism as ``examples/make_dump.py``: ``XLA_FLAGS``
(``--xla_dump_to=<dir> --xla_dump_hlo_as_text
--xla_force_host_platform_device_count=8``, appended to any ``XLA_FLAGS`` you
already have) and ``JAX_PLATFORMS=cpu`` are set, the script re-runs itself in
a child process so that they are in place before jax is imported, and
afterwards only the before/after-optimizations HLO text of the two programs is
kept. ``JAX_HLO_SOURCE_FILE_CANONICALIZATION_REGEX`` strips the checkout's
directory from the paths JAX writes, so the dump's ``FileNames`` hold
``examples/sharded/make_sharded_dump.py``, relative to the repository: the source
of every instruction resolves in any checkout. Deterministic: two runs give
byte-identical files.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
DEFAULT_OUT = HERE / "dump"

#: The jitted functions whose modules are kept (XLA names them ``jit_<name>``).
PROGRAMS = ("collectives_step", "sharded_matmul")
DEVICES = 8

_CHILD_ENV = "HLO_LSP_MAKE_DUMP_CHILD"
_KEEP_SUFFIXES = (".before_optimizations.txt", "_after_optimizations.txt")
_MODULE_RE = re.compile(r"^module_(\d+)\.([^.]+)\.")


def run_program() -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    devices = jax.devices()
    assert len(devices) == DEVICES, f"expected {DEVICES} CPU devices, got {len(devices)}"
    mesh = Mesh(np.array(devices).reshape(2, 4), ("data", "model"))

    def collectives_step(x):
        # x: this device's [4, 16] block of the [8, 64] input.
        total = jax.lax.psum(x, "model")                                   # all-reduce
        gathered = jax.lax.all_gather(total, "data", tiled=True)           # all-gather
        scattered = jax.lax.psum_scatter(gathered, "model", scatter_dimension=1,
                                         tiled=True)                       # reduce-scatter
        swapped = jax.lax.all_to_all(scattered, "model", split_axis=0, concat_axis=1,
                                     tiled=True)                           # all-to-all
        ring = [(i, (i + 1) % 4) for i in range(4)]
        shifted = jax.lax.ppermute(swapped, "model", perm=ring)            # collective-permute
        return shifted * 2.0 + jax.lax.psum(jnp.sum(shifted), ("data", "model"))

    step = jax.jit(jax.shard_map(
        collectives_step, mesh=mesh, in_specs=P("data", "model"), out_specs=P("data", "model")))

    @jax.jit
    def sharded_matmul(x, w):
        return jnp.tanh(x @ w)

    x = jax.device_put(jnp.arange(8 * 64, dtype=jnp.float32).reshape(8, 64) / 512.0,
                       NamedSharding(mesh, P("data", "model")))
    out = step(x)
    ys = []
    for axis in ("model", "data"):  # the contracting dimension sharded over each axis
        a = jax.device_put(jnp.ones((16, 256), jnp.float32), NamedSharding(mesh, P(None, axis)))
        w = jax.device_put(jnp.ones((256, 32), jnp.float32), NamedSharding(mesh, P(axis, None)))
        ys.append(sharded_matmul(a, w))
    jax.block_until_ready((out, ys))
    print(f"collectives_step: {out.shape}, sharded_matmul: {[y.shape for y in ys]}")


def _prune(out: pathlib.Path) -> list[pathlib.Path]:
    """Delete everything but the HLO text of :data:`PROGRAMS`; return what is kept."""
    for p in list(out.iterdir()):
        if p.is_dir():
            shutil.rmtree(p)
            continue
        m = _MODULE_RE.match(p.name)
        if not (m and m.group(2) in {f"jit_{n}" for n in PROGRAMS}
                and p.name.endswith(_KEEP_SUFFIXES)):
            p.unlink()
    return sorted(out.iterdir())


def make_dump(out: pathlib.Path = DEFAULT_OUT) -> list[pathlib.Path]:
    """Run the program with XLA dumping into ``out`` (emptied first)."""
    out = pathlib.Path(out).resolve()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    env = dict(os.environ)
    flags = env.get("XLA_FLAGS", "").strip()
    env["XLA_FLAGS"] = " ".join(
        f for f in (flags, f"--xla_dump_to={out}", "--xla_dump_hlo_as_text",
                    f"--xla_force_host_platform_device_count={DEVICES}") if f)
    env["JAX_PLATFORMS"] = "cpu"
    env[_CHILD_ENV] = "1"
    # JAX drops the checkout's path from the file names it writes: the dump's
    # FileNames then say examples/sharded/make_sharded_dump.py, which hlo-lsp
    # finds from the dump directory's parents wherever the checkout is.
    env["JAX_HLO_SOURCE_FILE_CANONICALIZATION_REGEX"] = "^" + re.escape(f"{ROOT}{os.sep}")
    subprocess.run([sys.executable, str(pathlib.Path(__file__).resolve())], env=env,
                   check=True)
    return _prune(out)


def main(argv: list[str] | None = None) -> int:
    if os.environ.get(_CHILD_ENV) == "1":
        run_program()
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT,
                    help=f"dump directory (emptied first; default {DEFAULT_OUT})")
    args = ap.parse_args(argv)
    for p in make_dump(args.out):
        print(f"{p.stat().st_size:>9}  {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
