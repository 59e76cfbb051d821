"""Running the grammar: the two LALR parsers (lark-cython and pure lark, built
once, shared by every thread), the scanner first for the ``start`` rule
(:data:`USE_SCANNER`), the start rules as functions (:func:`parse_fragment`,
:func:`try_parse`, :func:`try_instruction`), and lark's errors as
:class:`hlo_lsp.model.hlo.Problem` with readable messages (:func:`_problem_from`).
The whole-text entry is :func:`hlo_lsp.syntax.parser.parse`; error recovery
:mod:`hlo_lsp.syntax.recovery`.
"""

from __future__ import annotations

import threading

from lark import Lark
from lark.exceptions import (UnexpectedCharacters, UnexpectedEOF, UnexpectedInput,
                             UnexpectedToken)

from hlo_lsp.model.hlo import Instruction, Problem
from hlo_lsp.syntax import scanner
from hlo_lsp.syntax.builder import _Builder, grammar_text
from hlo_lsp.syntax.lark_compat import CYTHON_PLUGINS, build_scanners, streamline
from hlo_lsp.syntax.lines import LineIndex


_parsers: dict[str, tuple[Lark, _Builder]] = {}
_parsers_lock = threading.Lock()


def _parser(fast: bool = False) -> tuple[Lark, _Builder]:
    """The LALR parser with its model builder, built once (0.3 s and more:
    the grammar's analysis and the lexer's patterns) and shared by every
    thread: a parse keeps its state in objects of its own (lark's parser state
    and lexer thread) and in the builder's thread-local state. ``fast`` selects
    lark-cython when installed (the same grammar, tokens and error exceptions;
    pure lark only where lark-cython fails otherwise)."""
    key = "fast" if fast and CYTHON_PLUGINS is not None else "pure"
    cached = _parsers.get(key)
    if cached is None:
        with _parsers_lock:
            cached = _parsers.get(key)
            if cached is None:
                builder = _Builder()
                extra = {"_plugins": CYTHON_PLUGINS} if key == "fast" else {}
                lark = Lark(grammar_text(), parser="lalr", lexer="contextual",
                            start=["start", "instruction", "computation_head"],
                            transformer=builder, maybe_placeholders=False, **extra)
                streamline(lark)
                if key == "pure":
                    build_scanners(lark)
                cached = _parsers[key] = (lark, builder)
    return cached


class _SlowPathNeeded(Exception):
    """The fast parser failed: parse again with pure lark for a reportable error."""


#: Whether the ``start`` rule is read by :mod:`hlo_lsp.syntax.scanner` first (the
#: grammar reads what it declines). Tests and benchmarks turn it off to compare.
USE_SCANNER = True
_patterns: scanner.Patterns | None = None


def _scanner_patterns() -> scanner.Patterns:
    """The scanner's patterns, built once from the grammar's terminals."""
    global _patterns
    if _patterns is None:
        _patterns = scanner.Patterns.from_terminals(_parser(True)[0].terminals)
    return _patterns


def _grammar_items(text: str, base: int, errors: list[UnexpectedInput] | None = None
                   ) -> list | None:
    """The ``start`` rule's items for ``text`` read by the grammar alone (the
    scanner's fallback); None when it does not parse (lark-cython's error is
    then appended to ``errors``)."""
    try:
        return _run_lark(text, "start", base)
    except _SlowPathNeeded:
        try:
            return _run(text, "start", base)
        except UnexpectedInput:
            return None
    except UnexpectedInput as exc:
        if errors is not None:
            # Kept without its traceback and without the scanner's _Decline it
            # was raised while handling (whose frames hold ``errors``): no cycle.
            exc.__context__ = None
            errors.append(exc.with_traceback(None))
        return None


def _run_fast(text: str, start: str = "start", base: int = 0, read: list | None = None,
              unfinished: dict[int, scanner.Unfinished] | None = None, confirm: bool = True):
    """Parse on the fast path: the scanner for the ``start`` rule (see
    :data:`USE_SCANNER`), else lark-cython. Raises UnexpectedInput when the
    text does not parse (lark-cython's errors carry the same token, position and
    expected terminals as pure lark's), _SlowPathNeeded on any other failure of
    lark-cython. ``read``: a list the scanner fills with the items it read, kept
    when the text does not parse, and ``unfinished`` (see
    :func:`hlo_lsp.syntax.scanner.scan`).

    When a piece the scanner hands to the grammar does not parse, the whole
    text is parsed with the grammar: the scanner ends a computation at the
    first ``}`` at a line start, which a value written over several lines can
    hold, so a piece can fail where the whole text parses. Without
    ``confirm`` that parse is left out and None returned: for a caller that
    then parses the text computation by computation anyway."""
    if start == "start" and USE_SCANNER:
        whole: list[UnexpectedInput] = []  # the grammar's error on all of ``text``
        patterns = _scanner_patterns()

        def fallback(piece: str, at: int) -> list | None:
            # A piece that is the text but for blanks after it (a computation's
            # chunk ends with its blank lines) fails where the text fails.
            covers = at == base and patterns.rest_blank.match(text, len(piece)) is not None
            return _grammar_items(piece, at, whole if covers else None)
        items = scanner.scan(patterns, text, base, fallback, read, unfinished)
        if items is not None or not confirm:
            return items
        if whole:
            # The grammar failed on the whole text already (one computation
            # alone, as error recovery and an edited chunk parse it): the
            # parse below would fail in the same place, after the same work.
            error = whole.pop()
            try:
                raise error
            finally:
                del error  # no cycle through this frame (see _parse)
    return _run_lark(text, start, base)


def _run_lark(text: str, start: str, base: int):
    """Parse with lark-cython (pure lark without it); see :func:`_run_fast`."""
    if CYTHON_PLUGINS is None:
        return _run(text, start, base)
    lark, builder = _parser(True)
    builder.base = base
    if builder.anonymous or builder.inline or builder._set_aside or builder.depths:
        builder.reset()
    try:
        return lark.parse(text, start=start)
    except UnexpectedInput:
        raise
    except Exception as exc:  # noqa: BLE001 - anything else: pure lark decides
        raise _SlowPathNeeded() from exc
    finally:
        builder.base = 0


def _run(text: str, start: str, base: int = 0):
    lark, builder = _parser()
    builder.base = base
    if builder.anonymous or builder.inline or builder._set_aside or builder.depths:
        builder.reset()
    try:
        return lark.parse(text, start=start)
    finally:
        builder.base = 0


def warm_up() -> None:
    """Build the parsers, which every thread shares (about 0.3 s, more on a busy
    machine), with the regular expression of every lexer state, which lark
    otherwise compiles when a parse first reaches the state. Those of the
    pure-lark parser are built with it; lark-cython's are the same patterns,
    found in the cache of Python's re module when it builds them."""
    _parser(True)
    _parser()
    _scanner_patterns()


def parse_fragment(text: str, start: str, base: int = 0,
                   unfinished: dict[int, scanner.Unfinished] | None = None):
    """Parse ``text`` (a piece of a document beginning at offset ``base``) with one
    of the grammar's start rules: "start" -> list of module items,
    "instruction" -> Instruction, "computation_head" -> head tuple.
    ``unfinished`` ("start"): the computations the scanner read part of, by the
    document offset of their first line (:func:`hlo_lsp.syntax.scanner.scan`):
    read on from there, and the one that does not parse is put there, for
    :func:`parse` to recover from.

    Raises lark.exceptions.UnexpectedInput when the piece does not parse.
    """
    try:
        return _run_fast(text, start, base, None, unfinished)
    except _SlowPathNeeded:
        return _run(text, start, base)


def try_parse(text: str, start: str, base: int = 0, read: list | None = None,
              unfinished: dict[int, scanner.Unfinished] | None = None, confirm: bool = True):
    """:func:`parse_fragment` for a caller that needs no error: the result, or
    None when ``text`` does not parse. A failure costs one parse on the fast
    path (up to the error), not a second one with pure lark for the message.
    ``read`` (the ``start`` rule): filled with the items the scanner read, which
    it keeps when the text does not parse; ``unfinished``: as for
    :func:`parse_fragment`. Without ``confirm``, None also when a computation
    the scanner handed to the grammar does not parse alone, though the whole
    text might (see :func:`_run_fast`): for a caller that then parses the text
    computation by computation."""
    try:
        return _run_fast(text, start, base, read, unfinished, confirm)
    except (_SlowPathNeeded, UnexpectedInput):
        return None


def try_instruction(text: str, base: int = 0) -> Instruction | None:
    """One instruction line parsed alone (``text`` begins at offset ``base`` of
    its document), on the fast path only; None when it does not parse, or when
    it holds nested operand instructions or inline computations (which belong
    to its computation: the caller reads the computation instead)."""
    try:
        parsed, nested, inline = _parse_instruction(text, base, fast_only=True)
    except (_SlowPathNeeded, UnexpectedInput):
        return None
    return parsed if isinstance(parsed, Instruction) and not nested and not inline else None


def _parse_instruction(text: str, base: int, fast_only: bool = False):
    """One instruction with what its parse set aside: (instruction, nested
    operand instructions, inline computations), on the fast path when it parses.

    Raises lark.exceptions.UnexpectedInput when it does not (with ``fast_only``,
    _SlowPathNeeded when the fast path fails)."""
    try:
        parsed = _run_fast(text, "instruction", base)
        builder = _parser(True)[1]
    except _SlowPathNeeded:
        if fast_only:
            raise
        parsed = _run(text, "instruction", base)
        builder = _parser()[1]
    found = (parsed, builder.anonymous, builder.inline)
    builder.reset()
    return found


# ---------------------------------------------------------------- messages --

_TERMINAL_WORDS = {
    "NAME": "a name", "INT": "an integer", "STRING": "a string",
    "ARRAY_SHAPE": "a shape such as f32[2,3]{1,0}", "ATTR_VALUE": "an attribute value",
    "BALANCED": "a {...} value", "LITERAL": "a literal in (...)", "LBRACE": "'{'",
    "RBRACE": "'}'", "RPAR": "')'", "LPAR": "'('", "COMMA": "','", "ARROW": "'->'",
    "COLON": "':'", "ROOT": "ROOT", "ENTRY": "ENTRY", "HLO_MODULE": "HloModule",
    "$END": "end of input", "PARAM_NAME": "'name:'",
    "DEFINITION": "'name ='", "TYPED_DEFINITION": "'name ='",
    "OPCODE": "an opcode and '('", "CONSTANT": "constant",
    "PARAMETER": "parameter(", "PARAMETER_OPEN": "parameter(",
    "ATTRIBUTE": "', attribute='", "ATTR_NAME": "', attribute='",
    "COMPUTATION_ATTR": "', attribute='", "CONTROL_PREDECESSORS": "', attribute='",
    "LITERAL_ATTR": "', attribute='", "EXECUTION_THREAD": "', execution_thread='",
    "OPERAND_COMMA": "','", "OPERANDS_END": "')'",
}


def _describe_expected(expected) -> str:
    words = sorted({_TERMINAL_WORDS.get(t, t.lower()) for t in expected})
    if len(words) > 6:
        words = words[:6] + ["..."]
    return ", ".join(words)


def _problem_from(exc: UnexpectedInput, text: str, base: int) -> Problem:
    """Turn a lark error into a Problem whose range is the offending token."""
    if isinstance(exc, UnexpectedToken):
        tok = exc.token
        if tok.type == "$END":
            pos = base + len(text)
            return Problem(max(pos - 1, 0), pos,
                           "unexpected end of input; expected " +
                           _describe_expected(exc.expected))
        raw = str(tok)
        if tok.type in ("DEFINITION", "TYPED_DEFINITION"):
            raw = raw[:raw.index("=")]  # the name
        shown = raw.strip()  # without the blanks some tokens take (`, name=`)
        start = tok.start_pos + base + len(raw) - len(raw.lstrip())
        end = start + len(shown)
        if len(shown) > 40:
            shown = shown[:37] + "..."
        expected = _describe_expected(exc.expected)
        return Problem(start, max(end, start + 1), f"unexpected {shown!r}" +
                       (f"; expected {expected}" if expected else ""))
    if isinstance(exc, UnexpectedCharacters):
        start = exc.pos_in_stream + base
        ch = text[exc.pos_in_stream:exc.pos_in_stream + 1]
        end = base + LineIndex.bounds(text, exc.pos_in_stream)[1]
        allowed = exc.allowed or set()
        hint = ""
        if ch in "{[(\"'":
            hint = " (an unbalanced bracket or unterminated string?)"
        msg = f"unexpected character {ch!r}{hint}"
        if allowed:
            msg += "; expected " + _describe_expected(allowed)
        return Problem(start, max(end, start + 1), msg)
    if isinstance(exc, UnexpectedEOF):
        pos = base + len(text)
        return Problem(max(pos - 1, 0), pos, "unexpected end of input")
    return Problem(base, base + 1, str(exc).splitlines()[0])
