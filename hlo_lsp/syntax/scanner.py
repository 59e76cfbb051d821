"""The fast path for printed HLO: a scanner for the forms XLA's printer writes.

XLA prints every instruction on a line of its own, in one of a few forms
(``xla/hlo/ir/hlo_instruction.cc`` ``HloInstruction::ToString``)::

    [ROOT] %name = f32[8,128]{1,0} opcode(%a, %b), attr=value, calls=%comp, ...
    [ROOT] %name = (f32[2]{0}, s32[]) tuple(%a, /*index=5*/%b)
    %name = f32[] parameter(0), ...          %name = f32[] constant(0), ...

For these, a hand-written scanner costs a few regular-expression matches per
instruction, where lark's LALR parser costs one match and a parser step per
token and one Python callback per reduction: on a 4 MB dump the scanner builds
the model in well under half the time. It builds exactly the objects the
grammar's builder (:class:`hlo_lsp.syntax.builder._Builder`) builds.

``grammar/hlo.lark`` stays the one definition of the syntax:

- The scanner's patterns are composed from the grammar's own terminals (names,
  array shapes, literals, attribute values), taken from the built parser
  (:func:`Patterns.from_terminals`), so a change of a terminal changes both.
  So are the keywords it declines as names: the grammar's string terminals
  that its NAME terminal also matches.
- The scanner accepts only a subset of the language, and where the grammar's
  contextual lexer could read a text in another way (a keyword where a name
  goes, ``parameter(`` or ``constant`` where an opcode goes, an attribute that
  names computations), it declines. Anything else it does not know (block
  comments outside operand lists and tuple shapes, nested operand
  instructions, inline computations, an instruction over several lines, empty
  operand slots, ``literal=``) makes it decline too.
- A computation it declines is parsed by the grammar (the ``fallback``); a text
  the grammar rejects is the grammar's to report, with its error recovery.

``tests/unit/syntax/test_scanner.py`` checks that the scanner and the grammar
build equal models on every file of ``../shared/corpus`` and ``examples/``, and
on mutations of real computations (where the scanner must decline or agree).
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Iterable

from hlo_lsp.model.hlo import (Attribute, Computation, ComputationRef, Instruction, Operand,
                               Parameter, Ref, ShapeToken, shift_instructions, unescape)

#: What, right after an instruction's operands or attributes, rules out one
#: more attribute (which begins with blanks, then ``,``): a line end, or the
#: end of the text ("").
_NOT_ATTRIBUTE = frozenset({"\n", "\r", ""})

#: Tuple shapes nested deeper than this are left to the grammar.
MAX_TUPLE_DEPTH = 32

_BLANK = r"[ \t]*"
#: Blanks and ``/* ... */`` comments on one line (XLA's ``/*index=5*/``).
_GAP = r"[ \t]*(?:/\*(?:[^*\n]|\*(?!/))*+\*/[ \t]*)*+"
_IDENT = r"[a-zA-Z_][a-zA-Z0-9_.\-]*+"
#: A line break: ``\n``, ``\r\n`` or ``\r``, as the LSP specification and XLA's
#: lexer end lines and ``//`` comments (the grammar reads all three as blanks).
_BREAK = r"(?:\n|\r\n?)"
#: The end of a line, after blanks and a ``//`` comment (the grammar's COMMENT).
_LINE_END = rf"[ \t]*+(?://[^\n\r]*+)?(?:{_BREAK}|\Z)"


class Patterns:
    """The scanner's regular expressions, built around the grammar's terminals.

    ``terminals``: name -> regular expression text of the grammar's terminals
    (as lark compiles them: ``TerminalDef.pattern.to_regexp()``); NAME,
    ARRAY_SHAPE, LITERAL, STRING, ATTR_VALUE, COMPUTATION_ATTR,
    CONTROL_PREDECESSORS and LITERAL_ATTR are used. Raises KeyError when one of
    them is missing. ``keywords``: the grammar's string terminals that NAME also
    matches (``ROOT``, ``ENTRY``, ``HloModule``, the stack-frame table names):
    lark's lexer reads such a name as the keyword, so the scanner declines it.
    """

    def __init__(self, terminals: dict[str, str], keywords: Iterable[str]) -> None:
        self.keywords = frozenset(keywords)
        name = f"(?>({terminals['NAME']}))"
        shape = f"(?>{terminals['ARRAY_SHAPE']})"
        literal = f"(?>{terminals['LITERAL']})"
        opcode_part = (
            rf"(?:(parameter){_BLANK}\({_BLANK}(-?[0-9]+){_BLANK}\)"
            rf"|(constant)(?=[ \t]*\(){_BLANK}({literal})"
            rf"|(?!(?:parameter|constant)[ \t\f\r\n]*\()({_IDENT}){_BLANK}\({_BLANK})")
        definition = rf"[ \t]*(?:(ROOT)[ \t]+)?{name}{_BLANK}={_BLANK}"
        #: An instruction up to its operands, with an array shape: groups
        #: root, name, shape, parameter, number, constant, literal, opcode.
        self.instruction = re.compile(definition + f"({shape}){_BLANK}" + opcode_part)
        if self.instruction.groups != 8:
            raise ValueError("a terminal of the grammar has a capturing group")
        #: An instruction's definition alone (root, name): a tuple shape follows.
        self.definition = re.compile(definition + r"(?=\()")
        #: What follows a tuple shape: the groups of ``instruction`` from parameter.
        self.opcode = re.compile(_BLANK + opcode_part)
        #: One operand and what ends it: shape, name, "," or ")".
        self.operand = re.compile(rf"{_GAP}(?:({shape}){_BLANK})?{name}{_BLANK}([,)])")
        #: An operand's name after its tuple shape: name, "," or ")".
        self.operand_name = re.compile(rf"{_BLANK}{name}{_BLANK}([,)])")
        self.no_operands = re.compile(r"[ \t]*\)")
        #: An attribute's ``, name=``: group name.
        self.attribute_name = re.compile(rf"[ \t]*,{_BLANK}({_IDENT}){_BLANK}={_BLANK}")
        #: `, name=` of the attributes the grammar reads in forms of their own
        #: (hlo.lark: names of computations, control predecessors, `literal=`).
        computation_attribute = terminals["COMPUTATION_ATTR"]
        control_predecessors = terminals["CONTROL_PREDECESSORS"]
        special = f"(?:{computation_attribute}|{control_predecessors}|{terminals['LITERAL_ATTR']})"
        self.computation_attribute = re.compile(f"[ \\t]*{computation_attribute}")
        self.control_predecessors = re.compile(f"[ \\t]*{control_predecessors}")
        #: An attribute of no special form, name and value: groups name, value.
        self.plain_attribute = re.compile(
            rf"[ \t]*(?!{special}),{_BLANK}({_IDENT}){_BLANK}={_BLANK}"
            rf"({terminals['ATTR_VALUE']})")
        #: Operands as XLA prints them: names, ", " between them, then ")".
        self.plain_operands = re.compile(
            rf"((?>{terminals['NAME']})(?:, (?>{terminals['NAME']}))*+)\)")
        #: A value naming one computation, or a braced list of names.
        self.computation_name = re.compile(name)
        self.name_list = re.compile(rf"\{{{_BLANK}(?:{name}(?:{_BLANK},{_BLANK}{terminals['NAME']})*+)?{_BLANK}\}}")
        self.name = re.compile(terminals["NAME"])
        self.array_shape = re.compile(shape)
        self.gap = re.compile(_GAP)
        self.end_of_line = re.compile(_LINE_END)
        #: Lines with nothing but blanks or a ``//`` comment.
        self.blank_lines = re.compile(rf"(?:[ \t]*+(?://[^\n\r]*+)?{_BREAK})*+")
        self.rest_blank = re.compile(r"[ \t\f\r\n]*+\Z")
        #: A computation's ``}`` line, with its execution thread: groups ``}``,
        #: string.
        self.close = re.compile(
            rf"[ \t]*(\}})(?:{_BLANK},{_BLANK}execution_thread{_BLANK}={_BLANK}"
            rf"((?>{terminals['STRING']})))?{_LINE_END}")
        #: A computation's header up to its signature: groups ENTRY, name.
        self.head = re.compile(rf"[ \t]*(?:(ENTRY)[ \t]+)?{name}{_BLANK}")
        self.parameter = re.compile(rf"{_GAP}{name}{_BLANK}:{_BLANK}")
        self.arrow = re.compile(rf"{_BLANK}->{_BLANK}")
        self.body = re.compile(rf"{_BLANK}\{{{_LINE_END}")
        #: A line that may be a computation header, at column 0 as XLA prints
        #: them (the text before the first is the module header and the
        #: stack-frame tables; an indented first header is read with them by the
        #: grammar, and declined), at the text's start or after a line break: a
        #: search led by the break skips to each one and fails at its first
        #: character, where ``^[ \t]*`` is tried at every character (a split
        #: file's parts are parsed in texts blanked with spaces but for the part:
        #: 0.7 s for the 134 parts of a 172 KB file).
        head_line = rf"(?:ENTRY[ \t]+)?%?{_IDENT}[ \t]*(?:\(|->|\{{)"
        self.head_at_start = re.compile(head_line)
        self.head_after_break = re.compile(rf"[\n\r]({head_line})")

    @classmethod
    def from_terminals(cls, terminals: Iterable) -> "Patterns":
        """Patterns from lark ``TerminalDef`` objects (``Lark.terminals``); the
        keywords are the string terminals NAME matches whole."""
        terminals = list(terminals)
        regexps = {t.name: t.pattern.to_regexp() for t in terminals}
        name = re.compile(regexps["NAME"])
        return cls(regexps, [t.pattern.value for t in terminals
                             if t.pattern.type == "str" and name.fullmatch(t.pattern.value)])


class _Decline(Exception):
    """The scanner does not read this text: the grammar does."""


class Unfinished:
    """A computation as far as the scanner read it before it declined a line:
    the ``instructions`` on its lines before that one, in order; ``body``, the
    offset after its header's line; ``resume``, the start of the last
    instruction's line. Offsets are the document's, as the instructions'. When
    the computation does not parse, a second scan of it starts from here, and
    error recovery (:func:`hlo_lsp.syntax.parser.parse`) takes its instructions
    up to the first one written over several lines: their lines are not read
    again."""

    __slots__ = ("instructions", "body", "resume")

    def __init__(self, instructions: list[Instruction], body: int, resume: int) -> None:
        self.instructions, self.body, self.resume = instructions, body, resume

    def shift(self, delta: int) -> None:
        """Move every offset by ``delta`` characters, the instructions' too."""
        shift_instructions(self.instructions, delta)
        self.body += delta
        self.resume += delta


class _Partial(_Decline):
    """The scanner read a computation's header and its first instructions, then
    declined a line: what it read is ``unfinished``."""

    def __init__(self, unfinished: Unfinished) -> None:
        super().__init__()
        self.unfinished = unfinished


#: Parses a piece of text with the grammar's ``start`` rule: (text, base) -> the
#: parsed items, or None when the piece does not parse.
Fallback = Callable[[str, int], "list | None"]


def scan(patterns: Patterns, text: str, base: int, fallback: Fallback,
         items: list | None = None, unfinished: dict[int, Unfinished] | None = None
         ) -> list | None:
    """The items of the grammar's ``start`` rule for ``text`` (which begins at
    offset ``base`` of its document): the module header and stack-frame tables as
    the grammar reads them, then one :class:`Computation` per computation.

    The module header and tables, and every computation the scanner declines,
    are read by ``fallback``. Returns None when ``fallback`` fails on any of
    them: the text does not parse, and the caller parses it whole with the
    grammar (for the error, and error recovery). ``items``: the list to fill
    (returned), which then keeps what was read before such a failure.
    ``unfinished``: the document offset of a computation's first line ->
    :class:`Unfinished`; a computation found there is read on from it, and the
    computation that makes the text fail is put there."""
    if items is None:
        items = []
    pos = first_head(patterns, text)
    if text[:pos].strip():
        prefix = fallback(text[:pos], base)  # (with any indented computation)
        if prefix is None:
            return None
        items.extend(prefix)
    end = len(text)
    blank_lines = patterns.blank_lines.match
    while True:
        pos = blank_lines(text, pos).end()
        if pos >= end or patterns.rest_blank.match(text, pos):
            return items
        known = unfinished.get(base + pos) if unfinished else None
        if known is None:
            try:
                comp, pos = _computation(patterns, text, pos, base)
                items.append(comp)
                continue
            except _Partial as partial:
                known = partial.unfinished
            except (_Decline, IndexError):
                pass
        stop = _computation_end(text, pos)
        if known is None:  # declined before its first instruction
            parsed = _grammar_piece(text, pos, stop, base, fallback)
        else:
            parsed = _resume(known, text, pos, stop, base, fallback)
            if parsed is None and unfinished is not None:
                unfinished[base + pos] = known
        if parsed is None:
            return None
        items.extend(parsed)
        pos = stop


def _grammar_piece(text: str, pos: int, stop: int, base: int, fallback: Fallback) -> list | None:
    """The computations of ``text[pos:stop]`` as ``fallback`` (the grammar) reads
    them; None when it fails, or reads anything else (a module header after a
    computation: no text of the grammar)."""
    parsed = fallback(text[pos:stop], base + pos)
    if parsed is None or not all(isinstance(it, Computation) for it in parsed):
        return None
    return parsed


def _resume(partial: Unfinished, text: str, pos: int, stop: int, base: int,
            fallback: Fallback) -> list | None:
    """The computation ``text[pos:stop]`` whose lines the scanner read up to
    ``partial.resume``: the grammar reads its header, its last instruction the
    scanner read, and the rest, with the instructions before blanked (the same
    offsets; the grammar's state after one instruction is its state after any
    number). When that parses as the one computation, the scanner's instructions
    are put before the grammar's; when it does not parse, neither does the whole
    piece, at the same place (None). Anything else: the whole piece is the
    grammar's, as for a declined header."""
    body, resume = partial.body - base, partial.resume - base
    blanked = text[pos:body] + " " * (resume - body) + text[resume:stop]
    parsed = fallback(blanked, base + pos)
    if parsed is None:
        return None
    read = partial.instructions
    if len(parsed) == 1 and isinstance(parsed[0], Computation) and \
            parsed[0].instructions and parsed[0].instructions[0].start == read[-1].start:
        comp = parsed[0]
        holder = comp.instructions[0]._computation
        for ins in read[:-1]:
            ins._computation = holder
        comp.instructions[:0] = read[:-1]
        return parsed
    return _grammar_piece(text, pos, stop, base, fallback)


def instruction(patterns: Patterns, text: str, pos: int, base: int = 0
                ) -> tuple[Instruction, int] | None:
    """The instruction on the line of ``text`` at ``pos`` read alone (as the
    grammar's ``instruction`` rule builds it, offsets plus ``base``) and the
    offset after its line; None when the scanner declines the line, which is
    then the grammar's to read. Error recovery reads the lines of a broken
    computation with it (:func:`hlo_lsp.syntax.parser.parse`)."""
    try:
        return _instruction(patterns, text, pos, base)
    except (_Decline, IndexError):
        return None


def first_head(patterns: Patterns, text: str) -> int:
    """The offset of the first line of ``text`` that may be a computation header
    (the length of the text if none)."""
    if patterns.head_at_start.match(text):
        return 0
    found = patterns.head_after_break.search(text)
    return found.start(1) if found is not None else len(text)


#: A ``}`` at a line's start, and the rest of its line with its break.
_CLOSE_LINE = re.compile(rf"[\n\r]\}}[^\n\r]*+(?:{_BREAK}|\Z)")


def _computation_end(text: str, pos: int) -> int:
    """The end of the line of the first ``}`` at a line start after ``pos`` (the
    end of the text if there is none)."""
    close = _CLOSE_LINE.search(text, pos)
    return len(text) if close is None else close.end()


def _computation(p: Patterns, text: str, pos: int, base: int) -> tuple[Computation, int]:
    """The computation whose header starts at ``pos``, and the offset after its
    closing ``}`` line. Raises _Decline (or IndexError at the end of the text)."""
    m = p.head.match(text, pos)
    if m is None or m.group(2) in p.keywords:
        raise _Decline
    is_entry = m.group(1) is not None
    start = m.start(1) if is_entry else m.start(2)
    name = _ref(m, 2, base)
    pos = m.end()
    params: list[Parameter] = []
    result = None
    if text[pos] == "(":
        params, pos = _parameters(p, text, pos + 1, base)
        arrow = p.arrow.match(text, pos)
        if arrow is not None:
            result, pos = _shape(p, text, arrow.end(), base)
    elif text.startswith("->", pos):
        result, pos = _shape(p, text, p.arrow.match(text, pos).end(), base)
    body = p.body.match(text, pos)
    if body is None:
        raise _Decline
    body_start = text.index("{", pos) + base
    pos = body.end()
    instructions: list[Instruction] = []
    blank_lines = p.blank_lines.match
    close = p.close.match
    instruction = _instruction
    body_end = resume = pos
    try:
        while True:
            pos = blank_lines(text, pos).end()
            closed = close(text, pos)
            if closed is not None:
                break
            ins, after = instruction(p, text, pos, base)
            instructions.append(ins)
            resume, pos = pos, after
    except (_Decline, IndexError):
        if not instructions:
            raise
        raise _Partial(Unfinished(instructions, body_end + base, resume + base)) from None
    thread = closed.group(2)
    if thread is None:
        end = closed.end(1) + base
    else:  # as builder._Builder.execution_thread reads it
        end = closed.end(2) + base
        thread = unescape(thread[1:-1])
    comp = Computation(name, is_entry, params, result, start + base, body_start, end,
                       instructions, thread)
    holder = weakref.ref(comp)  # as the grammar's builder does (builder._Builder.computation)
    for ins in instructions:
        ins._computation = holder
    return comp, closed.end()


def _ref(m: re.Match, group: int, base: int) -> Ref:
    """The Ref of a NAME matched as ``group`` of ``m`` (its range keeps the ``%``)."""
    value = m.group(group)
    start = m.start(group) + base
    return Ref(value[1:] if value[0] == "%" else value, start, start + len(value))


def _parameters(p: Patterns, text: str, pos: int, base: int) -> tuple[list[Parameter], int]:
    """A signature's ``name: shape, ...)`` from just after its ``(``: the
    parameters and the offset after ``)``."""
    params: list[Parameter] = []
    closed = p.no_operands.match(text, pos)
    if closed is not None:
        return params, closed.end()
    while True:
        m = p.parameter.match(text, pos)
        if m is None or m.group(1) in p.keywords:
            raise _Decline
        shape, pos = _shape(p, text, m.end(), base)
        params.append(Parameter(_ref(m, 1, base), shape))
        pos = p.gap.match(text, pos).end()
        if text[pos] == ")":
            return params, pos + 1
        if text[pos] != ",":
            raise _Decline
        pos += 1


def _shape(p: Patterns, text: str, pos: int, base: int, depth: int = 0,
           tuple_only: bool = False) -> tuple[ShapeToken, int]:
    """The array or tuple shape at ``pos`` (``tuple_only``: a tuple shape) and the
    offset after it."""
    if text[pos] != "(":
        if tuple_only:
            raise _Decline
        m = p.array_shape.match(text, pos)
        if m is None:
            raise _Decline
        return ShapeToken(m.group(), pos + base, m.end() + base), m.end()
    if depth >= MAX_TUPLE_DEPTH:
        raise _Decline
    start = pos
    elements: list[ShapeToken] = []
    pos = p.gap.match(text, pos + 1).end()
    if text[pos] != ")":
        while True:
            element, pos = _shape(p, text, pos, base, depth + 1)
            elements.append(element)
            pos = p.gap.match(text, pos).end()
            if text[pos] == ")":
                break
            if text[pos] != ",":
                raise _Decline
            pos = p.gap.match(text, pos + 1).end()
    # the text as the grammar's builder renders a tuple (builder._Builder.tuple_shape)
    rendered = "(" + ", ".join(e.text for e in elements) + ")"
    return ShapeToken(rendered, start + base, pos + 1 + base, elements), pos + 1


def _instruction(p: Patterns, text: str, pos: int, base: int) -> tuple[Instruction, int]:
    """The instruction on the line at ``pos`` and the offset of the next line."""
    head = m = p.instruction.match(text, pos)
    if m is not None:
        shape = ShapeToken(m.group(3), m.start(3) + base, m.end(3) + base)
        at = 4  # the group of "parameter" in p.instruction
    else:  # a tuple shape, or not an instruction the scanner reads
        head = p.definition.match(text, pos)
        if head is None:
            raise _Decline
        shape, after = _shape(p, text, head.end(), base)
        m = p.opcode.match(text, after)
        if m is None:
            raise _Decline
        at = 1  # the group of "parameter" in p.opcode
    if head.group(2) in p.keywords:
        raise _Decline
    ref = _ref(head, 2, base)
    is_root = head.group(1) is not None
    start = (head.start(1) if is_root else head.start(2)) + base
    operands: list[Operand] = []
    parameter_number = literal = None
    if m.group(at) is not None:  # parameter(N)
        opcode, opcode_start = "parameter", m.start(at)
        parameter_number = int(m.group(at + 1))
        end = pos = m.end()
    elif m.group(at + 2) is not None:  # constant(...)
        opcode, opcode_start = "constant", m.start(at + 2)
        literal = m.group(at + 3)
        end = pos = m.end()
    else:
        opcode, opcode_start = m.group(at + 4), m.start(at + 4)
        pos = m.end()
        # operands as XLA prints them, the most common form, first (a name
        # cannot begin where `)` or a blank does: the two forms exclude each other)
        plain = p.plain_operands.match(text, pos)
        closed = None if plain is not None else p.no_operands.match(text, pos)
        if closed is not None:
            end = pos = closed.end()
        elif plain is not None:
            ostart = pos + base
            for oname in plain.group(1).split(", "):
                if oname in p.keywords:
                    raise _Decline
                oend = ostart + len(oname)
                operands.append(Operand(Ref(oname[1:] if oname[0] == "%" else oname,
                                            ostart, oend)))
                ostart = oend + 2
            end = pos = plain.end()
        else:
            operand = p.operand.match
            while True:
                o = operand(text, pos)
                if o is not None:
                    oshape = None if o.group(1) is None else ShapeToken(
                        o.group(1), o.start(1) + base, o.end(1) + base)
                    at_name = 2
                else:  # an operand of tuple shape: `(f32[2]{0}, u8[0]{0}) %custom-call`
                    oshape, pos = _shape(p, text, p.gap.match(text, pos).end(), base,
                                         tuple_only=True)
                    o = p.operand_name.match(text, pos)
                    if o is None:
                        raise _Decline
                    at_name = 1
                oname = o.group(at_name)
                if oname in p.keywords:
                    raise _Decline
                ostart = o.start(at_name) + base
                operands.append(Operand(Ref(oname[1:] if oname[0] == "%" else oname, ostart,
                                            ostart + len(oname)), oshape))
                pos = o.end()
                if o.group(at_name + 1) == ")":
                    break
            end = pos
    attributes: list[Attribute] = []
    called: list[ComputationRef] = []
    control: list[Ref] = []
    attribute_name = p.attribute_name.match
    plain_attribute = p.plain_attribute.match
    # an attribute begins with `,` after blanks: a line that ends here has none
    while text[pos:pos + 1] not in _NOT_ATTRIBUTE:
        a = plain_attribute(text, pos)
        if a is not None:
            pos = a.end()
            attributes.append(Attribute(a.group(1), a.start(1) + base, a.group(2),
                                        a.start(2) + base, pos + base))
            continue
        a = attribute_name(text, pos)
        if a is None:
            break
        aname = a.group(1)
        name_start = a.start(1) + base
        computations = p.computation_attribute.match(text, a.start()) is not None
        if not computations and p.control_predecessors.match(text, a.start()) is None:
            raise _Decline  # `literal=`, or a value the grammar does not read as ATTR_VALUE
        refs, value_start, value_end, rendered, pos = _names(p, text, a.end(), base,
                                                             computations)
        attributes.append(Attribute(aname, name_start, rendered, value_start, value_end))
        if computations:
            called.extend(ComputationRef(aname, r) for r in refs)
        else:
            control.extend(refs)
    eol = p.end_of_line.match(text, pos)
    if eol is None:
        raise _Decline
    if attributes:
        end = attributes[-1].value_end
    else:
        end += base
    return Instruction(ref, opcode, opcode_start + base, shape, operands, attributes, called,
                       control, start, end, is_root, parameter_number, literal), eol.end()


def _names(p: Patterns, text: str, pos: int, base: int, single: bool):
    """The computation or instruction names of an attribute's value at ``pos``:
    (refs, value start, value end, value as the builder renders it, offset after).
    ``single``: one bare name is allowed (computation attributes)."""
    if single and text[pos] != "{":
        m = p.computation_name.match(text, pos)
        if m is None or m.group(1) in p.keywords:
            raise _Decline
        ref = _ref(m, 1, base)
        return [ref], ref.start, ref.end, "%" + ref.name, m.end()
    m = p.name_list.match(text, pos)
    if m is None:
        raise _Decline
    refs = []
    for n in p.name.finditer(text, pos + 1, m.end() - 1):
        if n.group() in p.keywords:
            raise _Decline
        refs.append(_ref(n, 0, base))
    rendered = "{" + ", ".join("%" + r.name for r in refs) + "}"
    return refs, pos + base, m.end() + base, rendered, m.end()


__all__ = ["MAX_TUPLE_DEPTH", "Patterns", "Unfinished", "first_head", "scan"]
