"""The queue of whole-document answers: one thread, what the editor asks by itself first.

A whole-document answer on a dump of megabytes is work of a tenth of a second
to a second (an outline, semantic tokens, inlay hints; a kernel summary, a
comparison, a readable view). Threads share one interpreter lock, so running
such answers side by side only makes each finish when the last does; they run
one at a time in one thread (:class:`WorkQueue`).

In which order: the answers the editor asks for by itself when a document
opens or scrolls (:data:`INTERACTIVE`: outline, folding, semantic tokens,
inlay hints, code lens, links) before the reports the user asked for by a
command (:data:`REPORT`: ``hlo.showSummary``, ``hlo.compareDumps``,
``hlo.readableView``, the graph and memory views), each priority in arrival
order. Sent together with the didOpen of a 3 MB dump, a summary and a
comparison (about 1 s of work) no longer hold back the outline and the
semantic tokens the editor needs to show the text.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, TypeVar

T = TypeVar("T")

#: What an editor asks for by itself (outline, folding, tokens, inlay hints,
#: code lens, links): runs first.
INTERACTIVE = 0
#: A report the user asked for by a command (summary, comparison, readable
#: view, graph, memory): runs when no interactive answer waits.
REPORT = 1


class WorkQueue(Executor):
    """An executor of one thread (named ``name``, started on first use) that
    runs its calls one at a time: the lowest priority first, calls of one
    priority in the order they were submitted. ``submit`` queues at
    :data:`INTERACTIVE`; :meth:`submit_at` at any priority (an int).

    As with ``ThreadPoolExecutor``: a call whose future was cancelled before it
    started never runs; an exception of a call is its future's; ``submit``
    after :meth:`shutdown` raises RuntimeError. The thread holds no call's
    arguments or result once it is done with it (a call's arguments may be a
    document's model of hundreds of megabytes)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._queue: list[tuple[int, int, Future, Callable, tuple, dict]] = []
        self._order = itertools.count()
        self._ready = threading.Condition()
        self._shut = False
        self._thread: threading.Thread | None = None

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        """``fn(*args, **kwargs)`` at :data:`INTERACTIVE` priority."""
        return self.submit_at(INTERACTIVE, fn, *args, **kwargs)

    def submit_at(self, priority: int, fn: Callable[..., Any], /, *args: Any,
                  **kwargs: Any) -> Future:
        """``fn(*args, **kwargs)`` after every queued call of a lower
        ``priority`` and of the same priority submitted before it."""
        future: Future = Future()
        with self._ready:
            if self._shut:
                raise RuntimeError("cannot schedule new futures after shutdown")
            heapq.heappush(self._queue, (priority, next(self._order), future, fn, args, kwargs))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"{self._name}_0",
                                                daemon=True)
                self._thread.start()
            self._ready.notify()
        return future

    def queued(self) -> int:
        """The calls waiting to start."""
        with self._ready:
            return len(self._queue)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """No more calls; with ``cancel_futures`` the queued ones are cancelled,
        else they still run. ``wait``: return when the thread is done."""
        with self._ready:
            self._shut = True
            if cancel_futures:
                for entry in self._queue:
                    entry[2].cancel()
                self._queue.clear()
            self._ready.notify_all()
            thread = self._thread
        if wait and thread is not None and thread is not threading.current_thread():
            thread.join()

    def _run(self) -> None:
        while True:
            with self._ready:
                while not self._queue and not self._shut:
                    self._ready.wait()
                if not self._queue:
                    return
                _, _, future, fn, args, kwargs = heapq.heappop(self._queue)
            if future.set_running_or_notify_cancel():
                try:
                    result = fn(*args, **kwargs)
                except BaseException as exc:  # noqa: BLE001 - the caller's, as in ThreadPoolExecutor
                    future.set_exception(exc)
                else:
                    future.set_result(result)
                    del result
            del future, fn, args, kwargs


def submit(executor: Executor, priority: int, fn: Callable[..., Any], *args: Any) -> Future:
    """``fn(*args)`` on ``executor``: at ``priority`` on a :class:`WorkQueue`,
    in its own order on any other executor (a test's thread pool)."""
    if isinstance(executor, WorkQueue):
        return executor.submit_at(priority, fn, *args)
    return executor.submit(fn, *args)


async def in_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` off the event loop, in asyncio's default thread
    pool: the short blocking calls of an answer (a file of the dump directory
    read, a report parsed, counterparts matched, a recipe read). The handlers
    of :mod:`hlo_lsp.lsp.handlers` choose no thread themselves; they call this,
    :func:`in_pool` or the work queue (``tests/unit/test_layers.py`` checks)."""
    return await asyncio.to_thread(fn, *args, **kwargs)


async def in_pool(pool: Executor, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in ``pool`` (the server's parse pool for an analysis of a
    file that is not open, for instance), awaited from the event loop."""
    return await asyncio.get_running_loop().run_in_executor(pool, fn, *args)
