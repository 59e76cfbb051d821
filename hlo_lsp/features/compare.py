"""Compare the kernel summaries of two dumps of the same program.

The question behind seed 001 ("the cuBLASLt FP8 call is gone after a JAX
upgrade"): which custom-calls appeared or disappeared (by target, with
counts), which fusions appeared, disappeared or changed kind, and the counts
per category before and after.

The comparison itself is the model's one comparison
(:mod:`hlo_lsp.model.comparison`): the kernels of
:class:`hlo_lsp.model.summary.KernelSummary` (fusions matched by instruction
name first, then by ``op_name``; a matched pair whose HLO kind or backend kind
differs is a change), and given the two modules too, the instruction-level
changes (instructions matched through renames,
:func:`hlo_lsp.model.matching.match_structure`; a cuBLASLt call and the Triton
GEMM fusion that replaced it are "the same dot, now a Triton GEMM fusion";
shapes, layouts, kinds, targets, backend_config fields, grouped per Python line, with a warning for two different programs) and the change in cost
terms (estimated time, FLOPs, transcendentals and bytes accessed in total and
per kernel group), and given a profile of each side the measured time per
kernel group (:func:`hlo_lsp.model.comparison.measured_changes`). Here: that
answer as a report (text, Markdown, JSON). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hlo_lsp.model.markdown import cell, code, fence, text
from hlo_lsp.features.summary import MAX_COLUMN
from hlo_lsp.model.accelerators import ACCELERATORS, DEFAULT, Accelerator
from hlo_lsp.model.comparison import (FusionChange, MeasuredChange, TargetChange,
                                      compare_kernels, compare_modules, measured_changes)
from hlo_lsp.model.profile import ModuleProfile
from hlo_lsp.model.units import format_microseconds
from hlo_lsp.model.cost_change import CostComparison
from hlo_lsp.model.hlo import HloModule
from hlo_lsp.model.instruction_diff import ModuleDiff
from hlo_lsp.model.kernels import BACKEND_KIND_LABELS
from hlo_lsp.model.summary import Kernel, KernelSummary


@dataclass(slots=True)
class DumpDiff:
    """Result of :func:`compare`: the two summaries and the fields of the
    model's :class:`hlo_lsp.model.comparison.KernelChanges`, ``instructions`` and
    ``costs`` (None without the modules). ``counts`` maps a category (and
    breakdown keys such as ``fusion:__triton_gemm``) to ``(before, after)``.
    ``measured``: the measured time per kernel group, ``steps``: the module's
    measured time per execution ``(before, after)`` in µs (both None without a
    profile of each side)."""

    old: KernelSummary
    new: KernelSummary
    custom_calls: list[TargetChange] = field(default_factory=list)
    fusions_added: list[Kernel] = field(default_factory=list)
    fusions_removed: list[Kernel] = field(default_factory=list)
    fusions_changed: list[FusionChange] = field(default_factory=list)
    counts: dict[str, tuple[int, int]] = field(default_factory=dict)
    instructions: ModuleDiff | None = None
    costs: CostComparison | None = None
    measured: list[MeasuredChange] | None = None
    steps: tuple[float, float] | None = None

    def findings(self) -> list[str]:
        """The changes as sentences, most important first (the instructions
        that do the same work on another kernel, "the same dot, now a Triton
        GEMM fusion"; custom-calls; fusions by backend kind; kind changes)."""
        out: list[str] = []
        for c in self.instructions.changes if self.instructions is not None else ():
            if c.now_runs_as:  # the matcher paired them (names XLA made: no markup)
                out.append(f"%{c.old.name} -> %{c.new.name}: {c.now_runs_as}")  # type: ignore[union-attr]
        for t in self.custom_calls:
            call = f"{t.library} call {code(t.target)}"
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
            "measured": None if self.measured is None else {
                "step_us": list(self.steps) if self.steps else None,
                "groups": [c.to_dict() for c in self.measured]},
        }

    def measured_lines(self, max_groups: int = 15) -> list[str]:
        """The measured change as lines: the module's time per execution before
        and after, then per kernel group (largest change first, at most
        ``max_groups``) its time per execution before, after and the change;
        [] without profiles."""
        if self.measured is None or self.steps is None:
            return []
        before, after = self.steps
        us = format_microseconds
        lines = [f"Measured (per execution of the module, from the two profiles): "
                 f"{us(before)} -> {us(after)} ({'+' if after >= before else '-'}"
                 f"{us(abs(after - before))})"]
        rows = [["group", "kernels", "old", "new", "change"]]
        for c in self.measured[:max_groups]:
            first = (c.new or c.old)[0]
            what = c.key.split(" ", 1)[1]
            label = f"{first.label} %{first.name}" + ("" if what.startswith("%") else f" {what}")
            count = f"{len(c.old)} -> {len(c.new)}" if len(c.old) != len(c.new) \
                else f"{len(c.new)}x"
            rows.append([label[:MAX_COLUMN + 30], count, format_microseconds(c.old_us), format_microseconds(c.new_us),
                         ("+" if c.delta_us >= 0 else "-") + format_microseconds(abs(c.delta_us))])
        widths = [min(max(len(r[i]) for r in rows), MAX_COLUMN + 30) for i in range(5)]
        lines.extend("  " + "  ".join(cell_.ljust(w) for cell_, w in zip(r, widths)).rstrip()
                     for r in rows)
        if len(self.measured) > max_groups:
            lines.append(f"  ... {len(self.measured) - max_groups} more kernel groups")
        return lines


def _kinds(k: Kernel) -> str:
    s = k.hlo_kind or "?"
    if k.backend_kind:
        s += f", {k.backend_kind}" + (" (inferred from the name)"
                                      if k.backend_kind_inferred else "")
    return s


def compare(old: KernelSummary, new: KernelSummary, old_module: HloModule | None = None,
            new_module: HloModule | None = None,
            device: Accelerator | None = None,
            old_profile: ModuleProfile | None = None,
            new_profile: ModuleProfile | None = None) -> DumpDiff:
    """Differences between ``old`` and ``new`` (see module docstring); with both
    modules, also the instruction changes and the cost changes, times estimated
    on ``device`` (default: the CPU default); with both modules and a profile of
    each (of that compile: the caller joined them,
    :func:`hlo_lsp.dump.profiles.join_file`), the measured change per kernel
    group."""
    if old_module is not None and new_module is not None:
        c = compare_modules(old_module, new_module, device or ACCELERATORS[DEFAULT], old, new)
        kernels, instructions, costs = c.kernels, c.instructions, c.costs
    else:
        kernels, instructions, costs = compare_kernels(old, new), None, None
    diff = DumpDiff(old, new, kernels.custom_calls, kernels.fusions_added,
                    kernels.fusions_removed, kernels.fusions_changed, kernels.counts,
                    instructions, costs)
    if old_module is not None and new_module is not None and old_profile is not None \
            and new_profile is not None:
        diff.measured = measured_changes(old_module, old, old_profile, new_module, new,
                                         new_profile)
        diff.steps = (old_profile.step_mean_us, new_profile.step_mean_us)
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
        lines.append(f"Instructions (matched by structure, stable names and op_name): "
                     f"{ins.headline()}")
        lines.extend(ins.lines(max_lines=40)[len(ins.warnings) + 1:])
        lines.append("")
    if diff.costs is not None:
        lines.extend(diff.costs.lines())
        lines.append("")
    if diff.measured is not None:
        lines.extend(diff.measured_lines())
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
    parts = [f"### {text(old_label)} -> {text(new_label)}",
             f"- **{text(old_label)}** {code(diff.old.module)}: {diff.old.headline()}\n"
             f"- **{text(new_label)}** {code(diff.new.module)}: {diff.new.headline()}"]
    findings = diff.findings()
    ins = diff.instructions
    if ins is not None and ins.warnings:
        parts.append("\n".join(f"**Warning**: {w}" for w in ins.warnings))
    parts.append("**Changes**\n\n" + ("\n".join(f"- {f}" for f in findings)
                                      if findings else "none"))
    if ins is not None:
        body = ins.lines(max_lines=40)[len(ins.warnings) + 1:]
        parts.append(f"**Instructions**: {ins.headline()}" +
                     ("\n\n" + fence("\n".join(body)) if body else ""))
    if diff.costs is not None:
        body = diff.costs.lines()
        parts.append(f"**{text(body[0])}**\n\n" + fence("\n".join(body[1:])))
    if diff.measured is not None:
        body = diff.measured_lines()
        parts.append(f"**{text(body[0])}**\n\n" + fence("\n".join(body[1:])))
    rows = ["| | before | after |", "|---|---:|---:|"]
    rows.extend(f"| {cell(code(k))} | {b} | {a} |" for k, (b, a) in diff.counts.items())
    parts.append("\n".join(rows))
    return "\n\n".join(parts) + "\n"


__all__ = ["DumpDiff", "FusionChange", "TargetChange", "compare",
           "format_markdown", "format_text"]
