"""The kernel summary folded to fit a screen (:func:`fold_summary`): kernels of
one structure and ``op_name`` pattern as one row, the layers of an unrolled
loop as one group with their count, each loop body or branch as one group,
the collectives with the bytes each device sends. What ``hlo-lsp summary``,
the summary command and the readable view show. Pure.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from hlo_lsp.model.accelerators import Accelerator
from hlo_lsp.model.collectives import collective_bytes
from hlo_lsp.model.cost import Cost, cost_model
from hlo_lsp.model.hlo import HloModule
from hlo_lsp.model.op_names import MIN_REPEATS, index_ranges, repeat_scope, scope_index
from hlo_lsp.model.summary import Kernel, KernelGroup, KernelSummary, ranked_kernels


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
