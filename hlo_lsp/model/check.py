"""Semantic checks on a parsed module, agreeing with XLA's parser.

XLA (xla/hlo/parser/hlo_parser.cc) rejects a module when an operand names an
instruction not defined earlier in its computation ("instruction does not
exist"), when a computation is referenced before it is defined ("computation
does not exist"), on duplicate names ("instruction already exists",
"computation already exists") and on unknown opcodes. Those are errors here.
Findings XLA only warns about (a ``stack_frame_id`` outside the tables) are
warnings. A ``backend_config`` that is not valid JSON is information only: XLA's
parser keeps the value as a raw string (any text, balanced braces), and only a
backend reads it as its proto, lazily, when a compiler pass asks
(``BackendConfigWrapper::GetProto`` in xla/hlo/ir/backend_config.cc); test
templates hold placeholders there (``"is_tma_allowed":ENABLE_TMA``).
"""

from __future__ import annotations

import json
import re
import weakref

from hlo_lsp.model.attribute_syntax import (BLOCK_COMMENT, UNKNOWN_KEY, split_top_level,
                                             value_problem)
from hlo_lsp.model.backend_config import is_json_object
from hlo_lsp.model.hlo import (Computation, ComputationRef, HloModule, Instruction, Problem,
                               Severity)
from hlo_lsp.model.memo import ShortTextMemo
from hlo_lsp.model.opcode_rules import RULES
from hlo_lsp.model.opcodes import OPCODES

#: Every attribute name some opcode allows in jaxlib's XLA (RULES): one outside
#: an opcode's list but in here is an error, as in XLA; a name no opcode has is
#: a warning (newer XLA may have added it).
KNOWN_ATTRIBUTES: frozenset[str] = frozenset(
    a for r in RULES.values() for a in (r["attributes"] or ()))

#: (opcode, attribute) pairs newer XLA accepts though jaxlib's rejects them
#: (xla/hlo/parser/hlo_parser.cc, 2025: ``sparsity`` on dot, ``is_stable`` on
#: topk): warnings, not errors.
NEWER_ATTRIBUTES: frozenset[tuple[str, str]] = frozenset({
    ("dot", "sparsity"), ("topk", "is_stable")})

#: Words XLA's lexer reads as keywords, never as names (xla/hlo/parser/hlo_lexer.cc
#: LexIdentifier): an instruction called one of them is "expects name".
KEYWORDS: frozenset[str] = frozenset(
    "true false inf nan HloModule ENTRY ROOT maximal replicated manual "
    "last_tile_dim_replicate".split())


def check(module: HloModule) -> list[Problem]:
    """Semantic problems of ``module`` (its syntax problems are already in
    ``module.problems``). Pure: the module is not changed.

    The checks inside one computation depend only on its text (and the size of
    the StackFrames table), so they are cached per Computation object: after an
    edit reused every other computation (:func:`hlo_lsp.syntax.chunks.parse_chunked`),
    only the edited one is checked again.
    """
    out: list[Problem] = []
    defined_comps: dict[str, int] = {}
    entries = 0
    frame_count = len(module.frames.frames)
    if not module.problems:
        for start, end in ([(p.start, p.end) for p in module.parts] or [(0, len(module.text))]):
            if not any(start <= c.start < end for c in module.computations):
                out.append(Problem(end, end, "expects name: the module has no computation"))
    part = 0
    for attr in module.header_attributes:
        wrong = value_problem(attr.name, attr.value)
        if wrong:
            out.append(Problem(attr.value_start, max(attr.value_end, attr.value_start + 1), wrong))
    for comp in module.computations:
        name = comp.name.name
        if module.parts and module.part_index(comp.start) != part:
            # The next module of a split file: XLA parses it alone.
            part = module.part_index(comp.start)
            defined_comps = {}
            entries = 0
        if comp.inline:  # `_`, XLA's name for every inline computation
            out.extend(_local_problems(comp, frame_count)[0])
            continue
        if name in defined_comps:
            out.append(Problem(comp.name.start, comp.name.end,
                               f"computation already exists: {name}"))
        if comp.is_entry:
            entries += 1
            if entries > 1:
                out.append(Problem(comp.name.start, comp.name.end,
                                   "a module has at most one ENTRY computation"))
        local, called = _local_problems(comp, frame_count)
        for cref in called:
            target = cref.ref.name
            if target not in defined_comps and target != name:
                later = module.resolve(target, cref.ref.start) is not None
                out.append(Problem(cref.ref.start, cref.ref.end, (
                    f"computation {target} is used before it is defined "
                    "(XLA requires callees first)" if later
                    else f"computation does not exist: {target}")))
            elif target == name:
                out.append(Problem(cref.ref.start, cref.ref.end,
                                   f"computation {target} calls itself"))
        out.extend(local)
        defined_comps.setdefault(name, comp.name.start)
    return out


#: Computation -> (StackFrames size, comp.start then, problems then, its
#: computation references). Weak keys: an entry lives as long as some parse
#: still holds its computation.
_LOCAL_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def computation_problems(comp: Computation, frame_count: int) -> list[Problem]:
    """The problems :func:`check` finds inside ``comp`` alone (not those that
    need the module: callees, duplicate computation names, ENTRY count), with
    ``frame_count`` entries in the module's StackFrames table. Cached with the
    computation: :func:`check` finds them again for free."""
    return _local_problems(comp, frame_count)[0]


def _local_problems(comp: Computation,
                    frame_count: int) -> tuple[list[Problem], list[ComputationRef]]:
    """The problems found inside ``comp`` alone, at its current offsets, and the
    computation references of its instructions (moved along with ``comp``)."""
    cached = _LOCAL_CACHE.get(comp)
    if cached is not None and cached[0] == frame_count:
        delta = comp.start - cached[1]
        if not delta:
            return cached[2], cached[3]
        return [Problem(p.start + delta, p.end + delta, p.message, p.severity, p.source)
                for p in cached[2]], cached[3]
    problems = _check_computation(comp, frame_count)
    called = [cref for ins in comp.instructions for cref in ins.called]
    _LOCAL_CACHE[comp] = (frame_count, comp.start, problems, called)
    return problems, called


def line_edited(old: Computation, new: Computation, index: int, old_ins: Instruction,
                delta: int, frame_count: int) -> None:
    """Check ``new`` (``old`` with ``instructions[index]``, once ``old_ins``,
    replaced: :meth:`hlo_lsp.model.hlo.Computation.with_instruction`, the text
    after it moved by ``delta``) from what was found in ``old``: when the new
    instruction defines the same name with the same shape text and is ROOT or
    not as before, no other instruction's problems change (they depend on the
    names and shapes defined before them, and on the ROOTs), so they are taken
    over, moved, and only the new instruction is checked. The result goes where
    :func:`check` finds it. Nothing happens when ``old`` was not checked with
    ``frame_count`` entries in StackFrames or the definition changed."""
    cached = _LOCAL_CACHE.get(old)
    ins = new.instructions[index]
    if cached is None or cached[0] != frame_count or ins.name.name != old_ins.name.name \
            or ins.is_root != old_ins.is_root or (ins.shape is None) != (old_ins.shape is None) \
            or (ins.shape is not None and ins.shape.text != old_ins.shape.text):
        return
    moved = old.start - cached[1]  # old moved since it was checked
    lo, hi = old_ins.start, old_ins.end
    problems = []
    for p in cached[2]:
        start = p.start + moved
        if lo <= start <= hi:
            continue  # the old instruction's own
        d = moved + (delta if start > hi else 0)
        problems.append(Problem(p.start + d, p.end + d, p.message, p.severity, p.source)
                        if d else p)
    own = _check_computation(new, frame_count, only=index)
    cut = next((i for i, p in enumerate(problems) if p.start > hi + delta), len(problems))
    problems[cut:cut] = own
    _LOCAL_CACHE[new] = (frame_count, new.start, problems,
                         [cref for i in new.instructions for cref in i.called])


def _check_computation(comp: Computation, frame_count: int,
                       only: int | None = None) -> list[Problem]:
    """Uses before definitions, duplicate names, ROOTs, opcodes, attributes.
    Written for speed: it runs once per instruction of every opened dump. With
    ``only``, the problems of ``instructions[only]`` alone (in the context of
    the instructions before it)."""
    out: list[Problem] = []
    seen: dict[str, str] = {}  # name -> its shape's text ("" when none)
    roots = 0
    shape_problems = _SHAPE_PROBLEMS
    if only is None:
        for p in comp.params:
            _check_shape(p.shape, shape_problems, out)
        if comp.result is not None:
            _check_shape(comp.result, shape_problems, out)
    for k, ins in enumerate(comp.instructions):
        if only is not None and k != only:
            if k > only:
                break
            seen[ins.name.name] = ins.shape.text if ins.shape is not None else ""
            roots += ins.is_root
            continue
        unread = 0
        for op in ins.operands:
            ref = op.ref
            defined = seen.get(ref.name)
            if defined is None:
                if ref.name.isdigit():  # hlo_parser.cc ParseOperands reads names only
                    out.append(Problem(ref.start, ref.end,
                                       "expects ')' at the end of operands"))
                elif (ref.name in OPCODES and op.shape is None
                        and ref.end - ref.start == len(ref.name)):
                    # XLA reads an unresolved bare opcode name (`fusion(copy)`,
                    # `copy` defined later) as no operand at all: the count says.
                    unread += 1
                else:
                    out.append(_undefined(comp, ref))
            elif op.shape is not None:
                _check_shape(op.shape, shape_problems, out)
                if op.shape.text != defined and defined:
                    _check_annotation(op, defined, out)
        for ref in ins.control_predecessors:
            if ref.name not in seen:
                out.append(_undefined(comp, ref))
        name = ins.name
        if name.name in seen and not name.name.endswith(".anon"):
            out.append(Problem(name.start, name.end, f"instruction already exists: {name.name}"))
        if name.name in KEYWORDS:
            out.append(Problem(name.start, name.end,
                               f"expects name: {name.name} is a keyword"))
        shape = ins.shape
        if shape is not None:
            text = shape.text
            if shape.elements is None:
                found = shape_problems[text]
                if found:
                    out.append(Problem(shape.start, shape.end, found))
            else:
                _check_shape(shape, shape_problems, out)
            seen[name.name] = text
        else:
            seen[name.name] = ""
        if ins.is_root:
            roots += 1
            if roots > 1:
                out.append(Problem(name.start, name.end,
                                   "a computation has at most one ROOT instruction"))
        if ins.literal is not None and shape is not None and (
                "," in ins.literal or "{" in ins.literal):
            _check_literal(ins, out)
        rule = RULES.get(ins.opcode)
        if rule is None:
            if ins.opcode:
                out.append(Problem(ins.opcode_start, ins.opcode_start + len(ins.opcode),
                                   f"unknown opcode: {ins.opcode}"))
        else:
            _check_rule(ins, rule, seen, out, len(ins.operands) - unread)
        if ins.attributes:
            _check_attributes(ins, frame_count, out)
    if only is not None:
        return out
    root = comp.root
    if (comp.result is not None and root is not None and root.shape is not None
            and _without_layout(comp.result.text) != _without_layout(root.shape.text)):
        out.append(Problem(comp.result.start, comp.result.end,
                           f"the computation's result {comp.result.text} differs from "
                           f"its ROOT's shape {root.shape.text}"))
    return out


def _without_layout(text: str) -> str:
    """A shape's text without its layouts and blanks: ``f32[2]{0}`` -> ``f32[2]``."""
    if "{" not in text and " " not in text:
        return text
    out = []
    depth = 0
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif not depth and ch != " ":
            out.append(ch)
    return "".join(out)


def _check_annotation(op, defined: str, out: list[Problem]) -> None:
    """An operand written with a shape (``f32[7,3] p0``) must have the shape its
    definition has, layouts aside (hlo_parser.cc ParseOperands)."""
    if op.shape.elements is not None or defined.startswith("("):
        return  # XLA compares tuple annotations more loosely: arrays only
    if _without_layout(op.shape.text) != _without_layout(defined):
        out.append(Problem(op.shape.start, op.ref.end,
                           f"operand {op.ref.name} is written as {op.shape.text}, "
                           f"but it is defined as {defined}"))


def _check_shape(shape, problems: ShortTextMemo[str], out: list[Problem]) -> None:
    """Append the problem of an array or tuple shape (each element) to ``out``.
    Iterative: hostile input nests tuples thousands of levels deep."""
    stack = [shape]
    while stack:
        s = stack.pop()
        if s.elements is not None:
            stack.extend(reversed(s.elements))
            continue
        found = problems[s.text]
        if found:
            out.append(Problem(s.start, s.end, found))


#: What may follow ``minor_to_major:`` in a layout, in this order, each at most
#: once (hlo_parser.cc ParseLayout; the order of Layout::ToString): dimension
#: level types ``D(...)``, tiles ``T(..)(..)``, tail padding ``L(n)``, index and
#: pointer types ``#(s32)`` ``*(s32)``, element size ``E(bits)``, memory space
#: ``S(n)``, split configs ``SC(dim:indices)``, physical shape ``P(shape)``,
#: dynamic-shape metadata ``M(n)``. Checked item by item against jaxlib 0.10.2.
_LAYOUT_TAIL = re.compile(
    r"\s*(?:D\([^()]*\)\s*)?(?:T(?:\([0-9,* ]*\))+\s*)?(?:L\(\s*\d+\s*\)\s*)?"
    r"(?:#\(\s*\w+\s*\)\s*)?(?:\*\(\s*\w+\s*\)\s*)?(?:E\(\s*\d+\s*\)\s*)?"
    r"(?:S\(\s*\d+\s*\)\s*)?(?:SC\(\s*\d+\s*:[0-9, ]*\)\s*)*(?:P\([^()]*\)\s*)?"
    r"(?:M\(\s*\d+\s*\)\s*)?")


def _dimensions(text: str) -> str:
    """The text between an array shape's brackets, blanks removed:
    ``f32[7, 2]{1,0}`` -> ``7,2``."""
    return text[text.find("[") + 1:text.find("]")].replace(" ", "")


def _shape_problem(text: str) -> str:
    """What XLA's parser finds wrong in an array shape's text (hlo_parser.cc
    ParseShape, ParseDimensionSizes, ParseLayout), "" when nothing: an empty
    dimension (``f32[7,]``, ``f32[,2]``), an empty layout entry (``{,0}``), a
    layout whose rank differs from the shape's."""
    bracket = text.find("[")
    close = text.find("]", bracket)
    if bracket < 0 or close < 0:
        return ""
    dims = text[bracket + 1:close].replace(" ", "")
    if dims and ("" in dims.split(",")):
        return "expects integer: a dimension of the shape is empty"
    brace = text.find("{", close)
    if brace < 0:
        return ""
    layout = text[brace + 1:text.find("}", brace) if "}" in text[brace:] else len(text)]
    minor_to_major, colon, tail = layout.partition(":")
    minor_to_major = minor_to_major.replace(" ", "")
    if tail.endswith("(") or (tail.count("(") == tail.count(")") + 1 and tail[-1:].isdigit()):
        tail += ")"  # XLA's layout parser takes `E(4}` as `E(4)}`
    if colon and "P(" not in tail and not _LAYOUT_TAIL.fullmatch(tail):
        return "expects layout to end with kRbrace: the layout's items after ':' are malformed"
    entries = minor_to_major.split(",") if minor_to_major else []
    if "" in entries:
        return "expects integer: an entry of the layout is empty"
    rank = len(dims.split(",")) if dims else 0
    if not entries and not colon and rank:
        return f"expects opcode: an empty layout {{}} for a shape of rank {rank}"
    if entries and len(entries) != rank:
        return (f"Dimensions size is {rank}, but minor to major size is {len(entries)}.")
    return ""


#: At most this long, an array shape's text has its problem remembered: a dump
#: repeats a few thousand shapes over all its instructions and operands.
SHAPE_CACHE_CHARS = 1000
#: Array shape text -> the problem XLA's parser finds in it ("" when well formed).
_SHAPE_PROBLEMS: ShortTextMemo[str] = ShortTextMemo(
    _shape_problem, maxsize=100_000, max_chars=SHAPE_CACHE_CHARS)


def _check_literal(ins, out: list[Problem]) -> None:
    """A constant's literal against its array shape (hlo_parser.cc ParseLiteral,
    ParseDenseLiteral): one value, or a scalar for any shape, or braces nested
    as deep as the rank with one element per index of each dimension. Complex
    values are pairs in parentheses, ``(1, 0)``. One pass over the literal."""
    shape = ins.shape
    if shape.elements is not None or "[" not in shape.text:
        return
    inner = ins.literal[1:-1].strip()
    at = ins.opcode_start + len("constant")
    if not inner.startswith("{"):
        if _top_level_comma(inner) and not inner.startswith(("(", '"')):
            out.append(Problem(at, ins.end, "expects ')' after constant literal"))
        return
    text = shape.text
    dims_text = _dimensions(text)
    if "..." in inner:
        return  # XLA prints large literals elided, `{...}`, and reads them back
    if "/*" in inner:  # index comments, `{ /*i0=0*/ {1} }`
        inner = BLOCK_COMMENT.sub(" ", inner)
    if not dims_text or any(not d.isdigit() for d in dims_text.split(",")):
        return  # a scalar written in braces, or dynamic sizes: XLA decides
    dims = [int(d) for d in dims_text.split(",")]
    found = _literal_mismatch(inner, dims)
    if found:
        out.append(Problem(at, ins.end, found))


def _top_level_comma(text: str) -> bool:
    depth = 0
    for ch in text:
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        elif ch == "," and depth == 0:
            return True
    return False


def _literal_mismatch(literal: str, dims: list[int]) -> str:
    """XLA's message when the braces of ``literal`` do not match ``dims``, else "".
    Elements are counted as values, not commas: XLA reads ``{0 0, 1}`` as three."""
    rank = len(dims)
    counts: list[int] = []   # elements seen so far at each open brace level
    index: list[int] = []    # the index of each open level in its parent
    parens = 0
    in_value = False
    for ch in literal:
        if parens:
            parens += (ch == "(") - (ch == ")")
        elif ch == "{":
            if len(counts) >= rank:
                return f"expects nested array in rank {rank}, but sees larger"
            index.append(counts[-1] if counts else 0)
            if counts:
                counts[-1] += 1
            counts.append(0)
            in_value = False
        elif ch == "}":
            if not counts:
                return ""
            where = "[" + ",".join(str(i) for i in index[1:]) + "]"
            n = counts.pop()
            index.pop()
            if n != dims[len(counts)]:
                return f"expects {dims[len(counts)]} elements in the {where}th element, but sees {n}"
            in_value = False
        elif ch == "," or ch.isspace():
            in_value = False
        elif counts and not in_value:
            counts[-1] += 1
            in_value = True
            if ch == "(":
                parens = 1  # a complex pair `(re, im)`: one value
    return ""

def _check_rule(ins, rule: dict, seen: dict[str, str], out: list[Problem], n: int) -> None:
    """Operand count (``n``, as XLA reads the operands) and attributes of ``ins``
    against what XLA's parser accepts for its opcode
    (:mod:`hlo_lsp.model.opcode_rules`); ``seen`` maps the names defined so far
    to their shapes' text."""
    counts = rule["operands"]
    opcode = ins.opcode
    if opcode in _SHAPED_COUNTS:
        expected = _SHAPED_COUNTS[opcode](ins, n)
        if expected:
            out.append(Problem(ins.opcode_start, ins.opcode_start + len(opcode) + 1, expected))
    elif counts is not None and n not in counts:
        out.append(Problem(ins.opcode_start, ins.opcode_start + len(opcode) + 1,
                           f"expects {counts[0]} operands, but has {n} operands"))
    allowed = rule["attributes"]
    names: set[str] = set()
    for attr in ins.attributes:
        name = attr.name
        if name in names:
            out.append(Problem(attr.name_start, attr.name_start + len(name),
                               f"attribute {name} already exists"))
        names.add(name)
        wrong = value_problem(name, attr.value)
        if wrong:
            out.append(Problem(attr.value_start, max(attr.value_end, attr.value_start + 1),
                               wrong, Severity.WARNING if wrong.startswith(UNKNOWN_KEY)
                               else Severity.ERROR))
        if allowed is not None and name not in allowed:
            newer = name not in KNOWN_ATTRIBUTES or (ins.opcode, name) in NEWER_ATTRIBUTES
            out.append(Problem(
                attr.name_start, attr.name_start + len(name),
                f'unexpected attribute "{name}" for {ins.opcode}' + (
                    " (unknown to this XLA version; newer XLA may accept it)" if newer
                    else ""),
                Severity.WARNING if newer else Severity.ERROR))
    for required in rule["required"]:
        if required not in names:
            out.append(Problem(ins.opcode_start, ins.opcode_start + len(opcode),
                               f"attribute {required} is expected but not seen"))
            break
    else:
        if opcode == "concatenate" and "dimensions" in names:
            dims = ins.attribute("dimensions")
            if len([d for d in dims.value.strip("{} ").split(",") if d.strip()]) != 1:
                out.append(Problem(dims.value_start, dims.value_end,
                                   "concatenate takes exactly one dimension"))
        if opcode == "custom-call" and "operand_layout_constraints" in names:
            _check_layout_constraints(ins, seen, out)
        if opcode == "broadcast" and "dimensions" not in names and ins.operands:
            # Required unless the operand is a scalar (hlo_parser.cc, kBroadcast).
            shape = seen.get(ins.operands[0].ref.name, "")
            if shape and "[]" not in shape and "[" in shape:
                out.append(Problem(ins.opcode_start, ins.opcode_start + len(opcode),
                                   "attribute dimensions is expected but not seen"))


def _check_layout_constraints(ins, seen: dict[str, str], out: list[Problem]) -> None:
    """``operand_layout_constraints={shape, ...}`` of a custom-call: one shape per
    operand, each the operand's shape up to its layout (hlo_parser.cc kCustomCall:
    "Operand layout constraint shape ... is not compatible with operand shape")."""
    attr = ins.attribute("operand_layout_constraints")
    shapes = [t.strip() for t in split_top_level(attr.value.strip()[1:-1])] \
        if attr.value.strip().startswith("{") else []
    shapes = [t for t in shapes if t]
    if len(shapes) != len(ins.operands):
        out.append(Problem(attr.value_start, attr.value_end,
                           f"expects {len(ins.operands)} operand layout constraints, "
                           f"but sees {len(shapes)}"))
        return
    for i, (want, op) in enumerate(zip(shapes, ins.operands)):
        have = seen.get(op.ref.name, "")
        if have and not have.startswith("(") and not want.startswith("(") \
                and _without_layout(want) != _without_layout(have):
            out.append(Problem(attr.value_start, attr.value_end,
                               f"Operand layout constraint shape {want} for operand {i} is "
                               f"not compatible with operand shape {have}"))
            return


def _reduce_count(ins, n: int) -> str:
    """Inputs and their init values pair up (hlo_parser.cc, kReduce)."""
    return f"expects an even number of operands, but has {n} operands" if n % 2 else ""


def _tuple_count(ins, n: int) -> str:
    """A tuple written with its shape has one operand per element (hlo_parser.cc
    kTuple: the shape is checked against the operands)."""
    shape = ins.shape
    if shape is None or shape.elements is None or len(shape.elements) == n:
        return ""
    return f"expects {len(shape.elements)} operands, but has {n} operands"


def _dynamic_slice_count(ins, n: int) -> str:
    """The operand and either one start-index vector or one scalar index per
    sliced dimension (hlo_parser.cc kDynamicSlice: "Wrong number of operands.")."""
    if n == 2:
        return ""
    for attr in ins.attributes:
        if attr.name == "dynamic_slice_sizes":
            sizes = attr.value.strip("{} ")
            rank = len(sizes.split(",")) if sizes else 0
            return "" if n - 1 == rank else (
                f"Wrong number of operands: {n} for {rank} slice sizes "
                f"(expects the operand and 1 or {rank} start indices)")
    return ""


def _dynamic_update_slice_count(ins, n: int) -> str:
    """The operand, the update and either one start-index vector or one scalar
    index per dimension (hlo_parser.cc kDynamicUpdateSlice)."""
    shape = ins.shape
    if n == 3 or shape is None or shape.elements is not None:
        return ""
    dims = _dimensions(shape.text)
    rank = len(dims.split(",")) if dims else 0
    return "" if n == 2 + rank else (
        f"Wrong number of operands: {n} for a rank-{rank} update "
        f"(expects the operand, the update and 1 or {rank} start indices)")


#: Opcodes whose operand count depends on the shape or attributes.
_SHAPED_COUNTS = {"reduce": _reduce_count, "tuple": _tuple_count,
                  "dynamic-slice": _dynamic_slice_count,
                  "dynamic-update-slice": _dynamic_update_slice_count}


def _undefined(comp: Computation, ref) -> Problem:
    return Problem(ref.start, ref.end, (
        f"instruction {ref.name} is used before it is defined" if ref.name in comp.by_name
        else f"instruction does not exist: {ref.name}"))


def _check_attributes(ins, frame_count: int, out: list[Problem]) -> None:
    """Append the problems of ``ins``'s backend_config and metadata to ``out``."""
    for attr in ins.attributes:
        if attr.name == "backend_config" and (attr.value.startswith('{"')
                                              or is_json_object(attr.value)):
            try:
                json.loads(attr.value)
            except ValueError as exc:
                pos = getattr(exc, "pos", 0) or 0
                at = attr.value_start + pos
                out.append(Problem(at, min(at + 1, attr.value_end),
                                   f"backend_config is not valid JSON: {exc} (XLA's "
                                   "parser keeps it as text; a backend reading it as its "
                                   "BackendConfig proto when compiling would fail)",
                                   Severity.INFORMATION))
        elif attr.name == "metadata" and frame_count and "stack_frame_id=" in attr.value:
            idx = attr.value.index("stack_frame_id=")
            digits = attr.value[idx + 15:].split(maxsplit=1)[0].rstrip("}")
            if digits.isdigit() and not 1 <= int(digits) <= frame_count:
                at = attr.value_start + idx
                out.append(Problem(at, at + 15 + len(digits),
                                   f"stack_frame_id {digits} is not in the StackFrames "
                                   f"table (1..{frame_count})", Severity.WARNING))
