"""XLA:GPU's priority-fusion log: why each producer was or was not fused.

With pass dumps on (``--xla_dump_hlo_pass_re=.*``, or
``--xla_dump_fusion_visualization``) XLA:GPU's ``PriorityFusion`` pass writes
``module_NNNN.<name>.priority_fusion_dump.txt`` beside the module's HLO: a text
proto ``FusionProcessDumpProto`` (xla/service/gpu/fusion_process_dump.proto)
whose ``fusion_steps`` are, in the order the pass took them,

- ``update_priority { producer_name consumer_names us_fused us_unfused }``: the
  cost model's estimate (microseconds) of the producer fused into all its
  consumers against left alone;
- ``producer_ineligible { producer_name reason }``: the producer cannot be
  fused, and why ("the producer is not fusible", "not fusing because there are
  only bitcast users", ...);
- ``fusion { fusion_name producer_name consumer_name }``: the producer was
  fused into the consumer, giving ``fusion_name``;

besides the device (``gpu_device_info``, skipped) and the module before fusion
(``hlo_module_before_fusion``, kept as text). Names are those of the
module before fusion: XLA renames fusions and clones fused instructions
afterwards (``rename_fusions``: ``fusion.2`` -> ``loop_multiply_fusion``;
``mul.7.0`` -> ``mul.7.1`` inside it), so only the names that survive find
their steps here (:meth:`FusionDump.about`).

The file is untrusted input: read with :func:`hlo_lsp.dump.untrusted.read_text`
(a regular file, at most :data:`MAX_FUSION_DUMP_BYTES`), parsed by the small
reader :mod:`hlo_lsp.dump.text_proto`; a file that cannot be read or parsed is
one :class:`FusionDumpError` naming it and the reason.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from collections.abc import Mapping
from functools import cached_property

from hlo_lsp.dump.names import AFTER_OPTIMIZATIONS, parse_dump_name
from hlo_lsp.dump.text_proto import Message, TextProtoError, fields, first, parse
from hlo_lsp.dump.untrusted import UntrustedFileError, read_text
from hlo_lsp.model.hlo import HloModule
from hlo_lsp.model.matching import match_modules
from hlo_lsp.syntax.parser import parse as parse_hlo

#: The file name's suffix after the module's ``module_NNNN.<name>.`` prefix.
FUSION_DUMP_SUFFIX = "priority_fusion_dump.txt"
#: The largest priority-fusion dump read (bytes): the log of a large model's
#: module is a few MB, most of it the module before fusion.
MAX_FUSION_DUMP_BYTES = 64 * 1024 * 1024

#: The most HLO text (bytes, both modules together) :func:`names_at_fusion`
#: parses and matches: about 0.3 s per MB on this project's machine (parse and
#: match), so a first hover waits for at most about a second.
MAX_MATCH_BYTES = 4 * 1024 * 1024
#: The pass whose snapshot holds the module as priority fusion left it.
PRIORITY_FUSION_PASS = "priority-fusion"

#: Step kinds (:attr:`FusionStep.kind`), the proto's ``oneof step`` names.
FUSION = "fusion"
INELIGIBLE = "producer_ineligible"
PRIORITY = "update_priority"


class FusionDumpError(UntrustedFileError):
    """A priority-fusion dump that could not be read or is not the text proto
    XLA writes; ``str()`` is ``"<path>: <reason>"``."""


@dataclass(frozen=True, slots=True)
class FusionStep:
    """One step of the priority-fusion log. ``kind`` is :data:`FUSION`,
    :data:`INELIGIBLE` or :data:`PRIORITY`; ``producer`` the producer's name;
    ``consumers`` the consumer fused into (:data:`FUSION`, one) or all the
    producer's consumers (:data:`PRIORITY`); ``fusion`` the resulting fusion's
    name (:data:`FUSION`); ``reason`` why it is ineligible (:data:`INELIGIBLE`);
    ``us_fused``/``us_unfused`` the cost model's estimates in microseconds
    (:data:`PRIORITY`; NaN when absent)."""

    kind: str
    producer: str
    consumers: tuple[str, ...] = ()
    fusion: str = ""
    reason: str = ""
    us_fused: float = math.nan
    us_unfused: float = math.nan


@dataclass(frozen=True, slots=True)
class ProducerDecisions:
    """What the log says of one producer, in the order of the log: ``reasons``
    it was found ineligible (each once), ``estimates`` (the last
    :data:`PRIORITY` step per set of consumers: ``(consumers, us_fused,
    us_unfused)``, microseconds), ``fused_into`` (``(consumer, fusion name)``
    per :data:`FUSION` step) and ``took`` (the producers fused into it, as the
    consumer or as the fusion it became: ``(producer, fusion name)``)."""

    name: str
    reasons: tuple[str, ...] = ()
    estimates: tuple[tuple[tuple[str, ...], float, float], ...] = ()
    fused_into: tuple[tuple[str, str], ...] = ()
    took: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class FusionDump:
    """A priority-fusion log read (:func:`read_fusion_dump`): its ``path`` and
    ``steps`` in order; ``problem``: why the file at ``path`` was not read
    (``"<path>: <reason>"``, :func:`fusion_dump_beside`), then no steps;
    ``module_before_fusion``: the HLO text of the module the names are of
    (``hlo_module_before_fusion``, "" when absent), for a matcher that
    follows them through XLA's renames to the after-optimizations module;
    ``renamed``: for the after-optimizations module it was read beside, the
    names of its instructions that had another name when priority fusion ran
    and that the log names (after-optimizations name -> the log's name,
    :func:`names_at_fusion`; empty until the analysis layer sets it)."""

    path: str
    steps: tuple[FusionStep, ...]
    problem: str = ""
    module_before_fusion: str = field(default="", repr=False)
    renamed: Mapping[str, str] = field(default_factory=dict, repr=False)

    def about(self, name: str) -> ProducerDecisions | None:
        """What the log says of the instruction ``name`` (a name of the module
        before fusion, matched exactly), None when it names it nowhere."""
        reasons: list[str] = []
        estimates: dict[tuple[str, ...], tuple[float, float]] = {}
        fused: list[tuple[str, str]] = []
        took: list[tuple[str, str]] = []
        for step in (self.steps[i] for i in self._by_name.get(name, ())):
            if step.producer == name:
                if step.kind == INELIGIBLE and step.reason not in reasons:
                    reasons.append(step.reason)
                elif step.kind == PRIORITY:
                    estimates.pop(step.consumers, None)
                    estimates[step.consumers] = (step.us_fused, step.us_unfused)
                elif step.kind == FUSION:
                    fused.append((step.consumers[0] if step.consumers else "", step.fusion))
            elif step.kind == FUSION and (name in step.consumers or step.fusion == name):
                took.append((step.producer, step.fusion))
        if not (reasons or estimates or fused or took):
            return None
        return ProducerDecisions(name, tuple(reasons),
                                 tuple((c, f, u) for c, (f, u) in estimates.items()),
                                 tuple(fused), tuple(took))

    @cached_property
    def _by_name(self) -> dict[str, list[int]]:
        """name -> the indices of the steps naming it as the producer, a consumer
        of a fusion step or the fusion made (one pass over the log, so a hover
        does not scan the log of a large module)."""
        index: dict[str, list[int]] = {}
        for i, step in enumerate(self.steps):
            names = {step.producer, step.fusion}
            if step.kind == FUSION:
                names.update(step.consumers)
            names.discard("")
            for name in names:
                index.setdefault(name, []).append(i)
        return index

    def fusions_made_at(self, consumer_base: str) -> set[str]:
        """The fusion names of the :data:`FUSION` steps whose consumer's name,
        without its last ``.N``, is ``consumer_base`` (``mul.7`` for ``mul.7.0``)."""
        return set(self._fusions_by_consumer_base.get(consumer_base, ()))

    @cached_property
    def _fusions_by_consumer_base(self) -> dict[str, set[str]]:
        index: dict[str, set[str]] = {}
        for step in self.steps:
            if step.kind == FUSION and step.consumers and step.fusion:
                index.setdefault(name_base(step.consumers[0]), set()).add(step.fusion)
        return index


def name_base(name: str) -> str:
    """``name`` without its last ``.N`` (``mul.7.1`` -> ``mul.7``; ``a`` -> ``a``):
    what stays when XLA clones an instruction and numbers the clone anew
    (xla/service/name_uniquer.cc)."""
    head, dot, tail = name.rpartition(".")
    return head if dot and head and tail.isdigit() else name


def fusion_dump_path(hlo_path: str) -> str | None:
    """Where XLA writes the priority-fusion log of the module of the HLO dump
    ``hlo_path`` (any stage): ``[ts.]module_NNNN.<name>.priority_fusion_dump.txt``
    in the same directory (xla/service/dump.cc ``DumpToFileInDirOrStdout`` with
    the module's file prefix); the file may not exist. None when the name is not
    an XLA dump name."""
    name = parse_dump_name(os.path.basename(hlo_path))
    if name is None or not name.module_name:
        return None
    prefix = f"{name.timestamp}." if name.timestamp else ""
    base = f"{prefix}module_{name.number:04d}.{name.module_name}.{FUSION_DUMP_SUFFIX}"
    return os.path.join(os.path.dirname(hlo_path), base)


def _float(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def _step(step: Message) -> FusionStep | None:
    """One ``fusion_steps`` entry as a FusionStep; None for a kind this reader
    does not know (a newer XLA's)."""
    for kind, body in step:
        if not isinstance(body, list):
            continue
        producer = _text(first(body, "producer_name", ""))
        if kind == FUSION:
            consumer = _text(first(body, "consumer_name", ""))
            return FusionStep(FUSION, producer, (consumer,),
                              fusion=_text(first(body, "fusion_name", "")))
        if kind == INELIGIBLE:
            return FusionStep(INELIGIBLE, producer, reason=_text(first(body, "reason", "")))
        if kind == PRIORITY:
            consumers = tuple(_text(c) for c in fields(body, "consumer_names"))
            return FusionStep(PRIORITY, producer, consumers,
                              us_fused=_float(first(body, "us_fused")),
                              us_unfused=_float(first(body, "us_unfused")))
    return None


def parse_fusion_dump(text: str, path: str = "") -> FusionDump:
    """The log in ``text`` (the file's content; ``path`` names it). Raises
    :class:`FusionDumpError` when it is not protobuf text format or holds no
    ``fusion_steps`` nor any other field of ``FusionProcessDumpProto``."""
    try:
        message = parse(text)
    except TextProtoError as exc:
        raise FusionDumpError(path, f"not a priority-fusion dump ({exc})") from None
    if message and not any(k in ("fusion_steps", "gpu_device_info", "hlo_module_before_fusion")
                           for k, _ in message):
        raise FusionDumpError(path, "not a priority-fusion dump (no fusion_steps)")
    steps = []
    for entry in fields(message, "fusion_steps"):
        if isinstance(entry, list) and (step := _step(entry)) is not None:
            steps.append(step)
    before = first(message, "hlo_module_before_fusion", "")
    return FusionDump(path, tuple(steps), module_before_fusion=_text(before))


def read_fusion_dump(path: str, limit: int = MAX_FUSION_DUMP_BYTES) -> FusionDump:
    """The priority-fusion log at ``path`` (:func:`parse_fusion_dump`), read as
    untrusted input (a regular file, at most ``limit`` bytes, UTF-8). Raises
    :class:`FusionDumpError` (an OSError) naming the file and the reason."""
    try:
        text = read_text(path, limit)
    except UntrustedFileError as exc:
        raise FusionDumpError(exc.path, exc.reason, exc.errno) from None
    return parse_fusion_dump(text, path)


def fusion_dump_for(hlo_path: str) -> FusionDump | None:
    """The priority-fusion log beside the HLO dump ``hlo_path``
    (:func:`fusion_dump_path`), None when there is none. Raises
    :class:`FusionDumpError` for one that cannot be read or parsed."""
    path = fusion_dump_path(hlo_path)
    if path is None:
        return None
    try:
        return read_fusion_dump(path)
    except FusionDumpError as exc:
        if exc.missing:
            return None
        raise


def fusion_dump_beside(hlo_path: str) -> FusionDump | None:
    """:func:`fusion_dump_for` that never raises: a log that cannot be read or
    parsed is a :class:`FusionDump` without steps whose ``problem`` says why
    (what hover shows). For the server's inputs (a thread)."""
    try:
        return fusion_dump_for(hlo_path)
    except FusionDumpError as exc:
        return FusionDump(exc.path, (), str(exc))


def fusion_snapshot(hlo_path: str) -> str | None:
    """The pass snapshot of the module of the HLO dump ``hlo_path`` taken right
    after XLA:GPU's priority fusion (``[ts.]module_NNNN.<name>.SSSS.<pipeline>.
    after_priority-fusion.before_<next>.txt``, written with
    ``--xla_dump_hlo_pass_re``; the first one when the pass ran more than once),
    None without one. Lists the directory."""
    name = parse_dump_name(os.path.basename(hlo_path))
    if name is None or not name.module_name:
        return None
    directory = os.path.dirname(hlo_path)
    try:
        entries = sorted(os.listdir(directory or "."))
    except OSError:
        return None
    marker = f".after_{PRIORITY_FUSION_PASS}."
    for entry in entries:
        other = parse_dump_name(entry) if marker in entry else None
        if other is not None and other.stage.startswith("pass:") and \
                (other.number, other.module_name, other.timestamp) == \
                (name.number, name.module_name, name.timestamp):
            return os.path.join(directory, entry)
    return None


def names_at_fusion(hlo_path: str, dump: FusionDump, limit: int = MAX_MATCH_BYTES,
                    parsed: HloModule | None = None) -> dict[str, str]:
    """The log's names of instructions of the after-optimizations file
    ``hlo_path`` that XLA renamed after priority fusion (``rename_fusions``,
    ``multi_output_fusion`` merging fusions, clones): after-optimizations name
    -> the name the log gives it, for those the log names
    (:meth:`FusionDump.about`) under another name. Found by the rename-robust
    matcher (:func:`hlo_lsp.model.matching.match_modules`) between the module
    as priority fusion left it (its pass snapshot, :func:`fusion_snapshot`;
    without one, the log's module before fusion, whose unfused instructions
    keep their names) and the after-optimizations module. {} for another
    stage, without either module, when a file cannot be read, or when the two
    texts together exceed ``limit`` bytes (the cost bound). ``parsed``: the
    file's module when the caller has parsed it (not read and parsed again).
    Blocks: reads, parses and matches (about 0.3 s per MB)."""
    name = parse_dump_name(os.path.basename(hlo_path))
    if name is None or name.stage != AFTER_OPTIMIZATIONS or dump.problem:
        return {}
    snapshot = fusion_snapshot(hlo_path)
    try:
        after = parsed.text if parsed is not None else read_text(hlo_path, limit)
        before = read_text(snapshot, limit) if snapshot else dump.module_before_fusion
    except UntrustedFileError:
        return {}
    if not before or len(before) + len(after) > limit:
        return {}
    pairs = match_modules(parse_hlo(before), parsed if parsed is not None else parse_hlo(after))
    return {new: old for old, new in pairs.items()
            if old != new and dump.about(old) is not None}


def with_renamed(hlo_path: str, dump: FusionDump | None,
                 parsed: HloModule | None = None) -> FusionDump | None:
    """``dump`` (the log beside the dump file ``hlo_path``, ``parsed`` its
    module when the caller has it) with ``renamed`` set by
    :func:`names_at_fusion` (blocks as it does); None and a log that could not
    be read come back as they are. What ``hlo-lsp blame`` reads; the
    server keeps the same per version of the two files
    (:meth:`hlo_lsp.analysis.inputs.DumpInputs.fusion_dump`)."""
    if dump is None or dump.problem:
        return dump
    return dataclasses.replace(dump, renamed=names_at_fusion(hlo_path, dump,
                                                             parsed=parsed))


__all__ = ["FUSION", "FUSION_DUMP_SUFFIX", "FusionDump", "FusionDumpError", "FusionStep",
           "INELIGIBLE", "MAX_FUSION_DUMP_BYTES", "MAX_MATCH_BYTES", "PRIORITY",
           "PRIORITY_FUSION_PASS", "ProducerDecisions", "fusion_dump_beside", "fusion_dump_for",
           "fusion_dump_path", "fusion_snapshot", "name_base", "names_at_fusion",
           "parse_fusion_dump", "read_fusion_dump", "with_renamed"]
