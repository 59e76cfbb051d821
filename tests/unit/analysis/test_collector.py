"""The model has no reference cycles, so live models can be frozen out of the
garbage collector's scans and replaced ones are still freed at once."""

from __future__ import annotations

import asyncio
import gc
import weakref
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.helpers import TRAIN_AFTER, read
from hlo_lsp.analysis.collector import ModelCollector, freeze, malloc_in_use, paused_gc
from hlo_lsp.syntax.chunks import parse_chunked
from hlo_lsp.syntax.parser import parse


def test_a_dropped_model_is_freed_by_reference_counting():
    """No cycles: a model (whole or chunked, with its caches built) that is no
    longer referenced is gone without a garbage collection."""
    text = read(TRAIN_AFTER)
    gc.disable()
    try:
        for make in (parse, parse_chunked):
            module = make(text)
            module.by_name
            for comp in module.computations:
                comp.by_name, comp.users_by_name
            assert all(i.computation is c for c in module.computations for i in c.instructions)
            probe = weakref.ref(module.computations[-1])
            del module, comp
            assert probe() is None
    finally:
        gc.enable()


def test_collector_freezes_after_analysis_and_collects_when_idle():
    async def run() -> tuple[int, bool]:
        with ThreadPoolExecutor(1) as pool:
            collector = ModelCollector(pool, idle_s=0.05)

            class Cycle:
                pass

            garbage = Cycle()
            garbage.me = garbage           # cyclic garbage present at the freeze
            probe = weakref.ref(garbage)
            del garbage
            collector.analysed()
            frozen = gc.get_freeze_count()
            for _ in range(100):
                await asyncio.sleep(0.02)
                if collector.collections:
                    break
            return frozen, probe() is None, collector.collections

    gc.unfreeze()
    try:
        frozen, reclaimed, collections = asyncio.run(run())
    finally:
        gc.unfreeze()
    assert frozen > 0 and reclaimed and collections == 1


def test_the_idle_collection_returns_free_heap_memory_to_the_system(monkeypatch):
    """After a typing storm the freed texts of edited versions sit in glibc's
    heap; the idle collection trims it (benchmarks/bench_storm.py measures the
    effect: RSS 15 s after 1,000 edits on the 4 MB dump 1.26x -> 1.03x of the
    level before)."""
    import platform

    from hlo_lsp.analysis import collector

    if platform.libc_ver()[0] == "glibc":
        assert collector._malloc_trim() is not None  # found on this machine
    calls = []
    monkeypatch.setattr(collector, "_malloc_trim", lambda: calls.append)
    collector._full_collection()
    assert calls == [0]


def test_a_server_that_is_never_idle_collects_when_frozen_garbage_grows():
    """Analyses one after another with no idle pause, each leaving cyclic
    garbage behind (as a cancelled analysis does): the collector collects once
    the frozen objects outgrow the limit, so memory stays bounded."""
    class Cycle:
        pass

    async def run() -> tuple[int, bool]:
        with ThreadPoolExecutor(1) as pool:
            collector = ModelCollector(pool, idle_s=60.0, growth=1.05,
                                       min_objects=gc.get_freeze_count() + 20_000)
            probes = []
            for _ in range(50):
                with paused_gc():  # as an analysis builds its model
                    for _ in range(1_000):
                        garbage = Cycle()
                        garbage.me = garbage
                        garbage.payload = [0] * 4
                    freeze()  # as analyze() does, before the collector resumes
                probes.append(weakref.ref(garbage))
                del garbage
                collector.analysed()
                await asyncio.sleep(0.01)
            for _ in range(100):
                if collector._running is None:
                    break
                await asyncio.sleep(0.02)
            return collector.collections, sum(p() is not None for p in probes)

    gc.unfreeze()
    try:
        collections, alive = asyncio.run(run())
    finally:
        gc.unfreeze()
    # 50 x 2,000 objects of garbage against a limit of 20,000 more, then 5% more
    # than the survivors: collected several times, never after an idle pause
    # (60 s), and what is left is the garbage since the last collection
    assert collections >= 2
    assert alive <= 25


def test_models_frozen_then_freed_start_no_collection():
    """Models built, frozen and dropped one after another (documents opened and
    closed) leave nothing frozen: the estimate passes the limit, the exact
    count does not, and no collection runs."""
    class Node:
        pass

    async def run() -> tuple[int, int]:
        with ThreadPoolExecutor(1) as pool:
            gc.freeze()  # the interpreter's own objects, as a server's first freeze does
            base = gc.get_freeze_count()
            collector = ModelCollector(pool, idle_s=60.0, growth=1.05,
                                       min_objects=base + 20_000)
            for _ in range(50):
                with paused_gc():
                    model = [Node() for _ in range(2_000)]
                    freeze()
                collector.analysed()
                del model  # closed: freed by reference counting
                await asyncio.sleep(0)
            return collector.collections, collector._counted - base

    gc.unfreeze()
    try:
        collections, counted = asyncio.run(run())
    finally:
        gc.unfreeze()
    assert collections == 0
    # recounted at least once (100,000 objects were frozen in all), and what is
    # frozen is the last model and little else
    assert 2_000 <= counted < 20_000


def test_a_server_that_is_never_idle_returns_free_heap_memory_every_few_seconds(monkeypatch):
    """A fuzzed server is never idle for 10 s: after 5 minutes glibc held 380-420
    MB of freed models it had not returned. After an analysis, the free memory
    is returned if the last trim is ``trim_s`` old: not after every analysis,
    and never without one. The collector's clock is the test's (virtual
    seconds), so a busy machine changes nothing."""
    from types import SimpleNamespace

    from hlo_lsp.analysis import collector as module

    clock = SimpleNamespace(now=0.0)
    monkeypatch.setattr(module, "time", SimpleNamespace(monotonic=lambda: clock.now))
    calls, trimmed_at = [], []
    monkeypatch.setattr(module, "_malloc_trim", lambda: calls.append)

    async def run() -> int:
        with ThreadPoolExecutor(1) as pool:
            collector = ModelCollector(pool, idle_s=60.0, trim_s=0.1)
            clock.now = 0.3
            await asyncio.sleep(0.05)
            assert calls == []          # no analysis, no trim
            for i in range(50):         # an analysis every 10 ms, 0.5 s in all
                clock.now = 0.3 + 0.01 * (i + 1)
                collector.analysed()
                if collector._trimming is not None:
                    trimmed_at.append(clock.now)
                    await collector._trimming   # (a hang guard: the test's timeout)
                    await asyncio.sleep(0)      # its done callback
            return collector.trims

    gc.unfreeze()
    try:
        trims = asyncio.run(run())
    finally:
        gc.unfreeze()
    # the first analysis trims (the last trim is 0.3 s old), then one every 0.1 s
    assert trimmed_at[0] == pytest.approx(0.31)
    assert all(b - a >= 0.1 - 1e-9 for a, b in zip(trimmed_at, trimmed_at[1:]))
    assert all(b - a <= 0.11 + 1e-9 for a, b in zip(trimmed_at, trimmed_at[1:]))
    assert len(calls) == len(trimmed_at) == trims == 5
    assert set(calls) == {0}


def test_malloc_in_use_counts_what_the_program_holds():
    """glibc's count of the bytes handed out: 40 MB held show, and go when freed."""
    before = malloc_in_use()
    if before is None:
        pytest.skip("not glibc 2.33 or later")
    held = [bytearray(2**20) for _ in range(40)]
    assert malloc_in_use() - before >= 39 * 2**20
    del held
    assert malloc_in_use() - before < 2**20


_ARENAS = r"""
import ctypes, sys, threading
from hlo_lsp.analysis.collector import limit_malloc_arenas
applied = limit_malloc_arenas() if sys.argv[1] == "limit" else None
def work():
    blocks = [bytes(4096 + i) for i in range(200)]
started = [threading.Thread(target=work) for _ in range(4)]
for t in started: t.start()
for t in started: t.join()
print(applied)
ctypes.CDLL("libc.so.6").malloc_stats()  # one "Arena N:" per arena, on stderr
"""


@pytest.mark.skipif(malloc_in_use() is None, reason="glibc's malloc only")
def test_the_server_keeps_one_malloc_arena_for_all_its_threads():
    import subprocess
    import sys

    def arenas(mode: str) -> tuple[str, int]:
        done = subprocess.run([sys.executable, "-c", _ARENAS, mode], capture_output=True,
                              text=True, timeout=60, check=True)
        return done.stdout.strip(), done.stderr.count("Arena ")

    assert arenas("limit") == ("True", 1)
    applied, count = arenas("default")
    assert applied == "None" and count > 1  # glibc's default: an arena per new thread
