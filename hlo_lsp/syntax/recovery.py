"""Error recovery: when the whole text does not parse, the text is read again
in pieces: the module header, then each computation (a header line through
its closing ``}``); a computation that still fails is read line by line with
the grammar's ``computation_head`` and ``instruction`` start rules (the scanner
first), so one broken instruction costs one diagnostic and the rest of the file
stays navigable. Called by :func:`hlo_lsp.syntax.parser.parse`.
"""

from __future__ import annotations

import bisect
import re

from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from hlo_lsp.model.hlo import Computation, Problem
from hlo_lsp.syntax import driver, scanner
from hlo_lsp.syntax.driver import (_parse_instruction, _problem_from, _scanner_patterns,
                                   parse_fragment, try_parse)
from hlo_lsp.syntax.lines import LineIndex


_HEAD_LINE = re.compile(r"[ \t]*(?:ENTRY[ \t]+)?%?[A-Za-z_][\w.\-]*[ \t]*(?:\(|->|\{)")
_INSTR_LINE = re.compile(r"[ \t]*(?:ROOT[ \t]+)?%?[\w.\-]+[ \t]*=")
_CLOSE_LINE = re.compile(r"[ \t]*\}")
_MAX_JOIN = 20  # lines an instruction may span in recovery
_MAX_JOIN_CHARS = 64 * 1024  # and characters: a join parses the piece again
# A line that starts another instruction (`name = ...`, blanks around "=", or
# ROOT), never the continuation of one (`calls=...`).
_NEW_INSTRUCTION = re.compile(r"[ \t]*(?:ROOT[ \t]|%?[\w.\-]+[ \t]+=[ \t])")
#: A string (closed or not: group 1 is its closing quote) or a bracket.
_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*("?)|[\[({\])}]')


def _left_open(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` leaves a bracket or a string open: more of
    ``( [ {`` than of ``) ] }`` outside strings, or a string not closed. A
    piece that does cannot parse as an instruction (its parse fails at its end,
    or earlier at a mistake a longer piece fails at too)."""
    if text.find('"', start, end) < 0:
        opened = sum(text.count(c, start, end) for c in "([{")
        return opened > sum(text.count(c, start, end) for c in ")]}")
    depth = 0
    for m in _STRING_OR_BRACKET.finditer(text, start, end):
        token = m.group()
        if token[0] == '"':
            if not m.group(1):
                return True
        else:
            depth += 1 if token in "([{" else -1
    return depth > 0


def _recover(text: str, error_at: int = -1,
             unfinished: dict[int, scanner.Unfinished] | None = None):
    """Parse ``text`` in pieces after the whole-text parse failed at offset
    ``error_at`` (-1: unknown). ``unfinished``: what parses of ``text`` read of
    computations that do not parse (see :func:`parse_fragment`); filled here too.

    Returns (items, problems) where items are what :func:`_assemble` accepts.
    """
    lines = LineIndex(text).spans()
    items: list = []
    problems: list[Problem] = []
    # Find computation head lines: a head-looking line that is not an instruction.
    heads = [i for i, (s, e) in enumerate(lines)
             if _HEAD_LINE.match(text, s, e) and not _INSTR_LINE.match(text, s, e)]
    # The module header and stack-frame tables: everything before the first head.
    first = heads[0] if heads else len(lines)
    prefix_end = lines[first][0] if first < len(lines) else len(text)
    if text[:prefix_end].strip():
        try:
            items.extend(parse_fragment(text[:prefix_end], "start"))
        except UnexpectedInput as exc:
            problems.append(_problem_from(exc, text[:prefix_end], 0))
    for k, h in enumerate(heads):
        stop = heads[k + 1] if k + 1 < len(heads) else len(lines)
        s = lines[h][0]
        e = lines[stop - 1][1] if stop > h else lines[h][1]
        # A text of one computation alone just failed as a whole, and so does a
        # computation with the whole text's error in its body (read alone, it
        # is read as in the whole text from its header on): no second try.
        alone = len(heads) == 1 and not text[:s].strip() and not text[e:].strip()
        failed = lines[h][1] <= error_at < e
        parsed = None if alone or failed else try_parse(text[s:e], "start", s, None, unfinished)
        if parsed is not None:
            items.extend(parsed)
            continue
        known = unfinished.get(s) if unfinished else None
        comp = _recover_computation(text, lines, h, stop, problems, known)
        if comp is not None:
            items.append(comp)
    return items, problems


def _incomplete(exc: UnexpectedInput, text: str, base: int, end: int) -> bool:
    """Whether a failed parse of ``text[base:end]`` may succeed with the next line
    joined: the input ended early, the piece ends with a comma whose attribute
    name is on the next line (``, name=`` is one token), or an opened bracket or
    string was not closed on this line."""
    if isinstance(exc, UnexpectedEOF):
        return True
    if isinstance(exc, UnexpectedToken):
        tok = exc.token
        if tok.type == "$END":
            return True
        rest = text[base + tok.end_pos:end]
        if tok.type in ("COMMA", "OPERAND_COMMA"):
            return not rest.strip()
        opened = str(tok.value).strip()
        closer = {"{": "}", "(": ")", "[": "]"}.get(opened)
        # `backend_config={` at a line's end: the value goes on until its bracket closes.
        return closer is not None and rest.count(closer) <= rest.count(opened)
    if isinstance(exc, UnexpectedCharacters):
        at = base + exc.pos_in_stream
        return text[at:at + 1] in "{[(\"'" or (
            text[at:at + 1] == "," and not text[at + 1:end].strip())
    return False


def _may_join(text: str, lines, ls: int, i: int, j: int, stop: int) -> bool:
    """Whether error recovery may read line ``j`` as part of the instruction
    starting on line ``i`` (at offset ``ls``; the computation's lines end before
    line ``stop``): within :data:`_MAX_JOIN` lines and :data:`_MAX_JOIN_CHARS`
    characters, and, past line ``i``, not the start of the next instruction."""
    if j >= stop or j >= i + _MAX_JOIN:
        return False
    return j == i or not (_NEW_INSTRUCTION.match(text, lines[j][0], lines[j][1])
                          or lines[j][1] - ls > _MAX_JOIN_CHARS)


def _recover_computation(text, lines, h, stop, problems,
                         known: scanner.Unfinished | None = None) -> Computation | None:
    """The computation whose header is on line ``h`` (its lines end before line
    ``stop``), read line by line; each line that does not parse adds its problem
    to ``problems``. ``known``: what the scanner read of it already; recovery
    takes its instructions up to the first written over several lines and reads
    on after them."""
    s, e = lines[h]
    # The header may continue over several lines until "{".
    head_end = h
    while head_end < stop - 1 and "{" not in text[lines[head_end][0]:lines[head_end][1]]:
        head_end += 1
    head_text_end = lines[head_end][1]
    try:
        head = driver._run(text[s:head_text_end].rstrip(), "computation_head", s)
    except UnexpectedInput as exc:
        problems.append(_problem_from(exc, text[s:head_text_end], s))
        return None
    _, is_entry, name, params, result, start, body_start = head
    comp = Computation(name, is_entry, params, result, start, body_start, head_text_end)
    i = head_end + 1
    closed = False
    if known is not None and i < stop and known.body == lines[i][0]:
        # The instructions the scanner read, each on a line of its own, as the
        # loop below reads them (scanner.instruction, line by line), up to the
        # first that goes on over several lines: the loop reads that one with
        # the grammar, which may not take it as the scanner did.
        taken = 0
        for ins in known.instructions:
            if text.find("\n", ins.start, ins.end) >= 0 or text.find("\r", ins.start, ins.end) >= 0:
                break
            ins.computation = comp
            taken += 1
        if taken:
            comp.instructions.extend(known.instructions[:taken])
            comp.end = known.instructions[taken - 1].end
            i = bisect.bisect_right(lines, (comp.end, len(text) + 1), i, stop)
    while i < stop:
        ls, le = lines[i]
        line = text[ls:le]
        stripped = line.strip()
        if not stripped or stripped.startswith("//"):
            i += 1
            continue
        if _CLOSE_LINE.match(line):
            comp.end = ls + line.index("}") + 1
            closed = True
            break
        parsed = None
        first_exc = None
        last_end = le
        j = i
        # The scanner reads most lines of a broken computation, in a fraction of
        # the grammar's time; it declines the others (and the broken one).
        scanned = scanner.instruction(_scanner_patterns(), text, ls) if driver.USE_SCANNER else None
        next_start = lines[i + 1][0] if i + 1 < len(lines) else len(text)
        if scanned is not None and scanned[1] == next_start:
            parsed, anonymous, inline = scanned[0], (), ()
        # up to the next instruction, or too far
        while parsed is None and _may_join(text, lines, ls, i, j, stop):
            if j > i and _may_join(text, lines, ls, i, j + 1, stop) and \
                    _left_open(text, ls, lines[j][1]):
                # Each join parses the piece again from its first line (of
                # 20 KB, say, a tuple shape before a backend_config written over
                # nine lines): no parse of a piece that leaves a bracket or a
                # string open, unless no line may follow it.
                j += 1
                continue
            try:
                parsed, anonymous, inline = _parse_instruction(text[ls:lines[j][1]], ls)
                break
            except UnexpectedInput as exc:
                exc = exc.with_traceback(None)  # kept past this block (see _parse)
                if first_exc is None:
                    first_exc = exc
                if not _incomplete(exc, text, ls, lines[j][1]):
                    if j > i and stripped[-1] in ",({[":
                        # The first line says it goes on: the error is further down.
                        first_exc, last_end = exc, lines[j][1]
                    break
            j += 1
        if parsed is not None:
            for ins in anonymous:  # nested operands, before their user
                ins.computation = comp
                comp.instructions.append(ins)
            comp.nested.extend(inline)
            parsed.computation = comp
            comp.instructions.append(parsed)
            comp.end = parsed.end
            i = j + 1
        else:
            # Report the first line's own error: for an incomplete line, at its end.
            problems.append(_problem_from(first_exc, text[ls:last_end], ls))
            i += 1
    for k in range(i + 1, stop):
        ls, le = lines[k]
        rest = text[ls:le].strip()
        if rest and not rest.startswith("//") and closed:
            message = (f"unexpected text after the end of computation {name.name}"
                       if not rest.startswith("HloModule") else
                       "a second HloModule: XLA reads one module per file; "
                       "separate modules with a `// -----` line (a split file)")
            problems.append(Problem(ls + text[ls:le].index(rest[0]), le, message))
            break
    if not closed:
        # XLA reads on into the next computation and fails at its header: the
        # error goes there (or to the end of the text), where XLA puts it.
        at = lines[stop][0] if stop < len(lines) else len(text)
        at_end = lines[stop][1] if stop < len(lines) else len(text)
        problems.append(Problem(at, max(at_end, at), f"computation {name.name} is not "
                                "closed with '}' before this line"))
        comp.closed = False
    return comp
