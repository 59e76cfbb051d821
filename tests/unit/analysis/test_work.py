"""The work queue: one thread, interactive answers before reports, arrival order within each."""

from __future__ import annotations

import asyncio
import gc
import threading
import weakref
from concurrent.futures import CancelledError, ThreadPoolExecutor

import pytest

from hlo_lsp.analysis.work import INTERACTIVE, REPORT, WorkQueue, submit


def _blocked(queue: WorkQueue) -> threading.Event:
    """Occupy the queue's thread until the returned event is set."""
    release, running = threading.Event(), threading.Event()

    def hold() -> None:
        running.set()
        release.wait(10)

    queue.submit(hold)
    assert running.wait(10)
    return release


def test_interactive_calls_run_before_reports_queued_earlier():
    queue = WorkQueue("test")
    ran: list[str] = []
    release = _blocked(queue)
    futures = [queue.submit_at(REPORT, ran.append, "summary"),
               queue.submit_at(REPORT, ran.append, "comparison"),
               queue.submit_at(INTERACTIVE, ran.append, "outline"),
               queue.submit(ran.append, "tokens")]
    release.set()
    for f in futures:
        f.result(10)
    assert ran == ["outline", "tokens", "summary", "comparison"]
    queue.shutdown()


def test_one_thread_runs_the_calls_one_at_a_time():
    queue = WorkQueue("test")
    threads, inside, most = set(), [0], [0]
    lock = threading.Lock()

    def call() -> None:
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        threads.add(threading.current_thread().name)
        with lock:
            inside[0] -= 1

    for f in [queue.submit_at(i % 2, call) for i in range(50)]:
        f.result(10)
    assert threads == {"test_0"} and most[0] == 1
    queue.shutdown()


def test_cancelled_calls_never_run_and_errors_reach_the_caller():
    queue = WorkQueue("test")
    ran: list[int] = []
    release = _blocked(queue)
    cancelled = queue.submit(ran.append, 1)
    assert cancelled.cancel()
    failing = queue.submit(lambda: 1 / 0)
    after = queue.submit(ran.append, 2)
    release.set()
    with pytest.raises(ZeroDivisionError):
        failing.result(10)
    after.result(10)
    assert ran == [2]
    with pytest.raises(CancelledError):
        cancelled.result(0)
    queue.shutdown()


def test_shutdown_cancels_the_queued_calls_and_refuses_new_ones():
    queue = WorkQueue("test")
    release = _blocked(queue)
    queued = queue.submit_at(REPORT, lambda: "never")
    assert queue.queued() == 1
    queue.shutdown(wait=False, cancel_futures=True)
    assert queued.cancelled()
    release.set()
    queue.shutdown(wait=True)
    with pytest.raises(RuntimeError):
        queue.submit(lambda: None)


def test_the_thread_keeps_no_call_arguments_once_done():
    """A call's arguments may be a whole model: the idle thread must not hold
    the last one."""

    class Model:
        pass

    queue = WorkQueue("test")
    model = Model()
    gone = weakref.ref(model)
    assert queue.submit(id, model).result(10) == id(model)
    del model
    gc.collect()
    assert gone() is None
    queue.shutdown()


def test_asyncio_awaits_the_queue_and_other_executors_keep_their_order():
    async def main() -> list:
        queue = WorkQueue("test")
        with ThreadPoolExecutor(1) as pool:
            results = await asyncio.gather(
                asyncio.wrap_future(submit(queue, REPORT, sum, [1, 2])),
                asyncio.wrap_future(submit(pool, REPORT, sum, [3, 4])))
        queue.shutdown()
        return results

    assert asyncio.run(main()) == [3, 7]
