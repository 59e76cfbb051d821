"""Experiments with XLA flags (issue 44, acceptance item 3), end to end and for real:
jaxlib knows every flag of the table and has the defaults it records; "Triton GEMM
off" on a deviceless H100 dump of a scaled FP8 matmul with a bias (a program
outside the repository) through the CLI and through the server as the editor
asks it (the code action, the confirmation, the variant shown at the
instruction, the message). Full tier: the file name puts it there (tests/tiers.py),
and the GPU compiles need the `cuda` extra (needs_gpu_compile)."""

from __future__ import annotations

import ast
import asyncio
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from hlo_lsp.dump.experiments import read_debug_options
from hlo_lsp.dump.recipe import load_recipe
from hlo_lsp.dump.recompile import hlo_files
from hlo_lsp.model.flag_experiments import EXPERIMENTS

from tests.helpers import EXAMPLES, answer_message_requests, compile_env, needs_gpu_compile

PROGRAM = EXAMPLES / "gpu" / "programs" / "fp8_matmul_bias.py"
SERVER = [sys.executable, "-m", "hlo_lsp"]
AFTER = "sm_9.0a_gpu_after_optimizations.txt"
TIMEOUT_S = 300
TRITON_OFF = "Recompile with Triton GEMM off (--xla_gpu_enable_triton_gemm=false)"
#: The sentence of the issue, on this program (the matcher's pair, the epilogue,
#: the roofline estimate on the H100 before and after).
SENTENCE = ("with `--xla_gpu_enable_triton_gemm=false`: `%gemm_fusion_dot` -> one cuBLASLt "
            "FP8 call with a BIAS epilogue (`%cublas-gemm")
#: What the dot runs as with Triton GEMM and cuBLASLt off (FP8 GEMMs stay cuBLASLt calls).
AFTER_BOTH = "cuBLASLt FP8 call with a BIAS epilogue"


def gpu_compile(test):
    """The marks of a test that compiles for H100 here (:func:`needs_gpu_compile`)."""
    for mark in needs_gpu_compile():
        test = mark(test)
    return test


def _jit_env(xla_flags: str) -> dict[str, str]:
    env = dict(os.environ, XLA_FLAGS=xla_flags, JAX_PLATFORMS="cpu")
    return env


JIT = "import jax, jax.numpy as jnp; print(jax.jit(lambda x: x @ x + 1)(jnp.ones((4, 4))).sum())"


@pytest.mark.slow
def test_this_jaxlib_knows_every_flag_of_the_table():
    """XLA aborts on a flag it does not know ('Unknown flag in XLA_FLAGS'): one run
    with every entry's flag and value (the GPU's flags parse on the CPU too)."""
    words = {}
    for e in EXPERIMENTS:
        words[e.flag] = e.argument if not e.list_flag or e.flag not in words else \
            words[e.flag] + "," + e.value
    done = subprocess.run([sys.executable, "-c", JIT], env=_jit_env(" ".join(words.values())),
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-2000:]
    bogus = subprocess.run([sys.executable, "-c", JIT], env=_jit_env("--xla_gpu_no_such_flag=1"),
                           capture_output=True, text=True, timeout=TIMEOUT_S)
    assert bogus.returncode != 0 and "Unknown flag in XLA_FLAGS" in bogus.stderr


@pytest.mark.slow
def test_the_defaults_of_the_table_are_xlas(tmp_path):
    """XLA's *.debug_options lists the fields that differ from its defaults: set
    each flag to the default the table records, and none is listed."""
    defaults = {e.flag: e.default for e in EXPERIMENTS if e.default is not None}
    flags = " ".join(f"--{f}={v}" for f, v in defaults.items())
    done = subprocess.run([sys.executable, "-c", JIT],
                          env=_jit_env(f"{flags} --xla_dump_to={tmp_path}"),
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-2000:]
    [after, *_] = sorted(tmp_path.glob("*jit__lambda*cpu_after_optimizations.txt"))
    listed = read_debug_options(after)
    assert listed, "XLA wrote no debug_options"
    assert not set(defaults) & set(listed), {f: listed[f] for f in set(defaults) & set(listed)}
    # and a value other than the default is listed
    done = subprocess.run([sys.executable, "-c", JIT],
                          env=_jit_env(f"--xla_gpu_enable_cublaslt=false --xla_dump_to={tmp_path}"
                                       "/b"), capture_output=True, text=True, timeout=TIMEOUT_S)
    [after, *_] = sorted((tmp_path / "b").glob("*jit__lambda*cpu_after_optimizations.txt"))
    assert read_debug_options(after)["xla_gpu_enable_cublaslt"] == "false"


# --------------------------------------------------- the deviceless dump ---

@pytest.fixture(scope="module")
def h100_dump(tmp_path_factory) -> pathlib.Path:
    """hlo-lsp dump --target h100 of the FP8 matmul with a bias, default flags
    (Triton GEMM on): a program outside the repository."""
    project = tmp_path_factory.mktemp("exp") / "project"
    project.mkdir()
    shutil.copy(PROGRAM, project / "fp8_block.py")
    done = subprocess.run(
        [sys.executable, "-m", "hlo_lsp", "dump", "--target", "h100", "--out",
         str(project / "dump"), "--", sys.executable, str(project / "fp8_block.py")],
        cwd=project, env=compile_env(), capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    return project / "dump"


def _copy(dump: pathlib.Path, where: pathlib.Path) -> pathlib.Path:
    """A copy of the project of ``dump`` under ``where``, its recipe pointed at it."""
    project = where / "project"
    shutil.copytree(dump.parent, project)
    copy = project / "dump"
    recipe = json.loads((copy / "hlo-lsp-recipe.json").read_text())
    recipe["cwd"] = str(project)
    recipe["command"] = [sys.executable, str(project / "fp8_block.py")]
    recipe["env"]["XLA_FLAGS"] = f"--xla_dump_to={copy} --xla_dump_hlo_as_text"
    (copy / "hlo-lsp-recipe.json").write_text(json.dumps(recipe))
    return copy


def _after(dump: pathlib.Path) -> pathlib.Path:
    [name] = [n for n in hlo_files(dump) if n.endswith(AFTER)]
    return dump / name


def _line(path: pathlib.Path, name: str) -> int:
    """The 0-based line of ``%name = ...``."""
    return next(i for i, s in enumerate(path.read_text().split("\n"))
                if s.lstrip().startswith(f"%{name} ="))


def _snapshot(d: pathlib.Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()}


@gpu_compile
def test_cli_triton_gemm_off_names_the_cublaslt_fp8_call(h100_dump, tmp_path):
    dump = _copy(h100_dump, tmp_path)
    after = _after(dump)
    line = _line(after, "gemm_fusion_dot") + 1
    before = _snapshot(dump)
    env = dict(compile_env(), HLO_LSP_STATE_DIR=str(tmp_path / "state"))
    listed = subprocess.run([sys.executable, "-m", "hlo_lsp", "experiment", f"{after}:{line}",
                             "--json"], env=env, capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    keys = [e["key"] for e in json.loads(listed.stdout)["experiments"]]
    assert keys[0] == "triton-gemm-off" and "triton-gemm-on" not in keys
    # never confirmed: the plan is shown, with the flag, and nothing runs
    asked = subprocess.run([sys.executable, "-m", "hlo_lsp", "experiment", f"{after}:{line}",
                            "--flag", "triton-gemm-off"], env=env, capture_output=True,
                           text=True, timeout=60)
    assert asked.returncode == 2 and "XLA_FLAGS=--xla_gpu_enable_triton_gemm=false" in \
        asked.stderr
    assert not (tmp_path / "project" / "dump.experiments").exists()
    done = subprocess.run([sys.executable, "-m", "hlo_lsp", "experiment", f"{after}:{line}",
                           "--flag=--xla_gpu_enable_triton_gemm=false", "--yes", "--json"],
                          env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["ok"] and got["outcome"]["sentence"].startswith(SENTENCE), got["outcome"]
    assert got["outcome"]["before"] == "Triton GEMM fusion"
    assert got["outcome"]["after"] == "cuBLASLt FP8 call with a BIAS epilogue"
    assert got["outcome"]["secondsAfter"] < got["outcome"]["secondsBefore"]
    assert got["change"]["customCalls"]["__cublas$lt$matmul$f8"] == [0, 1]
    variant = pathlib.Path(got["variantDir"])
    assert variant == tmp_path / "project" / "dump.experiments" / \
        "xla_gpu_enable_triton_gemm=false"
    text = pathlib.Path(got["variantFile"]).read_text().split("\n")
    assert "__cublas$lt$matmul$f8" in text[got["line"]]
    # the variant records its flag, so it can be recompiled; the dump is unchanged
    assert "--xla_gpu_enable_triton_gemm=false" in load_recipe(variant).env["XLA_FLAGS"]
    assert _snapshot(dump) == before


#: Triton GEMM off and cuBLASLt off together, in the order the report gives them.
BOTH = "--xla_gpu_enable_cublaslt=false --xla_gpu_enable_triton_gemm=false"


@gpu_compile
def test_cli_two_flags_at_once(h100_dump, tmp_path):
    """Triton GEMM off and cuBLASLt off in one variant (seed 002: what runs the dot
    when neither is allowed): the plan to confirm has both, the variant's directory is
    named after both (sorted, whatever order they were given in), its recipe and the
    debug_options XLA wrote there have both, and the report names both."""
    dump = _copy(h100_dump, tmp_path)
    after = _after(dump)
    line = _line(after, "gemm_fusion_dot") + 1
    before = _snapshot(dump)
    env = dict(compile_env(), HLO_LSP_STATE_DIR=str(tmp_path / "state"))
    asked = subprocess.run([sys.executable, "-m", "hlo_lsp", "experiment", f"{after}:{line}",
                            "--flag", "triton-gemm-off", "--flag", "cublaslt-off"], env=env,
                           capture_output=True, text=True, timeout=60)
    assert asked.returncode == 2 and f"XLA_FLAGS='{BOTH}'" in asked.stderr, asked.stderr
    assert not (tmp_path / "project" / "dump.experiments").exists()
    done = subprocess.run([sys.executable, "-m", "hlo_lsp", "experiment", f"{after}:{line}",
                           "--flag", "triton-gemm-off", "--flag=--xla_gpu_enable_cublaslt=false",
                           "--yes", "--json"],
                          env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["ok"] and got["argument"] == BOTH
    assert [e["key"] for e in got["experiments"]] == ["cublaslt-off", "triton-gemm-off"]
    variant = pathlib.Path(got["variantDir"])
    assert variant == tmp_path / "project" / "dump.experiments" / \
        "xla_gpu_enable_cublaslt=false+xla_gpu_enable_triton_gemm=false"
    assert BOTH in load_recipe(variant).env["XLA_FLAGS"]
    # XLA compiled the variant with both: its own record of the flags that differ
    options = read_debug_options(got["variantFile"])
    assert (options["xla_gpu_enable_triton_gemm"], options["xla_gpu_enable_cublaslt"]) == \
        ("false", "false")
    outcome = got["outcome"]
    assert outcome["sentence"].startswith(f"with `{BOTH}`: `%gemm_fusion_dot` -> "), outcome
    assert [e["key"] for e in outcome["experiments"]] == ["cublaslt-off", "triton-gemm-off"]
    assert outcome["before"] == "Triton GEMM fusion" and outcome["after"] == AFTER_BOTH
    assert outcome["sentence"] in got["message"]
    assert f"The variant: {got['variantFile']} (your dump is unchanged)." in got["message"]
    assert _snapshot(dump) == before


def _command_of(action) -> dict:
    """The command of a code action: lsprotocol's client-side hook turns a
    CodeAction with a ``command`` into a Command whose ``command`` is the str()
    of the nested object (as tests/e2e/test_recompile.py undoes it)."""
    if isinstance(action, types.Command):
        return ast.literal_eval(action.command)
    return {"title": action.command.title, "command": action.command.command,
            "arguments": action.command.arguments}


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    # Every question answered "Run", as the user would; the questions kept.
    answer_message_requests(lsp_client, always="Run")

    yield
    if lsp_client.capabilities is not None:
        await lsp_client.shutdown_session()


@gpu_compile
async def test_server_code_action_triton_gemm_off(client, h100_dump, tmp_path):
    dump = _copy(h100_dump, tmp_path)
    after = _after(dump)
    before = _snapshot(dump)
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual_studio_code"),
        workspace_folders=[types.WorkspaceFolder(uri=dump.parent.as_uri(), name="proj")],
        initialization_options={"xlaDiagnostics": False}))
    text, uri = after.read_text(), after.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="hlo", version=1, text=text)))
    at = types.Position(line=_line(after, "gemm_fusion_dot"), character=4)
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=types.Range(start=at, end=at),
        context=types.CodeActionContext(diagnostics=[])))
    [action] = [a for a in actions if a.title == TRITON_OFF]
    command = _command_of(action)
    assert command["arguments"] == [uri, {"experiment": "triton-gemm-off", "line": at.line}]
    # Off an instruction: no experiment is offered.
    nowhere = types.Position(line=0, character=0)
    others = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=nowhere, end=nowhere),
        context=types.CodeActionContext(diagnostics=[])))
    assert not [a for a in others if a.title.startswith("Recompile with ")]
    result = await asyncio.wait_for(client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command["command"],
                                   arguments=command["arguments"])), TIMEOUT_S)
    assert result["ok"], result
    [question] = client.message_requests
    assert "XLA_FLAGS=--xla_gpu_enable_triton_gemm=false" in question.message
    assert "dump.experiments" in question.message
    assert SENTENCE in result["summary"]
    [shown] = client.shown_documents
    variant = result["experiment"]["variantFile"]
    assert shown.uri == pathlib.Path(variant).as_uri() and shown.take_focus
    line = pathlib.Path(variant).read_text().split("\n")[shown.selection.start.line]
    assert "__cublas$lt$matmul$f8" in line
    await asyncio.sleep(0.2)
    assert any(SENTENCE in m.message for m in client.messages)
    assert _snapshot(dump) == before


@pytest.mark.slow
def test_a_flag_xla_refuses_is_said_in_one_sentence(tmp_path):
    """XLA aborts on a flag it does not know: the experiment says so and leaves nothing."""
    from hlo_lsp.dump.experiments import run_experiment, variant_recipe
    from hlo_lsp.dump.recipe import Recipe
    from hlo_lsp.model.flag_experiments import FlagExperiment, combine

    dump = tmp_path / "dump"
    shutil.copytree(EXAMPLES / "gpu" / "deviceless" / "fp8_triton_gemm", dump)
    [path] = dump.glob(f"*.{AFTER}")
    bogus = FlagExperiment("bogus", "xla_gpu_no_such_flag", "1", "no such flag", "None.",
                           "none", "gemm", "gpu")
    bogus = combine([bogus])
    recipe = variant_recipe(Recipe([sys.executable, "-c", JIT], str(tmp_path)), bogus)
    got = asyncio.run(run_experiment(recipe, path, _line(path, "a_fp8.1"), bogus,
                                     platform="cpu", probe=False))
    assert not got.ok
    assert got.error == ("this XLA does not know the flag --xla_gpu_no_such_flag=1 (it aborted "
                         "with 'Unknown flag in XLA_FLAGS')")
    assert not (tmp_path / "dump.experiments").exists()


@pytest.mark.slow
def test_of_several_flags_those_xla_refuses_are_named(tmp_path):
    """Several flags: XLA names those it does not know ("Unknown flags in XLA_FLAGS"
    for more than one), and so does the experiment's one sentence."""
    from hlo_lsp.dump.experiments import run_experiment, variant_recipe
    from hlo_lsp.dump.recipe import Recipe
    from hlo_lsp.model.flag_experiments import FlagExperiment, combine, find_experiment

    dump = tmp_path / "dump"
    shutil.copytree(EXAMPLES / "gpu" / "deviceless" / "fp8_triton_gemm", dump)
    [path] = dump.glob(f"*.{AFTER}")
    bogus = [FlagExperiment(f"bogus{n}", f"xla_gpu_no_such_flag_{n}", "1", "no such flag",
                            "None.", "none", "gemm", "gpu") for n in (1, 2)]
    known = find_experiment("triton-gemm-off")
    for flags, said in [((*bogus, known), "the flags --xla_gpu_no_such_flag_1=1 "
                         "--xla_gpu_no_such_flag_2=1 (it aborted with 'Unknown flags in "
                         "XLA_FLAGS')"),
                        ((bogus[1], known), "the flag --xla_gpu_no_such_flag_2=1 (it aborted "
                         "with 'Unknown flag in XLA_FLAGS')")]:
        experiment = combine(flags)
        recipe = variant_recipe(Recipe([sys.executable, "-c", JIT], str(tmp_path)), experiment)
        got = asyncio.run(run_experiment(recipe, path, _line(path, "a_fp8.1"), experiment,
                                         platform="cpu", probe=False))
        assert not got.ok and got.error == f"this XLA does not know {said}"
        assert not (tmp_path / "dump.experiments").exists()
