"""A ~100 MB dump in the real server: memory stays bounded, answers keep coming.

Builds the big text from the generated 4 MB after-optimizations dump
(benchmarks/gen_dump.py) by repeating its non-entry computations under new
names (``%name`` -> ``%name.copyK``) until the target size, keeping the entry
computation last, then measures with a fresh server over stdio:
``didOpen`` -> first definition and first hover (both sent right after the
didOpen, each timed from the didOpen's first byte on the wire to its answer),
and the server's resident memory relative to the file size.

    python benchmarks/bench_huge.py [--target-mb 100] [--dump PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import pathlib
import re
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_parse import (DEFAULT_DUMP, ensure_dump,  # noqa: E402
                                    start_server)
from tests.helpers import rss_bytes  # noqa: E402

_HEAD = re.compile(r"^(?:ENTRY[ \t]+)?%?[A-Za-z_][\w.\-]*[^\n]*\{[ \t]*$", re.M)


def _did_open_message(uri: str, text: str) -> bytes:
    """The didOpen notification of ``text`` as framed on the wire (JSON-RPC over
    stdio: a Content-Length header, then the UTF-8 JSON body)."""
    body = json.dumps({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
        "textDocument": {"uri": uri, "languageId": "hlo", "version": 1, "text": text}}},
        ensure_ascii=False).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


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
    rss_before = rss_bytes(pid)
    probe = text.rindex("(%", 0, len(text) - 1000) + 2
    pos = types.Position(line=text.count("\n", 0, probe),
                         character=probe - (text.rfind("\n", 0, probe) + 1))
    uri = path.as_uri()
    doc = types.TextDocumentIdentifier(uri=uri)
    # The didOpen message is encoded before the clock starts: the client's
    # encoding (0.35 s for 100 MB with pygls' client) is not the server's work,
    # and an editor does it in a process of its own.
    message = await asyncio.to_thread(_did_open_message, uri, text)
    t0 = time.perf_counter()
    sent = client.protocol.writer.write(message)
    if inspect.isawaitable(sent):
        await sent
    definition = asyncio.ensure_future(client.text_document_definition_async(
        types.DefinitionParams(text_document=doc, position=pos)))
    hover = asyncio.ensure_future(client.text_document_hover_async(
        types.HoverParams(text_document=doc, position=pos)))
    answered: dict = {}
    for name, future in (("definition", definition), ("hover", hover)):
        future.add_done_callback(lambda _f, n=name: answered.setdefault(n, time.perf_counter()))
    loc, answer = await asyncio.gather(definition, hover)
    assert loc, "definition must be answered"
    assert answer is not None, "hover must be answered"
    first_definition = answered["definition"] - t0
    first_hover = answered["hover"] - t0
    await asyncio.sleep(2.0)  # let the server settle
    rss = rss_bytes(pid)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    drain.cancel()
    return {"bytes": len(text.encode()), "first_definition_s": round(first_definition, 3),
            "first_hover_s": round(first_hover, 3), "server_rss_mb": round(rss / 2**20, 1),
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
