"""Issue 10 end to end: real GPU dumps on a machine without a GPU.

Runs the real CLI (`hlo-lsp dump --target h100`) and the real server (pytest-lsp
over stdio) on the FP8 program of examples/gpu/programs/, with the `cuda` extra
(`jax[cuda12]`) installed in this interpreter. XLA's whole GPU pipeline runs for an
H100 (JAX's deviceless ahead-of-time compilation); nothing here needs a GPU.

Skipped when the extra is absent, unless HLO_LSP_REQUIRE_GPU_COMPILE is set
(.ci/run sets it and installs the extra): then a missing extra is a failure.
"""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from hlo_lsp.dump.recipe import RECIPE_FILE
from hlo_lsp.dump.recompile import hlo_files
from hlo_lsp.dump.targets import NO_AUTOTUNING, RECORD_FILE

from tests.helpers import (EXAMPLES, answer_message_requests, compile_env, needs_gpu_compile,
                           position_of)

pytestmark = needs_gpu_compile()

PROGRAM = EXAMPLES / "gpu" / "programs" / "fp8_matmul.py"
SERVER = [sys.executable, "-m", "hlo_lsp"]
TRITON_OFF = "--xla_gpu_enable_triton_gemm=false"
AFTER = "sm_9.0a_gpu_after_optimizations.txt"
TIMEOUT_S = 300


def _dump(out: pathlib.Path, program: pathlib.Path, cwd: pathlib.Path,
          xla_flags: str = "", target: str = "h100") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hlo_lsp", "dump", "--target", target, "--out", str(out),
         "--", sys.executable, str(program)],
        cwd=cwd, env=compile_env(xla_flags), capture_output=True, text=True, timeout=TIMEOUT_S)


def _after(dump: pathlib.Path, module: str = "jit_matmul_fn_with_scale") -> pathlib.Path:
    [name] = [n for n, d in hlo_files(dump).items()
              if d.module_name == module and n.endswith(AFTER)]
    return dump / name


def test_runner_finds_the_public_jax_api_it_uses():
    """Fails loudly when JAX changes under the runner (hlo_lsp/dump/deviceless.py)."""
    import jax

    from hlo_lsp.dump import deviceless, runner_support  # the runner's, in this test only

    assert deviceless.check_jax(jax) == []
    assert runner_support.exclusion_problems() == []
    assert tuple(int(p) for p in jax.__version__.split(".")[:2]) >= deviceless.CHECKED_JAX[0]


@pytest.fixture(scope="module")
def fp8_dumps(tmp_path_factory) -> dict[str, pathlib.Path]:
    """The seed 001 pair by flags alone: Triton GEMM off (cuBLASLt) and on (default)."""
    root = tmp_path_factory.mktemp("fp8")
    project = root / "project"
    project.mkdir()
    shutil.copy(PROGRAM, project / "fp8_matmul.py")
    out = {}
    for name, flags in (("cublaslt", TRITON_OFF), ("triton", "")):
        done = _dump(project / name, project / "fp8_matmul.py", project, flags)
        assert done.returncode == 0, done.stderr
        out[name] = project / name
    out["project"] = project
    return out


def test_dump_target_h100_writes_the_cublaslt_fp8_call(fp8_dumps):
    dump = fp8_dumps["cublaslt"]
    text = _after(dump).read_text()
    assert 'custom_call_target="__cublas$lt$matmul$f8"' in text
    # The rest of a real GPU dump directory is there too.
    names = os.listdir(dump)
    for suffix in ("-buffer-assignment.txt", "-memory-usage-report.txt"):
        assert any(n.endswith(AFTER.replace(".txt", suffix)) for n in names), suffix
    assert any(n.endswith("gpu_target_config.pbtxt") for n in names)
    # What it is: deviceless, for which target, with which JAX and flags.
    record = json.loads((dump / RECORD_FILE).read_text())
    import jax
    assert record["target"] == "h100" and record["autotuning"] is False
    assert record["jax_version"] == jax.__version__
    assert record["xla_flags"] == TRITON_OFF
    assert record["compiled"] == [{"module": "jit_matmul_fn_with_scale", "devices": 1}]
    recipe = json.loads((dump / RECIPE_FILE).read_text())
    assert recipe["target"] == "h100" and recipe["platform"] == "cpu"


def test_seed_001_pair_by_flags_and_diff_names_the_change(fp8_dumps):
    cublas, triton = _after(fp8_dumps["cublaslt"]), _after(fp8_dumps["triton"])
    triton_text = triton.read_text()
    assert "__cublas$lt$matmul$f8" not in triton_text
    assert "__triton_nested_gemm_fusion" in triton_text or "__triton_gemm" in triton_text
    diff = subprocess.run([sys.executable, "-m", "hlo_lsp", "diff", str(cublas), str(triton)],
                          env=compile_env(), capture_output=True, text=True, timeout=120)
    assert diff.returncode in (0, 1), diff.stderr
    assert "__cublas$lt$matmul$f8" in diff.stdout and "triton" in diff.stdout.lower(), \
        diff.stdout
    # Issue 44: the matcher that survives renames pairs the call with the fusion.
    assert re.search(r"%cublas-gemm\S* -> %gemm_fusion_dot\S*: the same dot, now a Triton "
                     r"GEMM fusion \(was a cuBLASLt FP8 call\)", diff.stdout), diff.stdout


def test_summary_says_without_autotuning(fp8_dumps):
    done = subprocess.run([sys.executable, "-m", "hlo_lsp", "summary",
                           str(_after(fp8_dumps["cublaslt"]))],
                          env=compile_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert NO_AUTOTUNING in done.stdout and "H100" in done.stdout


def _module_lines(stderr: str) -> tuple[str, list[str]]:
    """The count line of `hlo-lsp dump` and the module lines under it."""
    lines = [line.removeprefix("hlo-lsp dump: ") for line in stderr.splitlines()]
    [at] = [i for i, line in enumerate(lines) if " HLO text file" in line]
    modules = []
    for line in lines[at + 1:]:
        if not line.startswith("  "):
            break
        modules.append(line.strip())
    return lines[at], modules


def test_dump_of_an_8_device_program_with_pass_dumps_lists_one_module(tmp_path):
    """Issue 40: `hlo-lsp dump --target h100` of the 8-device program counted the
    priority-fusion log (pass dumps on) and the thunk sequence as modules, and
    listed every pass snapshot's file name on one line. Modules are counted from
    HLO text only; one short line per module, the snapshots as a count."""
    program = EXAMPLES / "gpu" / "programs" / "spmd_mesh8.py"
    out = tmp_path / "dump"
    done = _dump(out, program, tmp_path, "--xla_dump_hlo_pass_re=.*")
    assert done.returncode == 0, done.stderr
    names = os.listdir(out)
    # The non-HLO text files this is about are really there.
    assert any(n.endswith(".priority_fusion_dump.txt") for n in names), names
    assert any(".thunk_sequence" in n for n in names), names
    snapshots = [n for n in names if re.search(r"\.\d{4}\.[^/]*\.txt$", n)
                 and not n.endswith(("-buffer-assignment.txt", "-memory-usage-report.txt"))]
    assert len(snapshots) > 20
    count, modules = _module_lines(done.stderr)
    assert count.startswith("1 module, "), done.stderr
    assert modules == [
        "module_0001.jit_sharded_matmul: before_optimizations, after_spmd_partitioner, "
        f"sm_9.0a_gpu_after_optimizations, {len(snapshots)} pass snapshots"], done.stderr


# ---------------------------------------------------------- the server ---

@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    # The recipe is rewritten below, so the server asks before running it:
    # answer "Run", as the user would, and keep the question.
    answer_message_requests(lsp_client, always="Run")

    yield
    if lsp_client.capabilities is not None:
        await lsp_client.shutdown_session()


async def test_code_action_recompiles_for_h100_after_an_edit(client, fp8_dumps, tmp_path):
    project = tmp_path / "project"
    shutil.copytree(fp8_dumps["project"], project)
    dump = project / "cublaslt"
    # The copied recipe names the original directories: point it at the copies.
    recipe = json.loads((dump / RECIPE_FILE).read_text())
    recipe["cwd"] = str(project)
    recipe["command"] = [sys.executable, str(project / "fp8_matmul.py")]
    recipe["env"]["XLA_FLAGS"] = f"{TRITON_OFF} --xla_dump_to={dump} --xla_dump_hlo_as_text"
    (dump / RECIPE_FILE).write_text(json.dumps(recipe))
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual_studio_code"),
        workspace_folders=[types.WorkspaceFolder(uri=project.as_uri(), name="proj")],
        initialization_options={"xlaDiagnostics": False}))
    after = _after(dump)
    text = after.read_text()
    uri = after.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="hlo", version=1, text=text)))

    at = position_of(text, "custom-call(")
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=at))
    assert "Compiled for H100 without a GPU" in hover.contents.value
    assert NO_AUTOTUNING in hover.contents.value
    # The stacks end at the program, as in its own run (the runner's frames hidden).
    assert "fp8_matmul.py" in hover.contents.value
    assert "deviceless.py" not in hover.contents.value and "runpy" not in hover.contents.value

    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=types.Range(start=at, end=at),
        context=types.CodeActionContext(diagnostics=[])))
    titles = [a.title for a in actions]
    assert titles[0] == "Compile for H100 here, no GPU needed"  # the recipe's target
    assert "Run on the CPU and refresh" in titles

    source = (project / "fp8_matmul.py").read_text()
    (project / "fp8_matmul.py").write_text(source.replace("M, N, K = 32, 128, 64",
                                                          "M, N, K = 64, 256, 64"))
    result = await asyncio.wait_for(client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="hlo.recompile", arguments=[uri])), TIMEOUT_S)
    assert result["ok"], result
    # The edited recipe was confirmed first, the question naming its program.
    [question] = client.message_requests
    assert str(project / "fp8_matmul.py") in question.message
    assert result["target"] == "h100" and result["platform"] == "cpu"
    assert NO_AUTOTUNING in result["summary"] and "H100 without a GPU" in result["summary"]
    # The report names the changed shapes (the instruction-level comparison).
    assert "f8e4m3fn[32,64] -> f8e4m3fn[64,64]" in result["summary"]
    assert "(f8e4m3fn[32,128], s8[33554432]) -> (f8e4m3fn[64,256], s8[33554432])" in \
        result["summary"]
    new_text = _after(dump).read_text()
    assert "f8e4m3fn[64,64]" in new_text and "f8e4m3fn[256,64]" in new_text
    assert "__cublas$lt$matmul$f8" in new_text
