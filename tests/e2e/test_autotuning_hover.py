"""Autotuning explained through the real server (pytest-lsp over stdio).

- A module whose cuBLAS custom-call is openxla/xla's public H100 results entry's
  own key (hand-made HLO, not a dump: no dump made here matches a public entry),
  with that public file beside it under the name XLA gives a dump's results
  (``*.autotune_results.pbtxt``): hover on the call says it was autotuned, the
  winner and the file (the wiring: DumpInputs.autotuning -> hover).
- The deviceless H100 example (examples/gpu/deviceless/fp8_triton_gemm, whose
  ``autotune_results.pbtxt`` XLA wrote empty): the summary's Autotuning line
  says each kernel was chosen by heuristics (deviceless); hover says so once
  (the deviceless statement); an unreadable results file changes nothing else.
"""

from __future__ import annotations

import shutil
import sys

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from hlo_lsp.dump.autotuning import read_autotune_file
from tests.helpers import EXAMPLES, ROOT, position_of

SERVER = [sys.executable, "-m", "hlo_lsp"]
DUMP = EXAMPLES / "gpu" / "deviceless" / "fp8_triton_gemm"
AFTER = "module_0001.jit_matmul_fn_with_scale.sm_9.0a_gpu_after_optimizations.txt"
RESULTS = "module_0001.jit_matmul_fn_with_scale.autotune_results.pbtxt"
DB = ROOT / "tests" / "data" / "autotuning" / "gpu_compiler_test_autotune_db.textproto"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    yield
    if lsp_client.capabilities is not None:
        await lsp_client.shutdown_session()


async def _open(client, path) -> tuple[str, str]:
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual_studio_code"),
        initialization_options={"xlaDiagnostics": False}))
    text = path.read_text()
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="hlo", version=1, text=text)))
    return uri, text


async def _hover(client, path, needle: str) -> str:
    uri, text = await _open(client, path)
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=position_of(text, needle)))
    return hover.contents.value


async def test_hover_names_the_winner_of_a_joined_results_entry(client, tmp_path):
    key = read_autotune_file(DB).results[0].hlo
    head, attrs = key.split(" custom-call(", 1)
    attrs = attrs.split("), ", 1)[1]
    hlo = tmp_path / "module_0001.m.sm_9.0a_gpu_after_optimizations.txt"
    hlo.write_text("HloModule m\n\nENTRY e {\n"
                   "  %p0 = bf16[128,1024,1024]{2,1,0} parameter(0)\n"
                   "  %p1 = bf16[128,1024,1024]{2,1,0} parameter(1)\n"
                   f"  ROOT %cublas-batch-gemm.1 = {head} custom-call(%p0, %p1), {attrs}\n}}\n")
    shutil.copyfile(DB, tmp_path / "module_0001.m.autotune_results.pbtxt")
    md = (await _hover(client, hlo, "%cublas-batch-gemm.1 =")).replace("\\", "")
    assert ("**Autotuned** on CUDA: 9.0, Cores: 132, GPU clock: 1.98 GHz, Memory bandwidth: "
            "3352 GB/s, L2 cache: 50 MB, DNN version: 9.10.0: chose cuBLAS algorithm -1, "
            "1 ns") in md
    assert "From `module_0001.m.autotune_results.pbtxt`" in md


async def test_summary_marks_kernels_chosen_by_heuristics(client):
    uri, _ = await _open(client, DUMP / AFTER)
    summary = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="hlo.showSummary", arguments=[uri, {"format": "text"}]))
    [line] = [ln for ln in summary.splitlines() if ln.startswith("Autotuning: ")]
    assert line == "Autotuning: 3 kernels chosen by heuristics (deviceless)"


async def test_deviceless_hover_says_heuristics_once(client):
    md = await _hover(client, DUMP / AFTER, "%gemm_fusion_dot_general.1 =")
    assert md.count("kernels chosen without autotuning (no device)") == 1
    assert "Autotuned" not in md and "Not autotuned" not in md


async def test_unreadable_results_file_is_skipped(client, tmp_path):
    copy = tmp_path / "dump"
    shutil.copytree(DUMP, copy)
    (copy / RESULTS).write_bytes(b"\x08\x03\x00\xff")  # binary: not read, not shown
    md = await _hover(client, copy / AFTER, "%gemm_fusion_dot_general.1 =")
    assert "Autotuned" not in md and "gemm_fusion_dot_general.1" in md
