"""Issue 40 end to end, through the real server over stdio (pytest-lsp, VS Code's
and Neovim's capabilities), on examples/cpu_dump/:

- hover on the ``HloModule`` keyword answers as on the module's name;
- definition on a row of the ``FileLocations`` or ``StackFrames`` table at the
  top of a dump opens the Python line it names, as definition on an
  instruction's ``stack_frame_id=`` does.
"""

from __future__ import annotations

import re
import sys

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.helpers import EXAMPLES, TRAIN_AFTER, position_of as _pos, read

SERVER = [sys.executable, "-m", "hlo_lsp"]


@pytest_lsp.fixture(
    params=["visual_studio_code", "neovim"],
    config=ClientServerConfig(server_command=SERVER),
)
async def client(request, lsp_client: LanguageClient):
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities(request.param)))
    yield
    await lsp_client.shutdown_session()


def _open(client: LanguageClient, path, text: str) -> str:
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="hlo", version=1,
                                             text=text)))
    return uri


def _doc(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri)


async def test_hover_on_the_hlomodule_keyword_is_the_module_hover(client: LanguageClient):
    text = read(TRAIN_AFTER)
    uri = _open(client, TRAIN_AFTER, text)
    on_name = await client.text_document_hover_async(types.HoverParams(
        text_document=_doc(uri), position=_pos(text, "jit_train_step, ", 3)))
    assert on_name is not None and "**HloModule** `jit_train_step`" in on_name.contents.value
    for column in (0, 4, 9):  # start, middle, end of "HloModule"
        on_keyword = await client.text_document_hover_async(types.HoverParams(
            text_document=_doc(uri), position=types.Position(line=0, character=column)))
        assert on_keyword is not None, column
        assert on_keyword.contents.value == on_name.contents.value
        assert on_keyword.range == types.Range(start=types.Position(line=0, character=0),
                                               end=types.Position(line=0, character=9))


async def test_definition_on_a_frame_table_row_opens_the_python_line(client: LanguageClient,
                                                                     tmp_path):
    """Frame 26 is make_dump.py line 112, columns 17..70 counted from 0 (its
    FileLocations row 26; its StackFrames row 26 names that location): the same
    place definition on ``stack_frame_id=26`` of ``%wrapped_clamp`` opens."""
    program = EXAMPLES / "make_dump.py"
    # The dump names the program by the absolute path it ran from: point it at
    # this checkout's copy (the file must exist to be opened).
    text = re.sub(r'(?m)^1 "[^"\n]*make_dump\.py"$', lambda _: f'1 "{program}"',
                  read(TRAIN_AFTER), count=1)
    assert str(program) in text
    path = tmp_path / TRAIN_AFTER.name
    path.write_text(text)
    uri = _open(client, path, text)
    expected = types.Location(uri=program.as_uri(), range=types.Range(
        start=types.Position(line=111, character=17), end=types.Position(line=111, character=70)))
    assert read(program).splitlines()[111][17:70].startswith("jax.lax.switch(")

    async def definition(position: types.Position):
        return await client.text_document_definition_async(types.DefinitionParams(
            text_document=_doc(uri), position=position))

    ins = text.index("%wrapped_clamp = ")
    assert await definition(_pos(text, "stack_frame_id=26", 3, ins)) == [expected]
    location_row = text.index("\n26 {file_name_id=1 function_name_id=4 line=112") + 1
    frame_row = text.index("\n26 {file_location_id=26 parent_frame_id=4}") + 1
    for row in (location_row, frame_row):
        for column in (0, 10, 30):  # the id, inside the braces
            position = _pos(text, text[row:row + 2], column, row)
            assert await definition(position) == [expected], (text[row:row + 40], column)
    # A FileNames row opens the file; a FunctionNames row names no place.
    names_row = text.index(f'1 "{program}"')
    [file_only] = await definition(_pos(text, "1 ", 4, names_row))
    assert file_only.uri == program.as_uri() and file_only.range.start.line == 0
    functions_row = text.index('\n4 "run_program.<locals>.train_step"') + 1
    assert await definition(_pos(text, "4 ", 5, functions_row)) == []
