"""Choosing a profile over LSP (issue 43), end to end (pytest-lsp against
``python -m hlo_lsp``) on a real profiled dump (tests/profiled.py: XLA's dump of
a JAX program and two runs of ``jax.profiler.trace``): ``hlo/profileRuns`` lists
the runs oldest first, ``hlo.loadProfile`` loads the one chosen (its message
shown, the code lenses refreshed) and hover's Measured line then has that run's
count, as the run's own trace counts it; a directory without a profile says so;
the ``profile`` setting names where to look."""

from __future__ import annotations

import asyncio
import pathlib
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.helpers import hover_until, open_file
from tests.profiled import ProfiledDump, make_profiled_dump, op_count

SERVER = [sys.executable, "-m", "hlo_lsp"]
OP = "convolution"
pytestmark = pytest.mark.slow  # a JAX program runs


@pytest.fixture(scope="module")
def profiled(tmp_path_factory) -> ProfiledDump:
    pytest.importorskip("jax")
    return make_profiled_dump(tmp_path_factory.mktemp("profiled"))


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    lsp_client.lens_refreshes = 0

    @lsp_client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def refresh(params: None) -> None:
        lsp_client.lens_refreshes += 1

    yield
    if lsp_client.capabilities is not None:
        await lsp_client.shutdown_session()


async def _start(client: LanguageClient, root: pathlib.Path, **options) -> None:
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual_studio_code"),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="proj")],
        initialization_options={"xlaDiagnostics": False, **options}))


async def _hover(client: LanguageClient, uri: str, text: str, wanted: str = "Measured") -> str:
    """The hover on OP once it holds ``wanted`` (a profile is read in the
    background once a first hover waited for it; tests.helpers.hover_until)."""
    return await hover_until(client, uri, text, f"%{OP} =", wanted)


async def _runs(client: LanguageClient, uri: str, path: str | None = None) -> dict:
    params = {"textDocument": {"uri": uri}, **({"path": path} if path else {})}
    return await asyncio.wait_for(client.protocol.send_request_async("hlo/profileRuns", params), 60)


async def _load(client: LanguageClient, argument) -> dict:
    return await asyncio.wait_for(client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="hlo.loadProfile", arguments=[argument])), 60)


def _json(obj) -> dict:
    """A custom answer as pygls hands it (a named tuple for an object) as a dict."""
    if hasattr(obj, "_asdict"):
        return {k: _json(v) for k, v in obj._asdict().items()}
    if isinstance(obj, (list, tuple)):
        return [_json(v) for v in obj]
    return obj


async def test_runs_then_load_a_chosen_run(client, profiled, tmp_path):
    older, newer = profiled.runs
    counts = {run: op_count(run, OP) for run in profiled.runs}
    assert 0 < counts[older] < counts[newer]
    await _start(client, profiled.dump.parent)
    uri, text = open_file(client, profiled.after)

    # beside the dump by default: the newest run
    hover = await _hover(client, uri, text)
    assert "Measured" in hover and f"{counts[newer]} runs" in hover, hover
    found = _json(await _runs(client, uri))
    assert found == {"runs": [{"path": str(older), "name": older.name},
                              {"path": str(newer), "name": newer.name}],
                     "loaded": None, "message": ""}
    assert _json(await _runs(client, uri, str(profiled.dump / "prof")))["runs"] == found["runs"]

    # the older run chosen: loaded, said, lenses refreshed, hover counts that run's events
    shown = len(client.messages)
    reply = _json(await _load(client, {"uri": uri, "path": str(older)}))
    assert reply["run"] == str(older)
    assert older.name in reply["message"]
    said = client.messages[shown:]
    assert [(m.type, m.message) for m in said] == [(types.MessageType.Info, reply["message"])]
    assert client.lens_refreshes >= 1
    hover = await _hover(client, uri, text, f"{counts[older]} runs")
    assert "Measured" in hover and f"{counts[older]} runs" in hover, hover
    assert _json(await _runs(client, uri))["loaded"] == str(older)

    # a directory of runs: its newest ([uri, path] as plain strings too)
    reply = _json(await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="hlo.loadProfile", arguments=[uri, str(profiled.dump / "prof")])))
    assert reply["run"] == str(newer)

    # a directory without a profile: a warning naming it, nothing loaded
    empty = tmp_path / "nothing-here"
    empty.mkdir()
    none = _json(await _runs(client, uri, str(empty)))
    assert none["runs"] == [] and str(empty) in none["message"], none
    shown = len(client.messages)
    reply = _json(await _load(client, {"uri": uri, "path": str(empty)}))
    assert reply["run"] is None and str(empty) in reply["message"]
    assert [(m.type, m.message) for m in client.messages[shown:]] == \
        [(types.MessageType.Warning, reply["message"])]

    # malformed: the empty answer, nothing said
    shown = len(client.messages)
    assert await _load(client, {"path": str(older)}) is None
    assert await _runs(client, uri, "bad\x00path") is None
    assert client.messages[shown:] == []


async def test_the_profile_setting_names_the_directory(client, profiled, tmp_path):
    older, _ = profiled.runs
    await _start(client, profiled.dump.parent, profile=str(older))
    uri, text = open_file(client, profiled.after)
    hover = await _hover(client, uri, text)
    assert f"{op_count(older, OP)} runs" in hover, hover
    assert [r["path"] for r in _json(await _runs(client, uri))["runs"]] == [str(older)]
