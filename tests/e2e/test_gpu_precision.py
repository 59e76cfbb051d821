"""Issue 40 item 3 end to end: an FP8 program whose matmul does not run in FP8.

Compiles examples/gpu/programs/fp8_matmul_bias.py (a scaled FP8 matmul with a
bias) for an H100 without a GPU with default flags, through the real CLI
(``hlo-lsp dump --target h100``, JAX's deviceless ahead-of-time compilation),
then asks the real server (pytest-lsp over stdio) for the hover of the GEMM
fusion: it says that its FP8 operands are converted to bf16 before the dot and
names its split-K. ``hlo-lsp summary`` says the same. Nothing here needs a GPU.

Skipped without the ``cuda`` extra (``jax[cuda12]``) unless
HLO_LSP_REQUIRE_GPU_COMPILE is set (.ci/run sets it): then it is a failure.
"""

from __future__ import annotations

import pathlib
import re
import shutil
import subprocess
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from hlo_lsp.dump.recompile import hlo_files

from tests.helpers import EXAMPLES, compile_env, needs_gpu_compile, position_of

pytestmark = needs_gpu_compile()

PROGRAM = EXAMPLES / "gpu" / "programs" / "fp8_matmul_bias.py"
SERVER = [sys.executable, "-m", "hlo_lsp"]
AFTER = "sm_9.0a_gpu_after_optimizations.txt"
TIMEOUT_S = 300


@pytest.fixture(scope="module")
def fp8_bias_dump(tmp_path_factory) -> pathlib.Path:
    """The after-optimizations HLO of the program, compiled for H100 now."""
    project = tmp_path_factory.mktemp("fp8_bias")
    shutil.copy(PROGRAM, project / PROGRAM.name)
    out = project / "dump"
    done = subprocess.run(
        [sys.executable, "-m", "hlo_lsp", "dump", "--target", "h100", "--out", str(out),
         "--", sys.executable, str(project / PROGRAM.name)],
        cwd=project, env=compile_env(), capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    [name] = [n for n, d in hlo_files(out).items()
              if d.module_name == "jit_fp8_block" and n.endswith(AFTER)]
    return out / name


def _gemm_fusion(text: str) -> str:
    """The name of the GEMM fusion (XLA names it gemm_fusion_<dot>)."""
    match = re.search(r"^\s*%(gemm_fusion_\S+) = ", text, re.M)
    assert match, "no GEMM fusion in the dump"
    return match.group(1)


def test_the_dump_shows_the_issue(fp8_bias_dump):
    text = fp8_bias_dump.read_text()
    assert "__cublas$lt$matmul$f8" not in text
    name = _gemm_fusion(text)
    line = next(ln for ln in text.splitlines() if f"%{name} = " in ln)
    assert "__triton" in line
    # Its result holds the partial products: one more dimension than the output.
    assert re.search(rf"%{re.escape(name)} = f32\[\d+,256,384\]", text), line


def test_summary_says_fp8_to_bf16_and_split_k(fp8_bias_dump):
    done = subprocess.run([sys.executable, "-m", "hlo_lsp", "summary", str(fp8_bias_dump)],
                          env=compile_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    name = _gemm_fusion(fp8_bias_dump.read_text())
    assert (f"%{name}: Computes in bf16: its f8e4m3fn operands are converted to bf16 "
            "before the dot") in done.stdout, done.stdout
    assert re.search(rf"%{re.escape(name)}: Split-K \d+: the contracting dimension K "
                     r"\(512\) is split into", done.stdout), done.stdout


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    yield
    if lsp_client.capabilities is not None:
        await lsp_client.shutdown_session()


async def test_hover_on_the_gemm_fusion_names_bf16_and_split_k(client, fp8_bias_dump):
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual_studio_code"),
        workspace_folders=[types.WorkspaceFolder(uri=fp8_bias_dump.parent.as_uri(),
                                                 name="dump")],
        initialization_options={"xlaDiagnostics": False}))
    text = fp8_bias_dump.read_text()
    uri = fp8_bias_dump.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="hlo", version=1, text=text)))
    name = _gemm_fusion(text)
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=position_of(text, f"%{name} = ", 1)))
    md = hover.contents.value
    assert ("**Computes in bf16**: its f8e4m3fn operands are converted to bf16 before "
            "the dot") in md, md
    assert "`%x.1` by `%" in md and "`%w.1` by `%" in md
    assert "not an FP8 GEMM" in md and "`__cublas$lt$matmul$f8`" in md
    split = re.search(r"\*\*Split-K (\d+)\*\*: the contracting dimension K \(512\) is "
                      r"split into (\d+) partial products of (\d+) \(`(f32\[\d+,256,384\])`",
                      md)
    assert split, md
    parts = int(split.group(1))
    assert int(split.group(2)) == parts and int(split.group(3)) * parts == 512
    assert split.group(4) == f"f32[{parts},256,384]"
    assert re.search(r"summed by `%reduce[\w.]*` in `%\w", md), md
    # It was compiled without the device: the hover says so, as for any kernel.
    assert "without a GPU" in md
