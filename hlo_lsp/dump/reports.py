"""XLA's buffer-assignment and memory-usage reports, parsed.

An XLA dump directory holds, next to ``module_NNNN.name.<platform>_after_optimizations.txt``,
two text reports written by xla/service/buffer_assignment.cc for the same module:

``...after_optimizations-buffer-assignment.txt`` (``BufferAssignment::ToString``)::

    BufferAssignment:
    allocation 1: size 32768, parameter 2, shape |f32[64,128]| at ShapeIndex {}:
     value: <357 params__w1__.1 @0> (size=32768,offset=0): f32[64,128]{1,0}

  One ``allocation N: size S[, color C][, parameter P, shape |..| at ShapeIndex {..}]
  [, output shape is |..|][, constant][, thread-local][, maybe-live-out]
  [, preallocated-temp]:`` header (``BufferAllocation::ToShortString``) per
  allocation, then one `` value:`` line per HloValue assigned to it
  (``HloValue::ToShortString``: ``<id instruction[{shape index}][ (phi)][ @color]>``,
  then the value's size and offset inside the allocation, in bytes, and its shape
  with layout). Older XLA versions append ``Total bytes used: N (..)`` and a
  ``Used values:`` section; both are read when present.

``...after_optimizations-memory-usage-report.txt``: per memory space
(``Memory Space: default (color=0)`` and ``Total bytes: N (..)``), one table per
allocation, largest allocation first (ties by index)::

      cumulative_size;       size;       offset; used_by_n_values; shapes_list
      ------------------------------------------------------------
        32.0KiB( 52%);    32.0KiB;            0;                8; f32[32], 2×f32[32,128]

  Each row is one offset inside the allocation, with the number and shapes of
  the values placed there (``BufferAllocation::MemoryUsageReport``). The tables
  carry no allocation numbers; :func:`match_memory_tables` pairs them with the
  allocations of the buffer-assignment report by that order and checks the pairing
  (every row's value count must equal the number of values at that offset).
  Older XLA versions print ``allocation N: ...`` headers before the tables; those
  are used directly.

Sizes and offsets are bytes. Lines (numbered as :class:`hlo_lsp.syntax.lines.LineIndex`
numbers them) and columns are 0-based, columns in characters.
Parsing never raises; unknown lines are skipped.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from dataclasses import dataclass, field

from hlo_lsp.dump.names import hlo_path_for_report, report_kind, report_path, report_paths_for_hlo
from hlo_lsp.dump.untrusted import read_text
from hlo_lsp.model.shapes import format_bytes
from hlo_lsp.syntax.lines import LineIndex

log = logging.getLogger("hlo_lsp.dump.reports")

_ALLOCATION = re.compile(r"^allocation (\d+): size ([0-9.]+\s*[KMGTP]?i?B?)(.*?):?\s*$")
_PARAMETER = re.compile(r", parameter (\d+), shape \|([^|]*)\| at ShapeIndex (\{[^}]*\})")
_OUTPUT = re.compile(r", output shape is \|([^|]*)\|")
_COLOR = re.compile(r", color (\d+)")
_VALUE = re.compile(
    r"^\s*value: <(?P<id>\d+) (?P<name>[^\s{>]+)(?P<index>\{[^}]*\})?(?P<phi> \(phi\))?"
    r"(?: @(?P<color>\d+))?> \(size=(?P<size>\d+),offset=(?P<offset>\d+)\): (?P<shape>.*)$")
_VALUE_REF = re.compile(r"<(\d+) ([^\s{>]+)")
_TOTAL_USED = re.compile(r"^Total bytes used: (\d+)")
_SPACE = re.compile(r"^Memory Space: (.*?) \(color=(\d+)\)")
_TOTAL = re.compile(r"^Total bytes: (\d+)")
_TABLE_HEADER = re.compile(r"^\s*cumulative_size;\s*size;\s*offset;")
_ROW = re.compile(
    r"^\s*(?P<cum>[0-9.]+\s*[KMGTP]?i?B)\(\s*(?P<pct>\d+)%\);\s*(?P<size>[0-9.]+\s*[KMGTP]?i?B);"
    r"\s*(?P<offset>\d+);\s*(?P<n>\d+);\s?(?P<shapes>.*)$")
_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50}


def parse_bytes(text: str) -> int:
    """``"4"`` -> 4, ``"512B"`` -> 512, ``"32.0KiB"`` -> 32768, as printed by
    tsl HumanReadableNumBytes (one decimal: the result is approximate above 1 KiB).
    Raises ValueError for anything else."""
    m = re.fullmatch(r"\s*([0-9.]+)\s*([KMGTP]?i?B)?\s*", text)
    if not m:
        raise ValueError(f"not a byte count: {text!r}")
    unit = m.group(2) or "B"
    if unit not in _UNITS:
        raise ValueError(f"unknown unit in {text!r}")
    return int(round(float(m.group(1)) * _UNITS[unit]))


@dataclass(frozen=True, slots=True)
class BufferValue:
    """One `` value:`` line: HloValue ``id`` defined by instruction ``instruction``
    (at tuple ``shape_index`` such as ``{0}``, "" for the whole value), ``size``
    bytes at byte ``offset`` of its allocation. ``line``/``name_start``/``name_end``
    locate the instruction name in the report (0-based line, character columns)."""

    id: int
    instruction: str
    shape_index: str
    phi: bool
    color: int | None
    size: int
    offset: int
    shape: str
    line: int
    name_start: int
    name_end: int


@dataclass(slots=True)
class Allocation:
    """One ``allocation N:`` of the buffer assignment. ``size`` in bytes; the
    flags follow ``BufferAllocation::ToShortString``."""

    index: int
    size: int
    line: int
    color: int = 0
    parameter: int | None = None
    parameter_shape: str = ""
    parameter_shape_index: str = ""
    output_shape: str = ""
    constant: bool = False
    thread_local: bool = False
    maybe_live_out: bool = False
    preallocated_temp: bool = False
    values: list[BufferValue] = field(default_factory=list)

    @property
    def flags(self) -> list[str]:
        """``["parameter 2", "output", "constant", "thread-local", "maybe-live-out",
        "preallocated-temp", "color 1"]``, those that apply, in XLA's order."""
        out = []
        if self.color:
            out.append(f"color {self.color}")
        if self.parameter is not None:
            out.append(f"parameter {self.parameter}")
        if self.output_shape:
            out.append("output")
        for flag, name in ((self.constant, "constant"), (self.thread_local, "thread-local"),
                           (self.maybe_live_out, "maybe-live-out"),
                           (self.preallocated_temp, "preallocated-temp")):
            if flag:
                out.append(name)
        return out


@dataclass(frozen=True, slots=True)
class NameRef:
    """An instruction name in a report: 0-based ``line``, columns ``[start, end)``."""

    name: str
    line: int
    start: int
    end: int


@dataclass(slots=True)
class BufferAssignment:
    """A parsed ``-buffer-assignment.txt``. ``total_bytes`` is the printed
    ``Total bytes used`` (older XLA) or the sum of the allocation sizes;
    ``refs`` holds every ``<id name`` occurrence, in text order; ``path`` is the
    file it was read from ("" when parsed from text)."""

    allocations: list[Allocation] = field(default_factory=list)
    total_bytes: int = 0
    refs: list[NameRef] = field(default_factory=list)
    path: str = ""
    _by_name: dict[str, list[tuple[Allocation, BufferValue]]] | None = None

    def values_of(self, instruction: str) -> list[tuple[Allocation, BufferValue]]:
        """Every (allocation, value) whose value is defined by ``instruction``,
        in allocation order."""
        if self._by_name is None:
            by: dict[str, list[tuple[Allocation, BufferValue]]] = {}
            for alloc in self.allocations:
                for v in alloc.values:
                    by.setdefault(v.instruction, []).append((alloc, v))
            self._by_name = by
        return self._by_name.get(instruction, [])

    def allocation(self, index: int) -> Allocation | None:
        """The allocation numbered ``index`` (``allocation N:``), None if absent."""
        for a in self.allocations:
            if a.index == index:
                return a
        return None

    def allocation_at_line(self, line: int) -> Allocation | None:
        """The allocation whose header or value lines contain 0-based ``line``."""
        best = None
        for a in self.allocations:
            if a.line <= line:
                best = a
            else:
                break
        if best is None:
            return None
        last = best.values[-1].line if best.values else best.line
        return best if line <= last else None


def _parse_header(m: re.Match, line_no: int) -> Allocation:
    rest = m.group(3)
    try:
        size = parse_bytes(m.group(2))
    except ValueError:
        size = 0
    alloc = Allocation(int(m.group(1)), size, line_no)
    if (c := _COLOR.search(rest)):
        alloc.color = int(c.group(1))
    if (p := _PARAMETER.search(rest)):
        alloc.parameter = int(p.group(1))
        alloc.parameter_shape = p.group(2)
        alloc.parameter_shape_index = p.group(3)
    if (o := _OUTPUT.search(rest)):
        alloc.output_shape = o.group(1)
    plain = re.sub(r"\|[^|]*\|", "", rest)
    words = {w.strip() for w in plain.split(",")}
    alloc.constant = "constant" in words
    alloc.thread_local = "thread-local" in words
    alloc.maybe_live_out = "maybe-live-out" in words
    alloc.preallocated_temp = "preallocated-temp" in words
    return alloc


def parse_buffer_assignment(text: str) -> BufferAssignment:
    """Parse the text of a ``-buffer-assignment.txt`` report (format in the module
    docstring). Never raises: unknown lines are skipped."""
    out = BufferAssignment()
    current: Allocation | None = None
    printed_total = None
    for line_no, line in enumerate(LineIndex.split(text)):
        if line.startswith("allocation "):
            m = _ALLOCATION.match(line)
            if m:
                current = _parse_header(m, line_no)
                out.allocations.append(current)
                continue
        if "<" in line:
            m = _VALUE.match(line)
            if m and current is not None:
                current.values.append(BufferValue(
                    int(m.group("id")), m.group("name"), m.group("index") or "",
                    bool(m.group("phi")),
                    int(m.group("color")) if m.group("color") is not None else None,
                    int(m.group("size")), int(m.group("offset")), m.group("shape"),
                    line_no, m.start("name"), m.end("name")))
            for r in _VALUE_REF.finditer(line):
                out.refs.append(NameRef(r.group(2), line_no, r.start(2), r.end(2)))
            continue
        if line.startswith("Total bytes used:"):
            t = _TOTAL_USED.match(line)
            if t:
                printed_total = int(t.group(1))
            current = None
        elif line.startswith("Used values:"):
            current = None
    out.total_bytes = printed_total if printed_total is not None else sum(
        a.size for a in out.allocations)
    return out


# ------------------------------------------------------------ memory report ---

@dataclass(frozen=True, slots=True)
class MemoryRow:
    """One row of a memory-usage table: ``n_values`` values share byte ``offset``
    (exact) of the allocation; ``size`` is the largest of them (bytes, parsed
    from a human-readable figure such as ``32.0KiB``, so approximate above 1 KiB).
    ``offset_start``/``offset_end`` locate the offset figure on 0-based ``line``."""

    line: int
    size: int
    offset: int
    n_values: int
    shapes: str
    offset_start: int
    offset_end: int


@dataclass(slots=True)
class MemoryTable:
    """One table (one allocation). ``allocation`` is the allocation index when
    printed (older XLA) or matched (:func:`match_memory_tables`), else None."""

    line: int
    color: int
    rows: list[MemoryRow] = field(default_factory=list)
    allocation: int | None = None


@dataclass(slots=True)
class MemorySpace:
    """``Memory Space: name (color=N)`` and its ``Total bytes``, at 0-based ``line``."""

    name: str
    color: int
    total_bytes: int
    line: int


@dataclass(slots=True)
class MemoryReport:
    """A parsed ``-memory-usage-report.txt``."""

    spaces: list[MemorySpace] = field(default_factory=list)
    tables: list[MemoryTable] = field(default_factory=list)
    total_bytes: int = 0

    def table_at_line(self, line: int) -> MemoryTable | None:
        """The table whose header or rows contain 0-based ``line``."""
        for t in self.tables:
            last = t.rows[-1].line if t.rows else t.line + 1
            if t.line <= line <= last:
                return t
        return None


def parse_memory_report(text: str) -> MemoryReport:
    """Parse the text of a ``-memory-usage-report.txt`` (format in the module
    docstring). Never raises."""
    out = MemoryReport()
    color = 0
    table: MemoryTable | None = None
    pending_alloc: int | None = None
    for line_no, line in enumerate(LineIndex.split(text)):
        if (m := _SPACE.match(line)):
            color = int(m.group(2))
            out.spaces.append(MemorySpace(m.group(1), color, 0, line_no))
            table = None
            continue
        if (m := _TOTAL.match(line)) or (m := _TOTAL_USED.match(line)):
            total = int(m.group(1))
            if out.spaces and out.spaces[-1].total_bytes == 0:
                out.spaces[-1].total_bytes = total
            out.total_bytes += total
            continue
        stripped = line.strip()
        if stripped.startswith("allocation "):
            a = _ALLOCATION.match(stripped)
            pending_alloc = int(a.group(1)) if a else None
            table = None
            continue
        if _TABLE_HEADER.match(line):
            table = MemoryTable(line_no, color, allocation=pending_alloc)
            pending_alloc = None
            out.tables.append(table)
            continue
        if table is not None and (r := _ROW.match(line)):
            try:
                size = parse_bytes(r.group("size"))
            except ValueError:
                size = 0
            table.rows.append(MemoryRow(line_no, size, int(r.group("offset")),
                                        int(r.group("n")), r.group("shapes"),
                                        r.start("offset"), r.end("offset")))
    return out


def _consistent(table: MemoryTable, alloc: Allocation) -> bool:
    if alloc.color != table.color and table.allocation is None:
        return False
    counts: dict[int, int] = {}
    for v in alloc.values:
        counts[v.offset] = counts.get(v.offset, 0) + 1
    return all(counts.get(r.offset) == r.n_values for r in table.rows)


def match_memory_tables(report: MemoryReport, assignment: BufferAssignment) -> None:
    """Fill ``table.allocation`` for the tables of ``report`` that print no
    allocation number: per memory space (color), the tables follow the allocations
    of that color sorted by size (descending, ties by index). A pairing is kept
    only when every row's ``used_by_n_values`` equals the number of values at that
    offset in the allocation; otherwise that table stays unmatched (None)."""
    by_color: dict[int, list[Allocation]] = {}
    for a in assignment.allocations:
        by_color.setdefault(a.color, []).append(a)
    for allocs in by_color.values():
        allocs.sort(key=lambda a: (-a.size, a.index))
    position: dict[int, int] = {}
    for table in report.tables:
        if table.allocation is not None:
            continue
        allocs = by_color.get(table.color, [])
        i = position.get(table.color, 0)
        position[table.color] = i + 1
        if i < len(allocs) and _consistent(table, allocs[i]):
            table.allocation = allocs[i].index


# --------------------------------------------------------------------- cache ---

_cache: dict[tuple[str, str], tuple[tuple[int, int], object]] = {}
_cache_lock = threading.Lock()
_CACHE_MAX = 64


_NOT_CACHED = object()


#: (path, stamp) of the reports refused, each logged once.
_refused_seen: set[tuple[str, tuple[int, int]]] = set()


def _refused(stamp: tuple[int, int], exc: OSError) -> None:
    key = (getattr(exc, "filename", None) or "", stamp)
    if key not in _refused_seen and len(_refused_seen) < 1024:
        _refused_seen.add(key)
        log.warning("report not read: %s", exc)


def _load(path: str, kind: str, parse, cached_only: bool = False):
    try:
        st = os.stat(path)
    except OSError:
        return None
    stamp = (st.st_mtime_ns, st.st_size)
    key = (kind, path)
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None and hit[0] == stamp:
            return hit[1]
    if cached_only:
        return _NOT_CACHED
    try:
        value = parse(read_text(path))
    except OSError as exc:  # UntrustedFileError: a FIFO, a device, too large...
        _refused(stamp, exc)
        return None
    with _cache_lock:
        if len(_cache) >= _CACHE_MAX:
            _cache.pop(next(iter(_cache)))
        _cache[key] = (stamp, value)
    return value


def load_buffer_assignment(path: str) -> BufferAssignment | None:
    """:func:`parse_buffer_assignment` of the file at ``path`` (``path`` set),
    cached by (path, mtime, size), at most :data:`_CACHE_MAX` reports; None when
    it cannot be read. Thread-safe; reads the disk (run it in a thread)."""
    assignment = _load(path, "ba", parse_buffer_assignment)
    if assignment is not None:
        assignment.path = path
    return assignment


def load_buffer_assignment_for(hlo_path: str) -> BufferAssignment | None:
    """The buffer assignment XLA wrote beside the HLO dump ``hlo_path``
    (``X-buffer-assignment.txt`` for ``X.txt``,
    :func:`hlo_lsp.dump.names.report_paths_for_hlo`), loaded and cached as
    :func:`load_buffer_assignment` does; None when there is none (before-
    optimizations files, files that are not dumps, "")."""
    paths = report_paths_for_hlo(hlo_path) if hlo_path else None
    return load_buffer_assignment(paths[0]) if paths else None


def cached_buffer_assignment_for(hlo_path: str) -> tuple[bool, BufferAssignment | None]:
    """What :func:`load_buffer_assignment_for` would return, without reading a
    report that is not cached: ``(True, value)`` when it is known (cached, or
    there is no report), ``(False, None)`` when the report must be read first.
    Costs one ``stat``: cheap enough for the event loop."""
    paths = report_paths_for_hlo(hlo_path) if hlo_path else None
    if not paths:
        return True, None
    value = _load(paths[0], "ba", parse_buffer_assignment, cached_only=True)
    return (False, None) if value is _NOT_CACHED else (True, value)


def load_memory_report(path: str) -> MemoryReport | None:
    """:func:`parse_memory_report` of the file at ``path``, matched against the
    sibling buffer-assignment report when there is one (:func:`match_memory_tables`);
    cached by (path, mtime, size); None when it cannot be read."""
    report = _load(path, "mem", parse_memory_report)
    if report is None:
        return None
    sibling = report_path(path, "buffer-assignment")
    if sibling and any(t.allocation is None for t in report.tables):
        assignment = load_buffer_assignment(sibling)
        if assignment is not None:
            match_memory_tables(report, assignment)
    return report


# ---------------------------------------------------------------- navigation ---

@dataclass(frozen=True, slots=True)
class ReportLink:
    """A link on 0-based ``line``, character columns ``[start, end)`` of a report:
    to the HLO instruction ``instruction`` (resolved by the caller in the HLO dump),
    or, when ``instruction`` is None, to 0-based ``target_line`` of ``target_path``."""

    line: int
    start: int
    end: int
    instruction: str | None = None
    target_path: str = ""
    target_line: int = 0
    tooltip: str = ""


_parsed_cache: dict[tuple[str, str], tuple[int, object]] = {}


def _parsed_text(kind: str, path: str, text: str):
    key = (kind, path)
    stamp = hash(text)
    hit = _parsed_cache.get(key)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    value = parse_buffer_assignment(text) if kind == "ba" else parse_memory_report(text)
    if kind == "mem":
        sibling = report_path(path, "buffer-assignment")
        assignment = load_buffer_assignment(sibling) if sibling else None
        if assignment is not None:
            match_memory_tables(value, assignment)
    with _cache_lock:
        if len(_parsed_cache) >= _CACHE_MAX:
            _parsed_cache.pop(next(iter(_parsed_cache)))
        _parsed_cache[key] = (stamp, value)
    return value


def _memory_context(path: str, text: str):
    report = _parsed_text("mem", path, text)
    sibling = report_path(path, "buffer-assignment")
    assignment = load_buffer_assignment(sibling) if sibling else None
    return report, assignment, sibling or ""


def _names(values: list[BufferValue], limit: int = 10) -> str:
    names = list(dict.fromkeys(v.instruction for v in values))
    shown = ", ".join(names[:limit])
    return shown + (f", ... {len(names) - limit} more" if len(names) > limit else "")


def report_links(path: str, text: str) -> list[ReportLink]:
    """Links in the report ``text`` found at ``path`` (the name tells the kind).

    Buffer-assignment report: every ``<id name`` instruction name (target:
    ``instruction``). Memory-usage report: each row's offset figure links to the
    first `` value:`` line at that offset of the matched allocation in the sibling
    buffer-assignment report, each table header to the allocation header; the
    tooltip names the instructions. [] for other files."""
    kind = report_kind(path)
    if kind == "buffer-assignment":
        ba = _parsed_text("ba", path, text)
        hlo = os.path.basename(hlo_path_for_report(path) or "")
        return [ReportLink(r.line, r.start, r.end, r.name, tooltip=f"%{r.name} in {hlo}")
                for r in ba.refs]
    if kind != "memory-usage":
        return []
    report, assignment, ba_path = _memory_context(path, text)
    if assignment is None:
        return []
    out: list[ReportLink] = []
    lines = LineIndex.split(text)
    for table in report.tables:
        alloc = assignment.allocation(table.allocation) if table.allocation is not None \
            else None
        if alloc is None:
            continue
        header = lines[table.line] if table.line < len(lines) else ""
        col = header.find("cumulative_size")
        if col >= 0:
            out.append(ReportLink(table.line, col, col + len("cumulative_size"), None, ba_path,
                                  alloc.line, f"allocation {alloc.index}: "
                                  f"{format_bytes(alloc.size)}, {len(alloc.values)} values"))
        for row in table.rows:
            at = [v for v in alloc.values if v.offset == row.offset]
            if not at:
                continue
            out.append(ReportLink(row.line, row.offset_start, row.offset_end, None, ba_path,
                                  at[0].line, f"allocation {alloc.index}, offset "
                                  f"{row.offset}: {_names(at)}"))
    return out


def report_names_at(path: str, text: str, line: int, column: int) -> list[str]:
    """The HLO instruction names a definition request at 0-based ``line`` and
    character ``column`` of a report refers to: the name under the cursor; all
    instructions of an allocation on its header line (buffer-assignment) or on a
    table header (memory-usage report); those sharing the row's offset on a
    memory-usage row. [] elsewhere."""
    kind = report_kind(path)
    if kind == "buffer-assignment":
        ba = _parsed_text("ba", path, text)
        on_line = [r for r in ba.refs if r.line == line]
        for r in on_line:
            if r.start <= column <= r.end:
                return [r.name]
        alloc = ba.allocation_at_line(line)
        if alloc is None:
            return []
        if alloc.line == line:
            return list(dict.fromkeys(v.instruction for v in alloc.values))
        return [v.instruction for v in alloc.values if v.line == line][:1]
    if kind != "memory-usage":
        return []
    report, assignment, _ = _memory_context(path, text)
    table = report.table_at_line(line)
    if table is None or table.allocation is None or assignment is None:
        return []
    alloc = assignment.allocation(table.allocation)
    if alloc is None:
        return []
    if line <= table.line + 1:
        return list(dict.fromkeys(v.instruction for v in alloc.values))
    for row in table.rows:
        if row.line == line:
            return list(dict.fromkeys(v.instruction for v in alloc.values
                                      if v.offset == row.offset))
    return []



# -------------------------------------------------------------- live ranges ---

LIVE_RANGE_SUFFIX = "-live-range.txt"
_LR_HEAD = re.compile(r"^HloLiveRange \(max (\d+)\):")
_LR_STEP = re.compile(r"^\s+(\d+):(\S+)\s*$")
_LR_BUFFER = re.compile(r"^\s+(?P<name>[^\s{]+)(?P<index>\{[^}]*\}):(?P<start>-?\d+)-(?P<end>-?\d+)\s*$")
_LR_PEAK = re.compile(r"^\s+Live ranges at (\d+) \(peak\):")
_LR_PEAK_ROW = re.compile(r"^\s+(?P<name>[^\s{]+)(?P<index>\{[^}]*\}): (?P<size>\d+) bytes "
                         r"\(cumulative: (?P<cum>\d+) bytes\)")
_LR_STACK = re.compile(r"^\s+Stack trace breakdown for peak usage: ([\d ]+) bytes")


@dataclass(frozen=True, slots=True)
class LiveBuffer:
    """One ``BufferLiveRange`` line: the HloValue defined by ``instruction`` at
    ``shape_index`` (``{}`` for the whole value, ``{0}``...) is live from
    ``start`` to ``end``, both included (logical times: positions in the
    flattened instruction sequence; ``end`` = the schedule's end for a value
    that lives out)."""

    instruction: str
    shape_index: str
    start: int
    end: int

    @property
    def key(self) -> str:
        """``name{index}`` as the report prints it."""
        return self.instruction + self.shape_index


@dataclass(frozen=True, slots=True)
class PeakBuffer:
    """One row of ``Live ranges at N (peak)``: ``size`` bytes and the running
    total ``cumulative`` (the report sorts by size, largest first)."""

    instruction: str
    shape_index: str
    size: int
    cumulative: int


@dataclass(slots=True)
class LiveRangeReport:
    """A parsed ``-live-range.txt`` (``HloLiveRange::ToString``,
    xla/hlo/utils/hlo_live_range.cc): the flattened instruction ``sequence``
    (step -> instruction name), ``end`` (``max N``, the schedule's end time),
    every value's live range, the peak moment XLA computed (``peak_step``) and
    the values live then with their sizes (bytes). ``peak_bytes`` is the
    report's own figure (``Stack trace breakdown for peak usage``, else the
    last cumulative), None when absent."""

    end: int = 0
    sequence: list[str] = field(default_factory=list)
    buffers: list[LiveBuffer] = field(default_factory=list)
    peak_step: int | None = None
    peak_buffers: list[PeakBuffer] = field(default_factory=list)
    peak_bytes: int | None = None
    path: str = ""


def parse_live_range(text: str) -> LiveRangeReport:
    """Parse the text of a ``-live-range.txt`` report (see
    :class:`LiveRangeReport`). Never raises; unknown lines are skipped."""
    out = LiveRangeReport()
    section = ""
    for line in LineIndex.split(text):
        if (m := _LR_HEAD.match(line)):
            out.end = int(m.group(1))
            continue
        stripped = line.strip()
        if stripped == "InstructionSequence:":
            section = "sequence"
            continue
        if stripped == "BufferLiveRange:":
            section = "buffers"
            continue
        if (m := _LR_PEAK.match(line)):
            out.peak_step = int(m.group(1))
            section = "peak"
            continue
        if (m := _LR_STACK.match(line)):
            out.peak_bytes = int(m.group(1).replace(" ", ""))
            section = ""
            continue
        if section == "sequence" and (m := _LR_STEP.match(line)):
            out.sequence.append(m.group(2))
        elif section == "buffers" and (m := _LR_BUFFER.match(line)):
            out.buffers.append(LiveBuffer(m.group("name"), m.group("index"),
                                          int(m.group("start")), int(m.group("end"))))
        elif section == "peak" and (m := _LR_PEAK_ROW.match(line)):
            out.peak_buffers.append(PeakBuffer(m.group("name"), m.group("index"),
                                               int(m.group("size")), int(m.group("cum"))))
    if out.peak_bytes is None and out.peak_buffers:
        out.peak_bytes = out.peak_buffers[-1].cumulative
    return out


def live_range_path_for(hlo_path: str) -> str | None:
    """``X-live-range.txt`` for the HLO dump ``X.txt`` (the file may not exist);
    None when the name does not end in .txt."""
    return hlo_path[:-4] + LIVE_RANGE_SUFFIX if hlo_path.endswith(".txt") else None


def load_live_range_for(hlo_path: str) -> LiveRangeReport | None:
    """The live-range report XLA wrote beside ``hlo_path``, parsed and cached
    like the other reports; None when there is none."""
    path = live_range_path_for(hlo_path) if hlo_path else None
    report = _load(path, "lr", parse_live_range) if path else None
    if report is not None:
        report.path = path
    return report


__all__ = [
    "Allocation", "BufferAssignment", "BufferValue", "LiveBuffer", "LiveRangeReport",
    "PeakBuffer", "live_range_path_for", "load_live_range_for", "parse_live_range", "MemoryReport", "MemoryRow",
    "MemorySpace", "MemoryTable", "NameRef", "ReportLink", "load_buffer_assignment",
    "load_buffer_assignment_for", "load_memory_report",
    "match_memory_tables", "parse_buffer_assignment", "parse_bytes", "parse_memory_report",
    "report_links", "report_names_at",
]
