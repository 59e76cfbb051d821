"""textDocument/inlayHint: what the dump leaves implicit, shown in place.

Three categories of hints, each a pure function of the model:

- ``operandShape`` (kind "type"): after an operand printed as a bare name
  (ShortParsable dumps, ``add(%a, %b)``), the shape of its definition without
  layout, e.g. ``: f32[32,64]``; the tooltip has the full shape with layout.
- ``source`` (no LSP kind): at the end of the instruction's last line, the
  innermost Python frame of its metadata (``stack_frame_id`` through the
  stack-frame tables, or ``source_file``/``source_line``;
  :func:`hlo_lsp.model.frames.python_stack`), e.g. ``make_dump.py:95``; the tooltip
  has the innermost frame and its caller. Clients may turn it off
  (docs/protocol.md, initialization option ``inlayHints``).
- ``tupleElement`` (kind "parameter"): after ``index=N`` of a
  ``get-tuple-element`` whose operand is a cuBLAS / cuBLASLt custom-call, what
  that element is (``output``, ``d_amax ...``, ``workspace ...``;
  :func:`hlo_lsp.model.kernels.tuple_element`).
- ``collective`` (no LSP kind): after the ``replica_groups`` (or
  ``source_target_pairs``) of a collective, devices, groups and the bytes each
  device sends under the ring lower bound, e.g. ``8 devices · 2 groups of 4 ·
  6.0 KiB/dev``; the tooltip has the whole explanation
  (:func:`hlo_lsp.features.collectives.collective_hint`).
"""

from __future__ import annotations

import bisect
from operator import attrgetter
from typing import NamedTuple

from hlo_lsp.features.collectives import collective_hint
from hlo_lsp.model.frames import format_frame, python_stack, short_frame
from hlo_lsp.model.kernels import short_shape, tuple_element
from hlo_lsp.model.hlo import Computation, HloModule, Instruction
from hlo_lsp.syntax.lines import LineIndex

CATEGORIES = ("operandShape", "source", "tupleElement", "collective")


class InlayHint(NamedTuple):
    """One hint shown at character offset ``offset``.

    ``kind`` is "type", "parameter" or None (LSP InlayHintKind Type/Parameter/none);
    ``category`` one of :data:`CATEGORIES`; ``padding_left`` asks the client for a
    space before the label. A named tuple: a whole-document request on a large
    dump makes tens of thousands, and a tuple is built in a third of the time of
    a frozen dataclass (docs/benchmarks.md).
    """

    offset: int
    label: str
    kind: str | None
    tooltip: str
    category: str
    padding_left: bool = False


def inlay_hints(module: HloModule, start: int = 0, end: int | None = None,
                categories=CATEGORIES) -> list[InlayHint]:
    """Hints for the instructions that overlap ``[start, end]`` (character
    offsets; ``end=None`` means the end of the text), sorted by offset.

    ``categories`` restricts the output to some of :data:`CATEGORIES`.
    """
    text = module.text
    if end is None:
        end = len(text)
    wanted = _Wanted(set(categories))
    out: list[InlayHint] = []
    comps = module.computations
    starts = [c.start for c in comps]
    first = max(bisect.bisect_right(starts, start) - 1, 0)
    for comp in comps[first:]:
        if comp.start > end:
            break
        if comp.end < start:
            continue
        ins_list = comp.instructions
        i = max(bisect.bisect_right([x.start for x in ins_list], start) - 1, 0) \
            if comp.start < start else 0
        for ins in ins_list[i:]:
            if ins.start > end:
                break
            if ins.end < start:
                continue
            _instruction_hints(module, comp, ins, wanted, out)
    out = [h for h in out if start <= h.offset <= end]
    out.sort(key=attrgetter("offset"))
    return out


class _Wanted:
    """The categories asked for, as flags, and the labels of the operand shapes
    met so far (one per distinct shape text: a dump repeats a few thousand
    shapes in tens of thousands of operands); lives for one request."""

    __slots__ = ("operand_shape", "source", "tuple_element", "collective", "shape_labels")

    def __init__(self, categories: set[str]) -> None:
        self.operand_shape = "operandShape" in categories
        self.source = "source" in categories
        self.tuple_element = "tupleElement" in categories
        self.collective = "collective" in categories
        self.shape_labels: dict[str, str] = {}


def _instruction_hints(module: HloModule, comp: Computation, ins: Instruction,
                       wanted: _Wanted, out: list[InlayHint]) -> None:
    if wanted.operand_shape:
        scope = comp.by_name
        labels = wanted.shape_labels
        for op in ins.operands:
            if op.shape is not None:
                continue
            ref = op.ref
            target = scope.get(ref.name)
            if target is None or target.shape is None:
                continue
            full = target.shape.text
            label = labels.get(full)
            if label is None:
                label = labels[full] = ": " + short_shape(full)
            out.append(InlayHint(ref.end, label, "type", f"%{ref.name}: {full}",
                                 "operandShape"))
    if wanted.tuple_element and ins.opcode == "get-tuple-element":
        element = tuple_element(ins, comp)
        if element is not None:
            producer = element.producer
            out.append(InlayHint(
                ins.attribute("index").value_end, element.meaning.split(" (")[0],
                "parameter",
                f"element {{{element.index}}} of %{producer.name.name} "
                f"({producer.opcode} {producer.attribute('custom_call_target').value}): "
                f"{element.meaning}", "tupleElement", padding_left=True))
    if wanted.collective:
        hint = collective_hint(module, ins)
        if hint is not None:
            out.append(InlayHint(hint[0], hint[1], None, hint[2], "collective",
                                 padding_left=True))
    if wanted.source and ins.attribute("metadata") is not None:
        stack = python_stack(module, ins)
        if stack:
            top = stack[0]
            text = module.text
            eol = LineIndex.bounds(text, ins.end)[1]
            # Skip trailing blanks so the hint sits after the last visible character.
            pos = eol
            while pos > ins.end and text[pos - 1] in " \t\r":
                pos -= 1
            label = short_frame(top)
            # Kept short: a whole-document request on a large dump returns tens of
            # thousands of hints; the instruction's hover shows the full stack.
            tooltip = format_frame(top)
            if len(stack) > 1:
                tooltip += f"\ncalled from {format_frame(stack[1])}"
                if len(stack) > 2:
                    tooltip += f" and {len(stack) - 2} more frames"
            out.append(InlayHint(pos, label, None, tooltip, "source", padding_left=True))
