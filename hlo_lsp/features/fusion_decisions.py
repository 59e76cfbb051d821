"""Why an instruction was or was not fused, and where its kernel is: the
**Priority fusion** paragraph of hover (from XLA:GPU's priority-fusion log,
:mod:`hlo_lsp.dump.fusion_dump`) and the definition targets of a fusion's
kernel in the PTX and LLVM IR of the dump (:mod:`hlo_lsp.dump.kernels`).
Pure: the dump's files are read by the caller (:class:`hlo_lsp.analysis.inputs.DumpInputs`).

Names: the log names instructions of the module before fusion; an
after-optimizations file holds the names that survived XLA's renames
(``rename_fusions``, clones). :func:`log_names` says which log names stand for
an instruction: its own name; for a fusion that no step names, the fusion the
log made of its fused computation's root (the root is a clone of the consumer
the last step fused into, its name the consumer's with another last number:
``mul.7.1`` for ``mul.7.0``); else the name the rename-robust matcher found
for it in the module as priority fusion left it (``FusionDump.renamed``,
:func:`hlo_lsp.dump.fusion_dump.names_at_fusion`, set by the analysis layer):
a fusion that a later pass merged with another (``multi_output_fusion``) and
renamed has a tuple for its root, which the first two ways cannot follow.
"""

from __future__ import annotations

import math
import os

from hlo_lsp.dump.fusion_dump import FusionDump, ProducerDecisions, name_base
from hlo_lsp.dump.kernels import KernelIndex, KernelOrigin
from hlo_lsp.model.hlo import HloModule, Instruction
from hlo_lsp.model.markdown import code, text
from hlo_lsp.model.spans import FileTarget
from hlo_lsp.model.units import format_microseconds

#: At most this many names in one list of the paragraph.
MAX_NAMES = 4
#: At most this many estimates listed.
MAX_ESTIMATES = 3

def log_names(dump: FusionDump, module: HloModule, ins: Instruction,
              history: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """The names the log gives ``ins`` (:func:`names_in_log` of its name and,
    for a fusion, the root of the computation it calls)."""
    return names_in_log(dump, ins.name.name, _fused_root(module, ins), history)


def names_in_log(dump: FusionDump, own: str, root: str | None = None,
                 history: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """The names the log gives the instruction named ``own``, each with how
    it was found: ``(own, "")`` when the log names it; for a fusion it does
    not name (``root``: the name of its fused computation's root, None for
    other instructions), ``(fusion name, how)`` when exactly one fusion step
    of the log made a fusion whose consumer is the fused root under another
    clone number; else the latest of its earlier names in the dump's pass
    snapshots that the log names (``history``: its names from its creation
    on, the last its name in this file, :attr:`hlo_lsp.dump.passes.Blame.names`;
    the pass history follows it through every rename, so this is the name it
    had when priority fusion ran); else the name the matcher found for it in
    the module as priority fusion left it (``dump.renamed``; see the module
    docstring); [] when the log says nothing of it. The one answer for hover
    (:func:`log_names`), ``hlo-lsp blame`` and ``hlo/passBlame``
    (:func:`hlo_lsp.features.pass_history.blamed_decisions`)."""
    if dump.about(own) is not None:
        return [(own, "")]
    made = dump.fusions_made_at(name_base(root)) if root is not None else set()
    if len(made) == 1:
        return [(made.pop(), f"found by its fused root {code(root)}")]
    earlier = history_name(dump, history)
    if earlier is not None:
        return [(earlier, "found by following it through the pass snapshots")]
    matched = dump.renamed.get(own)
    if matched is not None and dump.about(matched) is not None:
        return [(matched, "found by matching the module after priority fusion with this one")]
    return []


def fused_root_named(module: HloModule, name: str) -> str | None:
    """The root of the fused computation of the fusion named ``name`` in
    ``module`` (:meth:`~hlo_lsp.model.hlo.HloModule.instruction_named`), None
    when there is none or it is not a fusion."""
    ins = module.instruction_named(name)
    return _fused_root(module, ins) if ins is not None else None


def history_name(dump: FusionDump, names: tuple[str, ...]) -> str | None:
    """The latest of an instruction's ``names`` along its pass history
    (:attr:`hlo_lsp.dump.passes.Blame.names`, oldest first) that the log
    names, None when it names none of them. XLA's name uniquer never gives a
    name twice in a module, so a name the log knows is this instruction's."""
    for name in reversed(names):
        if dump.about(name) is not None:
            return name
    return None


def _fused_root(module: HloModule, ins: Instruction) -> str | None:
    """The name of the root of the computation the fusion ``ins`` calls, None
    for other instructions."""
    if ins.opcode != "fusion":
        return None
    for cref in ins.called:
        comp = module.resolve(cref.ref.name, ins.start) if cref.attr == "calls" else None
        root = comp.root if comp is not None else None
        if root is not None:
            return root.name.name
    return None


def _names(names, name=code) -> str:
    names = list(names)
    shown = ", ".join(name(n) for n in names[:MAX_NAMES])
    return shown + (f" and {len(names) - MAX_NAMES} more" if len(names) > MAX_NAMES else "")


def decision_lines(decisions: ProducerDecisions, name=code, words=text) -> list[str]:
    """What the log decided of one instruction, a line each: why it was not
    fused into its users, the cost model's estimates fused against unfused (µs;
    the last :data:`MAX_ESTIMATES`), what it was fused into and what it took
    in. ``name`` and ``words`` write a name and a reason from the log (default
    Markdown: a code span, escaped text; ``hlo-lsp blame`` passes plain ones and
    makes each whole line visible, :func:`hlo_lsp.features.pass_history.format_blame`)."""
    def us(value: float) -> str:  # a time of the cost model, µs; a non-number as the log wrote it
        return format_microseconds(value) if math.isfinite(value) else words(str(value))

    lines = [f"not fused into its users: {words(reason)}" for reason in decisions.reasons]
    for consumers, fused, unfused in decisions.estimates[-MAX_ESTIMATES:]:
        into = _names(consumers, name) if consumers else "its users"
        lines.append(f"fused into {into}: estimated {us(fused)} fused against "
                     f"{us(unfused)} unfused")
    for consumer, fusion in decisions.fused_into:
        lines.append(f"fused into {name(consumer)}, giving {name(fusion)}")
    if decisions.took:
        lines.append(f"took in {_names((p for p, _ in decisions.took), name)}")
    return lines


def decisions_markdown(decisions: ProducerDecisions, source: str, how: str = "") -> str:
    """The **Priority fusion** paragraph of one instruction's decisions
    (:func:`decision_lines`), ``source`` the log's file name, ``how`` how the
    log's name was found ("" for the instruction's own name). Every name and
    reason from the log is escaped (:mod:`hlo_lsp.model.markdown`)."""
    head = f"**Priority fusion** ({code(source)}"
    head += f", where it is {code(decisions.name)}, {how})" if how else ")"
    return "\n".join([head + ":", *(f"- {line}" for line in decision_lines(decisions))])


def fusion_section(dump: FusionDump | None, module: HloModule, ins: Instruction,
                   history: tuple[str, ...] = ()) -> str:
    """What the priority-fusion log says of ``ins`` (:func:`decisions_markdown`),
    "" without a log or when it names ``ins`` nowhere (:func:`log_names`, with
    its names along the pass history, ``history``); for a log that could not
    be read (``dump.problem``), a fusion's or custom-call's hover says so."""
    if dump is None:
        return ""
    if dump.problem:
        if ins.opcode not in ("fusion", "custom-call"):
            return ""
        return f"*Priority fusion log not read: {text(dump.problem)}*"
    for name, how in log_names(dump, module, ins, history):
        decisions = dump.about(name)
        if decisions is not None:
            return decisions_markdown(decisions, os.path.basename(dump.path), how)
    return ""


def kernel_targets(kernels: KernelIndex | None, ins: Instruction) -> list[FileTarget]:
    """Where the kernel of the fusion or custom-call ``ins`` is written in the
    dump: its ``.entry`` in the PTX first, then its function in the optimized
    LLVM IR (1-based lines and columns, the kernel's name selected); [] for
    other instructions or without such a kernel."""
    if kernels is None or ins.opcode not in ("fusion", "custom-call"):
        return []
    return [FileTarget(s.path, s.line + 1, s.start + 1, s.line + 1, s.end + 1)
            for s in kernels.for_instruction(ins.name.name)]


def kernel_origin_markdown(origin: KernelOrigin) -> str:
    """The hover of a kernel's line in a PTX or LLVM IR file of a dump (its
    ``.entry`` or ``define``): the HLO instruction XLA generated it for, with
    its file and 1-based line (definition goes there). The names are from
    the dump's files: code spans (:mod:`hlo_lsp.model.markdown`)."""
    return (f"**Kernel** {code(origin.kernel)}: generated by XLA for the HLO instruction "
            f"{code('%' + origin.instruction)} ({code(os.path.basename(origin.hlo))}, "
            f"line {origin.line + 1}; go to definition to open it)")


__all__ = ["decisions_markdown", "fused_root_named", "fusion_section", "history_name",
           "kernel_origin_markdown", "kernel_targets", "log_names", "names_in_log"]
