"""Parse HLO text into the model of :mod:`hlo_lsp.model`, with error recovery.

The syntax is ``grammar/hlo.lark`` (LALR, contextual lexer). The lark
transformer below builds model objects while parsing (no parse tree), which is
the fast path for valid dumps: one pass over the text.

Error recovery: when the whole text does not parse, the first error is reported
where lark found it (as XLA reports its first error), and the text is re-read in
pieces: the module header, then each computation (a header line through its
closing ``}``). A computation that still fails is parsed line by line with the
grammar's ``computation_head`` and ``instruction`` start rules, so one broken
instruction costs one diagnostic and the rest of the file stays navigable.
"""

from __future__ import annotations

import bisect
import gc
import re
import threading
import weakref
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

from lark import Lark, Token, Transformer
from lark.exceptions import (UnexpectedCharacters, UnexpectedEOF, UnexpectedInput,
                             UnexpectedToken)

from hlo_lsp.model.hlo import Attribute, Computation, ComputationRef, FileLocation, HloModule, Instruction, ModulePart, Operand, Parameter, Problem, Ref, ShapeToken, unescape
from hlo_lsp.model.shapes import MAX_TUPLE_DEPTH
from hlo_lsp.syntax import scanner
from hlo_lsp.syntax.lark_compat import CYTHON_PLUGINS, build_scanners, streamline, token_types
from hlo_lsp.syntax.split import blank_outside, blanked, split_parts
from hlo_lsp.syntax.lines import LineIndex

#: Token classes the builder may receive (lark's, and lark-cython's).
_TOKEN_TYPES: tuple[type, ...] = token_types()
GRAMMAR_FILE = "hlo.lark"
_ROW_ITEM = re.compile(r"(?<![A-Za-z_])([A-Za-z_]++)=(-?\d+)")   # linear: see _METADATA_ITEM


def grammar_text() -> str:
    """The text of ``hlo.lark``: from the installed package (the wheel ships it as
    ``hlo_lsp/grammar/hlo.lark``) or, in a source checkout, from ``grammar/``.

    Raises FileNotFoundError if neither exists.
    """
    packaged = resources.files("hlo_lsp").joinpath("grammar", GRAMMAR_FILE)
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    source = Path(__file__).resolve().parents[2] / "grammar" / GRAMMAR_FILE
    return source.read_text(encoding="utf-8")


#: The text of a tuple shape nested deeper than the model describes.
DEEP_TUPLE_TEXT = f"(a tuple nested more than {MAX_TUPLE_DEPTH} levels)"


class _Builder(Transformer, threading.local):
    """Builds model objects from grammar rules; ``base`` offsets every position.

    Callbacks receive a rule's children as lark hands them over: tokens (with
    ``type``, ``value``, ``start_pos``, ``end_pos``) and what the callbacks of
    sub-rules returned. The hot rules (``instruction``, ``instructions``,
    ``operands``, the attribute alternatives) keep every child token, so their
    callbacks index the children by position; see ``grammar/hlo.lark``.

    The builder is a ``threading.local``: its state (``base``, the pending
    nested instructions and inline computations) is each thread's own, so one
    parser, with one builder, serves every thread.
    """

    def __init__(self) -> None:
        super().__init__(visit_tokens=False)
        self.base = 0
        #: Nested operand instructions not yet placed in a computation (they go
        #: just before their user, by ``instructions``); a stack of the lists
        #: set aside while an inline computation's body is read.
        self.anonymous: list[Instruction] = []
        self._set_aside: list[tuple[list[Instruction], list[Computation]]] = []
        #: Inline computations not yet given to the computation holding them.
        self.inline: list[Computation] = []
        #: id() -> nesting depth of the tuple shapes of this parse nested two
        #: levels and more (see :meth:`tuple_shape`)
        self.depths: dict[int, int] = {}

    def reset(self) -> None:
        """Forget what an earlier (failed) parse left pending."""
        self.anonymous = []
        self._set_aside = []
        self.inline = []
        self.depths = {}

    # -- helpers ---------------------------------------------------------
    def _ref(self, tok: Token) -> Ref:
        """The Ref of a NAME token (without its ``%``)."""
        value = tok.value
        start = tok.start_pos + self.base
        return Ref(value[1:] if value[0] == "%" else value, start, start + len(value))

    def _shape(self, tok: Token) -> ShapeToken:
        """The ShapeToken of an ARRAY_SHAPE token."""
        return ShapeToken(tok.value, tok.start_pos + self.base, tok.end_pos + self.base)

    # -- module ------------------------------------------------------------
    def start(self, items):
        return items

    def module_header(self, items):
        name = self._ref(items[1])
        attrs = [a for a in items[2:] if isinstance(a, Attribute)]
        end = attrs[-1].value_end if attrs else name.end
        return ("header", name, attrs, items[0].start_pos + self.base, end)

    def header_attribute(self, items):
        """``ATTRIBUTE | ATTR_NAME ATTR_VALUE``, as in instructions."""
        acc = self.attribute(items) if len(items) == 1 else self.split_attribute(items)
        return acc[0][0]

    def string_row(self, items):
        num, text = items
        return (int(num.value), unescape(text.value[1:-1]), text.end_pos + self.base)

    def braced_row(self, items):
        num, text = items
        return (int(num.value), text.value, text.end_pos + self.base)

    def _table(self, kind, items):
        kw = items[0]
        rows = items[1:]
        end = rows[-1][2] if rows else kw.end_pos + self.base
        return ("table", kind, kw.start_pos + self.base, end, [r[:2] for r in rows])

    def file_names(self, items):
        return self._table("FileNames", items)

    def function_names(self, items):
        return self._table("FunctionNames", items)

    def file_locations(self, items):
        return self._table("FileLocations", items)

    def stack_frames(self, items):
        return self._table("StackFrames", items)

    # -- computations ------------------------------------------------------
    def computation_head(self, items):
        is_entry = items[0].type == "ENTRY"
        name_tok = items[1] if is_entry else items[0]
        params: list[Parameter] = []
        result = None
        for it in items:
            if isinstance(it, tuple) and it and it[0] == "signature":
                params, result = it[1], it[2]
        lbrace = items[-1]
        return ("head", is_entry, self._ref(name_tok), params, result,
                items[0].start_pos + self.base, lbrace.end_pos - 1 + self.base)

    def signature(self, items):
        """``LPAR parameters? RPAR (ARROW shape)?`` or ``ARROW shape``."""
        params = items[1] if items[1].__class__ is list else []
        result = items[-1] if isinstance(items[-1], ShapeToken) else None
        return ("signature", params, result)

    def parameters(self, items):
        """``(parameters COMMA)? (PARAM_NAME | NAME) shape``: the parameters so
        far, with this one appended."""
        if len(items) == 4:
            params, _, tok, shape = items
        else:
            params = []
            tok, shape = items
        if shape.__class__ is not ShapeToken:
            shape = self._shape(shape)
        name = tok.value.rstrip()
        if name[-1] == ":":  # `name: `; XLA also takes the name without it
            name = name[:-1].rstrip()
        start = tok.start_pos + self.base
        params.append(Parameter(Ref(name[1:] if name[0] == "%" else name, start,
                                    start + len(name)), shape))
        return params

    def computation(self, items):
        _, is_entry, name, params, result, start, body_start = items[0]
        instructions = items[1] if len(items) > 2 and isinstance(items[1], list) else []
        end = body_start + 1
        thread = None
        for it in items[1:]:
            if isinstance(it, _TOKEN_TYPES):  # RBRACE
                end = it.end_pos + self.base
            elif isinstance(it, tuple):  # execution_thread
                thread = it[1]
                end = it[2]
        comp = Computation(name, is_entry, params, result, start, body_start, end,
                           instructions, thread)
        holder = weakref.ref(comp)  # Instruction.computation, shared by all of them
        for ins in instructions:
            ins._computation = holder
        if self.inline:
            comp.nested = self.inline
            self.inline = []
        return comp

    def execution_thread(self, items):
        tok = items[-1]
        return ("thread", unescape(tok.value[1:-1]), tok.end_pos + self.base)

    def instructions(self, items):
        anonymous = self.anonymous
        if len(items) == 1:
            if anonymous:  # nested operands come before their user (XLA's order)
                self.anonymous = []
                return anonymous + items
            return items  # a new list holding the first instruction
        instructions, instruction = items
        if anonymous:
            instructions.extend(anonymous)
            self.anonymous = []
        instructions.append(instruction)
        return instructions

    # -- instructions ------------------------------------------------------
    def instruction(self, items):
        """``ROOT? (TYPED_DEFINITION | DEFINITION shape?) (OPCODE operands? RPAR |
        PARAMETER | PARAMETER_OPEN INT RPAR | CONSTANT LITERAL) attributes?``"""
        base = self.base
        tok = items[0]
        is_root = tok.type == "ROOT"
        if is_root:
            start = tok.start_pos + base
            tok = items[1]
            i = 2
        else:
            i = 1
        value = tok.value  # `  %name = ` or `  %name = f32[2]{0}`
        text = value.lstrip()
        name_start = tok.start_pos + base + len(value) - len(text)
        if not is_root:
            start = name_start
        equal = text.index("=")
        name = text[:equal].rstrip()
        ref = Ref(name[1:] if name[0] == "%" else name, name_start, name_start + len(name))
        shape = None
        if tok.type == "TYPED_DEFINITION":
            shape_text = text[equal + 1:].lstrip()
            end = tok.end_pos + base
            shape = ShapeToken(shape_text, end - len(shape_text), end)
        tok = items[i]
        i += 1
        if tok.__class__ is ShapeToken:
            shape = tok
            tok = items[i]
            i += 1
        elif tok.type == "ARRAY_SHAPE":
            shape = ShapeToken(tok.value, tok.start_pos + base, tok.end_pos + base)
            tok = items[i]
            i += 1
        kind = tok.type
        value = tok.value  # `  opcode(`, `  parameter(0)`, `  parameter(` or `  constant`
        text = value.lstrip()
        opcode_start = tok.start_pos + base + len(value) - len(text)
        operands: list[Operand] = []
        parameter_number = literal = None
        if kind == "OPCODE":
            if text[-1] == "(":
                opcode = text[:-1]
                if opcode[-1] <= " ":
                    opcode = opcode.rstrip()
            else:  # `opcode(,` with empty operand slots
                opcode = text[:text.index("(")].rstrip()
            tok = items[i]
            i += 1
            if tok.__class__ is list:
                operands = tok
                tok = items[i]
                i += 1
        elif kind == "PARAMETER":  # `parameter(N)`
            opcode = "parameter"
            parameter_number = int(text[text.index("(") + 1:-1])
        elif kind == "PARAMETER_OPEN":
            opcode = "parameter"
            parameter_number = int(items[i].value)
            tok = items[i + 1]
            i += 2
        else:  # CONSTANT LITERAL
            opcode = "constant"
            tok = items[i]
            literal = tok.value
            i += 1
        if i < len(items):
            attributes, called, control = items[i]
            return Instruction(ref, opcode, opcode_start, shape, operands, attributes,
                               called, control, start, attributes[-1].value_end,
                               is_root, parameter_number, literal)
        return Instruction(ref, opcode, opcode_start, shape, operands, [], [], [], start,
                           tok.end_pos + base, is_root, parameter_number, literal)

    def operands(self, items):
        """``(operands COMMA)? shape? NAME`` or ``(operands COMMA)? INT``: the list
        of operands so far, with this one appended."""
        first = items[0]
        if first.__class__ is list:
            operands = first
            first = items[2]
        else:
            operands = []
        tok = items[-1]  # NAME or INT
        value = tok.value
        start = tok.start_pos + self.base
        ref = Ref(value[1:] if value[0] == "%" else value, start, start + len(value))
        if tok is first:
            operands.append(Operand(ref))
        else:
            operands.append(Operand(ref, first if first.__class__ is ShapeToken
                                    else self._shape(first)))
        return operands

    def nested(self, items):
        """``shape (OPCODE operands? RPAR | PARAMETER | CONSTANT LITERAL)
        attributes?`` in place of an operand: an instruction named
        ``<opcode>.anon`` (hlo_parser.cc), its name range the opcode's."""
        first = items[0]
        shape_start = first.start if first.__class__ is ShapeToken else first.start_pos + self.base
        opcode_tok = items[1]
        # The instruction callback reads a definition token first: give it one
        # that defines no name, and name the instruction after its opcode.
        fake = Token("DEFINITION", "_=", start_pos=opcode_tok.start_pos)
        ins = self.instruction([fake] + items)
        name = ins.opcode + ".anon"
        ins.name = Ref(name, ins.opcode_start, ins.opcode_start + len(ins.opcode))
        ins.start = shape_start
        return ins

    def nested_operand(self, items):
        """``(operands OPERAND_COMMA)? nested``: the nested instruction waits in
        ``anonymous`` for its computation; its user's operand names it."""
        ins = items[-1]
        operands = items[0] if items[0].__class__ is list else []
        self.anonymous.append(ins)
        operands.append(Operand(Ref(ins.name.name, ins.name.start, ins.name.end), ins.shape))
        return operands

    # -- shapes ------------------------------------------------------------
    def shape(self, items):
        tok = items[0]
        return tok if isinstance(tok, ShapeToken) else self._shape(tok)

    def tuple_shape(self, items):
        """``LPAR [shape (COMMA shape)*] RPAR``: spans from "(" to just past ")".

        The text is rendered from the elements' texts, up to the depth the model
        describes (:data:`hlo_lsp.model.shapes.MAX_TUPLE_DEPTH`); deeper, it is
        :data:`DEEP_TUPLE_TEXT`, so that a tuple nested ``d`` levels costs
        O(d), not the O(d^2) characters of every level's rendering (1 s and
        100 MB for a line of 10,000 levels, read again at each recovery step)."""
        elements = [e for e in items if isinstance(e, ShapeToken)]
        depths = self.depths
        depth = 1 + max((depths.get(id(e), 1) for e in elements if e.elements is not None),
                        default=0)
        text = DEEP_TUPLE_TEXT if depth > MAX_TUPLE_DEPTH else \
            "(" + ", ".join(e.text for e in elements) + ")"
        token = ShapeToken(text, items[0].end_pos - 1 + self.base,
                           items[-1].end_pos + self.base, elements)
        if depth > 1:
            depths[id(token)] = depth
        return token

    # -- attributes --------------------------------------------------------
    # The attributes of an instruction accumulate from left to right in a tuple
    # (attributes, computation references, control predecessors). Each callback
    # receives ``[tuple] name-token value...``, the tuple missing before the first
    # attribute, and returns the tuple with one more attribute; the name token is
    # `, name=`.

    def attribute(self, items):
        """``, name=value``, one token (the hot path: inlined)."""
        if len(items) == 2:
            acc, tok = items
        else:
            tok = items[0]
            acc = ([], [], [])
        base = self.base
        raw = tok.value
        equal = raw.index("=")
        name = raw[1:equal].strip()
        value = raw[equal + 1:].lstrip()
        end = tok.end_pos + base
        acc[0].append(Attribute(name, tok.start_pos + base + raw.find(name, 1), value,
                                end - len(value), end))
        return acc

    def split_attribute(self, items):
        """``, name=`` and the value as two tokens."""
        value = items[-1]
        return self._add(items, value.start_pos + self.base, value.end_pos + self.base,
                         value.value)[0]

    def _add(self, items, value_start: int, value_end: int, value_text: str):
        """Append the attribute named by the name token of ``items``; return the
        tuple and the attribute's name."""
        acc = items[0]
        if acc.__class__ is tuple:
            tok = items[1]
        else:
            tok = acc
            acc = ([], [], [])
        raw = tok.value
        name = raw[1:-1].strip()
        acc[0].append(Attribute(name, tok.start_pos + self.base + raw.find(name, 1),
                                value_text, value_start, value_end))
        return acc, name

    def computation_attribute(self, items):
        """A single computation name, or a braced list of them."""
        i = 2 if items[0].__class__ is tuple else 1
        base = self.base
        first = items[i]
        refs = [self._ref(t) for t in items[i:] if t.type == "NAME"]
        text = ", ".join("%" + r.name for r in refs)
        if first.type == "LBRACE":
            start, end = first.end_pos - 1 + base, items[-1].end_pos + base
            text = "{" + text + "}"
        else:
            start, end = refs[0].start, refs[0].end
        acc, attr = self._add(items, start, end, text)
        acc[1].extend(ComputationRef(attr, r) for r in refs)
        return acc

    def control_predecessors(self, items):
        i = 2 if items[0].__class__ is tuple else 1
        base = self.base
        refs = [self._ref(t) for t in items[i:] if t.type == "NAME"]
        acc, _ = self._add(items, items[i].end_pos - 1 + base, items[-1].end_pos + base,
                           "{" + ", ".join("%" + r.name for r in refs) + "}")
        acc[2].extend(refs)
        return acc

    def inline_open(self, items):
        """``, to_apply={``: the nested operands of the instruction holding the
        inline computation are set aside until its ``}``."""
        self._set_aside.append((self.anonymous, self.inline))
        self.anonymous = []
        self.inline = []
        return items

    def inline_computation(self, items):
        """``inline_open instructions RBRACE``: a computation named ``_`` (as XLA
        names it) whose range is from ``{`` to ``}``, kept in ``inline`` for the
        computation holding it; the attribute's value is the body's text."""
        acc = items[0] if items[0].__class__ is tuple else None
        head = items[-3]  # [COMPUTATION_ATTR, LBRACE]
        instructions, rbrace = items[-2], items[-1]
        base = self.base
        lbrace = head[1].end_pos - 1 + base
        end = rbrace.end_pos + base
        comp = Computation(Ref("_", lbrace, lbrace + 1), False, [], None, lbrace, lbrace,
                           end, instructions, inline=True)
        holder = weakref.ref(comp)
        for ins in instructions:
            ins._computation = holder
        if self.inline:  # computations inline in this one's instructions
            comp.nested = self.inline
        self.anonymous, self.inline = self._set_aside.pop() if self._set_aside else ([], [])
        self.inline.append(comp)
        name_items = [acc, head[0]] if acc is not None else [head[0]]
        acc, _ = self._add(name_items, lbrace, end, "{...}")
        return acc

    def literal_attribute(self, items):
        shape, value = items[-2], items[-1]
        return self._add(items, shape.start_pos + self.base, value.end_pos + self.base,
                         f"{shape.value} {value.value}")[0]


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


# ------------------------------------------------------------------ entry ---

_gc_lock = threading.Lock()
_gc_pauses = 0          # parses running with the collector paused (all threads)
_gc_resume = False      # whether the collector ran before the first of them


@contextmanager
def paused_gc():
    """Pause Python's cyclic garbage collector while a parse builds its model.

    A parse allocates hundreds of thousands of objects that all outlive it; the
    collector would traverse them again and again as they accumulate (a quarter
    of the time of a 4 MB parse) and find nothing to free. Pauses nest and may
    overlap across threads: the collector runs again when the last one ends, if
    it was running when the first began.
    """
    global _gc_pauses, _gc_resume
    with _gc_lock:
        if _gc_pauses == 0:
            _gc_resume = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_resume:
                gc.enable()


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
    with paused_gc():
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


# ---------------------------------------------------------------- recovery --

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
        head = _run(text[s:head_text_end].rstrip(), "computation_head", s)
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
        scanned = scanner.instruction(_scanner_patterns(), text, ls) if USE_SCANNER else None
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
