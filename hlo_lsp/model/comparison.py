"""What changed between two modules of one program: the one comparison behind
``hlo-lsp diff``, the compare command (``hlo.compareDumps``), the recompile
report (:func:`hlo_lsp.dump.changes.compare_dumps`) and the change in cost.
Its reports are :mod:`hlo_lsp.features.compare` and
:meth:`hlo_lsp.dump.changes.ModuleChange.report`; this module is pure and
never raises on any parsed module.

What it answers (:func:`compare_modules`, a :class:`Comparison`):

1. **Which instructions match.** One step, :data:`Matcher`, replaceable.
   The default, :func:`hlo_lsp.model.matching.match_structure`, survives
   renames (XLA numbers names afresh in every compile and renames between
   passes): exact subgraphs by structure, stable names, the ``op_name`` and
   Python frame of the metadata, then propagation along operands and users and
   a bottom-up search by similarity, so a cuBLASLt call and the Triton GEMM
   fusion that replaced it are the same dot. (The matcher by metadata alone,
   :func:`hlo_lsp.model.instruction_diff.match_instructions`, can be passed
   instead.) The fusions whose kind
   changed are matched by their kernels (:func:`match_kernels`: by
   instruction name first, then by ``op_name``), as ``hlo-lsp diff`` has
   always reported them.
2. **Instructions added, removed or changed, and what changed**
   (:attr:`Comparison.instructions`,
   :class:`hlo_lsp.model.instruction_diff.ModuleDiff`): the shape (element
   types and dimensions), the layout, the fusion kind, the custom-call
   target, the scalar fields of a JSON ``backend_config`` (the kernel a
   fusion or a library call runs as), the opcode when the same work now runs
   otherwise ("the same dot, now a Triton GEMM fusion"). Operands are not
   compared (their names are renumbered by every compile; the matcher pairs
   them). Grouped by the Python source line they come
   from (:meth:`~hlo_lsp.model.instruction_diff.ModuleDiff.by_source`), the
   lines the user edited first, with a warning when the two modules are not
   of the same program (names or ENTRY signatures differ).
3. **What runs** (:attr:`Comparison.kernels`, :class:`KernelChanges`): of the
   kernels of :func:`hlo_lsp.model.summary.kernel_summary`, the custom-calls
   per target that appeared, disappeared or changed in number, the fusions
   that appeared, disappeared or changed kind (HLO kind or backend kind), and
   the counts per category and breakdown before and after.
4. **The change in cost** (:attr:`Comparison.costs`,
   :func:`hlo_lsp.model.cost_change.compare_costs`): ENTRY's FLOPs,
   transcendentals and bytes accessed as XLA's cost analysis counts them, the
   roofline time of the kernels on a device, and the kernel groups (one
   category and ``op_name`` pattern) whose cost changed.
5. **The change in measured time** (:func:`measured_changes`), given a profile
   of each side (:class:`hlo_lsp.model.profile.ModuleProfile`): per kernel
   group, the kernels paired by the same :data:`Matcher`, the measured time
   per execution of the module before and after.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from hlo_lsp.model.accelerators import Accelerator
from hlo_lsp.model.cost_change import CostComparison, compare_costs
from hlo_lsp.model.hlo import HloModule
from hlo_lsp.model.instruction_diff import ModuleDiff, diff_modules
from hlo_lsp.model.matching import Matching, match_structure
from hlo_lsp.model.op_names import op_name_pattern, repeat_scope
from hlo_lsp.model.profile import ModuleProfile
from hlo_lsp.model.summary import CATEGORIES, Kernel, KernelSummary, kernel_summary

#: The matching step: (old module, new module) -> the instructions paired,
#: the old ones left (removed) and the new ones left (added).
Matcher = Callable[[HloModule, HloModule], Matching]


@dataclass(slots=True)
class TargetChange:
    """A custom-call target whose count changed: ``before`` -> ``after``."""

    target: str
    library: str
    before: int
    after: int

    @property
    def status(self) -> str:
        """"appeared", "disappeared", "more" or "fewer"."""
        if self.before == 0:
            return "appeared"
        if self.after == 0:
            return "disappeared"
        return "more" if self.after > self.before else "fewer"


@dataclass(slots=True)
class FusionChange:
    """A fusion present in both dumps whose kind changed; ``matched_by`` is
    "name" or "op_name"."""

    old: Kernel
    new: Kernel
    matched_by: str


@dataclass(slots=True)
class KernelChanges:
    """What runs, before and after (:func:`compare_kernels`).

    ``custom_calls``: the targets whose count changed; ``fusions_added``,
    ``fusions_removed``, ``fusions_changed``: by :func:`match_kernels`;
    ``counts``: a category (and breakdown keys such as
    ``fusion:__triton_gemm``) -> ``(before, after)``; ``by_target``: every
    custom-call target -> ``(before, after)``; ``by_fusion_kind``: every
    :attr:`hlo_lsp.model.summary.Kernel.fusion_kind` -> ``(before, after)``."""

    custom_calls: list[TargetChange] = field(default_factory=list)
    fusions_added: list[Kernel] = field(default_factory=list)
    fusions_removed: list[Kernel] = field(default_factory=list)
    fusions_changed: list[FusionChange] = field(default_factory=list)
    counts: dict[str, tuple[int, int]] = field(default_factory=dict)
    by_target: dict[str, tuple[int, int]] = field(default_factory=dict)
    by_fusion_kind: dict[str, tuple[int, int]] = field(default_factory=dict)


@dataclass(slots=True)
class Comparison:
    """The answer of :func:`compare_modules` (see the module docstring)."""

    old: KernelSummary
    new: KernelSummary
    kernels: KernelChanges
    instructions: ModuleDiff
    costs: CostComparison


def match_kernels(old: list[Kernel], new: list[Kernel]
                  ) -> tuple[list[tuple[Kernel, Kernel, str]], list[Kernel], list[Kernel]]:
    """Kernels paired by instruction name first, then, among the unpaired ones,
    by ``op_name`` (in walk order): ``(pairs with "name" or "op_name", old
    unpaired, new unpaired)``, each in walk order."""
    new_by_name: dict[str, Kernel] = {}
    for k in new:
        new_by_name.setdefault(k.name, k)
    matched_new: set[int] = set()
    unmatched_old: list[Kernel] = []
    pairs: list[tuple[Kernel, Kernel, str]] = []
    for k in old:
        m = new_by_name.get(k.name)
        if m is not None and id(m) not in matched_new:
            matched_new.add(id(m))
            pairs.append((k, m, "name"))
        else:
            unmatched_old.append(k)
    by_op: dict[str, list[Kernel]] = {}
    for k in new:
        if id(k) not in matched_new and k.op_name:
            by_op.setdefault(k.op_name, []).append(k)
    removed: list[Kernel] = []
    for k in unmatched_old:
        candidates = by_op.get(k.op_name) if k.op_name else None
        if candidates:
            m = candidates.pop(0)
            matched_new.add(id(m))
            pairs.append((k, m, "op_name"))
        else:
            removed.append(k)
    return pairs, removed, [k for k in new if id(k) not in matched_new]


def _pairs_of(before: dict[str, int], after: dict[str, int]) -> dict[str, tuple[int, int]]:
    """Every key of either side -> ``(before, after)``, the old side's keys first."""
    return {k: (before.get(k, 0), after.get(k, 0)) for k in {**before, **after}}


def compare_kernels(old: KernelSummary | None, new: KernelSummary | None) -> KernelChanges:
    """What runs before and after (:class:`KernelChanges`); a side that is None
    (a module new or gone in a dump) has no kernels: only ``by_target`` and
    ``by_fusion_kind`` are filled then."""
    out = KernelChanges()
    targets = [s.counts()["custom_call_by_target"] if s is not None else {} for s in (old, new)]
    kinds = [s.fusion_kinds() if s is not None else {} for s in (old, new)]
    out.by_target = _pairs_of(*targets)
    out.by_fusion_kind = _pairs_of(*kinds)
    if old is None or new is None:
        return out
    # Custom-calls by target.
    before = Counter(k.target for k in old.of("custom-call"))
    after = Counter(k.target for k in new.of("custom-call"))
    libs = {k.target: k.library for k in old.of("custom-call") + new.of("custom-call")}
    for target in list(before) + [t for t in after if t not in before]:
        if before[target] != after[target]:
            out.custom_calls.append(TargetChange(target, libs[target], before[target],
                                                 after[target]))
    # Fusions: by name, then by op_name.
    pairs, out.fusions_removed, out.fusions_added = match_kernels(old.of("fusion"),
                                                                  new.of("fusion"))
    for o, n, how in pairs:
        if o.hlo_kind != n.hlo_kind or o.backend_kind != n.backend_kind:
            out.fusions_changed.append(FusionChange(o, n, how))
    # Counts.
    co, cn = old.counts(), new.counts()
    for cat in CATEGORIES:
        out.counts[cat] = (co[cat], cn[cat])
    for key, prefix in (("fusion_by_hlo_kind", "fusion"), ("fusion_by_backend_kind", "fusion"),
                        ("custom_call_by_library", "custom-call"),
                        ("collective_by_opcode", "collective")):
        for name in list(co[key]) + [n for n in cn[key] if n not in co[key]]:
            out.counts[f"{prefix}:{name}"] = (co[key].get(name, 0), cn[key].get(name, 0))
    return out


def compare_modules(old: HloModule, new: HloModule, device: Accelerator,
                    old_summary: KernelSummary | None = None,
                    new_summary: KernelSummary | None = None,
                    match: Matcher = match_structure) -> Comparison:
    """Everything that changed from ``old`` to ``new`` (see the module
    docstring), the cost estimated on ``device``. The kernel summaries are
    made when not given (a caller that has them, such as the server, passes
    its own); ``match`` pairs the instructions (:data:`Matcher`)."""
    sa = old_summary if old_summary is not None else kernel_summary(old)
    sb = new_summary if new_summary is not None else kernel_summary(new)
    return Comparison(sa, sb, compare_kernels(sa, sb), diff_modules(old, new, match),
                      compare_costs(old, sa, new, sb, device))


@dataclass(slots=True)
class MeasuredChange:
    """The measured time of one kernel group in two profiles
    (:func:`measured_changes`): ``key`` (category and op_name pattern, as the
    cost change groups kernels, :mod:`hlo_lsp.model.cost_change`), the kernels
    on each side (``old``/``new``, either may be empty), the measured total of
    each side over its profile (``*_total_us``, µs, every event) and per
    execution of the module (``*_us``: the total over the profile's
    executions, so profiles of different lengths compare), and the events
    (``*_count``)."""

    key: str
    old: list[Kernel]
    new: list[Kernel]
    old_total_us: float
    new_total_us: float
    old_us: float
    new_us: float
    old_count: int
    new_count: int

    @property
    def delta_us(self) -> float:
        """Measured time per execution after minus before, µs."""
        return self.new_us - self.old_us

    def to_dict(self) -> dict:
        """JSON-ready: key, kernel names per side, ``us`` (per execution),
        ``total_us`` (over each profile) and ``count`` as ``[before, after]``,
        ``change_us`` (per execution)."""
        return {"key": self.key, "old": [k.name for k in self.old],
                "new": [k.name for k in self.new], "us": [self.old_us, self.new_us],
                "total_us": [self.old_total_us, self.new_total_us],
                "count": [self.old_count, self.new_count], "change_us": self.delta_us}


def _group_key(k: Kernel, scope: str | None) -> str:
    return f"{k.category} " + (op_name_pattern(k.op_name, scope) if k.op_name else f"%{k.name}")


def measured_changes(old_module: HloModule, old: KernelSummary, old_profile: ModuleProfile,
                     new_module: HloModule, new: KernelSummary, new_profile: ModuleProfile,
                     match: Matcher = match_structure) -> list[MeasuredChange]:
    """The measured time of each kernel group before and after, largest change
    per execution first. Kernels are paired by ``match`` (default: the matcher
    that survives renames), those left by instruction name; a pair
    belongs to the new kernel's group (category and op_name pattern under the
    repeated scope, else its name), an unpaired kernel to its own. Groups that
    neither profile measured are left out. Pure."""
    scope = repeat_scope(old) or repeat_scope(new)
    old_by_name = {k.name: k for k in old.kernels}
    new_by_name = {k.name: k for k in new.kernels}
    partner: dict[str, str] = {}
    taken: set[str] = set()
    for o, n in match(old_module, new_module).pairs:
        a, b = o.name.name, n.name.name
        if a in old_by_name and b in new_by_name and a not in partner and b not in taken:
            partner[a] = b
            taken.add(b)
    for name in old_by_name:
        if name not in partner and name in new_by_name and name not in taken:
            partner[name] = name
            taken.add(name)
    groups: dict[str, tuple[list[Kernel], list[Kernel]]] = {}
    for k in new.kernels:
        groups.setdefault(_group_key(k, scope), ([], []))[1].append(k)
    for k in old.kernels:
        mate = partner.get(k.name)
        key = _group_key(new_by_name[mate] if mate is not None else k, scope)
        groups.setdefault(key, ([], []))[0].append(k)
    out = []
    for key, (ko, kn) in groups.items():
        mo = [old_profile.ops[k.name] for k in ko if k.name in old_profile.ops]
        mn = [new_profile.ops[k.name] for k in kn if k.name in new_profile.ops]
        if not mo and not mn:
            continue
        to, tn = sum(m.total_us for m in mo), sum(m.total_us for m in mn)
        out.append(MeasuredChange(key, ko, kn, to, tn, to / max(old_profile.executions, 1),
                                  tn / max(new_profile.executions, 1),
                                  sum(m.count for m in mo), sum(m.count for m in mn)))
    out.sort(key=lambda c: (-abs(c.delta_us), c.key))
    return out


__all__ = ["Comparison", "FusionChange", "KernelChanges", "Matcher", "MeasuredChange",
           "TargetChange", "compare_kernels", "compare_modules", "match_kernels",
           "measured_changes"]
