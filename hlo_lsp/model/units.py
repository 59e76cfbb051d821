"""Counts and times as text for reports and hovers (``2.10 GFLOP``,
``12 µs``), and the one conversion of a count to a float that never raises
(counts from the shapes of hostile text pass a float's range). Pure.
"""

from __future__ import annotations

import math


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """``n`` and its noun: ``1 snapshot``, ``3 snapshots`` (``nouns``, default
    ``noun + "s"``, for any count but 1: ``2 passes``)."""
    return f"{n} {noun if n == 1 else (nouns or noun + 's')}"


def as_float(n: float) -> float:
    """``n`` as a float; an integer past a float's range (about 1.8e308, counts
    from the shapes of broken or hostile text) as infinity of its sign, where
    ``float`` raises OverflowError."""
    try:
        return float(n)
    except OverflowError:
        return math.inf if n > 0 else -math.inf


def format_count(n: float, unit: str) -> str:
    """``2.1e9`` -> ``2.10 G{unit}``; plain under a thousand."""
    n = as_float(n)
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {prefix}{unit}"
    return f"{n:.0f} {unit}"


def format_microseconds(us: float) -> str:
    """Microseconds (a profile's unit) as :func:`format_seconds` writes time:
    ``92 µs``, ``1.5 ms``."""
    return format_seconds(us * 1e-6)


def format_seconds(s: float) -> str:
    """Seconds as ``12 µs``, ``1.5 ms``, ``3.2 s`` or ``840 ns``."""
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"
