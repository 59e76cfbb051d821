"""Regenerate ``examples/cpu_dump/``: a real XLA CPU dump of a small JAX program.

The program is a toy training step for a two-layer MLP, written so that the
optimized HLO shows the constructs an HLO language server has to handle:

* ``dot``            -- the matmuls of the forward and backward pass;
* ``fusion``         -- elementwise ``kLoop`` fusions (tanh, SGD update) and
                        a reduction fusion (the loss / gradient sums);
* ``reduce`` with ``to_apply=``
                     -- ``jnp.sum``, ``jnp.max`` and ``jnp.argmax``;
* ``while``          -- ``jax.lax.fori_loop`` whose trip count is a runtime
                        argument, so XLA cannot unroll or remove it;
* ``conditional``    -- ``jax.lax.switch`` over three branches, indexed by a
                        runtime value, so XLA cannot fold it away.

Usage (from the repository root)::

    /work/venv/bin/python examples/make_dump.py            # -> examples/cpu_dump/
    /work/venv/bin/python examples/make_dump.py --out DIR  # somewhere else

The script sets ``XLA_FLAGS`` (``--xla_dump_to=<dir> --xla_dump_hlo_as_text``,
appended to any ``XLA_FLAGS`` you already have) and ``JAX_PLATFORMS=cpu``,
then re-runs itself in a child process so the flags are in place before jax
is imported.  The output directory is emptied first, and afterwards only the
text files worth keeping are left:

* ``module_*.jit_train_step.before_optimizations.txt``
* ``module_*.jit_train_step.cpu_after_optimizations.txt``
* ``module_*.jit_train_step.cpu_after_optimizations-buffer-assignment.txt``
* ``module_*.jit_train_step.cpu_after_optimizations-memory-usage-report.txt``

plus the same files for at most a couple of the small helper modules JAX
compiles on the side (``jit_broadcast_in_dim`` and friends), because a real
dump directory always has some.  Graph dumps (.dot/.html), protos, LLVM IR,
object files and per-pass subdirectories are deleted.
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
DEFAULT_OUT = HERE / "cpu_dump"

# Name of the jitted function; XLA names its module ``jit_<name>``.
MAIN_FN = "train_step"
# How many helper modules (jit_broadcast_in_dim, ...) to keep besides MAIN_FN.
MAX_HELPER_MODULES = 2

_CHILD_ENV = "HLO_LSP_MAKE_DUMP_CHILD"

_KEEP_SUFFIXES = (
    ".before_optimizations.txt",
    "_after_optimizations.txt",
    "_after_optimizations-buffer-assignment.txt",
    "_after_optimizations-memory-usage-report.txt",
)
_MODULE_RE = re.compile(r"^module_(\d+)\.([^.]+)\.")


# ---------------------------------------------------------------------------
# The JAX program (only runs in the child process, after XLA_FLAGS is set).
# ---------------------------------------------------------------------------

def run_program() -> None:
    import jax
    import jax.numpy as jnp

    def mlp(params, x):
        h = jnp.tanh(x @ params["w1"] + params["b1"])  # dot + kLoop fusion
        return h @ params["w2"] + params["b2"]

    def loss_fn(params, x, labels):
        logits = mlp(params, x)
        # log-softmax cross-entropy: max / sum reductions with to_apply=
        logits = logits - jnp.max(logits, axis=-1, keepdims=True)
        logp = logits - jnp.log(jnp.sum(jnp.exp(logits), axis=-1, keepdims=True))
        return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=-1))

    def sgd(params, grads, lr):
        return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)

    @jax.jit
    def train_step(params, x, labels, lr, inner_steps, schedule):
        """A few SGD steps in a while loop, then a schedule-dependent tweak."""

        def body(i, carry):
            params, _ = carry
            loss, grads = jax.value_and_grad(loss_fn)(params, x, labels)
            return sgd(params, grads, lr / (1.0 + i)), loss

        # Trip count is a runtime value -> a real `while` in the optimized HLO.
        params, loss = jax.lax.fori_loop(
            0, inner_steps, body, (params, jnp.zeros((), jnp.float32)))

        # Runtime branch index -> a real `conditional` with three branches.
        def keep(p):
            return p

        def decay(p):
            return jax.tree_util.tree_map(lambda a: a * 0.99, p)

        def clip(p):
            return jax.tree_util.tree_map(lambda a: jnp.clip(a, -1.0, 1.0), p)

        params = jax.lax.switch(schedule, (keep, decay, clip), params)

        predictions = jnp.argmax(mlp(params, x), axis=-1)  # variadic reduce
        accuracy = jnp.mean((predictions == labels).astype(jnp.float32))
        return params, loss, accuracy

    key = jax.random.PRNGKey(0)
    k1, k2, k3, k4 = jax.random.split(key, 4)
    batch, d_in, d_hidden, n_classes = 32, 64, 128, 10
    params = {
        "w1": jax.random.normal(k1, (d_in, d_hidden), jnp.float32) * 0.1,
        "b1": jnp.zeros((d_hidden,), jnp.float32),
        "w2": jax.random.normal(k2, (d_hidden, n_classes), jnp.float32) * 0.1,
        "b2": jnp.zeros((n_classes,), jnp.float32),
    }
    x = jax.random.normal(k3, (batch, d_in), jnp.float32)
    labels = jax.random.randint(k4, (batch,), 0, n_classes)

    params, loss, accuracy = train_step(
        params, x, labels, jnp.float32(0.1), jnp.int32(5), jnp.int32(1))
    jax.block_until_ready((params, loss, accuracy))
    print(f"train_step: loss={float(loss):.4f} accuracy={float(accuracy):.3f}")


# ---------------------------------------------------------------------------
# Driver: set up the environment, run the child, prune the dump.
# ---------------------------------------------------------------------------

def _prune(out: pathlib.Path) -> list[pathlib.Path]:
    """Delete everything but the interesting text files; return what is kept."""
    for p in list(out.iterdir()):
        if p.is_dir():
            shutil.rmtree(p)

    by_module: dict[tuple[int, str], list[pathlib.Path]] = {}
    for p in out.iterdir():
        m = _MODULE_RE.match(p.name)
        if not m or not p.name.endswith(_KEEP_SUFFIXES):
            p.unlink()
            continue
        by_module.setdefault((int(m.group(1)), m.group(2)), []).append(p)

    main_name = f"jit_{MAIN_FN}"
    helpers = sorted(k for k in by_module if k[1] != main_name)
    keep = {k for k in by_module if k[1] == main_name} | set(helpers[:MAX_HELPER_MODULES])
    for key, files in by_module.items():
        if key not in keep:
            for p in files:
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
        f for f in (flags, f"--xla_dump_to={out}", "--xla_dump_hlo_as_text") if f)
    env["JAX_PLATFORMS"] = "cpu"
    env[_CHILD_ENV] = "1"
    subprocess.run([sys.executable, str(pathlib.Path(__file__).resolve())],
                   env=env, check=True)
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
