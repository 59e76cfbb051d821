"""End to end for issue 6 (readable HLO): inlay hints, semantic tokens, the
ENTRY code lens and the readable-view / summary / compare commands, through
the real server over stdio with the capabilities VS Code and Neovim send."""

from __future__ import annotations

import sys

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.helpers import position_of as _pos, FP8_DUMP, FP8_FUSED, FP8_REGRESSION, TRAIN_AFTER, read
from hlo_lsp.features.semantic_tokens import TOKEN_MODIFIERS, TOKEN_TYPES

SERVER = [sys.executable, "-m", "hlo_lsp"]


@pytest_lsp.fixture(
    params=["visual_studio_code", "neovim"],
    config=ClientServerConfig(server_command=SERVER),
)
async def client(request, lsp_client: LanguageClient):
    lsp_client.init_result = await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities(request.param),
        initialization_options={"xlaDiagnostics": False}))
    yield
    await lsp_client.shutdown_session()



async def _open(client: LanguageClient, path) -> tuple[str, str]:
    text = read(path)
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="hlo", version=1,
                                             text=text)))
    return uri, text


def _doc(uri):
    return types.TextDocumentIdentifier(uri=uri)


def _whole(text: str) -> types.Range:
    return types.Range(start=types.Position(line=0, character=0),
                       end=types.Position(line=text.count("\n") + 1, character=0))


async def test_inlay_hints_shapes_sources_and_cublas_results(client: LanguageClient):
    uri, text = await _open(client, TRAIN_AFTER)
    hints = await client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=_doc(uri), range=_whole(text)))
    by_pos = {(h.position.line, h.position.character): h for h in hints}
    # `%copy.31 = f32[128]{0} copy(%params__b1__.1)`: the bare operand gets its shape.
    line = text.index("%copy.31 = ")
    at = _pos(text, "%params__b1__.1)", len("%params__b1__.1"), line)
    h = by_pos[(at.line, at.character)]
    assert h.label == ": f32[128]" and h.kind == types.InlayHintKind.Type
    # `%wrapped_clamp` has stack_frame_id=26 -> make_dump.py line 112, at the line's end.
    line = text.index("%wrapped_clamp = ")
    eol = _pos(text, "\n", 0, line)
    h = by_pos[(eol.line, eol.character)]
    assert h.label == "make_dump.py:112" and h.kind is None
    assert "make_dump.py:112:18 (run_program.<locals>.train_step)" in h.tooltip
    # A range request only returns hints inside the range.
    first = _pos(text, "%copy.31 = ")
    part = await client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=_doc(uri), range=types.Range(
            start=first, end=types.Position(line=first.line + 4, character=0))))
    assert [h.label for h in part] == [": f32[128]", ": f32[10]", ": f32[64,128]",
                                       ": f32[128,10]"]  # %copy.31 ... %copy.34

    uri, text = await _open(client, FP8_DUMP)
    hints = await client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=_doc(uri), range=_whole(text)))
    # Operands print their shapes and the metadata has source_file="": only the
    # get-tuple-element of the cuBLASLt call gets a hint, after `index=0`.
    [h] = hints
    assert h.position == _pos(text, "index=0", len("index=0"))
    assert h.label == "output" and h.kind == types.InlayHintKind.Parameter


async def test_semantic_tokens_full_legend_and_tokens(client: LanguageClient):
    provider = client.init_result.capabilities.semantic_tokens_provider
    assert list(provider.legend.token_types) == list(TOKEN_TYPES)
    assert list(provider.legend.token_modifiers) == list(TOKEN_MODIFIERS)
    assert provider.full and provider.range
    uri, text = await _open(client, FP8_DUMP)
    result = await client.text_document_semantic_tokens_full_async(
        types.SemanticTokensParams(text_document=_doc(uri)))
    tokens = {}
    line = col = 0
    data = result.data
    for i in range(0, len(data), 5):
        dl, dc, length, ttype, mods = data[i:i + 5]
        line, col = (line + dl, dc) if dl else (line, col + dc)
        tokens[(line, col)] = (length, TOKEN_TYPES[ttype],
                               {m for b, m in enumerate(TOKEN_MODIFIERS) if mods >> b & 1})
    p = _pos(text, "custom-call(")
    assert tokens[(p.line, p.character)] == (11, "keyword", {"customCall"})
    p = _pos(text, "%cublas-gemm.1.0 =")
    assert tokens[(p.line, p.character)] == (16, "variable", {"declaration"})
    p = _pos(text, "%wrapped_transpose_computation", 0, text.index("calls="))
    assert tokens[(p.line, p.character)] == (30, "function", set())
    p = _pos(text, "metadata=", 0, text.index("%cublas-gemm.1.0 ="))
    length, ttype, mods = tokens[(p.line, p.character)]
    assert (ttype, mods) == ("comment", {"metadata"})
    assert text[text.index("metadata=", text.index("%cublas-gemm.1.0 =")):][length - 1] == "}"
    # A range over the whole document is the full answer (kept with the analysis).
    whole = await client.text_document_semantic_tokens_range_async(
        types.SemanticTokensRangeParams(text_document=_doc(uri), range=_whole(text)))
    assert whole.data == data
    name = _pos(text, "%cublas-gemm.1.0 =")
    part = await client.text_document_semantic_tokens_range_async(
        types.SemanticTokensRangeParams(text_document=_doc(uri), range=types.Range(
            start=name, end=_pos(text, "%cublas-gemm.1.0 =", 2))))
    # the tokens of the instruction that starts there, from its name on, on its line
    assert list(part.data[:5]) == [name.line, name.character, 16, TOKEN_TYPES.index("variable"),
                             1 << TOKEN_MODIFIERS.index("declaration")]
    assert len(part.data) > 5 and not any(part.data[5::5])


async def test_code_lens_on_entry_and_show_summary(client: LanguageClient):
    uri, text = await _open(client, FP8_REGRESSION)
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=_doc(uri)))
    [lens] = lenses
    assert lens.range.start == _pos(text, "ENTRY %main.25")
    assert lens.command.title == "3 fusions (1 Triton GEMM) · 0 custom-calls · 0 collectives"
    assert lens.command.command == "hlo.showSummary"
    md = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=lens.command.command, arguments=lens.command.arguments))
    assert "**3 fusions (1 Triton GEMM) · 0 custom-calls · 0 collectives**" in md
    assert "| `%gemm_fusion_dot.19.0` | `kCustom __triton_gemm*` | Triton GEMM fusion | dot |" \
        in md
    # The short report comes first (as `hlo-lsp summary` prints it): kernel groups
    # by estimated time, then every kernel under a heading of its own.
    top = md.index("#### Top 3 of 3 kernel groups by estimated time")
    assert top < md.index("#### All kernels (3)") < md.index("%gemm_fusion_dot.19.0` |")
    assert "  1  %gemm_fusion_dot.19.0  1x" in md[top:]


async def test_execute_readable_view(client: LanguageClient):
    uri, text = await _open(client, FP8_DUMP)
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="hlo.readableView", arguments=[uri, {"inlineFusions": True}]))
    lines = result["text"].split("\n")
    assert len(result["lineMap"]) == len(lines) == len(result["sourceLines"])
    # The fused transpose is printed under its fusion instruction, indented.
    i = next(i for i, s in enumerate(lines) if s.startswith("  %wrapped_transpose = "))
    assert lines[i + 1].startswith("      %wrapped_transpose_computation (param_0: ")
    assert result["lineMap"][i] == text.index("%wrapped_transpose = ")
    assert result["sourceLines"][i + 1] == _pos(text, "%wrapped_transpose_computation (").line
    # Metadata is gone, backend_config is expanded under the cuBLAS call.
    assert "metadata=" not in result["text"]
    j = next(i for i, s in enumerate(lines) if s.startswith("  %cublas-gemm.1.0 = "))
    assert 'backend_config' not in lines[j]
    assert '    //       "selected_algorithm": "4",' in lines[j:]
    config_line = lines.index("    // backend_config:")
    assert result["lineMap"][config_line] == text.index("backend_config=")
    # Views are kept per analysis and options: without inlined fusions, the fused
    # computation stands alone again, and with the metadata kept it is there.
    plain = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="hlo.readableView", arguments=[uri, {"keepMetadata": True}]))
    assert not any(s.startswith("      %wrapped_transpose_computation")
                   for s in plain["text"].split("\n"))
    assert "metadata=" in plain["text"]
    again = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="hlo.readableView", arguments=[uri, {"inlineFusions": True}]))
    assert again == result


async def test_execute_compare_dumps_seed_001(client: LanguageClient):
    old_uri, _ = await _open(client, FP8_FUSED)
    new_uri = FP8_REGRESSION.as_uri()  # not opened: read from disk
    out = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="hlo.compareDumps", arguments=[old_uri, new_uri]))
    assert "cuBLASLt FP8 call `__cublas$lt$matmul$f8` disappeared (1 -> 0)" in out
    assert "Triton GEMM fusion appeared: %gemm_fusion_dot.19.0" in out


async def test_compare_dumps_estimates_times_on_the_new_dumps_device(client: LanguageClient):
    # As hlo.showSummary and `hlo-lsp diff`: the device the dump's name implies
    # (sm_9.0a: H100), not the CPU default.
    from tests.helpers import EXAMPLES
    dump = (EXAMPLES / "gpu" / "deviceless" / "conv_bias_relu" /
            "module_0001.jit_conv_bias_relu.sm_9.0a_gpu_after_optimizations.txt")
    uri, _ = await _open(client, dump)
    before = (dump.parent / "module_0001.jit_conv_bias_relu.before_optimizations.txt").as_uri()
    out = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="hlo.compareDumps", arguments=[before, uri]))
    assert "time: roofline on H100" in out, out[:600]
    summary = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="hlo.showSummary", arguments=[uri, {"format": "text"}]))
    assert "H100" in summary


async def test_show_summary_with_targets_links_each_kernel_row_to_its_instruction(
        client: LanguageClient):
    # Issue 40, item 4: VS Code shows the text table (it does not wrap) and links
    # each row to its instruction; the server says where each row's kernel is.
    uri, text = await _open(client, FP8_REGRESSION)
    plain = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="hlo.showSummary", arguments=[uri, {"format": "text"}]))
    table = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="hlo.showSummary", arguments=[uri, {"format": "text", "targets": True}]))
    assert isinstance(plain, str) and table["text"] == plain
    lines, source = plain.split("\n"), text.split("\n")
    targets = table["targets"]
    # every kernel has its row under "All kernels", and the top table rows too
    names = {lines[t["line"]][t["start"]:t["end"]] for t in targets}
    from hlo_lsp.model.summary import kernel_summary
    from hlo_lsp.syntax.parser import parse
    kernels = kernel_summary(parse(text)).kernels
    assert names == {f"%{k.name}" for k in kernels}
    assert len(targets) > len(kernels)  # the top table's rows link as well
    for t in targets:
        loc = t["location"]
        assert loc["uri"] == uri
        start, end = loc["range"]["start"], loc["range"]["end"]
        assert start["line"] == end["line"]
        assert source[start["line"]][start["character"]:end["character"]] == \
            lines[t["line"]][t["start"]:t["end"]]
    # the markdown of the code lens is unchanged
    md = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="hlo.showSummary", arguments=[uri, {"targets": True}]))
    assert isinstance(md, str) and md.startswith("### ")
