"""Recipes are input, not settings, end to end over stdio: a recipe shipped in a
dump directory (written "by someone else", claiming this machine as its host)
runs only after the user answered Run to a window/showMessageRequest that names
the exact command line, directory, interpreter and environment changes; the
answer is remembered outside the dump for exactly that plan. Unusable recipes
(a FIFO, /dev/zero, deeply nested...) neither freeze the server nor disable its
links, definitions and code action. No JAX: the programs are Python one-liners
that write a canary file (and one dump file where XLA_FLAGS says)."""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import shlex
import socket
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from hlo_lsp.dump.recipe import RECIPE_FILE
from hlo_lsp.dump.trust import STATE_DIR_ENV

from tests.helpers import answer_message_requests, position_of, snapshot

SERVER = [sys.executable, "-m", "hlo_lsp"]
TIMEOUT_S = 60
NOT_USED = "hlo-lsp does not use this dump's recipe"

# Appends a line to ./canary (in the program's working directory), then writes
# one HLO file where XLA_FLAGS says, as XLA would.
CANARY = ("import os, re; open('canary', 'a').write('ran\\n'); "
          "d = re.search(r'--xla_dump_to=(\\S+)', os.environ['XLA_FLAGS']).group(1); "
          "open(os.path.join(d, 'module_0001.jit_f.before_optimizations.txt'), 'w')"
          ".write('HloModule jit_f\\n')")


def _hlo(source: pathlib.Path) -> str:
    return ('HloModule jit_f\n\nENTRY %e (p: f32[8]) -> f32[8] {\n'
            '  %p = f32[8]{0} parameter(0)\n'
            '  ROOT %s = f32[8]{0} sine(%p), metadata={op_type="sin" op_name="jit(f)/sin" '
            f'source_file="{source}" source_line=2}}\n}}\n')


@pytest.fixture(autouse=True)
def state(tmp_path, monkeypatch) -> pathlib.Path:
    """This test's own state directory, set before its server starts."""
    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path / "state"))
    return tmp_path / "state"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    answer_message_requests(lsp_client)

    yield
    if lsp_client.capabilities is not None:
        await lsp_client.shutdown_session()


async def _start(client: LanguageClient, workspace: pathlib.Path) -> None:
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual_studio_code"),
        workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="ws")],
        initialization_options={"xlaDiagnostics": False,
                                "hlo": {"recompile": {"platform": "cpu"}}}))


def _dump(project: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path, str]:
    """``project/dump`` with one dump file naming ``project/prog.py``."""
    prog = project / "prog.py"
    prog.parent.mkdir(parents=True, exist_ok=True)
    prog.write_text("import jax\ny = jax.numpy.sin(1.0)\n")
    dump = project / "dump"
    dump.mkdir()
    path = dump / "module_0001.jit_f.before_optimizations.txt"
    path.write_text(_hlo(prog))
    return dump, path, path.read_text()


def _open(client: LanguageClient, path: pathlib.Path, text: str) -> str:
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=path.as_uri(), language_id="hlo",
                                             version=1, text=text)))
    return path.as_uri()


async def _recompile(client: LanguageClient, uri: str) -> dict:
    return await asyncio.wait_for(client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="hlo.recompile", arguments=[uri])), TIMEOUT_S)


def _runs(project: pathlib.Path) -> int:
    canary = project / "canary"
    return len(canary.read_text().splitlines()) if canary.exists() else 0


async def test_a_shipped_recipe_runs_only_once_confirmed_and_asks_again_when_changed(
        client, tmp_path, state):
    project = tmp_path / "shipped"
    dump, path, text = _dump(project)
    # Written by someone else: this machine's host name, a relative cwd, an
    # environment change. None of it may skip the question.
    (dump / RECIPE_FILE).write_text(json.dumps({
        "format": "hlo-lsp-recipe/1", "command": [sys.executable, "-c", CANARY],
        "cwd": "..", "env": {"JAX_ENABLE_X64": "1"}, "platform": "cpu",
        "host": socket.gethostname()}))
    await _start(client, project)
    uri = _open(client, path, text)
    shown = shlex.join([os.path.normpath(sys.executable), "-c", CANARY])

    # No answer (the message dismissed): nothing runs.
    result = await _recompile(client, uri)
    assert result["cancelled"] and not result["ok"] and _runs(project) == 0
    [asked] = client.message_requests
    assert [a.title for a in asked.actions] == ["Run", "Cancel"]
    assert f"\nCommand: `{shown}`\n" in asked.message
    # The relative cwd is the dump directory's parent, not the server's directory.
    assert f"\nDirectory: {project}\n" in asked.message
    assert f"\nInterpreter: {os.path.normpath(sys.executable)}\n" in asked.message
    assert "\nEnvironment changes: JAX_ENABLE_X64=1 (" in asked.message
    assert str(dump / RECIPE_FILE) in asked.message and str(state) in asked.message
    assert not state.exists()

    client.answers = ["Cancel"]
    result = await _recompile(client, uri)
    assert result["cancelled"] and _runs(project) == 0
    assert len(client.message_requests) == 2

    client.answers = ["Run"]
    result = await _recompile(client, uri)
    assert result["ok"], result
    assert _runs(project) == 1 and len(client.message_requests) == 3
    assert result["command"] == shown

    # The same recipe (re-saved by that run) does not ask again.
    result = await _recompile(client, uri)
    assert result["ok"], result
    assert _runs(project) == 2 and len(client.message_requests) == 3

    # Someone edits the recipe: asked again, and nothing runs unanswered.
    recipe = json.loads((dump / RECIPE_FILE).read_text())
    recipe["command"][-1] = CANARY + "; open('more', 'w')"
    (dump / RECIPE_FILE).write_text(json.dumps(recipe))
    result = await _recompile(client, uri)
    assert result["cancelled"] and _runs(project) == 2
    assert len(client.message_requests) == 4
    assert shlex.quote(recipe["command"][-1]) in client.message_requests[-1].message
    assert not (project / "more").exists()


async def test_the_confirmation_names_the_program_that_runs(client, tmp_path):
    """`python train.py` whose recorded interpreter is a script shipped in the
    dump directory: the question shows that script, and Cancel runs nothing."""
    project = tmp_path / "p"
    dump, path, text = _dump(project)
    script = dump / "python"
    script.write_text("#!/bin/sh\ntouch canary\n")
    script.chmod(0o755)
    (dump / RECIPE_FILE).write_text(json.dumps({
        "command": ["python", "train.py"], "cwd": ".", "python": "python",
        "host": socket.gethostname()}))
    before = snapshot(dump)
    await _start(client, project)
    uri = _open(client, path, text)
    client.answers = ["Cancel"]
    result = await _recompile(client, uri)
    assert result["cancelled"]
    [asked] = client.message_requests
    assert f"\nCommand: `{script} train.py`\nDirectory: {dump}\n" in asked.message
    assert "`python train.py`" not in asked.message
    assert not (dump / "canary").exists() and snapshot(dump) == before


def _hostile(dump: pathlib.Path, kind: str) -> None:
    path = dump / RECIPE_FILE
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "zero":
        path.symlink_to("/dev/zero")
    elif kind == "deep":
        path.write_text("[" * 100_000 + "]" * 100_000)
    elif kind == "not-utf8":
        path.write_bytes(b'{"command": ["\xff"], "cwd": "/"}')


async def test_unusable_recipes_leave_links_definitions_and_actions_working(client, tmp_path):
    kinds = ["fifo", "zero", "deep", "not-utf8"]
    opened = {}
    for kind in kinds:
        dump, path, text = _dump(tmp_path / kind)
        _hostile(dump, kind)
        opened[kind] = (path, text)
    await _start(client, tmp_path)
    for kind, (path, text) in opened.items():
        uri = _open(client, path, text)
        prog = (tmp_path / kind / "prog.py").as_uri()
        ident = types.TextDocumentIdentifier(uri=uri)
        for _ in range(2):  # asked twice, said once
            links = await asyncio.wait_for(client.text_document_document_link_async(
                types.DocumentLinkParams(text_document=ident)), TIMEOUT_S)
            assert [lk.target for lk in links] == [f"{prog}#L2"], kind
        [loc] = await asyncio.wait_for(client.text_document_definition_async(
            types.DefinitionParams(text_document=ident,
                                   position=position_of(text, "metadata=", 2))), TIMEOUT_S)
        assert loc.uri == prog and loc.range.start.line == 1
        hover = await asyncio.wait_for(client.text_document_hover_async(types.HoverParams(
            text_document=ident, position=position_of(text, "sine("))), TIMEOUT_S)
        assert hover is not None and "prog.py" in hover.contents.value
        actions = await asyncio.wait_for(client.text_document_code_action_async(
            types.CodeActionParams(text_document=ident,
                                   range=types.Range(start=position_of(text, "sine("),
                                                     end=position_of(text, "sine(")),
                                   context=types.CodeActionContext(diagnostics=[]))),
            TIMEOUT_S)
        assert actions and actions[0].title == "Recompile with JAX on CPU and refresh"
        result = await _recompile(client, uri)
        assert not result["ok"] and result["error"].startswith("Cannot recompile: ")
        assert str(path.parent / RECIPE_FILE) in result["error"]
    warnings = [m.message for m in client.messages if NOT_USED in m.message]
    assert len(warnings) == len(kinds), warnings
    for kind, said in zip(kinds, warnings):
        assert str(tmp_path / kind / "dump" / RECIPE_FILE) in said
    assert "is not a regular file" in warnings[0] and "is not a regular file" in warnings[1]
    assert "levels deep" in warnings[2] and "is not UTF-8" in warnings[3]
    assert client.message_requests == []
