"""The HLO model: module, computations, instructions, with exact source ranges.

Plain Python, no LSP types. Every definition and every reference to an
instruction or a computation carries its character offsets into the document
text (``start`` inclusive, ``end`` exclusive); :class:`hlo_lsp.syntax.lines.LineIndex`
converts them to line/column. Names are stored without the optional ``%``
sigil; ranges cover the sigil.

Structure mirrors xla/hlo/ir (HloModule, HloComputation, HloInstruction).
"""

from __future__ import annotations

import bisect
import re
import threading
import weakref
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from typing import Callable, Hashable, Iterator, TypeVar

from hlo_lsp.model.shapes import ArrayShape, Shape, TupleShape, decode_shape


class Severity(Enum):
    ERROR = 1
    WARNING = 2
    INFORMATION = 3
    HINT = 4


@dataclass(slots=True)
class Problem:
    """A diagnostic in model terms: offsets into the text and a message."""

    start: int
    end: int
    message: str
    severity: Severity = Severity.ERROR
    source: str = "hlo-lsp"


@dataclass(slots=True)
class Ref:
    """One occurrence of a name (definition or use) at ``[start, end)``."""

    name: str
    start: int
    end: int


@dataclass(slots=True)
class ShapeToken:
    """A shape as written in the text, decoded on first access.

    ``text`` is the source text of an array shape, or the rendered text of a tuple;
    ``elements`` holds the element ShapeTokens of a tuple shape, else ``None``.
    """

    text: str
    start: int
    end: int
    elements: list["ShapeToken"] | None = None
    #: the decoded shape, once decoded (a tuple of hundreds of elements is
    #: decoded once, not at each of the thousands of reads by the cost model)
    decoded: Shape | None = field(default=None, repr=False, compare=False)

    def decode(self) -> Shape:
        """The decoded shape. Raises ValueError for malformed array shapes or
        tuples nested too deep (not remembered: raised at each call)."""
        if self.decoded is None:
            self.decoded = decode_shape(self)
        return self.decoded


@dataclass(slots=True)
class Operand:
    """An operand: a use of an instruction by name, optionally with its shape
    printed in front (``as_text()`` style) or a bare name (ShortParsable dumps)."""

    ref: Ref
    shape: ShapeToken | None = None


@dataclass(slots=True)
class Attribute:
    """``name=value``. ``value`` is the verbatim value text."""

    name: str
    name_start: int
    value: str
    value_start: int
    value_end: int


@dataclass(slots=True)
class ComputationRef:
    """A reference to a computation from attribute ``attr`` (``calls``, ``to_apply``...)."""

    attr: str
    ref: Ref


# A key starts only where no word character precedes it, and is read without
# backtracking: findall stays linear on a megabyte of word characters.
_METADATA_ITEM = re.compile(r'(?<![A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_]*+)=("(?:[^"\\]|\\.)*+"|[^\s}]++)')


def decode_metadata(value: str) -> dict[str, str | int]:
    """Decode a ``metadata={...}`` value into ``{key: value}``.

    Keys follow xla/xla_data.proto OpMetadata (op_type, op_name, source_file,
    source_line, stack_frame_id, ...). Quoted values are unescaped; integers parsed.
    """
    out: dict[str, str | int] = {}
    for key, raw in _METADATA_ITEM.findall(value):
        if raw.startswith('"'):
            out[key] = unquote(raw)
        else:
            try:
                out[key] = int(raw)
            except ValueError:
                out[key] = raw
    return out


def unescape(s: str) -> str:
    """Undo the C escapes XLA uses in quoted strings (``\\"``, ``\\\\``, ``\\n``...)."""
    if "\\" not in s:
        return s
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), s)


def unquote(value: str) -> str:
    """An attribute value as XLA means it: a value in matching double or single
    quotes loses them and its escapes (:func:`unescape`); any other value is
    returned as written. ``"__cublas$gemm"`` -> ``__cublas$gemm``."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return unescape(value[1:-1])
    return value


@dataclass(slots=True, eq=False)
class Instruction:
    """One HLO instruction ``[ROOT] name = shape opcode(operands), attributes``.

    ``start``/``end`` span the whole instruction text. ``parameter_number`` is N for
    ``parameter(N)``; ``literal`` is the ``(...)`` text of a constant.

    ``computation`` (the computation holding the instruction) is kept as a weak
    reference: without a reference cycle between a computation and its
    instructions, a model that is no longer used is freed at once by reference
    counting, and the server can exclude live models from the cyclic garbage
    collector's scans (see hlo_lsp.lsp.server.analyze).
    """

    name: Ref
    opcode: str
    opcode_start: int
    shape: ShapeToken | None
    operands: list[Operand]
    attributes: list[Attribute]
    called: list[ComputationRef]
    control_predecessors: list[Ref]
    start: int
    end: int
    is_root: bool = False
    parameter_number: int | None = None
    literal: str | None = None
    _computation: "weakref.ref[Computation] | None" = None
    #: ``metadata={...}`` decoded, once read (the attributes never change)
    _metadata: "dict[str, str | int] | None" = field(default=None, repr=False)

    @property
    def computation(self) -> "Computation | None":
        """The computation holding this instruction, while it is alive."""
        ref = self._computation
        return None if ref is None else ref()

    @computation.setter
    def computation(self, comp: "Computation | None") -> None:
        self._computation = None if comp is None else weakref.ref(comp)

    def attribute(self, name: str) -> Attribute | None:
        """The first attribute called ``name``, or None."""
        for a in self.attributes:
            if a.name == name:
                return a
        return None

    @property
    def metadata(self) -> dict[str, str | int]:
        """``metadata={...}`` decoded (:func:`decode_metadata`), ``{}`` without it;
        decoded once (the summary, inlay hints and hover each read it for every
        instruction). The dict is shared: read it, do not change it."""
        decoded = self._metadata
        if decoded is None:
            a = self.attribute("metadata")
            decoded = self._metadata = decode_metadata(a.value) if a else {}
        return decoded

    def uses(self) -> Iterator[Ref]:
        """Every instruction reference inside this instruction (operands, control deps)."""
        for op in self.operands:
            yield op.ref
        yield from self.control_predecessors


@dataclass(slots=True, eq=False)
class Parameter:
    """A parameter in a computation signature ``(name: shape, ...)``."""

    ref: Ref
    shape: ShapeToken


#: Instructions on either side of a binary-search hit that
#: :meth:`Computation.instruction_at` also looks at (nested operands of one user).
_NEST_WINDOW = 8


@dataclass(eq=False)
class Computation:
    """A computation: ``[ENTRY] name (params) -> shape { instructions }``.

    ``start`` is the start of the header, ``body_start`` the offset of ``{`` and
    ``end`` the offset just past ``}`` (or of the last parsed instruction when the
    closing brace is missing).

    An inline computation, written in an attribute in place of a computation's
    name (``to_apply={ a = f32[] parameter(0) ... }``, hlo_parser.cc
    ParseHloComputation), has ``inline`` set, the name ``_`` that XLA gives it
    (its range is the ``{``), no signature, and ``start == body_start``. The
    computation whose instructions hold it lists it in ``nested``; the module
    lists both, in text order of their starts.
    """

    name: Ref
    is_entry: bool
    params: list[Parameter]
    result: ShapeToken | None
    start: int
    body_start: int
    end: int
    instructions: list[Instruction] = field(default_factory=list)
    execution_thread: str | None = None
    closed: bool = True
    inline: bool = False
    nested: list["Computation"] = field(default_factory=list)

    @cached_property
    def by_name(self) -> dict[str, Instruction]:
        """Instructions by name (first definition wins)."""
        out: dict[str, Instruction] = {}
        for ins in self.instructions:
            out.setdefault(ins.name.name, ins)
        return out

    @cached_property
    def users_by_name(self) -> dict[str, list[Instruction]]:
        """Instruction name -> the instructions of this computation that use it
        (as an operand or a control predecessor), each once, in text order."""
        out: dict[str, list[Instruction]] = {}
        for ins in self.instructions:
            for name in dict.fromkeys(r.name for r in ins.uses()):
                out.setdefault(name, []).append(ins)
        return out

    @property
    def root(self) -> Instruction | None:
        """The ROOT instruction, else the last one (XLA's rule)."""
        for ins in self.instructions:
            if ins.is_root:
                return ins
        return self.instructions[-1] if self.instructions else None

    def instruction_at(self, offset: int) -> Instruction | None:
        """The innermost instruction of this computation whose text contains
        ``offset`` (end inclusive): a nested operand instruction (``.anon``)
        rather than the instruction holding it."""
        ins = self.instructions
        lo, hi = 0, len(ins)
        while lo < hi:
            mid = (lo + hi) // 2
            if ins[mid].start <= offset:
                lo = mid + 1
            else:
                hi = mid
        # Nested instructions come before their user (XLA's order) but start
        # inside it, so starts are sorted except within such a group: look at
        # the neighbours too and take the innermost holding ``offset``.
        best = None
        for j in range(max(lo - _NEST_WINDOW, 0), min(lo + _NEST_WINDOW, len(ins))):
            cand = ins[j]
            if cand.start <= offset <= cand.end and (best is None or cand.start > best.start):
                best = cand
        return best

    def parameters(self) -> dict[int, Instruction]:
        """``parameter(N)`` instructions by N."""
        return {i.parameter_number: i for i in self.instructions
                if i.parameter_number is not None}

    def shift(self, delta: int) -> None:
        """Move every offset of this computation by ``delta`` characters (used when
        an edit earlier in the document moved an unchanged computation).

        The hot loop of an edit in a big document (every computation after the
        edit moves): written out flat, with array shapes (no elements) moved
        without the stack that tuples need."""
        if not delta:
            return
        _shift_ref(self.name, delta)
        for p in self.params:
            _shift_ref(p.ref, delta)
            _shift_shape(p.shape, delta)
        if self.result is not None:
            _shift_shape(self.result, delta)
        self.start += delta
        self.body_start += delta
        self.end += delta
        for comp in self.nested:
            comp.shift(delta)
        shift_instructions(self.instructions, delta)

    def shifted(self, delta: int) -> "Computation":
        """A copy of this computation with every offset moved by ``delta``
        characters; this one is left as it is (an analysis that a request still
        reads keeps its offsets). Copies every object that holds an offset; the
        strings are shared."""
        def ref(r: Ref) -> Ref:
            return Ref(r.name, r.start + delta, r.end + delta)

        def shape(t: ShapeToken | None) -> ShapeToken | None:
            if t is None:
                return None
            return _shifted_shape(t, delta)

        comp = Computation(ref(self.name), self.is_entry,
                           [Parameter(ref(p.ref), shape(p.shape)) for p in self.params],
                           shape(self.result), self.start + delta, self.body_start + delta,
                           self.end + delta, [], self.execution_thread, self.closed,
                           self.inline, [c.shifted(delta) for c in self.nested])
        for ins in self.instructions:
            copy = Instruction(
                ref(ins.name), ins.opcode, ins.opcode_start + delta, shape(ins.shape),
                [Operand(ref(op.ref), shape(op.shape)) for op in ins.operands],
                [Attribute(a.name, a.name_start + delta, a.value, a.value_start + delta,
                           a.value_end + delta) for a in ins.attributes],
                [ComputationRef(c.attr, ref(c.ref)) for c in ins.called],
                [ref(r) for r in ins.control_predecessors],
                ins.start + delta, ins.end + delta, ins.is_root, ins.parameter_number,
                ins.literal)
            copy.computation = comp
            comp.instructions.append(copy)
        return comp

    def with_instruction(self, index: int, ins: Instruction, delta: int,
                         copy: bool) -> "Computation":
        """This computation with ``instructions[index]`` replaced by ``ins``: an
        edit on that instruction's line, which moved the text after it by
        ``delta`` characters (the instructions after it and the closing brace
        move with it). With ``copy`` this computation is left as it is (a
        request may still read it) and the result holds copies; else its
        instructions move into the result and this one must no longer be read.
        Its header and nested computations stay (the edit is below the header
        of a computation without inline computations)."""
        base = self.shifted(0) if copy else self
        after = base.instructions[index + 1:]
        shift_instructions(after, delta)
        comp = Computation(base.name, base.is_entry, base.params, base.result, base.start,
                           base.body_start, base.end + delta,
                           base.instructions[:index] + [ins] + after,
                           base.execution_thread, base.closed, base.inline, base.nested)
        holder = weakref.ref(comp)
        for i in comp.instructions:
            i._computation = holder
        return comp

    def signature(self, with_name: bool = True) -> str:
        """``name(p0: shape, ...) -> shape`` as printed in hovers."""
        params = ", ".join(f"{p.ref.name}: {p.shape.text}" for p in self.params)
        result = f" -> {self.result.text}" if self.result else ""
        return f"{self.name.name if with_name else ''}({params}){result}"


def shift_instructions(instructions: list[Instruction], delta: int) -> None:
    """Move every offset of ``instructions`` by ``delta`` characters, in place:
    the hot loop of an edit in a big document, written out flat (array shapes,
    which have no elements, moved without the stack that tuples need)."""
    for ins in instructions:
        r = ins.name
        r.start += delta
        r.end += delta
        ins.opcode_start += delta
        ins.start += delta
        ins.end += delta
        t = ins.shape
        if t is not None:
            if t.elements is None:
                t.start += delta
                t.end += delta
            else:
                _shift_shape(t, delta)
        for op in ins.operands:
            r = op.ref
            r.start += delta
            r.end += delta
            t = op.shape
            if t is not None:
                if t.elements is None:
                    t.start += delta
                    t.end += delta
                else:
                    _shift_shape(t, delta)
        for a in ins.attributes:
            a.name_start += delta
            a.value_start += delta
            a.value_end += delta
        for c in ins.called:
            r = c.ref
            r.start += delta
            r.end += delta
        for r in ins.control_predecessors:
            r.start += delta
            r.end += delta


def _shift_ref(ref: Ref, delta: int) -> None:
    ref.start += delta
    ref.end += delta


def _shift_shape(shape: ShapeToken, delta: int) -> None:
    stack = [shape]
    while stack:  # iterative: tuples nest thousands of levels in hostile input
        s = stack.pop()
        s.start += delta
        s.end += delta
        if s.elements:
            stack.extend(s.elements)


def _shifted_shape(token: ShapeToken, delta: int) -> ShapeToken:
    """A copy of ``token`` (and its elements) with every offset moved by ``delta``."""
    def copy(t: ShapeToken) -> ShapeToken:
        # The decoded shape depends on the text only: the copy keeps it.
        return ShapeToken(t.text, t.start + delta, t.end + delta,
                          None if t.elements is None else [], t.decoded)

    top = copy(token)
    stack = [(token, top)]
    while stack:
        old, new = stack.pop()
        for e in old.elements or ():
            c = copy(e)
            new.elements.append(c)
            if e.elements is not None:
                stack.append((e, c))
    return top


@dataclass(slots=True)
class FileLocation:
    file_name_id: int
    function_name_id: int
    line: int
    end_line: int = 0
    column: int = 0
    end_column: int = 0


@dataclass(slots=True)
class SourceFrame:
    """A resolved Python stack frame: file, function, 1-based line and column
    (0 when unknown); ``end_column`` is exclusive."""

    file: str
    function: str
    line: int
    column: int = 0
    end_line: int = 0
    end_column: int = 0


#: Frames of one resolved stack at most (a longer chain is cut).
MAX_STACK_FRAMES = 256


@dataclass(slots=True)
class StackFrameTables:
    """The FileNames / FunctionNames / FileLocations / StackFrames tables of a dump.

    Ids are 1-based by position (xla/hlo/ir/stack_frames.cc). ``frames`` maps a
    frame id to ``(file_location_id, parent_frame_id as printed)``.
    """

    file_names: dict[int, str] = field(default_factory=dict)
    function_names: dict[int, str] = field(default_factory=dict)
    file_locations: dict[int, FileLocation] = field(default_factory=dict)
    frames: dict[int, tuple[int, int]] = field(default_factory=dict)
    start: int = -1
    end: int = -1
    sections: list[tuple[str, int, int]] = field(default_factory=list)
    _resolved: dict[int, tuple[SourceFrame, ...]] = field(default_factory=dict, repr=False,
                                                          compare=False)

    def resolve(self, frame_id: int, limit: int = MAX_STACK_FRAMES) -> list[SourceFrame]:
        """The call stack of ``stack_frame_id=frame_id``, innermost frame first
        (at most ``limit`` frames); [] for an unknown id.

        The text prints ``parent_frame_id`` as parent+1: ``P`` means frame ``P-1``
        and ``P=1`` (printed 0+1) means no parent (xla/hlo/ir/stack_frames.cc,
        PrintStackFrameIndex). Cycles and unknown ids end the chain. Stacks are
        remembered per id (the tables do not change once parsed); each call
        returns a new list.
        """
        if limit != MAX_STACK_FRAMES:
            return self._walk(frame_id, limit)
        known = self._resolved.get(frame_id)
        if known is None:
            known = self._resolved[frame_id] = tuple(self._walk(frame_id, limit))
        return list(known)

    def _walk(self, frame_id: int, limit: int) -> list[SourceFrame]:
        out: list[SourceFrame] = []
        seen: set[int] = set()
        fid = frame_id
        while fid in self.frames and fid not in seen and len(out) < limit:
            seen.add(fid)
            loc_id, parent_printed = self.frames[fid]
            frame = self.location(loc_id)
            if frame is not None:
                out.append(frame)
            fid = parent_printed - 1
        return out

    def location(self, location_id: int) -> SourceFrame | None:
        """Row ``location_id`` of the FileLocations table as a frame (file and
        function by name, 1-based columns: the table counts them from 0); None
        for an unknown id."""
        loc = self.file_locations.get(location_id)
        if loc is None:
            return None
        return SourceFrame(self.file_names.get(loc.file_name_id, "?"),
                           self.function_names.get(loc.function_name_id, "?"),
                           loc.line, loc.column + 1, loc.end_line, loc.end_column + 1)


@dataclass(slots=True)
class ModulePart:
    """One module of a split file: XLA's tests and many bug reports hold several
    modules in one file, separated by lines ``// -----`` (xla/tools/hlo_opt and
    run_hlo_module ``--split_input_file``), and XLA's tools parse each part
    alone. ``start``/``end`` are the part's offsets (the separator line belongs
    to neither); ``name`` and ``header_attributes`` are its ``HloModule`` header's."""

    start: int
    end: int
    name: Ref | None
    header_attributes: list[Attribute]


_T = TypeVar("_T")
#: Serialises the first computation of :meth:`HloModule.derived` values.
_DERIVED_LOCK = threading.RLock()


@dataclass(eq=False)
class HloModule:
    """A parsed HLO text document.

    ``computations`` are in text order; ``problems`` holds syntax errors and
    semantic findings. A document without ``HloModule`` header has ``name`` None.

    A split file (``// -----`` lines) has one :class:`ModulePart` per module in
    ``parts`` (empty otherwise): names resolve within their part
    (:meth:`resolve`, :meth:`callers_of`), and ``name`` is the first part's.
    """

    text: str
    name: Ref | None = None
    header_attributes: list[Attribute] = field(default_factory=list)
    header_end: int = 0
    computations: list[Computation] = field(default_factory=list)
    frames: StackFrameTables = field(default_factory=StackFrameTables)
    problems: list[Problem] = field(default_factory=list)
    parts: list[ModulePart] = field(default_factory=list)

    def part_index(self, offset: int) -> int:
        """The index of the part of a split file holding ``offset`` (0 when the
        file is not split)."""
        parts = self.parts
        if not parts:
            return 0
        return max(bisect.bisect_right([p.start for p in parts], offset) - 1, 0)

    def resolve(self, name: str, at: int) -> Computation | None:
        """The computation called ``name`` as seen from offset ``at``: in a split
        file, the one of the same part; else :attr:`by_name`'s."""
        if not self.parts:
            return self.by_name.get(name)
        return self._by_part_and_name.get((self.part_index(at), name))

    @cached_property
    def _by_part_and_name(self) -> dict[tuple[int, str], Computation]:
        out: dict[tuple[int, str], Computation] = {}
        for c in self.computations:
            out.setdefault((self.part_index(c.start), c.name.name), c)
        return out

    def callers_of(self, name: str, at: int) -> list[tuple[Instruction, ComputationRef]]:
        """The instructions (with the reference) calling computation ``name``, in
        the part of a split file that holds offset ``at``."""
        found = self.callers.get(name, [])
        if not self.parts or not found:
            return found
        part = self.part_index(at)
        return [(ins, c) for ins, c in found if self.part_index(c.ref.start) == part]

    @cached_property
    def by_name(self) -> dict[str, Computation]:
        """Computations by name (first definition wins)."""
        out: dict[str, Computation] = {}
        for c in self.computations:
            out.setdefault(c.name.name, c)
        return out

    @property
    def entry(self) -> Computation | None:
        """The ENTRY computation, else the last one that is not inline (XLA's rule)."""
        for c in self.computations:
            if c.is_entry:
                return c
        for c in reversed(self.computations):
            if not c.inline:
                return c
        return None

    @cached_property
    def _starts(self) -> list[int]:
        return [c.start for c in self.computations]

    def computation_at(self, offset: int) -> Computation | None:
        """The computation whose text contains ``offset``."""
        comps = self.computations
        i = bisect.bisect_right(self._starts, offset) - 1
        # An inline computation lies inside the one holding it: past its end,
        # the offset may still be in an enclosing computation listed before it.
        while i >= 0:
            comp = comps[i]
            if offset <= comp.end:
                return comp
            if not comp.inline:
                return None
            i -= 1
        return None

    def instruction_at(self, offset: int) -> Instruction | None:
        """The innermost instruction whose text contains ``offset`` (end inclusive)."""
        comp = self.computation_at(offset)
        return None if comp is None else comp.instruction_at(offset)

    def instruction_named(self, name: str) -> Instruction | None:
        """The first instruction called ``name`` (no ``%``), its computations
        in text order; None without one. XLA gives each name once per module."""
        for comp in self.computations:
            found = comp.by_name.get(name)
            if found is not None:
                return found
        return None

    def instruction_count(self) -> int:
        return sum(len(c.instructions) for c in self.computations)

    def header_attribute(self, name: str) -> Attribute | None:
        for a in self.header_attributes:
            if a.name == name:
                return a
        return None

    def derived(self, key: str, make: Callable[["HloModule"], _T]) -> _T:
        """The value ``make(self)`` computed once per module and kept on it, so it
        lives exactly as long as the module: the indexes and models that later
        layers build from a module (the cost model, the workspace's name index).

        A value must not hold the module strongly (keep a ``weakref``): the cycle
        would keep every edited version's module, text included, until a full
        collection, which the analyses' paused collector makes rare. (A
        ``WeakKeyDictionary`` keyed by the module is worse: a value that refers to
        its key keeps it forever.) Thread-safe: ``make`` runs at most once per key."""
        cache = self.__dict__.get("_derived")
        if cache is None:
            cache = self.__dict__.setdefault("_derived", {})
        try:
            return cache[key]
        except KeyError:
            pass
        with _DERIVED_LOCK:
            if key not in cache:
                cache[key] = make(self)
            return cache[key]

    def remembered(self, table: str, key: Hashable, make: Callable[[], _T]) -> _T:
        """``make()``, kept under ``key`` in this module's table ``table`` (a
        :meth:`derived` dict): a value per instruction or kernel computed once
        whoever asks. The same rule holds for the values (they must not hold the
        module); a key may be an instruction's ``id()``, which the module keeps
        alive as long as the table. Two threads may both make a missing value:
        ``make`` must be pure."""
        memo = self.derived(table, lambda _: {})
        try:
            return memo[key]
        except KeyError:
            value = memo[key] = make()
            return value

    @cached_property
    def callers(self) -> dict[str, list[tuple[Instruction, ComputationRef]]]:
        """Computation name -> the instructions (with the reference) that call it."""
        out: dict[str, list[tuple[Instruction, ComputationRef]]] = {}
        for c in self.computations:
            for ins in c.instructions:
                for cref in ins.called:
                    out.setdefault(cref.ref.name, []).append((ins, cref))
        return out

    @cached_property
    def users(self) -> dict[int, list[Instruction]]:
        """``id(instruction)`` -> instructions that use it as operand or control predecessor."""
        out: dict[int, list[Instruction]] = {}
        for c in self.computations:
            scope = c.by_name
            for ins in c.instructions:
                seen: set[int] = set()
                for ref in ins.uses():
                    target = scope.get(ref.name)
                    if target is not None and id(target) not in seen:
                        seen.add(id(target))
                        out.setdefault(id(target), []).append(ins)
        return out


__all__ = [
    "ArrayShape", "Attribute", "Computation", "ComputationRef", "FileLocation",
    "HloModule", "Instruction", "ModulePart", "Operand", "Parameter", "Problem", "Ref", "Severity",
    "ShapeToken", "SourceFrame", "StackFrameTables", "TupleShape", "decode_metadata",
    "shift_instructions",
    "unescape", "unquote",
]
