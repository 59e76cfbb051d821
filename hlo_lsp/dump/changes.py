"""What changed in a dump directory after a recompile: each old HLO file's
counterpart among the new ones (by module name, occurrence of that name, stage
and platform, never by number: JAX compiles a different number of helper
modules first), and per module the one comparison
(:func:`hlo_lsp.model.comparison.compare_modules`) of its after-optimizations
files (:class:`ModuleChange`). Reads and parses the files; used by
:mod:`hlo_lsp.dump.recompile`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Mapping

from hlo_lsp.dump.names import (AFTER_OPTIMIZATIONS, BEFORE_OPTIMIZATIONS, DumpName, device_for,
                                module_label)
from hlo_lsp.dump.untrusted import read_text
from hlo_lsp.model.comparison import compare_kernels, compare_modules
from hlo_lsp.model.cost_change import CostComparison
from hlo_lsp.model.instruction_diff import ModuleDiff
from hlo_lsp.model.summary import kernel_summary

#: Larger HLO files are not compared (bytes).
MAX_COUNTED_BYTES = 256 * 1024 * 1024


def read_hlo(path: str | os.PathLike):
    """``(text, HloModule)`` of the HLO text file ``path`` (untrusted: read by
    :func:`hlo_lsp.dump.untrusted.read_text`), or None when it cannot be read
    or is larger than :data:`MAX_COUNTED_BYTES`. Parses: call it off the event
    loop."""
    from hlo_lsp.syntax.parser import parse  # lark: only when a dump is compared

    try:
        text = read_text(path, MAX_COUNTED_BYTES)
    except OSError:  # UntrustedFileError: not a regular file, too large, unreadable
        return None
    return text, parse(text)


def _parsed(path: str | os.PathLike):
    """The HloModule of :func:`read_hlo`, or None."""
    got = read_hlo(path)
    return got[1] if got is not None else None


@dataclass
class ModuleChange:
    """Before/after counts of one module's after-optimizations HLO, from the
    one comparison of the two files (:func:`hlo_lsp.model.comparison.compare_modules`;
    for a module new or gone, the kernels of the side that has it).

    ``file_before``/``file_after`` are file names (None when the module is new
    or gone); ``custom_calls`` maps a ``custom_call_target`` and ``fusions`` a
    fusion kind (:attr:`hlo_lsp.model.summary.Kernel.fusion_kind`: ``kLoop``,
    ``kCustom:__triton_gemm``...) to (before, after). ``instructions``: the
    instruction-level changes (:func:`hlo_lsp.model.instruction_diff.diff_modules`,
    the same comparison as ``hlo-lsp diff``), None unless both files were read.
    ``costs``: the change in cost terms (:func:`hlo_lsp.model.cost_change.compare_costs`:
    ENTRY's FLOPs, transcendentals and bytes accessed as XLA's cost analysis
    counts them, the roofline time of the kernels on a device, the kernel
    groups whose cost changed), None unless both files were read.
    """

    module: str
    file_before: str | None
    file_after: str | None
    custom_calls: dict[str, tuple[int, int]] = field(default_factory=dict)
    fusions: dict[str, tuple[int, int]] = field(default_factory=dict)
    instructions: ModuleDiff | None = None
    costs: CostComparison | None = None

    @property
    def totals(self) -> dict[str, tuple[int, int]]:
        """``{"custom-calls": (before, after), "fusions": (before, after)}``."""
        def total(d):
            return (sum(b for b, _ in d.values()), sum(a for _, a in d.values()))
        return {"custom-calls": total(self.custom_calls), "fusions": total(self.fusions)}

    @property
    def changed(self) -> bool:
        """Whether any count differs, or the module appeared or disappeared."""
        return (self.file_before is None or self.file_after is None
                or bool(self.instructions and self.instructions.changes)
                or any(b != a for b, a in [*self.custom_calls.values(),
                                           *self.fusions.values()]))

    def describe(self) -> str:
        """One line, e.g. ``jit_step (module_0004 → module_0006): fusions 1 → 2
        (kLoop 1 → 2), custom-calls 0 → 0``."""
        if self.file_before is None:
            head = f"{self.module} ({module_label(self.file_after)}): new"
        elif self.file_after is None:
            return f"{self.module} ({module_label(self.file_before)}): gone"
        else:
            nb, na = module_label(self.file_before), module_label(self.file_after)
            head = f"{self.module} ({nb} → {na})" if nb != na else f"{self.module} ({na})"
        parts = []
        for label, per in (("fusions", self.fusions), ("custom-calls", self.custom_calls)):
            b, a = self.totals[label]
            detail = ", ".join(f"{k} {x} → {y}" for k, (x, y) in sorted(per.items())
                               if x != y)
            parts.append(f"{label} {b} → {a}" + (f" ({detail})" if detail else ""))
        return f"{head}: " + ", ".join(parts)

    def to_json(self) -> dict:
        """A JSON-ready dict (pairs become ``[before, after]`` lists)."""
        return {"module": self.module, "fileBefore": self.file_before,
                "fileAfter": self.file_after,
                "customCalls": {k: list(v) for k, v in self.custom_calls.items()},
                "fusions": {k: list(v) for k, v in self.fusions.items()},
                "totals": {k: list(v) for k, v in self.totals.items()},
                "instructions": self.instructions.to_dict() if self.instructions else None,
                "costs": self.costs.to_dict() if self.costs else None}

    def report(self, max_lines: int = 12, max_kernels: int = 3,
               costs: bool = True) -> list[str]:
        """:meth:`describe`, then the instruction changes per Python line
        (:meth:`hlo_lsp.model.instruction_diff.ModuleDiff.lines`, indented), then
        with ``costs`` the change in cost (:meth:`hlo_lsp.model.cost_change.CostComparison.lines`,
        at most ``max_kernels`` kernel groups) when any cost figure changed."""
        out = [self.describe()]
        if self.instructions is not None:
            out += ["  " + line for line in self.instructions.lines(max_lines)]
        if costs and self.costs is not None and self.costs.changed:
            out += ["  " + line for line in self.costs.lines(max_kernels)]
        return out


def _instances(files: Mapping[str, DumpName]) -> dict[str, list[tuple[str, int]]]:
    """module name -> [(timestamp, number)] in order of appearance."""
    out: dict[str, set[tuple[str, int]]] = {}
    for d in files.values():
        out.setdefault(d.module_name, set()).add((d.timestamp, d.number))
    return {k: sorted(v, key=lambda t: (t[1], t[0])) for k, v in out.items()}


def map_files(old: Mapping[str, DumpName],
              new: Mapping[str, DumpName]) -> dict[str, str | None]:
    """Each old HLO file name -> the new file name of the same module (by name and
    occurrence of that name, not number), stage and platform; the same stage on
    another platform when the platform changed (``cpu_`` -> ``sm_9.0_gpu_``);
    None when the new dump lacks it."""
    old_inst, new_inst = _instances(old), _instances(new)
    by_key: dict[tuple, str] = {}
    by_stage: dict[tuple, str] = {}
    for name, d in sorted(new.items()):
        by_key.setdefault((d.module_name, d.timestamp, d.number, d.stage, d.platform), name)
        by_stage.setdefault((d.module_name, d.timestamp, d.number, d.stage), name)
    out: dict[str, str | None] = {}
    for name, d in old.items():
        rank = old_inst[d.module_name].index((d.timestamp, d.number))
        targets = new_inst.get(d.module_name, [])
        if rank >= len(targets):
            out[name] = None
            continue
        ts, num = targets[rank]
        out[name] = (by_key.get((d.module_name, ts, num, d.stage, d.platform))
                     or by_stage.get((d.module_name, ts, num, d.stage)))
    return out


def _after_files(files: Mapping[str, DumpName]) -> dict[tuple[str, int], str]:
    """(module name, occurrence) -> its after-optimizations file (before-
    optimizations when there is none)."""
    inst = _instances(files)
    out: dict[tuple[str, int], str] = {}
    for stage in (BEFORE_OPTIMIZATIONS, AFTER_OPTIMIZATIONS):
        for name, d in sorted(files.items()):
            if d.stage == stage:
                out[(d.module_name, inst[d.module_name].index((d.timestamp, d.number)))] = name
    return out


def compare_dumps(old_dir: str | os.PathLike, old: Mapping[str, DumpName],
                  new_dir: str | os.PathLike, new: Mapping[str, DumpName],
                  device: str | None = None) -> list[ModuleChange]:
    """Per module (name and occurrence), the custom-calls per target and the
    fusions per kind that run in the old and the new dump (the kernels of
    :func:`hlo_lsp.model.summary.kernel_summary`: ENTRY and the computations its
    control flow runs, as ``hlo-lsp diff`` counts them), in module-name order.
    ``old``/``new`` are the HLO files of each directory
    (:func:`hlo_lsp.dump.recompile.hlo_files`); the after-optimizations file of a
    module is compared, else its before-optimizations file. The change in cost is estimated on the device
    ``device`` names (a key or name of :data:`hlo_lsp.model.accelerators.ACCELERATORS`),
    else the one the new file's name implies (:func:`hlo_lsp.dump.names.device_for`).
    Parses files: run it in a thread. Never raises on unreadable files (they
    count as empty)."""
    a, b = _after_files(old), _after_files(new)
    return [module_change(key[0], a.get(key), b.get(key),
                          _parsed(os.path.join(old_dir, a[key])) if key in a else None,
                          _parsed(os.path.join(new_dir, b[key])) if key in b else None, device)
            for key in sorted(set(a) | set(b))]


def module_change(module: str, old_file: str | None, new_file: str | None,
                  old, new, device: str | None = None) -> ModuleChange:
    """The :class:`ModuleChange` of the module ``module`` between its file
    ``old_file`` (parsed: ``old``, None when absent or unreadable) and
    ``new_file`` (``new``), as :func:`compare_dumps` makes it for each module;
    the cost on ``device`` (else the device ``new_file``'s name implies) when
    both are parsed."""
    change = ModuleChange(module, old_file, new_file)
    if old is not None and new is not None:
        found = compare_modules(old, new, device_for(new_file, device))
        kernels = found.kernels
        change.instructions, change.costs = found.instructions, found.costs
    else:
        kernels = compare_kernels(kernel_summary(old) if old is not None else None,
                                  kernel_summary(new) if new is not None else None)
    change.custom_calls, change.fusions = kernels.by_target, kernels.by_fusion_kind
    return change
