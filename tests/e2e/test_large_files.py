"""Documents too big for a full model: the server keeps memory bounded and still
answers hover and go-to-definition, computation by computation.

The limit is lowered to 0 MiB with HLO_LSP_MAX_FULL_PARSE_MB so that the real
FP8 dump exercises the same path a 100 MB dump takes.
"""

from __future__ import annotations

import os
import sys

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.helpers import position_of as _pos, FP8_DUMP, read


@pytest_lsp.fixture(config=ClientServerConfig(
    server_command=[sys.executable, "-m", "hlo_lsp"],
    server_env=dict(os.environ, HLO_LSP_MAX_FULL_PARSE_MB="0")))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities()))
    yield
    await lsp_client.shutdown_session()



async def test_over_the_limit_hover_and_definition_still_work(client: LanguageClient):
    text = read(FP8_DUMP)
    uri = FP8_DUMP.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="hlo", version=1,
                                             text=text)))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    [info] = client.diagnostics[uri]
    assert info.severity == types.DiagnosticSeverity.Information
    assert "larger than the full-index limit" in info.message
    doc = types.TextDocumentIdentifier(uri=uri)
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=doc, position=_pos(text, "%cublas-gemm.1.0 =", 3)))
    assert hover is not None and "`__cublas$lt$matmul$f8`" in hover.contents.value
    assert '"gemm_backend_config": {' in hover.contents.value
    [loc] = await client.text_document_definition_async(types.DefinitionParams(
        text_document=doc, position=_pos(text, "calls=%wrapped_transpose_computation", 9)))
    assert loc.range.start == _pos(text, "%wrapped_transpose_computation (")
    [loc] = await client.text_document_definition_async(types.DefinitionParams(
        text_document=doc, position=_pos(text, "%constant_1, f32[]", 3)))
    assert loc.range.start == _pos(text, "%constant_1 = f32[]")
    # An edit above: the snapshot's line index and skeleton follow it, and the
    # answers land in the edited text.
    header_end = text.index("\n") + 1
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=1, character=0),
                              end=types.Position(line=1, character=0)),
            text="// one\n// two\n")]))
    text = text[:header_end] + "// one\n// two\n" + text[header_end:]
    [loc] = await client.text_document_definition_async(types.DefinitionParams(
        text_document=doc, position=_pos(text, "calls=%wrapped_transpose_computation", 9)))
    assert loc.range.start == _pos(text, "%wrapped_transpose_computation (")
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=doc, position=_pos(text, "%cublas-gemm.1.0 =", 3)))
    assert hover is not None and hover.range.start == _pos(text, "%cublas-gemm.1.0 =")


def test_quick_answer_cache_is_bounded_and_keeps_the_header():
    """Hovering over every computation of a real dump with a small cache: the
    answers stay right while the parsed chunks held never exceed the bound."""
    from tests.helpers import TRAIN_AFTER
    from hlo_lsp.syntax.chunks import ChunkCache, Skeleton, partial_module

    text = read(TRAIN_AFTER)
    skeleton = Skeleton(text)
    cache = ChunkCache(max_chars=4096)
    largest = max(e - s for s, e in map(skeleton.bounds, range(len(skeleton.heads))))
    for i in range(len(skeleton.heads)):
        start, _ = skeleton.bounds(i)
        offset = text.index("\n", start) + 3          # on the first instruction
        module = partial_module(text, skeleton, offset, cache)
        assert module is not None
        ins = module.instruction_at(offset)
        assert ins is not None and text[ins.name.start:ins.name.end].lstrip("%") \
            == ins.name.name
        assert cache.chars <= max(4096, largest) + skeleton.prefix_end
    assert -1 in cache  # the module header and frame tables stay parsed
    assert len(cache) < len(skeleton.heads)


def test_a_hover_in_a_long_computation_reads_only_the_lines_it_needs(monkeypatch):
    """``slim_computation`` (the quick hover of a long computation: the cursor's
    line, its operands' definitions, its users and the ROOT, each parsed alone)
    answers as the full parse does at every name and opcode of a real dump, the
    threshold lowered so that every computation counts as long: in the ENTRY,
    in loop bodies and in fused computations (whose hover names the fusion that
    calls them, found by its ``calls=``)."""
    from tests.helpers import TRAIN_AFTER
    from hlo_lsp.features.hover import hover
    from hlo_lsp.model.index import Kind, find_at
    from hlo_lsp.syntax import chunks
    from hlo_lsp.syntax.parser import parse

    text = read(TRAIN_AFTER)
    full = parse(text)
    skeleton = chunks.Skeleton(text)
    cache = chunks.ChunkCache()
    monkeypatch.setattr(chunks, "SLIM_CHARS", 0)
    read_alone = []
    original = chunks.slim_computation
    monkeypatch.setattr(chunks, "slim_computation",
                        lambda *a: read_alone.append(original(*a)) or read_alone[-1])
    offsets = [r.start + 1 for comp in full.computations for ins in comp.instructions
               for r in (ins.name, *ins.uses())] + \
        [ins.opcode_start + 1 for comp in full.computations for ins in comp.instructions]
    assert len(offsets) > 500
    fused = 0
    for offset in offsets:
        module = chunks.partial_module(text, skeleton, offset, cache)
        occ = find_at(module, offset)
        assert occ is not None and occ.kind in (Kind.INSTRUCTION_DEF, Kind.INSTRUCTION_USE,
                                                Kind.OPCODE, Kind.PARAMETER_OPCODE), offset
        quick, right = hover(module, offset), hover(full, offset)
        assert (quick.markdown, quick.start, quick.end) == \
            (right.markdown, right.start, right.end), text[offset - 40:offset + 40]
        fused += "Part of the fusion" in right.markdown
    assert fused > 20  # the fused computations' callers were found
    # the answers came from slim computations, each a few lines of its computation
    assert None not in read_alone
    entry = full.entry
    assert max(len(c.instructions) for c in read_alone
               if c.name.name == entry.name.name) < len(entry.instructions) / 2
