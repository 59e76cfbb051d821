"""Autotuning explained through the real server (pytest-lsp over stdio): hover on
the Triton GEMM fusion of a deviceless H100 dump (examples/gpu/deviceless/
fp8_triton_gemm) says its kernel was chosen by heuristics, from the empty
``*.autotune_results.pbtxt`` XLA wrote beside it; an unreadable autotuning file
in a copy of that dump changes nothing else of the hover."""

from __future__ import annotations

import shutil
import sys

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.helpers import EXAMPLES, position_of

SERVER = [sys.executable, "-m", "hlo_lsp"]
DUMP = EXAMPLES / "gpu" / "deviceless" / "fp8_triton_gemm"
AFTER = "module_0001.jit_matmul_fn_with_scale.sm_9.0a_gpu_after_optimizations.txt"
RESULTS = "module_0001.jit_matmul_fn_with_scale.autotune_results.pbtxt"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    yield
    if lsp_client.capabilities is not None:
        await lsp_client.shutdown_session()


async def _hover(client, path, needle: str) -> str:
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual_studio_code"),
        initialization_options={"xlaDiagnostics": False}))
    text = path.read_text()
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="hlo", version=1, text=text)))
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=position_of(text, needle)))
    return hover.contents.value


async def test_deviceless_gemm_fusion_hover_says_heuristics(client):
    md = await _hover(client, DUMP / AFTER, "%gemm_fusion_dot_general.1 =")
    assert ("*Not autotuned: the dump's autotuning results are empty (kernel chosen "
            "by heuristics).*") in md


async def test_unreadable_results_file_is_skipped(client, tmp_path):
    copy = tmp_path / "dump"
    shutil.copytree(DUMP, copy)
    (copy / RESULTS).write_bytes(b"\x08\x03\x00\xff")  # binary: not read, not shown
    md = await _hover(client, copy / AFTER, "%gemm_fusion_dot_general.1 =")
    assert "Autotuned" not in md and "Not autotuned" not in md
    assert "gemm_fusion_dot_general.1" in md


async def test_summary_marks_kernels_chosen_by_heuristics(client):
    await _hover(client, DUMP / AFTER, "%gemm_fusion_dot_general.1 =")
    summary = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="hlo.showSummary", arguments=[(DUMP / AFTER).as_uri(), {"format": "text"}]))
    assert "Autotuning: " in summary
    [line] = [ln for ln in summary.splitlines() if ln.startswith("Autotuning: ")]
    assert line.endswith("chosen by heuristics (deviceless)") and "autotuned" not in line
