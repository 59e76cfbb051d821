"""Two modules of one program in cost terms (:func:`compare_costs`): the totals
of their ENTRY computations as XLA's cost analysis counts them, the estimated
time of their kernels on a device (roofline), and the kernel groups (one
category and ``op_name`` pattern) whose cost changed. The cost part of the one
comparison (:mod:`hlo_lsp.model.comparison`). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from hlo_lsp.model.accelerators import Accelerator
from hlo_lsp.model.cost import Cost, cost_model
from hlo_lsp.model.hlo import HloModule
from hlo_lsp.model.op_names import op_name_pattern, repeat_scope, short_op_name
from hlo_lsp.model.summary import Kernel, KernelSummary, kernel_costs
from hlo_lsp.model.units import format_count, format_seconds


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
