"""The roofline estimate through the real server: hover on a kernel of a GPU
dump estimates it on the device its file name implies (``sm_9.0a`` -> H100
SXM), or on the one the ``device`` setting names."""

from __future__ import annotations

import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.helpers import EXAMPLES, position_of

SERVER = [sys.executable, "-m", "hlo_lsp"]
CONV_DUMP = (EXAMPLES / "gpu" / "deviceless" / "conv_bias_relu" /
             "module_0001.jit_conv_bias_relu.sm_9.0a_gpu_after_optimizations.txt")


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    yield
    if lsp_client.capabilities is not None:
        await lsp_client.shutdown_session()


async def _hover(client, options: dict, needle: str) -> str:
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual_studio_code"),
        initialization_options={"xlaDiagnostics": False, **options}))
    text = CONV_DUMP.read_text()
    uri = CONV_DUMP.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="hlo", version=1, text=text)))
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=position_of(text, needle)))
    return hover.contents.value


@pytest.mark.parametrize(("options", "device"), [({}, "H100 SXM"),
                                                  ({"device": "l4"}, "L4")])
async def test_hover_estimates_the_convolution_on_the_device(client, options, device):
    md = await _hover(client, options, "%cudnn-conv-bias-activation.3 =")
    assert "**Cost**" in md and "FLOP" in md
    assert f" on {device}, " in md and "-bound" in md


async def test_module_header_hover_shows_the_memory_peak(client):
    """The module header's hover ends with memory at the peak, from XLA's
    live-range report beside the dump (issue 15): the report's peak and its
    largest buffer."""
    from hlo_lsp.dump.reports import load_live_range_for
    from hlo_lsp.features.memory import timeline_for
    from hlo_lsp.model.shapes import format_bytes
    from hlo_lsp.syntax.parser import parse

    report = load_live_range_for(str(CONV_DUMP))
    timeline = timeline_for(str(CONV_DUMP), parse(CONV_DUMP.read_text()))
    assert timeline.peak_bytes == report.peak_bytes
    md = await _hover(client, {}, "jit_conv_bias_relu")
    assert f"**Memory at the peak**: {format_bytes(report.peak_bytes)} at step " \
           f"{report.peak_step} of" in md
    largest = timeline.peak_buffers[0]
    assert f"- `%{largest.key}` {format_bytes(largest.size)}" in md
