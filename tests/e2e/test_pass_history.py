"""Issue 44, the pass history in the editors, end to end through the real
server (pytest-lsp over stdio) on a copy of examples/cpu_passes (a real XLA
CPU compile dumped with ``--xla_dump_hlo_pass_re=.*``): hover on an
instruction of the after-optimizations file says which pass created it;
``hlo/passHistory`` lists the module's snapshots and the timeline's rows with
the files of each row's diff; ``hlo/passBlame`` gives the instruction's first
appearance (the snapshot and the line of its name there) and, with XLA:GPU's
priority-fusion log, why it was or was not fused. A dump without pass
snapshots: no paragraph, a message. A history the client was given follows its
directory: ``hlo/passHistoryChanged`` once per burst of changes there, none for
another directory."""

from __future__ import annotations

import asyncio
import pathlib
import shutil
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from hlo_lsp.analysis.pass_history import QUIET_S
from hlo_lsp.lsp.messages import plain

from tests.helpers import EXAMPLES, open_in_session, position_of, uri_path

SERVER = [sys.executable, "-m", "hlo_lsp"]
PREFIX = "module_0008.jit_layer."
AFTER = f"{PREFIX}cpu_after_optimizations.txt"
CREATED = f"{PREFIX}0014.dot-library-passes.after_dot-library-rewriter.before_pipeline-end.txt"
FUSED = f"{PREFIX}0017.HLO_passes_after_layout_assignment.after_fusion.before_fusion-wrapper.txt"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    lsp_client.histories_changed = []

    @lsp_client.feature("hlo/passHistoryChanged")
    def changed(params) -> None:
        lsp_client.histories_changed.append(plain(params)["directory"])

    yield
    if lsp_client.capabilities is not None:
        await lsp_client.shutdown_session()


@pytest.fixture
def dump(tmp_path) -> pathlib.Path:
    """A copy of examples/cpu_passes (the server may write nothing beside the example)."""
    out = tmp_path / "dump"
    shutil.copytree(EXAMPLES / "cpu_passes", out)
    return out


async def _hover(client, uri: str, text: str, needle: str) -> str:
    got = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=position_of(text, needle, 1)))
    return got.contents.value


async def test_hover_says_which_pass_created_the_instruction(client, dump):
    uri, text = await open_in_session(client, dump / AFTER)
    # The first hover may come before the walk over the 24 snapshots is done
    # (it waits at most HOVER_WAIT_S): the paragraph is in the next one.
    md = ""
    for _ in range(60):
        md = await _hover(client, uri, text, "%ynn_fusion = ")
        if "Pass history" in md:
            break
    assert ("**Pass history**: Created by `dot-library-rewriter` in `dot-library-passes`, "
            "snapshot 0014") in md, md
    # renamed by the fusion pass (add.6 in the before-optimizations file)
    md = await _hover(client, uri, text, "%add.1 = ")
    assert ("**Pass history**: There from the start; changed by 2 passes since; was `add.6`"
            in md), md


async def test_pass_history_lists_the_snapshots_and_the_rows_diffs(client, dump):
    uri, _ = await open_in_session(client, dump / AFTER)
    reply = plain(await client.protocol.send_request_async(
        "hlo/passHistory", {"textDocument": {"uri": uri}}))
    assert reply["module"] == "module_0008.jit_layer" and reply["message"] == ""
    snaps = reply["snapshots"]
    assert len(snaps) == 26  # the two ends and 24 snapshots
    assert (snaps[0]["passName"], snaps[0]["index"]) == ("before_optimizations", -1)
    assert (snaps[-1]["passName"], snaps[-1]["file"]) == ("after_optimizations", AFTER)
    assert all(uri_path(s["uri"]) == dump / s["file"] for s in snaps)
    rows = reply["rows"]
    assert [r["step"] for r in rows] == ["-", "0006", "0014", "0017", "0024"]
    assert reply["quiet"] == 21
    row = rows[2]
    assert row["label"] == "dot-library-passes: dot-library-rewriter"
    assert (row["added"], row["removed"], row["changed"]) == (3, 0, 2)
    assert row["notes"] == "+fusion __ynn_fusion +fusion kCustom"
    # the row's diff: the snapshot before it and its own
    assert snaps[row["last"]]["file"] == CREATED
    assert snaps[row["previous"]]["index"] == 13
    assert rows[0]["end"] and rows[0]["previous"] is None
    # whichever file of the module is open: the same history
    snapshot_uri = (dump / FUSED).as_uri()
    other = plain(await client.protocol.send_request_async(
        "hlo/passHistory", {"textDocument": {"uri": snapshot_uri}}))
    assert other == reply


async def test_pass_blame_goes_to_the_first_appearance(client, dump):
    uri, text = await open_in_session(client, dump / AFTER)
    reply = plain(await client.protocol.send_request_async("hlo/passBlame", {
        "textDocument": {"uri": uri}, "position": plain(position_of(text, "%ynn_fusion = ", 3))}))
    assert reply["instruction"] == "ynn_fusion"
    created = reply["createdBy"]
    assert (created["passName"], created["pipeline"], created["index"]) == (
        "dot-library-rewriter", "dot-library-passes", 14)
    assert reply["message"] == ("%ynn_fusion: created by dot-library-rewriter in "
                                "dot-library-passes, snapshot 0014")
    where = created["location"]
    assert uri_path(where["uri"]) == dump / CREATED
    line = (dump / CREATED).read_text().splitlines()[where["range"]["start"]["line"]]
    start, end = where["range"]["start"]["character"], where["range"]["end"]["character"]
    assert line[start - 1:end] == "%ynn_fusion" and line[end:].startswith(" = ")
    # a use of an instruction (an operand) blames the instruction it names; one
    # renamed by the fusion pass has its first name where it appeared
    reply = plain(await client.protocol.send_request_async("hlo/passBlame", {
        "textDocument": {"uri": uri},
        "position": plain(position_of(text, "%add.1)", 2))}))
    assert reply["instruction"] == "add.1" and reply["names"] == ["add.6", "add.1"]
    assert reply["createdBy"]["passName"] == "before_optimizations"
    assert [c["index"] for c in reply["changedBy"]] == [6, 17]
    first = reply["createdBy"]["location"]
    assert (dump / f"{PREFIX}before_optimizations.txt").read_text().splitlines()[
        first["range"]["start"]["line"]].lstrip().startswith("%add.6 = ")


async def test_a_dump_without_pass_snapshots_has_no_history(client, tmp_path):
    out = tmp_path / "dump"
    out.mkdir()
    shutil.copy(EXAMPLES / "cpu_passes" / AFTER, out / AFTER)
    uri, text = await open_in_session(client, out / AFTER)
    md = await _hover(client, uri, text, "%ynn_fusion = ")
    assert "fusion" in md and "Pass history" not in md
    reply = plain(await client.protocol.send_request_async(
        "hlo/passHistory", {"textDocument": {"uri": uri}}))
    assert reply["rows"] == [] and "no pass snapshots" in reply["message"]
    blame = plain(await client.protocol.send_request_async("hlo/passBlame", {
        "textDocument": {"uri": uri}, "position": plain(position_of(text, "%ynn_fusion = ", 3))}))
    assert blame["createdBy"] is None and "no pass snapshots" in blame["message"]


BEFORE = f"{PREFIX}before_optimizations.txt"


def _held_back(dump: pathlib.Path) -> list[pathlib.Path]:
    """The files XLA writes after snapshot 0014 (0015-0023 and the
    after-optimizations file), moved out of ``dump`` (a compile caught while
    XLA writes its snapshots); their real contents, to copy back."""
    held = dump.parent / "held"
    held.mkdir()
    for p in sorted(dump.iterdir()):
        step = p.name[len(PREFIX):][:4]
        if p.name == AFTER or (step.isdigit() and int(step) >= 15):
            p.rename(held / p.name)
    return sorted(held.iterdir())


def _events(client, paths, kind=types.FileChangeType.Changed) -> None:
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=p.as_uri(), type=kind) for p in paths]))


async def _until(what: str, cond) -> None:
    for _ in range(6000):  # a hang guard, not a time the test asserts
        if cond():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never: {what}")


async def _rows(client, uri: str) -> list[str]:
    reply = plain(await client.protocol.send_request_async(
        "hlo/passHistory", {"textDocument": {"uri": uri}}))
    return [r["step"] for r in reply["rows"]]


async def test_a_shown_history_is_told_once_per_burst_of_changes_in_its_directory(
        client, dump, tmp_path):
    held = _held_back(dump)
    other = tmp_path / "other"  # a dump directory whose history nobody asked for
    shutil.copytree(EXAMPLES / "cpu_passes", other)
    uri, _ = await open_in_session(client, dump / BEFORE)
    assert await _rows(client, uri) == ["-", "0006", "0014"]
    # XLA writes the rest of its snapshots; the editor's watcher reports them
    # one by one, and files of the other directory at the same time
    for p in held:
        shutil.copy(p, dump / p.name)
        _events(client, [dump / p.name], types.FileChangeType.Created)
        _events(client, [other / p.name])
    await _until("hlo/passHistoryChanged", lambda: client.histories_changed)
    assert await _rows(client, uri) == ["-", "0006", "0014", "0017", "0024"]
    await asyncio.sleep(2 * QUIET_S)  # room for a second telling of the burst
    # one more change later (the after-optimizations file rewritten in place):
    # told again; the other directory never. (That a burst is told exactly once
    # is tests/unit/analysis/test_pass_history's: here a machine busy enough to
    # pause this loop for QUIET_S would split the burst in two.)
    told = len(client.histories_changed)
    _events(client, [dump / AFTER])
    await _until("told again", lambda: len(client.histories_changed) > told)
    assert set(client.histories_changed) == {str(dump)}


async def test_a_change_no_event_reports_is_told(client, dump):
    held = _held_back(dump)
    uri, _ = await open_in_session(client, dump / BEFORE)
    assert await _rows(client, uri) == ["-", "0006", "0014"]
    for p in held:  # no event: Neovim on Linux watches no files
        shutil.copy(p, dump / p.name)
    await _until("hlo/passHistoryChanged", lambda: client.histories_changed)
    assert set(client.histories_changed) == {str(dump)}
    assert await _rows(client, uri) == ["-", "0006", "0014", "0017", "0024"]


async def test_pass_blame_says_why_priority_fusion_fused_it(client, tmp_path):
    # examples/gpu/deviceless/multi_output_fusion_log (a deviceless H100 dump with the
    # priority-fusion log and the snapshot after priority-fusion): the blame of
    # %loop_exponential_multiply_fusion carries the log's decisions of fusion.1, its
    # name when priority fusion ran, as `hlo-lsp blame` prints them.
    out = tmp_path / "dump"
    shutil.copytree(EXAMPLES / "gpu" / "deviceless" / "multi_output_fusion_log", out)
    [after] = out.glob("*gpu_after_optimizations.txt")
    uri, text = await open_in_session(client, after)
    reply = plain(await client.protocol.send_request_async("hlo/passBlame", {
        "textDocument": {"uri": uri},
        "position": plain(position_of(text, "%loop_exponential_multiply_fusion = ", 3))}))
    assert reply["createdBy"]["passName"] == "priority-fusion"
    assert reply["fusion"] == {
        "file": "module_0001.jit_stats.priority_fusion_dump.txt", "name": "fusion.1",
        "decisions": ["fused into %reduce_sum.14.0, %fusion: estimated 9.83 µs fused against "
                      "8.03 µs unfused", "took in %tanh.1.0"]}
    # the log says nothing of input_reduce_fusion (fusion.2): no decisions
    reply = plain(await client.protocol.send_request_async("hlo/passBlame", {
        "textDocument": {"uri": uri},
        "position": plain(position_of(text, "%input_reduce_fusion = ", 3))}))
    assert reply["createdBy"]["passName"] == "priority-fusion" and reply["fusion"] is None
