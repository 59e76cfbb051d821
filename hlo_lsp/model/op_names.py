"""The ``op_name`` paths of kernels as patterns: the repeated scope of an
unrolled loop (``layer_0`` ... ``layer_47`` under ``jax.named_scope``), the
index a kernel has in it, its ``op_name`` with that index folded
(``jvp(layer_{i})/dot_general``), the short form shown in reports, and index
ranges as text (``0..47``). The summary's folding
(:mod:`hlo_lsp.model.folding`), its ranking and the cost comparison
(:mod:`hlo_lsp.model.cost_change`) group kernels by these patterns. Pure.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from typing import Protocol, TypeVar

from hlo_lsp.model.memo import short_text_cache

_T = TypeVar("_T")


class _Kernel(Protocol):
    op_name: str


class _Summary(Protocol):
    """What :func:`repeat_scope` reads of a
    :class:`hlo_lsp.model.summary.KernelSummary` (which imports this module)."""

    @property
    def kernels(self) -> Iterable[_Kernel]: ...

    def remembered(self, key: Hashable, make: Callable[[], _T]) -> _T: ...


#: A name with an index in an ``op_name`` path: ``layer_12``, ``block3``,
#: ``layers.7`` (the prefix, then the digits).
_INDEXED = re.compile(r"(?<![\w.])([A-Za-z][A-Za-z_]*?[_.]?)(\d+)(?![\w.])")

#: Fewest distinct indices of a scope for it to be a repeated structure.
MIN_REPEATS = 2


def repeat_scope(summary: _Summary) -> str | None:
    """The name prefix of the repeated scope of the kernels' ``op_name``s
    (``"layer_"`` when the op_names hold ``layer_0`` ... ``layer_47``, as an
    unrolled Python loop under ``jax.named_scope(f"layer_{i}")`` writes them):
    the prefix with the most distinct indices, at least :data:`MIN_REPEATS`;
    ties go to the one more kernels carry. None when no op_name has one.
    Computed once per summary (:meth:`hlo_lsp.model.summary.KernelSummary.remembered`)."""
    return summary.remembered("repeat_scope", lambda: _repeat_scope(summary.kernels))


def _repeat_scope(kernels: Iterable[_Kernel]) -> str | None:
    indices: dict[str, set[int]] = {}
    carriers: Counter = Counter()   # prefix -> kernels whose op_name has it
    # each distinct op_name is read once (in order of first appearance), for
    # all the kernels that carry it
    for op_name, n in Counter(k.op_name for k in kernels).items():
        seen = set()
        for m in _INDEXED.finditer(op_name):
            indices.setdefault(m.group(1), set()).add(int(m.group(2)))
            seen.add(m.group(1))
        for prefix in seen:
            carriers[prefix] += n
    best = max(indices, key=lambda p: (len(indices[p]), carriers[p]), default=None)
    return best if best is not None and len(indices[best]) >= MIN_REPEATS else None


def scope_index(op_name: str, scope: str | None) -> int | None:
    """The index of ``scope`` in ``op_name`` (``7`` for ``layer_`` in
    ``jit(f)/jvp(layer_7)/dot_general``), the first when several; None when
    absent. Remembered as :func:`op_name_pattern` is."""
    if not scope:
        return None
    return _scope_index(op_name, scope)


#: Longest op_name whose pattern and scope index are remembered.
PATTERN_CACHE_CHARS = 1000


@short_text_cache(maxsize=1 << 14, max_chars=PATTERN_CACHE_CHARS)
def _scope_index(op_name: str, scope: str) -> int | None:
    for m in _INDEXED.finditer(op_name):
        if m.group(1) == scope:
            return int(m.group(2))
    return None


def op_name_pattern(op_name: str, scope: str | None, index: str = "{i}") -> str:
    """``op_name`` with the index of ``scope`` replaced by ``index``
    (``jit(f)/transpose(jvp(layer_{i}))/dot_general``); unchanged without a scope.
    Remembered for the last 16,384 op_names of up to :data:`PATTERN_CACHE_CHARS`
    characters: the summary, its folding and a comparison ask for every
    kernel's, and a dump repeats them (a longer one is not kept: the cache would
    hold hostile metadata of megabytes)."""
    if not scope:
        return op_name
    return _op_name_pattern(op_name, scope, index)


@short_text_cache(maxsize=1 << 14, max_chars=PATTERN_CACHE_CHARS)
def _op_name_pattern(op_name: str, scope: str, index: str) -> str:
    return _INDEXED.sub(lambda m: m.group(1) + index if m.group(1) == scope else m.group(0),
                        op_name)


_JIT_HEAD = re.compile(r"^p?jit\([^/]*\)/")


def short_op_name(op_name: str, limit: int = 80) -> str:
    """``op_name`` without its ``jit(fn)/`` head (the module's name says it),
    cut at the front to ``limit`` characters (``…`` first): what tells forward
    (``jvp(layer_0)/dot_general``) and backward
    (``transpose(jvp(layer_0))/dot_general``) instructions of one Python line
    apart. "" for an op_name that is only the head."""
    short = _JIT_HEAD.sub("", op_name, count=1)
    if len(short) > limit:
        short = "…" + short[-(limit - 1):]
    return short


def index_ranges(indices) -> str:
    """``0..47`` for a run, ``0..3,8,10..11`` otherwise (sorted, distinct)."""
    values = sorted(set(indices))
    parts: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        parts.append(str(values[i]) if i == j else f"{values[i]}..{values[j]}")
        i = j + 1
    return ",".join(parts)
