"""How long a cost takes on a device: the roofline estimate (the compute time
at the device's peak for the kernel's precision against the memory time at its
bandwidth) and the precision that bounds a kernel (the element type of its
matrix work). Costs come from :mod:`hlo_lsp.model.cost`, peaks and bandwidths
from :mod:`hlo_lsp.model.accelerators`. Pure; never raises.
"""

from __future__ import annotations

from dataclasses import dataclass

from hlo_lsp.model.accelerators import Accelerator
from hlo_lsp.model.cost import CONV_TARGETS, GEMM_TARGETS, Cost, cost_model
from hlo_lsp.model.hlo import HloModule, Instruction
from hlo_lsp.model.kernels import custom_call_target
from hlo_lsp.model.shapes import ArrayShape
from hlo_lsp.model.units import as_float


#: Opcodes whose cost is matrix work (tensor cores, matrix units).
MATRIX_OPCODES = frozenset({"dot", "scaled-dot", "ragged-dot", "convolution"})


def kernel_precision(module: HloModule, ins: Instruction) -> str:
    """The precision key (:mod:`hlo_lsp.model.accelerators`) whose peak bounds
    ``ins``: for matrix work (a dot or convolution, inside a fusion too, or a
    GEMM/convolution library call) the element type of its first operand (an
    f32 product at HIGHEST ``operand_precision`` runs on the vector units,
    otherwise as TF32); ``f32`` (vector units) for everything else."""
    comp = ins.computation
    matrix = matrix_instruction(module, ins)
    if matrix is None:
        return "f32"
    operand = cost_model(module)._operand_shape(matrix, matrix.computation or comp, 0)
    kind = operand.element_type if isinstance(operand, ArrayShape) else "f32"
    if kind.startswith("f8"):
        return "f8"
    if kind in ("bf16", "f16", "f64"):
        return kind
    if kind in ("s8", "u8", "s4", "u4"):
        return "int8"
    attr = matrix.attribute("operand_precision")
    precision = (attr.value if attr is not None else "").lower()
    config = matrix.attribute("backend_config")
    if "highest" in precision or (config is not None and '"HIGHEST"' in config.value):
        return "f32"
    return "tf32"


def matrix_instruction(module: HloModule, ins: Instruction) -> Instruction | None:
    """The instruction doing the matrix work of ``ins``: ``ins`` itself when it
    is a dot or convolution (:data:`MATRIX_OPCODES`) or a cuBLAS GEMM / cuDNN
    convolution custom-call (:data:`GEMM_TARGETS`, :data:`CONV_TARGETS`), the
    first such instruction of a fusion's called computation (through nested
    fusions, at most 8 deep); None otherwise."""
    return _matrix_instruction(module, ins, 0)


def _matrix_instruction(module: HloModule, ins: Instruction, depth: int) -> Instruction | None:
    if ins.opcode in MATRIX_OPCODES:
        return ins
    if ins.opcode == "custom-call":
        target = custom_call_target(ins) or ""
        return ins if target in GEMM_TARGETS or target in CONV_TARGETS else None
    if ins.opcode != "fusion" or depth > 8:
        return None
    for cref in ins.called:
        callee = module.by_name.get(cref.ref.name)
        for inner in callee.instructions if callee is not None else ():
            found = _matrix_instruction(module, inner, depth + 1)
            if found is not None:
                return found
    return None


@dataclass(frozen=True, slots=True)
class Roofline:
    """A roofline estimate on ``device``: ``seconds`` = max(``compute_seconds``,
    ``memory_seconds``), ``bound`` "compute" or "memory", the compute side at
    the device's peak for ``precision``."""

    seconds: float
    compute_seconds: float
    memory_seconds: float
    bound: str
    precision: str
    device: Accelerator


def roofline(cost: Cost, device: Accelerator, precision: str = "f32") -> Roofline:
    """time = max(FLOPs / peak FLOP/s at ``precision``, bytes / memory bandwidth),
    in seconds; transcendentals count one operation each at the device's f32
    (vector) rate. XLA's -1 for an unknown custom-call counts zero. Counts past
    a float's range (the shapes of broken or hostile text) take infinite time."""
    compute, memory = _roofline_sides(cost, device, precision)
    bound = "compute" if compute > memory else "memory"
    return Roofline(max(compute, memory), compute, memory, bound, precision, device)


def roofline_time(cost: Cost, device: Accelerator, precision: str = "f32") -> tuple[float, str]:
    """``(seconds, bound)`` of :func:`roofline`, without the record: what the
    summary reads of every kernel of a dump."""
    compute, memory = _roofline_sides(cost, device, precision)
    return max(compute, memory), "compute" if compute > memory else "memory"


def _roofline_sides(cost: Cost, device: Accelerator, precision: str) -> tuple[float, float]:
    """The compute and the memory time of :func:`roofline`, in seconds."""
    compute = as_float(max(cost.known_flops, 0.0)) / device.flops_per_second(precision) + \
        as_float(max(cost.transcendentals, 0.0)) / device.flops_per_second("f32")
    memory = as_float(max(cost.known_bytes, 0.0)) / device.memory_bandwidth
    return compute, memory
