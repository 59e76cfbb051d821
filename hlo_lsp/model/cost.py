"""What an instruction costs: FLOPs, transcendental operations and bytes
accessed, counted the way XLA's ``HloCostAnalysis`` counts them.

The rules mirror xla/service/hlo_cost_analysis.cc (openxla/xla, 2025) with the
shape size function jaxlib's CPU client gives it
(``cpu::CpuExecutable::ShapeSizeBytes``, xla/service/cpu/cpu_executable.cc),
so the module totals can be checked against ``hlo_module_cost_analysis``
(:func:`hlo_lsp.syntax.xla.load_cost_analysis`). In short:

- elementwise operations: one FLOP per output element; ``exponential``, ``log``,
  ``logistic``, ``power``, ``sqrt``, ``cbrt``, ``rsqrt``, ``tanh``, ``sine``,
  ``cosine``, ``tan``, ``exponential-minus-one``, ``log-plus-one``, ``atan2``,
  ``erf`` and the inverse and hyperbolic functions count as transcendentals
  instead (:data:`TRANSCENDENTAL`);
- ``dot``: 2 FLOPs (one fused multiply-add) per output element per element of
  the contracted dimensions; ``convolution``: 2 FLOPs per multiply-add over
  the window positions that land inside the (dilated, padded) input;
- ``reduce``, ``reduce-window``, ``select-and-scatter``, ``map``, ``scatter``:
  the FLOPs of the applied computation times the number of applications;
  ``sort``: ``n * ceil(log2 n)``; ``rng``: one transcendental per element;
- bytes accessed: the size of each operand's top-level buffer and of every
  array of the result (the result's arrays, not its tuple table, as jaxlib
  0.10.2's XLA counts them: checked with its oracle), except where XLA knows
  better: nothing for ``parameter``, ``constant``,
  ``get-tuple-element``, ``bitcast`` (and a ``transpose`` that is one),
  ``after-all``, ``add-dependency``, ``domain``; only the index table for a
  ``tuple``; the slice for ``slice``, ``dynamic-slice``, ``gather``; the update
  for ``dynamic-update-slice`` and ``scatter``;
- a ``fusion``: the FLOPs of its fused computation; its bytes are counted at
  the fusion's boundary: each output once (only the update of a root
  ``dynamic-update-slice``), each parameter as its users read it (a slice
  reads the slice, a broadcast or reshape reads the whole parameter each time,
  other users share one read), plus the constants of more than one element;
- ``while``: one iteration of the body plus the condition; ``conditional``:
  the most expensive branch, per quantity; ``call``, ``async-start``: the
  called computation;
- ``custom-call``: unknown to XLA, which counts -1 FLOPs and -1 bytes for each
  (mirrored here, so the totals equal XLA's).

Shape sizes (:func:`hlo_lsp.model.shape_costs.shape_size`, with the FLOPs of a dot
and a convolution): an array's bytes (sub-byte types packed only
with an ``E(n)`` layout), plus 4 bytes per dimension for a dynamic shape; a tuple
is its table of 8-byte pointers, not its elements.

Quantities are floats as in XLA (``HloCostAnalysis::Properties`` holds floats):
FLOPs and transcendentals are operation counts, bytes are bytes. Everything is
computed lazily: :func:`cost_model` keeps one :class:`CostModel` per module,
which remembers each instruction and each called computation it has costed.
Never raises on a malformed module: what cannot be decoded counts zero.

The time these costs take on a device (the roofline, the precision that
bounds a kernel) is :mod:`hlo_lsp.model.roofline`; counts and times as text
are :mod:`hlo_lsp.model.units`.
"""

from __future__ import annotations

import math
import re
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from hlo_lsp.model.hlo import Computation, HloModule, Instruction
from hlo_lsp.model.kernels import custom_call_target
from hlo_lsp.model.opcodes import ELEMENTWISE
from hlo_lsp.model.shape_costs import (FMA_FLOPS, POINTER_BYTES, convolution_flops, decode,
                                       dot_flops, elements, int_list, leaf_bytes,
                                       leaf_elements, log2_ceiling, parse_window, shape_size,
                                       transpose_is_bitcast)
from hlo_lsp.model.shapes import ArrayShape, Shape, TupleShape
from hlo_lsp.model.units import as_float

#: Elementwise opcodes XLA counts as transcendental operations, not FLOPs
#: (``HloCostAnalysis::HandleElementwiseOp``; the inverse and hyperbolic
#: functions as jaxlib 0.10.2's XLA counts them, checked with its oracle).
TRANSCENDENTAL = frozenset("""
erf exponential log logistic power sqrt cbrt rsqrt tanh sine cosine exponential-minus-one
log-plus-one atan2 tan acos acosh asin asinh atanh cosh sinh
""".split())

#: Instructions XLA counts as touching no memory and doing no work.
_FREE = frozenset("""
parameter constant get-tuple-element bitcast after-all add-dependency domain
""".split())

#: A fused constant of at most this many elements is an immediate in the code
#: and costs no memory access (``immediate_constant_max_elements``, 1 in
#: xla/service/hlo_cost_analysis.h).
IMMEDIATE_CONSTANT_MAX_ELEMENTS = 1

#: Nesting of called computations followed at most (deeper counts zero).
MAX_DEPTH = 64


@dataclass(frozen=True, slots=True)
class Cost:
    """FLOPs, transcendental operations (counts) and bytes accessed (bytes) of
    an instruction or a computation, as ``HloCostAnalysis`` counts them.
    ``unknown`` is the number of custom-calls inside, each of which XLA counts
    as -1 FLOPs and -1 bytes (included in the two numbers, as in XLA)."""

    flops: float = 0.0
    transcendentals: float = 0.0
    bytes_accessed: float = 0.0
    unknown: int = 0

    def __add__(self, other: "Cost") -> "Cost":
        try:
            return Cost(self.flops + other.flops, self.transcendentals + other.transcendentals,
                        self.bytes_accessed + other.bytes_accessed, self.unknown + other.unknown)
        except OverflowError:  # an integer count past a float's range
            return Cost._as_floats((self, other))

    def scaled(self, count: float) -> "Cost":
        """The FLOPs and transcendentals of ``count`` applications, no bytes
        (``KeyToCopyFromSubcomputation``: bytes are the caller's own)."""
        try:
            return Cost(self.flops * count, self.transcendentals * count, 0.0, self.unknown)
        except OverflowError:  # an integer count past a float's range
            return Cost(as_float(self.flops) * count, as_float(self.transcendentals) * count,
                        0.0, self.unknown)

    def maximum(self, other: "Cost") -> "Cost":
        """Each quantity's maximum (``HandleConditional``)."""
        return Cost(max(self.flops, other.flops),
                    max(self.transcendentals, other.transcendentals),
                    max(self.bytes_accessed, other.bytes_accessed),
                    max(self.unknown, other.unknown))

    @staticmethod
    def total(costs: Iterable["Cost"]) -> "Cost":
        """The sum of ``costs`` (:data:`ZERO` for none), added in order as ``+``
        adds them (the same floats), without a Cost per step: a computation of
        thousands of instructions is summed in one pass."""
        costs = costs if isinstance(costs, (list, tuple)) else list(costs)
        flops = transcendentals = bytes_accessed = 0.0
        unknown = 0
        try:
            for c in costs:
                flops += c.flops
                transcendentals += c.transcendentals
                bytes_accessed += c.bytes_accessed
                unknown += c.unknown
        except OverflowError:  # an integer count past a float's range
            return Cost._as_floats(costs)
        return Cost(flops, transcendentals, bytes_accessed, unknown)

    @staticmethod
    def _as_floats(costs: Sequence["Cost"]) -> "Cost":
        """:meth:`total` with every count through :func:`as_float`: the integer
        counts of the shapes of broken or hostile text, past a float's range
        (about 1.8e308), add up to infinity where ``float + int`` raises."""
        flops = transcendentals = bytes_accessed = 0.0
        unknown = 0
        for c in costs:
            flops += as_float(c.flops)
            transcendentals += as_float(c.transcendentals)
            bytes_accessed += as_float(c.bytes_accessed)
            unknown += c.unknown
        return Cost(flops, transcendentals, bytes_accessed, unknown)

    @property
    def known_flops(self) -> float:
        """FLOPs without XLA's -1 per custom-call."""
        return self.flops + self.unknown

    @property
    def known_bytes(self) -> float:
        """Bytes accessed without XLA's -1 per custom-call."""
        return self.bytes_accessed + self.unknown


ZERO = Cost()


class CostModel:
    """The costs of one module's instructions and computations, computed on
    first request and remembered (per instruction, per called computation).
    Get it with :func:`cost_model`; thread-safe enough for concurrent readers
    (two threads may compute the same value; both get equal results)."""

    def __init__(self, module: HloModule) -> None:
        # Weak: the model is kept on its module (HloModule.derived), and a strong
        # reference back would make a cycle that only a full collection frees.
        self._module = weakref.ref(module)
        self._instructions: dict[int, Cost] = {}
        self._computations: dict[str, Cost] = {}
        self._user_maps: dict[str, dict[str, list[Instruction]]] = {}
        self._busy: set[str] = set()
        self._fusions: dict[str, Instruction] | None = None

    @property
    def module(self) -> HloModule:
        """The module this model counts (it must still be alive)."""
        module = self._module()
        assert module is not None, "a cost model outlived its module"
        return module

    # -- public queries ------------------------------------------------------

    def instruction(self, ins: Instruction, depth: int = 0) -> Cost:
        """The cost of ``ins`` alone: for a fusion, call, while, conditional,
        reduce... including the computations it applies, as XLA counts it."""
        known = self._instructions.get(id(ins))
        if known is not None:
            return known
        comp = ins.computation
        try:
            cost = self._instruction(ins, comp, depth)
        except (ValueError, TypeError, IndexError, KeyError, ZeroDivisionError,
                RecursionError):
            cost = ZERO
        self._instructions[id(ins)] = cost
        return cost

    def computation(self, name: str, depth: int = 0) -> Cost:
        """The sum over every instruction of computation ``name`` (XLA's
        ``ProcessSubcomputation``); zero for an unknown name or a cycle."""
        known = self._computations.get(name)
        if known is not None:
            return known
        comp = self.module.by_name.get(name)
        if comp is None or depth > MAX_DEPTH or name in self._busy:
            return ZERO
        self._busy.add(name)
        try:
            total = Cost.total(self.instruction(ins, depth + 1) for ins in comp.instructions)
        finally:
            self._busy.discard(name)
        self._computations[name] = total
        return total

    def fusion_of(self, computation: str) -> Instruction | None:
        """The first fusion whose fused computation is ``computation`` (None
        when no fusion calls it): one scan of the module's fusions, kept."""
        index = self._fusions
        if index is None:
            index = {}
            for comp in self.module.computations:
                for ins in comp.instructions:
                    if ins.opcode == "fusion":
                        for cref in ins.called:
                            index.setdefault(cref.ref.name, ins)
            self._fusions = index
        return index.get(computation)

    def total(self) -> Cost:
        """The module's cost: its ENTRY computation (what
        ``hlo_module_cost_analysis`` reports)."""
        entry = self.module.entry
        return ZERO if entry is None else self.computation(entry.name.name)

    # -- rules ---------------------------------------------------------------

    def _operand(self, ins: Instruction, comp: Computation | None, i: int) -> Instruction | None:
        if comp is None or i >= len(ins.operands):
            return None
        return comp.by_name.get(ins.operands[i].ref.name)

    def _operand_shape(self, ins: Instruction, comp: Computation | None, i: int) -> Shape | None:
        defined = self._operand(ins, comp, i)
        if defined is not None:
            return decode(defined)
        if i < len(ins.operands) and ins.operands[i].shape is not None:
            try:
                return ins.operands[i].shape.decode()
            except ValueError:
                return None
        return None

    def _operand_shapes(self, ins: Instruction, comp: Computation | None) -> list[Shape | None]:
        """:meth:`_operand_shape` of every operand of ``ins``, in order (one
        lookup of ``comp``'s names for them all)."""
        scope = comp.by_name if comp is not None else {}
        shapes: list[Shape | None] = []
        for operand in ins.operands:
            defined = scope.get(operand.ref.name)
            if defined is not None:
                shapes.append(decode(defined))
                continue
            try:
                shapes.append(operand.shape.decode() if operand.shape is not None else None)
            except ValueError:
                shapes.append(None)
        return shapes

    def _called(self, ins: Instruction, attr: str) -> list[str]:
        return [c.ref.name for c in ins.called if c.attr == attr]

    def _instruction(self, ins: Instruction, comp: Computation | None, depth: int) -> Cost:
        op = ins.opcode
        if op in _FREE:
            return ZERO
        out = decode(ins)
        n_ops = len(ins.operands)
        operands = self._operand_shapes(ins, comp)
        # XLA's default (``Preprocess``): every array of the result, and each
        # operand's top-level buffer (a tuple operand: its pointer table).
        default_bytes = leaf_bytes(out) + sum(map(shape_size, operands))
        if op == "transpose":
            if transpose_is_bitcast(operands[0] if operands else None, out,
                                     int_list(_attr(ins, "dimensions"))):
                return ZERO
            return Cost(bytes_accessed=default_bytes)
        if op in ELEMENTWISE and op != "map":
            count = elements(out)
            if op in TRANSCENDENTAL:
                return Cost(0.0, count, default_bytes)
            return Cost(count, 0.0, default_bytes)
        if op == "tuple":
            # Its table of pointers (also when the text leaves the shape out).
            return Cost(bytes_accessed=shape_size(out) if out is not None
                        else POINTER_BYTES * n_ops)
        if op in ("slice", "dynamic-slice", "gather"):
            # The slice is read and written; dynamic-slice and gather also read
            # their (first) index operand.
            extra = shape_size(operands[1]) if op != "slice" and n_ops > 1 else 0
            return Cost(bytes_accessed=2 * shape_size(out) + extra)
        if op == "dynamic-update-slice":
            update = shape_size(operands[1]) if n_ops > 1 else 0
            index = shape_size(operands[2]) if n_ops > 2 else 0
            return Cost(bytes_accessed=2 * update + index)
        if op in ("dot", "scaled-dot"):
            flops = dot_flops(operands[0] if operands else None, out,
                              int_list(_attr(ins, "lhs_contracting_dims")))
            return Cost(flops, 0.0, default_bytes)
        if op == "ragged-dot":
            return Cost(self._ragged_dot_flops(ins, operands, out), 0.0, default_bytes)
        if op == "convolution":
            flops = convolution_flops(
                operands[0] if operands else None, operands[1] if n_ops > 1 else None, out,
                _attr(ins, "dim_labels") or "", parse_window(_attr(ins, "window")),
                _int_attr(ins, "feature_group_count", 1), _int_attr(ins, "batch_group_count", 1))
            return Cost(flops, 0.0, default_bytes)
        if op == "fft":
            real = operands[0] if operands else None
            if isinstance(real, TupleShape):
                real = real.elements[0] if real.elements else None
            logs = 1
            for d in int_list(_attr(ins, "fft_length")):
                logs *= max(d, 1).bit_length() - 1
            return Cost(FMA_FLOPS * 4 * logs * elements(real), 0.0, default_bytes)
        if op == "sort":
            n = elements(operands[0] if operands else None)
            return Cost(n * log2_ceiling(n), 0.0, default_bytes)
        if op == "rng":
            return Cost(0.0, elements(out), default_bytes)
        if op == "rng-bit-generator":
            return Cost(0.0, leaf_elements(out), default_bytes)
        if op == "triangular-solve":
            a, b = (operands + [None, None])[:2]
            size = shape_size(out) + shape_size(a) / 2.0 + shape_size(b)
            last = a.dims[-1] if isinstance(a, ArrayShape) and a.rank else 0
            return Cost(FMA_FLOPS * last * elements(b), 0.0, size)
        if op == "cholesky":
            a = operands[0] if operands else None
            last = a.dims[-1] if isinstance(a, ArrayShape) and a.rank else 0
            return Cost((last * elements(a)) // 3, 0.0, as_float(shape_size(a)))
        if op in ("all-reduce", "all-reduce-start"):
            flops = _array_leaves(out, elements)
            size = _array_leaves(out, shape_size) + sum(shape_size(s) for s in operands)
            return Cost(flops, 0.0, size)
        if op == "infeed":
            return Cost(bytes_accessed=leaf_bytes(out))
        if op == "outfeed":
            return Cost(bytes_accessed=sum(leaf_bytes(s) for s in operands))
        if op == "custom-call":
            return Cost(-1.0, 0.0, -1.0, 1)
        if op == "scatter":
            return self._scatter(ins, operands, depth)
        if op == "map":
            sub = self._sub(ins, "to_apply", depth)
            return sub.scaled(elements(out)) + Cost(bytes_accessed=default_bytes)
        if op == "reduce":
            sub = self._sub(ins, "to_apply", depth)
            count = elements(operands[0] if operands else None) - elements(out)
            return sub.scaled(count) + Cost(bytes_accessed=default_bytes)
        if op == "reduce-window":
            sub = self._sub(ins, "to_apply", depth)
            return sub.scaled(self._reduce_window_count(ins, out)) + \
                Cost(bytes_accessed=default_bytes)
        if op == "select-and-scatter":
            select = self._sub(ins, "select", depth)
            scatter = self._sub(ins, "scatter", depth)
            source = elements(operands[1] if n_ops > 1 else None)
            size = 1
            for w in parse_window(_attr(ins, "window")):
                size *= w.size
            return select.scaled(source * (size - 1)) + scatter.scaled(source) + \
                Cost(bytes_accessed=default_bytes)
        if op == "fusion":
            return self._fusion(ins, out, depth)
        if op in ("call", "async-start"):
            attr = "to_apply" if op == "call" else "calls"
            names = self._called(ins, attr) or [c.ref.name for c in ins.called]
            return self.computation(names[0], depth + 1) if names else ZERO
        if op == "while":
            return self._sub(ins, "body", depth) + self._sub(ins, "condition", depth)
        if op == "conditional":
            names = (self._called(ins, "branch_computations") or
                     self._called(ins, "true_computation") +
                     self._called(ins, "false_computation"))
            if not names:
                return ZERO
            cost = self.computation(names[0], depth + 1)
            for name in names[1:]:
                cost = cost.maximum(self.computation(name, depth + 1))
            return cost
        # Everything else (copy, broadcast, reshape, concatenate, pad, reverse,
        # iota, collectives, send/recv, async-done, batch-norm, topk...): the
        # operands and the result, no FLOPs.
        return Cost(bytes_accessed=default_bytes)

    def _sub(self, ins: Instruction, attr: str, depth: int) -> Cost:
        names = self._called(ins, attr)
        return self.computation(names[0], depth + 1) if names else ZERO

    def _ragged_dot_flops(self, ins: Instruction, operands: list, out: Shape | None) -> int:
        """``HandleRaggedDot``: a dot whose result loses one leading dimension
        per ``rhs_group_dims`` entry."""
        if not isinstance(out, ArrayShape):
            return 0
        dims = list(out.dims)
        for i in range(len(int_list(_attr(ins, "rhs_group_dims")))):
            if i < len(dims):
                del dims[i]
        count = math.prod(dims) if dims else 1
        lhs = operands[0] if operands else None
        width = 1
        if isinstance(lhs, ArrayShape):
            for d in int_list(_attr(ins, "lhs_contracting_dims")):
                if 0 <= d < lhs.rank:
                    width *= lhs.dims[d]
        return FMA_FLOPS * count * width

    def _reduce_window_count(self, ins: Instruction, out: Shape | None) -> int:
        """Applications of a reduce-window's computation (``HandleReduceWindow``):
        window size minus one per output element, or for a window that reduces
        one padded dimension and broadcasts it back, one reduction per row."""
        window = parse_window(_attr(ins, "window"))
        size = 1
        for w in window:
            size *= w.size
        first = out.elements[0] if isinstance(out, TupleShape) and out.elements else out
        out_count = elements(first)
        count = (size - 1) * out_count
        reducing = [i for i, w in enumerate(window) if w.size != 1]
        padded = [w for w in window if w.pad_low != 0 or w.pad_high != 0]
        if len(reducing) == 1 and len(padded) == 1 and isinstance(out, ArrayShape):
            for i, w in enumerate(window):
                if (w.size != 1 and w.pad_low != 0 and w.pad_high != 0
                        and w.pad_low == w.pad_high and w.size == 2 * w.pad_low + 1):
                    if i < out.rank and w.pad_low == out.dims[i] - 1:
                        span = out.dims[i]
                        count = out_count // span + (span - 1)
                    break
        return count

    def _scatter(self, ins: Instruction, operands: list, depth: int) -> Cost:
        """``HandleScatter``: three times the updates (input, output, updates)
        plus the indices; the combiner's FLOPs once per update element."""
        n = len(operands) // 2  # operands..., indices, updates...
        updates = operands[n + 1:] if n else []
        update_size = sum(shape_size(s) for s in updates)
        indices = shape_size(operands[n]) if n < len(operands) else 0
        count = elements(updates[0]) if updates else 0
        return self._sub(ins, "to_apply", depth).scaled(count) + \
            Cost(bytes_accessed=3 * update_size + indices)

    # -- fusion --------------------------------------------------------------

    def _fusion(self, ins: Instruction, out: Shape | None, depth: int) -> Cost:
        """``HandleFusion``: the fused computation's FLOPs; bytes at the boundary."""
        names = self._called(ins, "calls") or [c.ref.name for c in ins.called]
        fused = self.module.by_name.get(names[0]) if names else None
        if fused is None:
            return ZERO
        if (_attr(ins, "kind") or "") == "kCustom":
            for inner in fused.instructions:
                if inner.opcode in ("gather", "scatter"):
                    return self._custom_fusion(inner, fused)
        sub = self.computation(fused.name.name, depth + 1)
        size = self._fusion_output_bytes(fused, out)
        for inner in fused.instructions:
            if inner.opcode == "constant" and \
                    elements(decode(inner)) > IMMEDIATE_CONSTANT_MAX_ELEMENTS:
                size += shape_size(decode(inner))
        for param in fused.parameters().values():
            size += self._parameter_bytes(fused, param)
        return Cost(sub.flops, sub.transcendentals, as_float(size), sub.unknown)

    def _custom_fusion(self, inner: Instruction, fused: Computation) -> Cost:
        """A kCustom fusion around a gather or scatter costs that instruction
        (``HandleFusion`` calls ``HandleGather``/``HandleScatter`` on it)."""
        operands = [self._operand_shape(inner, fused, i) for i in range(len(inner.operands))]
        if inner.opcode == "gather":
            size = shape_size(decode(inner))
            extra = shape_size(operands[1]) if len(operands) > 1 else 0
            return Cost(bytes_accessed=2 * size + extra)
        return self._scatter(inner, operands, 0)

    def _fusion_output_bytes(self, fused: Computation, out: Shape | None) -> int:
        """``FusionProcessOutputBytesAccessed``: every array of the result once;
        the update only where the (tuple element of the) root is a
        dynamic-update-slice, whose buffer is updated in place."""
        root = fused.root
        if root is None:
            return 0
        return self._array_bytes(fused, root, out, ())

    def _array_bytes(self, fused: Computation, root: Instruction, shape: Shape | None,
                     index: tuple[int, ...]) -> int:
        """The output bytes of element ``index`` of ``fused``'s result, of ``shape``."""
        if isinstance(shape, TupleShape):
            return sum(self._array_bytes(fused, root, e, index + (i,))
                       for i, e in enumerate(shape.elements))
        node = root
        if len(index) == 1 and root.opcode == "tuple" and index[0] < len(root.operands):
            node = fused.by_name.get(root.operands[index[0]].ref.name) or root
        if node.opcode == "dynamic-update-slice":
            return shape_size(self._operand_shape(node, fused, 1))
        return shape_size(shape)

    def _users(self, comp: Computation) -> dict[str, list[Instruction]]:
        """Name -> the instructions of ``comp`` using it as an operand (each once)."""
        known = self._user_maps.get(comp.name.name)
        if known is None:
            known = {}
            for ins in comp.instructions:
                for name in dict.fromkeys(op.ref.name for op in ins.operands):
                    known.setdefault(name, []).append(ins)
            self._user_maps[comp.name.name] = known
        return known

    def _parameter_bytes(self, fused: Computation, param: Instruction) -> int:
        """``FusionProcessOperandBytesRead`` for one fused parameter: a tuple
        parameter is read leaf by leaf through its get-tuple-elements."""
        shape = decode(param)
        if not isinstance(shape, TupleShape):
            return self._read_bytes(fused, param, 0, {})
        users = self._users(fused)
        total = 0
        # each leaf of the tuple, found by its index path
        pending: list[tuple[Shape, tuple[int, ...]]] = [(shape, ())]
        while pending:
            s, index = pending.pop()
            if isinstance(s, TupleShape):
                pending.extend((e, index + (i,)) for i, e in enumerate(s.elements))
                continue
            node = param
            for sub in index:
                for user in users.get(node.name.name, []):
                    if user.opcode == "get-tuple-element" and \
                            _int_attr(user, "index", -1) == sub:
                        node = user
                        break
            total += self._read_bytes(fused, node, 0, {})
        return total

    def _read_bytes(self, fused: Computation, hlo: Instruction, depth: int,
                    memo: dict[tuple[str, str], int | None]) -> int:
        """``FusionParameterReadBytes``: bytes a fused parameter (or
        get-tuple-element) is read with, from how its users read it.

        ``memo`` (one per top-level question) keeps each answer by computation
        and instruction name: nested fusions that share a callee are read once,
        and a fusion that calls a computation being read (a cycle XLA's
        verifier rejects; a hand-edited dump has them) reads 0 bytes. Without
        it, duplicated lines of a fused computation made the walk exponential
        (2 ** 64 steps: a request that never finished)."""
        key = (fused.name.name, hlo.name.name)
        if key in memo:
            return memo[key] or 0
        if depth > MAX_DEPTH:
            return 0
        memo[key] = None  # being read
        memo[key] = size = self._read_bytes_once(fused, hlo, depth, memo)
        return size

    def _read_bytes_once(self, fused: Computation, hlo: Instruction, depth: int,
                         memo: dict[tuple[str, str], int | None]) -> int:
        own = shape_size(decode(hlo))
        size = 0
        seen_trivial = False
        name = hlo.name.name
        for user in self._users(fused).get(name, []):
            op = user.opcode
            first = bool(user.operands) and user.operands[0].ref.name == name
            if op == "fusion":
                size += self._nested_fusion_read(fused, hlo, user, depth, memo)
            elif op == "slice":
                size += shape_size(decode(user))
            elif op == "dynamic-slice":
                if first:
                    size += shape_size(decode(user))
                elif not seen_trivial:
                    seen_trivial = True
                    size += own
            elif op == "dynamic-update-slice":
                if not first and not seen_trivial:
                    seen_trivial = True
                    size += own
            elif op in ("broadcast", "reshape"):
                size += own
            elif not seen_trivial:
                seen_trivial = True
                size += own
        return size

    def _nested_fusion_read(self, fused: Computation, hlo: Instruction, user: Instruction,
                            depth: int, memo: dict[tuple[str, str], int | None]) -> int:
        """The read of ``hlo`` by a fusion nested in ``fused``: through the
        nested fused parameter, or as its users slice it when that parameter
        feeds the nested root directly (``FusionParameterReadBytes``, case kFusion)."""
        names = self._called(user, "calls") or [c.ref.name for c in user.called]
        inner = self.module.by_name.get(names[0]) if names else None
        if inner is None:
            return 0
        params = inner.parameters()
        root = inner.root
        fusion_users = self._users(fused).get(user.name.name, [])
        size = 0
        for idx, op in enumerate(user.operands):
            if op.ref.name != hlo.name.name or idx not in params:
                continue
            param = params[idx]
            simple = root is None or not root.operands or \
                root.operands[0].ref.name == param.name.name
            seen = False
            for fu in fusion_users:
                fu_first = bool(fu.operands) and fu.operands[0].ref.name == user.name.name
                if simple and fu.opcode == "slice":
                    size += shape_size(decode(fu))
                elif simple and fu.opcode == "dynamic-slice":
                    if fu_first:
                        size += shape_size(decode(fu))
                    elif not seen:
                        seen = True
                        size += shape_size(decode(user))
                elif simple and fu.opcode == "dynamic-update-slice":
                    if not fu_first and not seen:
                        seen = True
                        size += shape_size(decode(user))
                elif not seen:
                    seen = True
                    size += self._read_bytes(inner, param, depth + 1, memo)
        return size


def _attr(ins: Instruction, name: str) -> str | None:
    a = ins.attribute(name)
    return None if a is None else a.value


def _int_attr(ins: Instruction, name: str, default: int) -> int:
    values = int_list(_attr(ins, name))
    return values[0] if values else default


def _array_leaves(shape: Shape | None, fn) -> int:
    if isinstance(shape, TupleShape):
        return sum(_array_leaves(e, fn) for e in shape.elements)
    return fn(shape) if shape is not None else 0


def cost_model(module: HloModule) -> CostModel:
    """The one :class:`CostModel` of ``module`` (made on first use, freed with
    the module: see :meth:`HloModule.derived`)."""
    return module.derived("cost_model", CostModel)


def instruction_cost(module: HloModule, ins: Instruction) -> Cost:
    """The cost of ``ins`` in ``module`` (see :class:`CostModel`)."""
    return cost_model(module).instruction(ins)


def module_cost(module: HloModule) -> Cost:
    """The cost of ``module``'s ENTRY computation, XLA's module totals."""
    return cost_model(module).total()


#: Attributes an isolated instruction leaves out: they name other
#: instructions or only describe the source.
_NOT_ISOLATED = frozenset({"metadata", "control-predecessors", "statistics"})


def isolated_module_text(module: HloModule, ins: Instruction) -> str | None:
    """HLO text of a module whose ENTRY passes one parameter per operand of
    ``ins`` to a copy of ``ins`` (its ROOT), with every computation ``ins``
    calls, directly or not: XLA's cost analysis of that module is the cost of
    ``ins`` alone (parameters cost nothing), e.g. a fusion's bytes at its
    boundary. None when an operand's shape or a called computation is unknown."""
    comp = ins.computation
    if ins.shape is None or comp is None:
        return None
    params = []
    for i, op in enumerate(ins.operands):
        defined = comp.by_name.get(op.ref.name)
        shape = defined.shape if defined is not None else op.shape
        if shape is None:
            return None
        params.append(f"  p{i} = {shape.text} parameter({i})")
    needed: set[str] = set()
    todo = [c.ref.name for c in ins.called]
    while todo:
        name = todo.pop()
        if name in needed:
            continue
        callee = module.by_name.get(name)
        if callee is None:
            return None
        needed.add(name)
        todo.extend(c.ref.name for inner in callee.instructions for c in inner.called)
    bodies = [module.text[c.start:c.end] for c in module.computations if c.name.name in needed
              and module.by_name.get(c.name.name) is c]
    args = ", ".join(f"p{i}" for i in range(len(ins.operands)))
    if ins.literal is not None:
        args = ins.literal
    attrs = "".join(f", {a.name}={a.value}" for a in ins.attributes
                    if a.name not in _NOT_ISOLATED)
    root = f"  ROOT r = {ins.shape.text} {ins.opcode}({args}){attrs}"
    return "\n\n".join(["HloModule isolated", *bodies,
                        "ENTRY isolated_entry {\n" + "\n".join(params + [root]) + "\n}"]) + "\n"


#: cuBLAS GEMM custom-call targets (``IsCublasGemm``, xla/service/gpu/cublas_cudnn.cc).
GEMM_TARGETS = frozenset({"__cublas$gemm", "__cublas$lt$matmul", "__cublas$lt$matmul$f8"})

#: cuDNN convolution custom-call targets (``IsCustomCallToDnnConvolution``).
CONV_TARGETS = frozenset({"__cudnn$convForward", "__cudnn$convBackwardInput",
                          "__cudnn$convBackwardFilter", "__cudnn$convBiasActivationForward",
                          "__cudnn$convForwardGraph"})


def custom_call_estimate(module: HloModule, ins: Instruction) -> Cost | None:
    """Our estimate for a library call XLA's base cost analysis leaves unknown,
    following XLA:GPU's ``GpuHloCostAnalysis::HandleCustomCall``
    (xla/service/gpu/model/gpu_hlo_cost_analysis.cc): a cuBLAS GEMM costs the
    FLOPs of its dot (``gemm_backend_config.dot_dimension_numbers``), a cuDNN
    convolution those of its convolution (``window``, ``dim_labels``); bytes:
    every operand and the real result (element 0 of the result tuple, not the
    scratch buffer). None for any other custom-call."""
    target = custom_call_target(ins) or ""
    if target not in GEMM_TARGETS and target not in CONV_TARGETS:
        return None
    model = cost_model(module)
    comp = ins.computation
    operands = [model._operand_shape(ins, comp, i) for i in range(len(ins.operands))]
    out = decode(ins)
    result = out.elements[0] if isinstance(out, TupleShape) and out.elements else out
    size = as_float(shape_size(result) + sum(shape_size(s) for s in operands))
    if target in GEMM_TARGETS:
        dims = _gemm_contracting(ins)
        flops = dot_flops(operands[0] if operands else None, result, dims)
        return Cost(as_float(flops), 0.0, size)
    flops = convolution_flops(
        operands[0] if operands else None, operands[1] if len(operands) > 1 else None, result,
        _attr(ins, "dim_labels") or "", parse_window(_attr(ins, "window")),
        _int_attr(ins, "feature_group_count", 1), _int_attr(ins, "batch_group_count", 1))
    return Cost(as_float(flops), 0.0, size)


def _gemm_contracting(ins: Instruction) -> list[int]:
    """``lhs_contracting_dimensions`` of a GEMM call's ``backend_config``."""
    attr = ins.attribute("backend_config")
    if attr is None:
        return []
    m = re.search(r'"lhs_contracting_dimensions"\s*:\s*\[([^\]]*)\]', attr.value)
    return int_list(m.group(1)) if m else []
