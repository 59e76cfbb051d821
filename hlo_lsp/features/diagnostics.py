"""Diagnostics: syntax problems found by the parser plus the semantic checks of
:mod:`hlo_lsp.model.check`, sorted and capped so a garbage file stays cheap."""

from __future__ import annotations

from hlo_lsp.model.check import check
from hlo_lsp.model.hlo import HloModule, Problem, Severity, ShapeToken
from hlo_lsp.model.shapes import MAX_TUPLE_DEPTH, tuple_depth
from hlo_lsp.syntax.lines import LineIndex
from hlo_lsp.syntax.xla import CRASHED, XlaVerdict

MAX_PROBLEMS = 500


def diagnostics(module: HloModule, limit: int = MAX_PROBLEMS) -> list[Problem]:
    """All problems of ``module`` in text order, at most ``limit`` of them (the last
    one then says how many were left out)."""
    problems = sorted(module.problems + check(module) + deep_tuples(module),
                      key=lambda p: (p.start, p.end))
    if len(problems) > limit:
        dropped = len(problems) - limit
        problems = problems[:limit]
        last = problems[-1]
        problems.append(Problem(last.start, last.end,
                                f"{dropped} more problems not shown", last.severity))
    return problems


def deep_tuples(module: HloModule, max_depth: int = MAX_TUPLE_DEPTH) -> list[Problem]:
    """A warning on each shape whose tuples nest deeper than ``max_depth``
    levels: hlo-lsp does not decode it (hover says so), XLA's parser recurses
    once per level and crashes some thousands of levels deep."""
    out: list[Problem] = []

    def look(token: ShapeToken | None) -> None:
        if token is None or token.elements is None:
            return
        depth = tuple_depth(token)
        if depth > max_depth:
            out.append(Problem(token.start, min(token.end, token.start + 1),
                               f"tuple shape nested {depth} levels deep: hlo-lsp describes "
                               f"shapes up to {max_depth} levels (XLA's parser recurses "
                               "once per level)", Severity.WARNING))

    for comp in module.computations:
        for p in comp.params:
            look(p.shape)
        look(comp.result)
        for ins in comp.instructions:
            look(ins.shape)
            for op in ins.operands:
                if op.shape is not None and op.shape.elements is not None:
                    look(op.shape)
    return out


def xla_problem(verdict: XlaVerdict, lines: LineIndex) -> Problem:
    """XLA's error as a Problem on the token at XLA's 1-based line:column (the
    first token of the text when XLA did not say where: a crash)."""
    line = min(max(verdict.line - 1, 0), lines.line_count - 1)
    text = lines.line_text(line)
    col = min(max(verdict.column - 1, 0), len(text))
    end = col
    while end < len(text) and text[end] not in " ,()\t":
        end += 1
    start = lines.starts[line] + col
    return Problem(start, lines.starts[line] + max(end, col + 1),
                   verdict.message if verdict.crashed else f"XLA: {verdict.message}",
                   Severity.ERROR, "xla")


def merge_xla(problems: list[Problem], xla: list[Problem], lines: LineIndex) -> list[Problem]:
    """``problems`` plus XLA's, except where we already report an error on that
    line; that XLA's parser crashed is always said."""
    if not xla:
        return problems
    ours = {lines.line_of(p.start) for p in problems if p.severity == Severity.ERROR}
    return problems + [p for p in xla if lines.line_of(p.start) not in ours
                       or p.message.startswith(CRASHED)]
