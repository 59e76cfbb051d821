"""One HLO file of the workspace in a few symbols: :func:`summarize_file` turns
a file into a small picklable :class:`FileSummary` (module name, stage and
platform from the dump name, :func:`hlo_lsp.dump.names.parse_dump_name`; the
computations, fusions with their HLO and backend kinds, custom-calls with their
targets, other instructions; lines and columns 0-based, columns in
characters). Files larger than ``size_limit`` are summarised by a regular
expression pass over their lines instead of a full parse
(``FileSummary.partial``). Runs in the index's worker processes
(:class:`hlo_lsp.dump.index.WorkspaceIndex`); never raises on a file.
"""

from __future__ import annotations

import io
import logging
import os
import re
import time
from dataclasses import dataclass
from typing import Iterable, NamedTuple, Sequence

from hlo_lsp.dump.names import module_id, parse_dump_name
from hlo_lsp.dump.untrusted import UntrustedFileError, open_regular, read_text
from hlo_lsp.model.hlo import unquote
from hlo_lsp.model.kernels import inferred_backend_kind
from hlo_lsp.syntax.lines import LineIndex

log = logging.getLogger("hlo_lsp.dump.index")

#: Files larger than this (bytes) are summarised by regular expressions.
DEFAULT_SIZE_LIMIT = 64 * 1024 * 1024


class ComputationSymbol(NamedTuple):
    """A computation header: ``name`` (no ``%``) at 0-based ``line``, name columns
    ``[column, end_column)`` (the range covers the ``%``)."""

    name: str
    line: int
    column: int
    end_column: int
    is_entry: bool = False


class FusionSymbol(NamedTuple):
    """A ``fusion`` instruction: HLO ``kind`` (kLoop, kInput, kOutput, kCustom) and
    ``backend_kind`` from ``backend_config`` (GPU ``fusion_backend_config.kind``,
    CPU ``fusion_config.kind``, e.g. ``__triton_gemm``, ``__ynn_fusion``; "" if none)."""

    name: str
    kind: str
    backend_kind: str
    line: int
    column: int
    end_column: int


class CustomCallSymbol(NamedTuple):
    """A ``custom-call`` instruction and its ``custom_call_target``."""

    name: str
    target: str
    line: int
    column: int
    end_column: int


class InstructionSymbol(NamedTuple):
    """Any other instruction (collectives, loops, ``dot``...): ``opcode`` as
    written; name columns as for :class:`FusionSymbol`."""

    name: str
    opcode: str
    line: int
    column: int
    end_column: int


#: At most this many :class:`InstructionSymbol` per file (collectives and
#: control flow first); the rest of a very large module is not listed.
MAX_INSTRUCTION_SYMBOLS = 20_000


def _capped(symbols: list[InstructionSymbol]) -> tuple[InstructionSymbol, ...]:
    if len(symbols) <= MAX_INSTRUCTION_SYMBOLS:
        return tuple(symbols)
    from hlo_lsp.model.opcodes import COLLECTIVES, CONTROL_FLOW
    first = [i for i in symbols if i.opcode in COLLECTIVES or i.opcode in CONTROL_FLOW]
    rest = [i for i in symbols if not (i.opcode in COLLECTIVES or i.opcode in CONTROL_FLOW)]
    return tuple(sorted((first + rest)[:MAX_INSTRUCTION_SYMBOLS], key=lambda i: i.line))


@dataclass(frozen=True, slots=True)
class FileSummary:
    """What the index keeps about one HLO file.

    ``mtime_ns``/``size`` identify the version summarised. ``module`` is the
    ``HloModule`` name (else the dump name's module name, else ""); ``number`` the
    dump's module number (None when the name is not a dump name); ``stage``
    "before_optimizations", "after_optimizations", "pass:<NNNN.pass>" or "";
    ``platform`` e.g. "cpu", "sm_9.0_gpu". ``partial`` is True when the file was
    above the size limit and summarised by regular expressions; ``error`` is set
    when the file could not be read, and ``skipped`` when it was not read at all
    (:mod:`hlo_lsp.dump.untrusted`: not a regular file, ``error`` says which).
    """

    path: str
    mtime_ns: int
    size: int
    module: str = ""
    number: int | None = None
    stage: str = ""
    platform: str = ""
    timestamp: str = ""
    computations: tuple[ComputationSymbol, ...] = ()
    fusions: tuple[FusionSymbol, ...] = ()
    custom_calls: tuple[CustomCallSymbol, ...] = ()
    instructions: tuple[InstructionSymbol, ...] = ()
    instruction_count: int = 0
    partial: bool = False
    seconds: float = 0.0
    error: str = ""
    skipped: bool = False

    @property
    def key(self) -> tuple[str, int, int]:
        """``(path, mtime_ns, size)``: the cache key."""
        return (self.path, self.mtime_ns, self.size)

    @property
    def container(self) -> str:
        """``jit_train_step · after_optimizations · cpu · module_0028``: the
        container name shown next to workspace symbols."""
        parts = [self.module or os.path.basename(self.path)]
        if self.stage:
            parts.append(self.stage)
        if self.platform:
            parts.append(self.platform)
        if self.number is not None:
            parts.append(module_id(self.number))
        return " · ".join(parts)


def stat_key(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def name_fields(path: str) -> dict:
    dn = parse_dump_name(os.path.basename(path))
    if dn is None:
        return {}
    stage = dn.stage
    return {"module": dn.module_name, "number": dn.number, "stage": stage,
            "platform": dn.platform, "timestamp": dn.timestamp}


def summarize_text(path: str, text: str, mtime_ns: int = 0, size: int | None = None,
                   full: bool = True) -> FileSummary:
    """Summarise HLO ``text`` (the contents of ``path``): with ``full`` by
    :func:`hlo_lsp.syntax.parser.parse`, else by :func:`_regex_symbols`. Never raises."""
    t0 = time.perf_counter()
    fields = name_fields(path)
    size = len(text.encode("utf-8", "surrogatepass")) if size is None else size
    try:
        if full:
            header, comps, fusions, calls, others, count = _parsed_symbols(text)
        else:
            header, comps, fusions, calls, others, count = _regex_symbols(
                LineIndex.split(text))
    except Exception as exc:  # noqa: BLE001 - one bad file never stops the index
        log.exception("summarizing %s failed", path)
        return FileSummary(path, mtime_ns, size, error=repr(exc), **fields)
    if header:
        fields["module"] = header
    return FileSummary(path, mtime_ns, size, computations=tuple(comps),
                       fusions=tuple(fusions), custom_calls=tuple(calls),
                       instructions=_capped(others),
                       instruction_count=count, partial=not full,
                       seconds=time.perf_counter() - t0, **fields)


def summarize_file(path: str, size_limit: int = DEFAULT_SIZE_LIMIT) -> FileSummary:
    """Summarise the file at ``path`` (runs in an index worker process). Files up
    to ``size_limit`` bytes are parsed fully; larger ones are read line by line and
    summarised by regular expressions over computation headers and fusion /
    custom-call instruction lines (no operands, no nested attribute decoding:
    ``partial`` is set). Never raises: an unreadable file gives a summary with
    ``error`` set."""
    stamp = stat_key(path)
    if stamp is None:
        return FileSummary(path, 0, 0, error="cannot stat", **name_fields(path))
    mtime_ns, size = stamp
    try:
        if size > size_limit:
            t0 = time.perf_counter()
            with open_regular(path) as raw, \
                    io.TextIOWrapper(raw, encoding="utf-8", errors="replace") as f:
                header, comps, fusions, calls, others, count = _regex_symbols(f)
            fields = name_fields(path)
            if header:
                fields["module"] = header
            return FileSummary(path, mtime_ns, size, computations=tuple(comps),
                               fusions=tuple(fusions), custom_calls=tuple(calls),
                               instructions=_capped(others),
                               instruction_count=count, partial=True,
                               seconds=time.perf_counter() - t0, **fields)
        # st_size is no bound (0 for /dev/zero; a file can grow): read at most
        # the limit, and what is longer is read again line by line
        text = read_text(path, size_limit)
    except UntrustedFileError as exc:
        if exc.too_large and size <= size_limit:
            return summarize_file(path, -1)  # it grew: as a file above the limit
        return FileSummary(path, mtime_ns, size, error=exc.reason, skipped=True,
                           **name_fields(path))
    except OSError as exc:
        return FileSummary(path, mtime_ns, size, error=str(exc), **name_fields(path))
    return summarize_text(path, text, mtime_ns, size, full=True)


def summarize_many(paths: Sequence[str], size_limit: int = DEFAULT_SIZE_LIMIT
                   ) -> list[FileSummary]:
    """:func:`summarize_file` of each path (one worker task)."""
    return [summarize_file(p, size_limit) for p in paths]


def _parsed_symbols(text: str):
    from hlo_lsp.model.kernels import custom_call_target, fusion_backend_kind, hlo_fusion_kind
    from hlo_lsp.syntax.parser import parse

    module = parse(text)
    lines = LineIndex(text)

    def pos(start: int, end: int) -> tuple[int, int, int]:
        line, col = lines.line_col(start)
        return line, col, col + (end - start)

    comps, fusions, calls, others = [], [], [], []
    count = 0
    for comp in module.computations:
        line, col, end = pos(comp.name.start, comp.name.end)
        comps.append(ComputationSymbol(comp.name.name, line, col, end, comp.is_entry))
        count += len(comp.instructions)
        for ins in comp.instructions:
            if ins.opcode not in ("fusion", "custom-call"):
                line, col, end = pos(ins.name.start, ins.name.end)
                others.append(InstructionSymbol(ins.name.name, ins.opcode, line, col, end))
            elif ins.opcode == "fusion":
                line, col, end = pos(ins.name.start, ins.name.end)
                fusions.append(FusionSymbol(ins.name.name, hlo_fusion_kind(ins),
                                            fusion_backend_kind(ins)[0], line, col, end))
            elif ins.opcode == "custom-call":
                line, col, end = pos(ins.name.start, ins.name.end)
                calls.append(CustomCallSymbol(ins.name.name, custom_call_target(ins) or "",
                                              line, col, end))
    header = module.name.name if module.name is not None else ""
    return header, comps, fusions, calls, others, count


_HEADER = re.compile(r"^HloModule\s+%?([A-Za-z0-9_][\w.\-]*)")  # the grammar's NAME
_COMP_HEAD = re.compile(r"^(ENTRY\s+)?(%?[A-Za-z_][\w.\-]*)\s*[(\s{]")
_INSTR = re.compile(r"^\s+(?:ROOT\s+)?(%?[A-Za-z_][\w.\-]*)\s*=(?:\s|$)")
_FUSION_CALL = re.compile(r"\sfusion\(")
_CUSTOM_CALL = re.compile(r"\scustom-call[ \t]*\(")  # XLA allows blanks before "("
_KIND = re.compile(r"\bkind=(k[A-Za-z]+)")
_BACKEND_KIND = re.compile(r'"(?:fusion_backend_config|fusion_config)"\s*:\s*\{[^{}]*?'
                           r'"kind"\s*:\s*"([^"]+)"')
_TARGET = re.compile(r'custom_call_target=("(?:[^"\\]|\\.)*")')
_OPCODE = re.compile(r"\s([a-z][a-z0-9\-]*)\(")  # after the shape: " opcode("


class _Pending(NamedTuple):
    """An instruction being read: name, 0-based line, name columns, its text
    (continuation lines appended)."""

    name: str
    line: int
    column: int
    end_column: int
    text: list[str]


def _regex_symbols(lines: Iterable[str]):
    """Symbols from the lines of an HLO file without parsing it (above the size
    limit), for XLA's layout: the ``HloModule`` header line, computation headers
    (``[ENTRY] %name (...) -> ... {``, at column 0 or indented, possibly over
    several lines up to the ``{``) and instruction lines (``[ROOT] %name = ...``,
    indented), an instruction's text running on to the indented lines that
    follow it. ``//`` comment lines are skipped. The fusion kinds and the
    custom-call target are read with the model's rules
    (:func:`hlo_lsp.model.kernels.inferred_backend_kind`,
    :func:`hlo_lsp.model.hlo.unquote`); the attributes themselves are found by
    regular expressions, not decoded."""
    header = ""
    comps, fusions, calls, others = [], [], [], []
    count = 0
    pending: _Pending | None = None
    head: tuple | None = None  # a computation header waiting for its "{"

    def flush() -> None:
        if pending is None:
            return
        text = "\n".join(pending.text)  # from just after "name = "
        if _FUSION_CALL.search(text):
            kind = _KIND.search(text)
            backend = _BACKEND_KIND.search(text)
            kind_text = kind.group(1) if kind else ""
            backend_kind = backend.group(1) if backend else \
                inferred_backend_kind(kind_text, pending.name)
            fusions.append(FusionSymbol(pending.name, kind_text, backend_kind, pending.line,
                                        pending.column, pending.end_column))
        elif _CUSTOM_CALL.search(text):
            target = _TARGET.search(text)
            calls.append(CustomCallSymbol(pending.name, unquote(target.group(1)) if target
                                          else "", pending.line, pending.column,
                                          pending.end_column))
        elif (op := _OPCODE.search(text)) is not None:
            others.append(InstructionSymbol(pending.name, op.group(1), pending.line,
                                            pending.column, pending.end_column))

    for line_no, line in enumerate(lines):
        line = line.rstrip("\r\n")
        stripped = line.strip()
        if not stripped or stripped.startswith("//"):
            continue
        indented = line[0] in " \t"
        m = _INSTR.match(line) if indented else None
        if m is not None:
            flush()
            head = None
            count += 1
            name = m.group(1)
            pending = _Pending(name.lstrip("%"), line_no, m.start(1), m.end(1),
                               [line[m.end():]])
            continue
        if not indented and not header and (h := _HEADER.match(line)):
            flush()
            pending = head = None
            header = h.group(1)
            continue
        if stripped.startswith("}"):
            flush()
            pending = head = None
            continue
        indent = len(line) - len(line.lstrip())
        hm = _COMP_HEAD.match(line[indent:]) if not indented or pending is None else None
        if hm is not None:
            flush()
            pending = None
            name = hm.group(2)
            head = (name.lstrip("%"), line_no, indent + hm.start(2), indent + hm.end(2),
                    bool(hm.group(1)))
        elif pending is not None:
            pending.text.append(line)
        if head is not None and line.rstrip().endswith("{"):
            comps.append(ComputationSymbol(*head))
            head = None
    flush()
    return header, comps, fusions, calls, others, count
