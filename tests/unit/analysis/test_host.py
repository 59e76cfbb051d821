"""The analysis host's snapshot (hlo_lsp.analysis.host), without a server or
pygls, in the style of rust-analyzer's ``check(fixture, expect)``: the fixture
is HLO text with ``$0`` at the cursor; the expectation is what the editor would
be shown (the text of each place, the outline's names, the folded lines)."""

from __future__ import annotations

import asyncio

import pytest

from hlo_lsp.analysis.host import AnalysisHost, ContentModified
from hlo_lsp.analysis.inputs import HoverInputs

from tests.helpers import cursor

URI = "file:///nowhere/module.hlo"

FIXTURE = """\
HloModule m, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

ENTRY main {
  p = f32[4]{0} parameter(0)
  n = f32[4]{0} negate(p$0)
  ROOT a = f32[4]{0} add(p, n)
}
"""

NO_INPUTS = HoverInputs(None, None, [], [], None)


def ask(fixture: str, question):
    """``await question(snapshot, line, character)`` on a host with the fixture
    opened and analysed; (text, answer)."""
    text, line, character = cursor(fixture)

    async def run():
        host = AnalysisHost(lambda uri: None)
        try:
            host.store.open(URI, 1, text)
            await host.store.analysis(URI)
            return await question(host.snapshot(), line, character)
        finally:
            host.close()

    return text, asyncio.run(run())


def check_places(fixture: str, question, expected: list[str]) -> None:
    text, got = ask(fixture, question)
    assert [text[p.start:p.end] for p in got] == expected


async def _no_memory(analysis):
    return None


def test_hover_through_the_snapshot():
    text, got = ask(FIXTURE, lambda s, line, ch: s.hover(URI, line, ch, NO_INPUTS, _no_memory))
    assert text[got.start:got.end] == "p"
    assert "f32[4]" in got.markdown


def test_definition_through_the_snapshot():
    check_places(FIXTURE, lambda s, line, ch: s.definition(URI, line, ch, []), ["p"])


def test_references_with_and_without_the_declaration():
    check_places(FIXTURE, lambda s, line, ch: s.references(URI, line, ch, True),
                 ["p", "p", "p"])
    check_places(FIXTURE, lambda s, line, ch: s.references(URI, line, ch, False),
                 ["p", "p"])


def test_references_of_an_unknown_document_are_empty():
    _, got = ask(FIXTURE, lambda s, line, ch: s.references("file:///closed.hlo", 0, 0, True))
    assert got == []


def test_symbols_are_encoded_by_the_callers_function_once_per_analysis():
    calls = []

    def names(symbols, lines):
        calls.append(1)
        return [(s.kind, s.name, [c.name for c in s.children]) for s in symbols]

    async def twice(s, line, ch):
        return await s.symbols(URI, names), await s.symbols(URI, names)

    _, (first, second) = ask(FIXTURE, twice)
    assert first == second
    assert any("main" == name for _, name, _ in first) or \
        any("main" in children for _, _, children in first), first
    assert len(calls) == 1


def test_folding_gives_the_computations_lines():
    _, got = ask(FIXTURE, lambda s, line, ch: s.folding(
        URI, lambda folds, lines: [(f.start_line, f.end_line) for f in folds]))
    assert (2, 6) in got or (2, 5) in got, got


def test_inline_regions_are_the_metadata_and_backend_configs_encoded_once():
    fixture = FIXTURE.replace(
        "negate(p$0)", 'negate(p$0), metadata={op_name="jit(f)/neg"}').replace(
        "add(p, n)", 'add(p, n), backend_config={"k":1}')
    calls = []

    def texts(regions, lines):
        calls.append(1)
        return [(r.kind, lines.text[r.start:r.end]) for r in regions]

    async def twice(s, line, ch):
        return await s.inline_regions(URI, texts), await s.inline_regions(URI, texts)

    _, (first, second) = ask(fixture, twice)
    assert first == second == [("metadata", ', metadata={op_name="jit(f)/neg"}'),
                               ("backend_config", ', backend_config={"k":1}')]
    assert len(calls) == 1


def test_whole_document_answers_of_an_unknown_document_are_none():
    _, got = ask(FIXTURE, lambda s, line, ch: s.folding("file:///closed.hlo",
                                                        lambda f, l: f))
    assert got is None


def test_an_edit_during_a_question_is_content_modified():
    text, line, character = cursor(FIXTURE)

    async def run():
        host = AnalysisHost(lambda uri: None)
        try:
            host.store.open(URI, 1, text)
            await host.store.analysis(URI)
            token = host.store.track_reads(URI)
            try:
                await host.snapshot().references(URI, line, character, True)
                host.store.replace(URI, 2, text + "\n")
                host.store.check_current()
            finally:
                host.store.untrack(token)
        finally:
            host.close()

    with pytest.raises(ContentModified):
        asyncio.run(run())


def test_hover_inputs_are_read_together_so_a_first_hover_waits_for_the_slowest():
    # A first hover on a dump with a profile and pass snapshots waited for the
    # profile's first read (up to 2 s) and then for the pass history's (up to 1 s).
    # Now each input's wait starts at once: the later ones start before the
    # profile's read ends.
    events: list[str] = []

    async def slow(name: str, value=None):
        events.append(f"{name} start")
        await asyncio.sleep(0.05)
        events.append(f"{name} end")
        return value

    async def run():
        host = AnalysisHost(lambda uri: None)
        try:
            host.profiles.for_file = lambda path, setting: slow("profile")
            host.passes.for_hover = lambda path: slow("passes")
            host.inputs.fusion_dump = lambda path: slow("fusion")
            got = await host.hover_inputs("/nowhere/module_0001.m.cpu_after_optimizations.txt",
                                          slow("source dirs", ["/d"]), ["/r"], "h100", "")
        finally:
            host.close()
        return got

    got = asyncio.run(run())
    assert (got.source_dirs, got.source_roots, got.device) == (["/d"], ["/r"], "h100")
    assert got.profile is None and got.passes is None and got.fusion is None
    first_end = events.index(next(e for e in events if e.endswith(" end")))
    assert {"profile start", "passes start", "fusion start", "source dirs start"} <= \
        set(events[:first_end]), events
