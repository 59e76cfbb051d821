"""A ~100 MB dump in the real server: memory stays bounded, answers keep coming.

Builds the big text from the generated 4 MB after-optimizations dump
(benchmarks/gen_dump.py) by repeating its non-entry computations under new
names (``%name`` -> ``%name.copyK``) until the target size, keeping the entry
computation last, then measures with a fresh server over stdio:
``didOpen`` -> first definition and first hover answers, and the server's
resident memory relative to the file size.

    python benchmarks/bench_huge.py [--target-mb 100] [--dump PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import pathlib
import re
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_parse import (DEFAULT_DUMP, _rss_bytes, ensure_dump,  # noqa: E402
                                    start_server)

_HEAD = re.compile(r"^(?:ENTRY[ \t]+)?%?[A-Za-z_][\w.\-]*[^\n]*\{[ \t]*$", re.M)


def build(text: str, target_bytes: int) -> str:
    """``text`` grown to about ``target_bytes`` with renamed computation copies."""
    heads = [m.start() for m in _HEAD.finditer(text)]
    prefix, body = text[:heads[0]], text[heads[0]:]
    entry_at = body.rfind("\nENTRY ") + 1
    callees, entry = body[:entry_at], body[entry_at:]
    names = sorted({m.group(1) for m in re.finditer(r"^%([\w.\-]+) ", callees, re.M)},
                   key=len, reverse=True)
    pattern = re.compile(r"%(" + "|".join(map(re.escape, names)) + r")(?![\w.\-])")
    parts = [prefix, callees]
    size = len(text)
    k = 0
    while size < target_bytes:
        k += 1
        copy = pattern.sub(lambda m: f"%{m.group(1)}.copy{k}", callees)
        parts.append(copy)
        size += len(copy)
    parts.append(entry)
    return "".join(parts)


async def session(path: pathlib.Path, text: str) -> dict:
    from lsprotocol import types

    client, drain, _stderr = await start_server("bench-huge")
    pid = client._server.pid
    rss_before = _rss_bytes(pid)
    probe = text.rindex("(%", 0, len(text) - 1000) + 2
    pos = types.Position(line=text.count("\n", 0, probe),
                         character=probe - (text.rfind("\n", 0, probe) + 1))
    uri = path.as_uri()
    doc = types.TextDocumentIdentifier(uri=uri)
    t0 = time.perf_counter()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="hlo", version=1, text=text)))
    loc = await client.text_document_definition_async(types.DefinitionParams(
        text_document=doc, position=pos))
    first_definition = time.perf_counter() - t0
    assert loc, "definition must be answered"
    h0 = time.perf_counter()
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=doc, position=pos))
    first_hover = time.perf_counter() - h0
    assert hover is not None
    await asyncio.sleep(2.0)  # let the server settle
    rss = _rss_bytes(pid)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    drain.cancel()
    return {"bytes": len(text.encode()), "first_definition_s": round(first_definition, 3),
            "hover_s": round(first_hover, 3), "server_rss_mb": round(rss / 2**20, 1),
            "rss_growth_to_file": round((rss - rss_before) / len(text.encode()), 2)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dump", type=pathlib.Path, default=DEFAULT_DUMP)
    ap.add_argument("--target-mb", type=float, default=100.0)
    args = ap.parse_args()
    text = build(ensure_dump(args.dump).read_text(encoding="utf-8"),
                 int(args.target_mb * 2**20))
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "module_9999.huge.cpu_after_optimizations.txt"
        path.write_text(text, encoding="utf-8")
        figures = asyncio.run(session(path, text))
    for key, value in figures.items():
        print(f"{key:<22}  {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
