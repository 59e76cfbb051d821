"""The server factory registers every feature whatever was imported first (the
handler modules never import the server module; nothing is discovered, and a
registration error is not swallowed)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hlo_lsp.lsp.server import HANDLERS, create_server
from tests.helpers import ROOT

EXPECTED_FEATURES = {
    "initialize", "initialized", "shutdown", "textDocument/didOpen", "textDocument/didChange",
    "textDocument/didClose", "textDocument/hover", "textDocument/definition",
    "textDocument/references", "textDocument/documentSymbol", "textDocument/foldingRange",
    "textDocument/inlayHint", "textDocument/semanticTokens/full",
    "textDocument/semanticTokens/range", "textDocument/codeLens", "textDocument/codeAction",
    "textDocument/documentLink", "workspace/symbol", "workspace/didChangeWatchedFiles",
    "workspace/didChangeWorkspaceFolders", "hlo/inlineRegions", "hlo/counterpart",
    "hlo/counterpartFiles", "hlo/workspaceStatus", "hlo/graph", "hlo/memory",
    "hlo/profileRuns"}
EXPECTED_FEATURES |= {"hlo/passHistory", "hlo/passBlame"}
EXPECTED_COMMANDS = {"hlo.showSummary", "hlo.readableView", "hlo.compareDumps",
                     "hlo.gotoCounterpart", "hlo.recompile", "hlo.loadProfile"}

_PROBE = """
import importlib, json, sys
importlib.import_module(sys.argv[1])
from hlo_lsp.lsp.server import create_server
s = create_server()
print(json.dumps([sorted(s.protocol.fm.features), sorted(s.protocol.fm.commands)]))
"""


def test_create_server_registers_every_feature():
    server = create_server()
    assert set(server.protocol.fm.features) == EXPECTED_FEATURES
    assert set(server.protocol.fm.commands) == EXPECTED_COMMANDS


@pytest.mark.parametrize("first", [m.__name__ for m in HANDLERS] +
                         ["hlo_lsp.lsp.handlers.reports", "hlo_lsp.lsp.protocol"])
def test_importing_a_handler_module_first_still_registers_everything(first):
    out = subprocess.run([sys.executable, "-c", _PROBE, first], cwd=ROOT, check=True,
                         capture_output=True, text=True, timeout=120).stdout
    features, commands = json.loads(out.strip().splitlines()[-1])
    assert set(features) == EXPECTED_FEATURES and set(commands) == EXPECTED_COMMANDS


def test_a_failing_registration_is_not_swallowed(monkeypatch):
    from hlo_lsp.lsp.handlers import readable

    def broken(server):
        raise RuntimeError("broken handler module")

    monkeypatch.setattr(readable, "register", broken)
    with pytest.raises(RuntimeError, match="broken handler module"):
        create_server()
