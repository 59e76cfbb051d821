"""Diagnostics: syntax problems found by the parser plus the semantic checks of
:mod:`hlo_lsp.model.check`, sorted and capped so a garbage file stays cheap."""

from __future__ import annotations

from hlo_lsp.model.check import check
from hlo_lsp.model.hlo import HloModule, Problem, Severity
from hlo_lsp.syntax.lines import LineIndex
from hlo_lsp.syntax.xla import XlaVerdict

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


def xla_problem(verdict: XlaVerdict, lines: LineIndex) -> Problem:
    """XLA's error as a Problem on the token at XLA's 1-based line:column."""
    line = min(max(verdict.line - 1, 0), lines.line_count - 1)
    text = lines.line_text(line)
    col = min(max(verdict.column - 1, 0), len(text))
    end = col
    while end < len(text) and text[end] not in " ,()\t":
        end += 1
    start = lines.starts[line] + col
    return Problem(start, lines.starts[line] + max(end, col + 1),
                   f"XLA: {verdict.message}", Severity.ERROR, "xla")


def merge_xla(problems: list[Problem], xla: list[Problem], lines: LineIndex) -> list[Problem]:
    """``problems`` plus XLA's, except where we already report an error on that line."""
    if not xla:
        return problems
    ours = {lines.line_of(p.start) for p in problems if p.severity == Severity.ERROR}
    return problems + [p for p in xla if lines.line_of(p.start) not in ours]
