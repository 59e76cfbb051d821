"""Whole-document work, one computation at a time, the oldest request's first.

The answers that cover a whole document (the outline, inlay hints, semantic
tokens, the kernel summary and its costs, comparisons, readable views, graphs)
are computed off the event loop. Threads share one interpreter lock, so two such
computations side by side both finish when the later would have finished alone:
they run one at a time (:class:`OldestRequestFirst`).

In which order? A request is often several computations, each awaited before the
next is asked for (``hlo.showSummary``: the kernel summary, the kernels' costs,
the folded report, the memory timeline). In arrival order of the computations,
every request that arrived meanwhile slips its own between them, and the first
request finishes only when the last does: on a 3 MB dump, the batch an editor
sends with ``didOpen`` (outline, tokens, inlay hints, summary, comparison) all
answered after about the sum of their work. Ordered by the age of the request
that asked, each request finishes as soon as its own work and that of the
requests before it are done, as a queue at a counter serves one customer to the
end before the next.

The age is the number :func:`begin_request` gives each request as it arrives
(:func:`hlo_lsp.lsp.requests.guarded` calls it); it lives in a context variable,
so that the tasks a request starts (a derived value that other requests then
wait for too) carry it. Work asked for outside any request is as old as the
moment it is asked.

Between two pieces of one request the event loop has to resume the request to
ask for the next: the worker keeps itself for that request while it runs
(until :func:`end_request`), at most :data:`HOLD_S` per gap, so that a younger
request's piece does not slip in.
"""

from __future__ import annotations

import contextvars
import heapq
import itertools
import threading
import weakref
from concurrent.futures import Executor, Future
from typing import Any, Callable

#: Longest the worker waits, between two pieces of a running request, for the
#: next (seconds): the event loop's turn from one piece's end to the next one's
#: submission, a millisecond when it is idle, tens when it encodes an answer.
HOLD_S = 0.03

#: Numbers requests and outside work in arrival order (``next`` is atomic in CPython).
_arrivals = itertools.count()
#: The arrival number of the request the current task works for.
_request_age: contextvars.ContextVar[int] = contextvars.ContextVar("hlo_lsp_request_age")
#: The ages of the requests being handled.
_running: set[int] = set()
_executors: "weakref.WeakSet[OldestRequestFirst]" = weakref.WeakSet()


def begin_request() -> contextvars.Token:
    """Number the request the current task handles (its age: lower is older).
    Returns the token that :func:`end_request` takes."""
    age = next(_arrivals)
    _running.add(age)
    return _request_age.set(age)


def end_request(token: contextvars.Token) -> None:
    """The request :func:`begin_request` numbered is answered: forget its
    number, and let the workers that kept themselves for it go on."""
    age = _request_age.get()
    _request_age.reset(token)
    _running.discard(age)
    for executor in list(_executors):
        executor.wake()


def request_age() -> int:
    """The age of the current request; outside any, a new number (the work is
    as old as this moment)."""
    age = _request_age.get(None)
    return next(_arrivals) if age is None else age


class OldestRequestFirst(Executor):
    """An executor of one worker thread that runs, of the work submitted and
    not yet started, the piece of the oldest request (:func:`request_age` at
    :meth:`submit`; ties in submission order); after a piece of a request that
    is still running, younger pieces wait up to :data:`HOLD_S` for its next.
    Work that has started runs to its end. ``shutdown(cancel_futures=True)``
    cancels what has not started.
    """

    def __init__(self, thread_name: str = "work") -> None:
        self._heap: list[tuple[int, int, Future, Callable[..., Any], tuple, dict]] = []
        self._seq = itertools.count()
        self._ready = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=thread_name, daemon=True)
        self._thread.start()
        _executors.add(self)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        """Queue ``fn(*args, **kwargs)`` under the current request's age; its future.
        Raises RuntimeError after :meth:`shutdown`."""
        future: Future = Future()
        with self._ready:
            if self._closed:
                raise RuntimeError("cannot schedule new work after shutdown")
            heapq.heappush(self._heap, (request_age(), next(self._seq), future, fn, args,
                                        kwargs))
            self._ready.notify()
        return future

    def pending(self) -> int:
        """How many pieces of work wait (not started)."""
        with self._ready:
            return len(self._heap)

    def wake(self) -> None:
        """Look at the queue again (a request ended)."""
        with self._ready:
            self._ready.notify_all()

    def _run(self) -> None:
        last = -1   # the age of the piece that ran last
        while True:
            with self._ready:
                while not self._heap and not self._closed:
                    self._ready.wait()
                if (self._heap and self._heap[0][0] > last and last in _running
                        and not self._closed):
                    # the request of the last piece runs on: keep the worker for
                    # its next piece, while the event loop lets it ask
                    self._ready.wait_for(lambda: last not in _running or self._closed
                                         or not self._heap or self._heap[0][0] <= last,
                                         HOLD_S)
                if not self._heap:
                    return  # closed and drained
                last, _, future, fn, args, kwargs = heapq.heappop(self._heap)
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:  # noqa: BLE001 - handed to the awaiting request
                future.set_exception(exc)
            else:
                future.set_result(result)
                del result
            # nothing of the finished piece stays referenced by this frame
            del future, fn, args, kwargs

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Accept no more work; with ``cancel_futures`` cancel what has not
        started; with ``wait`` wait until the worker has finished the rest."""
        with self._ready:
            self._closed = True
            if cancel_futures:
                for _, _, future, *_ in self._heap:
                    future.cancel()
                self._heap.clear()
            self._ready.notify_all()
        if wait and self._thread is not threading.current_thread():
            self._thread.join()
