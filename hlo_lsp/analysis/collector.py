"""The garbage-collector policy, in one place: Python's cyclic collector is
paused while a model is built (:func:`paused_gc`), live models are frozen out of
its scans (:func:`freeze`), full collections run when the server is idle or the
frozen objects have grown (:class:`ModelCollector`), and the C allocator's free
memory goes back to the system (:func:`limit_malloc_arenas`, ``malloc_trim``).

Why, and the rules it asks of the rest of the code (no reference cycles in a
model or an answer): docs/architecture.md, "Garbage collection". The parser
(:mod:`hlo_lsp.syntax`) leaves the collector alone; the analysis layer's parses
(:func:`hlo_lsp.analysis.documents.analyze`), the workspace index's worker
processes (:func:`paused_call`) and the command line
(:func:`hlo_lsp.cli.main.main`) pause it through :func:`paused_gc`.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import functools
import gc
import logging
import sys
import threading
import time
from concurrent.futures import Executor
from contextlib import contextmanager

log = logging.getLogger("hlo_lsp")


_gc_lock = threading.Lock()
_gc_pauses = 0          # parses running with the collector paused (all threads)
_gc_resume = False      # whether the collector ran before the first of them


@contextmanager
def paused_gc():
    """Pause Python's cyclic garbage collector while a model is built (a parse,
    a whole dump loaded by the command line).

    A parse allocates hundreds of thousands of objects that all outlive it; the
    collector would traverse them again and again as they accumulate and find
    nothing to free. A process-wide switch: pauses nest and may overlap across
    threads, and the collector runs again when the last one ends, if it was
    running when the first began. Objects that outlive the pause should be
    frozen (:func:`freeze`) before it ends."""
    global _gc_pauses, _gc_resume
    with _gc_lock:
        if _gc_pauses == 0:
            _gc_resume = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_resume:
                gc.enable()


def paused_call(fn, *args):
    """``fn(*args)`` with the collector paused (:func:`paused_gc`). As
    ``functools.partial(paused_call, fn)`` of a module-level ``fn``, it can be
    sent to a worker process (the workspace index's summaries)."""
    with paused_gc():
        return fn(*args)


def _release_free_memory() -> None:
    """Hand the C allocator's free memory back to the system (glibc's
    ``malloc_trim(0)``, malloc(3); a no-op elsewhere). Texts and large lists of
    edited versions are freed inside the heap, where glibc keeps them: after a
    typing storm the server's memory would stay at its peak."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.lru_cache(maxsize=1)
def _libc():
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


def _malloc_trim():
    return getattr(_libc(), "malloc_trim", None)


#: mallopt(3)'s parameter for the most arenas glibc may create (malloc.h).
_M_ARENA_MAX = -8


def limit_malloc_arenas(count: int = 1) -> bool:
    """Let glibc's allocator create at most ``count`` arenas (``mallopt
    M_ARENA_MAX``, malloc(3)) for the threads this process starts from now on;
    True when applied, False where it cannot be (not glibc). Call it before the
    process starts its threads: an arena once made stays."""
    mallopt = getattr(_libc(), "mallopt", None)
    if mallopt is None:
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(mallopt(_M_ARENA_MAX, count))


class _MallInfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2`` (malloc.h, glibc 2.33 and later): sizes in bytes."""

    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def malloc_in_use() -> int | None:
    """Bytes the C allocator has handed out and not had back (glibc's
    ``mallinfo2``: ``uordblks`` in its heaps plus ``hblkhd`` in blocks of their
    own mapping); None where it cannot say (not glibc, or glibc before 2.33).
    Python's own small-object arenas are mapped apart and not counted: with the
    process's resident memory, this tells memory the program holds from memory
    the allocator keeps."""
    mallinfo2 = getattr(_libc(), "mallinfo2", None)
    if mallinfo2 is None:
        return None
    mallinfo2.restype = _MallInfo2
    info = mallinfo2()
    return info.uordblks + info.hblkhd


#: Objects frozen by :func:`freeze` since the last full collection (an estimate).
_frozen_since_collection = 0


def freeze() -> None:
    """:func:`gc.freeze`, counting the objects it moves out of the collector's
    sight. The count is the youngest generation's (``gc.get_count()[0]``): the
    tracked objects allocated, net of those freed, since the last collection or
    freeze; while a parse pauses the collector, that is every object of its model.
    O(1), where ``gc.get_freeze_count()`` walks the frozen objects (17 ms for a
    server's 1-2 million, on the event loop, before each publication of
    diagnostics). An upper bound of the growth: objects freed after they were
    frozen (a closed document's model) are not subtracted."""
    global _frozen_since_collection
    _frozen_since_collection += gc.get_count()[0]
    gc.freeze()


def _recount() -> int:
    """The exact number of frozen objects (O(n): a walk of them all), which the
    estimate starts from again."""
    global _frozen_since_collection
    _frozen_since_collection = 0
    return gc.get_freeze_count()


def _full_collection() -> tuple[float, int]:
    """Unfreeze, collect every generation, freeze the survivors, return the free
    memory to the system; returns (seconds, survivors)."""
    global _frozen_since_collection
    t0 = time.perf_counter()
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    _frozen_since_collection = 0
    survivors = gc.get_freeze_count()
    _release_free_memory()
    return time.perf_counter() - t0, survivors


class ModelCollector:
    """Freezes the live objects after each analysis; collects fully when idle;
    returns free memory to the system at most every ``trim_s`` seconds.

    ``analysed()`` must be called on the event loop (it schedules the idle
    collection there); the collection itself runs in ``executor``.
    """

    def __init__(self, executor: Executor, idle_s: float = 10.0, growth: float = 2.0,
                 min_objects: int = 4_000_000, trim_s: float = 5.0) -> None:
        self.executor = executor
        self.idle_s = idle_s
        self.growth = growth
        self.min_objects = min_objects
        self.trim_s = trim_s
        self.collections = 0
        self.trims = 0
        self._trimmed = time.monotonic()
        self._trimming: asyncio.Future | None = None
        self._idle: asyncio.TimerHandle | None = None
        self._running: asyncio.Future | None = None
        self._limit = min_objects
        #: frozen objects at the last exact count (a collection, or a recount)
        self._counted = gc.get_freeze_count()

    def analysed(self) -> None:
        """An analysis has just produced a model: freeze, and collect later
        (when idle, or now when the frozen objects outgrew the limit)."""
        freeze()
        if self._idle is not None:
            self._idle.cancel()
        loop = asyncio.get_running_loop()
        # The estimate only grows (a freed model does not lower it): past the
        # limit, the exact count decides, and the estimate starts from it again.
        if self._counted + _frozen_since_collection > self._limit and self._running is None:
            self._counted = _recount()
        if self._counted > self._limit and self._running is None:
            self._idle = None
            self._collect(loop)
            return
        self._idle = loop.call_later(self.idle_s, self._collect_when_idle, loop)
        if time.monotonic() - self._trimmed >= self.trim_s and self._trimming is None \
                and self._running is None:
            self._trim(loop)

    def _trim(self, loop: asyncio.AbstractEventLoop) -> None:
        """Return the allocator's free memory in ``executor`` (``malloc_trim``
        runs without the GIL: a few milliseconds that hold up no request)."""
        self._trimmed = time.monotonic()
        self._trimming = loop.run_in_executor(self.executor, _release_free_memory)

        def done(future: asyncio.Future) -> None:
            self._trimming = None
            self._trimmed = time.monotonic()
            if not future.cancelled() and future.exception() is None:
                self.trims += 1
        self._trimming.add_done_callback(done)

    def _collect_when_idle(self, loop: asyncio.AbstractEventLoop) -> None:
        self._idle = None
        if self._running is None:
            self._collect(loop)

    def _collect(self, loop: asyncio.AbstractEventLoop) -> None:
        self._running = loop.run_in_executor(self.executor, _full_collection)
        self._running.add_done_callback(self._done)

    def _done(self, future: asyncio.Future) -> None:
        self._running = None
        if future.cancelled() or future.exception() is not None:
            log.debug("garbage collection failed", exc_info=future.exception())
            return
        self.collections += 1
        seconds, survivors = future.result()
        self._counted = survivors
        self._limit = max(self.min_objects, int(self.growth * survivors))
        in_use = malloc_in_use()
        log.info("full garbage collection in %.3f s (%d objects frozen; %s MB in malloc, "
                 "%d Python blocks)", seconds, survivors,
                 "?" if in_use is None else f"{in_use / 2**20:.0f}", sys.getallocatedblocks())
