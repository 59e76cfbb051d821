"""Generate the XLA CPU dump of a transformer training step with N identical
layers (default 48): the dump of issue 14's "a summary that scales".

The JAX program is one training step (forward, loss, backward, SGD update) of
a pre-norm transformer: per layer a layer norm, self-attention (q/k/v and
output projections, softmax), a layer norm and a GELU MLP, with residuals.
The layer loop is an ordinary Python loop under ``jax.named_scope(f"layer_{i}")``,
so it is unrolled at trace time: every layer is its own instructions in the
optimized HLO, named ``jit(train_step)/.../layer_<i>/...`` in their metadata
``op_name``, as in the user's report. Every layer has the same shapes, so the
layers compile to the same kernels, except that XLA on the CPU fuses the
backward pass's residual additions across layers (a few kernels per layer
differ, and the largest fused computations grow with the depth). Dimensions
are small (the program is only lowered and compiled on the CPU, never run):
12 layers compile in about 20 s, 48 layers take several minutes (most of it
XLA compiling those large fusions; the dump also holds LLVM IR per kernel).

XLA writes the dump through ``XLA_FLAGS=--xla_dump_to=<dir> --xla_dump_hlo_as_text``
in a child process with ``JAX_PLATFORMS=cpu``; the whole dump directory is
kept in ``--out`` (the after-optimizations file is
``*jit_train_step.cpu_after_optimizations.txt``).

Command line::

    python benchmarks/gen_transformer.py --out /tmp/tf48 --layers 48

From Python::

    from benchmarks.gen_transformer import generate
    after = generate("/tmp/tf48", layers=48)   # path of the after-optimizations file
"""

from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys

FN_NAME = "train_step"
_CHILD_ENV = "HLO_LSP_GEN_TRANSFORMER_LAYERS"

# Small dimensions: the dump's structure, not its numbers, is the point.
BATCH, SEQ, D_MODEL, HEADS, D_FF = 2, 16, 64, 4, 128


def _compile(n_layers: int) -> None:
    """Lower and compile one training step of ``n_layers`` layers (runs in the
    child, after XLA_FLAGS is set)."""
    import jax
    import jax.numpy as jnp

    def layer_norm(x):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + 1e-6)

    def attention(x, p):
        b, s, d = x.shape
        hd = d // HEADS
        q = (x @ p["wq"]).reshape(b, s, HEADS, hd)
        k = (x @ p["wk"]).reshape(b, s, HEADS, hd)
        v = (x @ p["wv"]).reshape(b, s, HEADS, hd)
        logits = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(float(hd))
        weights = jax.nn.softmax(logits, axis=-1)
        out = jnp.einsum("bhqk,bkhd->bqhd", weights, v).reshape(b, s, d)
        return out @ p["wo"]

    def mlp(x, p):
        return jax.nn.gelu(x @ p["w1"]) @ p["w2"]

    def forward(params, x):
        for i, p in enumerate(params["layers"]):
            with jax.named_scope(f"layer_{i}"):
                x = x + attention(layer_norm(x), p)
                x = x + mlp(layer_norm(x), p)
        return layer_norm(x)

    def loss_fn(params, x, y):
        return ((forward(params, x) - y) ** 2).mean()

    def train_step(params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        params = jax.tree_util.tree_map(lambda p, g: p - 1e-3 * g, params, grads)
        return params, loss

    f32 = jnp.float32
    layer = {"wq": jax.ShapeDtypeStruct((D_MODEL, D_MODEL), f32),
             "wk": jax.ShapeDtypeStruct((D_MODEL, D_MODEL), f32),
             "wv": jax.ShapeDtypeStruct((D_MODEL, D_MODEL), f32),
             "wo": jax.ShapeDtypeStruct((D_MODEL, D_MODEL), f32),
             "w1": jax.ShapeDtypeStruct((D_MODEL, D_FF), f32),
             "w2": jax.ShapeDtypeStruct((D_FF, D_MODEL), f32)}
    params = {"layers": [dict(layer) for _ in range(n_layers)]}
    x = jax.ShapeDtypeStruct((BATCH, SEQ, D_MODEL), f32)
    train_step.__name__ = FN_NAME
    jax.jit(train_step).lower(params, x, x).compile()


def generate(out: str | os.PathLike, layers: int = 48, timeout: float = 1800) -> pathlib.Path:
    """Write the dump of a ``layers``-layer training step into the directory
    ``out`` (created) and return its after-optimizations HLO file. Runs a child
    Python with ``JAX_PLATFORMS=cpu`` for at most ``timeout`` seconds; raises
    ``subprocess.CalledProcessError`` when it fails, ``subprocess.TimeoutExpired``
    after ``timeout``, ``FileNotFoundError`` when XLA wrote no such file."""
    out = pathlib.Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    flags = f"--xla_dump_to={out} --xla_dump_hlo_as_text"
    env = dict(os.environ, JAX_PLATFORMS="cpu", **{_CHILD_ENV: str(layers)},
               XLA_FLAGS=(os.environ.get("XLA_FLAGS", "") + " " + flags).strip())
    subprocess.run([sys.executable, os.path.abspath(__file__)], env=env, check=True,
                   capture_output=True, timeout=timeout)
    found = sorted(out.glob(f"*jit_{FN_NAME}.cpu_after_optimizations.txt"))
    if not found:
        raise FileNotFoundError(f"no jit_{FN_NAME} after-optimizations file in {out}")
    return found[-1]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="the dump directory to write")
    p.add_argument("--layers", type=int, default=48, help="number of layers (48)")
    args = p.parse_args(argv)
    print(generate(args.out, args.layers))
    return 0


if __name__ == "__main__":
    if _CHILD_ENV in os.environ:
        _compile(int(os.environ[_CHILD_ENV]))
    else:
        sys.exit(main())
