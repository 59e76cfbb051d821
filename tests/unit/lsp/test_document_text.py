"""The text of a document, in process: kept once, by the document store (pygls'
workspace keeps no copy of an HLO document), edits applied in one place, in
the order the client sent them (issue 42)."""

from __future__ import annotations

import asyncio
import json

from hlo_lsp.lsp.server import create_server
from tests.helpers import CPU_DUMP, TRAIN_AFTER, read

REPORT = CPU_DUMP / "module_0028.jit_train_step.cpu_after_optimizations-memory-usage-report.txt"


class _Client:
    """Hands messages to a server's protocol; collects what it writes."""

    def __init__(self, server) -> None:
        self.protocol = server.protocol
        self.messages: list[dict] = []
        self.protocol.set_writer(self, include_headers=True)

    def write(self, data: bytes) -> None:
        self.messages.append(json.loads(data.decode().split("\r\n\r\n", 1)[1]))

    def close(self) -> None:
        pass

    def send(self, method: str, params: dict, msg_id: int | None = None) -> None:
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        if msg_id is not None:
            message["id"] = msg_id
        self.protocol.handle_message(self.protocol.structure_message(message))

    def open(self, uri: str, text: str) -> None:
        self.send("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "hlo", "version": 1, "text": text}})

    def change(self, uri: str, version: int, changes: list[dict]) -> None:
        self.send("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version}, "contentChanges": changes})


def _edit(line: int, character: int, end_line: int, end_character: int, text: str) -> dict:
    return {"range": {"start": {"line": line, "character": character},
                      "end": {"line": end_line, "character": end_character}}, "text": text}


def _splice(text: str, line: int, character: int, end_line: int, end_character: int,
            new: str) -> str:
    """The edit applied by hand (ASCII text: UTF-16 columns are characters)."""
    starts = [0]
    for ln in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(ln))
    return text[:starts[line] + character] + new + text[starts[end_line] + end_character:]


def test_the_store_alone_keeps_an_hlo_documents_text_and_applies_its_edits_in_order():
    """didOpen then didChange (two changes in one message, a multi-line range,
    then a whole new text) and didClose of an HLO dump, sent without the event
    loop running in between, as one read from the client's pipe: each reached
    the store before the next message (the version a request arrives with is
    right), the store's text is the client's, and pygls' workspace never held
    a copy. A report (not HLO) is pygls' to keep."""
    server = create_server()
    text = read(TRAIN_AFTER)
    uri = TRAIN_AFTER.as_uri()
    report_uri = REPORT.as_uri()

    async def run() -> None:
        client = _Client(server)
        client.send("initialize", {"capabilities": {}}, msg_id=1)
        client.send("initialized", {})
        store, workspace = server.store, server.workspace

        client.open(uri, text)
        assert store.version(uri) == 1 and store.snapshot(uri).text == text
        assert uri not in workspace.text_documents

        expected = _splice(text, 2, 0, 2, 0, "// one\n")
        expected = _splice(expected, 0, 3, 1, 0, "// two\n")
        client.change(uri, 2, [_edit(2, 0, 2, 0, "// one\n"), _edit(0, 3, 1, 0, "// two\n")])
        assert store.version(uri) == 2 and store.snapshot(uri).text == expected
        assert uri not in workspace.text_documents

        client.change(uri, 3, [{"text": "HloModule whole\n"}])
        assert store.snapshot(uri).text == "HloModule whole\n"
        assert uri not in workspace.text_documents

        client.open(report_uri, read(REPORT))
        assert not store.is_open(report_uri)
        assert workspace.text_documents[report_uri].source == read(REPORT)

        for closed in (uri, report_uri):
            client.send("textDocument/didClose", {"textDocument": {"uri": closed}})
        assert not store.is_open(uri) and report_uri not in workspace.text_documents
        await asyncio.sleep(0)

    try:
        asyncio.run(run())
    finally:
        server.shut_down()
