"""The server's copy of a document through a real LSP client (pytest-lsp against
``python -m hlo_lsp``): incremental edits, several per notification, with
UTF-16 columns after a character outside the BMP, multi-line ranges and a
deletion, leave the server with the client's text (issue 42: the document
store keeps it, once; pygls' workspace keeps none)."""

from __future__ import annotations

import re
import sys

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.helpers import TRAIN_AFTER, read

SERVER = [sys.executable, "-m", "hlo_lsp"]
NAME = "%params__b1__.1"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    yield
    if lsp_client.capabilities is not None:
        await lsp_client.shutdown_session()


def _position(text: str, offset: int) -> tuple[int, int]:
    """(line, UTF-16 column) of ``offset``."""
    line = text.count("\n", 0, offset)
    start = text.rfind("\n", 0, offset) + 1
    return line, len(text[start:offset].encode("utf-16-le")) // 2


def _offset(text: str, line: int, character: int) -> int:
    """The offset of (line, UTF-16 column) ``character``."""
    start = 0
    for _ in range(line):
        start = text.index("\n", start) + 1
    units = 0
    at = start
    while units < character:
        units += 2 if ord(text[at]) > 0xFFFF else 1
        at += 1
    return at


def _change(text: str, start: tuple[int, int], end: tuple[int, int], new: str
            ) -> tuple[str, types.TextDocumentContentChangePartial]:
    """``text`` with ``[start, end)`` replaced by ``new``, and the change the
    client sends for it."""
    a, b = _offset(text, *start), _offset(text, *end)
    return text[:a] + new + text[b:], types.TextDocumentContentChangePartial(
        range=types.Range(start=types.Position(line=start[0], character=start[1]),
                          end=types.Position(line=end[0], character=end[1])), text=new)


async def test_incremental_edits_leave_the_server_with_the_clients_text(client: LanguageClient):
    """Three didChange notifications on a dump of 60 KB (parsed computation by
    computation): an instruction that uses ``%params__b1__.1`` after a block
    comment with an emoji (two UTF-16 units) and a comment line inserted in
    one, the character after the emoji replaced and a space put inside a use
    in the next, the comment line deleted (a range over two lines) in the last.
    References of the name then give exactly its occurrences in the client's
    text, in UTF-16 columns: the server's copy is the client's."""
    text = read(TRAIN_AFTER)
    uri = TRAIN_AFTER.as_uri()
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual_studio_code"),
        initialization_options={"xlaDiagnostics": False}))
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="hlo", version=1, text=text)))
    await client.text_document_document_symbol_async(types.DocumentSymbolParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))   # analysed once

    comment_line = text.count("\n", 0, text.index("\n\n")) + 1
    root = _position(text, text.index("\n  ROOT", text.index("\nENTRY")) + 1)
    added = f"  %sync.extra = f32[128]{{0}} /*\U0001F642\u00e9*/ copy({NAME})\n"
    steps = []
    # v2: the instruction first (it is below the comment line), then the comment
    text, first = _change(text, root, root, added)
    text, second = _change(text, (comment_line, 0), (comment_line, 0), "// a comment\n")
    steps.append([first, second])
    # v3: \u00e9 after the emoji -> \u00f6, a space inside the dump's use
    after_emoji = len("  %sync.extra = f32[128]{0} /*\U0001F642".encode("utf-16-le")) // 2
    text, third = _change(text, (root[0] + 1, after_emoji), (root[0] + 1, after_emoji + 1),
                          "\u00f6")
    use = _position(text, text.index(f"copy({NAME})") + len("copy("))
    text, fourth = _change(text, use, use, " ")
    steps.append([third, fourth])
    # v4: the comment line deleted
    text, fifth = _change(text, (comment_line, 0), (comment_line + 1, 0), "")
    steps.append([fifth])
    assert "/*\U0001F642\u00f6*/ copy(%params__b1__.1)" in text
    for version, changes in enumerate(steps, start=2):
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=changes))

    definition = _position(text, text.index(f"  {NAME} =") + 2)
    got = await client.text_document_references_async(types.ReferenceParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=definition[0], character=definition[1] + 1),
        context=types.ReferenceContext(include_declaration=True)))
    expected = sorted(_position(text, m.start())
                      for m in re.finditer(re.escape(NAME) + r"(?![\w.\-])", text))
    assert len(expected) == 3   # the definition, the dump's use and the inserted one
    assert sorted((r.range.start.line, r.range.start.character) for r in got) == expected
    assert all(r.range.end.character - r.range.start.character == len(NAME) for r in got)
