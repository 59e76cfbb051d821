"""The dump directory as a workspace: an index of every HLO file under some
folders, and navigation between the stages of one module.

No LSP types here (the wiring is :mod:`hlo_lsp.lsp.handlers.workspace`).

Index
    :func:`discover` walks folders for HLO files (:func:`hlo_lsp.dump.names.is_hlo_path`:
    ``*.hlo``, XLA dump names, ``.txt`` files whose first line starts with
    ``HloModule``; the non-HLO reports are skipped). :func:`summarize_file` turns one
    file into a small picklable :class:`FileSummary`: module name, stage and platform
    from the dump name (:func:`hlo_lsp.dump.names.parse_dump_name`), and the symbols
    (computations, fusions with their HLO and backend kinds, custom-calls with their
    targets), lines and columns 0-based (columns in characters). Files larger than
    ``size_limit`` are summarised by a regular expression pass over their lines
    instead of a full parse (``FileSummary.partial``). :class:`WorkspaceIndex` runs
    both in a ``ProcessPoolExecutor`` (spawned workers, 1-2 of them), so indexing
    never holds the language server's GIL, caches summaries by (path, mtime, size)
    and takes incremental ``update``/``remove`` calls for watched-file events.

Counterparts
    XLA dumps each module before and after optimization
    (``module_0028.jit_train_step.before_optimizations.txt`` and
    ``module_0028.jit_train_step.cpu_after_optimizations.txt``). The two files of
    one function can carry different module numbers, so :func:`counterpart_files`
    matches by module name (the ``HloModule`` header, else the dump name).
    :func:`find_counterparts` maps an instruction of one file to the other: by
    instruction name first (XLA keeps names through its passes), else by
    ``metadata`` ``op_name`` plus the source location (innermost resolved
    ``stack_frame_id`` frame, or ``source_file``/``source_line``), since stack frame
    ids are numbered per file.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import concurrent.futures.process
import io
import logging
import multiprocessing
import os
import re
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterable, NamedTuple, Sequence

from hlo_lsp.dump.names import counterpart_stage, is_hlo_path, module_id, parse_dump_name
from hlo_lsp.dump.untrusted import UntrustedFileError, open_regular, read_text
from hlo_lsp.model.frames import SourceKey, source_key
from hlo_lsp.model.hlo import HloModule, Instruction, unquote
from hlo_lsp.model.kernels import inferred_backend_kind
from hlo_lsp.model.opcodes import family
from hlo_lsp.syntax.lines import LineIndex

log = logging.getLogger("hlo_lsp.dump.index")

DEFAULT_SIZE_LIMIT = 64 * 1024 * 1024
DEFAULT_MAX_FILES = 20_000
#: Directory entries (files of any kind) looked at before discovery stops: a
#: workspace that is a huge repository is not walked to its end.
DEFAULT_MAX_SCANNED = 200_000
#: Directory names never descended into.
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv",
                       ".tox", ".mypy_cache", ".pytest_cache", ".ruff_cache",
                       "site-packages", ".cache"})
#: Files per worker task: small enough for smooth progress, large enough to
#: amortise the inter-process round trip.
CHUNK = 8
MAX_COUNTERPARTS = 50


# ------------------------------------------------------------------ summary ---

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


def _stat_key(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _name_fields(path: str) -> dict:
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
    fields = _name_fields(path)
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
    stamp = _stat_key(path)
    if stamp is None:
        return FileSummary(path, 0, 0, error="cannot stat", **_name_fields(path))
    mtime_ns, size = stamp
    try:
        if size > size_limit:
            t0 = time.perf_counter()
            with open_regular(path) as raw, \
                    io.TextIOWrapper(raw, encoding="utf-8", errors="replace") as f:
                header, comps, fusions, calls, others, count = _regex_symbols(f)
            fields = _name_fields(path)
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
                           **_name_fields(path))
    except OSError as exc:
        return FileSummary(path, mtime_ns, size, error=str(exc), **_name_fields(path))
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


# ---------------------------------------------------------------- discovery ---

def is_dump_directory(filenames: Iterable[str]) -> bool:
    """Whether a directory holding ``filenames`` (base names) is an XLA dump
    directory: one of them is an HLO dump file by its name alone
    (:func:`hlo_lsp.dump.names.parse_dump_name`, xla/service/dump.cc naming).
    Reads nothing."""
    return any(parse_dump_name(n) is not None for n in filenames)


def discover(folders: Sequence[str], max_files: int = DEFAULT_MAX_FILES,
             exclude: Sequence[str] = (), dump_dirs_only: bool = True,
             max_scanned: int = DEFAULT_MAX_SCANNED) -> list[str]:
    """Absolute paths of the HLO files under ``folders`` (recursively; hidden
    directories, :data:`SKIP_DIRS` and the directory names in ``exclude`` are not
    entered), sorted, at most ``max_files``. With ``dump_dirs_only`` only the
    files of dump directories (:func:`is_dump_directory`) count, so a dump inside
    a large repository does not index the repository's other text files (and
    their first lines are never read). Stops after looking at ``max_scanned``
    directory entries. A folder given as a file is taken as it is."""
    skip = SKIP_DIRS | set(exclude)
    out: list[str] = []
    seen: set[str] = set()
    scanned = 0
    for folder in folders:
        folder = os.path.abspath(folder)
        if os.path.isfile(folder):
            if is_hlo_path(folder) and folder not in seen:
                seen.add(folder)
                out.append(folder)
            continue
        for root, dirs, files in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d not in skip and not d.startswith("."))
            scanned += len(files)
            if scanned > max_scanned:
                log.info("workspace discovery stopped after %d files (maxScannedFiles)",
                         max_scanned)
                return out
            if dump_dirs_only and not is_dump_directory(files):
                continue
            for name in sorted(files):
                path = os.path.join(root, name)
                if path in seen or not is_hlo_path(path):
                    continue
                seen.add(path)
                out.append(path)
                if len(out) >= max_files:
                    return out
    return out


def special_reports(directories: Iterable[str], limit: int = 1000) -> list[tuple[str, str]]:
    """``(path, reason)`` of the files of ``directories`` named like XLA's reports
    and other non-HLO dump files (:func:`hlo_lsp.dump.names.is_non_hlo_dump_file`)
    that are not regular files once links are resolved (a FIFO, a link to
    ``/dev/zero``): files the readers refuse (:mod:`hlo_lsp.dump.untrusted`),
    listed so that the user hears of them. At most ``limit``; reads nothing,
    one ``stat`` per such name."""
    from hlo_lsp.dump.names import is_non_hlo_dump_file
    from hlo_lsp.dump.untrusted import special_file_problem

    out: list[tuple[str, str]] = []
    for directory in sorted(set(directories)):
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        for name in names:
            if not is_non_hlo_dump_file(name):
                continue
            path = os.path.join(directory, name)
            problem = special_file_problem(path)
            if problem:
                out.append((path, problem))
                if len(out) >= limit:
                    return out
    return out


# -------------------------------------------------------------------- index ---

class SymbolHit(NamedTuple):
    """One workspace-symbol result: ``kind`` is "module", "computation", "entry",
    "fusion", "custom-call", "collective", "control flow" (while, conditional,
    call...) or "instruction" (any other opcode); ``label`` the name shown (with the fusion kinds or
    custom-call target in brackets); position 0-based, columns in characters."""

    kind: str
    label: str
    name: str
    summary: FileSummary
    line: int
    column: int
    end_column: int
    score: int


def _entries(s: FileSummary) -> list[tuple[str, str, str, str, int, int, int]]:
    """(haystack, kind, label, name, line, column, end_column) for each symbol."""
    out = []
    module = s.module or os.path.basename(s.path)
    hay = " ".join(x for x in (module, s.stage, s.platform, os.path.basename(s.path)) if x)
    out.append((hay.lower(), "module", module, module, 0, 0, 0))
    for c in s.computations:
        kind = "entry" if c.is_entry else "computation"
        label = f"{c.name} [ENTRY]" if c.is_entry else c.name
        out.append((f"{c.name} {'entry' if c.is_entry else ''}".lower(), kind, label, c.name,
                    c.line, c.column, c.end_column))
    for f in s.fusions:
        kinds = " ".join(k for k in (f.kind, f.backend_kind) if k)
        label = f"{f.name} [{kinds}]" if kinds else f.name
        out.append((f"{f.name} fusion {kinds}".lower(), "fusion", label, f.name, f.line,
                    f.column, f.end_column))
    for c in s.custom_calls:
        label = f"{c.name} [{c.target}]" if c.target else c.name
        out.append((f"{c.name} custom-call {c.target}".lower(), "custom-call", label, c.name,
                    c.line, c.column, c.end_column))
    for i in s.instructions:
        fam = family(i.opcode) or ""
        kind = {"collective": "collective", "control flow": "control flow"}.get(fam,
                                                                                "instruction")
        out.append((f"{i.name} {i.opcode} {fam}".lower(), kind, f"{i.name} [{i.opcode}]",
                    i.name, i.line, i.column, i.end_column))
    return out


def _score(tokens: list[str], hay: str, name: str) -> int | None:
    """None when a token is missing from ``hay``; else lower is better: the
    name is the query, starts with a token, contains a token, or only the other
    fields (kinds, target) match."""
    for t in tokens:
        if t not in hay:
            return None
    if not tokens:
        return 3
    lname = name.lower()
    if lname == " ".join(tokens):
        return 0
    if any(lname.startswith(t) for t in tokens):
        return 1
    if any(t in lname for t in tokens):
        return 2
    return 3


class _WorkerContext:
    """A ``spawn`` multiprocessing context that remembers the processes it starts.

    ``ProcessPoolExecutor`` launches its workers with ``mp_context.Process``
    (its documented use of ``mp_context``), so :func:`stop_workers` can end
    exactly the workers of one pool without the executor's private attributes.
    Everything else is the ``spawn`` context's (a fork of a threaded server
    could inherit held locks)."""

    def __init__(self) -> None:
        self._context = multiprocessing.get_context("spawn")
        self.processes: list = []

    def __getattr__(self, name: str):
        return getattr(self._context, name)

    def Process(self, *args, **kwargs):  # noqa: N802 - the context API's name
        """A spawn-context ``Process(*args, **kwargs)``, remembered in ``processes``."""
        process = self._context.Process(*args, **kwargs)
        self.processes.append(process)
        return process


#: How long :func:`stop_workers` waits for workers to end before killing them (s).
STOP_WORKERS_S = 2.0


def stop_workers(executor: concurrent.futures.ProcessPoolExecutor,
                 context: _WorkerContext) -> None:
    """Cancel ``executor``'s pending work and terminate its worker processes
    (those ``context`` started), waiting a few milliseconds for them to end
    (at most :data:`STOP_WORKERS_S`, then SIGKILL). Uses the executor's own
    ``terminate_workers`` where Python has it (3.14). Never raises."""
    terminate = getattr(executor, "terminate_workers", None)
    if terminate is not None:
        try:
            terminate()
            return
        except Exception:  # noqa: BLE001 - fall back to our own list
            log.debug("terminate_workers failed", exc_info=True)
    executor.shutdown(wait=False, cancel_futures=True)
    # A worker being launched by a submit that raced with the shutdown starts
    # after a first pass: look again until every started worker has ended
    # (a few milliseconds), at most STOP_WORKERS_S, then kill what is left.
    deadline = time.monotonic() + STOP_WORKERS_S
    while True:
        alive = []
        for process in list(context.processes):
            try:
                if process.is_alive():
                    process.terminate()
                    process.join(0.05)
                    if process.is_alive():
                        alive.append(process)
            except Exception:  # noqa: BLE001 - a process not started or already reaped
                pass
        if not alive or time.monotonic() > deadline:
            break
    for process in alive:
        try:
            process.kill()
        except Exception:  # noqa: BLE001
            pass


class WorkspaceIndex:
    """Summaries of the HLO files of some folders, built in worker processes.

    ``workers``: processes of the pool (1-2; spawned lazily on first use).
    ``size_limit``: bytes above which a file is summarised without a full parse.
    Thread-safe for reads; mutate from one thread (the event loop).
    """

    def __init__(self, workers: int = 1, size_limit: int = DEFAULT_SIZE_LIMIT,
                 max_files: int = DEFAULT_MAX_FILES, exclude: Sequence[str] = (),
                 dump_dirs_only: bool = True, max_scanned: int = DEFAULT_MAX_SCANNED) -> None:
        self.workers = max(1, min(int(workers), 4))
        self.size_limit = size_limit
        self.max_files = max_files
        self.exclude = tuple(exclude)
        self.dump_dirs_only = dump_dirs_only
        self.max_scanned = max_scanned
        self._summaries: dict[str, FileSummary] = {}
        self._entries: dict[str, list] = {}
        self._executor: concurrent.futures.ProcessPoolExecutor | None = None
        self._context: _WorkerContext | None = None
        # Reentrant: a signal handler that closes the index runs in the thread
        # (the event loop's) that may hold it at that moment.
        self._lock = threading.RLock()
        self.generation = 0
        #: (done, total) of the indexing pass in progress, else None.
        self.progress: tuple[int, int] | None = None
        self.last_index_seconds = 0.0

    # -- pool ---------------------------------------------------------------
    def executor(self) -> concurrent.futures.ProcessPoolExecutor:
        """The worker pool (``spawn`` start method: a fork of a threaded server
        could inherit held locks), started on first use."""
        with self._lock:
            if self._executor is None:
                self._context = _WorkerContext()
                self._executor = concurrent.futures.ProcessPoolExecutor(
                    max_workers=self.workers, mp_context=self._context)
            return self._executor

    def _discard_executor(self) -> None:
        """Forget a broken pool (its workers are gone); the next use starts another."""
        with self._lock:
            ex, self._executor = self._executor, None
            self._context = None
        if ex is not None:
            ex.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        """Cancel pending work and stop the worker processes (only those this
        index started)."""
        with self._lock:
            ex, self._executor = self._executor, None
            context, self._context = self._context, None
        if ex is not None and context is not None:
            stop_workers(ex, context)

    # -- contents -----------------------------------------------------------
    def get(self, path: str) -> FileSummary | None:
        """The summary of ``path`` (absolute), if indexed."""
        return self._summaries.get(os.path.abspath(path))

    def summaries(self) -> list[FileSummary]:
        """All summaries, sorted by path."""
        return sorted(self._summaries.values(), key=lambda s: s.path)

    def __len__(self) -> int:
        return len(self._summaries)

    def add(self, summary: FileSummary) -> None:
        """Insert or replace a summary."""
        self._summaries[summary.path] = summary
        self._entries[summary.path] = _entries(summary)
        self.generation += 1

    def remove(self, paths: Iterable[str]) -> list[str]:
        """Forget ``paths`` (files, or folders: everything under them). Returns
        the paths removed."""
        removed = []
        for p in paths:
            p = os.path.abspath(p)
            prefix = p.rstrip(os.sep) + os.sep
            for known in list(self._summaries):
                if known == p or known.startswith(prefix):
                    del self._summaries[known]
                    self._entries.pop(known, None)
                    removed.append(known)
        if removed:
            self.generation += 1
        return removed

    def stale(self, paths: Iterable[str]) -> list[str]:
        """The paths whose (mtime, size) differ from the cached summary, or that
        are not indexed yet. Missing files are not returned."""
        out = []
        for p in paths:
            p = os.path.abspath(p)
            stamp = _stat_key(p)
            if stamp is None:
                continue
            s = self._summaries.get(p)
            if s is None or (s.mtime_ns, s.size) != stamp:
                out.append(p)
        return out

    # -- synchronous API (CLI, tests) ----------------------------------------
    def scan(self, folders: Sequence[str]) -> list[str]:
        """:func:`discover` in a worker process."""
        return self.executor().submit(discover, list(folders), self.max_files, self.exclude,
                                      self.dump_dirs_only, self.max_scanned).result()

    def index(self, paths: Sequence[str]) -> list[FileSummary]:
        """Summarise the stale ``paths`` in the workers and add them; blocks."""
        todo = self.stale(paths)
        out = []
        futures = [self.executor().submit(summarize_many, todo[i:i + CHUNK], self.size_limit)
                   for i in range(0, len(todo), CHUNK)]
        for fut in futures:
            for s in fut.result():
                self.add(s)
                out.append(s)
        return out

    # -- asynchronous API (the server) ----------------------------------------
    async def scan_async(self, folders: Sequence[str]) -> list[str]:
        """:func:`discover` in a worker process, awaited."""
        fut = self.executor().submit(discover, list(folders), self.max_files, self.exclude,
                                     self.dump_dirs_only, self.max_scanned)
        return await asyncio.wrap_future(fut)

    async def index_async(self, paths: Sequence[str],
                          progress: Callable[[int, int], None] | None = None
                          ) -> list[FileSummary]:
        """Summarise the stale ``paths`` in the workers, adding each chunk as it
        arrives; ``progress(done, total)`` after each chunk (total counts every
        path given, cached ones are done at once). Cancelling the task cancels
        the chunks not started yet."""
        t0 = time.perf_counter()
        paths = [os.path.abspath(p) for p in paths]
        todo = await asyncio.to_thread(self.stale, paths)
        total = len(paths)
        done = total - len(todo)
        self.progress = (done, total)
        if progress:
            progress(done, total)
        out: list[FileSummary] = []
        chunks = iter([todo[i:i + CHUNK] for i in range(0, len(todo), CHUNK)])
        pending: dict[asyncio.Future, list[str]] = {}
        # A bounded window of chunks in flight: cancelling (or exiting) never
        # waits for a long queue of submitted work.
        window = self.workers * 2

        def fill() -> None:
            while len(pending) < window:
                chunk = next(chunks, None)
                if chunk is None:
                    return
                fut = asyncio.wrap_future(
                    self.executor().submit(summarize_many, chunk, self.size_limit))
                pending[fut] = chunk

        try:
            fill()
            while pending:
                finished, _ = await asyncio.wait(list(pending),
                                                 return_when=asyncio.FIRST_COMPLETED)
                for fut in finished:
                    chunk = pending.pop(fut)
                    try:
                        results = fut.result()
                    except Exception as exc:  # noqa: BLE001 - a crashed worker
                        log.warning("indexing %d files failed: %r", len(chunk), exc)
                        if isinstance(exc, concurrent.futures.process.BrokenProcessPool):
                            self._discard_executor()
                        results = [FileSummary(p, *(_stat_key(p) or (0, 0)), error=repr(exc),
                                               **_name_fields(p)) for p in chunk]
                    for s in results:
                        self.add(s)
                        out.append(s)
                    done += len(chunk)
                    self.progress = (done, total)
                    if progress:
                        progress(done, total)
                fill()
        except asyncio.CancelledError:
            for fut in pending:
                fut.cancel()
            raise
        finally:
            self.progress = None
            self.last_index_seconds = time.perf_counter() - t0
        return out

    async def update(self, paths: Sequence[str]) -> list[FileSummary]:
        """Watched-file event "created/changed": re-summarise the HLO files among
        ``paths`` whose (mtime, size) changed; non-HLO files are ignored and
        vanished files removed."""
        paths = [os.path.abspath(p) for p in paths]
        gone = [p for p in paths if not os.path.exists(p)]
        self.remove(gone)
        present = [p for p in paths if p not in gone]
        hlo = await asyncio.to_thread(lambda: [p for p in present if is_hlo_path(p)])
        return await self.index_async(hlo)

    # -- queries --------------------------------------------------------------
    def symbols(self, query: str, limit: int = 500) -> list[SymbolHit]:
        """Symbols matching ``query``: every whitespace-separated token must occur
        (case-insensitively) in the symbol's name or, for fusions, its HLO kind and
        backend kind, for custom-calls its target, for modules the module name,
        stage, platform and file name. Best first (exact name, prefix, substring),
        then by file and line; at most ``limit``."""
        tokens = query.lower().split()
        hits: list[SymbolHit] = []
        for path, entries in list(self._entries.items()):
            summary = self._summaries.get(path)
            if summary is None:
                continue
            for hay, kind, label, name, line, col, end in entries:
                score = _score(tokens, hay, name)
                if score is None:
                    continue
                if kind == "module" and not tokens:
                    score = 0
                hits.append(SymbolHit(kind, label, name, summary, line, col, end, score))
        hits.sort(key=lambda h: (h.score, h.summary.path, h.line))
        return hits[:limit]

    def modules(self, name: str) -> list[FileSummary]:
        """The indexed files of module ``name``, sorted by path."""
        return sorted((s for s in self._summaries.values() if s.module == name),
                      key=lambda s: s.path)


# -------------------------------------------------------------- counterparts ---

def summary_of(path: str, index: WorkspaceIndex | None = None,
               module_name: str | None = None) -> FileSummary:
    """The indexed summary of ``path``, else a name-only one (no symbols) from the
    dump name, with ``module_name`` (the parsed header) when given."""
    s = index.get(path) if index is not None else None
    if s is not None:
        return s
    fields = _name_fields(path)
    if module_name:
        fields["module"] = module_name
    stamp = _stat_key(path) or (0, 0)
    return FileSummary(os.path.abspath(path), stamp[0], stamp[1], **fields)


def counterpart_files(path: str, index: WorkspaceIndex | None = None,
                      module_name: str | None = None) -> list[FileSummary]:
    """The files holding the other optimization stage of ``path``'s module,
    best first.

    ``before_optimizations`` -> the ``*after_optimizations`` files; an after or
    per-pass file -> the ``before_optimizations`` files. Files match by module
    name, not number (the before and after files of one function may be numbered
    differently). Candidates come from ``index`` plus the dump names in ``path``'s
    own directory (so it works before or without indexing). Order: same module
    number, then same directory, then nearest number.
    """
    path = os.path.abspath(path)
    me = summary_of(path, index, module_name)
    want = counterpart_stage(me.stage)
    if want is None or not me.module:
        return []
    found: dict[str, FileSummary] = {}
    if index is not None:
        for s in index.modules(me.module):
            if s.stage == want and s.path != path:
                found[s.path] = s
    directory = os.path.dirname(path)
    try:
        names = os.listdir(directory)
    except OSError:
        names = []
    for name in names:
        dn = parse_dump_name(name)
        candidate = os.path.join(directory, name)
        if dn is None or candidate in found or candidate == path or dn.stage != want:
            continue
        indexed = index.get(candidate) if index is not None else None
        module = indexed.module if indexed is not None else dn.module_name
        if module == me.module:
            found[candidate] = indexed or summary_of(candidate, None)

    def rank(s: FileSummary):
        same_number = s.number is not None and s.number == me.number
        distance = abs(s.number - me.number) if s.number is not None and me.number is not None \
            else 1 << 30
        return (not same_number, os.path.dirname(s.path) != directory, distance, s.path)

    return sorted(found.values(), key=rank)


class _ModuleIndex:
    __slots__ = ("names", "keys", "fusion_caller", "order")

    def __init__(self, module: HloModule) -> None:
        self.names: dict[str, Instruction] = {}
        self.keys: dict[SourceKey, list[Instruction]] = {}
        self.order: dict[int, int] = {}
        i = 0
        for comp in module.computations:
            for ins in comp.instructions:
                self.names.setdefault(ins.name.name, ins)
                self.order[id(ins)] = i
                i += 1
                key = source_key(module, ins)
                if key is not None:
                    self.keys.setdefault(key, []).append(ins)
        # computation name -> the fusion instruction calling it (fused computations)
        self.fusion_caller: dict[str, Instruction] = {}
        for name, callers in module.callers.items():
            for ins, cref in callers:
                if ins.opcode == "fusion" and cref.attr == "calls":
                    self.fusion_caller.setdefault(name, ins)
                    break


def _index_of(module: HloModule) -> _ModuleIndex:
    return module.derived("workspace_index", _ModuleIndex)


def instruction_names(module: HloModule) -> dict[str, Instruction]:
    """Every instruction of ``module`` by name (XLA names are unique per module;
    the first definition wins), cached per module object."""
    return _index_of(module).names


@dataclass(frozen=True, slots=True)
class Counterpart:
    """A matched instruction of the target module and how it matched:
    ``via`` is "name" or "source" (op_name + source location); ``fused`` is the
    instruction inside a fused computation that matched when ``instruction`` is
    the fusion containing it."""

    instruction: Instruction
    via: str
    fused: Instruction | None = None


def _fused_keys(module: HloModule, ins: Instruction, depth: int = 0) -> list[SourceKey]:
    out: list[SourceKey] = []
    if depth > 4:
        return out
    for cref in ins.called:
        if cref.attr != "calls" or ins.opcode != "fusion":
            continue
        comp = module.by_name.get(cref.ref.name)
        if comp is None:
            continue
        for inner in comp.instructions:
            key = source_key(module, inner)
            if key is not None and key not in out:
                out.append(key)
            for k in _fused_keys(module, inner, depth + 1):
                if k not in out:
                    out.append(k)
    return out


def _lift(idx: _ModuleIndex, ins: Instruction) -> Instruction:
    """The outermost fusion instruction whose fused computation contains ``ins``
    (``ins`` itself when it is not inside a fusion)."""
    seen = 0
    while ins.computation is not None and seen < 16:
        caller = idx.fusion_caller.get(ins.computation.name.name)
        if caller is None:
            break
        ins = caller
        seen += 1
    return ins


def _shape_text(ins: Instruction) -> str:
    from hlo_lsp.model.kernels import short_shape
    return short_shape(ins.shape.text) if ins.shape is not None else ""


def find_counterparts(source: HloModule, ins: Instruction, target: HloModule,
                      limit: int = MAX_COUNTERPARTS) -> list[Counterpart]:
    """The instructions of ``target`` (the other optimization stage of the same
    module) that correspond to ``ins`` of ``source``.

    1. An instruction of the same name whose opcode or metadata ``op_name`` is the
       same: that instruction alone (``via="name"``).
    2. Else instructions with the same :func:`source_key` (``via="source"``); among
       them those with the same opcode and shape when there are any. When ``ins``
       is a fusion, the keys of its fused instructions count too (where the fused
       ops came from). Matches inside a fused computation of ``target`` are
       reported as the fusion instruction containing them (``fused`` = the inner
       one). In ``target``'s text order, own-key matches first; at most ``limit``.
    """
    tidx = _index_of(target)
    same = tidx.names.get(ins.name.name)
    if same is not None:
        my_op = ins.metadata.get("op_name")
        if same.opcode == ins.opcode or (my_op and same.metadata.get("op_name") == my_op):
            return [Counterpart(same, "name")]
    out: list[Counterpart] = []
    seen: set[int] = set()

    def add(matches: list[Instruction]) -> None:
        for m in sorted(matches, key=lambda x: tidx.order.get(id(x), 0)):
            lifted = _lift(tidx, m)
            if id(lifted) in seen:
                continue
            seen.add(id(lifted))
            out.append(Counterpart(lifted, "source", m if lifted is not m else None))

    own = source_key(source, ins)
    if own is not None:
        matches = tidx.keys.get(own, [])
        shape = _shape_text(ins)
        best = [m for m in matches if m.opcode == ins.opcode and _shape_text(m) == shape] or \
            [m for m in matches if m.opcode == ins.opcode] or matches
        add(best)
    if ins.opcode == "fusion":
        for key in _fused_keys(source, ins):
            if key != own:
                add(tidx.keys.get(key, []))
    return out[:limit]


__all__ = [
    "ComputationSymbol", "Counterpart", "CustomCallSymbol", "FileSummary", "FusionSymbol",
    "SymbolHit", "WorkspaceIndex", "counterpart_files", "discover", "find_counterparts",
    "special_reports",
    "instruction_names", "source_key", "summarize_file", "summarize_many", "summarize_text",
    "summary_of",
]
