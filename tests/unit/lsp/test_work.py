"""The work pool: one piece at a time, the oldest request's first."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import pytest

from hlo_lsp.lsp import work
from hlo_lsp.lsp.work import OldestRequestFirst, begin_request, end_request


def _in_request():
    """A context in which a request has begun (numbered now), and its token."""
    ctx = contextvars.copy_context()
    token = ctx.run(begin_request)
    return ctx, token


def test_the_oldest_requests_piece_runs_first_whatever_the_order_of_submission():
    pool = OldestRequestFirst()
    gate = threading.Event()
    ran: list[str] = []
    try:
        blocker = pool.submit(gate.wait)      # the worker is busy meanwhile
        old, old_token = _in_request()
        young, young_token = _in_request()
        futures = [young.run(pool.submit, ran.append, "young"),
                   old.run(pool.submit, ran.append, "old 1"),
                   young.run(pool.submit, ran.append, "young 2"),
                   old.run(pool.submit, ran.append, "old 2")]
        gate.set()
        for f in [blocker, *futures]:
            f.result(5)
        assert ran == ["old 1", "old 2", "young", "young 2"]
    finally:
        old.run(end_request, old_token)
        young.run(end_request, young_token)
        pool.shutdown()


def test_a_running_request_keeps_the_worker_between_its_pieces():
    """A request asks for its next piece only after the last one's answer
    reached it: the younger piece already queued waits (up to HOLD_S), and the
    request's pieces run back to back; once the request is answered the
    younger one runs at once."""
    pool = OldestRequestFirst()
    ran: list[str] = []
    old, old_token = _in_request()
    young, young_token = _in_request()
    try:
        first = old.run(pool.submit, ran.append, "old 1")
        first.result(5)
        young_piece = young.run(pool.submit, ran.append, "young")
        time.sleep(work.HOLD_S / 3)   # the request's turn: it asks for its next piece
        old.run(pool.submit, ran.append, "old 2").result(5)
        old.run(end_request, old_token)
        t0 = time.perf_counter()
        young_piece.result(5)
        assert ran == ["old 1", "old 2", "young"]
        assert time.perf_counter() - t0 < work.HOLD_S / 2 + 0.05
    finally:
        young.run(end_request, young_token)
        pool.shutdown()


def test_a_request_that_asks_for_nothing_more_holds_the_worker_at_most_hold_s():
    pool = OldestRequestFirst()
    old, old_token = _in_request()
    young, young_token = _in_request()
    try:
        old.run(pool.submit, time.sleep, 0).result(5)
        t0 = time.perf_counter()
        young.run(pool.submit, time.sleep, 0).result(5)
        assert time.perf_counter() - t0 < work.HOLD_S + 0.2
    finally:
        old.run(end_request, old_token)
        young.run(end_request, young_token)
        pool.shutdown()


def test_work_outside_requests_runs_in_submission_order_and_errors_reach_the_caller():
    pool = OldestRequestFirst()
    gate = threading.Event()
    ran: list[int] = []
    try:
        pool.submit(gate.wait)
        futures = [pool.submit(ran.append, i) for i in range(5)]
        failing = pool.submit(lambda: 1 / 0)
        cancelled = pool.submit(ran.append, 99)
        assert cancelled.cancel()
        gate.set()
        for f in futures:
            f.result(5)
        with pytest.raises(ZeroDivisionError):
            failing.result(5)
        pool.submit(time.sleep, 0).result(5)
        assert ran == [0, 1, 2, 3, 4]
    finally:
        pool.shutdown()


def test_shutdown_cancels_what_has_not_started_and_refuses_more():
    pool = OldestRequestFirst()
    gate, started = threading.Event(), threading.Event()
    running = pool.submit(lambda: started.set() or gate.wait())
    assert started.wait(5)
    waiting = pool.submit(time.sleep, 0)
    pool.shutdown(wait=False, cancel_futures=True)
    assert waiting.cancelled()
    gate.set()
    assert running.result(5) is True
    with pytest.raises(RuntimeError):
        pool.submit(time.sleep, 0)
    pool._thread.join(5)
    assert not pool._thread.is_alive()


def test_asyncio_requests_share_the_pool_through_run_in_executor():
    """As the server uses it: each request a task that began its own number;
    the older request's two awaited pieces both run before the younger's one,
    though the younger asked between them."""
    pool = OldestRequestFirst()
    ran: list[str] = []

    async def request(name: str, pieces: int, delay: float) -> None:
        token = begin_request()
        try:
            await asyncio.sleep(delay)
            loop = asyncio.get_running_loop()
            for i in range(pieces):
                await loop.run_in_executor(pool, _busy, ran, f"{name} {i}")
        finally:
            end_request(token)

    async def drive() -> None:
        old = asyncio.create_task(request("old", 2, 0))
        await asyncio.sleep(0)
        young = asyncio.create_task(request("young", 1, 0.01))
        await asyncio.gather(old, young)

    try:
        asyncio.run(drive())
    finally:
        pool.shutdown()
    assert ran == ["old 0", "old 1", "young 0"]


def _busy(ran: list[str], name: str) -> None:
    end = time.perf_counter() + 0.05
    while time.perf_counter() < end:
        pass
    ran.append(name)
