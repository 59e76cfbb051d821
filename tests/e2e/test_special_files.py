"""Special files in a workspace, over LSP through the real server on stdio
(issue 41, items 1, 2, 6, 7): a FIFO and a link to /dev/zero named like dumps
and like the buffer-assignment reports of open dumps. Indexing finishes, the
server and its workers stay under 300 MB, the real dumps' symbols come back,
every request answers, and one message names the skipped files.

Hang guards: every request has a timeout (asyncio.wait_for); a thread samples
the resident memory of the server and its workers and kills them (the
processes this test started, by pid) past 1 GB, so a regression fails instead
of taking the machine's memory (on 81ab155 a worker reached 4.3 GB in 5 s)."""

from __future__ import annotations

import asyncio
import os
import pathlib
import shutil
import signal
import sys
import threading

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.helpers import CPU_DUMP, TRAIN_AFTER, open_file, position_of, rss_bytes

SERVER = [sys.executable, "-m", "hlo_lsp"]
ANSWER_S = 30          # a hang guard, not a budget: the answers take milliseconds
BOUND = 300 * 2**20    # the acceptance bound (RSS of the server, of each worker)
KILL_AT = 2**30        # past this the sampler kills them: the test fails, the machine lives

STAGE = "module_0000.jit_stage.cpu_after_optimizations.txt"
FIFO_DUMP = "module_0090.jit_fifo.cpu_after_optimizations.txt"
ZERO_DUMP = "module_0091.jit_zero.cpu_after_optimizations.txt"
OUTSIDE = "module_0092.jit_outside.cpu_after_optimizations.txt"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    yield
    if lsp_client.capabilities is not None:
        await asyncio.wait_for(lsp_client.shutdown_session(), ANSWER_S)


def _descendants(pid: int) -> set[int]:
    """Every descendant process of ``pid`` (from /proc)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = pathlib.Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    out, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - out
        out |= frontier
    return out


class _MemoryWatch(threading.Thread):
    """Samples the RSS of every process this test started (the server and its
    index workers) every 50 ms; ``peak`` is the largest RSS of one process
    seen. A process past :data:`KILL_AT` is killed (by its pid)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = 0
        self.processes = 0
        self.killed: list[int] = []
        self.done = threading.Event()

    def run(self) -> None:
        me = os.getpid()
        while not self.done.wait(0.05):
            pids = _descendants(me)
            self.processes = max(self.processes, len(pids))
            for pid in pids:
                rss = rss_bytes(pid)
                self.peak = max(self.peak, rss)
                if rss > KILL_AT:
                    self.killed.append(pid)
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass


OUTSIDE_HLO = """HloModule jit_outside

ENTRY %main.3 (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0), metadata={op_name="x" source_file="/etc/passwd" source_line=1}
  ROOT %n = f32[4]{0} negate(%p), metadata={op_name="y" source_file="SOURCE" source_line=2}
}
"""


@pytest.fixture
def workspace(tmp_path) -> pathlib.Path:
    """The real CPU dump with the reports of two after-optimizations dumps
    replaced by a link to /dev/zero and a FIFO, a FIFO and a link to /dev/zero
    named like dumps, and a dump whose metadata names files outside the
    workspace (``/etc/passwd``; a relative path up to it)."""
    root = tmp_path / "ws"
    dump = root / "dump"
    shutil.copytree(CPU_DUMP, dump)
    train_report = dump / (TRAIN_AFTER.name[:-4] + "-buffer-assignment.txt")
    train_report.unlink()
    os.symlink("/dev/zero", train_report)
    stage_report = dump / (STAGE[:-4] + "-buffer-assignment.txt")
    stage_report.unlink()
    os.mkfifo(stage_report)
    os.mkfifo(dump / FIFO_DUMP)
    os.symlink("/dev/zero", dump / ZERO_DUMP)
    up = "../" * (len(dump.parts) + 2) + "etc/passwd"
    (dump / OUTSIDE).write_text(OUTSIDE_HLO.replace("SOURCE", up))
    return root


async def _answer(coro):
    return await asyncio.wait_for(coro, ANSWER_S)


def _skip_messages(client: LanguageClient) -> list[str]:
    return [m.message for m in client.messages if "did not read" in m.message]


async def test_special_files_never_block_nor_exhaust_the_server(workspace: pathlib.Path,
                                                                 client: LanguageClient):
    watch = _MemoryWatch()
    watch.start()
    try:
        await _answer(client.initialize_session(types.InitializeParams(
            capabilities=client_capabilities("visual_studio_code"),
            root_uri=workspace.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="ws")],
            initialization_options={"xlaDiagnostics": False})))
        dump = workspace / "dump"
        train_uri, train = open_file(client, dump / TRAIN_AFTER.name)
        stage_uri, stage = open_file(client, dump / STAGE)

        # hover and hlo/memory on the dump whose report is a link to /dev/zero,
        # and on the one whose report is a FIFO: answered, with the hover's text
        for uri, text, needle, word in ((train_uri, train, "%add_tanh_fusion.1 = ", "fusion"),
                                        (stage_uri, stage, "%copy", "copy")):
            hover = await _answer(client.text_document_hover_async(types.HoverParams(
                types.TextDocumentIdentifier(uri), position_of(text, needle, 2))))
            assert hover is not None and word in hover.contents.value
            await _answer(client.protocol.send_request_async(
                "hlo/memory", {"textDocument": {"uri": uri}}))
            symbols = await _answer(client.text_document_document_symbol_async(
                types.DocumentSymbolParams(types.TextDocumentIdentifier(uri))))
            assert symbols

        # requests about the special files themselves, never opened in the editor
        for uri in [(dump / name).as_uri() for name in (FIFO_DUMP, ZERO_DUMP)] + \
                ["file:///dev/zero"]:
            assert not await _answer(client.text_document_document_symbol_async(
                types.DocumentSymbolParams(types.TextDocumentIdentifier(uri))))
            await _answer(client.text_document_hover_async(types.HoverParams(
                types.TextDocumentIdentifier(uri), types.Position(0, 0))))

        # indexing finishes, with the real dumps' symbols
        deadline = asyncio.get_running_loop().time() + 120
        while True:
            st = await _answer(client.protocol.send_request_async("hlo/workspaceStatus", {}))
            field = (lambda k: st[k]) if isinstance(st, dict) else (lambda k: getattr(st, k))
            if not field("indexing") and field("files") >= 8 and _skip_messages(client):
                break
            assert asyncio.get_running_loop().time() < deadline, (st, client.messages)
            await asyncio.sleep(0.1)
        found = await _answer(client.workspace_symbol_async(
            types.WorkspaceSymbolParams(query="add_tanh_fusion")))
        assert any(s.location.uri == train_uri for s in found)

        # one message names every skipped file and why
        [message] = _skip_messages(client)
        for name, kind in ((FIFO_DUMP, "a FIFO"), (ZERO_DUMP, "a character device"),
                           (STAGE[:-4] + "-buffer-assignment.txt", "a FIFO"),
                           (TRAIN_AFTER.name[:-4] + "-buffer-assignment.txt",
                            "a character device")):
            assert f"{dump / name}: not a regular file ({kind})" in message, message
        assert not any("Traceback" in m.message for m in client.log_messages)
    finally:
        watch.done.set()
        watch.join(5)
    assert not watch.killed, f"past {KILL_AT >> 20} MB: {watch.peak >> 20} MB"
    assert watch.processes >= 2  # the server and at least one index worker were watched
    assert watch.peak < BOUND, f"{watch.peak >> 20} MB"


async def test_links_and_hover_say_when_a_source_file_is_outside(workspace: pathlib.Path,
                                                                 client: LanguageClient):
    """Item 7: ``source_file="/etc/passwd"`` and ``../../../../etc/passwd`` become a
    link and a hover target, which now say the file lies outside the dump
    directory, the source roots and the workspace folders."""
    await _answer(client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual_studio_code"),
        root_uri=workspace.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="ws")],
        initialization_options={"xlaDiagnostics": False})))
    uri, text = open_file(client, workspace / "dump" / OUTSIDE)
    note = "/etc/passwd is outside the dump directory, the source roots and the workspace folders."
    links = await _answer(client.text_document_document_link_async(
        types.DocumentLinkParams(types.TextDocumentIdentifier(uri))))
    assert len(links) == 2
    for link in links:
        assert link.target.startswith("file:///etc/passwd#L")
        assert link.tooltip.startswith(note)
    for needle in ("%p = ", "%n = "):
        hover = await _answer(client.text_document_hover_async(types.HoverParams(
            types.TextDocumentIdentifier(uri), position_of(text, needle, 1))))
        # the path as a code span (hlo_lsp.model.markdown.code)
        assert "`/etc/passwd` is outside the dump directory" in hover.contents.value
    # a file of the workspace is linked without a word
    inside = workspace / "prog.py"
    inside.write_text("x = 1\n")
    (workspace / "dump" / "module_0093.jit_in.cpu_after_optimizations.txt").write_text(
        OUTSIDE_HLO.replace("/etc/passwd", str(inside)).replace("jit_outside", "jit_in")
        .replace("SOURCE", "../prog.py"))
    uri2, _ = open_file(client, workspace / "dump" / "module_0093.jit_in.cpu_after_optimizations.txt")
    links = await _answer(client.text_document_document_link_async(
        types.DocumentLinkParams(types.TextDocumentIdentifier(uri2))))
    assert len(links) == 2 and not any("outside" in link.tooltip for link in links)


async def test_a_second_didopen_with_a_lower_version_is_a_fresh_open(workspace: pathlib.Path,
                                                                      client: LanguageClient):
    """Item 6: a client that restarts opens an open document again at version 1:
    requests answer about the new text instead of ContentModified."""
    await _answer(client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("neovim"), root_uri=workspace.as_uri(),
        initialization_options={"xlaDiagnostics": False})))
    path = workspace / "dump" / TRAIN_AFTER.name
    uri, text = open_file(client, path, version=9)
    pos = position_of(text, "%add_tanh_fusion.1 = ", 2)
    first = await _answer(client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri), pos)))
    assert first is not None
    open_file(client, path, version=1, text="// reopened\n" + text)
    moved = types.Position(pos.line + 1, pos.character)
    again = await _answer(client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri), moved)))
    assert again is not None and again.contents.value == first.contents.value
    symbols = await _answer(client.text_document_document_symbol_async(
        types.DocumentSymbolParams(types.TextDocumentIdentifier(uri))))
    assert symbols
