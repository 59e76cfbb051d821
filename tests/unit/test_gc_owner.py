"""The garbage-collector policy lives in the analysis layer alone
(``hlo_lsp/analysis/collector.py``, issue 42): the parser is plain, and whoever
builds big models pauses the collector through its one function."""

from __future__ import annotations

import ast
import gc
import pathlib

import pytest

import hlo_lsp.syntax.parser as parser_module
from hlo_lsp.analysis import documents
from hlo_lsp.cli.main import main
from hlo_lsp.lsp.handlers.workspace import index_of
from hlo_lsp.lsp.settings import WorkspaceSettings
from tests.helpers import ROOT, TRAIN_AFTER, read

PACKAGE = ROOT / "hlo_lsp"
OWNER = PACKAGE / "analysis" / "collector.py"


def _gc_users(path: pathlib.Path) -> list[int]:
    """Lines of ``path`` that import :mod:`gc` (``import gc``, ``from gc import``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return [node.lineno for node in ast.walk(tree)
            if (isinstance(node, ast.Import) and any(a.name == "gc" for a in node.names))
            or (isinstance(node, ast.ImportFrom) and node.module == "gc")]


def test_only_the_collector_module_touches_the_garbage_collector():
    found = {str(p.relative_to(ROOT)): lines for p in sorted(PACKAGE.rglob("*.py"))
             if p != OWNER and (lines := _gc_users(p))}
    assert found == {}, "the GC policy is hlo_lsp/analysis/collector.py's alone"
    assert _gc_users(OWNER)
    assert not (PACKAGE / "syntax" / "gc_policy.py").exists()


@pytest.fixture
def collector_state(monkeypatch):
    """Records whether the collector ran during each parse."""
    seen: list[bool] = []
    real = parser_module.parse

    def parse(text: str, **kwargs):
        seen.append(gc.isenabled())
        return real(text, **kwargs)
    monkeypatch.setattr(parser_module, "parse", parse)
    monkeypatch.setattr(documents, "parse", parse)
    assert gc.isenabled()
    yield seen
    assert gc.isenabled()  # resumed after each pause


def test_the_parser_leaves_the_collector_on_and_its_callers_pause_it(collector_state, capsys):
    """The parser alone does not pause the collector; an analysis
    (:func:`hlo_lsp.analysis.documents.analyze`) and the command line do."""
    text = read(TRAIN_AFTER)
    parser_module.parse("HloModule m\n")
    documents.analyze("file:///m.txt", 1, text[:1000])
    assert main(["check", "-q", str(TRAIN_AFTER)]) == 0
    assert collector_state == [True, False, False]


def test_the_workspace_index_summarises_with_the_collector_paused(collector_state):
    """What the server's index workers run on each chunk of files pauses the
    collector (run here in process: the same function a worker is sent)."""
    index = index_of(WorkspaceSettings())
    try:
        [summary] = index.summarize([str(TRAIN_AFTER)], 1 << 26)
    finally:
        index.close()
    assert not summary.error and summary.computations and not summary.partial
    assert collector_state == [False]
