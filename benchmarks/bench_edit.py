"""One-line edits in a multi-megabyte dump -> fresh diagnostics, in the real server.

Opens the generated 4 MB after-optimizations dump (benchmarks/gen_dump.py) in a
fresh server over stdio, waits for its full index, then makes ``--edits`` edits
spread evenly through the file, one at a time: each renames an operand to an
undefined name (so its diagnostic must appear) and the next edit undoes it.
Reported per edit, from ``didChange`` sent:

- **first**: the first ``publishDiagnostics`` of the edit's version: the edited
  computation checked, the rest of the module as before
  (:func:`hlo_lsp.features.diagnostics.edited_diagnostics`);
- **full**: the edit's model in use, seen as the answer of a ``references``
  request on the edited name sent with the edit (it waits for that version's
  whole model; the module's semantic checks take a few ms more).

Median, p90, p99 and max in milliseconds; the issue-17 targets are median <= 20 ms
and p99 <= 50 ms for the first diagnostics. Every edit's diagnostic is checked to
name the broken operand, and every undo to clear it.

    python benchmarks/bench_edit.py [--dump PATH] [--edits 50] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_parse import DEFAULT_DUMP, start_server  # noqa: E402


def _operand_positions(text: str, count: int) -> list[tuple[int, int, str]]:
    """``count`` (line, column, name) of operand uses spread evenly over ``text``."""
    lines = text.split("\n")
    out = []
    for k in range(count):
        i = int(len(lines) * (k + 0.5) / count)
        while i < len(lines):
            line = lines[i]
            at = line.find("(%")
            if line.startswith("  %") and " = " in line and at > 0:
                end = at + 2
                while end < len(line) and (line[end].isalnum() or line[end] in "._-"):
                    end += 1
                out.append((i, at + 2, line[at + 2:end]))
                break
            i += 1
    return out


def _stats(ms: list[float]) -> dict:
    s = sorted(ms)
    return {"median": round(statistics.median(s), 1), "p90": round(s[int(len(s) * 0.9)], 1),
            "p99": round(s[min(len(s) - 1, int(len(s) * 0.99))], 1), "max": round(s[-1], 1)}


async def run(path: pathlib.Path, edits: int) -> dict:
    from lsprotocol import types

    text = path.read_text()
    published: asyncio.Queue = asyncio.Queue()
    client, drain, stderr = await start_server(
        "bench-edit", lambda p: published.put_nowait((time.perf_counter(), p)))
    uri = path.resolve().as_uri()
    doc = types.TextDocumentIdentifier(uri=uri)
    t0 = time.perf_counter()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="hlo", version=1, text=text)))
    when, params = await published.get()
    assert not params.diagnostics, params.diagnostics[:3]
    full_index = when - t0
    await asyncio.sleep(1.0)  # let start-up work settle (workspace index, collector)

    first_ms, full_ms = [], []
    version = 1
    for line, col, name in _operand_positions(text, edits):
        for new, broken in (("Z" + name, True), (name, False)):
            version += 1
            old_len = len(name) + (0 if broken else 1)
            e0 = time.perf_counter()
            client.text_document_did_change(types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangePartial(
                    range=types.Range(start=types.Position(line=line, character=col),
                                      end=types.Position(line=line, character=col + old_len)),
                    text=new)]))
            refs = asyncio.ensure_future(client.text_document_references_async(
                types.ReferenceParams(text_document=doc,
                                      position=types.Position(line=line, character=col + 1),
                                      context=types.ReferenceContext(
                                          include_declaration=True))))
            while True:
                when, params = await published.get()
                if params.version == version:
                    break
            first = when - e0
            await refs
            full = time.perf_counter() - e0
            messages = [d.message for d in params.diagnostics]
            if broken:
                assert any("Z" + name in m for m in messages), (name, messages)
                first_ms.append(first * 1000)
                full_ms.append(full * 1000)
            else:
                assert not messages, messages
            # the next edit starts from a quiet server (the later publish, if any,
            # of this version is drained)
            await asyncio.sleep(0.15)
            while not published.empty():
                published.get_nowait()
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    drain.cancel()
    return {"dump": str(path), "chars": len(text), "edits": len(first_ms),
            "full_index_s": round(full_index, 3),
            "first_diagnostics_ms": _stats(first_ms), "full_analysis_ms": _stats(full_ms),
            "cpus": os.cpu_count(), "load": os.getloadavg()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dump", type=pathlib.Path, default=DEFAULT_DUMP)
    ap.add_argument("--edits", type=int, default=50)
    ap.add_argument("--json", type=pathlib.Path)
    args = ap.parse_args(argv)
    if not args.dump.exists():
        print(f"{args.dump} is missing: python benchmarks/gen_dump.py --out {args.dump} "
              "--target-mb 4", file=sys.stderr)
        return 2
    result = asyncio.run(run(args.dump, args.edits))
    print(f"{result['edits']} one-line edits in {args.dump.name} ({result['chars']:,} chars), "
          f"{result['cpus']} cores, load {result['load'][0]:.2f}")
    for key in ("first_diagnostics_ms", "full_analysis_ms"):
        s = result[key]
        print(f"  {key:22s} median {s['median']:6.1f}  p90 {s['p90']:6.1f}  "
              f"p99 {s['p99']:6.1f}  max {s['max']:6.1f}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
