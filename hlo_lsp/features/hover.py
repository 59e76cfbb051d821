"""textDocument/hover: Markdown about the instruction or computation under the
cursor, at its definition or at any use. The one place hover text is made.

For an instruction: opcode, shape (element type, dimensions, bytes, layout),
each operand with its shape (resolved through the definition when the dump
prints a bare name), users, metadata and the Python source, custom-call target
and ``backend_config`` explained, fusion kind and the called computation's
signature; and, when XLA wrote a buffer assignment beside the dump
(:func:`hlo_lsp.dump.reports.load_buffer_assignment_for`), where its buffers
live (xla/service/buffer_assignment.cc); for a collective, its replica groups,
group mode and bytes per device, and the ``-start``/``-done`` pairing
(:mod:`hlo_lsp.features.collectives`). For a computation: signature,
instruction count, callers.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Sequence

from hlo_lsp.dump.fusion_dump import FusionDump
from hlo_lsp.dump.profiles import FileProfile
from hlo_lsp.dump.reports import Allocation, BufferAssignment, BufferValue
from hlo_lsp.dump.sources import outside_note, resolve_source_path, unresolved_hint
from hlo_lsp.model.accelerators import Accelerator
from hlo_lsp.model.backend_config import HLO_FUSION_KINDS, decode_backend_config, explain_target
from hlo_lsp.model.frames import format_frame, python_stack
from hlo_lsp.model.index import Kind, Occurrence, find_at
from hlo_lsp.model.hlo import Computation, HloModule, Instruction, ShapeToken, decode_metadata
from hlo_lsp.model.markdown import code, fence, text
from hlo_lsp.model.kernels import (KernelExplanation, custom_call_target, explain_kernel,
                                   result_names, tuple_element)
from hlo_lsp.model.opcodes import family
from hlo_lsp.model.precision import NOTED_OPCODES, matmul_precision, split_k, split_k_sum
from hlo_lsp.model.shapes import decode_shape, describe_shape, format_bytes
from hlo_lsp.dump.autotuning import AutotuneFile
from hlo_lsp.features.autotuning import (HEURISTICS, autotuning_for, autotuning_lines,
                                         autotuning_mark)
from hlo_lsp.features.collectives import collective_parts
from hlo_lsp.features.cost import cost_section
from hlo_lsp.features.fusion_decisions import fusion_section
from hlo_lsp.dump.passes import Blame, FileHistory
from hlo_lsp.features.pass_history import history_section
from hlo_lsp.features.measured import measured_markdown, profile_device
from hlo_lsp.features.memory import MemoryTimeline, peak_markdown
from hlo_lsp.features.references import users

MAX_LISTED = 12
#: At most this many buffer lines in a hover (:func:`buffer_lines`).
MAX_HOVER_VALUES = 8


@dataclass(frozen=True, slots=True)
class HoverResult:
    """Markdown for the name at character offsets ``[start, end)``."""

    markdown: str
    start: int
    end: int


def hover(module: HloModule, offset: int,
          assignment: BufferAssignment | None = None, *,
          deviceless: str | None = None,
          source_dirs: Sequence[str] | None = None,
          device: Accelerator | None = None,
          memory: MemoryTimeline | None = None,
          source_roots: Sequence[str] | None = None,
          measured: FileProfile | None = None,
          fusion: FusionDump | None = None,
          autotuning: Sequence[AutotuneFile] = (),
          passes: FileHistory | None = None) -> HoverResult | None:
    """Hover text for the character ``offset``, or None where there is nothing to
    say. ``assignment``: the buffer assignment of this dump (None when there is
    none); an instruction's definition, or a use resolving to one, then ends with
    its buffers (:func:`buffer_lines`) after a ``---`` rule. ``deviceless``: for a
    dump compiled for a GPU without the device, the sentence saying so
    (:meth:`hlo_lsp.dump.targets.DevicelessRecord.statement`); it ends the hover
    of a fusion or custom-call, whose kernel XLA chose without autotuning.
    ``source_dirs`` (:func:`hlo_lsp.dump.sources.source_dirs`): when given and
    the instruction's innermost Python file is found in none of them, the hover
    says which path was looked for and how to set the source root
    (:func:`hlo_lsp.dump.sources.unresolved_hint`; a few ``stat`` calls). Without
    it, pure: never reads the disk. ``device``: the accelerator of the roofline
    estimate in the Cost section of a kernel (:func:`hlo_lsp.features.cost.cost_section`,
    :func:`hlo_lsp.dump.names.device_for`; default the CPU default). ``memory``:
    the dump's memory over the schedule (:func:`hlo_lsp.features.memory.timeline_for`);
    the hover of the module header then ends with the peak and its largest
    buffers (:func:`hlo_lsp.features.memory.peak_markdown`). ``source_roots``
    (:func:`hlo_lsp.dump.sources.trusted_roots`): with ``source_dirs``, a Python
    file found outside them is named (:func:`hlo_lsp.dump.sources.outside_note`).
    ``measured``: the dump's profile joined to this module
    (:func:`hlo_lsp.dump.profiles.join_file`); an instruction it measured gets
    the **Measured** paragraph (:func:`hlo_lsp.features.measured.measured_markdown`)
    after its cost, and when the profile is of another compile of this module
    every instruction's hover says so instead. ``fusion``: XLA:GPU's
    priority-fusion log beside the dump (:func:`hlo_lsp.dump.fusion_dump.fusion_dump_beside`);
    an instruction it names gets the **Priority fusion** paragraph, why it was
    or was not fused (:func:`hlo_lsp.features.fusion_decisions.fusion_section`).
    ``autotuning``: the dump's autotuning files (:mod:`hlo_lsp.dump.autotuning`); a
    kernel they name gets the candidates and the winner
    (:func:`hlo_lsp.features.autotuning.autotuning_lines`). ``passes``: the
    pass history of this file (:func:`hlo_lsp.dump.passes.file_history`); an
    instruction it knows gets the **Pass history** paragraph, the pass that
    created it (:func:`hlo_lsp.features.pass_history.history_section`)."""
    occ = find_at(module, offset)
    if occ is None:
        return None
    result = _hover(module, occ)
    if result is not None and occ.kind == Kind.MODULE and memory is not None:
        return HoverResult(f"{result.markdown}\n\n---\n\n{peak_markdown(memory)}",
                           result.start, result.end)
    if result is not None and source_dirs is not None:
        result = _with_source_hint(module, occ, result, source_dirs, source_roots)
    if result is None:
        return result
    if occ.kind in (Kind.INSTRUCTION_DEF, Kind.OPCODE) and occ.instruction is not None:
        ins = occ.instruction
    elif occ.kind == Kind.INSTRUCTION_USE and isinstance(occ.target, Instruction):
        ins = occ.target
    else:
        return result
    costs = cost_section(module, ins, device)
    if costs:
        result = HoverResult(f"{result.markdown}\n\n{costs}", result.start, result.end)
    timing = _measured_section(module, ins, measured, device)
    if timing:
        result = HoverResult(f"{result.markdown}\n\n{timing}", result.start, result.end)
    blamed = _blame(passes, ins)
    fused = fusion_section(fusion, module, ins, blamed.names if blamed is not None else ())
    if fused:
        result = HoverResult(f"{result.markdown}\n\n{fused}", result.start, result.end)
    made = history_section(blamed) if blamed is not None else None
    if made:
        result = HoverResult(f"{result.markdown}\n\n{made}", result.start, result.end)
    tuning = _autotuning_section(module, ins, autotuning, bool(deviceless))
    if tuning:
        result = HoverResult(f"{result.markdown}\n\n{tuning}", result.start, result.end)
    if deviceless and ins.opcode in ("fusion", "custom-call"):
        result = HoverResult(f"{result.markdown}\n\n*{deviceless}*", result.start,
                             result.end)
    if assignment is None or occ.kind == Kind.OPCODE:
        return result
    name = ins.name.name
    lines = buffer_lines(assignment, name)
    if not lines:
        return result
    return HoverResult(result.markdown + "\n\n---\n\n" + "\n".join(lines), result.start,
                       result.end)


def _blame(passes: FileHistory | None, ins: Instruction) -> Blame | None:
    """What the file's pass history says of ``ins``, None without one or when
    it does not know ``ins``."""
    comp = ins.computation
    key = passes.key_of(ins.name.name, comp.name.name if comp is not None else None) \
        if passes is not None else None
    return passes.blame(key) if key is not None else None


def _autotuning_section(module: HloModule, ins: Instruction,
                        files: Sequence[AutotuneFile], deviceless: bool) -> str:
    """What the autotuning files say of ``ins``: its candidates and winner, or
    that its kernel was chosen by heuristics (an empty results file); "" when
    they say nothing of it, and for the heuristics of a ``deviceless`` dump,
    whose statement ends the hover already."""
    readable = [f for f in files if f.message is None]
    tuned = autotuning_for(module, ins, readable)
    if tuned is not None:
        return "\n".join(autotuning_lines(tuned))
    if not deviceless and autotuning_mark(module, ins, readable) == HEURISTICS:
        return ("*Not autotuned: the dump's autotuning results are empty (kernel chosen "
                "by heuristics).*")
    return ""


def _measured_section(module: HloModule, ins: Instruction, measured: FileProfile | None,
                      device: Accelerator | None) -> str:
    """The profile's word on ``ins``: its measured time, or why none is shown
    (the profile is of another compile); "" without a profile or a measurement."""
    if measured is None:
        return ""
    if measured.refused:
        return f"*No measured time: {text(measured.message)}*"
    if measured.measured is None:
        return ""
    return measured_markdown(module, ins, measured.measured, measured.run.name,
                             profile_device(measured.device, device))


def _hover(module: HloModule, occ: Occurrence) -> HoverResult | None:
    target = occ.target
    if occ.kind == Kind.MODULE:
        return HoverResult(module_markdown(module), occ.start, occ.end)
    if isinstance(target, Computation):
        return HoverResult(computation_markdown(module, target), occ.start, occ.end)
    if occ.kind == Kind.SHAPE and occ.instruction is not None:
        shape = occ.instruction.shape if target is occ.instruction else None
        if shape is None and 0 <= occ.index < len(occ.instruction.operands):
            shape = occ.instruction.operands[occ.index].shape
        if shape is not None:
            return HoverResult(shape_markdown(shape), occ.start, occ.end)
    if isinstance(target, Instruction):
        return HoverResult(instruction_markdown(module, target), occ.start, occ.end)
    if occ.kind == Kind.INSTRUCTION_USE:
        return HoverResult(f"{code('%' + occ.name)} is not defined in computation "
                           + code(occ.computation.name.name), occ.start, occ.end)
    if occ.kind == Kind.COMPUTATION_USE:
        return HoverResult(f"computation {code(occ.name)} is not defined in this module",
                           occ.start, occ.end)
    return None


def _code(body: str, lang: str = "hlo") -> str:
    return fence(body, lang)


def shape_markdown(shape: ShapeToken) -> str:
    """The hover of a shape: its text, then element type, dimensions, size in
    bytes and layout (:func:`hlo_lsp.model.shapes.describe_shape`), or why it
    does not decode."""
    try:
        lines = describe_shape(decode_shape(shape))
    except ValueError as exc:
        return f"{code(shape.text)}: {text(str(exc))}"
    return "\n".join([code(shape.text), ""] + [f"- {line}" for line in lines])


def _shape_summary(shape: ShapeToken | None) -> str:
    if shape is None:
        return "(shape not printed)"
    try:
        size = decode_shape(shape).byte_size
    except ValueError:
        return code(shape.text)
    return code(shape.text) + (f" ({format_bytes(size)})" if size is not None else "")


def instruction_markdown(module: HloModule, ins: Instruction) -> str:
    """The full hover of an instruction."""
    comp = ins.computation
    # A fusion is a kernel, not control flow (its kind is said below).
    fam = None if ins.opcode == "fusion" else family(ins.opcode)
    head = f"**%{ins.name.name}** — {code(ins.opcode)}" + (f" ({fam})" if fam else "")
    if ins.is_root:
        head += " — ROOT"
    parts = [head]
    if ins.shape is not None:
        try:
            lines = describe_shape(decode_shape(ins.shape))
        except ValueError as exc:
            lines = [str(exc)]
        parts.append(_code(ins.shape.text))
        parts.append("\n".join(f"- {line}" for line in lines))
    if ins.parameter_number is not None and comp is not None:
        parts.append(f"parameter {ins.parameter_number} of {code(comp.name.name)}")
    if ins.literal is not None:
        lit = ins.literal if len(ins.literal) < 200 else ins.literal[:197] + "..."
        parts.append(f"literal: {code(lit)}")
    # Operands, with shapes resolved through their definitions.
    if ins.operands:
        rows = ["**Operands**", ""]
        scope = comp.by_name if comp is not None else {}
        for i, op in enumerate(ins.operands[:MAX_LISTED * 2]):
            defined = scope.get(op.ref.name)
            shape = op.shape or (defined.shape if defined is not None else None)
            where = "" if defined is not None else " — **undefined**"
            rows.append(f"{i}. {code('%' + op.ref.name)}: {_shape_summary(shape)}{where}")
        if len(ins.operands) > MAX_LISTED * 2:
            rows.append(f"... and {len(ins.operands) - MAX_LISTED * 2} more")
        parts.append("\n".join(rows))
    used_by = users(ins)
    if used_by:
        names = ", ".join(code('%' + u.name.name) for u in used_by[:MAX_LISTED])
        more = f" and {len(used_by) - MAX_LISTED} more" if len(used_by) > MAX_LISTED else ""
        parts.append(f"**Users** ({len(used_by)}): {names}{more}")
    elif comp is not None and not ins.is_root and comp.root is not ins:
        parts.append("**Users**: none")
    parts.extend(_opcode_specific(module, ins))
    parts.extend(_metadata_parts(module, ins))
    return "\n\n".join(parts)


def _opcode_specific(module: HloModule, ins: Instruction) -> list[str]:
    out: list[str] = []
    kind = ins.attribute("kind")
    if ins.opcode == "fusion" and kind is not None:
        out.append(f"**Fusion kind** {code(kind.value)}: "
                   f"{HLO_FUSION_KINDS.get(kind.value, 'backend-specific fusion')}")
    target = custom_call_target(ins)
    if target is not None:
        out.append(f"**custom_call_target** {code(target)}: {explain_target(target)}")
        names = result_names(ins)
        if names:
            out.append("**Results**: " + ", ".join(
                f"{{{i}}} {n}" for i, n in enumerate(names)))
    out.extend(precision_parts(module, ins))
    for cref in ins.called:
        callee = module.resolve(cref.ref.name, cref.ref.start)
        if callee is not None:
            out.append(f"{code(cref.attr)} → {code(callee.name.name)}, "
                       f"{len(callee.instructions)} instructions\n\n" +
                       _code(callee.signature()))
    config = ins.attribute("backend_config")
    if config is not None:
        explained = decode_backend_config(config.value)
        kernel = explain_kernel(ins)
        covered = kernel.paths if kernel is not None else frozenset()
        notes = [(path, note) for path, note in explained.notes if path not in covered]
        block = "**backend_config**"
        if explained.error:
            block += f" — ⚠ {explained.error}"
        lang = "json" if explained.data is not None else "text"
        block += "\n\n" + _code(explained.pretty, lang)
        if notes:
            block += "\n\n" + "\n".join(f"- {code(path)} = {text(note)}" for path, note in notes)
        out.append(block)
        if kernel is not None:
            out.append(kernel_markdown(kernel))
    out.extend(collective_parts(module, ins))
    element = tuple_element(ins)
    if element is not None:
        out.append(f"element {{{element.index}}} of {code('%' + element.producer.name.name)}: "
                   f"{element.meaning}")
    return out


def _code_span(s: str) -> str:
    return code(s)


def _bold_head(sentence: str) -> str:
    """``Split-K 4: the ...`` -> ``**Split-K 4**: the ...``."""
    head, sep, rest = sentence.partition(": ")
    return f"**{head}**{sep}{rest}" if sep else sentence


def precision_parts(module: HloModule, ins: Instruction) -> list[str]:
    """The **Precision** and **Split-K** paragraphs of a matrix kernel's hover:
    what it computes in when narrower values (FP8, int8) were converted to a
    wider type before its dot, convolution or GEMM
    (:meth:`hlo_lsp.model.precision.MatmulPrecision.sentence`), its split-K
    (:meth:`hlo_lsp.model.precision.SplitK.sentence`), and for the reduce (or
    the fusion holding it) that sums a split-K GEMM's partial products, which
    GEMM. [] for other instructions."""
    if ins.opcode not in NOTED_OPCODES:
        return []
    out: list[str] = []
    precision = matmul_precision(module, ins)
    if precision is not None and precision.widenings:
        out.append(_bold_head(precision.sentence(_code_span)))
    split = split_k(module, ins)
    if split is not None:
        out.append(_bold_head(split.sentence(_code_span)))
    summed = split_k_sum(module, ins)
    if summed is not None:
        out.append(_bold_head(summed.sum_sentence(_code_span)))
    return out


def kernel_markdown(kernel: KernelExplanation) -> str:
    """The **Kernel** block of a hover: title, summary, then one line per field
    with its value, meaning and the XLA/JAX file defining it
    (:func:`hlo_lsp.model.kernels.explain_kernel`)."""
    lines = [f"**Kernel**: {kernel.title} — {kernel.summary}"]
    if kernel.facts:
        lines.append("")
        lines.extend(f"- {code(f.field)} = {code(f.value)}: {f.meaning} (*{f.source}*)"
                     for f in kernel.facts)
    if kernel.note:
        lines += ["", f"*{kernel.note}*"]
    return "\n".join(lines)


def _with_source_hint(module: HloModule, occ: Occurrence, result: HoverResult,
                      dirs: Sequence[str], roots: Sequence[str] | None = None) -> HoverResult:
    ins = occ.instruction if occ.kind in (Kind.INSTRUCTION_DEF, Kind.METADATA) else None
    if ins is None:
        return result
    stack = python_stack(module, ins)
    found = resolve_source_path(stack[0].file, dirs) if stack else None
    if not stack or (found is not None and roots is None):
        return result
    hint = unresolved_hint(stack[0].file, dirs) if found is None else \
        outside_note(found, roots, markdown=True)
    return HoverResult(result.markdown + "\n\n" + hint, result.start, result.end) \
        if hint else result


def _metadata_parts(module: HloModule, ins: Instruction) -> list[str]:
    meta_attr = ins.attribute("metadata")
    if meta_attr is None:
        return []
    meta = decode_metadata(meta_attr.value)
    out: list[str] = []
    if "op_name" in meta:
        out.append(f"**op_name** {code(meta['op_name'])}")
    if "op_type" in meta:
        out.append(f"**op_type** {code(meta['op_type'])}")
    stack = python_stack(module, ins)
    if stack:
        # Frames as code spans: "(<module>)" is HTML to a Markdown renderer.
        lines = [f"**Python** {code(format_frame(stack[0]))}"]
        if len(stack) > 1:
            lines += ["", "called from:", ""]
            lines.extend(f"{i}. {code(format_frame(f))}" for i, f in enumerate(stack[1:], 1))
        out.append("\n".join(lines))
    return out


def computation_markdown(module: HloModule, comp: Computation) -> str:
    """The hover of a computation: signature, size, callers."""
    parts = [("**ENTRY** " if comp.is_entry else "**computation** ") + code(comp.name.name),
             _code(comp.signature())]
    parts.append(f"{len(comp.instructions)} instructions" +
                 (f", ROOT {code('%' + comp.root.name.name)} = {code(comp.root.opcode)}"
                  if comp.root is not None else ""))
    callers = module.callers_of(comp.name.name, comp.start)
    if callers:
        listed = ", ".join(f"{code('%' + ins.name.name)} ({text(ins.opcode)}, {code(c.attr)})"
                           for ins, c in callers[:MAX_LISTED])
        more = f" and {len(callers) - MAX_LISTED} more" if len(callers) > MAX_LISTED else ""
        parts.append(f"**Callers** ({len(callers)}): {listed}{more}")
    elif not comp.is_entry and module.entry is not comp:
        parts.append("**Callers**: none")
    if comp.execution_thread:
        parts.append(f"execution_thread {code(comp.execution_thread)}")
    return "\n\n".join(parts)


def module_markdown(module: HloModule) -> str:
    """The hover of the module name in the header."""
    parts = [f"**HloModule** {code(module.name.name if module.name else '?')}",
             f"{len(module.computations)} computations, {module.instruction_count()} "
             "instructions"]
    for attr in module.header_attributes:
        value = attr.value if len(attr.value) <= 200 else attr.value[:197] + "..."
        parts.append(f"- {code(attr.name)} = {code(value)}")
    return "\n\n".join(parts)


def describe_value(alloc: Allocation, value: BufferValue) -> str:
    """One Markdown line: ``allocation 66 (62,120 B (60.7 KiB), preallocated-temp):
    offset 32768, 1,280 B (1.2 KiB) `f32[32,10]{1,0}```. Sizes and offsets in bytes
    (``BufferAllocation::ToShortString``, ``HloValue::ToShortString``)."""
    flags = ", ".join([format_bytes(alloc.size)] + alloc.flags)
    index = f" {code(value.shape_index)}" if value.shape_index else ""
    phi = " (phi)" if value.phi else ""
    return (f"allocation {alloc.index} ({flags}){index}{phi}: offset {value.offset}, "
            f"{format_bytes(value.size)} {code(value.shape)}")


def buffer_lines(assignment: BufferAssignment, instruction_name: str) -> list[str]:
    """Markdown lines about where ``instruction_name``'s buffers live in
    ``assignment``: a heading naming the report file, then one line per value the
    instruction defines (:func:`describe_value`), at most
    :data:`MAX_HOVER_VALUES`. [] when it has no buffer there (e.g. instructions
    inside fusions)."""
    values = assignment.values_of(instruction_name)
    if not values:
        return []
    lines = [f"**Buffer assignment** ({code(os.path.basename(assignment.path))})"]
    lines += [f"- {describe_value(a, v)}" for a, v in values[:MAX_HOVER_VALUES]]
    if len(values) > MAX_HOVER_VALUES:
        lines.append(f"- ... {len(values) - MAX_HOVER_VALUES} more values")
    return lines
