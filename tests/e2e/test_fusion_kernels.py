"""Issue 44, fusion decisions and the kernel that runs, end to end through the
real server (pytest-lsp over stdio): on a deviceless H100 dump with pass dumps
on, hover on an instruction the priority-fusion log names as ineligible gives
its reason, and definition from the GEMM fusion opens its ``.entry`` in the PTX
file; definition on that ``.entry`` goes back to the instruction.

Two dumps: examples/gpu/deviceless/fp8_fusion_log (what XLA wrote for
examples/gpu/programs/fp8_matmul_bias.py, a few files kept; fast tier), and
the same program compiled now with ``XLA_FLAGS=--xla_dump_hlo_pass_re=.*``
(needs the ``cuda`` extra: full tier, as tests/e2e/test_gpu_precision.py).
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
from pytest_lsp import ClientServerConfig, LanguageClient

from hlo_lsp.dump.fusion_dump import read_fusion_dump

from tests.helpers import (EXAMPLES, compile_env, needs_gpu_compile, open_in_session,
                           position_of, uri_path)

SERVER = [sys.executable, "-m", "hlo_lsp"]
BUNDLED = EXAMPLES / "gpu" / "deviceless" / "fp8_fusion_log"
PROGRAM = EXAMPLES / "gpu" / "programs" / "fp8_matmul_bias.py"
AFTER = "sm_9.0a_gpu_after_optimizations.txt"
TIMEOUT_S = 300


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    yield
    if lsp_client.capabilities is not None:
        await lsp_client.shutdown_session()


@pytest.fixture
def bundled(tmp_path) -> pathlib.Path:
    """A copy of the bundled dump (the server may write nothing beside the example)."""
    out = tmp_path / "dump"
    shutil.copytree(BUNDLED, out)
    [after] = out.glob(f"*{AFTER}")
    return after


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> pathlib.Path:
    """The after-optimizations HLO of fp8_matmul_bias.py compiled for H100 now,
    without a GPU, with pass dumps on."""
    project = tmp_path_factory.mktemp("fusion_log")
    shutil.copy(PROGRAM, project / PROGRAM.name)
    out = project / "dump"
    done = subprocess.run(
        [sys.executable, "-m", "hlo_lsp", "dump", "--target", "h100", "--out", str(out),
         "--", sys.executable, str(project / PROGRAM.name)],
        cwd=project, env=compile_env("--xla_dump_hlo_pass_re=.*"), capture_output=True,
        text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    [after] = out.glob(f"*jit_fp8_block*{AFTER}")
    return after


async def _check(client, after: pathlib.Path) -> None:
    uri, text = await open_in_session(client, after)
    # The log names the GEMM fusion (kept by its name through the renames) as
    # an ineligible producer; the hover gives the log's reason for it.
    log = read_fusion_dump(str(next(after.parent.glob("*.priority_fusion_dump.txt"))))
    [gemm] = re.findall(r"^\s*%(gemm_fusion_\w+) = ", text, re.M)
    reasons = log.about(gemm).reasons
    assert reasons, f"the log names no reason for {gemm}"
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=position_of(text, f"%{gemm} = ", 1)))
    md = hover.contents.value
    assert "**Priority fusion**" in md, md
    for reason in reasons:
        assert f"- not fused into its users: {reason}" in md, md

    got = await client.text_document_definition_async(types.DefinitionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=position_of(text, f"%{gemm} = ", 1)))
    [ptx] = got  # one place: the editor opens it
    assert ptx.uri.endswith(".ptx"), got
    ptx_line = uri_path(ptx.uri).read_text().splitlines()[ptx.range.start.line]
    assert ptx_line.startswith(f".visible .entry {gemm}(")
    assert ptx_line[ptx.range.start.character:ptx.range.end.character] == gemm

    # And back: definition on the kernel's name in the PTX file (opened as PTX,
    # which the server does not analyse as HLO) lands on the HLO instruction.
    ptx_text = uri_path(ptx.uri).read_text()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=ptx.uri, language_id="ptx", version=1,
                                             text=ptx_text)))
    [back] = await client.text_document_definition_async(types.DefinitionParams(
        text_document=types.TextDocumentIdentifier(uri=ptx.uri), position=ptx.range.start))
    assert back.uri == uri
    assert back.range.start == position_of(text, f"%{gemm} = ")
    assert back.range.end == position_of(text, f"%{gemm} = ", len(gemm) + 1)


async def test_bundled_dump_hover_reason_and_definition_to_ptx(client, bundled):
    await _check(client, bundled)


def _gpu_compile(test):
    """``test`` with the marks of a test that compiles for a GPU here (slow,
    skipped without the ``cuda`` extra: :func:`tests.helpers.needs_gpu_compile`)."""
    for mark in needs_gpu_compile():
        test = mark(test)
    return test


@_gpu_compile
async def test_fresh_deviceless_dump_with_pass_dumps(client, compiled):
    await _check(client, compiled)


async def test_hover_follows_a_fusion_renamed_after_priority_fusion(client, tmp_path):
    # examples/gpu/deviceless/multi_output_fusion_log (reduce_stats.py): the
    # log's fusion.1 is loop_exponential_multiply_fusion after
    # multi_output_fusion and rename_fusions; the server finds its name in the log
    # by the pass history (its names along the snapshots) or, when the history's
    # first walk is not done within hover's wait, by matching the snapshot after
    # priority-fusion with the file; either way the hover says what the log says.
    out = tmp_path / "dump"
    shutil.copytree(EXAMPLES / "gpu" / "deviceless" / "multi_output_fusion_log", out)
    [after] = out.glob(f"*{AFTER}")
    uri, text = await open_in_session(client, after)
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=position_of(text, "%loop_exponential_multiply_fusion = ", 1)))
    md = hover.contents.value
    assert ("**Priority fusion** (`module_0001.jit_stats.priority_fusion_dump.txt`, where it "
            "is `fusion.1`, found by ") in md, md
