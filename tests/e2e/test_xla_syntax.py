"""End to end over stdio: the syntax XLA's parser accepts beyond what dumps
print is navigable in the server: inline computations (``to_apply={...}``),
nested operand instructions (``negate(p0)`` in place of an operand) and split
files (modules separated by ``// -----``), as XLA's own tests write them.
With ``xlaDiagnostics`` on, XLA's verdict (per part for a split file) is
published beside ours, so a clean file here is clean for XLA too."""

from __future__ import annotations

import sys

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.helpers import position_of as _pos

SERVER = [sys.executable, "-m", "hlo_lsp"]

# A reduction whose combiner is written inline, and an operand written as an
# instruction in place (XLA names it `negate.anon` and adds it before `r`).
INLINE = """HloModule inline_reduce

ENTRY main {
  p0 = bf16[4,8] parameter(0)
  c0 = bf16[] constant(-inf)
  ROOT r = bf16[4] reduce(bf16[4,8] negate(p0), c0), dimensions={1}, to_apply={
    a = bf16[] parameter(0)
    b = bf16[] parameter(1)
    ROOT maximum = bf16[] maximum(a, b)
  }
}
"""

# Two modules with the same computation names, as in XLA's split test files.
SPLIT = """// RUN: hlo-opt %s --split-input-file | FileCheck %s

HloModule first

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  p = f32[4] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=add
}

// -----

HloModule second

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] multiply(a, b)
}

ENTRY main {
  p = f32[4] parameter(0)
  z = f32[] constant(1)
  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=add
}
"""


@pytest_lsp.fixture(
    params=["visual_studio_code", "neovim"],
    config=ClientServerConfig(server_command=SERVER),
)
async def client(request, lsp_client: LanguageClient):
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities(request.param),
        initialization_options={"xlaDiagnostics": True}))
    yield
    await lsp_client.shutdown_session()


async def _open(client: LanguageClient, tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="hlo", version=1,
                                             text=text)))
    return uri


def _doc(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri)


async def _quiet_diagnostics(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    """The diagnostics once ours and XLA's verdict had their say: XLA's come
    in a second publish only when it rejects, so a hover afterwards (answered
    in order) and a short wait let them arrive."""
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    await client.text_document_hover_async(types.HoverParams(
        text_document=_doc(uri), position=types.Position(line=0, character=0)))
    return list(client.diagnostics.get(uri, []))


async def test_inline_computation_and_nested_operand_navigable(client, tmp_path):
    uri = await _open(client, tmp_path, "inline.hlo", INLINE)
    assert await _quiet_diagnostics(client, uri) == []

    # Definition of an operand inside the inline computation: its parameter,
    # inside the braces, not some other `a`.
    defs = await client.text_document_definition_async(types.DefinitionParams(
        text_document=_doc(uri), position=_pos(INLINE, "maximum(a, b)", 8)))
    assert [d.range.start for d in defs] == [_pos(INLINE, "a = bf16[] parameter(0)")]

    # Hover inside the inline computation and on the nested operand instruction.
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=_doc(uri), position=_pos(INLINE, "ROOT maximum", 6)))
    assert hover is not None and "maximum" in hover.contents.value
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=_doc(uri), position=_pos(INLINE, "negate(p0)", 2)))
    assert hover is not None and "negate" in hover.contents.value
    assert "bf16[4,8]" in hover.contents.value

    # The nested operand's own operand is navigable.
    defs = await client.text_document_definition_async(types.DefinitionParams(
        text_document=_doc(uri), position=_pos(INLINE, "negate(p0)", 8)))
    assert [d.range.start for d in defs] == [_pos(INLINE, "p0 = bf16[4,8]")]

    # The outline nests the inline computation under the instruction holding it;
    # folding closes its body.
    symbols = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=_doc(uri)))
    [module] = symbols
    [main] = module.children
    r = next(s for s in main.children if s.name == "r")
    assert [c.name for c in r.children] == ["_"]
    assert [s.name for s in r.children[0].children] == ["a", "b", "maximum"]
    folds = await client.text_document_folding_range_async(
        types.FoldingRangeParams(text_document=_doc(uri)))
    body_line = _pos(INLINE, "to_apply={").line
    assert any(f.start_line == body_line for f in folds)


async def test_split_file_parts_are_modules_of_their_own(client, tmp_path):
    uri = await _open(client, tmp_path, "split.hlo", SPLIT)
    # No "computation already exists" across parts, from us or from XLA.
    assert await _quiet_diagnostics(client, uri) == []

    symbols = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=_doc(uri)))
    assert [(s.name, [c.name for c in s.children]) for s in symbols] == [
        ("first", ["add", "main"]), ("second", ["add", "main"])]

    # `to_apply=add` of each part goes to that part's `add`.
    second = SPLIT.index("HloModule second")
    for at, header in ((0, SPLIT.index("add {")), (second, SPLIT.index("add {", second))):
        defs = await client.text_document_definition_async(types.DefinitionParams(
            text_document=_doc(uri), position=_pos(SPLIT, "to_apply=add", 9, at)))
        assert [d.range.start for d in defs] == [_pos(SPLIT, "add {", 0, header)]

    # References to the second `add`: its own caller only.
    refs = await client.text_document_references_async(types.ReferenceParams(
        text_document=_doc(uri), position=_pos(SPLIT, "add {", 0, second),
        context=types.ReferenceContext(include_declaration=False)))
    assert [r.range.start for r in refs] == [_pos(SPLIT, "to_apply=add", 9, second)]


async def test_a_mistake_in_one_part_is_reported_in_that_part(client, tmp_path):
    broken = SPLIT.replace("ROOT s = f32[] multiply(a, b)", "ROOT s = f32[] multiply(a, c)")
    uri = await _open(client, tmp_path, "split_broken.hlo", broken)
    diags = await _quiet_diagnostics(client, uri)
    ours = [d for d in diags if d.source != "xla"]
    assert [d.message for d in ours] == ["instruction does not exist: c"]
    assert ours[0].range.start == _pos(broken, "multiply(a, c)", 12)
