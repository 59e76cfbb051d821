"""``hlo/graph`` end to end: the real server over stdio, driven by pytest-lsp's
client; answers checked against the model of the same text."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from hlo_lsp.lsp.messages import plain
from hlo_lsp.syntax.parser import parse
from tests.helpers import EXAMPLES, FP8_DUMP, FP8_REGRESSION, chain_module, open_file, position_of

SERVER = [sys.executable, "-m", "hlo_lsp"]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual_studio_code"),
        initialization_options={"xlaDiagnostics": False}))
    yield
    await lsp_client.shutdown_session()


async def _graph(client: LanguageClient, **params) -> dict | None:
    return plain(await client.protocol.send_request_async("hlo/graph", params))


async def test_graph_of_a_computation_with_fusion_clusters(client: LanguageClient):
    uri, text = open_file(client, FP8_REGRESSION)
    module = parse(text)
    reply = await _graph(client, textDocument={"uri": uri}, computation="main.25")
    entry = module.by_name["main.25"]
    top = [n for n in reply["nodes"] if n["cluster"] is None]
    assert [n["name"] for n in top] == [i.name.name for i in entry.instructions]
    lines = text.split("\n")
    for n in top:  # the name range is the name in the text, with its %
        r = n["selectionRange"]
        assert r["start"]["line"] == r["end"]["line"]
        assert lines[r["start"]["line"]][r["start"]["character"]:r["end"]["character"]] \
            == "%" + n["name"]
    edges = {(e["source"], e["target"], e["operand"]) for e in reply["edges"]
             if "/" not in e["target"]}
    assert edges == {(op.ref.name, i.name.name, k) for i in entry.instructions
                     for k, op in enumerate(i.operands)}
    gemm = next(n for n in top if n["name"] == "gemm_fusion_dot.19.0")
    assert (gemm["kind"], gemm["label"]) == ("fusion", "Triton GEMM fusion")
    cluster = next(c for c in reply["clusters"] if c["owner"] == gemm["id"])
    assert cluster["expanded"] and cluster["computation"] == "gemm_fusion_dot.19_computation"
    assert [n["name"] for n in reply["nodes"] if n["cluster"] == cluster["id"]] == \
        [i.name.name for i in module.by_name[cluster["computation"]].instructions]
    assert reply["omitted"] == 0 and reply["message"] == ""


async def test_graph_around_the_cursor(client: LanguageClient):
    uri, text = open_file(client, FP8_DUMP)
    reply = await _graph(client, textDocument={"uri": uri},
                         position=plain(position_of(text, "%cublas-gemm.1.0 =", 3)), hops=1)
    module = parse(text)
    gemm = module.entry.by_name["cublas-gemm.1.0"]
    near = {op.ref.name for op in gemm.operands} | \
        {u.name.name for u in module.entry.users_by_name["cublas-gemm.1.0"]} | {"cublas-gemm.1.0"}
    assert reply["focus"] == "cublas-gemm.1.0"
    assert {n["name"] for n in reply["nodes"] if n["cluster"] is None} == near
    node = next(n for n in reply["nodes"] if n["name"] == "cublas-gemm.1.0")
    assert (node["kind"], node["library"]) == ("custom-call", "cuBLASLt FP8")


async def test_the_page_an_editor_shows(client: LanguageClient):
    """With ``page``, the reply carries the page ``hlo-lsp graph`` writes, for the
    same nodes (VS Code's HLO: Show Graph, Neovim's :HloGraph); without, none."""
    uri, text = open_file(client, FP8_DUMP)
    at = plain(position_of(text, "%cublas-gemm.1.0 =", 3))
    reply = await _graph(client, textDocument={"uri": uri}, position=at, hops=1, page=True)
    page = reply["page"]
    assert page.startswith("<!DOCTYPE html>") and "hloGraphviz" in page
    data = json.loads(page.split('id="hlo-graph-data">', 1)[1].split("</script>", 1)[0])
    assert {n["name"] for n in data["nodes"] if not n.get("stub")} == \
        {n["name"] for n in reply["nodes"]}
    assert data["uri"] == uri and "around cublas-gemm.1.0" in page
    gemm = next(n for n in data["nodes"] if n["name"] == "cublas-gemm.1.0")
    assert gemm["range"] == next(n for n in reply["nodes"]
                                 if n["name"] == "cublas-gemm.1.0")["selectionRange"]
    assert (await _graph(client, textDocument={"uri": uri}, position=at, hops=1))["page"] == ""


async def test_memory_page_of_a_dump_with_xlas_reports(client: LanguageClient):
    """hlo/memory: the page of hlo-lsp memory for a dump with a live-range report
    beside it; null for one without reports."""
    from hlo_lsp.dump.reports import load_live_range_for

    conv = EXAMPLES / "gpu" / "deviceless" / "conv_bias_relu" / \
        "module_0001.jit_conv_bias_relu.sm_9.0a_gpu_after_optimizations.txt"
    uri, _ = open_file(client, conv)
    reply = plain(await client.protocol.send_request_async("hlo/memory",
                                                        {"textDocument": {"uri": uri}}))
    report = load_live_range_for(str(conv))
    assert (reply["peakBytes"], reply["peakStep"], reply["source"]) == \
        (report.peak_bytes, report.peak_step, "live-range")
    assert f'id="peak" data-bytes="{report.peak_bytes}"' in reply["page"]
    assert "data-range=" in reply["page"]
    plain_uri, _ = open_file(client, FP8_DUMP)
    assert await client.protocol.send_request_async(
        "hlo/memory", {"textDocument": {"uri": plain_uri}}) is None


async def test_malformed_params_and_unknown_computation_answer_null(client: LanguageClient):
    uri, _ = open_file(client, FP8_DUMP)
    assert await _graph(client, textDocument={"uri": uri}, computation="nope") is None
    assert await _graph(client, textDocument=3) is None


async def test_node_cap_on_a_large_document(client: LanguageClient, tmp_path):
    text = chain_module(30000)
    path = tmp_path / "big.hlo"
    path.write_text(text)
    uri, _ = open_file(client, path, text)
    reply = await _graph(client, textDocument={"uri": uri},
                         position=plain(position_of(text, "%a15000 =", 2)), hops=500,
                         limit=200)
    assert len(reply["nodes"]) == 200 and reply["omitted"] == 30002 - 200
    assert reply["message"].startswith("29802 more not shown")
    names = {n["name"] for n in reply["nodes"]}
    assert {"a15000", "a14999", "a15001", "p"} <= names
    hidden = {n["name"]: n["hidden"] for n in reply["nodes"]}
    assert hidden["p"] == 30000 - sum(1 for n in names if n.startswith("a"))


class _RawClient:
    """JSON-RPC over the server's stdin/stdout with nothing in between, to time
    the server itself (pytest-lsp's client spends most of the time of a
    100 KB answer turning it into objects)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.next_id = 0

    def send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def receive(self) -> dict:
        length = 0
        while True:
            line = self.proc.stdout.readline()
            assert line, "the server closed its output"
            if line in (b"\r\n", b"\n"):
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return json.loads(self.proc.stdout.read(length))

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            message = self.receive()
            if message.get("id") == self.next_id and "method" not in message:
                return message

    def close(self) -> None:
        self.request("shutdown", None)
        self.send({"jsonrpc": "2.0", "method": "exit"})
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def test_a_200_node_neighbourhood_of_30000_instructions_is_the_same_answer_again(tmp_path):
    """hlo/graph with hops=1000, limit=200 in a chain of 30,000 instructions:
    200 nodes, the same each time. That the walk stops at the limit (its
    processor time) is tests/unit/features/test_graph.py's; the answer times are
    printed, not asserted (issue 42: no test fails because the machine is busy)."""
    text = chain_module(30000)
    uri = (tmp_path / "big.hlo").as_uri()
    raw = _RawClient()
    try:
        raw.request("initialize", {"capabilities": {},
                                   "initializationOptions": {"xlaDiagnostics": False}})
        raw.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        raw.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
            "textDocument": {"uri": uri, "languageId": "hlo", "version": 1, "text": text}}})
        pos = position_of(text, "%a20000 =", 2)
        params = {"textDocument": {"uri": uri}, "hops": 1000, "limit": 200,
                  "position": {"line": pos.line, "character": pos.character}}
        first = raw.request("hlo/graph", params)["result"]  # waits for the analysis
        assert len(first["nodes"]) == 200
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            again = raw.request("hlo/graph", params)["result"]
            times.append(time.perf_counter() - t0)
            assert again == first
    finally:
        raw.close()
    print(f"hlo/graph, 200 of 30,002 nodes: median {sorted(times)[2] * 1000:.0f} ms")
