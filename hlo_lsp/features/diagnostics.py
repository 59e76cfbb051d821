"""Diagnostics: syntax problems found by the parser plus the semantic checks of
:mod:`hlo_lsp.model.check`, sorted and capped so a garbage file stays cheap."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Sequence

from hlo_lsp.model.check import check, computation_problems
from hlo_lsp.model.hlo import Computation, HloModule, Problem, Severity, ShapeToken
from hlo_lsp.model.shapes import MAX_TUPLE_DEPTH, tuple_depth
from hlo_lsp.syntax.lines import LineIndex
from hlo_lsp.syntax.xla import CRASHED, XlaVerdict

if TYPE_CHECKING:
    from hlo_lsp.syntax.chunks import Chunk

MAX_PROBLEMS = 500


def diagnostics(module: HloModule, limit: int = MAX_PROBLEMS) -> list[Problem]:
    """All problems of ``module`` in text order, at most ``limit`` of them (the last
    one then says how many were left out)."""
    return _capped(module.problems + check(module) + deep_tuples(module), limit)


def edited_diagnostics(previous: Sequence[Problem], chunk: Chunk, old_end: int, delta: int,
                       frame_count: int, limit: int = MAX_PROBLEMS) -> list[Problem] | None:
    """The diagnostics of a text just edited inside one computation, before the
    module around it is checked again: the problems of ``chunk`` (the edited
    computation, parsed: :func:`hlo_lsp.syntax.chunks.edited_chunk`; its syntax
    problems, :func:`hlo_lsp.model.check.computation_problems`, its deep
    tuples), and the problems ``previous`` (the last full :func:`diagnostics`,
    offsets in the text before the edit) found outside it, those after it moved
    by ``delta`` characters. What needs the whole module (a callee renamed or
    removed, duplicate names) is known only from the full check that follows.
    None when ``previous`` was capped (what it left out is not known)."""
    if len(previous) > limit:
        return None
    start = chunk.start
    out = [p if p.start < start else
           Problem(p.start + delta, p.end + delta, p.message, p.severity, p.source)
           for p in previous if p.start < start or p.start >= old_end]
    out += chunk.problems
    for comp in chunk.computations:
        out += computation_problems(comp, frame_count)
    out += _deep_tuples_in(chunk.computations)
    return _capped(out, limit)


def _capped(problems: list[Problem], limit: int) -> list[Problem]:
    """``problems`` in text order, at most ``limit`` (the last one then says how
    many were left out)."""
    problems = sorted(problems, key=lambda p: (p.start, p.end))
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
    return _deep_tuples_in(module.computations, max_depth)


def _deep_tuples_in(computations: Iterable[Computation],
                    max_depth: int = MAX_TUPLE_DEPTH) -> list[Problem]:
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

    for comp in computations:
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
