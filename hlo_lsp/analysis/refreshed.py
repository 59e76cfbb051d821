"""Answers of blocking reads kept by key and refreshed in the background
(stale while revalidating): what the analysis reads beside a dump
(:mod:`hlo_lsp.analysis.inputs`, :mod:`hlo_lsp.analysis.profiles`) is answered
at once once known, so a hover never waits for a thread after the first.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Hashable
from typing import Any


class Refreshed:
    """Answers of a blocking read, by key, read in a thread: the first time
    awaited, one read per key however many ask meanwhile (they share it);
    after ``ttl`` seconds given at once while one read in the background
    replaces them (stale while revalidating). At most ``maxsize`` keys, the
    oldest read dropped first."""

    def __init__(self, ttl: float, maxsize: int = 256) -> None:
        self.ttl = ttl
        self.maxsize = maxsize
        self._values: dict[Hashable, tuple[float, Any]] = {}
        self._refreshing: dict[Hashable, asyncio.Task] = {}
        #: key -> its first read, under way
        self._reading: dict[Hashable, asyncio.Task] = {}

    async def get(self, key: Hashable, read: Callable[..., Any], *args: Any,
                  wait: float | None = None, default: Any = None) -> Any:
        """The answer of ``read(*args)`` for ``key``; see the class docstring.
        ``wait``: at most this many seconds for a first read; past them
        ``default`` is answered while the read goes on (its answer is the next
        ``get``'s; :meth:`reading` gives the read under way)."""
        known = self._values.get(key)
        if known is None:
            task = self._reading.get(key)
            if task is None:
                task = asyncio.get_running_loop().create_task(self._first(key, read, *args))
                self._reading[key] = task
            if wait is None:
                return await asyncio.shield(task)
            done, _ = await asyncio.wait({task}, timeout=wait)
            return task.result() if done else default
        read_at, value = known
        if time.monotonic() - read_at > self.ttl and key not in self._refreshing:
            task = asyncio.get_running_loop().create_task(self._refresh(key, read, *args))
            self._refreshing[key] = task
        return value

    def reading(self, key: Hashable) -> asyncio.Task | None:
        """The first read of ``key`` under way, None when there is none."""
        return self._reading.get(key)

    async def _first(self, key: Hashable, read: Callable[..., Any], *args: Any) -> Any:
        try:
            value = await asyncio.to_thread(read, *args)
            if self._reading.get(key) is asyncio.current_task():  # not forgotten meanwhile
                self._store(key, value)
            return value
        finally:
            if self._reading.get(key) is asyncio.current_task():
                del self._reading[key]

    async def _refresh(self, key: Hashable, read: Callable[..., Any], *args: Any) -> None:
        try:
            value = await asyncio.to_thread(read, *args)
            if key in self._values:  # not forgotten meanwhile
                self._store(key, value)
        finally:
            self._refreshing.pop(key, None)

    def _store(self, key: Hashable, value: Any) -> None:
        self._values.pop(key, None)
        self._values[key] = (time.monotonic(), value)
        while len(self._values) > self.maxsize:
            self._values.pop(next(iter(self._values)))

    def forget(self, matches: Callable[[Hashable], bool]) -> None:
        """Drop the answers whose key ``matches`` (the next ``get`` reads again)."""
        for key in [k for k in (*self._values, *self._reading) if matches(k)]:
            self._values.pop(key, None)
            self._reading.pop(key, None)  # its answer is not kept
            task = self._refreshing.pop(key, None)
            if task is not None:
                task.cancel()


__all__ = ["Refreshed"]
