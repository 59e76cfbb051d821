"""End to end: the real server over stdio, driven by a real LSP client
(pytest-lsp), with the capabilities VS Code and Neovim send."""

from __future__ import annotations

import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.helpers import position_of as _pos, FP8_DUMP, FP8_REGRESSION, TRAIN_AFTER, read

SERVER = [sys.executable, "-m", "hlo_lsp"]


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



async def _open(client: LanguageClient, path, text: str | None = None,
                version: int = 1) -> tuple[str, str]:
    text = read(path) if text is None else text
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="hlo", version=version,
                                             text=text)))
    return uri, text


def _doc(uri):
    return types.TextDocumentIdentifier(uri=uri)


async def test_hover_on_cublas_gemm_shows_gemm_backend_config(client: LanguageClient):
    uri, text = await _open(client, FP8_DUMP)
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=_doc(uri), position=_pos(text, "%cublas-gemm.1.0 =", 5)))
    assert hover is not None
    md = hover.contents.value
    assert hover.contents.kind == types.MarkupKind.Markdown
    assert '"gemm_backend_config": {' in md and '"selected_algorithm": "4"' in md
    assert "__cublas$lt$matmul$f8" in md
    assert hover.range.start == _pos(text, "%cublas-gemm.1.0 =")


async def test_definition_of_calls_lands_on_header(client: LanguageClient):
    uri, text = await _open(client, FP8_DUMP)
    result = await client.text_document_definition_async(types.DefinitionParams(
        text_document=_doc(uri), position=_pos(text, "calls=%wrapped_transpose_computation", 9)))
    assert len(result) == 1
    loc = result[0]
    assert loc.uri == uri
    assert loc.range.start == _pos(text, "%wrapped_transpose_computation (")
    assert loc.range.start.character == 0


async def test_definition_on_fused_parameter_reaches_fusion_operand(client: LanguageClient):
    uri, text = await _open(client, FP8_DUMP)
    result = await client.text_document_definition_async(types.DefinitionParams(
        text_document=_doc(uri), position=_pos(text, "%param_0 = ", 3)))
    fusion_line = text.index("%wrapped_transpose = ")
    assert [r.range.start for r in result] == [_pos(text, "%Arg_1.2.0", 0, fusion_line)]


async def test_references_outline_folding(client: LanguageClient):
    uri, text = await _open(client, TRAIN_AFTER)
    refs = await client.text_document_references_async(types.ReferenceParams(
        text_document=_doc(uri), position=_pos(text, "ENTRY %", 8),
        context=types.ReferenceContext(include_declaration=True)))
    assert refs and refs[0].range.start == _pos(text, "ENTRY %", 6)
    symbols = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=_doc(uri)))
    [module] = symbols
    assert module.name == "jit_train_step" and module.kind == types.SymbolKind.Module
    comps = [c for c in module.children if c.kind == types.SymbolKind.Function]
    assert comps[-1].name == "main.29" and comps[-1].detail.startswith("(params__b1__.1: f32[128]")
    assert len(comps) == sum(1 for line in text.splitlines() if line.endswith("{")
                             and not line.startswith(" "))
    folds = await client.text_document_folding_range_async(
        types.FoldingRangeParams(text_document=_doc(uri)))
    assert any(f.kind == types.FoldingRangeKind.Imports for f in folds)
    assert len(folds) >= len(comps)


async def test_inline_regions_custom_request(client: LanguageClient):
    uri, text = await _open(client, FP8_DUMP)
    regions = await client.protocol.send_request_async(
        "hlo/inlineRegions", {"textDocument": {"uri": uri}})
    lines = text.splitlines()
    assert regions
    for r in regions:
        rng = r["range"] if isinstance(r, dict) else r.range
        kind = r["kind"] if isinstance(r, dict) else r.kind
        start, end = rng["start"], rng["end"]
        hidden = lines[start["line"]][start["character"]:end["character"]]
        assert hidden.startswith(f", {kind}={{") and hidden.endswith("}")


async def test_diagnostics_on_open_and_change(client: LanguageClient):
    uri, text = await _open(client, FP8_REGRESSION)
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert list(client.diagnostics.get(uri)) == []
    # Break one operand name: an undefined instruction, where it is.
    bad_at = _pos(text, "%parameter_2)", 1)
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=bad_at, end=types.Position(
                line=bad_at.line, character=bad_at.character + len("parameter_2"))),
            text="nosuch")]))
    for _ in range(5):
        await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        if client.diagnostics.get(uri):
            break
    diags = client.diagnostics[uri]
    assert [d.message for d in diags] == ["instruction does not exist: nosuch"]
    assert diags[0].range.start == types.Position(line=bad_at.line,
                                                  character=bad_at.character - 1)  # at '%'
    assert diags[0].severity == types.DiagnosticSeverity.Error


@pytest.mark.parametrize("payload", [
    b"\x00\x01\x02\x03garbage\xff\xfe" * 1000,
    b"HloModule m\nENTRY e {\n  ROOT a = f32[] add(",
    b"}}}}}} ((((( [[[[ \"unterminated",
])
async def test_bad_input_gets_diagnostics_not_a_crash(client: LanguageClient, payload, tmp_path):
    path = tmp_path / "bad.hlo"
    text = payload.decode("latin-1")
    uri, _ = await _open(client, path, text)
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    diags = client.diagnostics[uri]
    assert diags and all(d.severity == types.DiagnosticSeverity.Error for d in diags[:1])
    # The server still answers.
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=_doc(uri), position=types.Position(line=0, character=1)))
    assert hover is None or hover.contents
    symbols = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=_doc(uri)))
    assert isinstance(symbols, list)


async def test_xla_rejected_attribute_is_reported_by_xla(client: LanguageClient, tmp_path):
    pytest.importorskip("jaxlib")
    text = read(FP8_DUMP).replace("kind=kInput,", "kind=kInput, no_such_attribute=1,")
    uri, _ = await _open(client, tmp_path / "x.hlo", text)
    # Ours first: an attribute no opcode of jaxlib's XLA has is a warning (newer
    # XLA may accept it); XLA's own error follows beside it.
    diags = await _diagnostics_until(
        client, uri, lambda ds: any(d.source == "xla" for d in ds))
    ours = [d for d in diags if d.source == "hlo-lsp"]
    xla = [d for d in diags if d.source == "xla"]
    assert len(ours) == 1 and ours[0].severity == types.DiagnosticSeverity.Warning
    assert len(xla) == 1 and xla[0].severity == types.DiagnosticSeverity.Error
    assert 'unexpected attribute "no_such_attribute"' in xla[0].message
    assert xla[0].range.start == ours[0].range.start == _pos(text, "no_such_attribute")


async def _diagnostics_until(client: LanguageClient, uri: str, predicate, tries: int = 10):
    for _ in range(tries):
        diags = client.diagnostics.get(uri)
        if diags is not None and predicate(diags):
            return diags
        await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return client.diagnostics.get(uri)


def _change(uri: str, version: int, *changes):
    return types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=list(changes))


def _at(text: str, offset: int) -> types.Position:
    """The LSP position of an offset (the test texts are ASCII)."""
    return types.Position(line=text.count("\n", 0, offset),
                          character=offset - (text.rfind("\n", 0, offset) + 1))


def _replace(text: str, offset: int, length: int, new: str):
    """(an LSP change replacing text[offset:offset+length] by new, the new text)."""
    rng = types.Range(start=_at(text, offset), end=_at(text, offset + length))
    return (types.TextDocumentContentChangePartial(range=rng, text=new),
            text[:offset] + new + text[offset + length:])


async def test_incremental_edits_keep_every_answer_right(client: LanguageClient):
    """Several changes per didChange on a real dump (parsed computation by
    computation): diagnostics, hover and definition follow the edited text."""
    uri, text = await _open(client, TRAIN_AFTER)
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    original = text
    # v2: break an operand in ENTRY, then insert lines above the second computation.
    entry = text.index("\nENTRY ")
    operand = text.index("(%", entry) + 2
    c1, text = _replace(text, operand, 1, "nosuch_")
    second_head = text.index("\n%", text.index("\n}\n")) + 1
    c2, text = _replace(text, second_head, 0, "// a note\n// another\n")
    client.text_document_did_change(_change(uri, 2, c1, c2))
    diags = await _diagnostics_until(client, uri, lambda d: len(d) > 0)
    bad = text.index("%nosuch_")
    assert [(d.message.split(":")[0], d.range.start) for d in diags] == \
        [("instruction does not exist", _pos(text, "%nosuch_"))]
    assert diags[0].message.startswith("instruction does not exist: nosuch_")
    # Hover on the instruction that uses it: its range is in the edited text.
    line_start = text.rfind("\n", 0, bad) + 1
    name = text[line_start:bad].split("=")[0].split()[-1]
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=_doc(uri), position=_pos(text, name, 2, line_start)))
    assert hover is not None and hover.range.start == _pos(text, name, 0, line_start)
    # v3: a syntax error in the first computation; the rest stays navigable.
    first_eq = text.index(" = ", text.index("{\n")) + 3
    c3, text = _replace(text, first_eq, 0, "((")
    client.text_document_did_change(_change(uri, 3, c3))
    diags = await _diagnostics_until(client, uri, lambda d: len(d) >= 2)
    lines = {d.range.start.line for d in diags}
    assert text.count("\n", 0, first_eq) in lines and _pos(text, "%nosuch_").line in lines
    calls = text.rindex("calls=%")
    callee = text[calls + 7:].split(",")[0].split("\n")[0].rstrip("}")
    result = await client.text_document_definition_async(types.DefinitionParams(
        text_document=_doc(uri), position=_pos(text, "calls=%", 8, calls)))
    assert [r.range.start for r in result] == [_pos(text, "%" + callee + " ")]
    # v4: the whole text back: no problems left.
    client.text_document_did_change(_change(uri, 4, types.TextDocumentContentChangeWholeDocument(
        text=original)))
    assert list(await _diagnostics_until(client, uri, lambda d: len(d) == 0)) == []


async def test_recompile_actions_anywhere_in_a_dump_file(client: LanguageClient, tmp_path):
    """Issue 40: the recompile actions on a ``}``, a blank line inside a computation
    and the stack-frame tables too, not only on an instruction or a header (there
    Neovim said "No code actions available"); none in a file that is no dump."""
    text = read(TRAIN_AFTER)
    inside = text.index("  %copy.20 = ")
    text = text[:inside] + "\n" + text[inside:]  # a blank line inside a computation
    dump = tmp_path / TRAIN_AFTER.name
    dump.write_text(text)
    uri, text = await _open(client, dump, text)
    lines = text.split("\n")

    async def titles(line: int) -> list[str]:
        at = types.Position(line=line, character=0)
        actions = await client.text_document_code_action_async(types.CodeActionParams(
            text_document=_doc(uri), range=types.Range(start=at, end=at),
            context=types.CodeActionContext(diagnostics=[])))
        return [a.title for a in actions or []]

    on_instruction = await titles(_pos(text, "%copy.19 = ").line)
    assert "Compile for H100 here, no GPU needed" in on_instruction
    blank = text.count("\n", 0, inside)
    assert lines[blank] == ""
    closing = lines.index("}")
    assert lines[closing + 1] == ""  # the blank line between two computations
    for line in (blank, closing, closing + 1, lines.index("StackFrames") + 1, len(lines) - 1):
        assert await titles(line) == on_instruction, (line, lines[line])
    other = tmp_path / "notes.txt"
    other_uri, _ = await _open(client, other, text)
    at = types.Position(line=closing, character=0)
    assert not await client.text_document_code_action_async(types.CodeActionParams(
        text_document=_doc(other_uri), range=types.Range(start=at, end=at),
        context=types.CodeActionContext(diagnostics=[])))
