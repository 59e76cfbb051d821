"""What a matrix kernel computes in, and whether it is a split-K GEMM.

Two questions about a dot, convolution or GEMM (a bare ``dot``, one inside a
fusion, or a cuBLAS / cuBLASLt / cuDNN custom-call), each answered by one
function from the HLO alone:

- :func:`matmul_precision`: the element types the matrix instruction reads and
  writes, and every ``convert`` that widened a narrower value (FP8, FP4, int8)
  on its way to the instruction's operands, across fusion boundaries back to
  the program's parameters. A scaled FP8 matmul that XLA's GEMM rewriter turns
  into one FP8 cuBLASLt call (``__cublas$lt$matmul$f8``) reads its FP8 operands
  directly: ``GemmRewriter`` matches FP8 value -> ``convert`` -> ``multiply``
  or ``divide`` by a scale -> ``dot`` (``IsSupportedF8Pattern``,
  xla/backends/gpu/transforms/gemm_rewriter.cc in jaxlib 0.10.2's XLA,
  xla/service/gpu/transforms/ before). When the HLO still shows the
  ``convert`` before the dot, that rewrite did not happen and the dot runs on
  the wider type.
- :func:`split_k`: whether the GEMM computes its result as partial products
  over pieces of the contracting dimension K that a ``reduce`` sums afterwards.
  XLA writes split-K two ways, both splitting the operands' K dimension into
  ``[parts, K / parts]``, making ``parts`` a new batch dimension of the dot
  right before the contracting one, computing in the accumulator type (f32
  for bf16 operands) and summing the parts with a ``reduce`` (``add``) that
  carries the dot's metadata, named ``<operand>.reduce_sub_computation``
  (``MakeReduceHlo``, xla/service/hlo_creation_utils.cc):
  ``SplitkRewriter`` on the dot before GEMM fusion (splitk_rewriter.cc,
  xla/service/gpu/transforms/ in openxla/xla; the pass of jaxlib 0.10.2's
  dumps: the split is the last batch dimension) and, for an autotuned Triton
  GEMM, ``MakeDotSplitKBatch`` with ``triton_gemm_config.split_k``
  (xla/service/gpu/split_k_gemm_rewriter.cc: the split is the major-most
  dimension of the fusion's result, reduced right after it).

Pure queries of the model; never raise on malformed or partial modules (what
cannot be decoded is left out).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from hlo_lsp.model.cost import CONV_TARGETS
from hlo_lsp.model.shape_costs import decode, int_list
from hlo_lsp.model.roofline import matrix_instruction
from hlo_lsp.model.hlo import Computation, HloModule, Instruction
from hlo_lsp.model.kernels import (backend_config_data, custom_call_target,
                                   fusion_backend_kind, short_shape)
from hlo_lsp.model.opcodes import ELEMENTWISE
from hlo_lsp.model.shapes import ELEMENT_TYPES, ArrayShape, TupleShape

#: Source of the FP8 GEMM fact (the pattern the HLO shows did not become one call).
SRC_FP8_REWRITE = "xla/backends/gpu/transforms/gemm_rewriter.cc"
#: Sources of the split-K facts.
SRC_SPLIT_K = "xla/service/gpu/transforms/splitk_rewriter.cc"
SRC_SPLIT_K_TRITON = "xla/service/gpu/split_k_gemm_rewriter.cc"

#: Most instructions looked at while tracing one operand of a matrix instruction.
MAX_STEPS = 128

#: Opcodes a value passes through on its way to a dot: layout and data movement,
#: and elementwise arithmetic (a scale, a bias). Not ``bitcast-convert`` (the
#: bits are read as another type, nothing is widened) nor comparisons.
_THROUGH = (ELEMENTWISE - {"bitcast-convert", "compare", "is-finite", "map", "rng",
                           "stochastic-convert"}) | frozenset(
    {"bitcast", "broadcast", "concatenate", "copy", "dynamic-reshape", "dynamic-slice",
     "pad", "reshape", "reverse", "slice", "transpose"})

#: Opcodes that move or relabel values without computing: the origin of a
#: converted value is looked for through them.
_RELABEL = frozenset({"bitcast", "copy", "reshape", "transpose", "get-tuple-element"})

#: Operands of an opcode that carry its data (others: indices, predicates).
_DATA_OPERANDS = {"select": (1, 2), "dynamic-slice": (0,), "clamp": (1,), "pad": (0,)}


def _element_type(ins: Instruction | None) -> str:
    shape = decode(ins)
    if isinstance(shape, TupleShape):
        shape = shape.elements[0] if shape.elements else None
    return shape.element_type if isinstance(shape, ArrayShape) else ""


def _bits(element_type: str) -> int:
    return ELEMENT_TYPES.get(element_type, (0, ""))[0]


def _numeric(element_type: str) -> bool:
    return element_type in ELEMENT_TYPES and element_type not in ("pred", "token", "opaque")


def is_fp8(element_type: str) -> bool:
    """Whether ``element_type`` is one of XLA's 8-bit floating-point types
    (``f8e4m3fn``, ``f8e5m2``, ..., xla/xla_data.proto PrimitiveType)."""
    return element_type.startswith("f8")


def _operand(ins: Instruction, i: int) -> Instruction | None:
    comp = ins.computation
    if comp is None or i >= len(ins.operands):
        return None
    return comp.by_name.get(ins.operands[i].ref.name)


def _caller_fusion(module: HloModule, comp: Computation | None) -> Instruction | None:
    """The fusion instruction whose ``calls=`` is ``comp`` (the first, when a
    fused computation is shared), None for other computations."""
    if comp is None:
        return None
    for caller, cref in module.callers_of(comp.name.name, comp.start):
        if caller.opcode == "fusion" and cref.attr == "calls":
            return caller
    return None


def _fused_root(module: HloModule, fusion: Instruction) -> Instruction | None:
    for cref in fusion.called:
        if cref.attr == "calls":
            callee = module.resolve(cref.ref.name, cref.ref.start)
            return callee.root if callee is not None else None
    return None


def _across(module: HloModule, ins: Instruction) -> Instruction | None:
    """What ``ins`` stands for one step up: the caller's operand for a parameter
    of a fused computation, the fused root for a fusion, the tuple element a
    ``get-tuple-element`` of a fusion reads; None otherwise."""
    if ins.opcode == "parameter" and ins.parameter_number is not None:
        caller = _caller_fusion(module, ins.computation)
        return _operand(caller, ins.parameter_number) if caller is not None else None
    if ins.opcode == "fusion":
        return _fused_root(module, ins)
    if ins.opcode == "get-tuple-element":
        producer = _operand(ins, 0)
        index = ins.attribute("index")
        if producer is None or index is None or not index.value.isdigit():
            return None
        if producer.opcode == "fusion":
            producer = _fused_root(module, producer)
        if producer is not None and producer.opcode == "tuple":
            return _operand(producer, int(index.value))
    return None


def _origin(module: HloModule, ins: Instruction) -> Instruction:
    """The value ``ins`` is a relabelled copy of: through bitcasts, reshapes,
    copies, transposes and fusion boundaries up to the first instruction that
    computes (or a parameter of the ENTRY computation)."""
    current = ins
    for _ in range(64):
        step = _across(module, current)
        if step is None and current.opcode in _RELABEL and current.opcode != "get-tuple-element":
            step = _operand(current, 0)
        if step is None:
            return current
        current = step
    return current


@dataclass(frozen=True, slots=True)
class Widening:
    """A ``convert`` that widened a value on its way to a matrix instruction's
    operand ``operand`` (0: lhs / input, 1: rhs / filter): ``source_type`` ->
    ``target_type`` (e.g. ``f8e4m3fn`` -> ``bf16``). ``origin`` is the
    narrower value (a program parameter, or what computed it), ``fusion`` the
    fusion whose computation holds the convert (None when the convert is in
    the kernel's own computation or outside any fusion)."""

    convert: Instruction
    source_type: str
    target_type: str
    origin: Instruction
    fusion: Instruction | None
    operand: int


@dataclass(frozen=True, slots=True)
class MatmulPrecision:
    """The precision of one matrix kernel (:func:`matmul_precision`).

    ``kernel`` is the instruction asked about, ``matrix`` the dot, convolution
    or library call doing the matrix work, ``operand_types`` the element types
    of its two matrix operands (lhs, rhs), ``result_type`` the element type it
    writes (the accumulator of a split-K dot), ``widenings`` the converts that
    widened narrower values before it, in operand order."""

    kernel: Instruction
    matrix: Instruction
    operand_types: tuple[str, ...]
    result_type: str
    widenings: tuple[Widening, ...]
    #: the module was compiled for a GPU (:func:`is_gpu_module`): widened FP8
    #: then means XLA's FP8 GEMM rewrite did not apply
    gpu: bool = False

    @property
    def compute_type(self) -> str:
        """The widest of :attr:`operand_types` (the type the products are
        computed in); "" when unknown."""
        known = [t for t in self.operand_types if t]
        return max(known, key=_bits) if known else ""

    @property
    def source_types(self) -> list[str]:
        """The narrower element types that were widened, each once, in order."""
        return list(dict.fromkeys(w.source_type for w in self.widenings))

    @property
    def fp8_widened(self) -> bool:
        """Whether an FP8 value was converted to a wider type before the matrix
        instruction: the scaled-FP8 GEMM (``__cublas$lt$matmul$f8``) was not
        made of it."""
        return any(is_fp8(w.source_type) for w in self.widenings)

    def sentence(self, name: Callable[[str], str] = lambda s: s) -> str:
        """One line saying what the kernel computes in and what was widened,
        e.g. ``Computes in bf16: its f8e4m3fn operands are converted to bf16
        before the dot (%x.1 by %convert.4 in %loop_multiply_fusion.1; ...);
        not an FP8 GEMM: XLA's scaled-FP8 rewrite to __cublas$lt$matmul$f8 did
        not apply (xla/backends/gpu/transforms/gemm_rewriter.cc)``, the last
        part for a GPU module only (:attr:`gpu`). ``name``
        formats each instruction name and custom-call target (``%`` included),
        e.g. as a Markdown code span. "" when nothing was widened."""
        if not self.widenings:
            return ""
        what = self.matrix.opcode
        if what == "custom-call":
            what = "convolution" if custom_call_target(self.matrix) in CONV_TARGETS else "GEMM"
        targets = list(dict.fromkeys(w.target_type for w in self.widenings))
        sources = "/".join(self.source_types)
        plural = "s" if len({w.operand for w in self.widenings}) > 1 else ""
        steps = "; ".join(
            f"{name('%' + w.origin.name.name)} by {name('%' + w.convert.name.name)}" +
            (f" in {name('%' + w.fusion.name.name)}" if w.fusion is not None else "")
            for w in self.widenings[:4])
        more = f"; {len(self.widenings) - 4} more" if len(self.widenings) > 4 else ""
        line = (f"Computes in {self.compute_type or '/'.join(targets)}: its {sources} "
                f"operand{plural} {'are' if plural else 'is'} converted to "
                f"{'/'.join(targets)} before the {what} ({steps}{more})")
        if self.result_type and self.result_type != self.compute_type:
            line += f", result {self.result_type}"
        if self.fp8_widened and self.gpu:
            line += (f"; not an FP8 GEMM: XLA's scaled-FP8 rewrite to "
                     f"{name('__cublas$lt$matmul$f8')} did not apply ({SRC_FP8_REWRITE})")
        return line


def is_gpu_module(module: HloModule) -> bool:
    """Whether ``module`` was compiled by XLA:GPU, as far as its text shows: a
    GPU backend_config (``operation_queue_id``, GpuBackendConfig), a cuBLAS /
    cuDNN custom-call or a Triton fusion (also one GemmFusion named without
    backend_config, :func:`hlo_lsp.model.kernels.fusion_backend_kind`). Only
    there does a dot on widened FP8 mean that the FP8 GEMM rewrite did not
    apply. Computed once per module."""
    return module.derived("precision.gpu", _is_gpu_module)


def _is_gpu_module(module: HloModule) -> bool:
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "custom-call":
                target = custom_call_target(ins) or ""
                if target.startswith(("__cublas$", "__cudnn$")):
                    return True
            elif ins.opcode == "fusion":
                kind = fusion_backend_kind(ins)[0]
                if kind.startswith(("__triton", "__cudnn")):
                    return True
            config = ins.attribute("backend_config")
            if config is not None and '"operation_queue_id"' in config.value[:200]:
                return True
    return False


def _matrix_operands(matrix: Instruction) -> tuple[int, ...]:
    if matrix.opcode == "custom-call":
        return (0, 1) if len(matrix.operands) >= 2 else ()
    return (0, 1)


def matmul_precision(module: HloModule, ins: Instruction) -> MatmulPrecision | None:
    """What precision the matrix work of ``ins`` computes in: ``ins`` is a
    ``dot``/``convolution`` (also inside a fused computation), a fusion holding
    one (the first found, :func:`hlo_lsp.model.roofline.matrix_instruction`), or a
    cuBLAS / cuBLASLt GEMM or cuDNN convolution custom-call. None for anything
    else.

    Each matrix operand is traced up through data movement and elementwise
    instructions (scales, biases; scalar operands are left out), across fusion
    boundaries (a fused parameter to the fusion's operand, a fusion to its
    root) to the program's parameters or the first instruction that computes
    otherwise; every ``convert`` from a narrower numeric type on the way is a
    :class:`Widening` (the trace stops there). At most :data:`MAX_STEPS`
    instructions per operand."""
    matrix = matrix_instruction(module, ins)
    if matrix is None:
        return None
    operands = _matrix_operands(matrix)
    types = tuple(_element_type(_operand(matrix, i)) for i in operands)
    kernel_comp = ins.computation if ins.opcode == "fusion" else matrix.computation
    widenings: list[Widening] = []
    for i in operands:
        start = _operand(matrix, i)
        if start is not None:
            widenings.extend(w for w in _widenings(module, start, i, kernel_comp,
                                                   matrix.computation)
                             if all(w.convert is not v.convert for v in widenings))
    return MatmulPrecision(ins, matrix, types, _element_type(matrix), tuple(widenings),
                           bool(widenings) and is_gpu_module(module))


def _widenings(module: HloModule, start: Instruction, operand: int,
               *kernel_comps: Computation | None) -> list[Widening]:
    found: list[Widening] = []
    # Each entry: an instruction and the fewest bits of any value between it
    # and the matrix operand (what the matrix instruction reads of it).
    stack = [(start, _bits(_element_type(start)) or 64)]
    seen: set[int] = set()
    steps = 0
    while stack and steps < MAX_STEPS:
        ins, floor = stack.pop()
        if id(ins) in seen:
            continue
        seen.add(id(ins))
        steps += 1
        step = _across(module, ins)
        if step is not None:
            stack.append((step, floor))
            continue
        if ins.opcode == "convert":
            source = _operand(ins, 0)
            src, dst = _element_type(source), _element_type(ins)
            if source is not None and _numeric(src) and _numeric(dst) and \
                    0 < _bits(src) < min(_bits(dst), floor):
                comp = ins.computation
                fusion = None if comp in kernel_comps else _caller_fusion(module, comp)
                found.append(Widening(ins, src, dst, _origin(module, source), fusion, operand))
                continue
        if ins.opcode not in _THROUGH:
            continue
        floor = min(floor, _bits(_element_type(ins)) or floor)
        indices = _DATA_OPERANDS.get(ins.opcode, range(len(ins.operands)))
        if ins.opcode == "slice":
            indices = _sliced_parts(ins)
        for i in reversed(tuple(indices)):
            # A negative index -1 - j is part j of the concatenate a slice reads.
            producer = _operand(_operand(ins, 0), -1 - i) if i < 0 else _operand(ins, i)
            shape = decode(producer)
            if producer is not None and not (isinstance(shape, ArrayShape) and
                                             shape.rank == 0):
                stack.append((producer, floor))
    found.sort(key=lambda w: w.convert.start)
    return found


_SLICE_BOUNDS = re.compile(r"\[\s*(-?\d+)\s*:\s*(-?\d+)")


def _sliced_parts(ins: Instruction) -> tuple[int, ...]:
    """The operands of a ``slice`` worth following: when it slices a
    ``concatenate`` along the concatenated dimension, only the parts the slice
    reads (XLA's horizontal fusion concatenates and slices again, seed 001);
    otherwise its operand."""
    source = _operand(ins, 0)
    attr = ins.attribute("slice")
    if source is None or source.opcode != "concatenate" or attr is None:
        return (0,)
    dims = _dims(source, "dimensions")
    bounds = [(int(a), int(b)) for a, b in _SLICE_BOUNDS.findall(attr.value)]
    if len(dims) != 1 or dims[0] >= len(bounds):
        return (0,)
    lo, hi = bounds[dims[0]]
    offset = 0
    wanted = []
    for i in range(len(source.operands)):
        shape = decode(_operand(source, i))
        if not isinstance(shape, ArrayShape) or dims[0] >= shape.rank:
            return (0,)
        size = shape.dims[dims[0]]
        if offset < hi and lo < offset + size:
            wanted.append(i)
        offset += size
    # The slice's own operand is the concatenate: follow the parts through it.
    return tuple(-1 - i for i in wanted) or (0,)


# ---------------------------------------------------------------------------
# Split-K


@dataclass(frozen=True, slots=True)
class SplitK:
    """A split-K GEMM (:func:`split_k`): ``gemm`` (the fusion or dot asked
    about) computes ``parts`` partial products of its ``dot``, each over
    ``k // parts`` elements of the contracting dimension (``k`` in all, None
    when unknown), indexed by dimension ``dimension`` of its result
    ``partial_shape`` (layout left out, e.g. ``f32[4,256,384]``); ``reduce`` is
    the ``reduce`` that sums them, ``reduce_kernel`` the kernel holding it (a
    fusion, or the reduce itself), both None when not found. ``source`` says
    how the split is known: ``"triton_gemm_config.split_k"`` or ``"dot"`` (a
    batch dimension split off the contracting one and summed by a reduce)."""

    gemm: Instruction
    dot: Instruction
    parts: int
    dimension: int
    k: int | None
    partial_shape: str
    reduce: Instruction | None
    reduce_kernel: Instruction | None
    source: str

    def sentence(self, name: Callable[[str], str] = lambda s: s) -> str:
        """One line, e.g. ``Split-K 4: the contracting dimension K (512) is split
        into 4 partial products of 128 (f32[4,256,384], dimension 0) summed by
        %reduce.4 in %loop_add_fusion (xla/service/gpu/transforms/splitk_rewriter.cc)``;
        ``name`` formats instruction names and shapes."""
        size = f" ({self.k:,})" if self.k is not None else ""
        each = f" of {self.k // self.parts:,}" if self.k is not None else ""
        line = (f"Split-K {self.parts}: the contracting dimension K{size} is split into "
                f"{self.parts} partial products{each} ({name(self.partial_shape)}, "
                f"dimension {self.dimension})")
        if self.reduce is not None:
            line += f" summed by {name('%' + self.reduce.name.name)}"
            if self.reduce_kernel is not None and self.reduce_kernel is not self.reduce:
                line += f" in {name('%' + self.reduce_kernel.name.name)}"
        else:
            line += ", summed by a reduce after it"
        source = SRC_SPLIT_K_TRITON if self.source.startswith("triton") else SRC_SPLIT_K
        return f"{line} ({source})"

    def sum_sentence(self, name: Callable[[str], str] = lambda s: s) -> str:
        """The line of the kernel that sums the parts, e.g. ``Split-K sum: sums
        the 4 partial products of %gemm_fusion_dot (f32[4,256,384], dimension
        0) over K``; ``name`` as in :meth:`sentence`."""
        return (f"Split-K sum: sums the {self.parts} partial products of "
                f"{name('%' + self.gemm.name.name)} ({name(self.partial_shape)}, "
                f"dimension {self.dimension}) over K")


def _triton_split_k(ins: Instruction) -> int:
    data = backend_config_data(ins) if ins.opcode == "fusion" else None
    fusion = data.get("fusion_backend_config") if data is not None else None
    gemm = fusion.get("triton_gemm_config") if isinstance(fusion, dict) else None
    value = gemm.get("split_k") if isinstance(gemm, dict) else None
    try:
        return int(value) if value is not None else 0
    except (TypeError, ValueError):
        return 0


def _dims(ins: Instruction, name: str) -> list[int]:
    attr = ins.attribute(name)
    return int_list(attr.value) if attr is not None else []


def _adds(module: HloModule, reduce: Instruction) -> bool:
    for cref in reduce.called:
        if cref.attr == "to_apply":
            callee = module.resolve(cref.ref.name, cref.ref.start)
            root = callee.root if callee is not None else None
            return root is not None and root.opcode == "add"
    return False


def _sums(module: HloModule, ins: Instruction, value: Instruction, dim: int) -> bool:
    return (ins.opcode == "reduce" and bool(ins.operands) and
            ins.operands[0].ref.name == value.name.name and
            _dims(ins, "dimensions") == [dim] and _adds(module, ins))


def _summing_reduce(module: HloModule, gemm: Instruction, dim: int
                    ) -> tuple[Instruction | None, Instruction | None]:
    """The reduce (and the kernel holding it) that sums dimension ``dim`` of
    ``gemm``'s result: a user in the same computation, or inside a fusion
    that reads it (through its parameter)."""
    comp = gemm.computation
    if comp is None:
        return None, None
    for user in comp.users_by_name.get(gemm.name.name, []):
        if _sums(module, user, gemm, dim):
            return user, user
        if user.opcode != "fusion":
            continue
        callee = next((module.resolve(c.ref.name, c.ref.start) for c in user.called
                       if c.attr == "calls"), None)
        if callee is None:
            continue
        params = callee.parameters()
        for i, op in enumerate(user.operands):
            param = params.get(i)
            if op.ref.name != gemm.name.name or param is None:
                continue
            for inner in callee.users_by_name.get(param.name.name, []):
                if _sums(module, inner, param, dim):
                    return inner, user
    return None, None


def split_k(module: HloModule, ins: Instruction) -> SplitK | None:
    """Whether ``ins`` (a fusion holding a ``dot``, or a bare ``dot``; the ROOT
    dot of a fused computation stands for its fusion) is a split-K GEMM, and
    how (:class:`SplitK`); None otherwise.

    Split-K when the fusion's ``triton_gemm_config.split_k`` is above 1, or when
    the dot has one contracting dimension per operand, a batch dimension right
    before it on both operands (where XLA puts the split) and a ``reduce``
    (``add``) over that dimension of the result consumes it (in the same
    computation or in the fusion that reads it). A user's own batched matmul
    summed over its batch is the same computation and reads the same way."""
    matrix = matrix_instruction(module, ins)
    if matrix is None or matrix.opcode not in ("dot", "scaled-dot"):
        return None
    comp = ins.computation
    if ins is matrix and comp is not None and comp.root is ins:
        # The dot of a GEMM fusion: the fusion's result holds the parts.
        caller = _caller_fusion(module, comp)
        if caller is not None:
            return split_k(module, caller)
    lhs = decode(_operand(matrix, 0))
    result = decode(matrix)
    kernel_shape = decode(ins)
    if not isinstance(result, ArrayShape) or not isinstance(kernel_shape, ArrayShape):
        return None
    lhs_c, rhs_c = _dims(matrix, "lhs_contracting_dims"), _dims(matrix, "rhs_contracting_dims")
    lhs_b, rhs_b = _dims(matrix, "lhs_batch_dims"), _dims(matrix, "rhs_batch_dims")
    split_at = None
    if len(lhs_c) == 1 and len(rhs_c) == 1 and len(lhs_b) == len(rhs_b):
        split_at = next((j for j, (lb, rb) in enumerate(zip(lhs_b, rhs_b))
                         if lb == lhs_c[0] - 1 and rb == rhs_c[0] - 1), None)
    configured = _triton_split_k(ins)
    if configured > 1:
        dim = 0
    elif split_at is not None and kernel_shape.dims == result.dims:
        dim = split_at
    else:
        return None
    if not 0 <= dim < kernel_shape.rank:
        return None
    parts = configured if configured > 1 else kernel_shape.dims[dim]
    reduce, holder = _summing_reduce(module, ins, dim)
    if configured <= 1 and reduce is None:
        return None
    k = None
    if isinstance(lhs, ArrayShape) and len(lhs_c) == 1 and 0 <= lhs_c[0] < lhs.rank:
        k = lhs.dims[lhs_c[0]] * (parts if split_at is not None else 1)
    return SplitK(ins, matrix, parts, dim, k, short_shape(kernel_shape.text), reduce, holder,
                  "triton_gemm_config.split_k" if configured > 1 else "dot")


def split_k_sum(module: HloModule, ins: Instruction) -> SplitK | None:
    """The split-K GEMM whose partial products ``ins`` sums: ``ins`` is that
    ``reduce``, or the fusion holding it (:attr:`SplitK.reduce_kernel`); None
    otherwise."""
    if ins.opcode == "reduce":
        candidates = [ins]
    elif ins.opcode == "fusion":
        callee = next((module.resolve(c.ref.name, c.ref.start) for c in ins.called
                       if c.attr == "calls"), None)
        candidates = [i for i in (callee.instructions if callee is not None else ())
                      if i.opcode == "reduce"]
    else:
        return None
    for reduce in candidates[:16]:
        source = _operand(reduce, 0)
        if source is not None and source.opcode == "parameter":
            source = _across(module, source)
        if source is None or source.opcode not in ("fusion", "dot"):
            continue
        found = split_k(module, source)
        if found is not None and found.reduce is reduce:
            return found
    return None


#: The opcodes :func:`kernel_notes` (and hover) look at: kernels that may do
#: matrix work, and the reduce that sums a split-K GEMM's parts.
NOTED_OPCODES = frozenset({"fusion", "custom-call", "dot", "scaled-dot", "ragged-dot",
                           "convolution", "reduce"})


def kernel_notes(module: HloModule, ins: Instruction) -> list[str]:
    """The plain-text notes of the kernel summary for ``ins``: what it computes
    in when narrower values were widened before its matrix instruction
    (:meth:`MatmulPrecision.sentence`), its split-K (:meth:`SplitK.sentence`),
    and, for the kernel that sums a split-K GEMM's partial products, which.
    [] for most instructions (a quick opcode test first)."""
    if ins.opcode not in NOTED_OPCODES:
        return []
    notes: list[str] = []
    precision = matmul_precision(module, ins)
    if precision is not None and precision.widenings:
        notes.append(precision.sentence())
    split = split_k(module, ins)
    if split is not None:
        notes.append(split.sentence())
    summed = split_k_sum(module, ins)
    if summed is not None:
        notes.append(summed.sum_sentence())
    return notes
