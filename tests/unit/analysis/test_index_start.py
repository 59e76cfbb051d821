"""Workspace indexing waits for the opened documents' analyses
(hlo_lsp.analysis.workspace.documents_settled).

The wait runs on a clock of its own (:class:`_Clock`: the event loop's time and
``asyncio.sleep`` advance it, nothing else does), so the tests check what the
wait decides at each poll, not how long a busy machine took to get there."""

from __future__ import annotations

import asyncio

import pytest

from hlo_lsp.analysis import workspace
from hlo_lsp.analysis.workspace import documents_settled

POLL_S = 0.05   # documents_settled looks at the store every 50 ms


class _Clock:
    """Virtual seconds: ``sleep(d)`` moves them on by ``d`` at once."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps = 0

    def time(self) -> float:
        return self.now

    async def sleep(self, delay: float, result=None):
        self.now += delay
        self.sleeps += 1
        await _REAL_SLEEP(0)
        return result


_REAL_SLEEP = asyncio.sleep


class _Store:
    """Analysing until virtual time ``busy_until``; notes when it was asked."""

    def __init__(self, clock: _Clock, busy_until: float) -> None:
        self.clock, self.busy_until = clock, busy_until
        self.asked: list[float] = []

    def analysing(self) -> bool:
        self.asked.append(self.clock.now)
        return self.clock.now < self.busy_until


def _wait(monkeypatch, busy_until: float, quiet: float, limit: float) -> tuple[float, _Store]:
    """When (virtual seconds) the wait returned, and the store it asked."""
    clock = _Clock()
    store = _Store(clock, busy_until)
    monkeypatch.setattr(workspace.asyncio, "sleep", clock.sleep)

    async def run() -> float:
        asyncio.get_running_loop().time = clock.time
        await documents_settled(store, quiet, limit)
        return clock.now

    return asyncio.run(run()), store


def test_indexing_starts_once_analyses_have_been_quiet(monkeypatch):
    returned, store = _wait(monkeypatch, busy_until=0.4, quiet=0.2, limit=5.0)
    # busy at each poll before 0.4 s, then quiet for 0.2 s: the poll at 0.6 s returns
    last_busy = max(t for t in store.asked if t < 0.4)
    assert returned == pytest.approx(last_busy + 0.2, abs=POLL_S + 1e-9)
    assert 0.6 - 1e-9 <= returned <= 0.6 + POLL_S + 1e-9
    assert all(b - a == pytest.approx(POLL_S) for a, b in zip(store.asked, store.asked[1:]))


def test_indexing_starts_at_the_limit_however_busy_the_documents(monkeypatch):
    returned, store = _wait(monkeypatch, busy_until=60.0, quiet=0.2, limit=0.5)
    assert 0.5 - 1e-9 <= returned <= 0.5 + POLL_S + 1e-9  # the first poll past the limit
    assert all(t < 60.0 for t in store.asked)   # busy at every poll: the limit ended it


def test_with_nothing_open_indexing_waits_only_the_quiet_time(monkeypatch):
    returned, store = _wait(monkeypatch, busy_until=0.0, quiet=0.2, limit=5.0)
    assert 0.2 - 1e-9 <= returned <= 0.2 + POLL_S + 1e-9  # the first poll quiet for 0.2 s
    assert all(t < 0.2 + POLL_S for t in store.asked)
