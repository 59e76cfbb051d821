"""``hlo/graph`` and ``hlo/memory`` with ``format: "text"`` end to end: the real
server over stdio, driven by pytest-lsp's client; the lines and their targets
checked against the text they come from (Neovim's view without a browser)."""

from __future__ import annotations

import sys

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from hlo_lsp.lsp.messages import plain
from tests.helpers import EXAMPLES, FP8_DUMP, open_file, position_of

SERVER = [sys.executable, "-m", "hlo_lsp"]
CONV = EXAMPLES / "gpu" / "deviceless" / "conv_bias_relu" / \
    "module_0001.jit_conv_bias_relu.sm_9.0a_gpu_after_optimizations.txt"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("neovim"),
        initialization_options={"xlaDiagnostics": False}))
    yield
    await lsp_client.shutdown_session()


def _targeted(text: str, reply: dict) -> dict[int, str]:
    """Line -> the text its target's range covers (a name, with %)."""
    rows = text.split("\n")
    out = {}
    for t in reply["targets"]:
        r = t["range"]
        assert r["start"]["line"] == r["end"]["line"]
        out[t["line"]] = rows[r["start"]["line"]][r["start"]["character"]:r["end"]["character"]]
    return out


async def test_graph_as_text_around_the_cursor(client: LanguageClient):
    uri, text = open_file(client, FP8_DUMP)
    reply = plain(await client.protocol.send_request_async("hlo/graph", {
        "textDocument": {"uri": uri}, "format": "text", "hops": 2,
        "position": plain(position_of(text, "%cublas-gemm.1.0 =", 3))}))
    assert set(reply) == {"title", "lines", "targets", "cursorLine", "message"}
    targeted = _targeted(text, reply)
    assert targeted[reply["cursorLine"]] == "%cublas-gemm.1.0"
    assert reply["lines"][reply["cursorLine"]].startswith("%cublas-gemm.1.0  cuBLASLt FP8 call")
    for line, name in targeted.items():
        assert name in reply["lines"][line]
    operand = next(i for i, l in enumerate(reply["lines"]) if "0: %Arg_0.1.0" in l)
    assert targeted[operand] == "%Arg_0.1.0"
    # without the format: the graph as before
    assert "nodes" in plain(await client.protocol.send_request_async("hlo/graph", {
        "textDocument": {"uri": uri}, "position": plain(position_of(text, "%cublas-gemm.1.0 ="))}))


async def test_memory_as_text(client: LanguageClient):
    uri, text = open_file(client, CONV)
    reply = plain(await client.protocol.send_request_async("hlo/memory", {
        "textDocument": {"uri": uri}, "format": "text"}))
    targeted = _targeted(text, reply)
    peak = reply["lines"][reply["cursorLine"]]
    assert peak.endswith("◀ peak") and "█" in peak
    assert targeted[reply["cursorLine"]] == "%cudnn-conv-bias-activation.3"
    assert any(l.strip().startswith("1,048,576 B (1.0 MiB)  %x.1{}") for l in reply["lines"])
    assert "page" in plain(await client.protocol.send_request_async(
        "hlo/memory", {"textDocument": {"uri": uri}}))
    plain_uri, _ = open_file(client, FP8_DUMP)
    assert await client.protocol.send_request_async(
        "hlo/memory", {"textDocument": {"uri": plain_uri}, "format": "text"}) is None
