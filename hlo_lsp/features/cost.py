"""The **Cost** section of a kernel's hover: FLOPs, transcendentals and bytes
accessed as XLA's HloCostAnalysis counts them (:mod:`hlo_lsp.model.cost`), and
a roofline estimate on a device (:mod:`hlo_lsp.model.accelerators`):
"~12 µs on H100 SXM, memory-bound".

The device is the one the settings name, else the one the dump's file name
implies (``sm_9.0_gpu`` -> H100 SXM; :func:`hlo_lsp.dump.names.parse_dump_name`),
else the CPU default (:func:`hlo_lsp.dump.names.device_for`). Costs are computed on first hover of
an instruction and cached with the module (one fused computation per fusion).
"""

from __future__ import annotations

from hlo_lsp.model.accelerators import DEFAULT, ACCELERATORS, Accelerator
from hlo_lsp.model.cost import Cost, cost_model, custom_call_estimate, instruction_cost
from hlo_lsp.model.roofline import kernel_precision, roofline
from hlo_lsp.model.units import format_count, format_seconds
from hlo_lsp.model.hlo import HloModule, Instruction
from hlo_lsp.model.opcodes import COMPUTE
from hlo_lsp.model.markdown import code

#: Instructions whose hover has a Cost section: kernels and matrix or reducing
#: work (control flow and bookkeeping have none; a while's body is costed
#: where its kernels are).
COSTED = frozenset({"fusion", "custom-call"}) | COMPUTE | {"scaled-dot", "gather", "scatter"}


def cost_section(module: HloModule, ins: Instruction, device: Accelerator | None = None) -> str:
    """Markdown lines about what ``ins`` costs and how long it takes at best on
    ``device`` (default: the CPU default); "" for instructions that are not
    kernels or compute (:data:`COSTED`). An instruction inside a fused
    computation gets its cost without a time: the fusion is the kernel."""
    if ins.opcode not in COSTED:
        return ""
    device = device or ACCELERATORS[DEFAULT]
    cost = instruction_cost(module, ins)
    lines: list[str] = []
    where = "XLA's HloCostAnalysis rules"
    if ins.opcode == "fusion":
        where += ": the fused computation's work, bytes at the fusion's boundary"
    if cost.unknown:
        estimate = custom_call_estimate(module, ins) if ins.opcode == "custom-call" else None
        if estimate is None:
            return ("**Cost**: unknown (XLA's cost analysis counts custom-calls as -1 FLOPs "
                    "and -1 bytes)")
        cost = estimate
        where = "estimated as XLA:GPU's cost analysis does for this library call"
    lines.append(f"**Cost** ({where}): {_quantities(cost)}")
    fusion = _enclosing_fusion(module, ins)
    if fusion is not None:
        lines.append(f"Part of the fusion {code('%' + fusion)}: its bytes stay on chip; the "
                     "fusion's hover has the kernel's cost and time.")
        return "\n\n".join(lines)
    precision = kernel_precision(module, ins)
    est = roofline(cost, device, precision)
    rate = format_count(device.flops_per_second(precision), "FLOP/s")
    bandwidth = format_count(device.memory_bandwidth, "B/s")
    lines.append(f"**Roofline**: ~{format_seconds(est.seconds)} on {device.name}, "
                 f"{est.bound}-bound (compute {format_seconds(est.compute_seconds)} at "
                 f"{rate} {device.rate_key(precision)}; memory {format_seconds(est.memory_seconds)} at "
                 f"{bandwidth})")
    return "\n\n".join(lines)


def _enclosing_fusion(module: HloModule, ins: Instruction) -> str | None:
    """The name of a fusion calling the computation that holds ``ins``."""
    comp = ins.computation
    fusion = cost_model(module).fusion_of(comp.name.name) if comp is not None else None
    return fusion.name.name if fusion is not None else None


def _quantities(cost: Cost) -> str:
    parts = [format_count(cost.flops, "FLOP")]
    if cost.transcendentals:
        parts.append(format_count(cost.transcendentals, "").strip() + " transcendentals")
    parts.append(f"{format_count(cost.bytes_accessed, 'B')} accessed")
    return ", ".join(parts)
