"""The pass history of a module in an XLA dump directory: its pass snapshots
in order, what each step changed, and which pass made an instruction.

With ``XLA_FLAGS=--xla_dump_hlo_pass_re=.*`` XLA writes the module after
every pass that changed it (``HloPassPipeline::RunPassesInternal``,
xla/hlo/pass/hlo_pass_pipeline.cc: with the regex ``.*`` only passes that
report a change are dumped, with any other regex every matching pass), and at
the start of each pipeline, as
``module_NNNN.name.SSSS.<pipeline>.after_<pass>.before_<next pass>.txt``
(xla/service/dump.cc ``DumpHloModuleBetweenPassesIfEnabled``; ``SSSS`` is the
module's step counter, ``%04d``, shared by all its pipelines). A pass may also
dump itself mid-way as ``SSSS.<pass>.<step>`` (``DumpHloModuleDuringPassIfEnabled``,
e.g. copy insertion's ``0048.copy-insertion.after_adding_copies_to_resolve_interference``).
The history (:class:`History`) is the before-optimizations file, the
snapshots by step number, and the after-optimizations file.

Reading is cheap by design: a snapshot is summarised line by line
(:func:`summarize_text`: each instruction's name, opcode, shape, operands,
custom-call target and fusion kinds from the line XLA prints it on), a line
seen in an earlier snapshot is not read again, and an identical file is not
compared. Instructions are followed from one snapshot to the next by
:func:`follow`: names first, on the summaries; where a pass left instructions
over on both sides (renames, clones), the rename-robust matcher of
:mod:`hlo_lsp.model.matching` on the two snapshots parsed (the one matcher of
the project: ``hlo-lsp diff``, the recompile report and this history).

Everything read is untrusted input (:mod:`hlo_lsp.dump.untrusted`): a snapshot
that is not a regular file, larger than :data:`MAX_SNAPSHOT_BYTES` or not HLO
text is one :attr:`Step.problem` and the history goes on from the last one read.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterator, NamedTuple

from hlo_lsp.dump.names import (AFTER_OPTIMIZATIONS, BEFORE_OPTIMIZATIONS, DumpName,
                                is_pass_snapshot, module_id, parse_dump_name)
from hlo_lsp.dump.untrusted import UntrustedFileError, read_text
from hlo_lsp.model.hlo import HloModule, unquote
from hlo_lsp.model.matching import match_modules
from hlo_lsp.syntax.parser import parse

#: The most bytes of one snapshot read; a larger one is a :attr:`Step.problem`.
MAX_SNAPSHOT_BYTES = 256 * 1024 * 1024

#: ``pass`` of the two ends of a history (not pass names: the files XLA always writes).
BEFORE = BEFORE_OPTIMIZATIONS
AFTER = AFTER_OPTIMIZATIONS

_BETWEEN = re.compile(r"^(?P<index>\d{4,})\.(?P<pipeline>.+?)\.after_(?P<pass>.+?)"
                      r"\.before_(?P<next>.+)$")
_DURING = re.compile(r"^(?P<index>\d{4,})\.(?P<pass>[^.]+(?:\.[^.]+)*?)\.(?P<step>[^.]+)$")


class HistoryError(ValueError):
    """No history to show: ``str()`` is one line for the user (the directory has
    no pass snapshots, the module is ambiguous, the line holds no instruction)."""


@dataclass(frozen=True, slots=True)
class Stage:
    """One file of a history. ``index`` is the step number ``SSSS`` of a pass
    snapshot; the before-optimizations file has -1, the after-optimizations
    file one more than the last snapshot. ``pass_name`` is the pass just run
    (the file name's ``after_`` part: ``triton-gemm-rewriter``, or
    ``pipeline-start`` for the module as a pipeline began; the pass of a mid-pass
    dump), :data:`BEFORE` or :data:`AFTER` at the ends; ``next_pass`` the
    ``before_`` part ("" when absent); ``step`` a mid-pass dump's step
    (``after_adding_copies_to_resolve_interference``, else ""); ``file`` the base
    name, ``path`` the path."""

    index: int
    pipeline: str
    pass_name: str
    next_pass: str
    file: str
    path: str
    step: str = ""

    @property
    def is_end(self) -> bool:
        """Whether this is the before- or after-optimizations file."""
        return self.pass_name in (BEFORE, AFTER) and not self.pipeline

    def to_dict(self) -> dict:
        """``{"pass", "pipeline", "index", "file"}``: the contract for scripts
        (``hlo-lsp blame --json``, docs/passes.md)."""
        return {"pass": self.pass_name, "pipeline": self.pipeline, "index": self.index,
                "file": self.file}


@dataclass(frozen=True, slots=True)
class History:
    """The files of one module's pass history in ``directory``: ``stages`` in
    order (before optimizations, the snapshots by step number, after
    optimizations; an end XLA did not write is left out). ``number`` and
    ``timestamp`` as in the dump name; ``module`` the module's name."""

    directory: str
    module: str
    number: int
    timestamp: str
    stages: tuple[Stage, ...]

    @property
    def label(self) -> str:
        """``module_0001.jit_fp8_block``: how the dump names this module."""
        return f"{module_id(self.number)}.{self.module}"

    def position(self, filename: str) -> int | None:
        """The position in :attr:`stages` of the file named ``filename``."""
        for i, s in enumerate(self.stages):
            if s.file == filename:
                return i
        return None


def snapshot_stage(name: DumpName) -> tuple[int, str, str, str, str] | None:
    """``(index, pipeline, pass, next pass, step)`` of a pass snapshot's name
    (:func:`hlo_lsp.dump.names.is_pass_snapshot`): ``0022.hlo_normalization.after_
    triton-gemm-rewriter.before_hoist-fused-bitcasts`` -> ``(22, "hlo_normalization",
    "triton-gemm-rewriter", "hoist-fused-bitcasts", "")``; a mid-pass dump
    ``0048.copy-insertion.after_adding_copies`` -> ``(48, "", "copy-insertion", "",
    "after_adding_copies")`` (its pipeline is found by :func:`find_histories`).
    None for other names."""
    if not is_pass_snapshot(name):
        return None
    text = name.stage[len("pass:"):]
    m = _BETWEEN.match(text)
    if m is not None:
        return (int(m.group("index")), m.group("pipeline"), m.group("pass"),
                m.group("next"), "")
    m = _DURING.match(text)
    if m is not None:
        return int(m.group("index")), "", m.group("pass"), "", m.group("step")
    return None


def find_histories(directory: str) -> list[History]:
    """Every module of ``directory`` (not its subfolders) with pass snapshots,
    by module number. Names only: no file is opened. Raises OSError when the
    directory cannot be listed."""
    groups: dict[tuple[str, int], dict] = {}
    for entry in sorted(os.listdir(directory)):
        name = parse_dump_name(entry)
        if name is None:
            continue
        group = groups.setdefault((name.timestamp, name.number),
                                  {"module": name.module_name, "snapshots": [], "ends": {}})
        if name.stage == BEFORE_OPTIMIZATIONS:
            group["ends"][BEFORE] = entry
        elif name.stage == AFTER_OPTIMIZATIONS:
            group["ends"][AFTER] = entry
        else:
            parts = snapshot_stage(name)
            if parts is not None:
                group["snapshots"].append((parts, entry))
    out = []
    for (timestamp, number), group in sorted(groups.items(), key=lambda kv: kv[0][::-1]):
        if not group["snapshots"]:
            continue
        snaps = sorted(group["snapshots"], key=lambda s: s[0][0])
        stages = [Stage(-1, "", BEFORE, "", f, os.path.join(directory, f))
                  for f in [group["ends"].get(BEFORE)] if f]
        for (index, pipeline, pass_name, nxt, step), f in snaps:
            stages.append(Stage(index, pipeline, pass_name, nxt, f, os.path.join(directory, f),
                                step))
        if AFTER in group["ends"]:
            f = group["ends"][AFTER]
            stages.append(Stage(snaps[-1][0][0] + 1, "", AFTER, "", f,
                                os.path.join(directory, f)))
        out.append(History(directory, group["module"], number, timestamp,
                           tuple(_mid_pass_pipelines(stages))))
    return out


def _mid_pass_pipelines(stages: list[Stage]) -> list[Stage]:
    """Mid-pass dumps get the pipeline of the snapshot that names their pass:
    the next one after it (``after_<pass>``), else the last one before it
    (``before_<pass>``); else none ("")."""
    out = list(stages)
    for i, s in enumerate(out):
        if not s.step:
            continue
        after = next((t.pipeline for t in out[i + 1:] if not t.step and t.pass_name == s.pass_name
                      and t.pipeline), "")
        before = next((t.pipeline for t in reversed(out[:i]) if not t.step
                       and t.next_pass == s.pass_name), "")
        out[i] = Stage(s.index, after or before, s.pass_name, s.next_pass, s.file, s.path, s.step)
    return out


def module_history(directory: str, module: str | None = None) -> History:
    """The history of ``module`` in ``directory``: a module name
    (``jit_fp8_block``), ``module_0001`` or ``module_0001.jit_fp8_block``; without
    one, the only module with pass snapshots. Raises :class:`HistoryError` (none,
    or several that match: the message lists them) and OSError (the directory
    cannot be listed)."""
    found = find_histories(directory)
    if not found:
        raise HistoryError(f"{directory}: no pass snapshots (dump with "
                           "XLA_FLAGS=--xla_dump_hlo_pass_re=.*)")
    if module:
        found = [h for h in found if module in (h.module, module_id(h.number), h.label)]
        if not found:
            raise HistoryError(f"{directory}: no pass snapshots of module {module!r}")
    if len(found) > 1:
        raise HistoryError(f"{directory}: pass snapshots of {len(found)} modules; pick one with "
                           "--module: " + ", ".join(h.label for h in found))
    return found[0]


def history_of_file(path: str) -> tuple[History, int]:
    """The history the dump file ``path`` is part of and its position in it.
    Raises :class:`HistoryError` when its name is not a dump name, its module
    has no pass snapshots, or the file is not one of the history (XLA:GPU's
    ``after_spmd_partitioner`` file)."""
    directory, base = os.path.split(os.path.abspath(path))
    name = parse_dump_name(base)
    if name is None:
        raise HistoryError(f"{path}: not a file of an XLA dump (module_NNNN.*.txt)")
    for h in find_histories(directory):
        if h.number == name.number and h.timestamp == name.timestamp:
            at = h.position(base)
            if at is None:
                raise HistoryError(f"{path}: not in the pass history of {h.label} (its "
                                   "before- and after-optimizations files and pass snapshots)")
            return h, at
    raise HistoryError(f"{path}: no pass snapshots of {module_id(name.number)} beside it "
                       "(dump with XLA_FLAGS=--xla_dump_hlo_pass_re=.*)")


# --------------------------------------------------------------- summaries ---

class Instr(NamedTuple):
    """One instruction as its line says: ``name`` (no ``%``), ``opcode``,
    ``shape`` as written, ``operands`` (names), ``refs`` (every name in the
    line after ``=``, in order: operands, called computations, control
    predecessors), ``target`` (a custom-call's ``custom_call_target``, else
    ""), ``kind`` (a fusion's ``kind=``, e.g. kCustom, else ""), ``backend_kind``
    (a fusion's backend_config kind, e.g. ``__triton_gemm``, else ""),
    ``template`` (the text after ``=`` with every name left out: two lines
    with equal templates and refs that match are the same instruction),
    ``column`` (where the name starts on its line, code points, ``%`` left out:
    where an editor puts the cursor on it)."""

    name: str
    opcode: str
    shape: str
    operands: tuple[str, ...]
    refs: tuple[str, ...]
    target: str
    kind: str
    backend_kind: str
    template: str
    column: int = 0


@dataclass(slots=True)
class Summary:
    """One file of a history summarised: ``instructions`` by key (the name;
    a name already used in the file gets ``computation/name``), ``lines`` the
    0-based line of each key, ``text`` the file's text ("" when unreadable),
    ``problem`` why the file could not be read ("" when it was)."""

    instructions: dict[str, Instr] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    computations: dict[str, str] = field(default_factory=dict)
    text: str = ""
    problem: str = ""
    #: the parsed module, once :func:`follow` needed it (:func:`module_of`)
    module: HloModule | None = None


_INSTR = re.compile(r"^[ \t]+(?:ROOT[ \t]+)?%?([A-Za-z_][\w.\-]*)[ \t]*=[ \t]*(.*?)[ \t]*$")
_COMP = re.compile(r"^(?:ENTRY[ \t]+)?%?([A-Za-z_][\w.\-]*)[ \t]*[({]")
_OPCODE = re.compile(r"(?:^|\s)([a-z][a-z0-9\-]*)\(")
_NAME = re.compile(r"%([A-Za-z_][\w.\-]*)")
_KIND = re.compile(r"\bkind=(k[A-Za-z]+)")
_BACKEND_KIND = re.compile(r'"(?:fusion_backend_config|fusion_config)"\s*:\s*\{[^{}]*?'
                           r'"kind"\s*:\s*"([^"]+)"')
_TARGET = re.compile(r'custom_call_target=("(?:[^"\\]|\\.)*")')
_PAREN = re.compile(r"[()]")


def instruction_of(name: str, body: str, column: int = 0) -> Instr | None:
    """The :class:`Instr` of the instruction ``name`` whose text after ``=`` is
    ``body`` (one line as XLA prints it; ``column``: where the name starts on
    it); None when ``body`` has no opcode."""
    op = _OPCODE.search(body)
    if op is None:
        return None
    opcode = op.group(1)
    depth, end = 0, len(body)
    for p in _PAREN.finditer(body, op.end() - 1):
        depth += 1 if p.group() == "(" else -1
        if depth == 0:
            end = p.start()
            break
    operands = tuple(_NAME.findall(body, op.end(), end))
    refs = tuple(_NAME.findall(body))
    target = kind = backend = ""
    if opcode == "custom-call":
        t = _TARGET.search(body, end)
        target = unquote(t.group(1)) if t else ""
    elif opcode == "fusion":
        k = _KIND.search(body, end)
        kind = k.group(1) if k else ""
        b = _BACKEND_KIND.search(body, end)
        backend = b.group(1) if b else ""
    return Instr(name, opcode, body[:op.start()].strip(), operands, refs, target, kind, backend,
                 _NAME.sub("%", body), column)


def summarize_text(text: str, memo: dict[str, Instr | None] | None = None) -> Summary:
    """The :class:`Summary` of HLO ``text`` as XLA prints it, one instruction a
    line (an instruction continued on further lines is read from its first).
    ``memo`` maps a line to its :class:`Instr` across the files of a history
    (most lines repeat from one snapshot to the next). Never raises."""
    memo = {} if memo is None else memo
    out = Summary(text=text)
    instructions, lines, comps = out.instructions, out.lines, out.computations
    computation = ""
    for no, line in enumerate(text.splitlines()):
        if not line or line[0] not in " \t":
            m = _COMP.match(line) if line and line[0] != "}" else None
            if m is not None and not line.startswith("HloModule"):
                computation = m.group(1)
            continue
        ins = memo.get(line, False)
        if ins is False:
            m = _INSTR.match(line)
            ins = instruction_of(m.group(1), m.group(2), m.start(1)) if m is not None else None
            memo[line] = ins
        if ins is None:
            continue
        key = ins.name if ins.name not in instructions else f"{computation}/{ins.name}"
        instructions[key] = ins
        lines[key] = no
        comps[key] = computation
    return out


def read_summary(path: str, memo: dict | None = None, limit: int = MAX_SNAPSHOT_BYTES,
                 previous: Summary | None = None) -> Summary:
    """:func:`summarize_text` of the file at ``path`` read as untrusted input;
    a file that cannot be read or is not HLO text gives a :class:`Summary` with
    ``problem`` set (one line). ``previous``, the summary of another file, is
    returned when this file holds the same text (a pipeline start that changed
    nothing). Never raises."""
    try:
        text = read_text(path, limit)
    except UntrustedFileError as exc:
        return Summary(problem=exc.reason)
    if previous is not None and previous.text == text:
        return previous
    if not text.lstrip().startswith("HloModule"):
        return Summary(problem="not HLO text (no HloModule line)")
    return summarize_text(text, memo)


# ---------------------------------------------------------------- following ---

def follow(old: Summary, new: Summary) -> dict[str, str]:
    """Which instruction of ``new`` each instruction of ``old`` became: ``{old
    key: new key}``, one to one, for the instructions that are still there.

    Names first: a key in both with the same opcode (on the line summaries,
    no parse). Then, only when instructions are left over on both sides (a
    pass renamed, cloned or replaced some: ``rename-instructions``,
    ``rename_fusions``, clones), the project's one rename-robust matcher
    (:func:`hlo_lsp.model.matching.match_modules`) on the two snapshots parsed
    (:func:`module_of`, once per snapshot), its pairs of leftovers kept where
    the opcode is the same: an instruction that becomes another opcode (a dot
    becoming a GEMM fusion) is a new instruction in a history.

    The cost, against the line-summary heuristic this replaced (same machine,
    same load; ``python benchmarks/bench_passes.py --dir DUMP``): on the 98
    snapshots (7.5 MB) of the benchmark's transformer block for H100, 22 steps
    leave instructions over and 31 snapshots are parsed: ``hlo-lsp passes``
    0.27 s -> 0.90 s (the issue's budget: 2 s), :func:`steps` in process
    0.07 s -> 0.55 s, ``hlo-lsp blame`` 0.24 s -> 0.58 s; on the 53 snapshots
    (76 MB) of a 12-layer CPU training step (benchmarks/gen_transformer.py),
    ``passes`` 1.8 s -> 7.9 s, 100 -> 237 MB peak. In exchange the pairs the
    heuristic missed (``dot_decomposer``'s renamed dots, clones whose line
    changed) are followed."""
    if old.text and old.text == new.text:
        return {k: k for k in old.instructions}
    oi, ni = old.instructions, new.instructions
    pairs = {k: k for k, ins in oi.items() if (o := ni.get(k)) is not None
             and o.opcode == ins.opcode}
    if len(pairs) == len(oi) or len(pairs) == len(ni):
        return pairs
    taken = set(pairs.values())
    left_new = {k for k in ni if k not in taken}
    for a, b in match_modules(module_of(old), module_of(new)).items():
        if a in oi and a not in pairs and b in left_new and oi[a].opcode == ni[b].opcode:
            pairs[a] = b
            left_new.discard(b)
    return pairs


def module_of(summary: Summary) -> HloModule:
    """The parsed module of a summarised snapshot (:func:`hlo_lsp.syntax.parser.parse`,
    which never raises), parsed once and kept on the summary."""
    if summary.module is None:
        summary.module = parse(summary.text)
    return summary.module


def changed(old: Instr, new: Instr, pairs: dict[str, str], old_keys, new_keys) -> bool:
    """Whether the instruction ``old`` became ``new`` with a change: a new name,
    or another text after ``=`` with the names it refers to followed (names of
    computations are not compared: a change inside one is a change of its
    instructions)."""
    if old.name != new.name:
        return True
    if old.template != new.template:
        return True
    if old.refs == new.refs:
        return False
    if len(old.refs) != len(new.refs):
        return True
    for a, b in zip(old.refs, new.refs):
        if a in old_keys or b in new_keys:
            if pairs.get(a) != b:
                return True
    return False


# -------------------------------------------------------------------- steps ---

@dataclass(frozen=True, slots=True)
class Step:
    """What ``stage`` changed against the file read before it (the previous
    stage, or the last one that could be read): instructions ``added`` and
    ``changed`` (names in this file, a new name counts as a change),
    ``removed`` (names in the earlier file); opcodes, custom-call targets and
    fusion kinds (HLO and backend kinds) that ``appeared`` or ``vanished`` (each
    a label: ``dot``, ``custom-call __cublas$lt$matmul$f8``, ``fusion kCustom``,
    ``fusion __triton_gemm``; fusions and custom-calls only by kind and
    target). The first stage has nothing to compare with: all empty. ``problem``: why the file could not be read (the counts are
    then empty and the next stage is compared with the one before it)."""

    stage: Stage
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    appeared: tuple[str, ...] = ()
    vanished: tuple[str, ...] = ()
    problem: str = ""
    instructions: int = 0

    @property
    def changes(self) -> int:
        """Instructions added, removed or changed."""
        return len(self.added) + len(self.removed) + len(self.changed)

    def to_dict(self) -> dict:
        """``{"index", "pipeline", "pass", "file", "added", "removed",
        "changed"}`` (the last three: instruction counts; null for a file that
        could not be read): the contract for scripts (``hlo-lsp passes --json``)."""
        counts = (None,) * 3 if self.problem else (len(self.added), len(self.removed),
                                                   len(self.changed))
        return {"index": self.stage.index, "pipeline": self.stage.pipeline,
                "pass": self.stage.pass_name, "file": self.stage.file,
                "added": counts[0], "removed": counts[1], "changed": counts[2]}


def _labels(s: Summary) -> Counter:
    out: Counter = Counter()
    for ins in s.instructions.values():
        if ins.opcode not in ("fusion", "custom-call"):  # these by kind and target
            out[ins.opcode] += 1
        if ins.target:
            out[f"custom-call {ins.target}"] += 1
        if ins.kind:
            out[f"fusion {ins.kind}"] += 1
        if ins.backend_kind:
            out[f"fusion {ins.backend_kind}"] += 1
    return out


def compare(stage: Stage, old: Summary, new: Summary) -> Step:
    """The :class:`Step` from ``old`` to ``new`` (the file of ``stage``)."""
    return _compare(stage, old, new)[0]


def _compare(stage: Stage, old: Summary, new: Summary
             ) -> tuple[Step, dict[str, str], set[str]]:
    """The :class:`Step` from ``old`` to ``new``, the pairs it followed
    (:func:`follow`) and the keys of ``new`` that changed."""
    oi, ni = old.instructions, new.instructions
    if old is new or (old.text and old.text == new.text):
        return Step(stage, instructions=len(ni)), {k: k for k in ni}, set()
    pairs = follow(old, new)
    taken = set(pairs.values())
    changed_keys = [n for o, n in pairs.items() if changed(oi[o], ni[n], pairs, oi, ni)]
    lo, ln = _labels(old), _labels(new)
    step = Step(stage, added=tuple(ni[k].name for k in ni if k not in taken),
                removed=tuple(oi[k].name for k in oi if k not in pairs),
                changed=tuple(ni[n].name for n in changed_keys),
                appeared=tuple(sorted(set(ln) - set(lo))),
                vanished=tuple(sorted(set(lo) - set(ln))), instructions=len(ni))
    return step, pairs, set(changed_keys)


class _Walked(NamedTuple):
    """One stage of :func:`_walk`: its position in the history, its
    :class:`Step`, its summary (None when unreadable) and the pairs followed
    from the last file read (None for the first read) with the keys changed."""

    position: int
    step: Step
    summary: Summary | None
    pairs: dict[str, str] | None
    changed: set[str]


def _walk(history: History, limit: int, upto: int | None = None) -> Iterator[_Walked]:
    """The one walk over a history, stage by stage up to position ``upto``
    (None: all), reading one file at a time (two summaries held at once): what
    :func:`steps` and :func:`file_history` report."""
    memo: dict = {}
    last: Summary | None = None
    stages = history.stages if upto is None else history.stages[:upto + 1]
    for i, stage in enumerate(stages):
        summary = read_summary(stage.path, memo, limit, last)
        if summary.problem:
            yield _Walked(i, Step(stage, problem=summary.problem), None, None, set())
            continue
        if last is None:
            yield _Walked(i, Step(stage, instructions=len(summary.instructions)), summary,
                          None, set())
        else:
            step, pairs, changed_keys = _compare(stage, last, summary)
            yield _Walked(i, step, summary, pairs, changed_keys)
        last = summary


def steps(history: History, limit: int = MAX_SNAPSHOT_BYTES) -> Iterator[Step]:
    """The :class:`Step` of every stage of ``history``, in order, reading one
    file at a time (two summaries held at once)."""
    for walked in _walk(history, limit):
        yield walked.step


# -------------------------------------------------------------------- blame ---

class Place(NamedTuple):
    """Where an instruction is in one file of a history: its ``name`` there,
    its 0-based ``line`` and the ``column`` its name starts at (code points,
    after the ``%``)."""

    name: str
    line: int
    column: int


@dataclass(frozen=True, slots=True)
class Blame:
    """Which passes made the instruction ``instruction`` (its name in the file
    asked about): ``created_by`` the stage where it first appears (the
    before-optimizations file when it was there from the start),
    ``changed_by`` each later stage up to the file asked about that changed
    it (:func:`changed`), in order; ``names`` its names from its creation on
    (one each time it was renamed); ``problems`` the files that could not be read on the way,
    as ``"file: reason"``; ``places`` where it is in the file of ``created_by``
    (its first appearance) and of each ``changed_by``, in that order."""

    instruction: str
    created_by: Stage
    changed_by: tuple[Stage, ...]
    names: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    places: tuple[Place, ...] = ()

    def to_dict(self) -> dict:
        """``{"instruction", "created_by": {"pass", "pipeline", "index", "file"},
        "changed_by": [...]}``: the contract for scripts (``hlo-lsp blame --json``)."""
        return {"instruction": self.instruction, "created_by": self.created_by.to_dict(),
                "changed_by": [s.to_dict() for s in self.changed_by]}


class _Origin(NamedTuple):
    """What the walk knows of one instruction (shared, unchanged, by the
    instructions followed without a change): the position of the stage it
    appeared in, of the last file read before that (-1: none), of the stages
    that changed it; its names and places (:attr:`Blame.places`)."""

    created: int
    since: int
    changes: tuple[int, ...]
    names: tuple[str, ...]
    places: tuple[Place, ...]


@dataclass(frozen=True)
class FileHistory:
    """The pass history of one file of a dump, from one walk over the files
    before it (:func:`file_history`): ``history`` and the file's ``position``
    in its stages, the ``steps`` up to the file (what each changed), and the
    origin of every instruction of the file (:meth:`blame`, by key: the name,
    ``computation/name`` for a name used twice), each key's name, line and
    computation. ``problems``: ``(position, "file: reason")`` of the files that
    could not be read."""

    history: History
    position: int
    steps: tuple[Step, ...]
    origins: dict[str, _Origin]
    names: dict[str, str]
    lines: dict[str, int]
    problems: tuple[tuple[int, str], ...] = ()
    computations: dict[str, str] = field(default_factory=dict)

    @property
    def stage(self) -> Stage:
        """The stage of the file."""
        return self.history.stages[self.position]

    def key_of(self, name: str, computation: str | None = None) -> str | None:
        """The key of the instruction named ``name`` (no ``%``), in ``computation``
        when given (names of fused computations' parameters repeat); None when
        none is."""
        if computation is not None and self.computations.get(name, computation) != computation:
            other = f"{computation}/{name}"
            return other if other in self.origins else None
        return name if name in self.origins else None

    def key_at_line(self, line: int) -> str | None:
        """The key of the instruction on 0-based ``line`` of the file."""
        for key, no in self.lines.items():
            if no == line:
                return key
        return None

    def blame(self, key: str) -> Blame:
        """The :class:`Blame` of the instruction ``key`` (KeyError when the file
        has none)."""
        o = self.origins[key]
        stages = self.history.stages
        return Blame(self.names[key], stages[o.created], tuple(stages[i] for i in o.changes),
                     o.names, tuple(p for i, p in self.problems if i > o.since), o.places)


def file_history(path: str, limit: int = MAX_SNAPSHOT_BYTES) -> FileHistory:
    """The :class:`FileHistory` of the dump file ``path`` (an
    after-optimizations file, a snapshot, ...): one walk from the start of its
    history to it, following every instruction (:func:`follow`) and noting
    where each appeared and which stages changed it. Raises
    :class:`HistoryError` (no history, the file unreadable) and OSError (the
    directory cannot be listed)."""
    history, at = history_of_file(path)
    origins: dict[str, _Origin] = {}
    problems: list[tuple[int, str]] = []
    done: list[Step] = []
    last_read = -1
    summary: Summary | None = None
    for w in _walk(history, limit, at):
        done.append(w.step)
        if w.summary is None:
            problems.append((w.position, f"{w.step.stage.file}: {w.step.problem}"))
            continue
        s = w.summary
        here = s.instructions
        if w.pairs is None:
            origins = {k: _Origin(w.position, last_read, (), (ins.name,),
                                  (Place(ins.name, s.lines[k], ins.column),))
                       for k, ins in here.items()}
        elif w.changed or len(w.pairs) != len(here) or len(here) != len(origins):
            new = {n: origins[o] for o, n in w.pairs.items()}
            for k in w.changed:
                o, ins = new[k], here[k]
                names = o.names if o.names[-1] == ins.name else (*o.names, ins.name)
                new[k] = o._replace(changes=(*o.changes, w.position), names=names,
                                    places=(*o.places, Place(ins.name, s.lines[k], ins.column)))
            for k, ins in here.items():
                if k not in new:
                    new[k] = _Origin(w.position, last_read, (), (ins.name,),
                                     (Place(ins.name, s.lines[k], ins.column),))
            origins = new
        elif any(o != n for o, n in w.pairs.items()):  # renamed keys, nothing changed
            origins = {n: origins[o] for o, n in w.pairs.items()}
        last_read = w.position
        summary = s
    if done[-1].problem or summary is None:
        raise HistoryError(f"{path}: {done[-1].problem}")
    return FileHistory(history, at, tuple(done), origins,
                       {k: ins.name for k, ins in summary.instructions.items()},
                       dict(summary.lines), tuple(problems), dict(summary.computations))


def instruction_at_line(summary: Summary, line: int) -> str | None:
    """The key of the instruction on 0-based ``line`` of a summarised file."""
    for key, no in summary.lines.items():
        if no == line:
            return key
    return None


def blame(path: str, line: int, limit: int = MAX_SNAPSHOT_BYTES) -> Blame:
    """The :class:`Blame` of the instruction on 0-based ``line`` of the dump
    file ``path`` (an after-optimizations file, a snapshot, ...), from its
    :func:`file_history`. Raises :class:`HistoryError` (no history, the file
    unreadable, no instruction on that line)."""
    found = file_history(path, limit)
    key = found.key_at_line(line)
    if key is None:
        raise HistoryError(f"{path}:{line + 1}: no instruction on this line")
    return found.blame(key)


def blame_name(path: str, name: str, limit: int = MAX_SNAPSHOT_BYTES) -> Blame:
    """:func:`blame` of the instruction named ``name`` (no ``%``) in the dump
    file ``path``, for callers that know the instruction, not its line.
    Raises :class:`HistoryError` also when no instruction has that name."""
    found = file_history(path, limit)
    key = found.key_of(name)
    if key is None:
        raise HistoryError(f"{path}: no instruction %{name}")
    return found.blame(key)


__all__ = ["AFTER", "BEFORE", "Blame", "FileHistory", "History", "HistoryError", "Instr",
           "MAX_SNAPSHOT_BYTES", "Place", "Stage", "Step", "Summary", "blame", "blame_name",
           "changed", "compare", "file_history", "find_histories", "follow", "history_of_file",
           "instruction_at_line", "instruction_of", "module_history", "read_summary",
           "snapshot_stage", "steps", "summarize_text"]
