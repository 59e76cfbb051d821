"""Parse-and-index speed against XLA's own parser, in one run on the same text.

Generates (or reuses) a multi-megabyte *after-optimizations* dump written by XLA
for a JAX program on the CPU (benchmarks/gen_dump.py), then reports:

- XLA: ``xla_client.hlo.hlo_module_from_text(text)`` wall time (best of N);
- hlo-lsp: ``parse(text)`` (grammar + model) and ``analysis.check`` (semantic
  index: names, uses, callers) wall time (best of N);
- the server: wall time from sending ``didOpen`` to receiving the answer of the
  first ``textDocument/definition`` (an operand in the middle of the file), with
  the real server started over stdio (initialize excluded); best of N fresh servers.

Every figure is also given as a ratio to XLA's parse time measured in the same
run, which is what the targets are stated in (issue 2: first answer <= 20x; the
long-term target, issue 5: <= 1x).

    python benchmarks/bench_parse.py [--dump PATH] [--target-mb 4] [--repeat 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT_DUMP = ROOT / "benchmarks" / "out" / "after_opt_4mb.txt"


def _best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _probe_offset(text: str) -> int:
    """An operand use in the middle of the text: a definition request target."""
    middle = len(text) // 2
    line_start = text.index("\n", middle) + 1
    while True:
        line_end = text.index("\n", line_start)
        line = text[line_start:line_end]
        paren = line.find("(%")
        if " = " in line and paren > 0:
            return line_start + paren + 2
        line_start = line_end + 1


async def _first_definition(path: pathlib.Path, text: str) -> float:
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    client = LanguageClient("bench", "0")
    await client.start_io(sys.executable, "-m", "hlo_lsp")
    await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(),
        initialization_options={"xlaDiagnostics": False}))
    client.initialized(types.InitializedParams())
    offset = _probe_offset(text)
    line = text.count("\n", 0, offset)
    col = offset - (text.rfind("\n", 0, offset) + 1)
    uri = path.resolve().as_uri()
    t0 = time.perf_counter()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="hlo", version=1, text=text)))
    result = await client.text_document_definition_async(types.DefinitionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=line, character=col)))
    elapsed = time.perf_counter() - t0
    assert result, "the definition request must be answered with a location"
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return elapsed


def run(dump: pathlib.Path, repeat: int) -> dict:
    from jax._src.lib import xla_client as xc

    from hlo_lsp.analysis import check
    from hlo_lsp.parser import parse

    text = dump.read_text(encoding="utf-8")
    xla = _best(lambda: xc.hlo.hlo_module_from_text(text), repeat)
    module = parse(text)
    assert not module.problems, module.problems[:3]
    ours_parse = _best(lambda: parse(text), repeat)
    ours_index = _best(lambda: check(parse(text)), repeat)
    first_answer = min(asyncio.run(_first_definition(dump, text)) for _ in range(repeat))
    return {
        "file": str(dump.relative_to(ROOT) if dump.is_relative_to(ROOT) else dump),
        "bytes": len(text.encode()),
        "computations": len(module.computations),
        "instructions": module.instruction_count(),
        "xla_parse_s": round(xla, 4),
        "hlo_lsp_parse_s": round(ours_parse, 4),
        "hlo_lsp_parse_and_index_s": round(ours_index, 4),
        "server_didOpen_to_first_definition_s": round(first_answer, 4),
        "ratio_parse": round(ours_parse / xla, 2),
        "ratio_parse_and_index": round(ours_index / xla, 2),
        "ratio_first_definition": round(first_answer / xla, 2),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dump", type=pathlib.Path, default=DEFAULT_DUMP)
    ap.add_argument("--target-mb", type=float, default=4.0,
                    help="size of the generated dump when --dump does not exist (MiB)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=pathlib.Path, help="also write the figures here")
    args = ap.parse_args()
    if not args.dump.exists():
        from benchmarks.gen_dump import generate
        args.dump.parent.mkdir(parents=True, exist_ok=True)
        generate(args.dump, args.target_mb)
    figures = run(args.dump, args.repeat)
    width = max(len(k) for k in figures)
    for key, value in figures.items():
        print(f"{key:<{width}}  {value}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
