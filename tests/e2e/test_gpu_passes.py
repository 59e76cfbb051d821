"""Issue 44's acceptance for the pass history: on pass dumps of a scaled FP8
matmul with a bias compiled for an H100 without a GPU (a program outside the
repository, ``hlo-lsp dump --target h100`` with
``XLA_FLAGS=--xla_dump_hlo_pass_re=.*``), ``hlo-lsp blame`` of the final
Triton GEMM fusion names ``triton-gemm-rewriter``, and with Triton GEMM off,
of the cuBLASLt FP8 call ``cublas-gemm-rewriter``, across the renaming passes
(``rename-instructions``, ``rename_fusions``). Needs the ``cuda`` extra (full
tier, as tests/e2e/test_gpu_deviceless.py)."""

from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys

import pytest

from tests.helpers import EXAMPLES, compile_env, needs_gpu_compile

pytestmark = needs_gpu_compile()

PROGRAM = EXAMPLES / "gpu" / "programs" / "fp8_matmul_bias.py"
PASSES = "--xla_dump_hlo_pass_re=.*"
TRITON_OFF = "--xla_gpu_enable_triton_gemm=false"
AFTER = "sm_9.0a_gpu_after_optimizations.txt"
TIMEOUT_S = 300


def _hlo_lsp(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hlo_lsp", *args], env=compile_env(),
                          capture_output=True, text=True, timeout=TIMEOUT_S)


@pytest.fixture(scope="module")
def pass_dumps(tmp_path_factory) -> dict[str, pathlib.Path]:
    """Pass dumps of the program copied outside the repository: Triton GEMM on
    (the default) and off."""
    project = tmp_path_factory.mktemp("fp8_passes")
    shutil.copy(PROGRAM, project / PROGRAM.name)
    out = {}
    for name, flags in (("triton", PASSES), ("cublaslt", f"{PASSES} {TRITON_OFF}")):
        done = subprocess.run(
            [sys.executable, "-m", "hlo_lsp", "dump", "--target", "h100", "--out",
             str(project / name), "--", sys.executable, PROGRAM.name],
            cwd=project, env=compile_env(flags), capture_output=True, text=True,
            timeout=TIMEOUT_S)
        assert done.returncode == 0, done.stderr
        out[name] = project / name
    return out


def _after(dump: pathlib.Path) -> pathlib.Path:
    [path] = dump.glob(f"module_*.jit_fp8_block.{AFTER}")
    return path


def _line(path: pathlib.Path, *needles: str) -> int:
    """The 1-based line of ``path`` holding each of ``needles``: exactly one."""
    [line] = [i for i, s in enumerate(path.read_text().splitlines(), 1)
              if all(n in s for n in needles)]
    return line


def _blame(path: pathlib.Path, line: int) -> dict:
    done = _hlo_lsp("blame", f"{path}:{line}", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _renames_after(dump: pathlib.Path, index: int) -> set[str]:
    """The renaming passes that ran after snapshot ``index`` (from the history)."""
    done = _hlo_lsp("passes", str(dump), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["module"] == "jit_fp8_block" and len(data["snapshots"]) > 60
    return {s["pass"] for s in data["snapshots"]
            if s["index"] > index and s["pass"] in ("rename-instructions", "rename_fusions")}


def test_blame_of_the_triton_gemm_fusion_names_triton_gemm_rewriter(pass_dumps):
    after = _after(pass_dumps["triton"])
    data = _blame(after, _line(after, " fusion(", "kind=kCustom", "__triton"))
    assert data["instruction"].startswith("gemm_fusion_dot")
    created = data["created_by"]
    assert created["pass"] == "triton-gemm-rewriter", data
    assert created["file"] == next(pass_dumps["triton"].glob(
        f"module_*.jit_fp8_block.{created['index']:04d}.*.after_triton-gemm-rewriter.*")).name
    # the instruction was followed through both renaming passes to the final file
    assert _renames_after(pass_dumps["triton"], created["index"]) == {"rename-instructions",
                                                                      "rename_fusions"}
    passes = [c["pass"] for c in data["changed_by"]]
    assert "convert_triton_gemm_config" in passes  # __triton_gemm -> nested GEMM fusion


def test_blame_of_the_cublaslt_fp8_call_names_cublas_gemm_rewriter(pass_dumps):
    after = _after(pass_dumps["cublaslt"])
    data = _blame(after, _line(after, 'custom_call_target="__cublas$lt$matmul$f8"'))
    assert data["created_by"]["pass"] == "cublas-gemm-rewriter", data
    assert data["created_by"]["pipeline"] == "hlo_normalization"
    assert _renames_after(pass_dumps["cublaslt"], data["created_by"]["index"]) == {
        "rename-instructions", "rename_fusions"}


def test_a_fusion_renamed_by_rename_fusions_is_followed_to_priority_fusion(pass_dumps):
    after = _after(pass_dumps["triton"])
    line = _line(after, "%loop_multiply_fusion = ")
    done = _hlo_lsp("blame", f"{after}:{line}")
    assert done.returncode == 0, done.stderr
    assert "created by priority-fusion in fusion" in done.stdout
    assert "changed by rename_fusions in post-fusion_optimization" in done.stdout
    assert "names: fusion." in done.stdout and "-> loop_multiply_fusion" in done.stdout


# The same in the editor: hover on the cuBLASLt call of the after-optimizations file
# (the real server through pytest-lsp) names the pass that created it.
import pytest_lsp  # noqa: E402
from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402

from tests.helpers import position_of  # noqa: E402


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "hlo_lsp"]))
async def client(lsp_client: LanguageClient):
    yield
    if lsp_client.capabilities is not None:
        await lsp_client.shutdown_session()


async def test_hover_on_the_cublaslt_call_says_cublas_gemm_rewriter_created_it(client, pass_dumps):
    after = _after(pass_dumps["cublaslt"])
    text = after.read_text()
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual_studio_code"),
        workspace_folders=[types.WorkspaceFolder(uri=after.parent.as_uri(), name="dump")],
        initialization_options={"xlaDiagnostics": False}))
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=after.as_uri(), language_id="hlo", version=1, text=text)))
    line = text.splitlines()[_line(after, 'custom_call_target="__cublas$lt$matmul$f8"') - 1]
    name = line.split("=", 1)[0].strip().removeprefix("ROOT ").strip()
    md = ""
    for _ in range(60):  # the first hovers may come before the walk is done
        md = (await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=after.as_uri()),
            position=position_of(text, f"{name} = ", 2)))).contents.value
        if "Pass history" in md:
            break
    assert "**Pass history**: Created by `cublas-gemm-rewriter` in `hlo_normalization`" in md, md
