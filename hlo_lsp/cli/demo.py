"""``hlo-lsp demo``: the real server, started over stdio, driven by a real LSP
client (pygls) on a bundled XLA dump, printing what an editor would show.

The requests are chosen the way a user would click: hover on the cuBLASLt FP8
custom-call, go to the definition of a fusion's ``calls=`` and of a fused
parameter, find the references of a constant, then the outline, folding ranges,
the in-line metadata regions and the diagnostics.
"""

from __future__ import annotations

import asyncio
import pathlib
import sys
import textwrap
from importlib import resources

from lsprotocol import types
from pygls.lsp.client import LanguageClient

ROOT = pathlib.Path(__file__).resolve().parents[2]  # the checkout, when run from one
DEFAULT_NAME = "jit_matmul_fn.fp8_cublaslt.sm90_gpu_after_optimizations.txt"


def default_dump() -> pathlib.Path:
    """The bundled FP8 GPU dump: from the installed package (the wheel ships
    ``examples/gpu/*.txt`` as ``hlo_lsp/examples/gpu/``) or, in a source checkout,
    from ``examples/gpu/``."""
    packaged = resources.files("hlo_lsp").joinpath("examples", "gpu", DEFAULT_NAME)
    if isinstance(packaged, pathlib.Path) and packaged.is_file():
        return packaged
    return ROOT / "examples" / "gpu" / DEFAULT_NAME


def _shown(path: pathlib.Path) -> str:
    """``path`` relative to the checkout when it is in one, else in full."""
    in_checkout = (ROOT / "pyproject.toml").is_file() and path.is_relative_to(ROOT)
    return str(path.relative_to(ROOT)) if in_checkout else str(path)


def _pos(text: str, offset: int) -> types.Position:
    line = text.count("\n", 0, offset)
    return types.Position(line=line, character=offset - (text.rfind("\n", 0, offset) + 1))


def _line(text: str, line: int) -> str:
    return text.splitlines()[line] if line < text.count("\n") + 1 else ""


def _show_location(text: str, loc: types.Location, path: pathlib.Path) -> str:
    where = f"{pathlib.Path(loc.uri.removeprefix('file://')).name}:" \
            f"{loc.range.start.line + 1}:{loc.range.start.character + 1}"
    if loc.uri == path.as_uri():
        snippet = _line(text, loc.range.start.line).strip()
        if len(snippet) > 110:
            snippet = snippet[:107] + "..."
        return f"{where}  {snippet}"
    return where


def _probes(text: str) -> list[tuple[str, int]]:
    """(label, offset) pairs for interesting places that exist in ``text``."""
    out = []
    candidates = [
        ("hover on the cuBLASLt custom-call", "custom-call(", -1),
        ("hover on a fusion", " fusion(", -1),
    ]
    for label, needle, _ in candidates:
        at = text.find(needle)
        if at >= 0:
            line_start = text.rfind("\n", 0, at) + 1
            name_at = text.find("%", line_start)
            if name_at < 0 or name_at > at:
                name_at = len(text[:line_start]) + len(text[line_start:at]) - len(
                    text[line_start:at].lstrip())
            out.append((label, name_at + 2))
    return out


async def _demo(path: pathlib.Path) -> int:
    text = path.read_text(encoding="utf-8", errors="replace")
    uri = path.as_uri()
    client = LanguageClient("hlo-lsp-demo", "0")
    diagnostics: dict[str, list[types.Diagnostic]] = {}
    published = asyncio.Event()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def _on_diagnostics(ls, params: types.PublishDiagnosticsParams) -> None:
        diagnostics[params.uri] = list(params.diagnostics)
        published.set()

    await client.start_io(sys.executable, "-m", "hlo_lsp")
    init = await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(), client_info=types.ClientInfo(name="demo")))
    client.initialized(types.InitializedParams())
    info = init.server_info
    print(f"$ {sys.executable} -m hlo_lsp   # {info.name} {info.version}, over stdio")
    print(f"opened {_shown(path)} ({len(text):,} bytes)\n")
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="hlo", version=1, text=text)))
    doc = types.TextDocumentIdentifier(uri=uri)

    def header(title: str) -> None:
        print(f"── {title} " + "─" * max(0, 72 - len(title)))

    for label, offset in _probes(text):
        pos = _pos(text, offset)
        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=doc, position=pos))
        header(f"{label} (line {pos.line + 1})")
        if hover is not None:
            print(textwrap.indent(hover.contents.value, "  "))
        print()

    async def definition(title: str, pos: types.Position) -> None:
        header(title)
        for loc in await client.text_document_definition_async(types.DefinitionParams(
                text_document=doc, position=pos)):
            print("  → " + _show_location(text, loc, path))
        print()

    calls = text.find("calls=%")
    if calls >= 0:
        pos = _pos(text, calls + 8)
        await definition(f"definition of {text[calls + 6:text.find(',', calls)]} "
                         f"(line {pos.line + 1})", pos)
    param = text.find("parameter(0)")
    if param >= 0:
        line_start = text.rfind("\n", 0, param) + 1
        # The first parameter(0) may belong to any called computation (a fusion,
        # a reducer, a loop body): say what it is, not "fused".
        await definition("definition of a called computation's parameter: "
                         f"{text[line_start:param + 12].strip()}", _pos(text, param + 2))
    const = text.find(" constant(")
    if const >= 0:
        line_start = text.rfind("\n", 0, const) + 1
        name_at = text.find("%", line_start)
        pos = _pos(text, name_at + 2)
        refs = await client.text_document_references_async(types.ReferenceParams(
            text_document=doc, position=pos,
            context=types.ReferenceContext(include_declaration=True)))
        header(f"references of {text[name_at:text.find(' ', name_at)]}")
        for loc in refs:
            print("  • " + _show_location(text, loc, path))
        print()

    header("outline (document symbols)")
    for sym in await client.text_document_document_symbol_async(
            types.DocumentSymbolParams(text_document=doc)):
        _print_symbol(sym, 1)
    print()
    header("folding ranges")
    for f in await client.text_document_folding_range_async(
            types.FoldingRangeParams(text_document=doc)):
        kind = getattr(f.kind, "value", f.kind) or "region"
        print(f"  lines {f.start_line + 1}-{f.end_line + 1} ({kind}) {f.collapsed_text or ''}")
    print()
    regions = await client.protocol.send_request_async(
        "hlo/inlineRegions", {"textDocument": {"uri": uri}})
    header(f"in-line regions an editor hides ({len(regions)})")
    for r in list(regions)[:4]:
        rng, kind = (r["range"], r["kind"]) if isinstance(r, dict) else (r.range, r.kind)
        start = rng["start"] if isinstance(rng, dict) else rng.start
        line = start["line"] if isinstance(start, dict) else start.line
        print(f"  line {line + 1}: {kind}")
    print()
    try:
        await asyncio.wait_for(published.wait(), 30)
    except asyncio.TimeoutError:
        pass
    await asyncio.sleep(0.5)  # XLA's own verdict may follow ours
    header("diagnostics")
    diags = diagnostics.get(uri, [])
    if not diags:
        from hlo_lsp.syntax.xla import available
        print("  none: the file parses" + (", and XLA's own parser agrees" if available()
                                           else " (install hlo-lsp[jax] for XLA's verdict)"))
    for d in diags:
        print(f"  {d.range.start.line + 1}:{d.range.start.character + 1} "
              f"[{d.source}] {d.message}")
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return 0


def _print_symbol(sym: types.DocumentSymbol, depth: int, limit: int = 8) -> None:
    print("  " * depth + f"{sym.kind.name.lower()} {sym.name}" +
          (f"  {sym.detail}" if sym.detail else ""))
    children = sym.children or []
    for child in children[:limit]:
        _print_symbol(child, depth + 1, limit)
    if len(children) > limit:
        print("  " * (depth + 1) + f"... {len(children) - limit} more")


def run_demo(file: str | None = None) -> int:
    """Run the demo on ``file`` (default: the bundled FP8 GPU dump)."""
    path = pathlib.Path(file).resolve() if file else default_dump()
    if not path.is_file():
        print(f"hlo-lsp demo: no such file: {path}", file=sys.stderr)
        return 2
    return asyncio.run(_demo(path))
