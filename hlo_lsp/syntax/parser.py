"""Parse HLO text into the model of :mod:`hlo_lsp.model`, with error recovery.

The syntax is ``grammar/hlo.lark`` (LALR, contextual lexer). The lark
transformer (:mod:`hlo_lsp.syntax.builder`) builds model objects while parsing (no parse tree), which is
the fast path for valid dumps: one pass over the text.

Error recovery: when the whole text does not parse, the first error is reported
where lark found it (as XLA reports its first error), and the text is re-read in
pieces: the module header, then each computation (a header line through its
closing ``}``). A computation that still fails is parsed line by line with the
grammar's ``computation_head`` and ``instruction`` start rules, so one broken
instruction costs one diagnostic and the rest of the file stays navigable.

The pieces: the model builder :mod:`hlo_lsp.syntax.builder`, running the
grammar and the scanner :mod:`hlo_lsp.syntax.driver`, error recovery
:mod:`hlo_lsp.syntax.recovery`. This module is the entry (:func:`parse`) and
puts the pieces' items together into a module (:func:`_assemble`).

A plain parser: it leaves the garbage collector alone. Whoever parses big texts
pauses it around the parse (:func:`hlo_lsp.analysis.collector.paused_gc`, see
docs/architecture.md, "Garbage collection").
"""

from __future__ import annotations

import re

from lark.exceptions import UnexpectedInput

from hlo_lsp.model.hlo import Computation, FileLocation, HloModule, ModulePart, Problem
from hlo_lsp.syntax import scanner
from hlo_lsp.syntax.builder import DEEP_TUPLE_TEXT, GRAMMAR_FILE, grammar_text
from hlo_lsp.syntax.driver import _problem_from, parse_fragment, try_instruction, try_parse, warm_up
from hlo_lsp.syntax.recovery import _recover
from hlo_lsp.syntax.split import blank_outside, blanked, split_parts

_ROW_ITEM = re.compile(r"(?<![A-Za-z_])([A-Za-z_]++)=(-?\d+)")   # linear (a possessive name)


def parse(text: str, *, error: UnexpectedInput | None = None,
          unfinished: dict[int, scanner.Unfinished] | None = None) -> HloModule:
    """Parse HLO text into an :class:`HloModule`. Never raises on bad input.

    Syntax errors become ``module.problems`` (the first one where lark found it,
    then one per unparsable instruction or header); semantic checks are in
    :func:`hlo_lsp.model.check.check`. A split file (:func:`split_parts`) is
    parsed part by part, each as XLA's tools read it, into one model whose
    ``parts`` say which computation belongs to which module.

    ``error``: what :func:`parse_fragment` of this very text with the "start"
    rule raised, when the caller tried it already (no second attempt: on a
    truncated multi-megabyte computation each costs a third of a second), and
    ``unfinished``, what that attempt read of the computations that do not parse
    (offsets of this text): error recovery starts after it.
    """
    parts = split_parts(text)
    if not parts:
        return _parse(text, error, unfinished)
    return _parse_split(text, parts)


def _parse_split(text: str, parts: list[tuple[int, int]]) -> HloModule:
    """Each part parsed alone, at its own offsets (the rest of the text blanked,
    line breaks kept), and the results put together in text order."""
    module = HloModule(text)
    blank = blanked(text)
    for start, end in parts:
        part = _parse(blank_outside(text, start, end, blank))
        module.parts.append(ModulePart(start, end, part.name, part.header_attributes))
        module.computations.extend(part.computations)
        module.problems.extend(part.problems)
        if module.name is None:
            module.name, module.header_attributes = part.name, part.header_attributes
            module.header_end = part.header_end
        if not module.frames.sections and part.frames.sections:
            module.frames = part.frames
    return module


def _parse(text: str, error: UnexpectedInput | None = None,
           unfinished: dict[int, scanner.Unfinished] | None = None) -> HloModule:
    module = HloModule(text)
    if "\x00" in text:
        error = unfinished = None  # they were made from the text with its NUL bytes
        text_for_parse = text.replace("\x00", " ")
        module.problems.append(Problem(text.index("\x00"), text.index("\x00") + 1,
                                       "binary data (NUL byte): this is not HLO text"))
    else:
        text_for_parse = text
    if unfinished is None:
        unfinished = {}
    try:
        if error is None:
            try:
                items = parse_fragment(text_for_parse, "start", 0, unfinished)
            except UnexpectedInput as exc:
                # Kept past this block, so without its traceback: the frames it
                # holds hold what the recovery builds, a cycle that only a full
                # collection frees (and live models are frozen out of those).
                error = exc.with_traceback(None)
    except RecursionError:  # pragma: no cover - pathological nesting
        module.problems.append(Problem(0, 1, "input too deeply nested to parse"))
        _assemble(module, [])
        return module
    if error is not None:
        first = _problem_from(error, text_for_parse, 0)
        items, problems = _recover(text_for_parse, first.start, unfinished)
        # The whole-text error is often a consequence of a problem the recovery
        # pinned down more precisely on the same or the previous line.
        line_before = text_for_parse.rfind("\n", 0, max(text_for_parse.rfind(
            "\n", 0, first.start), 0))
        if not any(line_before < p.start <= first.end for p in problems):
            module.problems.append(first)
        module.problems.extend(problems)
    _assemble(module, items)
    return module


def _inline_computations(comp: Computation) -> list[Computation]:
    """The inline computations inside ``comp``, at any depth, by start offset."""
    out: list[Computation] = []
    stack = list(comp.nested)
    while stack:
        inner = stack.pop()
        out.append(inner)
        stack.extend(inner.nested)
    out.sort(key=lambda c: c.start)
    return out


def _assemble(module: HloModule, items) -> None:
    tables = module.frames
    for it in items:
        if isinstance(it, Computation):
            module.computations.append(it)
            if it.nested:
                module.computations.extend(_inline_computations(it))
        elif isinstance(it, tuple) and it[0] == "header":
            if module.name is None:
                _, module.name, module.header_attributes, _, module.header_end = it
        elif isinstance(it, tuple) and it[0] == "table":
            _, kind, start, end, rows = it
            tables.sections.append((kind, start, end))
            tables.start = start if tables.start < 0 else min(tables.start, start)
            tables.end = max(tables.end, end)
            if kind == "FileNames":
                tables.file_names.update(rows)
            elif kind == "FunctionNames":
                tables.function_names.update(rows)
            elif kind == "FileLocations":
                for num, body in rows:
                    f = dict((k, int(v)) for k, v in _ROW_ITEM.findall(body))
                    tables.file_locations[num] = FileLocation(
                        f.get("file_name_id", 0), f.get("function_name_id", 0),
                        f.get("line", 0), f.get("end_line", 0), f.get("column", 0),
                        f.get("end_column", 0))
            elif kind == "StackFrames":
                for num, body in rows:
                    f = dict((k, int(v)) for k, v in _ROW_ITEM.findall(body))
                    tables.frames[num] = (f.get("file_location_id", 0),
                                          f.get("parent_frame_id", 0))


#: What other modules import from here (the parser's public face).
__all__ = ["DEEP_TUPLE_TEXT", "GRAMMAR_FILE", "grammar_text", "parse", "parse_fragment",
           "try_instruction", "try_parse", "warm_up"]
