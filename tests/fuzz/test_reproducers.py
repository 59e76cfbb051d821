"""The reproducers of issue 12's robustness findings, through the real server
over stdio (pytest-lsp, VS Code's capabilities): tuples nested 400 to 10,000
deep, a lone surrogate in a metadata path, XLA's parser aborting, the outline's
nesting, the readable view of a file without a module, semantic tokens on lines
ending at a lone CR."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from hlo_lsp.features.diagnostics import diagnostics
from hlo_lsp.syntax.parser import parse
from hlo_lsp.syntax.xla import CRASHED, verdict_from_crash
from tests.fuzz.harness import Lines, off_document
from tests.helpers import CORPUS, EXAMPLES, TRAIN_AFTER, position_of, read

SERVER = [sys.executable, "-m", "hlo_lsp"]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual_studio_code"),
        initialization_options={"xlaDiagnostics": False, "workspace": {"index": False}}))
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def xla_client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual_studio_code"),
        initialization_options={"xlaDiagnostics": True, "workspace": {"index": False}}))
    yield
    await lsp_client.shutdown_session()


def _doc(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri)


def _open(client: LanguageClient, uri: str, text: str, version: int = 1) -> None:
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="hlo", version=version, text=text)))


async def _diagnostics(client: LanguageClient, uri: str, predicate, tries: int = 20):
    """The document's diagnostics once ``predicate`` holds (or the last ones)."""
    for _ in range(tries):
        diags = client.diagnostics.get(uri)
        if diags is not None and predicate(diags):
            return diags
        await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return client.diagnostics.get(uri)


# ------------------------------------------------------------ deep tuples ---
def _deep(depth: int, filler: int = 0) -> str:
    """A module whose ENTRY takes, returns and copies a tuple nested ``depth``
    levels deep, after a computation of ``filler`` instructions (over 16 KB the
    server parses by computation and moves unchanged ones after an edit)."""
    shape = "(" * depth + "f32[]" + ")" * depth
    body = "".join(f"  %a.{i} = f32[] add(f32[] %p0, f32[] %p0)\n" for i in range(filler))
    return ("HloModule deep\n\n"
            f"%filler (p0: f32[]) -> f32[] {{\n  %p0 = f32[] parameter(0)\n{body}"
            "  ROOT %r = f32[] add(f32[] %p0, f32[] %p0)\n}\n\n"
            f"ENTRY %main (p: {shape}) -> {shape} {{\n"
            f"  %p = {shape} parameter(0)\n"
            f"  ROOT %t = {shape} copy({shape} %p)\n}}\n")


@pytest.mark.parametrize("depth", [400, 1200, 10000])
async def test_deep_tuples_are_answered(client: LanguageClient, tmp_path, depth):
    text = _deep(depth)
    uri = (tmp_path / "deep.hlo").as_uri()
    _open(client, uri, text)
    lines = Lines(text)
    hover = await client.text_document_hover_async(types.HoverParams(
        _doc(uri), position_of(text, "%t =", 1)))
    assert hover is not None and f"tuple nested {depth} levels deep" in hover.contents.value
    shape_hover = await client.text_document_hover_async(types.HoverParams(
        _doc(uri), position_of(text, "((", 0, text.index("%t ="))))
    assert shape_hover is not None and "up to 100 levels" in shape_hover.contents.value
    hints = await client.text_document_inlay_hint_async(types.InlayHintParams(
        _doc(uri), types.Range(start=types.Position(line=0, character=0),
                               end=lines.position(len(text)))))
    assert off_document(hints, lines, uri, types.TEXT_DOCUMENT_INLAY_HINT) == []
    tokens = await client.text_document_semantic_tokens_full_async(
        types.SemanticTokensParams(_doc(uri)))
    assert tokens.data and off_document(tokens, lines, uri,
                                        types.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL) == []
    symbols = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(_doc(uri)))
    names = [c.name for c in symbols[0].children]
    assert names == ["filler", "main"], names
    diags = await _diagnostics(client, uri, lambda d: True)
    deep = [d for d in diags if "levels deep" in d.message]
    assert len(deep) == 5 and all(d.severity == types.DiagnosticSeverity.Warning for d in deep)
    assert f"nested {depth} levels deep" in deep[0].message


def _edit_before_main(client: LanguageClient, uri: str, text: str) -> str:
    """Type a space into the filler computation; the ENTRY after it moves."""
    at = position_of(text, "%a.0 =")
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        [types.TextDocumentContentChangePartial(
            range=types.Range(start=at, end=at), text=" ")]))
    off = text.index("%a.0 =")
    return text[:off] + " " + text[off:]


@pytest.mark.parametrize("depth", [
    400, 1200, 10000,  # Computation.shift/shifted and the checks walk tuples iteratively
])
async def test_an_edit_before_a_deep_tuple_keeps_the_outline(client: LanguageClient, tmp_path,
                                                              depth):
    text = _deep(depth, filler=400)
    assert len(text) > 16_384
    uri = (tmp_path / "deep.hlo").as_uri()
    _open(client, uri, text)
    await _diagnostics(client, uri, lambda d: True)
    text = _edit_before_main(client, uri, text)
    # the outline answers from the analysis of the edited text
    symbols = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(_doc(uri)))
    diags = client.diagnostics.get(uri, [])
    assert not [d.message for d in diags if "internal error" in d.message]
    assert symbols and [c.name for c in symbols[0].children] == ["filler", "main"]
    hover = await client.text_document_hover_async(types.HoverParams(
        _doc(uri), position_of(text, "%t =", 1)))
    assert hover is not None and "levels deep" in hover.contents.value


# ---------------------------------------------------------- document links ---
async def test_a_lone_surrogate_in_source_file_drops_only_that_link(client: LanguageClient,
                                                                    tmp_path):
    good = tmp_path / "ok.py"
    good.write_text("x = 1\n" * 5)
    bad = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"\x80x.py"))  # "\udc80x.py"
    with open(os.fsencode(bad), "w") as f:
        f.write("y = 2\n")
    assert "\udc80" in bad and os.path.isfile(bad)
    text = ("HloModule m\n\nENTRY %main () -> f32[] {\n"
            f'  %a = f32[] constant(1), metadata={{op_name="a" source_file="{bad}" '
            "source_line=1}\n"
            f'  ROOT %b = f32[] negate(f32[] %a), metadata={{op_name="b" source_file="{good}" '
            "source_line=3}\n}\n")
    uri = (tmp_path / "m.hlo").as_uri()
    _open(client, uri, text)
    links = await client.text_document_document_link_async(
        types.DocumentLinkParams(_doc(uri)))
    assert [link.target for link in links] == [f"{good.as_uri()}#L3"]


# ------------------------------------------------------------ XLA crashes ---
ABORTS = ("HloModule m\n\nENTRY %main () -> f32[] {\n"
          "  ROOT %p = f32[] parameter(2147483648)\n}\n")


def test_a_crash_verdict_quotes_xla_check_message():
    log = ("F1123 08:28:02.321920     307 hlo_computation.cc:188] Check failed: "
           "param_no >= 0 && param_no < parameter_count \n"
           "ERROR: invalid parameter number. Expected [0, 1), got 2147483648\n"
           "*** Check failure stack trace: ***\n"
           "    @     0x7f0b36420634  absl::log_internal::LogMessage::SendToLog()\n")
    v = verdict_from_crash(-6, log)
    assert v.crashed and not v.ok and (v.line, v.column) == (0, 0)
    assert v.message == (f"{CRASHED} (SIGABRT): Check failed: param_no >= 0 && param_no < "
                         "parameter_count; ERROR: invalid parameter number. Expected [0, 1), "
                         "got 2147483648")
    where = verdict_from_crash(-11, "was parsing 7:3: error: boom\n")
    assert where.message == f"{CRASHED} (SIGSEGV)" and (where.line, where.column) == (7, 3)


async def test_xla_parser_abort_is_a_diagnostic_beside_ours(xla_client: LanguageClient,
                                                            tmp_path):
    pytest.importorskip("jaxlib")
    client = xla_client
    uri = (tmp_path / "abort.hlo").as_uri()
    _open(client, uri, ABORTS)
    diags = await _diagnostics(client, uri, lambda d: any(x.source == "xla" for x in d), 40)
    crash = [d for d in diags if d.source == "xla"]
    assert len(crash) == 1, diags
    assert crash[0].message.startswith(f"{CRASHED} (SIGABRT)")
    assert "invalid parameter number" in crash[0].message
    assert crash[0].range.start == types.Position(line=0, character=0)
    ours = sorted(p.message for p in diagnostics(parse(ABORTS)))
    assert sorted(d.message for d in diags if d.source != "xla") == ours


# ----------------------------------------------------------------- outline ---
def _real_dumps() -> list:
    files = [p for p in sorted(EXAMPLES.rglob("*.txt")) if "buffer" not in p.name
             and "memory-usage" not in p.name and "live-range" not in p.name
             and "thunk" not in p.name]
    if CORPUS.is_dir():
        files += [p for p in sorted(CORPUS.glob("*")) if p.suffix in (".txt", ".hlo")
                  and p.stat().st_size < 400_000 and b"StackFrames" in p.read_bytes()][:4]
    return files


def _outside(parent: types.DocumentSymbol, path: str = "") -> list[str]:
    """Children of ``parent`` (recursively) whose range is not within their parent's."""
    bad = []
    key = lambda p: (p.line, p.character)  # noqa: E731
    for child in parent.children or []:
        if key(child.range.start) < key(parent.range.start) or \
                key(child.range.end) > key(parent.range.end):
            bad.append(f"{path}/{parent.name}: {child.name} {child.range} not in {parent.range}")
        bad += _outside(child, f"{path}/{parent.name}")
    return bad


# A dump that ends after its stack-frame tables (cut short, or still being
# written) once had a module symbol that ended before its "stack frames" child.
async def test_every_outline_child_lies_within_its_parent(client: LanguageClient, tmp_path):
    texts = []
    for path in _real_dumps():
        text = path.read_text(encoding="utf-8")
        texts.append((path.name, text))
        tables = text.find("\nStackFrames")
        first = text.find("\n%", tables) if tables >= 0 else -1
        if first >= 0:  # the same dump, cut after its stack-frame tables
            texts.append((f"{path.name} cut after its tables", text[:first + 1]))
    assert any(name.endswith("tables") for name, _ in texts)
    bad = []
    for n, (name, text) in enumerate(texts):
        uri = (tmp_path / f"{n}.hlo").as_uri()
        _open(client, uri, text)
        symbols = await client.text_document_document_symbol_async(
            types.DocumentSymbolParams(_doc(uri)))
        client.text_document_did_close(types.DidCloseTextDocumentParams(_doc(uri)))
        everything = types.Range(start=types.Position(line=0, character=0),
                                 end=types.Position(line=10**9, character=0))
        root = types.DocumentSymbol(name=name, kind=types.SymbolKind.File, range=everything,
                                    selection_range=everything, children=symbols)
        bad += _outside(root)
    assert bad == []


# ----------------------------------------------------------- readable view ---
@pytest.mark.parametrize("text", ["", "// only a comment\n", "\n\n\n", "# hash\r\n"])
async def test_readable_view_line_map_of_a_file_without_module(client: LanguageClient,
                                                               tmp_path, text):
    uri = (tmp_path / "empty.hlo").as_uri()
    _open(client, uri, text)
    view = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        "hlo.readableView", [uri]))
    assert len(view["text"].split("\n")) == len(view["lineMap"]) == len(view["sourceLines"])


async def test_readable_view_line_map_of_a_dump(client: LanguageClient):
    uri = TRAIN_AFTER.as_uri()
    _open(client, uri, read(TRAIN_AFTER))
    view = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        "hlo.readableView", [uri]))
    assert len(view["text"].split("\n")) == len(view["lineMap"]) == len(view["sourceLines"])
    assert view["lineMap"][0] == 0


# --------------------------------------------------------- semantic tokens ---
@pytest.mark.parametrize("ending", ["\r", "\r\n"])
async def test_semantic_tokens_split_at_every_line_ending(client: LanguageClient, tmp_path,
                                                          ending):
    """A backend_config spanning lines that end at a lone CR: one token per line,
    each inside its line (the tokens split only at LF before)."""
    base = ("HloModule m\n\n%fused (p: f32[8]) -> f32[8] {\n"
            "  ROOT %p = f32[8] parameter(0)\n}\n\n"
            "ENTRY %main (a: f32[8]) -> f32[8] {\n  %a = f32[8] parameter(0)\n"
            "  ROOT %fusion = f32[8] fusion(f32[8] %a), kind=kCustom, calls=%fused,\n"
            "    backend_config={\n    \"fusion_backend_config\":{\n"
            "      \"block_level_fusion_config\":{\n        \"num_stages\":\"1\"}}}\n}\n")
    text = base.replace("\n", ending)
    uris = {}
    for name, t in (("lf", base), ("other", text)):
        uris[name] = (tmp_path / f"{name}.hlo").as_uri()
        _open(client, uris[name], t)
    lf = await client.text_document_semantic_tokens_full_async(
        types.SemanticTokensParams(_doc(uris["lf"])))
    other = await client.text_document_semantic_tokens_full_async(
        types.SemanticTokensParams(_doc(uris["other"])))
    assert off_document(other, Lines(text), uris["other"],
                        types.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL) == []
    assert other.data == lf.data


# --------------------------------------------------------------- line ends ---
async def test_a_diagnostic_on_a_crlf_ends_within_its_line(client: LanguageClient, tmp_path):
    """A problem covering the "\\r" of a "\\r\\n" (XLA's JSON error at a control
    character) ended one column past its line."""
    text = ("HloModule m\r\n\r\nENTRY %main () -> f32[] {\r\n  ROOT %c = f32[] constant(0), "
            'backend_config={"x":"ab\r\ncd"}\r\n}\r\n')
    uri = (tmp_path / "crlf.hlo").as_uri()
    _open(client, uri, text)
    diags = await _diagnostics(client, uri, lambda d: len(d) > 0)
    assert any("not valid JSON" in d.message for d in diags)
    assert off_document({"items": diags}, Lines(text), uri, "diagnostics") == []


async def test_inlay_hints_on_cr_ended_lines_take_a_line_per_hint(client: LanguageClient,
                                                                  tmp_path):
    """Lines ended by a lone "\\r": finding each hint's line end searched from the
    document's start (a 2.7 MB dump took 281 s); now a line per hint."""
    import time

    body = read(TRAIN_AFTER)
    text = (body * (1_000_000 // len(body) + 1)).replace("\n", "\r")
    uri = (tmp_path / "cr.hlo").as_uri()
    _open(client, uri, text)
    await _diagnostics(client, uri, lambda d: True, 60)
    lines = Lines(text)
    t0 = time.monotonic()
    hints = await client.text_document_inlay_hint_async(types.InlayHintParams(
        _doc(uri), types.Range(start=types.Position(line=0, character=0),
                               end=lines.position(len(text)))))
    assert time.monotonic() - t0 < 120   # a hang guard: the quadratic search took 281 s
    assert len(hints) > 1000
    assert off_document(hints, lines, uri, types.TEXT_DOCUMENT_INLAY_HINT) == []


@pytest.mark.parametrize("ending", ["\r", "\r\n"])
async def test_readable_view_lines_are_the_editors_lines(client: LanguageClient, tmp_path,
                                                         ending):
    """The view splits at every line end an editor sees, so its line map stays
    one entry per line of the view."""
    text = ("HloModule m\n\nENTRY %main (a: f32[8]) -> f32[8] {\n"
            "  %a = f32[8] parameter(0)\n"
            "  ROOT %t = f32[8] add(f32[8] %a,\n      f32[8] %a)\n}\n").replace("\n", ending)
    uri = (tmp_path / "view.hlo").as_uri()
    _open(client, uri, text)
    view = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        "hlo.readableView", [uri]))
    assert "\r" not in view["text"]
    assert len(view["text"].split("\n")) == len(view["lineMap"]) == len(view["sourceLines"])
    assert view["sourceLines"][0] == 0 and view["sourceLines"][2] > 0


# ------------------------------------------------ the hour of 2026-11-27 ---
async def test_an_edit_that_completes_a_surrogate_pair_equals_a_fresh_open(
        client: LanguageClient, tmp_path):
    """A low surrogate typed after a lone high one: in UTF-16, the document the
    LSP speaks of, the two are one character (U+10080), as a fresh didOpen of
    the same text delivers it (JSON's "\\ud800\\udc80"). The server kept two
    characters, and its diagnostic quoted them differently from a fresh open's
    (fuzz seed 51, document 7547)."""
    before = "HloModule m\n\nENTRY %main () -> f32[] {\n  ROOT %p = f32[9\ud800,2] parameter(0)\n}\n"
    after = before.replace("\ud800", "\ud800\udc80")
    edited, fresh = (tmp_path / "edited.hlo").as_uri(), (tmp_path / "fresh.hlo").as_uri()
    _open(client, edited, before)
    at = before.index("\ud800") + 1  # all ASCII before it: a column is an offset
    line = before.count("\n", 0, at)
    column = at - before.rindex("\n", 0, at) - 1
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=edited, version=2),
        [types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=line, character=column),
                              end=types.Position(line=line, character=column)),
            text="\udc80")]))
    _open(client, fresh, after)
    want = await _diagnostics(client, fresh, lambda d: len(d) > 0)
    try:
        await asyncio.wait_for(_diagnostics(client, edited, lambda d: [
            x.message for x in d] == [x.message for x in want]), 10)
    except asyncio.TimeoutError:
        pass  # compared below: the last ones published
    got = client.diagnostics.get(edited) or []
    assert [x.message for x in got] == [x.message for x in want]
    assert "\U00010080" in want[0].message


async def test_a_dot_whose_contracting_dimensions_run_to_the_line_end_is_summarised(
        client: LanguageClient, tmp_path):
    """``lhs_contracting_dims={0,=, ...`` took every number up to the line's end
    as a contracting dimension: a FLOP count of 309 digits, which the roofline
    could not turn into a float (OverflowError, a traceback and no summary;
    fuzz seed 51, document 9556). A dimension counts once now, and a count past
    a float's range is an infinite time."""
    numbers = ",".join(["0", "1", "2"] * 120)
    text = ("HloModule m\n\nENTRY %main (a: f32[12,64,768], b: f32[12,64,768]) -> "
            "f32[768,768] {\n  %a = f32[12,64,768]{2,1,0} parameter(0)\n"
            "  %b = f32[12,64,768]{2,1,0} parameter(1)\n"
            "  ROOT %d = f32[768,768]{1,0} dot(f32[12,64,768]{2,1,0} %a, "
            f"f32[12,64,768]{{2,1,0}} %b), lhs_contracting_dims={{0,=, "
            f'rhs_contracting_dims={{0,1}}, metadata={{op_name="x" source_line={numbers}}}\n}}\n')
    uri = (tmp_path / "dot.hlo").as_uri()
    _open(client, uri, text)
    summary = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        "hlo.showSummary", [uri, {"format": "text"}]))
    # (the command's answer was null, its error caught and logged)
    assert isinstance(summary, str) and "dot" in summary, summary


async def test_dimensions_past_a_floats_range_are_answered(client: LanguageClient, tmp_path):
    """Dimensions of 400 digits: element and byte counts past a float's range.
    Hover wrote the bytes through ``float`` and the cost model summed them into
    floats: OverflowError, a hover and a summary of null (and past 4,300 digits
    Python refuses to write an integer at all). Such counts are written as a
    power of two, and they cost an infinite time."""
    big = "9" * 400
    text = (f"HloModule m\n\n%fused (x: f32[{big}]) -> f32[{big}] {{\n"
            f"  %x = f32[{big}]{{0}} parameter(0)\n"
            f"  ROOT %n = f32[{big}]{{0}} negate(%x)\n}}\n\n"
            f"ENTRY %main (p: f32[{big}]) -> f32[{big}] {{\n"
            f"  %p = f32[{big}]{{0}} parameter(0)\n"
            f"  %e = f32[{big}]{{0}} exponential(%p)\n"
            f"  %f = f32[{big}]{{0}} fusion(%e), kind=kLoop, calls=%fused\n"
            f"  ROOT %a = f32[{big}]{{0}} add(%f, %p)\n}}\n")
    uri = (tmp_path / "huge.hlo").as_uri()
    _open(client, uri, text)
    line = text[:text.index("%e = ")].count("\n")
    hover = await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri), types.Position(line, 3)))
    assert hover is not None and "B" in hover.contents.value
    assert f"= about 2^{(int(big)).bit_length() - 1} elements" in hover.contents.value
    summary = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        "hlo.showSummary", [uri, {"format": "text"}]))
    assert isinstance(summary, str) and "fusion" in summary, summary


def test_counts_past_a_floats_range_add_up_to_infinity():
    from hlo_lsp.model.cost import Cost
    from hlo_lsp.model.shapes import format_bytes, format_integer
    huge = Cost(flops=10 ** 400, bytes_accessed=10 ** 400)
    assert (huge + Cost(1.0)).flops == float("inf")
    total = Cost.total([Cost(2.0, 1.0, 3.0), huge])
    assert (total.flops, total.transcendentals, total.bytes_accessed) == \
        (float("inf"), 1.0, float("inf"))
    assert huge.scaled(2.0).flops == float("inf")
    assert Cost.total(c for c in [Cost(1, 2, 3), Cost(4, 5, 6)]) == Cost(5.0, 7.0, 9.0)
    assert format_integer(10 ** 5000) == "about 2^16609"  # past Python's 4,300 digits
    assert format_bytes(2 ** 90) == "about 2^90 B"
    assert format_integer(33_554_432) == "33,554,432"


def test_a_count_past_a_floats_range_is_an_infinite_time():
    from hlo_lsp.model.accelerators import accelerator
    from hlo_lsp.model.cost import Cost
    from hlo_lsp.model.roofline import roofline
    from hlo_lsp.model.units import format_count
    device = accelerator("h100-sxm")
    estimate = roofline(Cost(flops=10 ** 400), device)
    assert estimate.seconds == float("inf") and estimate.bound == "compute"
    assert format_count(10 ** 400, "FLOP") == "inf PFLOP"
