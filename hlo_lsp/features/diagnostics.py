"""Diagnostics: syntax problems found by the parser plus the semantic checks of
:mod:`hlo_lsp.analysis`, sorted and capped so a garbage file stays cheap."""

from __future__ import annotations

from ..analysis import check
from ..model import HloModule, Problem

MAX_PROBLEMS = 500


def diagnostics(module: HloModule, limit: int = MAX_PROBLEMS) -> list[Problem]:
    """All problems of ``module`` in text order, at most ``limit`` of them (the last
    one then says how many were left out)."""
    problems = sorted(module.problems + check(module), key=lambda p: (p.start, p.end))
    if len(problems) > limit:
        dropped = len(problems) - limit
        problems = problems[:limit]
        last = problems[-1]
        problems.append(Problem(last.start, last.end,
                                f"{dropped} more problems not shown", last.severity))
    return problems
