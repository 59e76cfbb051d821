"""Hover and definition from the analysis layer (hlo_lsp.analysis.answers),
without a server or pygls, in the style of rust-analyzer's ``check(fixture,
expect)``: the fixture is HLO text with ``$0`` at the cursor; the expectation
is what the editor would be shown (the hovered text and a line of the hover, or
the text of each definition)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from hlo_lsp.analysis.answers import Placed, definition_at, hover_at
from hlo_lsp.analysis.documents import DocumentStore
from hlo_lsp.analysis.inputs import DumpInputs, HoverInputs

from tests.helpers import cursor

URI = "file:///nowhere/module.hlo"

FIXTURE = """\
HloModule m, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

ENTRY main {
  p = f32[4]{0} parameter(0)
  ROOT n = f32[4]{0} negate(p$0)
}
"""

NO_INPUTS = HoverInputs(None, None, [], [], None)


async def _memory(analysis):
    return None


def _store() -> DocumentStore:
    return DocumentStore(lambda uri: None, ThreadPoolExecutor(max_workers=1))


def check_hover(fixture: str, hovered: str, line_in_hover: str,
                settle: bool = True) -> None:
    text, line, character = cursor(fixture)

    async def run():
        store = _store()
        store.open(URI, 1, text)
        if settle:
            await store.analysis(URI)
        return await hover_at(store, URI, line, character, NO_INPUTS,
                              ThreadPoolExecutor(max_workers=1), _memory)

    got = asyncio.run(run())
    assert isinstance(got, Placed)
    assert text[got.start:got.end] == hovered
    assert line_in_hover in got.markdown, got.markdown


def check_definition(fixture: str, expected: list[str]) -> None:
    text, line, character = cursor(fixture)

    async def run():
        store = _store()
        store.open(URI, 1, text)
        await store.analysis(URI)
        return await definition_at(store, URI, line, character, [])

    got = asyncio.run(run())
    assert [text[p.start:p.end] for p in got if isinstance(p, Placed)] == expected


def test_hover_of_an_operand_from_the_finished_analysis():
    check_hover(FIXTURE, "p", "f32[4]")


def test_hover_while_the_document_is_first_analysed():
    # no analysis yet: answered from the computation under the cursor, or from
    # the analysis once it is built, never None
    check_hover(FIXTURE, "p", "f32[4]", settle=False)


def test_hover_of_nothing_is_none():
    text, line, character = cursor(FIXTURE.replace("ENTRY main {", "ENTRY main {$0", 1)
                                     .replace("p$0)", "p)", 1))

    async def run():
        store = _store()
        store.open(URI, 1, text)
        await store.analysis(URI)
        return await hover_at(store, URI, line, len("ENTRY main {"), NO_INPUTS,
                              ThreadPoolExecutor(max_workers=1), _memory)

    assert asyncio.run(run()) is None


def test_definition_of_an_operand():
    check_definition(FIXTURE, ["p"])


def test_definition_of_an_unknown_document_is_empty():
    async def run():
        return await definition_at(_store(), "file:///closed.hlo", 0, 0, [])

    assert asyncio.run(run()) == []


def test_dump_inputs_without_a_path_and_forget():
    inputs = DumpInputs()
    assert asyncio.run(inputs.deviceless("")) is None
    inputs.forget("/nowhere/module.hlo")  # nothing read: nothing to drop


def test_the_module_header_hover_says_the_memory_however_early_it_is_asked():
    """The hover of the HloModule line of a dump with XLA's reports beside it
    names the peak memory whether it is asked before the analysis has finished
    (answered from the next model) or after: the same text either way (a hover
    asked at once after didOpen used to leave the memory out)."""
    from hlo_lsp.analysis.host import AnalysisHost
    from hlo_lsp.analysis.work import INTERACTIVE
    from tests.helpers import TRAIN_AFTER, read

    text = read(TRAIN_AFTER)
    uri = TRAIN_AFTER.as_uri()

    async def run():
        host = AnalysisHost(lambda u: str(TRAIN_AFTER) if u == uri else None)
        try:
            snapshot = host.snapshot()

            def memory(analysis):
                return snapshot.memory(analysis, INTERACTIVE)

            host.store.open(uri, 1, text)
            early = await snapshot.hover(uri, 0, 4, NO_INPUTS, memory)
            await host.store.analysis(uri)
            late = await snapshot.hover(uri, 0, 4, NO_INPUTS, memory)
            return early, late
        finally:
            host.close()

    early, late = asyncio.run(run())
    assert late is not None and "peak" in late.markdown.lower(), late
    assert early is not None and early.markdown == late.markdown
