"""A typing storm on a big dump: do requests wait behind edits?

Opens the 4 MB after-optimizations benchmark dump (``benchmarks/gen_dump.py``)
in a real server over stdio, waits for its diagnostics, then types: ``--edits``
one-character edits at ``--rate`` per second, each followed at once by a hover on
an instruction name elsewhere in the file (not awaited before the next edit, as
an editor does). Reports

- hover latency during the storm (p50, p99, max), and how many hovers were
  refused with ContentModified (the client asks again; counted, not timed);
- the time from the last edit to the diagnostics of the last version;
- server memory (RSS) before the storm, right after it, and ``--idle`` seconds
  later, as a ratio to the level before.

    python benchmarks/bench_storm.py [--edits 1000] [--rate 5] [--idle 15] [--json OUT]

Targets: hover p99 under 100 ms, diagnostics within 200 ms of the last edit,
memory within 20% of the pre-storm level after the idle time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pathlib
import random
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_parse import DEFAULT_DUMP, start_server  # noqa: E402
from tests.helpers import rss_bytes  # noqa: E402


async def storm(path: pathlib.Path, edits: int, rate: float, idle: float,
                hovers: bool = True) -> dict:
    from lsprotocol import types
    from pygls.exceptions import JsonRpcException

    text = path.read_text(encoding="utf-8")
    published: asyncio.Queue = asyncio.Queue()
    client, drain, stderr = await start_server(
        "storm", lambda params: published.put_nowait((time.perf_counter(), params)))
    pid = client._server.pid
    uri = path.resolve().as_uri()
    doc = types.TextDocumentIdentifier(uri=uri)
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="hlo", version=1, text=text)))
    await published.get()
    await asyncio.sleep(1.0)
    rss_before = rss_bytes(pid)

    lines = text.splitlines()
    names = [(i, ln.index("%") + 1) for i, ln in enumerate(lines)
             if ln.startswith("  %") and " = " in ln]
    rng = random.Random(0)
    # Edits: a comment character typed at the end of lines in the first tenth of
    # the file, so every later offset moves; hovers anywhere.
    edit_lines = [i for i, _ in names[: max(1, len(names) // 10)]]
    latencies: list[float] = []
    refused = 0

    async def hover(line: int, col: int) -> None:
        nonlocal refused
        t0 = time.perf_counter()
        try:
            await client.text_document_hover_async(types.HoverParams(
                text_document=doc, position=types.Position(line=line, character=col)))
        except JsonRpcException:
            refused += 1
            return
        latencies.append(time.perf_counter() - t0)

    pending = []
    period = 1.0 / rate
    start = time.perf_counter()
    for n in range(edits):
        line = rng.choice(edit_lines)
        end = len(lines[line])
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=n + 2),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(line=line, character=end),
                                  end=types.Position(line=line, character=end)),
                text=" ")]))
        lines[line] += " "
        if hovers:
            pending.append(asyncio.ensure_future(hover(*rng.choice(names))))
        await asyncio.sleep(max(0.0, start + (n + 1) * period - time.perf_counter()))
    last_edit = time.perf_counter() - period
    await asyncio.gather(*pending)
    while True:
        when, params = await published.get()
        if params.version == edits + 1:
            break
    diagnostics_after = when - last_edit
    rss_after = rss_bytes(pid)
    await asyncio.sleep(idle)
    rss_idle = rss_bytes(pid)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    drain.cancel()
    latencies.sort()
    latencies = latencies or [0.0]
    pick = lambda q: latencies[min(len(latencies) - 1, int(len(latencies) * q))]  # noqa: E731
    return {"edits": edits, "rate_per_s": rate,
            "hover_p50_ms": round(pick(0.5) * 1000, 1), "hover_p99_ms": round(pick(0.99) * 1000, 1),
            "hover_max_ms": round(latencies[-1] * 1000, 1), "hovers_refused": refused,
            "last_edit_to_diagnostics_ms": round(diagnostics_after * 1000, 1),
            "rss_before_mb": round(rss_before / 2**20, 1), "rss_after_mb": round(rss_after / 2**20, 1),
            "rss_idle_mb": round(rss_idle / 2**20, 1),
            "rss_idle_ratio": round(rss_idle / rss_before, 2) if rss_before else None}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dump", type=pathlib.Path, default=DEFAULT_DUMP)
    ap.add_argument("--edits", type=int, default=1000)
    ap.add_argument("--rate", type=float, default=5.0, help="edits per second")
    ap.add_argument("--idle", type=float, default=15.0, help="seconds before the last RSS")
    ap.add_argument("--no-hover", action="store_true", help="edits only")
    ap.add_argument("--json", type=pathlib.Path)
    args = ap.parse_args()
    if not args.dump.exists():
        sys.exit(f"{args.dump} is missing: run benchmarks/bench_parse.py once to generate it")
    figures = asyncio.run(storm(args.dump, args.edits, args.rate, args.idle,
                                not args.no_hover))
    for key, value in figures.items():
        print(f"{key:<28} {value}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
