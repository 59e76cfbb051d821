"""One rule for remembering answers about texts from a dump: short texts only.

A dump repeats a few ``op_name`` paths and ``replica_groups`` values over
thousands of instructions, so decoding each once pays; but the same fields of a
hostile or hand-edited dump may hold megabytes, which a cache would keep alive
for the life of the server. :func:`short_text_cache` keeps the one and
computes the other every time.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

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
