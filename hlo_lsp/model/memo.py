"""One rule for remembering answers about texts from a dump: short texts only.

A dump repeats a few ``op_name`` paths and ``replica_groups`` values over
thousands of instructions, so decoding each once pays; but the same fields of a
hostile or hand-edited dump may hold megabytes, which a cache would keep alive
for the life of the server. :func:`short_text_cache` and :class:`ShortTextMemo`
keep the one and compute the other every time: every cache of answers about
texts from a dump is one of the two.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

_T = TypeVar("_T")

_F = TypeVar("_F", bound=Callable[..., Any])


def short_text_cache(maxsize: int, max_chars: int) -> Callable[[_F], _F]:
    """Decorate ``fn(text, *args)``: its answers for the last ``maxsize``
    distinct calls whose ``text`` has at most ``max_chars`` characters are
    remembered (``functools.lru_cache``); a longer text is computed each time
    and never kept. ``fn`` must be pure and its arguments hashable. The result
    has ``cache_info()`` and ``cache_clear()`` of the cache and ``max_chars``."""
    def decorate(fn: _F) -> _F:
        cached = functools.lru_cache(maxsize=maxsize)(fn)

        @functools.wraps(fn)
        def remembered(text: str, *args: Any, **kwargs: Any) -> Any:
            if len(text) > max_chars:
                return fn(text, *args, **kwargs)
            return cached(text, *args, **kwargs)
        remembered.cache_info = cached.cache_info  # type: ignore[attr-defined]
        remembered.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
        remembered.max_chars = max_chars  # type: ignore[attr-defined]
        return remembered  # type: ignore[return-value]
    return decorate


class ShortTextMemo(dict[str, _T]):
    """``memo[text]`` is ``fn(text)``, remembered when ``text`` has at most
    ``max_chars`` characters (the rule of :func:`short_text_cache`). At most
    ``maxsize`` answers are kept; when that many are, all are forgotten at once,
    which costs less than keeping a least-recently-used order on a path that
    looks up every instruction of a dump. Lookups that hit are those of a
    ``dict``; ``memo.get(text)`` answers from memory only. ``fn`` must be pure;
    what it raises reaches the caller and nothing is kept."""

    __slots__ = ("fn", "maxsize", "max_chars")

    def __init__(self, fn: Callable[[str], _T], maxsize: int, max_chars: int) -> None:
        super().__init__()
        self.fn = fn
        self.maxsize = maxsize
        self.max_chars = max_chars

    def __missing__(self, text: str) -> _T:
        value = self.fn(text)
        if len(text) <= self.max_chars:
            if len(self) >= self.maxsize:
                self.clear()
            self[text] = value
        return value
