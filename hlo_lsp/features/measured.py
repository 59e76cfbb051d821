"""Measured time in words: the **Measured** line of an instruction's hover, the
code lens of a computation, and the estimate they compare with.

The numbers are :mod:`hlo_lsp.model.profile`'s (µs, summed over every event of
a profile); the estimate is the roofline of :mod:`hlo_lsp.model.roofline` on
the device the profile ran on (the host CPU's default figures for a
``/host:CPU`` plane, the dump's GPU for a ``/device:GPU:N`` one). Text from the
profile (instruction names) is written as code spans (:mod:`hlo_lsp.model.markdown`).
Pure.
"""

from __future__ import annotations

from hlo_lsp.model.accelerators import ACCELERATORS, DEFAULT, Accelerator
from hlo_lsp.model.cost import instruction_cost
from hlo_lsp.model.hlo import Computation, HloModule, Instruction
from hlo_lsp.model.markdown import code, text
from hlo_lsp.model.profile import Measured, ModuleProfile
from hlo_lsp.model.roofline import kernel_precision, roofline_time
from hlo_lsp.model.units import format_microseconds as _us, format_seconds
from hlo_lsp.features.cost import COSTED


def profile_device(plane: str, file_device: Accelerator | None) -> Accelerator | None:
    """The accelerator whose roofline a measurement on ``plane`` is compared
    with: the CPU default for ``/host:...``, the file's device (from its name or
    the settings) for ``/device:GPU:...``; None when neither is known."""
    if plane.startswith("/host:"):
        return ACCELERATORS[DEFAULT]
    if plane.startswith("/device:GPU"):
        return file_device
    return None


def estimate_seconds(module: HloModule, ins: Instruction, device: Accelerator) -> float | None:
    """The roofline time of ``ins`` on ``device`` in seconds, as the hover's
    Cost section computes it; None when the instruction has no cost (control
    flow, bookkeeping, a custom-call XLA does not count)."""
    if ins.opcode not in COSTED:
        return None
    cost = instruction_cost(module, ins)
    if cost.unknown:
        return None
    seconds, _ = roofline_time(cost, device, kernel_precision(module, ins))
    return seconds if seconds > 0 else None


def measured_sentence(m: Measured, profile: ModuleProfile, op: str) -> str:
    """``10 runs in 5 executions, 602 µs in all: mean 60.2 µs (self 40 µs), min
    309 ns, max 130 µs; 65.3% of the step``: one instruction's measurements in
    words. A run is one event (an op of a loop body runs once per iteration; a
    CPU sort is two thunks); the executions are the module's, named when they
    differ from the runs; self time only when it differs (a loop, a
    conditional, a call)."""
    runs = f"{m.count} run{'s' if m.count != 1 else ''}"
    if m.executions != m.count:
        runs += f" in {m.executions} execution{'s' if m.executions != 1 else ''}"
    detail = f"mean {_us(m.mean_us)}"
    if m.self_us < m.total_us * 0.999:
        detail += f" (self {_us(m.mean_self_us)})"
    if m.count > 1:
        detail += f", min {_us(m.min_us)}, max {_us(m.max_us)}"
    out = f"{runs}, {_us(m.total_us)} in all: {detail}"
    share = profile.share(op)
    if share is not None:
        out += f"; {share:.1%} of the step" if share >= 0.001 else "; under 0.1% of the step"
    return out


def ratio_text(ratio: float) -> str:
    """A measured/estimated ratio: ``14,200x``, ``34.5x``, ``0.52x``."""
    return f"{ratio:,.0f}x" if ratio >= 100 else f"{ratio:.3g}x"


def measured_markdown(module: HloModule, ins: Instruction, profile: ModuleProfile,
                      run: str, device: Accelerator | None) -> str:
    """The **Measured** paragraph of ``ins``'s hover, "" when the profile did not
    measure it. ``run``: the capture's name; ``device``: the accelerator the
    measurement ran on (:func:`profile_device`), whose roofline estimate it is
    compared with when the instruction has one."""
    name = ins.name.name
    m = profile.ops.get(name)
    if m is None:
        return ""
    where = text(profile.devices[0]) if profile.devices else "the profile"
    out = f"**Measured** ({where}, profile {code(run)}): {measured_sentence(m, profile, name)}"
    if device is not None:
        estimate = estimate_seconds(module, ins, device)
        if estimate is not None:
            out += (f"; roofline estimate {format_seconds(estimate)} on {device.name}: "
                    f"measured {ratio_text(m.mean_self_us * 1e-6 / estimate)} the estimate")
    if m.covers:
        shown = ", ".join(code("%" + c) for c in m.covers[:5])
        more = f" and {len(m.covers) - 5} more" if len(m.covers) > 5 else ""
        out += (f"\n\nOne measurement covers {len(m.covers) + 1} instructions (a command "
                f"buffer): this one and {shown}{more}.")
    return out


def computation_time(profile: ModuleProfile, comp: Computation) -> tuple[float, int] | None:
    """What ``comp``'s measured instructions took: ``(µs per call, calls)``,
    the calls being the most frequent count among its instructions (a while
    body's iterations, an ENTRY's executions); the time is the sum of their
    totals over those calls (siblings never run inside each other; a loop's
    total holds its body's time). None when none of them was measured."""
    counts: dict[int, int] = {}
    total = 0.0
    for ins in comp.instructions:
        m = profile.ops.get(ins.name.name)
        if m is None:
            continue
        total += m.total_us
        counts[m.count] = counts.get(m.count, 0) + 1
    if not counts:
        return None
    calls = max(counts, key=lambda c: (counts[c], c))
    return total / calls, calls


def computation_lens(profile: ModuleProfile, comp: Computation) -> str:
    """The code lens title of ``comp``: ``measured 1.2 ms per call (5 calls)``;
    "" when nothing of it was measured."""
    found = computation_time(profile, comp)
    if found is None:
        return ""
    per_call, calls = found
    return f"measured {_us(per_call)} per call ({calls} call{'s' if calls != 1 else ''})"


__all__ = ["computation_lens", "computation_time", "estimate_seconds", "measured_markdown",
           "measured_sentence", "profile_device", "ratio_text"]
