"""Kernel summary: what a compiled module will run. The one answer to "what runs
in this module" for ``hlo-lsp summary``/``diff``, the ENTRY code lens, the
dump comparison and the recompile report (:mod:`hlo_lsp.dump.recompile`).

Walks the ENTRY computation and the computations that control flow executes
(``while`` body and condition, ``conditional`` branches, ``call``, and the
computation an ``async-start`` wraps) but not the computations that are part
of one kernel (fusion ``calls``, ``to_apply`` of reduce/sort/scatter/
all-reduce, custom-call ``called_computations``). Each instruction found is a
:class:`Kernel`:

- ``fusion``: HLO kind (``kind=kLoop|kInput|kOutput|kCustom``) and backend kind
  (GPU ``fusion_backend_config.kind`` such as ``__triton_gemm`` or
  ``__cudnn$fusion``, CPU ``fusion_config.kind`` such as ``__ynn_fusion``;
  :func:`hlo_lsp.model.kernels.fusion_backend_kind`);
- ``custom-call``: target and library (:func:`hlo_lsp.model.backend_config.target_library`);
- ``collective``: all-reduce, all-gather, reduce-scatter, all-to-all,
  collective-permute, collective-broadcast, send/recv (``-start`` forms counted,
  ``-done`` not);
- ``op``: any other instruction that does work outside a fusion (a bare
  ``dot``, ``copy``, ``reduce``...); bookkeeping instructions (parameter,
  constant, tuple, get-tuple-element, bitcast, control flow itself, ``*-done``)
  are not kernels.

Each kernel carries the Python source of its metadata
(:func:`hlo_lsp.model.frames.python_stack`). Facts: xla/hlo/ir/hlo_opcode.h,
xla/service/gpu/backend_configs.proto, docs in :mod:`hlo_lsp.model.kernels`.
Plain data and pure queries; the reports are :mod:`hlo_lsp.features.summary`
and :mod:`hlo_lsp.features.compare`.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TypeVar

from hlo_lsp.model.accelerators import Accelerator
from hlo_lsp.model.backend_config import target_library
from hlo_lsp.model.collectives import collective_bytes
from hlo_lsp.model.cost import Cost, cost_model, custom_call_estimate
from hlo_lsp.model.roofline import kernel_precision, roofline_time
from hlo_lsp.model.units import format_count, format_seconds
from hlo_lsp.model.kernels import (BACKEND_KIND_LABELS, HLO_KIND_LABELS, custom_call_target,
                                   fusion_backend_kind, hlo_fusion_kind)
from hlo_lsp.model.frames import python_stack, short_frame
from hlo_lsp.model.hlo import Computation, HloModule, Instruction, SourceFrame
from hlo_lsp.model.memo import short_text_cache
from hlo_lsp.model.opcodes import COMPUTE
from hlo_lsp.model.precision import kernel_notes

_T = TypeVar("_T")

CATEGORIES = ("fusion", "custom-call", "collective", "op")

#: Collective opcodes counted as kernels (``-done`` halves are not counted).
COLLECTIVE_OPCODES = frozenset("""
all-gather all-gather-start all-reduce all-reduce-start all-to-all ragged-all-to-all
collective-broadcast collective-permute collective-permute-start collective-reduce
reduce-scatter send recv
""".split())

#: Instructions that launch nothing by themselves.
NOT_KERNELS = frozenset("""
parameter constant tuple get-tuple-element bitcast after-all add-dependency opt-barrier
domain partition-id replica-id while conditional call async-start async-update async-done
all-gather-done all-reduce-done collective-permute-done copy-done send-done recv-done
get-dimension-size
""".split())

_CONTROL_FLOW_ATTRS = {"body", "condition", "true_computation", "false_computation",
                       "branch_computations"}
MAX_DEPTH = 64


@dataclass(slots=True)
class Kernel:
    """One thing that runs.

    ``category`` is one of :data:`CATEGORIES`; ``computation`` the computation
    holding the instruction and ``context`` the control-flow path to it (e.g.
    ``["while %while.1 body"]``, empty in ENTRY); ``offset`` the instruction's
    start offset in the text. Fusions fill ``hlo_kind``, ``backend_kind`` (with
    ``backend_kind_inferred``), ``called`` and ``contains`` (compute opcodes in
    the fused computation); custom-calls fill ``target`` and ``library``.
    ``label`` is a short human name ("Triton GEMM fusion", "cuBLASLt FP8 call",
    "loop fusion", "all-reduce", "dot").
    """

    category: str
    name: str
    opcode: str
    computation: str
    context: list[str]
    offset: int
    label: str
    shape: str = ""
    hlo_kind: str = ""
    backend_kind: str = ""
    backend_kind_inferred: bool = False
    called: str = ""
    contains: list[str] = field(default_factory=list)
    target: str = ""
    library: str = ""
    op_name: str = ""
    source: list[SourceFrame] = field(default_factory=list)
    #: plain-text facts about the kernel: what its matrix work computes in when
    #: narrower inputs were widened before it, its split-K, the split-K GEMM it
    #: sums (:func:`hlo_lsp.model.precision.kernel_notes`)
    notes: list[str] = field(default_factory=list)

    @property
    def fusion_kind(self) -> str:
        """A fusion's kinds in one word: its HLO kind, then ``:`` and the backend
        kind when it has one (``kLoop``, ``kCustom:__triton_gemm``,
        ``kCustom:__ynn_fusion``); ``?`` for a fusion without ``kind=``; "" for
        other kernels. The keys of the recompile report (docs/protocol.md)."""
        if self.category != "fusion":
            return ""
        kind = self.hlo_kind or "?"
        return f"{kind}:{self.backend_kind}" if self.backend_kind else kind

    @property
    def where(self) -> str:
        """``file.py:LINE`` of the innermost Python frame, "" when unknown."""
        return short_frame(self.source[0]) if self.source else ""

    def to_dict(self) -> dict:
        """JSON-ready form (frames as ``{file, function, line, column}``)."""
        out = {"category": self.category, "name": self.name, "opcode": self.opcode,
               "label": self.label, "computation": self.computation,
               "context": list(self.context), "offset": self.offset, "shape": self.shape}
        if self.category == "fusion":
            out.update(hlo_kind=self.hlo_kind, backend_kind=self.backend_kind,
                       backend_kind_inferred=self.backend_kind_inferred,
                       called=self.called, contains=list(self.contains))
        if self.category == "custom-call":
            out.update(target=self.target, library=self.library)
        out["op_name"] = self.op_name
        out["notes"] = list(self.notes)
        out["source"] = [{"file": f.file, "function": f.function, "line": f.line,
                          "column": f.column} for f in self.source]
        return out


@dataclass(slots=True)
class KernelSummary:
    """The kernels of a module in execution-walk order (text order within a
    computation, callees where their caller is); ``module`` and ``entry`` are
    the module and ENTRY computation names ("" when absent)."""

    module: str
    entry: str
    kernels: list[Kernel]
    #: values computed from the kernels once (:meth:`remembered`)
    memo: dict = field(default_factory=dict, repr=False, compare=False)

    def remembered(self, key: Hashable, make: Callable[[], _T]) -> _T:
        """``make()``, computed once per summary and kept under ``key`` in
        :attr:`memo` (:func:`repeat_scope`, the kernel groups of a comparison).
        Two threads may both make a missing value, and the first one kept is
        the one every caller gets: ``make`` must be pure."""
        try:
            return self.memo[key]
        except KeyError:
            return self.memo.setdefault(key, make())

    def of(self, category: str) -> list[Kernel]:
        """The kernels of one category."""
        return [k for k in self.kernels if k.category == category]

    def fusion_kinds(self) -> dict[str, int]:
        """Fusions per :attr:`Kernel.fusion_kind` (``{"kLoop": 37,
        "kCustom:__ynn_fusion": 6}``), in walk order of first appearance."""
        return dict(Counter(k.fusion_kind for k in self.kernels if k.category == "fusion"))

    def counts(self) -> dict:
        """Counts per category and breakdowns::

            {"fusion": 3, "custom-call": 0, "collective": 0, "op": 0,
             "fusion_by_hlo_kind": {"kLoop": 1, ...},
             "fusion_by_backend_kind": {"__triton_gemm": 1},
             "custom_call_by_target": {...}, "custom_call_by_library": {...},
             "collective_by_opcode": {...}, "op_by_opcode": {...}}

        Counted once per summary (:meth:`remembered`: the headline, the report
        and a comparison each ask); each call returns its own copy.
        """
        counted = self.remembered("counts", self._counts)
        return {k: dict(v) if isinstance(v, dict) else v for k, v in counted.items()}

    def _counts(self) -> dict:
        out: dict = {c: 0 for c in CATEGORIES}
        hlo = Counter()
        backend = Counter()
        targets = Counter()
        libraries = Counter()
        collectives = Counter()
        ops = Counter()
        for k in self.kernels:
            out[k.category] += 1
            if k.category == "fusion":
                hlo[k.hlo_kind or "?"] += 1
                if k.backend_kind:
                    backend[k.backend_kind] += 1
            elif k.category == "custom-call":
                targets[k.target] += 1
                libraries[k.library] += 1
            elif k.category == "collective":
                collectives[k.opcode] += 1
            else:
                ops[k.opcode] += 1
        out.update(fusion_by_hlo_kind=dict(hlo), fusion_by_backend_kind=dict(backend),
                   custom_call_by_target=dict(targets),
                   custom_call_by_library=dict(libraries),
                   collective_by_opcode=dict(collectives), op_by_opcode=dict(ops))
        return out

    def headline(self) -> str:
        """One line, as in the ENTRY code lens:
        ``3 fusions (1 Triton GEMM) · 1 cuBLASLt FP8 call · 0 collectives``."""
        c = self.counts()
        fusions = _plural(c["fusion"], "fusion")
        by_label = Counter()
        for kind, n in c["fusion_by_backend_kind"].items():
            by_label[BACKEND_KIND_LABELS.get(kind, kind)] += n
        if by_label:
            fusions += " (" + ", ".join(f"{n} {label}" for label, n in by_label.items()) + ")"
        parts = [fusions]
        if c["custom_call_by_library"]:
            parts.extend(_plural(n, f"{lib} call")
                         for lib, n in c["custom_call_by_library"].items())
        else:
            parts.append("0 custom-calls")
        parts.append(_plural(c["collective"], "collective"))
        return " · ".join(parts)

    def to_dict(self) -> dict:
        """JSON-ready form: module, entry, headline, counts, kernels."""
        return {"module": self.module, "entry": self.entry, "headline": self.headline(),
                "counts": self.counts(), "kernels": [k.to_dict() for k in self.kernels]}


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def kernel_summary(module: HloModule) -> KernelSummary:
    """Walk ``module`` from its ENTRY (see module docstring). Never raises on a
    partial module: unknown callees are skipped, recursion is cut at
    :data:`MAX_DEPTH` and on cycles."""
    entry = module.entry
    kernels: list[Kernel] = []
    if entry is not None:
        _walk(module, entry, [], kernels, {entry.name.name})
    return KernelSummary(module.name.name if module.name else "",
                         entry.name.name if entry else "", kernels)


def _walk(module: HloModule, comp: Computation, context: list[str], out: list[Kernel],
          active: set[str]) -> None:
    for ins in comp.instructions:
        kernel = classify(module, ins, comp, context)
        if kernel is not None:
            out.append(kernel)
        if ins.opcode in ("fusion", "custom-call") or len(context) >= MAX_DEPTH:
            continue
        for cref in ins.called:
            attr = cref.attr
            if attr in _CONTROL_FLOW_ATTRS or (ins.opcode == "call") or \
                    (ins.opcode == "async-start" and attr == "calls"):
                callee = module.resolve(cref.ref.name, cref.ref.start)
                if callee is None or callee.name.name in active:
                    continue
                active.add(callee.name.name)
                _walk(module, callee, context + [_describe(ins, cref.attr, callee)], out,
                      active)
                active.discard(callee.name.name)


def _describe(ins: Instruction, attr: str, callee: Computation) -> str:
    if ins.opcode == "while":
        return f"while %{ins.name.name} {attr}"
    if ins.opcode == "conditional":
        branches = [c.ref.name for c in ins.called]
        if attr == "true_computation":
            return f"conditional %{ins.name.name} true branch"
        if attr == "false_computation":
            return f"conditional %{ins.name.name} false branch"
        return (f"conditional %{ins.name.name} branch "
                f"{branches.index(callee.name.name)}")
    return f"{ins.opcode} %{ins.name.name}"


def classify(module: HloModule, ins: Instruction, comp: Computation,
             context: list[str] | None = None) -> Kernel | None:
    """The :class:`Kernel` for one instruction, None for bookkeeping ones."""
    opcode = ins.opcode
    if opcode in NOT_KERNELS:
        return None
    meta = ins.metadata
    op_name = meta.get("op_name", "")
    kernel = Kernel("op", ins.name.name, opcode, comp.name.name, list(context or []),
                    ins.start, opcode, ins.shape.text if ins.shape is not None else "",
                    op_name=op_name if isinstance(op_name, str) else str(op_name),
                    source=python_stack(module, ins))
    if opcode == "fusion":
        kernel.category = "fusion"
        kernel.hlo_kind = hlo_fusion_kind(ins)
        kernel.backend_kind, kernel.backend_kind_inferred = fusion_backend_kind(ins)
        called = next((c.ref.name for c in ins.called if c.attr == "calls"), "")
        kernel.called = called
        kernel.contains = _compute_ops(module, called)
        if kernel.backend_kind:
            kernel.label = BACKEND_KIND_LABELS.get(kernel.backend_kind,
                                                   kernel.backend_kind) + " fusion"
        else:
            kernel.label = HLO_KIND_LABELS.get(kernel.hlo_kind, kernel.hlo_kind or "?") + \
                " fusion"
    elif opcode == "custom-call":
        kernel.category = "custom-call"
        kernel.target = custom_call_target(ins) or ""
        kernel.library = target_library(kernel.target)
        kernel.label = f"{kernel.library} call"
    elif opcode in COLLECTIVE_OPCODES:
        kernel.category = "collective"
    kernel.notes = kernel_notes(module, ins)
    return kernel


def _compute_ops(module: HloModule, name: str, depth: int = 0) -> list[str]:
    """Compute-family opcodes (dot, convolution, reduce...) inside a fused
    computation, through nested fusions, in first-seen order."""
    comp = module.by_name.get(name)
    if comp is None or depth > 8:
        return []
    seen: dict[str, None] = {}
    for ins in comp.instructions:
        if ins.opcode in COMPUTE:
            seen.setdefault(ins.opcode)
        elif ins.opcode == "fusion":
            for c in ins.called:
                for op in _compute_ops(module, c.ref.name, depth + 1):
                    seen.setdefault(op)
    return list(seen)


#: Attributes that do not change what a kernel computes (names, source,
#: scheduling and placement hints); a kernel's structure ignores them.
_NOT_STRUCTURE = frozenset({"metadata", "control-predecessors", "backend_config", "sharding",
                            "frontend_attributes", "statistics", "origin"})


def structure_key(module: HloModule, ins: Instruction, memo: dict | None = None) -> str:
    """A digest of what ``ins`` computes, equal for two kernels that differ
    only in names, metadata or placement: opcode, result and operand shapes,
    attributes (backend_config, sharding, metadata left out), and for each
    computation it calls (a fused computation, a reducer) the same digest of
    every instruction in it, operands as positions. ``memo`` keeps the digests
    already made; by default the module's own, so that each instruction and
    computation of a module is digested once whoever asks (the summary's
    ranking, its folding, a comparison)."""
    if memo is None:
        memo = _structure_keys(module)
    # an instruction's digest is keyed by its identity: the module keeps the
    # instruction alive as long as its memo
    known = memo.get(id(ins))
    if known is not None:
        return known
    comp = ins.computation
    scope = comp.by_name if comp is not None else {}
    operands = []
    for op in ins.operands:
        defined = scope.get(op.ref.name)
        shape = defined.shape if defined is not None else op.shape
        operands.append(shape.text if shape is not None else "?")
    memo[id(ins)] = key = _digest(_instruction_text(module, ins, operands, memo, set()))
    return key


def _structure_keys(module: HloModule) -> dict:
    """The module's own memo of :func:`structure_key` (freed with the module)."""
    return module.derived("structure_keys", lambda _: {})


def _instruction_text(module: HloModule, ins: Instruction, operands: list[str],
                      memo: dict, active: set[str]) -> str:
    calling = {c.attr for c in ins.called}
    attrs = []
    for a in ins.attributes:
        if a.name in _NOT_STRUCTURE:
            continue
        if a.name in calling:
            value = ",".join(_computation_key(module, c.ref.name, memo, active)
                             for c in ins.called if c.attr == a.name)
        else:
            value = a.value
        attrs.append(f"{a.name}={value}")
    shape = ins.shape.text if ins.shape is not None else "?"
    return f"{shape} {ins.opcode}({', '.join(operands)}) {ins.literal or ''} {' '.join(attrs)}"


def _computation_key(module: HloModule, name: str, memo: dict, active: set[str]) -> str:
    """The digest of computation ``name``; ``memo`` holds finished digests only
    (it may be shared by threads), ``active`` the computations this walk is
    digesting (a call back into one of them is a cycle)."""
    known = memo.get(name)
    if known is not None:
        return known
    if name in active:
        return "cycle"
    comp = module.by_name.get(name)
    if comp is None:
        return "?"
    active.add(name)
    position = {ins.name.name: i for i, ins in enumerate(comp.instructions)}
    lines = []
    for ins in comp.instructions:
        operands = [f"#{position.get(op.ref.name, '?')}" for op in ins.operands]
        lines.append(_instruction_text(module, ins, operands, memo, active))
    active.discard(name)
    memo[name] = key = _digest("\n".join(lines))
    return key


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass(slots=True)
class KernelGroup:
    """Kernels of one structure (:func:`structure_key`): ``kernels`` in walk
    order (the first one stands for the group), their summed ``cost``
    (:class:`hlo_lsp.model.cost.Cost`: FLOPs, transcendentals, bytes) and
    roofline ``seconds`` on the device, the ``share`` of the estimated time of
    every kernel of the module (0..1), and the first kernel's ``bound``
    ("compute", "memory"; "unknown" for a custom-call nobody can cost)."""

    key: str
    kernels: list[Kernel]
    cost: Cost
    seconds: float
    share: float = 0.0
    bound: str = ""

    def to_dict(self) -> dict:
        """JSON-ready: name and label of the first kernel, count, seconds,
        share, bound, FLOPs, transcendentals, bytes accessed, the names."""
        first = self.kernels[0]
        return {"name": first.name, "label": first.label, "category": first.category,
                "count": len(self.kernels), "seconds": self.seconds, "share": self.share,
                "bound": self.bound, "flops": self.cost.known_flops,
                "transcendentals": self.cost.transcendentals,
                "bytes_accessed": self.cost.known_bytes,
                "names": [k.name for k in self.kernels], "structure": self.key}


#: What one kernel costs (:func:`kernel_costs`): its instruction, its
#: :class:`hlo_lsp.model.cost.Cost`, its roofline time on the device in
#: seconds, and what bounds it ("compute", "memory"; "unknown" for a
#: custom-call nobody can cost, which counts zero).
KernelCost = tuple[Instruction, Cost, float, str]


def kernel_costs(module: HloModule, summary: KernelSummary,
                 device: Accelerator) -> list[KernelCost | None]:
    """What each kernel of ``summary`` (of ``module``) costs, in the summary's
    order: its instruction, its :class:`hlo_lsp.model.cost.Cost` (FLOPs,
    transcendentals, bytes accessed), its roofline time on ``device`` in seconds
    (:func:`hlo_lsp.model.roofline.roofline`) and what bounds it; None for a kernel
    whose instruction is not in ``module``. A custom-call XLA cannot cost gets
    :func:`hlo_lsp.model.cost.custom_call_estimate`, else zero ("unknown").

    Kept in the summary: the costs once (:func:`cost_kernels`), the times once
    per device (by its table key). The summary's ranking and a comparison of
    two dumps each read every kernel: one list, not a lookup per kernel."""
    def timed() -> list[KernelCost | None]:
        out: list[KernelCost | None] = []
        for counted in _counted_kernels(module, summary):
            if counted is None:
                out.append(None)
                continue
            ins, cost, unknown, precision = counted
            seconds, bound = roofline_time(cost, device, precision)
            out.append((ins, cost, seconds, unknown or bound))
        return out
    return summary.remembered(("kernel costs", device.key), timed)


def cost_kernels(module: HloModule, summary: KernelSummary) -> int:
    """Count the cost of every kernel of ``summary`` (of ``module``) now, for
    :func:`kernel_costs` to keep: what a server does once, before the requests
    that rank or compare kernels on their devices run. Returns the number of
    kernels costed."""
    return sum(c is not None for c in _counted_kernels(module, summary))


def _counted_kernels(module: HloModule, summary: KernelSummary
                     ) -> list[tuple[Instruction, Cost, str, str] | None]:
    """Per kernel of ``summary``: ``(instruction, cost, "unknown" or "",
    precision key)``, None when its instruction is not in ``module``; kept in
    the summary."""
    def count() -> list[tuple[Instruction, Cost, str, str] | None]:
        model = cost_model(module)
        computations = module.by_name
        out: list[tuple[Instruction, Cost, str, str] | None] = []
        for kernel in summary.kernels:
            comp = computations.get(kernel.computation)
            ins = comp.by_name.get(kernel.name) if comp is not None else None
            if ins is None:
                out.append(None)
                continue
            cost = model.instruction(ins)
            unknown = ""
            if cost.unknown and ins.opcode == "custom-call":
                cost = custom_call_estimate(module, ins) or Cost()
                unknown = "" if cost.flops or cost.bytes_accessed else "unknown"
            out.append((ins, cost, unknown, kernel_precision(module, ins)))
        return out
    return summary.remembered("kernel counts", count)


def ranked_kernels(module: HloModule, summary: KernelSummary, device: Accelerator,
                   by_op_name: bool = False) -> list[KernelGroup]:
    """The kernels of ``summary`` grouped by structure and ranked by their
    estimated time on ``device`` (roofline, :func:`hlo_lsp.model.roofline.roofline`),
    slowest first. A kernel in a loop body counts once, as in XLA's cost
    analysis. Custom-calls: the estimate of
    :func:`hlo_lsp.model.cost.custom_call_estimate`, else zero ("unknown").
    ``by_op_name``: kernels of one structure are one group only when their
    ``op_name`` is the same up to the index of the repeated scope
    (:func:`repeat_scope`: ``layer_3`` and ``layer_7`` are the same pattern),
    so forward and backward kernels of equal shapes stay apart."""
    groups: dict[str, KernelGroup] = {}
    costs: dict[str, list[Cost]] = {}   # per group, its kernels' costs in order
    scope = repeat_scope(summary) if by_op_name else None
    keys = _structure_keys(module)
    for kernel, found in zip(summary.kernels, kernel_costs(module, summary, device)):
        if found is None:
            continue
        ins, cost, seconds, bound = found
        key = structure_key(module, ins, keys)
        if by_op_name:
            key += "|" + op_name_pattern(kernel.op_name, scope)
        group = groups.get(key)
        if group is None:
            group = groups[key] = KernelGroup(key, [], Cost(), 0.0, bound=bound)
            costs[key] = []
        group.kernels.append(kernel)
        costs[key].append(cost)
        group.seconds += seconds
    for key, group in groups.items():
        group.cost = Cost.total(costs[key])
    ranked = sorted(groups.values(), key=lambda g: -g.seconds)
    total = sum(g.seconds for g in ranked)
    for g in ranked:
        g.share = g.seconds / total if total else 0.0
    return ranked


# --------------------------------------------------------------------------
# Repeated structure: the layers of an unrolled loop
# --------------------------------------------------------------------------

#: A name with an index in an ``op_name`` path: ``layer_12``, ``block3``,
#: ``layers.7`` (the prefix, then the digits).
_INDEXED = re.compile(r"(?<![\w.])([A-Za-z][A-Za-z_]*?[_.]?)(\d+)(?![\w.])")

#: Fewest distinct indices of a scope for it to be a repeated structure.
MIN_REPEATS = 2


def repeat_scope(summary: KernelSummary) -> str | None:
    """The name prefix of the repeated scope of the kernels' ``op_name``s
    (``"layer_"`` when the op_names hold ``layer_0`` ... ``layer_47``, as an
    unrolled Python loop under ``jax.named_scope(f"layer_{i}")`` writes them):
    the prefix with the most distinct indices, at least :data:`MIN_REPEATS`;
    ties go to the one more kernels carry. None when no op_name has one.
    Computed once per summary (:meth:`KernelSummary.remembered`)."""
    return summary.remembered("repeat_scope", lambda: _repeat_scope(summary.kernels))


def _repeat_scope(kernels: list[Kernel]) -> str | None:
    indices: dict[str, set[int]] = {}
    carriers: Counter = Counter()   # prefix -> kernels whose op_name has it
    # each distinct op_name is read once (in order of first appearance), for
    # all the kernels that carry it
    for op_name, n in Counter(k.op_name for k in kernels).items():
        seen = set()
        for m in _INDEXED.finditer(op_name):
            indices.setdefault(m.group(1), set()).add(int(m.group(2)))
            seen.add(m.group(1))
        for prefix in seen:
            carriers[prefix] += n
    best = max(indices, key=lambda p: (len(indices[p]), carriers[p]), default=None)
    return best if best is not None and len(indices[best]) >= MIN_REPEATS else None


def scope_index(op_name: str, scope: str | None) -> int | None:
    """The index of ``scope`` in ``op_name`` (``7`` for ``layer_`` in
    ``jit(f)/jvp(layer_7)/dot_general``), the first when several; None when
    absent. Remembered as :func:`op_name_pattern` is."""
    if not scope:
        return None
    return _scope_index(op_name, scope)


#: Longest op_name whose pattern and scope index are remembered.
PATTERN_CACHE_CHARS = 1000


@short_text_cache(maxsize=1 << 14, max_chars=PATTERN_CACHE_CHARS)
def _scope_index(op_name: str, scope: str) -> int | None:
    for m in _INDEXED.finditer(op_name):
        if m.group(1) == scope:
            return int(m.group(2))
    return None


def op_name_pattern(op_name: str, scope: str | None, index: str = "{i}") -> str:
    """``op_name`` with the index of ``scope`` replaced by ``index``
    (``jit(f)/transpose(jvp(layer_{i}))/dot_general``); unchanged without a scope.
    Remembered for the last 16,384 op_names of up to :data:`PATTERN_CACHE_CHARS`
    characters: the summary, its folding and a comparison ask for every
    kernel's, and a dump repeats them (a longer one is not kept: the cache would
    hold hostile metadata of megabytes)."""
    if not scope:
        return op_name
    return _op_name_pattern(op_name, scope, index)


@short_text_cache(maxsize=1 << 14, max_chars=PATTERN_CACHE_CHARS)
def _op_name_pattern(op_name: str, scope: str, index: str) -> str:
    return _INDEXED.sub(lambda m: m.group(1) + index if m.group(1) == scope else m.group(0),
                        op_name)


_JIT_HEAD = re.compile(r"^p?jit\([^/]*\)/")


def short_op_name(op_name: str, limit: int = 80) -> str:
    """``op_name`` without its ``jit(fn)/`` head (the module's name says it),
    cut at the front to ``limit`` characters (``…`` first): what tells forward
    (``jvp(layer_0)/dot_general``) and backward
    (``transpose(jvp(layer_0))/dot_general``) instructions of one Python line
    apart. "" for an op_name that is only the head."""
    short = _JIT_HEAD.sub("", op_name, count=1)
    if len(short) > limit:
        short = "…" + short[-(limit - 1):]
    return short


def index_ranges(indices) -> str:
    """``0..47`` for a run, ``0..3,8,10..11`` otherwise (sorted, distinct)."""
    values = sorted(set(indices))
    parts: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        parts.append(str(values[i]) if i == j else f"{values[i]}..{values[j]}")
        i = j + 1
    return ",".join(parts)


@dataclass(slots=True)
class RepeatedGroup:
    """Kernels that run once per repeat of a structure.

    For the layers of an unrolled loop (``kind`` "scope"): ``name`` is the
    scope with its indices (``layer_{0..47}``), ``count`` the number of
    distinct indices, ``per_repeat`` the most common number of kernels of one
    repeat and ``regular`` how many repeats run that many, ``identical`` how
    many run the very same kernels (structures and op_name patterns) as the
    most common repeat (XLA may fuse across layer boundaries, so the first
    and last layers, or every layer, may differ in a few kernels). For a loop body or
    a branch (``kind`` "control flow"): ``name`` its context
    (``while %while.3 body``), ``count`` 1 (a body's kernels are listed once,
    as XLA's cost analysis counts them; ``trip_count`` the while's
    ``known_trip_count`` when its backend_config has one). ``kernels`` every kernel of the
    group, ``cost`` their summed cost, ``seconds`` their roofline time on the
    device, ``share`` of the module's (0..1), ``rows`` the group's kernels
    folded by structure and op_name pattern, slowest first."""

    kind: str
    name: str
    count: int
    kernels: list[Kernel]
    cost: Cost
    seconds: float
    share: float
    rows: list[KernelGroup]
    identical: int = 1
    per_repeat: int = 0
    regular: int = 1
    trip_count: int | None = None

    def to_dict(self, rows: int | None = None) -> dict:
        """JSON-ready: kind, name, count, identical, per_repeat, regular, kernels
        (count), seconds, share, FLOPs, transcendentals, bytes accessed and
        the first ``rows`` rows (all when None)."""
        return {"kind": self.kind, "name": self.name, "count": self.count,
                "identical": self.identical, "per_repeat": self.per_repeat,
                "regular": self.regular, "trip_count": self.trip_count,
                "kernels": len(self.kernels), "seconds": self.seconds, "share": self.share,
                "flops": self.cost.known_flops, "transcendentals": self.cost.transcendentals,
                "bytes_accessed": self.cost.known_bytes,
                "rows": [r.to_dict() for r in self.rows[:rows]]}


@dataclass(slots=True)
class CollectiveRow:
    """Collectives of one structure and op_name pattern: ``group`` (their
    kernels, cost and time), ``sent`` the bytes one device sends over all of
    them (:func:`hlo_lsp.model.collectives.collective_bytes`; None when a size
    or a group size is unknown), ``devices`` per group (None when unknown)."""

    group: KernelGroup
    sent: int | None
    devices: int | None

    def to_dict(self) -> dict:
        """JSON-ready: the group's fields, ``bytes_sent`` per device, ``devices``."""
        return {**self.group.to_dict(), "bytes_sent": self.sent, "devices": self.devices}


@dataclass(slots=True)
class FoldedSummary:
    """The summary of a module that fits a screen (:func:`fold_summary`):
    ``totals`` the ENTRY computation's cost as XLA's cost analysis counts it
    (:func:`hlo_lsp.model.cost.module_cost`), ``seconds`` the summed roofline
    time of every kernel on ``device``, ``groups`` the kernels folded by
    structure and op_name pattern, slowest first (:func:`ranked_kernels`),
    ``repeats`` the repeated layers first, then loop bodies and branches,
    ``collectives`` the collectives folded the same way, most bytes first."""

    summary: KernelSummary
    device: Accelerator
    totals: Cost
    seconds: float
    groups: list[KernelGroup]
    repeats: list[RepeatedGroup]
    collectives: list[CollectiveRow]
    scope: str | None = None

    def to_dict(self, top: int | None = None) -> dict:
        """JSON-ready: device, totals, seconds, top (the first ``top`` groups,
        all when None), repeats, collectives."""
        return {"device": self.device.key,
                "totals": {"flops": self.totals.flops,
                           "transcendentals": self.totals.transcendentals,
                           "bytes_accessed": self.totals.bytes_accessed},
                "seconds": self.seconds, "top": [g.to_dict() for g in self.groups[:top]],
                "repeats": [r.to_dict(top) for r in self.repeats],
                "collectives": [c.to_dict() for c in self.collectives]}


def fold_summary(module: HloModule, summary: KernelSummary,
                 device: Accelerator) -> FoldedSummary:
    """Fold the kernels of ``summary`` (of ``module``) for a short report:
    kernels of one structure (:func:`structure_key`) and one op_name pattern
    are one row with a count; the layers of an unrolled loop (the indexed
    scope of :func:`repeat_scope`, e.g. ``layer_{0..47}``) one group with its
    count; each while body or conditional branch one group; collectives with
    the bytes each device sends. Times are roofline seconds on ``device``."""
    model = cost_model(module)
    groups = ranked_kernels(module, summary, device, by_op_name=True)
    total_seconds = sum(g.seconds for g in groups)
    scope = repeat_scope(summary)
    group_of = {id(k): g for g in groups for k in g.kernels}
    repeats: list[RepeatedGroup] = []
    if scope is not None:
        per_index: dict[int, list[Kernel]] = {}
        for k in summary.kernels:
            i = scope_index(k.op_name, scope)
            if i is not None:
                per_index.setdefault(i, []).append(k)
        if len(per_index) >= MIN_REPEATS:
            repeats.append(_repeated(f"{scope}{{{index_ranges(per_index)}}}", "scope",
                                     per_index, group_of, total_seconds))
    bodies: dict[str, list[Kernel]] = {}
    for k in summary.kernels:
        if k.context:
            bodies.setdefault(k.context[0], []).append(k)
    for name, ks in bodies.items():
        group = _repeated(name, "control flow", {0: ks}, group_of, total_seconds)
        group.trip_count = _trip_count(module, name)
        repeats.append(group)
    collectives = []
    for g in groups:
        if g.kernels[0].category != "collective":
            continue
        sent, devices = 0, None
        for k in g.kernels:
            ins = module.by_name[k.computation].by_name[k.name]
            traffic = collective_bytes(ins, module)
            if traffic is None:
                sent = None
                break
            sent += traffic.sent
            devices = traffic.n
        collectives.append(CollectiveRow(g, sent, devices))
    collectives.sort(key=lambda c: -(c.sent or 0))
    return FoldedSummary(summary, device, model.total(), total_seconds, groups, repeats,
                         collectives, scope)


_WHILE_CONTEXT = re.compile(r"^while %(\S+) (?:body|condition)$")
_TRIP_COUNT = re.compile(r'"known_trip_count"\s*:\s*\{\s*"n"\s*:\s*"?(\d+)')


def _trip_count(module: HloModule, context: str) -> int | None:
    """The ``known_trip_count`` of the while a context names (``while %w body``)."""
    m = _WHILE_CONTEXT.match(context)
    if m is None:
        return None
    for comp in module.computations:
        ins = comp.by_name.get(m.group(1))
        if ins is not None and ins.opcode == "while":
            config = ins.attribute("backend_config")
            found = _TRIP_COUNT.search(config.value) if config is not None else None
            return int(found.group(1)) if found else None
    return None


def _repeated(name: str, kind: str, per_index: dict[int, list[Kernel]],
              group_of: dict[int, KernelGroup], total_seconds: float) -> RepeatedGroup:
    kernels = [k for ks in per_index.values() for k in ks]
    seconds = 0.0
    shares: list[Cost] = []                 # each kernel's share of its group's cost
    rows: dict[str, KernelGroup] = {}
    row_shares: dict[str, list[Cost]] = {}  # the same, per row
    share_of: dict[int, Cost] = {}          # a group's cost per kernel, by the group's id
    for k in kernels:
        g = group_of.get(id(k))
        if g is None:
            continue
        n = len(g.kernels)
        share_cost = share_of.get(id(g))
        if share_cost is None:
            share_cost = share_of[id(g)] = Cost(g.cost.flops / n, g.cost.transcendentals / n,
                                                g.cost.bytes_accessed / n, 0)
        row = rows.get(g.key)
        if row is None:
            row = rows[g.key] = KernelGroup(g.key, [], Cost(), 0.0, bound=g.bound)
            row_shares[g.key] = []
        row.kernels.append(k)
        row_shares[g.key].append(share_cost)
        row.seconds += g.seconds / n
        shares.append(share_cost)
        seconds += g.seconds / n
    cost = Cost.total(shares)
    for key, row in rows.items():
        row.cost = Cost.total(row_shares[key])
        row.share = row.seconds / total_seconds if total_seconds else 0.0
    shapes = Counter(tuple(sorted(group_of[id(k)].key for k in ks if id(k) in group_of))
                     for ks in per_index.values())
    common, identical = shapes.most_common(1)[0]
    per_repeat, regular = Counter(len(ks) for ks in per_index.values()).most_common(1)[0]
    return RepeatedGroup(kind, name, len(per_index), kernels, cost, seconds,
                         seconds / total_seconds if total_seconds else 0.0,
                         sorted(rows.values(), key=lambda r: -r.seconds),
                         identical=identical, per_repeat=per_repeat, regular=regular)


# --------------------------------------------------------------------------
# Two modules in cost terms
# --------------------------------------------------------------------------

@dataclass(slots=True)
class KernelCostChange:
    """Kernels of one category and op_name pattern (the repeated scope's index
    folded, :func:`op_name_pattern`) in two modules whose cost differs:
    ``old``/``new`` the kernels on each side (either may be empty: appeared,
    disappeared), their summed costs (FLOPs, transcendentals, bytes accessed)
    and roofline ``*_seconds`` on the device."""

    key: str
    old: list[Kernel]
    new: list[Kernel]
    old_cost: Cost
    new_cost: Cost
    old_seconds: float
    new_seconds: float

    @property
    def delta_seconds(self) -> float:
        """Estimated time after minus before, seconds."""
        return self.new_seconds - self.old_seconds

    def to_dict(self) -> dict:
        """JSON-ready: key, names and counts on each side, seconds, FLOPs,
        transcendentals and bytes accessed before and after."""
        return {"key": self.key, "old": [k.name for k in self.old],
                "new": [k.name for k in self.new],
                "seconds": [self.old_seconds, self.new_seconds],
                "flops": [self.old_cost.known_flops, self.new_cost.known_flops],
                "transcendentals": [self.old_cost.transcendentals,
                                    self.new_cost.transcendentals],
                "bytes_accessed": [self.old_cost.known_bytes, self.new_cost.known_bytes]}


@dataclass(slots=True)
class CostComparison:
    """Two modules in cost terms (:func:`compare_costs`): ``old_total`` and
    ``new_total`` the ENTRY computations' costs as XLA's cost analysis counts
    them (:func:`hlo_lsp.model.cost.module_cost`), ``old_seconds`` and
    ``new_seconds`` the summed roofline time of every kernel on ``device``,
    ``kernels`` the kernel groups whose cost changed, largest change in time
    first."""

    device: Accelerator
    old_total: Cost
    new_total: Cost
    old_seconds: float
    new_seconds: float
    kernels: list[KernelCostChange]

    def to_dict(self) -> dict:
        """JSON-ready: device, ``[before, after]`` pairs of seconds, flops,
        transcendentals and bytes_accessed, and the changed kernels."""
        return {"device": self.device.key, "seconds": [self.old_seconds, self.new_seconds],
                "flops": [self.old_total.flops, self.new_total.flops],
                "transcendentals": [self.old_total.transcendentals,
                                    self.new_total.transcendentals],
                "bytes_accessed": [self.old_total.bytes_accessed,
                                   self.new_total.bytes_accessed],
                "kernels": [k.to_dict() for k in self.kernels]}

    @property
    def changed(self) -> bool:
        """Whether the totals (FLOPs, transcendentals, bytes accessed, the
        custom-calls nobody can cost) or any kernel group's cost differ."""
        a, b = self.old_total, self.new_total
        return bool(self.kernels) or (a.known_flops, a.transcendentals, a.known_bytes,
                                      a.unknown) != (b.known_flops, b.transcendentals,
                                                     b.known_bytes, b.unknown)

    def lines(self, max_kernels: int = 10) -> list[str]:
        """The cost change as lines: the total estimated time (roofline on the
        device), FLOPs, transcendentals and bytes accessed of ENTRY before and
        after (without XLA's -1 per custom-call it cannot cost; how many there are
        is said), then the kernel groups whose cost changed (at most
        ``max_kernels``, largest change in time first), indented."""
        flop = lambda n: format_count(n, "FLOP")  # noqa: E731
        byte = lambda n: format_count(n, "B")  # noqa: E731
        plain = lambda n: format_count(n, "").strip()  # noqa: E731
        old, new = self.old_total, self.new_total
        lines = [f"Cost (ENTRY as XLA's cost analysis counts it; time: roofline on "
                 f"{self.device.name})",
                 f"  time             "
                 f"{change_text(self.old_seconds, self.new_seconds, format_seconds)}",
                 f"  FLOPs            {change_text(old.known_flops, new.known_flops, flop)}",
                 f"  transcendentals  "
                 f"{change_text(old.transcendentals, new.transcendentals, plain)}",
                 f"  bytes accessed   {change_text(old.known_bytes, new.known_bytes, byte)}"]
        if old.unknown or new.unknown:
            lines.append(f"  custom-calls XLA's cost analysis cannot cost (-1 FLOP and -1 B each "
                         f"there, left out of these totals; the time and the kernels below use "
                         f"the library call's estimate): {old.unknown} -> {new.unknown}")
        if not self.kernels:
            lines.append("  no kernel's cost changed")
            return lines
        lines.append(f"  kernels whose cost changed ({len(self.kernels)}, largest change in "
                     f"time first):")
        for c in self.kernels[:max_kernels]:
            first = (c.new or c.old)[0]
            count = f"{len(c.old)} -> {len(c.new)}" if len(c.old) != len(c.new) else \
                f"{len(c.new)}x"
            what = c.key.split(" ", 1)[1]
            lines.append(f"    {first.label} %{first.name} ({count})" +
                         ("" if what.startswith("%") else f" {short_op_name(what)}"))
            co, cn = c.old_cost, c.new_cost
            lines.append(f"      time {change_text(c.old_seconds, c.new_seconds, format_seconds)}; "
                         f"FLOPs {change_text(co.known_flops, cn.known_flops, flop)}; "
                         f"bytes {change_text(co.known_bytes, cn.known_bytes, byte)}")
        if len(self.kernels) > max_kernels:
            lines.append(f"    ... {len(self.kernels) - max_kernels} more")
        return lines


def change_text(before: float, after: float, fmt) -> str:
    """``10.5 GFLOP -> 13.1 GFLOP (+2.6 GFLOP, +24.8%)``."""
    delta = after - before
    sign = "+" if delta >= 0 else "-"
    pct = f", {sign}{abs(delta) / before * 100:.1f}%" if before > 0 else ""
    return f"{fmt(before)} -> {fmt(after)} ({sign}{fmt(abs(delta))}{pct})"


#: Kernels of one group of :func:`compare_costs`: the kernels, their cost, their
#: estimated seconds.
_CostGroup = tuple[list[Kernel], Cost, float]


def _cost_groups(module: HloModule, summary: KernelSummary, device: Accelerator,
                 scope: str | None) -> tuple[Cost, float, dict[str, _CostGroup]]:
    """One side of :func:`compare_costs`: the module's total cost, its kernels'
    estimated time on ``device`` (seconds), and per kernel group (category and
    op_name pattern under ``scope``) its kernels, cost and seconds. Kept in
    the summary per device and scope (:meth:`KernelSummary.remembered`):
    comparing one dump with several others, or a dump with itself, groups its
    kernels once. Read only."""
    return summary.remembered(("cost groups", device.key, scope),
                              lambda: _group_costs(module, summary, device, scope))


def _group_costs(module: HloModule, summary: KernelSummary, device: Accelerator,
                 scope: str | None) -> tuple[Cost, float, dict[str, _CostGroup]]:
    kernels: dict[str, list[Kernel]] = {}
    costs: dict[str, list[Cost]] = {}
    seconds: dict[str, float] = {}
    for k, counted in zip(summary.kernels, kernel_costs(module, summary, device)):
        if counted is None:
            continue
        group = f"{k.category} " + (op_name_pattern(k.op_name, scope) if k.op_name
                                    else f"%{k.name}")
        ks = kernels.get(group)
        if ks is None:
            ks = kernels[group] = []
            costs[group] = []
            seconds[group] = 0.0
        ks.append(k)
        costs[group].append(counted[1])
        seconds[group] += counted[2]
    per = {group: (ks, Cost.total(costs[group]), seconds[group])
           for group, ks in kernels.items()}
    return cost_model(module).total(), sum(v[2] for v in per.values()), per


def compare_costs(old_module: HloModule, old: KernelSummary, new_module: HloModule,
                  new: KernelSummary, device: Accelerator) -> CostComparison:
    """What changed in cost between two modules of one program: the totals of
    their ENTRY computations (FLOPs, transcendentals, bytes accessed, as XLA
    counts them), the estimated time of their kernels on ``device`` (roofline,
    seconds), and per kernel group (same category and op_name pattern, the
    index of the repeated scope folded: :func:`repeat_scope`) the ones whose
    cost differs, largest change in estimated time first. Kernels without an
    op_name are matched by instruction name."""
    scope = repeat_scope(old) or repeat_scope(new)
    (old_total, old_seconds, a), (new_total, new_seconds, b) = (
        _cost_groups(module, summary, device, scope)
        for module, summary in ((old_module, old), (new_module, new)))
    changes = []
    for key in list(a) + [k for k in b if k not in a]:
        ko, co, so = a.get(key) or ([], Cost(), 0.0)
        kn, cn, sn = b.get(key) or ([], Cost(), 0.0)
        if (co.known_flops, co.transcendentals, co.known_bytes) != \
                (cn.known_flops, cn.transcendentals, cn.known_bytes):
            changes.append(KernelCostChange(key, ko, kn, co, cn, so, sn))
    changes.sort(key=lambda c: -abs(c.delta_seconds))
    return CostComparison(device, old_total, new_total, old_seconds, new_seconds, changes)
