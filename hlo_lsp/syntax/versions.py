"""Version numbers of the libraries whose internals :mod:`hlo_lsp.syntax.lark_compat`
and :mod:`hlo_lsp.syntax.xla` rely on. Standard library only."""

from __future__ import annotations

import re


def version_tuple(version: str) -> tuple[int, ...]:
    """``"1.3.1"`` -> ``(1, 3, 1)``: the leading number of each dotted part, up to
    the first part without one (``"1.2.0rc1"`` -> ``(1, 2, 0)``, ``"dev"`` -> ())."""
    out = []
    for part in version.split("."):
        m = re.match(r"\d+", part)
        if m is None:
            break
        out.append(int(m.group()))
    return tuple(out)


def in_range(version: str, versions: tuple[tuple[int, ...], tuple[int, ...]]) -> bool:
    """Whether ``version`` lies in ``versions`` = ``(low, high)``, low included,
    high excluded (``in_range("1.3.1", ((1, 1), (2, 0)))``). An unreadable
    version is in no range."""
    low, high = versions
    found = version_tuple(version)
    return bool(found) and low <= found < high
