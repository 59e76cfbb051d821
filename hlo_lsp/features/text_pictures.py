"""The pictures as text, for a terminal without a browser (Neovim over SSH,
``hlo-lsp graph --text``, ``hlo-lsp memory --text``): lines of text, each
naming at most one instruction, with that instruction's name range to jump to.

- :func:`graph_text`: the dataflow around an instruction: the instruction, its
  operands as an indented tree up ``hops`` steps, its users as an indented tree
  down ``hops`` steps (each instruction expanded once, where it is nearest;
  elsewhere marked "above"/"below"); on a computation's header, the
  computation: its parameters, and its ROOT with the operand tree. The same
  questions as the graph page (:mod:`hlo_lsp.features.graph`: kinds and labels
  by :func:`~hlo_lsp.features.graph.classify_node`, shapes without layout), but
  walked in the model itself: a tree is never cut by the page's node budget,
  only by :data:`MAX_LINES`.
- :func:`memory_text`: memory over the schedule
  (:func:`hlo_lsp.features.memory.timeline_for`) as a bar chart in Unicode
  block elements (``▏▎▍▌▋▊▉█``, eighths of a cell), one row per step or per
  bucket of steps (at most :data:`CHART_ROWS` rows, each the most bytes live in
  its bucket), the peak marked, then the largest buffers live at the peak.

Text from the dump (names, custom-call targets, the reports' names) is data:
:func:`hlo_lsp.model.visible.visible` escapes control and format characters (``\\x1b``,
``\\u202e``...) so a line can neither drive a terminal nor split into two.
Offsets are code points into the module's text. Pure; never raises.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from hlo_lsp.features.graph import DEFAULT_HOPS, classify_node
from hlo_lsp.features.memory import MemoryTimeline, definitions
from hlo_lsp.model.hlo import Computation, HloModule, Instruction
from hlo_lsp.model.kernels import short_shape
from hlo_lsp.model.shapes import format_bytes
from hlo_lsp.model.visible import visible

#: Lines of one picture at most (the rest is counted in the message).
MAX_LINES = 400
#: Hops of a tree at most, whatever is asked.
MAX_HOPS = 12
#: Rows of the memory chart at most (steps are bucketed to fit).
CHART_ROWS = 60
#: Cells of the longest bar.
BAR_CELLS = 40
#: Characters of a shape shown at most.
SHAPE_CHARS = 60
#: Eighths of a cell, from one eighth to a full cell.
BLOCKS = "▏▎▍▌▋▊▉█"


@dataclass(frozen=True, slots=True)
class PictureLine:
    """One line: ``text``, and the name range (with ``%``) of the instruction
    or computation it names, offsets into the module's text (None for a line
    that names none: headers, notes)."""

    text: str
    start: int | None = None
    end: int | None = None


@dataclass(slots=True)
class TextPicture:
    """A picture as text: ``title`` (one line), ``lines``, the line to put the
    cursor on first (``cursor``, an index into ``lines``: the instruction asked
    about, the peak), and ``message``: what is not shown ("" when everything
    is)."""

    title: str
    lines: list[PictureLine] = field(default_factory=list)
    cursor: int = 0
    message: str = ""

    @property
    def text(self) -> str:
        """The lines joined, ending with a newline (what the CLI prints)."""
        return "".join(line.text + "\n" for line in self.lines)



# ------------------------------------------------------------------ graph ---

def _shape(ins: Instruction) -> str:
    if ins.shape is None:
        return ""
    s = short_shape(ins.shape.text)
    return s if len(s) <= SHAPE_CHARS else s[:SHAPE_CHARS - 3] + "..."


def describe(ins: Instruction) -> str:
    """``%name  what  shape`` of one instruction: ``what`` is the fusion's kind
    ("loop fusion", "Triton GEMM fusion"), a custom-call's library and target,
    ``parameter N``, else the opcode; ``ROOT`` first for the root."""
    kind, label, library, target = classify_node(ins)
    if kind == "custom-call" and target:
        what = f"{library} call {target}"
    elif kind == "parameter" and ins.parameter_number is not None:
        what = f"parameter {ins.parameter_number}"
    else:
        what = label or ins.opcode
    root = "ROOT " if ins.is_root else ""
    return visible(f"{root}%{ins.name.name}  {what}  {_shape(ins)}".rstrip())


class _Tree:
    """An operand tree (``up``) or user tree of one instruction, breadth-first:
    each instruction is expanded under the first instruction that reaches it at
    its least distance; its other places say where it is."""

    def __init__(self, comp: Computation, center: Instruction, up: bool) -> None:
        self.comp = comp
        self.center = center
        self.up = up

    def next_of(self, ins: Instruction) -> list[tuple[str, Instruction]]:
        """``(prefix, instruction)`` one step away: operands with their index,
        users each once."""
        if self.up:
            by_name = self.comp.by_name
            return [(f"{i}: ", by_name[op.ref.name]) for i, op in enumerate(ins.operands)
                    if op.ref.name in by_name]
        return [("", u) for u in self.comp.users_by_name.get(ins.name.name, ())]

    def lines(self, hops: int, budget: int) -> tuple[list[PictureLine], int]:
        """The tree's lines under the center (not included) and how many lines
        were left out past ``budget``."""
        center = self.center
        children: dict[int, list[tuple[str, Instruction, bool]]] = {}
        depth = {id(center): 0}
        queue = [center]
        for ins in queue:  # breadth-first: the queue grows as it is read
            d = depth[id(ins)]
            if d >= hops:
                continue
            kids = children.setdefault(id(ins), [])
            for prefix, nb in self.next_of(ins):
                fresh = id(nb) not in depth
                if fresh:
                    depth[id(nb)] = d + 1
                    queue.append(nb)
                kids.append((prefix, nb, fresh))
        out: list[PictureLine] = []
        placed: dict[int, int] = {}  # expanded instruction -> its line
        repeats: list[tuple[int, Instruction]] = []
        left_out = 0
        # depth first, children in order: (instruction, prefix, indent, last, fresh)
        stack: list[tuple[Instruction, str, str, bool, bool]] = [
            (nb, p, "", k == len(children.get(id(center), ())) - 1, fresh)
            for k, (p, nb, fresh) in enumerate(children.get(id(center), ()))][::-1]
        while stack:
            ins, prefix, indent, last, fresh = stack.pop()
            kids = children.get(id(ins), []) if fresh else []
            if len(out) >= budget:  # counted, with the lines under it
                left_out += 1
                stack.extend((nb, p, "", False, f) for p, nb, f in kids)
                continue
            more = ""
            if fresh and id(ins) not in children:  # at the last hop: what lies beyond
                n = len(self.next_of(ins))
                if n:
                    more = f"  (+{n} {'operand' if self.up else 'user'}{'' if n == 1 else 's'})"
            text = f"{indent}{'└─ ' if last else '├─ '}{prefix}{describe(ins)}{more}"
            if fresh:
                placed[id(ins)] = len(out)
            else:
                repeats.append((len(out), ins))
            out.append(PictureLine(text, ins.name.start, ins.name.end))
            child_indent = indent + ("   " if last else "│  ")
            for k in range(len(kids) - 1, -1, -1):
                p, nb, f = kids[k]
                stack.append((nb, p, child_indent, k == len(kids) - 1, f))
        for row, ins in repeats:
            where = placed.get(id(ins))
            note = "  (the center)" if ins is center else \
                "  (above)" if where is not None and where < row else \
                "  (below)" if where is not None else "  (again)"
            out[row] = PictureLine(out[row].text + note, out[row].start, out[row].end)
        return out, left_out


def _callers_line(module: HloModule, comp: Computation) -> PictureLine | None:
    callers = module.callers_of(comp.name.name, comp.start)
    if not callers:
        return None
    ins, ref = callers[0]
    more = f" and {len(callers) - 1} more" if len(callers) > 1 else ""
    return PictureLine(visible(f"called by %{ins.name.name} ({ref.attr}){more}"),
                       ins.name.start, ins.name.end)


def _trees(comp: Computation, center: Instruction, hops: int, pic: TextPicture,
           users: bool = True) -> int:
    """Adds ``center``'s line and its trees (operands, and users unless not
    ``users``) to ``pic``; returns the lines left out."""
    pic.lines.append(PictureLine(describe(center), center.name.start, center.name.end))
    left = 0
    steps = f"{hops} hop{'' if hops == 1 else 's'}"
    for up, title in ((True, f"operands, up to {steps}:"), (False, f"users, down to {steps}:")):
        if not up and not users:
            continue
        rows, cut = _Tree(comp, center, up).lines(hops, MAX_LINES - len(pic.lines) - 1)
        if not rows and not cut:
            pic.lines.append(PictureLine(f"{title[:title.index(',')]}: none"))
            continue
        pic.lines.append(PictureLine(title))
        pic.lines.extend(rows)
        left += cut
    return left


def graph_text(module: HloModule, computation: str | None = None,
               around: int | str | None = None, hops: int | None = None) -> TextPicture | None:
    """The dataflow around ``around`` (an offset inside an instruction or on its
    name, or an instruction name), up to ``hops`` steps (default
    :data:`~hlo_lsp.features.graph.DEFAULT_HOPS`, at most :data:`MAX_HOPS`) each
    way; an offset on a computation's header, or ``computation`` (a name) alone
    or with an offset outside it, or neither (ENTRY): that computation, its parameters and its ROOT's operand
    tree. The cursor line is the instruction's (the computation's header).
    None when there is no such computation or instruction."""
    hops = DEFAULT_HOPS if hops is None else max(0, min(int(hops), MAX_HOPS))
    center: Instruction | None = None
    comp: Computation | None = None
    if isinstance(around, int):
        center = module.instruction_at(around)
        comp = center.computation if center is not None else module.computation_at(around)
        if computation:  # another computation named: that one
            named = module.by_name.get(computation.lstrip("%"))
            if named is not comp:
                center, comp = None, named
        if comp is None:
            return None
    elif isinstance(around, str):
        name = around.lstrip("%")
        comps = [module.by_name.get(computation.lstrip("%"))] if computation else \
            list(module.computations)
        for c in comps:
            if c is not None and name in c.by_name:
                comp, center = c, c.by_name[name]
                break
        if center is None:
            return None
    elif computation:
        comp = module.by_name.get(computation.lstrip("%"))
    else:
        comp = module.entry
    if comp is None:
        return None
    # the computation's name as written (with the % XLA's older printer puts there)
    cname = visible(("%" if comp.name.end - comp.name.start > len(comp.name.name) else "")
                      + comp.name.name)
    if center is not None:
        pic = TextPicture(visible(f"dataflow around %{center.name.name} in {cname}, "
                                    f"{hops} hop{'' if hops == 1 else 's'}"))
        pic.lines.append(PictureLine(pic.title))
        caller = _callers_line(module, comp)
        pic.lines.append(PictureLine(f"in {cname}", comp.name.start, comp.name.end))
        if caller is not None:
            pic.lines.append(caller)
        pic.cursor = len(pic.lines)
        left = _trees(comp, center, hops, pic)
    else:
        entry = "ENTRY " if comp.is_entry else ""
        n = len(comp.instructions)
        pic = TextPicture(f"{entry}computation {cname}, {n} instruction{'' if n == 1 else 's'}")
        pic.lines.append(PictureLine(pic.title, comp.name.start, comp.name.end))
        caller = _callers_line(module, comp)
        if caller is not None:
            pic.lines.append(caller)
        params = sorted(comp.parameters().items())
        pic.lines.append(PictureLine(f"parameters: {len(params)}"))
        left = 0
        for _, p in params:
            if len(pic.lines) >= MAX_LINES:
                left += 1
                continue
            n = len(comp.users_by_name.get(p.name.name, ()))
            pic.lines.append(PictureLine(f"  {describe(p)}  ({n} user{'' if n == 1 else 's'})",
                                         p.name.start,
                                         p.name.end))
        root = comp.root
        if root is not None:
            pic.lines.append(PictureLine("root:"))
            left += _trees(comp, root, hops, pic, users=False)
    if left:
        pic.message = (f"{left} more lines not shown (at most {MAX_LINES}): ask for fewer "
                       "hops")
    return pic


# ----------------------------------------------------------------- memory ---

def bar(value: int, full: int, cells: int = BAR_CELLS) -> str:
    """``value`` of ``full`` as a bar of ``cells`` cells at most, in eighths of a
    cell (:data:`BLOCKS`); a value above zero gets at least one eighth."""
    if full <= 0 or value <= 0:
        return ""
    eighths = max(1, round(min(value, full) * cells * 8 / full))
    whole, part = divmod(eighths, 8)
    return BLOCKS[-1] * whole + (BLOCKS[part - 1] if part else "")


def short_bytes(n: int) -> str:
    """``n`` bytes in the largest binary unit below it, one decimal: ``2.1 MiB``."""
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        value /= 1024
        if value < 1024:
            break
    return f"{value:.1f} {unit}"


def memory_text(t: MemoryTimeline, module: HloModule | None = None, top: int = 10,
                rows: int = CHART_ROWS) -> TextPicture:
    """``t`` as a chart: one row per step, or per bucket of consecutive steps
    when there are more than ``rows`` (the row shows the most bytes live in its
    bucket, and the instruction run at that step), the bar in eighths of a cell
    scaled to the most bytes live anywhere, the peak marked (``◀ peak``: XLA's
    moment, else the most bytes); then the ``top`` largest buffers live at the
    peak (bytes and binary units, the defining instruction, its shape, the
    steps it lives), then the notes. Each row names the instruction run at its
    step, each buffer the instruction defining it (``module`` locates them;
    without it nothing jumps). The cursor starts on the peak's row."""
    defs = definitions(module)

    def line(text: str, name: str | None) -> PictureLine:
        ins = defs.get(name) if name else None
        return PictureLine(text, ins.name.start, ins.name.end) if ins is not None \
            else PictureLine(text)

    n = len(t.live)
    peak_name = t.steps[t.peak_step] if t.peak_step < len(t.steps) else ""
    estimate = " (estimate)" if t.source == "estimate" else ""
    title = (f"memory over the schedule{estimate}: peak {short_bytes(t.peak_bytes)} at step "
             f"{t.peak_step} of {len(t.steps)}" + (f", %{visible(peak_name)}"
                                                   if peak_name else ""))
    pic = TextPicture(title)
    pic.lines.append(PictureLine(title))
    full = max(t.live) if t.live else 0
    rows = max(1, rows)
    size = max(1, math.ceil(n / rows))
    caption = "step" if size == 1 else "steps"
    label_width = max(len(caption), len(f"{n - 1}") * (2 if size > 1 else 1)
                      + (1 if size > 1 else 0))
    pic.lines.append(PictureLine(
        f"{caption:>{label_width}}  {'live':>9}  "
        f"bytes live per step" + (f" (the most in each {size} steps)" if size > 1 else "")
        + f", {BLOCKS[-1]} = {short_bytes(max(1, full // BAR_CELLS))}"))
    for lo in range(0, n, size):
        hi = min(n, lo + size) - 1
        step = t.peak_step if lo <= t.peak_step <= hi else \
            max(range(lo, hi + 1), key=lambda s: (t.live[s], -s))
        name = t.steps[step] if step < len(t.steps) else ""
        label = f"{lo}" if lo == hi else f"{lo}-{hi}"
        mark = ""
        if lo <= t.peak_step <= hi:
            mark, pic.cursor = "  ◀ peak", len(pic.lines)
        elif lo <= t.max_step <= hi and t.live[t.max_step] > t.peak_bytes:
            mark = "  ◀ most bytes"
        what = f"%{visible(name)}" if name else ("end" if step == len(t.steps) else "")
        pic.lines.append(line(f"{label:>{label_width}}  {short_bytes(t.live[step]):>9}  "
                              f"{bar(t.live[step], full):<{BAR_CELLS}}  {what}{mark}", name))
    shown = t.peak_buffers[:max(0, top)]
    pic.lines.append(PictureLine(f"largest buffers live at the peak ({len(shown)} of "
                                 f"{len(t.peak_buffers)}):"))
    for b in shown:
        shape = f"  {visible(b.shape)}" if b.shape else ""
        pic.lines.append(line(f"  {format_bytes(b.size):>26}  %{visible(b.key)}{shape}  "
                              f"steps {b.start}-{b.end}", b.instruction))
    if len(t.peak_buffers) > len(shown):
        pic.lines.append(PictureLine(f"  ... {len(t.peak_buffers) - len(shown)} more"))
        pic.message = f"{len(t.peak_buffers) - len(shown)} more buffers live at the peak"
    if t.total_allocated is not None and t.source != "estimate":  # the estimate's note says it
        pic.lines.append(PictureLine(f"the buffer assignment allocates "
                                     f"{format_bytes(t.total_allocated)} in all"))
    pic.lines.extend(PictureLine(f"note: {visible(note)}") for note in t.notes)
    return pic


__all__ = ["BLOCKS", "CHART_ROWS", "MAX_HOPS", "MAX_LINES", "PictureLine", "TextPicture",
           "bar", "describe", "graph_text", "memory_text", "short_bytes"]
