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
and :mod:`hlo_lsp.features.compare`. The kernels' ``op_name`` patterns (the
index of a repeated scope folded) are :mod:`hlo_lsp.model.op_names`, the summary
folded to fit a screen :mod:`hlo_lsp.model.folding`, two modules compared in cost
terms :mod:`hlo_lsp.model.cost_change`.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TypeVar

from hlo_lsp.model.accelerators import Accelerator
from hlo_lsp.model.backend_config import target_library
from hlo_lsp.model.cost import Cost, cost_model, custom_call_estimate
from hlo_lsp.model.roofline import kernel_precision, roofline_time
from hlo_lsp.model.kernels import (BACKEND_KIND_LABELS, HLO_KIND_LABELS, custom_call_target,
                                   fusion_backend_kind, hlo_fusion_kind)
from hlo_lsp.model.frames import python_stack, short_frame
from hlo_lsp.model.hlo import Computation, HloModule, Instruction, SourceFrame
from hlo_lsp.model.op_names import op_name_pattern, repeat_scope
from hlo_lsp.model.opcodes import COMPUTE
from hlo_lsp.model.precision import kernel_notes
from hlo_lsp.model.units import plural

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
        :attr:`memo` (:func:`hlo_lsp.model.op_names.repeat_scope`, the kernel groups of a comparison).
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
        fusions = plural(c["fusion"], "fusion")
        by_label = Counter()
        for kind, n in c["fusion_by_backend_kind"].items():
            by_label[BACKEND_KIND_LABELS.get(kind, kind)] += n
        if by_label:
            fusions += " (" + ", ".join(f"{n} {label}" for label, n in by_label.items()) + ")"
        parts = [fusions]
        if c["custom_call_by_library"]:
            parts.extend(plural(n, f"{lib} call")
                         for lib, n in c["custom_call_by_library"].items())
        else:
            parts.append("0 custom-calls")
        parts.append(plural(c["collective"], "collective"))
        return " · ".join(parts)

    def to_dict(self) -> dict:
        """JSON-ready form: module, entry, headline, counts, kernels."""
        return {"module": self.module, "entry": self.entry, "headline": self.headline(),
                "counts": self.counts(), "kernels": [k.to_dict() for k in self.kernels]}



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
    (:func:`hlo_lsp.model.op_names.repeat_scope`: ``layer_3`` and ``layer_7`` are the
    same pattern),
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
