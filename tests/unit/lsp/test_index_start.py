"""Workspace indexing waits for the opened documents' analyses
(hlo_lsp.lsp.handlers.workspace._documents_settled)."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

from hlo_lsp.lsp.handlers.workspace import _documents_settled


class _Store:
    def __init__(self, busy_for: float) -> None:
        self.until = time.monotonic() + busy_for

    def analysing(self) -> bool:
        return time.monotonic() < self.until


def _wait(busy_for: float, quiet: float, limit: float) -> float:
    ls = SimpleNamespace(store=_Store(busy_for))
    t0 = time.monotonic()
    asyncio.run(_documents_settled(ls, quiet, limit))
    return time.monotonic() - t0


def test_indexing_starts_once_analyses_have_been_quiet():
    waited = _wait(busy_for=0.4, quiet=0.2, limit=5.0)
    assert 0.5 <= waited < 1.5     # busy until 0.4 s, polled every 50 ms


def test_indexing_starts_at_the_limit_however_busy_the_documents():
    waited = _wait(busy_for=60.0, quiet=0.2, limit=0.5)
    assert 0.5 <= waited < 1.5


def test_with_nothing_open_indexing_waits_only_the_quiet_time():
    waited = _wait(busy_for=0.0, quiet=0.2, limit=5.0)
    assert 0.15 <= waited < 0.8
