"""The model builder of the grammar (``grammar/hlo.lark``): a lark transformer
that builds :mod:`hlo_lsp.model` objects while lark parses (no parse tree), the
fast path for valid dumps. Its state is thread-local, so every thread shares
the parsers of :mod:`hlo_lsp.syntax.driver`. Also where the grammar's text is
found (:func:`grammar_text`).
"""

from __future__ import annotations

import threading
import weakref
from importlib import resources
from pathlib import Path

from lark import Token, Transformer

from hlo_lsp.model.hlo import (Attribute, Computation, ComputationRef, Instruction, Operand,
                              Parameter, Ref, ShapeToken, unescape)
from hlo_lsp.model.shapes import MAX_TUPLE_DEPTH
from hlo_lsp.syntax.lark_compat import token_types


#: Token classes the builder may receive (lark's, and lark-cython's).
_TOKEN_TYPES: tuple[type, ...] = token_types()
GRAMMAR_FILE = "hlo.lark"


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
