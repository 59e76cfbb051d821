"""Compare the kernel summaries of two dumps of the same program.

The question behind seed 001 ("the cuBLASLt FP8 call is gone after a JAX
upgrade"): which custom-calls appeared or disappeared (by target, with
counts), which fusions appeared, disappeared or changed kind, and the counts
per category before and after.

Fusions are matched by instruction name first, then, among the unmatched
ones, by ``op_name`` metadata (in walk order); a matched pair whose HLO kind or
backend kind differs is a change. Pure: operates on
:class:`hlo_lsp.model.summary.KernelSummary`; given the two modules too, the
instruction-level changes (:func:`hlo_lsp.model.instruction_diff.diff_modules`:
shapes, layouts, kinds, targets, backend_config fields, grouped per Python
line, with a warning for two different programs) and the change in cost terms
(:func:`hlo_lsp.model.cost_change.compare_costs`: estimated time, FLOPs,
transcendentals and bytes accessed in total and per kernel group) come with it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from hlo_lsp.model.units import format_count, format_seconds
from hlo_lsp.features.summary import MAX_COLUMN
from hlo_lsp.model.accelerators import ACCELERATORS, DEFAULT, Accelerator
from hlo_lsp.model.hlo import HloModule
from hlo_lsp.model.instruction_diff import ModuleDiff, diff_modules
from hlo_lsp.model.kernels import BACKEND_KIND_LABELS
from hlo_lsp.model.cost_change import CostComparison, compare_costs
from hlo_lsp.model.op_names import short_op_name
from hlo_lsp.model.summary import CATEGORIES, Kernel, KernelSummary


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
class DumpDiff:
    """Result of :func:`compare`. ``counts`` maps a category (and breakdown keys
    such as ``fusion:__triton_gemm``) to ``(before, after)``."""

    old: KernelSummary
    new: KernelSummary
    custom_calls: list[TargetChange] = field(default_factory=list)
    fusions_added: list[Kernel] = field(default_factory=list)
    fusions_removed: list[Kernel] = field(default_factory=list)
    fusions_changed: list[FusionChange] = field(default_factory=list)
    counts: dict[str, tuple[int, int]] = field(default_factory=dict)
    instructions: ModuleDiff | None = None
    costs: CostComparison | None = None

    def findings(self) -> list[str]:
        """The changes as sentences, most important first (custom-calls, then
        fusions by backend kind, then kind changes)."""
        out: list[str] = []
        for t in self.custom_calls:
            call = f"{t.library} call `{t.target}`"
            if t.status == "disappeared":
                out.append(f"{call} disappeared ({t.before} -> 0)")
            elif t.status == "appeared":
                out.append(f"{call} appeared (0 -> {t.after})")
            else:
                out.append(f"{call}: {t.before} -> {t.after}")
        for k in sorted(self.fusions_added, key=lambda k: not k.backend_kind):
            out.append(f"{k.label} appeared: %{k.name} ({_kinds(k)})")
        for k in sorted(self.fusions_removed, key=lambda k: not k.backend_kind):
            out.append(f"{k.label} disappeared: %{k.name} ({_kinds(k)})")
        for ch in self.fusions_changed:
            out.append(f"fusion %{ch.new.name} changed kind: {_kinds(ch.old)} -> "
                       f"{_kinds(ch.new)} (matched by {ch.matched_by})")
        return out

    def to_dict(self) -> dict:
        """JSON-ready form."""
        return {
            "old": {"module": self.old.module, "entry": self.old.entry,
                    "headline": self.old.headline()},
            "new": {"module": self.new.module, "entry": self.new.entry,
                    "headline": self.new.headline()},
            "findings": self.findings(),
            "custom_calls": [{"target": t.target, "library": t.library, "before": t.before,
                              "after": t.after, "status": t.status}
                             for t in self.custom_calls],
            "fusions_added": [k.to_dict() for k in self.fusions_added],
            "fusions_removed": [k.to_dict() for k in self.fusions_removed],
            "fusions_changed": [{"old": c.old.to_dict(), "new": c.new.to_dict(),
                                 "matched_by": c.matched_by} for c in self.fusions_changed],
            "counts": {k: {"before": b, "after": a} for k, (b, a) in self.counts.items()},
            "instructions": self.instructions.to_dict() if self.instructions else None,
            "cost": self.costs.to_dict() if self.costs else None,
        }


def _kinds(k: Kernel) -> str:
    s = k.hlo_kind or "?"
    if k.backend_kind:
        s += f", {k.backend_kind}" + (" (inferred from the name)"
                                      if k.backend_kind_inferred else "")
    return s


def compare(old: KernelSummary, new: KernelSummary, old_module: HloModule | None = None,
            new_module: HloModule | None = None,
            device: Accelerator | None = None) -> DumpDiff:
    """Differences between ``old`` and ``new`` (see module docstring); with both
    modules, also the instruction changes and the cost changes, times estimated
    on ``device`` (default: the CPU default)."""
    diff = DumpDiff(old, new)
    # Custom-calls by target.
    before = Counter(k.target for k in old.of("custom-call"))
    after = Counter(k.target for k in new.of("custom-call"))
    libs = {k.target: k.library for k in old.of("custom-call") + new.of("custom-call")}
    for target in list(before) + [t for t in after if t not in before]:
        if before[target] != after[target]:
            diff.custom_calls.append(TargetChange(target, libs[target], before[target],
                                                  after[target]))
    # Fusions: by name, then by op_name.
    old_f = old.of("fusion")
    new_f = new.of("fusion")
    new_by_name: dict[str, Kernel] = {}
    for k in new_f:
        new_by_name.setdefault(k.name, k)
    matched_new: set[int] = set()
    unmatched_old: list[Kernel] = []
    pairs: list[tuple[Kernel, Kernel, str]] = []
    for k in old_f:
        m = new_by_name.get(k.name)
        if m is not None and id(m) not in matched_new:
            matched_new.add(id(m))
            pairs.append((k, m, "name"))
        else:
            unmatched_old.append(k)
    by_op: dict[str, list[Kernel]] = {}
    for k in new_f:
        if id(k) not in matched_new and k.op_name:
            by_op.setdefault(k.op_name, []).append(k)
    for k in unmatched_old:
        candidates = by_op.get(k.op_name) if k.op_name else None
        if candidates:
            m = candidates.pop(0)
            matched_new.add(id(m))
            pairs.append((k, m, "op_name"))
        else:
            diff.fusions_removed.append(k)
    diff.fusions_added = [k for k in new_f if id(k) not in matched_new]
    for o, n, how in pairs:
        if o.hlo_kind != n.hlo_kind or o.backend_kind != n.backend_kind:
            diff.fusions_changed.append(FusionChange(o, n, how))
    # Counts.
    co, cn = old.counts(), new.counts()
    for cat in CATEGORIES:
        diff.counts[cat] = (co[cat], cn[cat])
    for key, prefix in (("fusion_by_hlo_kind", "fusion"), ("fusion_by_backend_kind", "fusion"),
                        ("custom_call_by_library", "custom-call"),
                        ("collective_by_opcode", "collective")):
        for name in list(co[key]) + [n for n in cn[key] if n not in co[key]]:
            diff.counts[f"{prefix}:{name}"] = (co[key].get(name, 0), cn[key].get(name, 0))
    if old_module is not None and new_module is not None:
        diff.instructions = diff_modules(old_module, new_module)
        diff.costs = compare_costs(old_module, old, new_module, new,
                                   device or ACCELERATORS[DEFAULT])
    return diff


def format_text(diff: DumpDiff, old_label: str = "old", new_label: str = "new") -> str:
    """The plain-text report of ``hlo-lsp diff``."""
    lines = [f"{old_label}: {diff.old.module or '?'} (ENTRY %{diff.old.entry})",
             f"  {diff.old.headline()}",
             f"{new_label}: {diff.new.module or '?'} (ENTRY %{diff.new.entry})",
             f"  {diff.new.headline()}", ""]
    ins = diff.instructions
    if ins is not None and ins.warnings:
        lines.extend(f"Warning: {w}" for w in ins.warnings)
        lines.append("")
    findings = diff.findings()
    if findings:
        lines.append("Changes")
        lines.extend(f"  - {f}" for f in findings)
    else:
        lines.append("No change in custom-calls or fusion kinds.")
    lines.append("")
    if ins is not None:
        lines.append(f"Instructions (matched by op_name, Python line and opcode): "
                     f"{ins.headline()}")
        lines.extend(ins.lines(max_lines=40)[len(ins.warnings) + 1:])
        lines.append("")
    if diff.costs is not None:
        lines.extend(diff.costs.lines())
        lines.append("")
    lines.append("Counts (before -> after)")
    width = min(max((len(k) for k in diff.counts), default=0), MAX_COLUMN)
    for key, (b, a) in diff.counts.items():
        label = key
        if key.startswith("fusion:__") and key[7:] in BACKEND_KIND_LABELS:
            label = f"{key} ({BACKEND_KIND_LABELS[key[7:]]})"
        mark = "" if a == b else ("  +" if a > b else "  -") + str(abs(a - b))
        lines.append(f"  {label.ljust(width + 16)} {b:>4} -> {a:<4}{mark}".rstrip())
    return "\n".join(lines).rstrip() + "\n"


def format_markdown(diff: DumpDiff, old_label: str = "old", new_label: str = "new") -> str:
    """Markdown form of :func:`format_text` (the ``hlo.compareDumps`` command)."""
    parts = [f"### {old_label} -> {new_label}",
             f"- **{old_label}** `{diff.old.module}`: {diff.old.headline()}\n"
             f"- **{new_label}** `{diff.new.module}`: {diff.new.headline()}"]
    findings = diff.findings()
    ins = diff.instructions
    if ins is not None and ins.warnings:
        parts.append("\n".join(f"**Warning**: {w}" for w in ins.warnings))
    parts.append("**Changes**\n\n" + ("\n".join(f"- {f}" for f in findings)
                                      if findings else "none"))
    if ins is not None:
        body = ins.lines(max_lines=40)[len(ins.warnings) + 1:]
        parts.append(f"**Instructions**: {ins.headline()}" +
                     ("\n\n```\n" + "\n".join(body) + "\n```" if body else ""))
    if diff.costs is not None:
        body = diff.costs.lines()
        parts.append(f"**{body[0]}**\n\n```\n" + "\n".join(body[1:]) + "\n```")
    rows = ["| | before | after |", "|---|---:|---:|"]
    rows.extend(f"| `{k}` | {b} | {a} |" for k, (b, a) in diff.counts.items())
    parts.append("\n".join(rows))
    return "\n\n".join(parts) + "\n"


__all__ = ["DumpDiff", "FusionChange", "TargetChange", "compare",
           "format_markdown", "format_text"]
