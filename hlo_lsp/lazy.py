"""Big documents: a skeleton for answers before the full parse, and parses that
reuse every computation an edit did not touch.

XLA prints each computation header at column 0 and its instructions indented,
one per line. The :class:`Skeleton` finds the header lines with one regular
expression search over the text (tens of milliseconds for megabytes) and splits
the document into chunks: the module header with its stack-frame tables, then
one chunk per computation. The chunks are only a way to cut the work; each is
parsed with the grammar (``grammar/hlo.lark``), and whenever a chunk does not
parse on its own the caller falls back to the whole-text parse with recovery,
so a file laid out differently is never misread, only parsed more slowly.

- :func:`parse_chunked` parses chunk by chunk, reusing the computations of a
  previous parse whose text is unchanged (shifted to their new offsets): an edit
  reparses only the computation it touched.
- :func:`quick_definition` answers go-to-definition on an operand or a
  computation reference from two grammar-parsed lines (the cursor's and the
  target's) found by searching the text: no full parse needed.
"""

from __future__ import annotations

import bisect
import re

from lark.exceptions import UnexpectedInput

from .features import Span
from .model import Computation, HloModule, Instruction
from .parser import _assemble, parse_fragment
from .text import LineIndex

#: A computation header line: a name at column 0, the line ending with "{".
_HEAD = re.compile(r"^(?:ENTRY[ \t]+)?%?[A-Za-z_][\w.\-]*[^\n]*\{[ \t]*$", re.M)
_HEAD_NAME = re.compile(r"(?:ENTRY[ \t]+)?%?([A-Za-z_][\w.\-]*)")


class Skeleton:
    """Computation chunk boundaries of a document (character offsets)."""

    __slots__ = ("text", "heads", "_names")

    def __init__(self, text: str) -> None:
        self.text = text
        self.heads: list[int] = [m.start() for m in _HEAD.finditer(text)]
        self._names: dict[str, int] | None = None

    def head_named(self, name: str) -> int | None:
        """Offset of the header line that names computation ``name`` (a candidate:
        callers confirm it with the grammar), or None."""
        if self._names is None:
            names: dict[str, int] = {}
            for head in self.heads:
                m = _HEAD_NAME.match(self.text, head)
                if m:
                    names.setdefault(m.group(1), head)
            self._names = names
        return self._names.get(name)

    def bounds(self, i: int) -> tuple[int, int]:
        """``[start, end)`` of the i-th computation chunk."""
        end = self.heads[i + 1] if i + 1 < len(self.heads) else len(self.text)
        return self.heads[i], end

    @property
    def prefix_end(self) -> int:
        """End of the module header and stack-frame tables."""
        return self.heads[0] if self.heads else len(self.text)

    def chunk_index(self, offset: int) -> int:
        """Index of the chunk containing ``offset``; -1 in the prefix."""
        return bisect.bisect_right(self.heads, offset) - 1


def parse_chunked(text: str, skeleton: Skeleton | None = None,
                  previous: HloModule | None = None) -> HloModule | None:
    """Parse ``text`` chunk by chunk; None when some chunk does not parse on its own
    (the caller then uses :func:`hlo_lsp.parser.parse`, which recovers from errors).

    Computations of ``previous`` whose chunk text is unchanged are reused, moved
    to their new offsets (they are then shared with, and moved in, ``previous``).
    The result carries ``chunk_cache`` (chunk text -> Computation) for the next edit.
    """
    skeleton = skeleton or Skeleton(text)
    cache: dict[str, Computation] = getattr(previous, "chunk_cache", None) or {}
    module = HloModule(text)
    items: list = []
    new_cache: dict[str, Computation] = {}
    try:
        prefix = text[:skeleton.prefix_end]
        if prefix.strip():
            items.extend(parse_fragment(prefix, "start", 0))
        for i in range(len(skeleton.heads)):
            start, end = skeleton.bounds(i)
            chunk = text[start:end]
            comp = cache.get(chunk)
            if comp is not None:
                comp.shift(start - comp.start)
            else:
                parsed = parse_fragment(chunk, "start", start)
                if len(parsed) != 1 or not isinstance(parsed[0], Computation):
                    return None
                comp = parsed[0]
            new_cache[chunk] = comp
            items.append(comp)
    except UnexpectedInput:
        return None
    _assemble(module, items)
    module.chunk_cache = new_cache
    return module


# ------------------------------------------------------------ quick answers --

def _line_bounds(text: str, offset: int) -> tuple[int, int]:
    start = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    return start, (len(text) if end < 0 else end)


def _instruction_on_line(text: str, offset: int) -> Instruction | None:
    start, end = _line_bounds(text, offset)
    try:
        ins = parse_fragment(text[start:end], "instruction", start)
    except UnexpectedInput:
        return None
    return ins if isinstance(ins, Instruction) else None


def _name_pattern(name: str) -> str:
    return r"%?" + re.escape(name) + r"(?![\w.\-])"


def find_instruction(text: str, name: str, start: int, end: int) -> Instruction | None:
    """The instruction called ``name`` defined in ``text[start:end]`` (one
    computation), found by searching for ``name =`` at a line start and confirmed
    by parsing that line with the grammar."""
    pattern = re.compile(r"^[ \t]*(?:ROOT[ \t]+)?" + _name_pattern(name) + r"[ \t]*=", re.M)
    for m in pattern.finditer(text, start, end):
        ins = _instruction_on_line(text, m.end())
        if ins is not None and ins.name.name == name:
            return ins
    return None


def find_computation_head(text: str, name: str,
                          skeleton: Skeleton | None = None) -> tuple[int, int] | None:
    """Span of the name of computation ``name`` in its header line, confirmed by
    parsing the header with the grammar's ``computation_head`` rule. With a
    ``skeleton`` the candidate comes from its table of header names (no search)."""
    if skeleton is not None:
        head = skeleton.head_named(name)
        starts = [] if head is None else [head]
    else:
        pattern = re.compile(r"^(?:ENTRY[ \t]+)?" + _name_pattern(name)
                             + r"[ \t]*(?:\(|->|\{)", re.M)
        starts = [m.start() for m in pattern.finditer(text)]
    for start in starts:
        line_start, line_end = _line_bounds(text, start)
        try:
            head = parse_fragment(text[line_start:line_end], "computation_head", line_start)
        except UnexpectedInput:
            continue
        ref = head[2]
        if ref.name == name:
            return ref.start, ref.end
    return None


def quick_definition(text: str, skeleton: Skeleton, offset: int) -> list[Span] | None:
    """Go-to-definition without a full parse, for an operand, a control
    predecessor or a computation reference at ``offset``; None for anything else
    (the caller then waits for the full analysis)."""
    ins = _instruction_on_line(text, offset)
    if ins is None:
        return None
    for ref in ins.uses():
        if ref.start <= offset <= ref.end:
            i = skeleton.chunk_index(offset)
            if i < 0:
                return None
            start, end = skeleton.bounds(i)
            target = find_instruction(text, ref.name, start, end)
            return [Span(target.name.start, target.name.end)] if target else None
    for cref in ins.called:
        if cref.ref.start <= offset <= cref.ref.end:
            head = find_computation_head(text, cref.ref.name, skeleton)
            return [Span(*head)] if head else None
    if ins.name.start <= offset <= ins.name.end and ins.parameter_number is None:
        return [Span(ins.name.start, ins.name.end)]
    return None


def partial_module(text: str, skeleton: Skeleton, offset: int,
                   cache: dict[int, list] | None = None) -> HloModule | None:
    """A module holding only what a hover at ``offset`` needs: the header and
    stack-frame tables, the computation containing ``offset`` and the
    computations it calls. None when those pieces do not parse on their own.
    ``cache`` (chunk index -> parsed items, -1 for the header) keeps the pieces
    for the next call on the same text."""
    cache = {} if cache is None else cache

    def chunk(j: int) -> list:
        if j not in cache:
            if j < 0:
                prefix = text[:skeleton.prefix_end]
                cache[j] = parse_fragment(prefix, "start", 0) if prefix.strip() else []
            else:
                s, e = skeleton.bounds(j)
                cache[j] = parse_fragment(text[s:e], "start", s)
        return cache[j]

    i = skeleton.chunk_index(offset)
    if i < 0:
        return None
    items: list = []
    try:
        items.extend(chunk(-1))
        [comp] = chunk(i)
        callees = {c.ref.name for ins in comp.instructions for c in ins.called}
        for name in sorted(callees):
            head = find_computation_head(text, name, skeleton)
            if head is not None:
                items.extend(chunk(skeleton.chunk_index(head[0])))
        items.append(comp)
    except (UnexpectedInput, ValueError):
        return None
    module = HloModule(text)
    _assemble(module, items)
    module.computations.sort(key=lambda c: c.start)
    module.partial = True
    return module


__all__ = ["LineIndex", "Skeleton", "find_computation_head", "find_instruction",
           "parse_chunked", "partial_module", "quick_definition"]
