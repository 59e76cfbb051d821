"""What the pass history costs (issue 44: ``hlo-lsp passes`` on a directory of
70+ snapshots answers within 2 s on this machine), against references measured
in the same run.

At bench time, unless ``--dir`` names a pass dump, ``hlo-lsp dump`` compiles
:data:`PROGRAM` (a 4-layer transformer block: layer norm, attention with
softmax, a GELU MLP; written to ``benchmarks/out/passes_block/``, outside the
package) with ``XLA_FLAGS=--xla_dump_hlo_pass_re=.*``: for an H100 without a GPU
(``--target h100``) when jax's ``cuda`` extra is installed (98 snapshots, 8.6 MB
with jax 0.10.2), else on the CPU. Then ``--rounds`` rounds, interleaved:

1. ``hlo-lsp passes DIR`` as a user runs it: a fresh process, wall time,
   interpreter start included; against a fresh process that only reads every
   file of the history (:func:`hlo_lsp.dump.untrusted.read_text`);
2. in this process: :func:`hlo_lsp.dump.passes.steps` over the whole history
   against reading the same files, and against the full parse
   (:func:`hlo_lsp.syntax.parser.parse`) of the after-optimizations file alone;
3. ``hlo-lsp blame`` of the after-optimizations file's first Triton GEMM (or
   other kCustom) fusion, a fresh process.

Medians and bests are printed with the machine's cores and load average. No
assertion on time: a busy machine shows in the load column.

    python benchmarks/bench_passes.py [--rounds 5] [--dir DUMP_DIR] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OUT = ROOT / "benchmarks" / "out" / "passes_block"

PROGRAM = '''\
import jax, jax.numpy as jnp

LAYERS, B, T, D, H = 4, 8, 128, 256, 4


def layer(x, p):
    h = (x - x.mean(-1, keepdims=True)) * jax.lax.rsqrt(x.var(-1, keepdims=True) + 1e-6) * p["g"]
    q, k, v = (h @ p["wq"], h @ p["wk"], h @ p["wv"])
    q, k, v = (a.reshape(B, T, H, D // H).transpose(0, 2, 1, 3) for a in (q, k, v))
    att = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / (D // H) ** 0.5, axis=-1)
    o = (att @ v).transpose(0, 2, 1, 3).reshape(B, T, D) @ p["wo"]
    x = x + o
    return x + jax.nn.gelu(x @ p["w1"]) @ p["w2"]


@jax.jit
def block(x, params):
    for p in params:
        x = layer(x, p)
    return x.astype(jnp.bfloat16)


key = jax.random.key(0)
shapes = {"g": (D,), "wq": (D, D), "wk": (D, D), "wv": (D, D), "wo": (D, D),
          "w1": (D, 4 * D), "w2": (4 * D, D)}
params = [{n: jax.random.normal(jax.random.fold_in(key, i), s, jnp.float32) * 0.02
           for n, s in shapes.items()} for i in range(LAYERS)]
print(block(jnp.ones((B, T, D)), params).shape)
'''

_READ_ALL = ("import sys; from hlo_lsp.dump.passes import module_history; "
             "from hlo_lsp.dump.untrusted import read_text; "
             "[read_text(s.path) for s in module_history(sys.argv[1]).stages]")


def has_cuda() -> bool:
    """Whether jax's ``cuda`` extra (XLA's GPU compiler) is installed."""
    import importlib.util

    return importlib.util.find_spec("jax_cuda12_plugin") is not None


def make_dump(out: pathlib.Path) -> pathlib.Path:
    """A pass dump of :data:`PROGRAM` in ``out/dump`` (made once)."""
    dump = out / "dump"
    if dump.is_dir() and any(dump.glob("module_*.jit_block.0000.*")):
        return dump
    out.mkdir(parents=True, exist_ok=True)
    (out / "block.py").write_text(PROGRAM)
    env = dict(os.environ, XLA_FLAGS="--xla_dump_hlo_pass_re=.* "
                                     "--xla_dump_hlo_module_re=jit_block")
    env.pop("JAX_PLATFORMS", None)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    where = ["--target", "h100"] if has_cuda() else ["--platform", "cpu"]
    subprocess.run([sys.executable, "-m", "hlo_lsp", "dump", *where, "--out", str(dump), "--",
                    sys.executable, "block.py"], cwd=out, env=env, check=True)
    return dump


def wall(command: list[str]) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def in_process(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def blame_line(after: pathlib.Path) -> int:
    lines = after.read_text().splitlines()
    for want in (r"fusion\(.*kind=kCustom.*__triton", r"fusion\(.*kind=kCustom", r" fusion\("):
        for i, line in enumerate(lines, 1):
            if re.search(want, line):
                return i
    return len(lines) - 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", type=pathlib.Path, help="a pass dump (default: made here)")
    parser.add_argument("--json", type=pathlib.Path, help="write the figures here")
    args = parser.parse_args(argv)

    from hlo_lsp.dump.passes import module_history, steps
    from hlo_lsp.dump.untrusted import read_text
    from hlo_lsp.syntax.parser import parse

    dump = args.dir or make_dump(OUT)
    history = module_history(str(dump), None if args.dir else "jit_block")
    after = pathlib.Path(history.stages[-1].path)
    snapshots = sum(1 for s in history.stages if s.index >= 0 and s.path != str(after))
    size = sum(os.path.getsize(s.path) for s in history.stages)
    py = sys.executable
    rows: dict[str, list[float]] = {k: [] for k in (
        "passes (process)", "read all (process)", "steps (in process)", "read all (in process)",
        "parse after-opt (in process)", "blame (process)")}
    line = blame_line(after)
    for _ in range(args.rounds):
        rows["passes (process)"].append(wall([py, "-m", "hlo_lsp", "passes", str(dump),
                                              "--module", history.label]))
        rows["read all (process)"].append(wall([py, "-c", _READ_ALL, str(dump)]))
        rows["steps (in process)"].append(in_process(lambda: list(steps(history))))
        rows["read all (in process)"].append(
            in_process(lambda: [read_text(s.path) for s in history.stages]))
        text = after.read_text()
        rows["parse after-opt (in process)"].append(in_process(lambda: parse(text)))
        rows["blame (process)"].append(wall([py, "-m", "hlo_lsp", "blame", f"{after}:{line}"]))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{history.label}: {snapshots} pass snapshots, {len(history.stages)} files, "
          f"{size / 1e6:.1f} MB in {dump}")
    print(f"cores {os.cpu_count()}, load average {load:.2f}, {args.rounds} rounds")
    print(f"  {'measurement':<32} {'median s':>9} {'best s':>9}")
    figures = {}
    for name, times in rows.items():
        figures[name] = {"median": statistics.median(times), "best": min(times)}
        print(f"  {name:<32} {figures[name]['median']:>9.3f} {figures[name]['best']:>9.3f}")
    ratio = figures["passes (process)"]["median"] / figures["read all (process)"]["median"]
    print(f"  hlo-lsp passes / reading the files, each a fresh process: {ratio:.2f}x "
          "(the issue's figure: within 2 s)")
    if args.json:
        args.json.write_text(json.dumps({"snapshots": snapshots, "bytes": size, "load": load,
                                         "figures": figures}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
