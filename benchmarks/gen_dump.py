"""Generate a large, real XLA CPU *after-optimizations* HLO dump for benchmarks.

The JAX program is a training step (forward, backward and SGD update) of a
deep transformer-ish stack.  The layer loop is an ordinary Python loop, so it
is unrolled at trace time, and every layer has its own width, so XLA cannot
share or deduplicate anything between layers: each layer adds its own
projections (``dot``), layer norms and softmax (``reduce ... to_apply=``),
GELU MLP and residuals, fused into many ``kLoop`` fusions, plus its backward
pass.  The number of layers is scaled until the optimized HLO text reaches
the requested size.

The program is only lowered and compiled (on abstract inputs), never run.
XLA writes the dump through ``XLA_FLAGS=--xla_dump_to=<tmp> --xla_dump_hlo_as_text``
(added to any ``XLA_FLAGS`` already set) in a child process with
``JAX_PLATFORMS=cpu``, and the largest ``*after_optimizations.txt`` is copied
to ``--out``.

Command line::

    /work/venv/bin/python benchmarks/gen_dump.py --out /tmp/big.hlo.txt --target-mb 4

From Python::

    from benchmarks.gen_dump import generate
    path = generate("/tmp/big.hlo.txt", 4.0)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

_CHILD_ENV = "HLO_LSP_GEN_DUMP_LAYERS"
FN_NAME = "deep_train_step"

# Layers of the first (calibration) compile; its size per layer sets the
# layer count of the real one.
_CALIBRATION_LAYERS = 6
_MAX_ATTEMPTS = 4  # compiles, including the calibration one


# ---------------------------------------------------------------------------
# The JAX program (runs in the child process, after XLA_FLAGS is set).
# ---------------------------------------------------------------------------

def _compile_model(n_layers: int) -> None:
    import jax
    import jax.numpy as jnp

    batch, seq, heads = 4, 16, 4

    def width(i: int) -> int:
        # Distinct per layer (and a multiple of `heads`), so no two layers
        # have the same shapes.
        return 32 + 4 * i

    def layer_norm(x, scale, bias):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + 1e-5) * scale + bias

    def attention(p, x):
        b, s, d = x.shape
        hd = d // heads

        def split(t):
            return t.reshape(b, s, heads, hd).transpose(0, 2, 1, 3)

        q, k, v = (split(x @ p[n]) for n in ("wq", "wk", "wv"))
        logits = jnp.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(hd)
        mask = jnp.tril(jnp.ones((s, s), bool))
        logits = jnp.where(mask, logits, -1e9)
        probs = jax.nn.softmax(logits, axis=-1)
        out = jnp.einsum("bhqk,bhkd->bhqd", probs, v)
        return out.transpose(0, 2, 1, 3).reshape(b, s, d) @ p["wo"]

    def block(p, x):
        x = x @ p["w_in"]  # change of width between layers
        x = x + attention(p, layer_norm(x, p["ln1_s"], p["ln1_b"]))
        h = layer_norm(x, p["ln2_s"], p["ln2_b"])
        for j in range(2):  # two MLP sub-layers, unrolled
            h = jax.nn.gelu(h @ p[f"mlp{j}_up"] + p[f"mlp{j}_b"]) @ p[f"mlp{j}_down"]
        return x + h

    def loss_fn(params, x, y):
        for p in params["layers"]:
            x = block(p, x)
        x = layer_norm(x, params["ln_f_s"], params["ln_f_b"])
        logits = x @ params["head"]
        logp = jax.nn.log_softmax(logits, axis=-1)
        return -jnp.mean(jnp.take_along_axis(logp, y[..., None], axis=-1))

    def deep_train_step(params, x, y, lr):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        params = jax.tree_util.tree_map(lambda a, g: a - lr * g, params, grads)
        return params, loss

    deep_train_step.__name__ = FN_NAME

    f32 = jnp.float32

    def spec(*shape, dtype=f32):
        return jax.ShapeDtypeStruct(shape, dtype)

    layers = []
    d_prev = width(0)
    for i in range(n_layers):
        d = width(i)
        p = {"w_in": spec(d_prev, d),
             "ln1_s": spec(d), "ln1_b": spec(d),
             "ln2_s": spec(d), "ln2_b": spec(d),
             **{n: spec(d, d) for n in ("wq", "wk", "wv", "wo")}}
        for j in range(2):
            p[f"mlp{j}_up"] = spec(d, 2 * d)
            p[f"mlp{j}_b"] = spec(2 * d)
            p[f"mlp{j}_down"] = spec(2 * d, d)
        layers.append(p)
        d_prev = d
    n_classes = 16
    params = {"layers": layers, "ln_f_s": spec(d_prev), "ln_f_b": spec(d_prev),
              "head": spec(d_prev, n_classes)}

    jax.jit(deep_train_step).lower(
        params, spec(batch, seq, width(0)), spec(batch, seq, dtype=jnp.int32),
        spec()).compile()


# ---------------------------------------------------------------------------
# Driver.
# ---------------------------------------------------------------------------

def _dump_once(n_layers: int, dump_dir: pathlib.Path) -> pathlib.Path:
    """Compile an ``n_layers`` model in a child process; return the dump file."""
    env = dict(os.environ)
    flags = env.get("XLA_FLAGS", "").strip()
    env["XLA_FLAGS"] = " ".join(f for f in (
        flags,
        f"--xla_dump_to={dump_dir}",
        "--xla_dump_hlo_as_text",
        f"--xla_dump_hlo_module_re=jit_{FN_NAME}",
        # LLVM optimization level only: the optimized HLO is byte-identical
        # (checked with jax 0.10.2), and compiling is ~40% faster.
        "" if "xla_backend_optimization_level" in flags
        else "--xla_backend_optimization_level=0",
    ) if f)
    env["JAX_PLATFORMS"] = "cpu"
    env[_CHILD_ENV] = str(n_layers)
    subprocess.run([sys.executable, str(pathlib.Path(__file__).resolve())],
                   env=env, check=True)
    dumps = sorted(dump_dir.glob("*after_optimizations.txt"),
                   key=lambda p: p.stat().st_size)
    if not dumps:
        raise RuntimeError(f"XLA wrote no *after_optimizations.txt in {dump_dir}")
    return dumps[-1]


def _next_layer_count(runs: list[tuple[int, int]], target: int) -> int:
    """Layer count expected to reach ``target`` bytes, from the runs so far."""
    n, size = runs[-1]
    if len(runs) == 1:
        # One point: assume size is proportional to layers.  Bytes per layer
        # shrink a little as the layer count grows (measured: ~162 kB/layer
        # at 6 layers, ~155 kB at 26 with jax 0.10.2), so aim 10% over.
        guess = n * target * 1.10 / size
    else:
        # Two points: linear fit, aiming 3% over.
        (n0, s0), (n1, s1) = runs[-2], runs[-1]
        per_layer = max((s1 - s0) / (n1 - n0), 1.0)
        guess = n1 + (target * 1.03 - s1) / per_layer
    return max(n + 1, math.ceil(guess))


def generate(path: str | os.PathLike, target_mb: float = 4.0,
             verbose: bool = False) -> pathlib.Path:
    """Write an after-optimizations HLO dump of about ``target_mb`` MB to ``path``.

    ``target_mb`` is in MiB.  The result is at least that big (2% over for
    4 MiB, more for small targets); if ``_MAX_ATTEMPTS`` compiles were not enough, the largest
    one is written anyway.  Returns the path written.
    """
    out = pathlib.Path(path)
    target = int(target_mb * 1024 * 1024)

    def log(msg: str) -> None:
        if verbose:
            print(msg, file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="hlo_gen_dump_") as tmp:
        tmp = pathlib.Path(tmp)
        n = _CALIBRATION_LAYERS
        runs: list[tuple[int, int]] = []  # (layers, bytes)
        for attempt in range(_MAX_ATTEMPTS):
            dump_dir = tmp / f"run{attempt}"
            t0 = time.monotonic()
            dump = _dump_once(n, dump_dir)
            size = dump.stat().st_size
            log(f"  {n} layers -> {size / 2**20:.2f} MiB in {time.monotonic() - t0:.1f}s")
            runs.append((n, size))
            if size >= target or attempt == _MAX_ATTEMPTS - 1:
                break
            shutil.rmtree(dump_dir)
            n = _next_layer_count(runs, target)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(dump, out)
    return out


def main(argv: list[str] | None = None) -> int:
    child_layers = os.environ.get(_CHILD_ENV)
    if child_layers:
        _compile_model(int(child_layers))
        return 0
    ap = argparse.ArgumentParser(
        description="Generate a multi-megabyte XLA CPU after-optimizations HLO dump.")
    ap.add_argument("--out", type=pathlib.Path, required=True,
                    help="where to write the HLO text")
    ap.add_argument("--target-mb", type=float, default=4.0,
                    help="minimum size in MiB (default: 4)")
    ap.add_argument("--quiet", action="store_true", help="no progress output")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    out = generate(args.out, args.target_mb, verbose=not args.quiet)
    size = out.stat().st_size
    print(json.dumps({"out": str(out), "bytes": size,
                      "mib": round(size / 2**20, 3),
                      "seconds": round(time.monotonic() - t0, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
