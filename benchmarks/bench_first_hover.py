"""First hover on a freshly opened small dump: the answer time after didOpen.

A user opens one file of a dump directory and hovers at once. Measured with a
fresh real server over stdio per run (start and initialize not counted; the
workspace folder is the dump directory, so its indexing runs at the same time,
as in an editor): ``didOpen`` then ``textDocument/hover`` on an instruction's
name, the time until the answer. The file is a real XLA dump under 50 KB
(``examples/cpu_dump/module_0028.jit_train_step.before_optimizations.txt``, or
``--file``), copied with its dump directory. Target (issue 13): 50 ms. Also
checks that the first hover already has the answer a later one has (the buffer
assignment of an after-optimizations file).

    python benchmarks/bench_first_hover.py [--file PATH] [--runs 5] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pathlib
import shutil
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT_FILE = ROOT / "examples" / "cpu_dump" / "module_0028.jit_train_step.before_optimizations.txt"
TARGET_MS = 50.0
MAX_BYTES = 50_000


async def one_run(path: pathlib.Path, needle: str) -> tuple[float, str, str]:
    """A fresh server: didOpen then hover at ``needle``; (milliseconds, first
    hover's text, a second hover's text)."""
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    client = LanguageClient("bench-first-hover", "0")
    await client.start_io(sys.executable, "-m", "hlo_lsp")
    try:
        await client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=path.parent.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=path.parent.as_uri(), name="dump")],
            initialization_options={"xlaDiagnostics": False}))
        client.initialized(types.InitializedParams())
        text = path.read_text(encoding="utf-8")
        at = text.index(needle) + 2
        line = text.count("\n", 0, at)
        pos = types.Position(line=line, character=at - (text.rfind("\n", 0, at) + 1))
        doc = types.TextDocumentIdentifier(uri=path.as_uri())
        params = types.HoverParams(text_document=doc, position=pos)
        t0 = time.perf_counter()
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=path.as_uri(), language_id="hlo",
                                                 version=1, text=text)))
        first = await client.text_document_hover_async(params)
        ms = (time.perf_counter() - t0) * 1000
        await asyncio.sleep(0.5)
        second = await client.text_document_hover_async(params)
        return (ms, first.contents.value if first else "", second.contents.value if second else "")
    finally:
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()


def run(file: pathlib.Path, runs: int) -> dict:
    """``runs`` fresh servers on a copy of ``file``'s directory; the figures."""
    size = file.stat().st_size
    text = file.read_text(encoding="utf-8")
    # The first instruction of the ENTRY computation (its name).
    entry = text.index("\nENTRY ")
    needle = text[text.index("\n  ", entry) + 1:].split("=", 1)[0].strip().split()[-1]
    times, same = [], True
    with tempfile.TemporaryDirectory() as tmp:
        dump = pathlib.Path(tmp) / "dump"
        shutil.copytree(file.parent, dump)
        for _ in range(runs):
            ms, first, second = asyncio.run(one_run(dump / file.name, needle))
            times.append(ms)
            same = same and first == second and bool(first)
    return {"file": str(file), "bytes": size, "lines": text.count("\n"), "runs": runs,
            "first_hover_ms": [round(t, 1) for t in times],
            "median_ms": round(statistics.median(times), 1), "max_ms": round(max(times), 1),
            "target_ms": TARGET_MS, "first_equals_later": same}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file", type=pathlib.Path, default=DEFAULT_FILE)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", type=pathlib.Path)
    args = ap.parse_args()
    if args.file.stat().st_size >= MAX_BYTES:
        print(f"note: {args.file} is not a small dump (>= {MAX_BYTES} bytes)", file=sys.stderr)
    result = run(args.file, args.runs)
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
