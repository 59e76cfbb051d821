"""didOpen -> full diagnostics on dumps of different shapes, as ratios to XLA's
parse of the same text (issue 17's benchmark, which cannot flatter us).

For each dump, ``--runs`` rounds, interleaved so that load hits both sides:

1. XLA: ``hlo_module_from_text`` (the jaxlib parser :func:`hlo_lsp.syntax.xla.load_parser`
   loads) in a process of its own; the time of the call on the dump, after one
   call on a small module (imports and first-use setup are not counted);
2. hlo-lsp: a fresh server over stdio (initialize not counted): ``didOpen`` ->
   the first ``publishDiagnostics`` of that version, which comes from the full
   analysis (parse, model, semantic checks).

Each side's median and best are printed; the ratio is median over median, and
the target (issue 17) is at most 3x on every dump. The machine's cores and
load average are printed beside the table: a figure taken on a busy machine
says so.

Dumps: the generated 4 MB CPU dump (``gen_dump.py``), a 12-layer transformer
training step (``gen_transformer.py``; about 20 s to generate the first time),
and from ``../shared/corpus`` a GPU dump whose 127 cuDNN custom-calls carry
backend configs and an SPMD dump of Llama 3.1 8B with 881 shardings (skipped,
with a note, where the corpus is absent).

    python benchmarks/bench_dumps.py [--runs 5] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_parse import DEFAULT_DUMP, ensure_dump, start_server  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus"
TRANSFORMER_DIR = ROOT / "benchmarks" / "out" / "transformer12"
#: XLA's GPU after-optimizations dump with cuDNN convolution custom-calls.
GPU_DUMP = CORPUS / "morenfang__xla_hlo_dump_parse__data__module_0226.after_optimizations.txt"
#: XLA's own benchmark module of Llama 3.1 8B partitioned over 2x8 devices.
SPMD_DUMP = CORPUS / "openxla__xla__xla__tools__benchmarks__hlo__hlo_llama31_8b_bf16_2x8.hlo"
_SMALL = "HloModule m\n\nENTRY e {\n  ROOT p = f32[2]{0} parameter(0)\n}\n"


def dumps() -> list[tuple[str, pathlib.Path | None, str]]:
    """``(label, path, note)`` of each benchmark dump, generating the two made
    by JAX programs when missing; ``path`` None (with the reason in ``note``)
    for a corpus dump that is absent."""
    ensure_dump(DEFAULT_DUMP)
    found = sorted(TRANSFORMER_DIR.glob("*jit_train_step.cpu_after_optimizations.txt"))
    if found:
        transformer = found[0]
    else:
        from benchmarks.gen_transformer import generate as generate_transformer
        transformer = pathlib.Path(generate_transformer(TRANSFORMER_DIR, layers=12))
    out: list[tuple[str, pathlib.Path | None, str]] = [
        ("generated CPU dump (gen_dump.py)", DEFAULT_DUMP, ""),
        ("transformer, 12 layers (gen_transformer.py)", transformer, "")]
    for label, path in (("GPU, cuDNN custom-calls (corpus)", GPU_DUMP),
                        ("SPMD Llama 3.1 8B, shardings (corpus)", SPMD_DUMP)):
        out.append((label, path if path.exists() else None,
                    "" if path.exists() else f"{path} is absent"))
    return out


def xla_once(path: pathlib.Path) -> float:
    """Seconds of one ``hlo_module_from_text`` call on ``path``, in this process
    (after a call on a small module). Raises RuntimeError when XLA's parser
    cannot be loaded or rejects the text."""
    from hlo_lsp.syntax.xla import load_parser

    parse, why = load_parser()
    if parse is None:
        raise RuntimeError(f"XLA's parser is unavailable: {why}")
    text = path.read_text(encoding="utf-8")
    parse(_SMALL)
    t0 = time.perf_counter()
    parse(text)
    return time.perf_counter() - t0


def xla_in_own_process(path: pathlib.Path) -> float:
    """:func:`xla_once` in a fresh Python process (seconds)."""
    done = subprocess.run([sys.executable, __file__, "--xla-once", str(path)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"XLA's parse of {path} failed: {done.stderr[-1000:]}")
    return float(done.stdout.strip().splitlines()[-1])


async def server_full_index(path: pathlib.Path) -> float:
    """Seconds from ``didOpen`` to the first diagnostics of a fresh server."""
    from lsprotocol import types

    published: asyncio.Queue = asyncio.Queue()
    client, drain, stderr = await start_server(
        "bench-dumps", lambda params: published.put_nowait((time.perf_counter(), params)))
    text = path.read_text(encoding="utf-8")
    uri = path.resolve().as_uri()
    t0 = time.perf_counter()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="hlo", version=1,
                                             text=text)))
    while True:
        when, params = await asyncio.wait_for(published.get(), 120)
        if params.uri == uri and params.version == 1:
            break
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    drain.cancel()
    return when - t0


def measure(path: pathlib.Path, runs: int) -> dict:
    """Interleaved runs on one dump: XLA, ours, XLA, ours..."""
    xla, ours = [], []
    for _ in range(runs):
        xla.append(xla_in_own_process(path))
        ours.append(asyncio.run(server_full_index(path)))
    return {"bytes": path.stat().st_size,
            "xla_median_s": round(statistics.median(xla), 4), "xla_best_s": round(min(xla), 4),
            "ours_median_s": round(statistics.median(ours), 4),
            "ours_best_s": round(min(ours), 4),
            "ratio_median": round(statistics.median(ours) / statistics.median(xla), 2),
            "xla_runs_s": [round(x, 4) for x in xla], "ours_runs_s": [round(x, 4) for x in ours]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", type=pathlib.Path, help="also write the figures here")
    ap.add_argument("--xla-once", type=pathlib.Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.xla_once is not None:
        print(f"{xla_once(args.xla_once):.6f}")
        return 0
    load = os.getloadavg()
    print(f"{os.cpu_count()} cores; load average before the run "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {args.runs} interleaved runs per dump")
    print("| dump | size | XLA median (best) | hlo-lsp didOpen -> diagnostics median (best) "
          "| ratio | target |")
    print("|---|---:|---:|---:|---:|---:|")
    figures = {}
    for label, path, note in dumps():
        if path is None:
            print(f"| {label} | | | skipped: {note} | | |")
            continue
        f = figures[label] = measure(path, args.runs)
        print(f"| {label} | {f['bytes'] / 1e6:.2f} MB | {f['xla_median_s']:.3f} s "
              f"({f['xla_best_s']:.3f}) | {f['ours_median_s']:.3f} s ({f['ours_best_s']:.3f}) "
              f"| {f['ratio_median']:.1f}x | <= 3x |", flush=True)
    load = os.getloadavg()
    print(f"load average after the run {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
