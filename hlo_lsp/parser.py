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

import re
import threading
from importlib import resources
from pathlib import Path

from lark import Lark, Token, Transformer
from lark.exceptions import (UnexpectedCharacters, UnexpectedEOF, UnexpectedInput,
                             UnexpectedToken)

try:  # lark's own Cython-compiled LALR parser and lexer: same grammar, ~2x faster
    import lark_cython
except ImportError:  # pragma: no cover - optional accelerator
    lark_cython = None

_TOKEN_TYPES: tuple[type, ...] = (Token,) if lark_cython is None else (
    Token, lark_cython.lark_cython.Token)

from .model import (Attribute, Computation, ComputationRef, FileLocation, HloModule,
                    Instruction, Operand, Parameter, Problem, Ref, ShapeToken,
                    strip_sigil, unescape)

GRAMMAR_FILE = "hlo.lark"
_ROW_ITEM = re.compile(r"([A-Za-z_]+)=(-?\d+)")


def grammar_text() -> str:
    """The text of ``hlo.lark``: from the installed package (the wheel ships it as
    ``hlo_lsp/grammar/hlo.lark``) or, in a source checkout, from ``grammar/``.

    Raises FileNotFoundError if neither exists.
    """
    packaged = resources.files("hlo_lsp").joinpath("grammar", GRAMMAR_FILE)
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    source = Path(__file__).resolve().parent.parent / "grammar" / GRAMMAR_FILE
    return source.read_text(encoding="utf-8")


class _Builder(Transformer):
    """Builds model objects from grammar rules; ``base`` offsets every position."""

    def __init__(self) -> None:
        super().__init__(visit_tokens=False)
        self.base = 0

    # -- helpers ---------------------------------------------------------
    def _ref(self, tok: Token) -> Ref:
        return Ref(strip_sigil(tok.value), tok.start_pos + self.base, tok.end_pos + self.base)

    # -- module ------------------------------------------------------------
    def start(self, items):
        return items

    def module_header(self, items):
        name = self._ref(items[1])
        attrs = [a for a in items[2:] if isinstance(a, Attribute)]
        end = attrs[-1].value_end if attrs else name.end
        return ("header", name, attrs, items[0].start_pos + self.base, end)

    def header_attribute(self, items):
        name, value = items
        return Attribute(name.value, name.start_pos + self.base, value.value,
                         value.start_pos + self.base, value.end_pos + self.base)

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
                items[0].start_pos + self.base, lbrace.start_pos + self.base)

    def signature(self, items):
        params = [p for p in items if isinstance(p, Parameter)]
        shapes = [s for s in items if isinstance(s, ShapeToken)]
        return ("signature", params, shapes[-1] if shapes else None)

    def computation_param(self, items):
        return Parameter(self._ref(items[0]), items[1])

    def computation(self, items):
        head = items[0]
        _, is_entry, name, params, result, start, body_start = head
        instructions = []
        end = body_start + 1
        thread = None
        for it in items[1:]:
            if isinstance(it, Instruction):
                instructions.append(it)
            elif isinstance(it, _TOKEN_TYPES):  # RBRACE
                end = it.end_pos + self.base
            elif isinstance(it, tuple) and it[0] == "thread":
                thread = it[1]
                end = it[2]
        comp = Computation(name, is_entry, params, result, start, body_start, end,
                           instructions, thread)
        for ins in instructions:
            ins.computation = comp
        return comp

    def execution_thread(self, items):
        tok = items[-1]
        return ("thread", unescape(tok.value[1:-1]), tok.end_pos + self.base)

    # -- instructions ------------------------------------------------------
    def instruction(self, items):
        is_root = False
        i = 0
        first = items[0]
        if isinstance(first, _TOKEN_TYPES) and first.type == "ROOT":
            is_root = True
            i = 1
        name_tok = items[i]
        start = first.start_pos + self.base
        shape = None
        opcode = ""
        opcode_start = -1
        operands: list[Operand] = []
        attributes: list[Attribute] = []
        called: list[ComputationRef] = []
        control: list[Ref] = []
        parameter_number = None
        literal = None
        end = name_tok.end_pos + self.base
        for it in items[i + 1:]:
            if isinstance(it, Operand):
                operands.append(it)
            elif isinstance(it, Attribute):
                attributes.append(it)
                end = it.value_end
            elif isinstance(it, ShapeToken):
                shape = it
            elif isinstance(it, _TOKEN_TYPES):
                if it.type == "RPAR":
                    end = it.end_pos + self.base
                else:  # opcode NAME
                    opcode = it.value
                    opcode_start = it.start_pos + self.base
            elif isinstance(it, tuple):
                kind = it[0]
                if kind == "parameter":
                    _, opcode_start, parameter_number, end = it
                    opcode = "parameter"
                elif kind == "constant":
                    _, opcode_start, literal, end = it
                    opcode = "constant"
                elif kind == "called":
                    called.extend(it[1])
                    attributes.append(it[2])
                    end = it[2].value_end
                elif kind == "control":
                    control.extend(it[1])
                    attributes.append(it[2])
                    end = it[2].value_end
        return Instruction(self._ref(name_tok), opcode, opcode_start, shape, operands,
                           attributes, called, control, start, end, is_root,
                           parameter_number, literal)

    def opcode(self, items):
        return items[0]

    def parameter(self, items):
        kw, num, rpar = items
        return ("parameter", kw.start_pos + self.base, int(num.value), rpar.end_pos + self.base)

    def constant(self, items):
        kw, lit = items
        return ("constant", kw.start_pos + self.base, lit.value, lit.end_pos + self.base)

    def operand(self, items):
        if len(items) == 1 and items[0].type == "INT":
            tok = items[0]
            return Operand(Ref(tok.value, tok.start_pos + self.base, tok.end_pos + self.base))
        if len(items) == 2:
            return Operand(self._ref(items[1]), items[0])
        return Operand(self._ref(items[0]))

    # -- shapes ------------------------------------------------------------
    def shape(self, items):
        tok = items[0]
        return ShapeToken(tok.value, tok.start_pos + self.base, tok.end_pos + self.base)

    def tuple_shape(self, items):
        elements = [e for e in items if isinstance(e, ShapeToken)]
        rpar = items[-1] if items and isinstance(items[-1], _TOKEN_TYPES) else None
        text = "(" + ", ".join(e.text for e in elements) + ")"
        end = rpar.end_pos + self.base if rpar is not None else (
            elements[-1].end + 1 if elements else -1)
        start = elements[0].start - 1 if elements else -1
        return ShapeToken(text, start, end, elements)

    # -- attributes --------------------------------------------------------
    def _attribute(self, name_tok, value_start, value_end, value_text):
        return Attribute(name_tok.value, name_tok.start_pos + self.base, value_text,
                         value_start, value_end)

    def computation_attribute(self, items):
        attr_tok, (refs, braces) = items
        attr = attr_tok.value
        crefs = [ComputationRef(attr, r) for r in refs]
        start, end = braces if braces is not None else (refs[0].start, refs[0].end)
        text = ", ".join("%" + r.name for r in refs)
        if braces is not None:
            text = "{" + text + "}"
        return ("called", crefs, self._attribute(attr_tok, start, end, text))

    def computation_refs(self, items):
        """(refs, (offset of "{", offset just past "}") of a braced list or None)."""
        braces = [t for t in items if t.type in ("LBRACE", "RBRACE")]
        span = (braces[0].start_pos + self.base, braces[-1].end_pos + self.base) \
            if len(braces) == 2 else None
        return [self._ref(t) for t in items if t.type == "NAME"], span

    def control_predecessors(self, items):
        attr_tok = items[0]
        refs = [self._ref(t) for t in items[1:] if t.type == "NAME"]
        braces = [t for t in items if t.type in ("LBRACE", "RBRACE")]
        start, end = braces[0].start_pos + self.base, braces[-1].end_pos + self.base
        return ("control", refs, self._attribute(
            attr_tok, start, end, "{" + ", ".join("%" + r.name for r in refs) + "}"))

    def foldable_attribute(self, items):
        name, value = items
        return self._attribute(name, value.start_pos + self.base, value.end_pos + self.base,
                               value.value)

    def literal_attribute(self, items):
        name, shape, value = items
        return self._attribute(name, shape.start_pos + self.base, value.end_pos + self.base,
                               f"{shape.value} {value.value}")

    def generic_attribute(self, items):
        name, value = items
        return self._attribute(name, value.start_pos + self.base, value.end_pos + self.base,
                               value.value)


_local = threading.local()


def _parser(fast: bool = False) -> tuple[Lark, _Builder]:
    """This thread's LALR parser with its model builder (each thread has its own,
    so parses in different threads never wait for each other). ``fast`` selects
    lark-cython when installed; its errors are not reportable, so error paths use
    pure lark."""
    key = "fast" if fast and lark_cython is not None else "pure"
    cached = getattr(_local, key, None)
    if cached is None:
        builder = _Builder()
        extra = {"_plugins": lark_cython.plugins} if key == "fast" else {}
        lark = Lark(grammar_text(), parser="lalr", lexer="contextual",
                    start=["start", "instruction", "computation_head"],
                    transformer=builder, maybe_placeholders=False, **extra)
        cached = (lark, builder)
        setattr(_local, key, cached)
    return cached


class _SlowPathNeeded(Exception):
    """The fast parser failed: parse again with pure lark for a reportable error."""


def _run_fast(text: str, start: str = "start", base: int = 0):
    """Parse on the fast path; raises _SlowPathNeeded (or UnexpectedInput without
    lark-cython) on any error."""
    if lark_cython is None:
        return _run(text, start, base)
    lark, builder = _parser(True)
    builder.base = base
    try:
        return lark.parse(text, start=start)
    except Exception as exc:  # lark-cython errors are not well-formed: redo slowly
        raise _SlowPathNeeded() from exc
    finally:
        builder.base = 0


def _run(text: str, start: str, base: int = 0):
    lark, builder = _parser()
    builder.base = base
    try:
        return lark.parse(text, start=start)
    finally:
        builder.base = 0


def warm_up() -> None:
    """Build this thread's parsers (about 0.2 s the first time in a thread)."""
    _parser(True)
    _parser()


def parse_fragment(text: str, start: str, base: int = 0):
    """Parse ``text`` (a piece of a document beginning at offset ``base``) with one
    of the grammar's start rules: "start" -> list of module items,
    "instruction" -> Instruction, "computation_head" -> head tuple.

    Raises lark.exceptions.UnexpectedInput when the piece does not parse.
    """
    try:
        return _run_fast(text, start, base)
    except _SlowPathNeeded:
        return _run(text, start, base)


# ---------------------------------------------------------------- messages --

_TERMINAL_WORDS = {
    "NAME": "a name", "INT": "an integer", "STRING": "a string",
    "ARRAY_SHAPE": "a shape such as f32[2,3]{1,0}", "ATTR_VALUE": "an attribute value",
    "BALANCED": "a {...} value", "LITERAL": "a literal in (...)", "LBRACE": "'{'",
    "RBRACE": "'}'", "RPAR": "')'", "LPAR": "'('", "COMMA": "','", "EQUAL": "'='",
    "COLON": "':'", "ROOT": "ROOT", "ENTRY": "ENTRY", "HLO_MODULE": "HloModule",
    "__ANON_0": "'->'", "$END": "end of input", "LBRACE_": "'{'",
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
        start = tok.start_pos + base
        shown = str(tok)
        if len(shown) > 40:
            shown = shown[:37] + "..."
        return Problem(start, tok.end_pos + base,
                       f"unexpected {shown!r}; expected " + _describe_expected(exc.expected))
    if isinstance(exc, UnexpectedCharacters):
        start = exc.pos_in_stream + base
        ch = text[exc.pos_in_stream:exc.pos_in_stream + 1]
        line_end = text.find("\n", exc.pos_in_stream)
        end = base + (line_end if line_end >= 0 else len(text))
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

def parse(text: str) -> HloModule:
    """Parse HLO text into an :class:`HloModule`. Never raises on bad input.

    Syntax errors become ``module.problems`` (the first one where lark found it,
    then one per unparsable instruction or header); semantic checks are in
    :func:`hlo_lsp.analysis.check`.
    """
    module = HloModule(text)
    if "\x00" in text:
        text_for_parse = text.replace("\x00", " ")
        module.problems.append(Problem(text.index("\x00"), text.index("\x00") + 1,
                                       "binary data (NUL byte): this is not HLO text"))
    else:
        text_for_parse = text
    try:
        items = parse_fragment(text_for_parse, "start")
    except UnexpectedInput as exc:
        first = _problem_from(exc, text_for_parse, 0)
        items, problems = _recover(text_for_parse)
        # The whole-text error is often a consequence of a problem the recovery
        # pinned down more precisely on the same or the previous line.
        line_before = text_for_parse.rfind("\n", 0, max(text_for_parse.rfind(
            "\n", 0, first.start), 0))
        if not any(line_before < p.start <= first.end for p in problems):
            module.problems.append(first)
        module.problems.extend(problems)
    except RecursionError:  # pragma: no cover - pathological nesting
        module.problems.append(Problem(0, 1, "input too deeply nested to parse"))
        items = []
    _assemble(module, items)
    return module


def _assemble(module: HloModule, items) -> None:
    tables = module.frames
    for it in items:
        if isinstance(it, Computation):
            module.computations.append(it)
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


def _lines(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of each line, end excluding the newline."""
    out = []
    pos = 0
    n = len(text)
    while pos <= n:
        nl = text.find("\n", pos)
        if nl < 0:
            out.append((pos, n))
            break
        out.append((pos, nl))
        pos = nl + 1
    return out


def _recover(text: str):
    """Parse ``text`` in pieces after the whole-text parse failed.

    Returns (items, problems) where items are what :func:`_assemble` accepts.
    """
    lines = _lines(text)
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
            items.extend(_run(text[:prefix_end], "start"))
        except UnexpectedInput as exc:
            problems.append(_problem_from(exc, text[:prefix_end], 0))
    for k, h in enumerate(heads):
        stop = heads[k + 1] if k + 1 < len(heads) else len(lines)
        s = lines[h][0]
        e = lines[stop - 1][1] if stop > h else lines[h][1]
        chunk = text[s:e]
        try:
            items.extend(_run(chunk, "start", s))
            continue
        except UnexpectedInput:
            pass
        comp = _recover_computation(text, lines, h, stop, problems)
        if comp is not None:
            items.append(comp)
    return items, problems


def _incomplete(exc: UnexpectedInput, text: str, base: int) -> bool:
    """Whether a failed line parse may succeed with the next line joined: the input
    ended early, or an opened bracket or string was not closed on this line."""
    if isinstance(exc, UnexpectedEOF):
        return True
    if isinstance(exc, UnexpectedToken):
        return exc.token.type == "$END"
    if isinstance(exc, UnexpectedCharacters):
        return text[base + exc.pos_in_stream:base + exc.pos_in_stream + 1] in "{[(\"'"
    return False


def _recover_computation(text, lines, h, stop, problems) -> Computation | None:
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
        j = i
        while j < stop and j < i + _MAX_JOIN:
            try:
                parsed = _run(text[ls:lines[j][1]], "instruction", ls)
                break
            except UnexpectedInput as exc:
                if first_exc is None:
                    first_exc = exc
                if not _incomplete(exc, text, ls):
                    break
            j += 1
        if parsed is not None:
            parsed.computation = comp
            comp.instructions.append(parsed)
            comp.end = parsed.end
            i = j + 1
        else:
            # Report the first line's own error: for an incomplete line, at its end.
            problems.append(_problem_from(first_exc, text[ls:le], ls))
            i += 1
    for k in range(i + 1, stop):
        ls, le = lines[k]
        rest = text[ls:le].strip()
        if rest and not rest.startswith("//") and closed:
            message = (f"unexpected text after the end of computation {name.name}"
                       if not rest.startswith("HloModule") else
                       "a second HloModule: XLA reads one module per file "
                       "(split `// -----` sections into files of their own)")
            problems.append(Problem(ls + text[ls:le].index(rest[0]), le, message))
            break
    if not closed:
        problems.append(Problem(comp.start, comp.body_start + 1,
                                f"computation {name.name} is not closed with '}}'"))
        comp.closed = False
    return comp
