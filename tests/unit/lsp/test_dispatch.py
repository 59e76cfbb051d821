"""The dispatch table (hlo_lsp.lsp.dispatch): every method and command the
server registers has its row (thread, priority, answer on failure), every row
is registered, and a method without a row is refused."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types

from hlo_lsp.analysis.work import INTERACTIVE, REPORT
from hlo_lsp.lsp.dispatch import ROUTES, UNGUARDED, route, unrouted
from hlo_lsp.lsp.server import create_server


def test_every_registered_method_has_a_row_and_every_row_is_registered():
    server = create_server()
    fm = server.protocol.fm
    registered = set(fm.features) | set(fm.commands)
    assert unrouted(server) == []
    assert set(ROUTES) == registered
    for name in fm.commands:
        assert ROUTES[name].kind == "command", name
    for name in fm.features:
        assert ROUTES[name].kind != "command", name


def test_rows_are_coherent():
    for row in ROUTES.values():
        assert row.thread in {"loop", "work", "thread", "process"}, row
        # a priority orders the work queue only
        assert (row.priority is not None) == (row.thread == "work"), row
        assert row.priority in {None, INTERACTIVE, REPORT}, row
        if row.kind == "notification":
            assert row.on_failure is UNGUARDED, row


def test_a_method_without_a_row_is_refused():
    server = create_server()
    with pytest.raises(KeyError):
        route(server, "hlo/noSuchRequest")

    @server.feature("hlo/unlisted")
    async def unlisted(ls, params):
        return None

    assert unrouted(server) == ["hlo/unlisted"]


def test_a_routed_handler_answers_its_rows_failure(monkeypatch):
    server = create_server()

    def broken():
        raise RuntimeError("the analysis failed")

    monkeypatch.setattr(server.host, "snapshot", broken)
    handler = server.protocol.fm.features["textDocument/references"]
    params = types.ReferenceParams(
        text_document=types.TextDocumentIdentifier(uri="file:///nowhere/m.hlo"),
        position=types.Position(line=0, character=0),
        context=types.ReferenceContext(include_declaration=True))
    got = asyncio.run(handler(server, params))
    assert got == [] and got is not ROUTES["textDocument/references"].on_failure
