"""Memory over the schedule: bytes live at each step of a compiled module's
instruction sequence, the peak, and the buffers alive at the peak; what
``hlo-lsp memory`` prints and draws.

Source: XLA's live-range report (``X-live-range.txt``,
:func:`hlo_lsp.dump.reports.parse_live_range`; xla/hlo/utils/hlo_live_range.cc):
each value is live from its start to its end step, both included; its size is
the ``size=`` of that value in the buffer-assignment report
(``X-buffer-assignment.txt``, the same ``name{index}``), else the size the
live-range report prints for it at the peak, else the byte size of the
defining instruction's shape in the HLO text. The peak is XLA's peak moment
(``Live ranges at N (peak)``); its total equals the report's own figure. XLA
picks that moment by weighting each value with its defining instruction's
whole shape (``ComputePeakMemoryMoment``), so another step may hold more bytes
of values: :attr:`MemoryTimeline.max_step` says which, and the note says so.

Without a live-range report (dumps of older jaxlib versions, such as
examples/cpu_dump; jaxlib 0.10 writes one on the CPU too): an *estimate* from
the HLO text of a scheduled module (``is_scheduled=true``: the ENTRY
instructions in text order are the schedule): a value is live from its
instruction (parameters from step 0) to its last user in ENTRY, to the end
for the ROOT and for values of output or maybe-live-out allocations; sizes
from the buffer assignment. It ignores aliasing (bitcast, tuple,
get-tuple-element share buffers) and called computations; the buffer
assignment's allocation total is given beside it. Sizes are bytes. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hlo_lsp.dump.reports import (BufferAssignment, LiveRangeReport, load_buffer_assignment_for,
                                  load_live_range_for)
from hlo_lsp.model.hlo import HloModule, Instruction
from hlo_lsp.model.shapes import format_bytes
from hlo_lsp.model.markdown import code


@dataclass(slots=True)
class MemoryBuffer:
    """One value: defined by ``instruction`` at ``shape_index`` (``{}``: the
    whole value), ``size`` bytes, live at steps ``start``..``end`` (included).
    ``shape``, ``allocation`` and ``offset`` come from the buffer assignment
    (None/"" when absent); ``offset_in_text`` is the start of the defining
    instruction in the HLO text (None when not found)."""

    instruction: str
    shape_index: str
    size: int
    start: int
    end: int
    shape: str = ""
    allocation: int | None = None
    offset: int | None = None
    offset_in_text: int | None = None
    size_source: str = "buffer-assignment"

    @property
    def key(self) -> str:
        """``name{index}`` as XLA prints it."""
        return self.instruction + self.shape_index


@dataclass(slots=True)
class MemoryTimeline:
    """Bytes live per step: ``live[t]`` for ``t`` in ``0..len(steps)`` (the last
    entry is the schedule's end, after the last instruction); ``steps[t]`` the
    instruction run at step ``t``. ``peak_step``/``peak_bytes``: the peak (XLA's
    moment when the report names one), ``peak_buffers`` the values live then,
    largest first; ``report_peak_bytes``: the report's own figure (None without
    one); ``max_step``: a step with the most bytes live; ``source``:
    ``"live-range"`` or ``"estimate"``; ``total_allocated``: the buffer
    assignment's bytes over all allocations (None without it)."""

    steps: list[str]
    live: list[int]
    buffers: list[MemoryBuffer]
    peak_step: int
    peak_bytes: int
    peak_buffers: list[MemoryBuffer]
    max_step: int
    source: str
    report_peak_bytes: int | None = None
    total_allocated: int | None = None
    notes: list[str] = field(default_factory=list)


def _ba_sizes(assignment: BufferAssignment | None) -> dict[str, tuple]:
    out: dict[str, tuple] = {}
    if assignment is None:
        return out
    for alloc in assignment.allocations:
        for v in alloc.values:
            out.setdefault(v.instruction + (v.shape_index or "{}"),
                           (v.size, v.shape, alloc.index, v.offset))
    return out


def definitions(module: HloModule | None) -> dict[str, Instruction]:
    """Instruction name -> its instruction, for names as XLA's reports write
    them (no ``%``): ENTRY's first, then the other computations' in text order
    (a name defined twice is the first one's); {} without a module."""
    out: dict[str, Instruction] = {}
    if module is None:
        return out
    comps = list(module.computations)
    if module.entry is not None:
        comps.remove(module.entry)
        comps.insert(0, module.entry)
    for c in comps:
        for name, ins in c.by_name.items():
            out.setdefault(name, ins)
    return out


def _shape_size(ins: Instruction | None, index: str) -> int | None:
    if ins is None or ins.shape is None:
        return None
    token = ins.shape
    for part in index.strip("{}").split(","):
        if not part.strip():
            continue
        if token.elements is None or not part.strip().isdigit() \
                or int(part) >= len(token.elements):
            return None
        token = token.elements[int(part)]
    try:
        return token.decode().byte_size
    except ValueError:
        return None


def _timeline(steps: list[str], buffers: list[MemoryBuffer], peak_step: int | None,
              source: str, by_slot: bool = False) -> MemoryTimeline:
    end = len(steps)
    if by_slot:  # values sharing an allocation offset hold one buffer: count the largest
        live = [0] * (end + 1)
        slots: dict[tuple, list[MemoryBuffer]] = {}
        for b in buffers:
            slots.setdefault((b.allocation, b.offset), []).append(b)
        for members in slots.values():
            lo = max(0, min(b.start for b in members))
            hi = min(end, max(b.end for b in members))
            best = [0] * (hi - lo + 1)
            for b in members:
                for t in range(max(lo, b.start), min(hi, b.end) + 1):
                    if b.size > best[t - lo]:
                        best[t - lo] = b.size
            for k, size in enumerate(best):
                live[lo + k] += size
    else:
        delta = [0] * (end + 2)
        for b in buffers:
            s, e = max(0, b.start), min(end, max(b.end, b.start))
            delta[s] += b.size
            delta[e + 1] -= b.size
        live, running = [], 0
        for t in range(end + 1):
            running += delta[t]
            live.append(running)
    max_step = max(range(len(live)), key=lambda t: (live[t], -t)) if live else 0
    step = peak_step if peak_step is not None and 0 <= peak_step < len(live) else max_step
    at_peak = sorted((b for b in buffers if b.start <= step <= b.end),
                     key=lambda b: (-b.size, b.instruction, b.shape_index))
    return MemoryTimeline(steps, live, buffers, step, live[step] if live else 0, at_peak,
                          max_step, source)


def memory_timeline(report: LiveRangeReport, assignment: BufferAssignment | None = None,
                    module: HloModule | None = None) -> MemoryTimeline:
    """The timeline of a live-range report (see the module docstring), sizes
    from ``assignment``, instructions located in ``module`` (both optional)."""
    sizes = _ba_sizes(assignment)
    printed = {p.instruction + p.shape_index: p.size for p in report.peak_buffers}
    defs = definitions(module)
    buffers: list[MemoryBuffer] = []
    unknown: list[str] = []
    for lb in report.buffers:
        ins = defs.get(lb.instruction)
        b = MemoryBuffer(lb.instruction, lb.shape_index, 0, lb.start, lb.end,
                         offset_in_text=ins.start if ins is not None else None)
        known = sizes.get(lb.key)
        if known is not None:
            b.size, b.shape, b.allocation, b.offset = known
        elif lb.key in printed:
            b.size, b.size_source = printed[lb.key], "live-range report"
        else:
            size = _shape_size(ins, lb.shape_index)
            b.size, b.size_source = (size, "HLO shape") if size is not None else (0, "unknown")
            if size is None:
                unknown.append(lb.key)
        buffers.append(b)
    steps = list(report.sequence)
    while len(steps) < report.end:
        steps.append("")
    t = _timeline(steps, buffers, report.peak_step, "live-range")
    t.report_peak_bytes = report.peak_bytes
    t.total_allocated = assignment.total_bytes if assignment is not None else None
    if unknown:
        t.notes.append(f"{len(unknown)} values of unknown size counted as 0 bytes: "
                       + ", ".join(unknown[:5]) + (" ..." if len(unknown) > 5 else ""))
    if t.report_peak_bytes is not None and t.report_peak_bytes != t.peak_bytes:
        t.notes.append(f"the report's peak is {t.report_peak_bytes} bytes, the values live "
                       f"at step {t.peak_step} add up to {t.peak_bytes} bytes")
    if t.live and t.live[t.max_step] > t.peak_bytes:
        t.notes.append(f"step {t.max_step} ({t.steps[t.max_step] or 'end'}) holds more: "
                       f"{t.live[t.max_step]} bytes (XLA picks its peak moment weighting each "
                       "value by its instruction's whole shape)")
    return t


def estimated_timeline(module: HloModule, assignment: BufferAssignment) -> MemoryTimeline:
    """An estimate from the ENTRY schedule and the buffer assignment, for dumps
    without a live-range report (see the module docstring)."""
    entry = module.entry
    steps = [i.name.name for i in entry.instructions] if entry is not None else []
    position = {name: k for k, name in enumerate(steps)}
    end = len(steps)
    live_out: set[str] = set()
    for alloc in assignment.allocations:
        if alloc.output_shape or alloc.maybe_live_out:
            live_out.update(v.instruction for v in alloc.values)
    users = entry.users_by_name if entry is not None else {}
    root = entry.root.name.name if entry is not None and entry.root is not None else None
    buffers: list[MemoryBuffer] = []
    for alloc in assignment.allocations:
        for v in alloc.values:
            if v.instruction not in position:
                continue
            ins = entry.by_name[v.instruction]
            start = 0 if ins.opcode == "parameter" else position[v.instruction]
            if v.instruction in live_out or v.instruction == root or alloc.parameter is not None:
                stop = end
            else:
                stop = max((position.get(u.name.name, start) for u in users.get(v.instruction, ())),
                           default=start)
            buffers.append(MemoryBuffer(v.instruction, v.shape_index or "{}", v.size, start,
                                        stop, v.shape, alloc.index, v.offset, ins.start))
    t = _timeline(steps, buffers, None, "estimate", by_slot=True)
    t.total_allocated = assignment.total_bytes
    t.notes.append("estimated from the ENTRY schedule and the buffer assignment (no "
                   "live-range report beside this dump): aliasing and called computations "
                   f"are ignored, values at one allocation offset count once (the largest); the buffer assignment allocates {assignment.total_bytes} "
                   "bytes in all")
    return t


def timeline_for(path: str, module: HloModule) -> MemoryTimeline | None:
    """The memory timeline of the dump file ``path`` (parsed as ``module``) from
    the reports XLA wrote beside it: the live-range report with sizes from the
    buffer assignment (:func:`memory_timeline`), else the estimate from the
    buffer assignment (:func:`estimated_timeline`); None when neither report is
    there. Reads files (cached by :mod:`hlo_lsp.dump.reports`)."""
    report = load_live_range_for(path)
    assignment = load_buffer_assignment_for(path)
    if report is not None and report.buffers:
        return memory_timeline(report, assignment, module)
    if assignment is not None and assignment.allocations:
        return estimated_timeline(module, assignment)
    return None


def peak_markdown(t: MemoryTimeline, top: int = 5) -> str:
    """The peak and its ``top`` largest buffers in a few Markdown lines (the
    hover of the module header, the editor's summary)."""
    name = t.steps[t.peak_step] if t.peak_step < len(t.steps) and t.steps[t.peak_step] \
        else "end"
    estimate = " (estimate)" if t.source == "estimate" else ""
    lines = [f"**Memory at the peak{estimate}**: {format_bytes(t.peak_bytes)} at step "
             f"{t.peak_step} of {len(t.steps)} ({code('%' + name)}), {len(t.peak_buffers)} buffers live; "
             "largest:", ""]
    for b in t.peak_buffers[:top]:
        lines.append(f"- {code('%' + b.key)} {format_bytes(b.size)}" + (f" {code(b.shape)}" if b.shape else "")
                     + f", steps {b.start}-{b.end}")
    if len(t.peak_buffers) > top:
        lines.append(f"- ... {len(t.peak_buffers) - top} more (`hlo-lsp memory FILE`)")
    return "\n".join(lines)


def peak_dict(t: MemoryTimeline, top: int = 10) -> dict:
    """The peak as JSON data (``hlo-lsp summary --json``): bytes, step, the
    instruction run then, the source of the figures, the ``top`` largest buffers
    live then (name, shape index, bytes, shape, live steps)."""
    return {"peak_bytes": t.peak_bytes, "peak_step": t.peak_step,
            "instruction": t.steps[t.peak_step] if t.peak_step < len(t.steps) else "",
            "steps": len(t.steps), "source": t.source,
            "report_peak_bytes": t.report_peak_bytes, "buffers_live": len(t.peak_buffers),
            "largest": [{"instruction": b.instruction, "shape_index": b.shape_index,
                         "bytes": b.size, "shape": b.shape, "start": b.start, "end": b.end}
                        for b in t.peak_buffers[:top]]}


def format_text(t: MemoryTimeline, top: int = 20) -> str:
    """The peak and its largest buffers, as ``hlo-lsp memory`` prints them."""
    name = t.steps[t.peak_step] if t.peak_step < len(t.steps) and t.steps[t.peak_step] \
        else "end"
    lines = [f"peak: {format_bytes(t.peak_bytes)} at step {t.peak_step} of "
             f"{len(t.steps)} ({name})" + (" [estimate]" if t.source == "estimate" else "")]
    if t.report_peak_bytes is not None:
        lines.append(f"report's peak: {format_bytes(t.report_peak_bytes)}")
    lines.append(f"buffers live at the peak: {len(t.peak_buffers)}")
    for b in t.peak_buffers[:top]:
        where = f"allocation {b.allocation} +{b.offset}" if b.allocation is not None else \
            b.size_source
        lines.append(f"  {b.size:>14,} B  {b.key:<40} {b.shape}  steps {b.start}-{b.end}  "
                     f"({where})")
    if len(t.peak_buffers) > top:
        lines.append(f"  ... {len(t.peak_buffers) - top} more")
    lines.extend(f"note: {n}" for n in t.notes)
    return "\n".join(lines) + "\n"


__all__ = ["MemoryBuffer", "MemoryTimeline", "definitions", "estimated_timeline", "format_text",
           "memory_timeline", "peak_dict", "peak_markdown", "timeline_for"]
