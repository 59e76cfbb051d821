"""A readable rendering of an HLO module (seed 000: "filter out metadata and
extract ops config dictionary").

What changes compared with the dump:

- ``metadata={...}`` is removed (``keep_metadata=False``) and the innermost
  Python frame it resolves to (``stack_frame_id`` through the stack-frame
  tables, or ``source_file``/``source_line``; :func:`hlo_lsp.model.frames.python_stack`)
  is appended as a ``// file.py:LINE`` comment (with ``op_names``, then the
  ``op_name`` without its ``jit(fn)/`` head, which tells forward and backward
  instructions of one line apart:
  :func:`hlo_lsp.model.op_names.short_op_name`); the stack-frame tables are
  dropped.
- ``backend_config=...`` is removed from the line and expanded below it as
  ``//`` comment lines: indented JSON and the explanations of
  :func:`hlo_lsp.model.backend_config.decode_backend_config`; custom-calls get the
  explanation of their target and the meaning of their tuple results.
- Every operand printed as a bare name gets the shape of its definition in
  front (``f32[32,64]{1,0} %x``, as ``HloModule::ToString()`` prints them).
- With ``inline_fusions``, the computation a fusion calls is printed, indented,
  under the fusion instruction (and no longer at top level).

Annotations use ``//``, HLO's line comment (xla/hlo/parser/hlo_lexer.cc), so
without ``inline_fusions`` the view is still HLO text that parses.

Every output line is mapped back to an offset in the source text (the
instruction, computation header or attribute it comes from), or None for
blank lines.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hlo_lsp.model.visible import visible
from hlo_lsp.model.backend_config import HLO_FUSION_KINDS, FUSION_KINDS, decode_backend_config, explain_target
from hlo_lsp.model.frames import python_stack, short_frame
from hlo_lsp.model.op_names import short_op_name
from hlo_lsp.model.kernels import custom_call_target, fusion_backend_kind, result_names, tuple_element
from hlo_lsp.model.hlo import Computation, HloModule, Instruction
from hlo_lsp.syntax.lines import LineIndex

INDENT = "  "
FUSION_INDENT = "    "
MAX_ANNOTATION_LINE = 400


@dataclass(slots=True)
class ReadableView:
    """The rendered text and, per output line (``text.split("\\n")``), the
    character offset in the source of what the line shows, or None."""

    text: str
    line_offsets: list[int | None] = field(default_factory=list)


class _Out:
    __slots__ = ("lines", "offsets", "op_names")

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.offsets: list[int | None] = []
        self.op_names = False

    def add(self, line: str, offset: int | None) -> None:
        # at every line end an editor sees: \n, \r\n and a lone \r (a line
        # without any, nearly every one, is its only piece)
        if "\n" not in line and "\r" not in line:
            self.lines.append(line.rstrip())
            self.offsets.append(offset)
            return
        for piece in LineIndex.split(line):
            self.lines.append(piece.rstrip())
            self.offsets.append(offset)


def render(module: HloModule, inline_fusions: bool = False,
           keep_metadata: bool = False, op_names: bool = False) -> ReadableView:
    """Render ``module`` readably (see module docstring). Offsets in the result
    index ``module.text``. Never raises on a partial module."""
    text = module.text
    out = _Out()
    out.op_names = op_names and not keep_metadata
    if module.name is not None:
        kw = text.rfind("HloModule", 0, module.name.start)
        kw = kw if kw >= 0 else module.name.start
        eol = LineIndex.bounds(text, module.name.start)[1]
        header_end = max(module.header_end, module.name.end)
        if eol < len(text):  # the header's line, when a line break ends it
            header_end = max(min(header_end, len(text)), eol)
        out.add(text[kw:header_end].strip(), kw)
        out.add("", None)
    frames = module.frames
    if keep_metadata and frames.start >= 0:
        out.add(text[frames.start:frames.end].rstrip(), frames.start)
        out.add("", None)
    hidden = _inlined_computations(module) if inline_fusions else set()
    for comp in module.computations:
        if comp.name.name in hidden:
            continue
        _computation(module, comp, "", out, inline_fusions, keep_metadata, set())
        out.add("", None)
    while out.lines and out.lines[-1] == "":
        out.lines.pop()
        out.offsets.pop()
    if not out.lines:  # nothing to show: one empty line, as "".split("\n")
        return ReadableView("", [None])
    return ReadableView("\n".join(out.lines) + "\n", out.offsets + [None])


def _inlined_computations(module: HloModule) -> set[str]:
    """Computations called only as fusion bodies (printed under their callers)."""
    hidden = set()
    entry = module.entry
    for comp in module.computations:
        if comp.is_entry or comp is entry:
            continue
        callers = module.callers_of(comp.name.name, comp.start)
        if callers and all(ins.opcode == "fusion" and cref.attr == "calls"
                           for ins, cref in callers):
            hidden.add(comp.name.name)
    return hidden


def _computation(module: HloModule, comp: Computation, indent: str, out: _Out,
                 inline_fusions: bool, keep_metadata: bool, active: set[str]) -> None:
    text = module.text
    head = " ".join(text[comp.start:comp.body_start + 1].split())
    out.add(indent + head, comp.start)
    active = active | {comp.name.name}
    for ins in comp.instructions:
        _instruction(module, comp, ins, indent + INDENT, out, keep_metadata)
        if inline_fusions and ins.opcode == "fusion":
            for cref in ins.called:
                callee = module.resolve(cref.ref.name, cref.ref.start)
                if cref.attr == "calls" and callee is not None and \
                        callee.name.name not in active:
                    _computation(module, callee, indent + INDENT + FUSION_INDENT, out,
                                 inline_fusions, keep_metadata, active)
    if comp.closed:
        tail = text[comp.end:comp.end + 200].split("\n", 1)[0].strip()
        thread = f" {tail}" if tail.startswith(",") else ""
        out.add(indent + "}" + thread, max(comp.end - 1, comp.start))


def _separator_start(text: str, start: int) -> int:
    j = start - 1
    while j >= 0 and text[j] in " \t\r\n":
        j -= 1
    return j if j >= 0 and text[j] == "," else start


def instruction_end(text: str, ins: Instruction) -> int:
    """End offset of ``ins``'s text, including the ``}`` that closes a braced list
    value such as ``branch_computations={%a, %b}`` or ``control-predecessors={%x}``
    (the model's ``end`` for those stops at the last name)."""
    end = ins.end
    for attr in ins.attributes[-1:]:
        if attr.value_end == end and 0 < attr.value_start <= len(text) and \
                text[attr.value_start - 1:attr.value_start] == "{" and \
                text[end:end + 1] == "}":
            end += 1
    return end


def _instruction(module: HloModule, comp: Computation, ins: Instruction, indent: str,
                 out: _Out, keep_metadata: bool) -> None:
    text = module.text
    edits: list[tuple[int, int, str]] = []
    scope = comp.by_name
    # An instruction printed without its own shape (allowed in some test files)
    # cannot take typed operands either: XLA's parser rejects the mix.
    for op in ins.operands if ins.shape is not None else ():
        if op.shape is None:
            target = scope.get(op.ref.name)
            if target is not None and target.shape is not None:
                # Add the sigil too: `f32[] constant` would read as an opcode.
                sigil = "" if text.startswith("%", op.ref.start) else "%"
                edits.append((op.ref.start, op.ref.start, target.shape.text + " " + sigil))
    config = None
    for attr in ins.attributes:
        if attr.name == "backend_config":
            config = attr
            edits.append((_separator_start(text, attr.name_start), attr.value_end, ""))
        elif attr.name == "metadata" and not keep_metadata:
            edits.append((_separator_start(text, attr.name_start), attr.value_end, ""))
    line = text[ins.start:instruction_end(text, ins)]
    for start, end, repl in sorted(edits, reverse=True):
        line = line[:start - ins.start] + repl + line[end - ins.start:]
    notes: list[str] = []
    element = tuple_element(ins, comp)
    if element is not None:
        notes.append(element.meaning)
    stack = python_stack(module, ins) if ins.attribute("metadata") is not None else []
    if stack:
        notes.append(short_frame(stack[0]))
    if out.op_names:
        op_name = ins.metadata.get("op_name")
        if isinstance(op_name, str) and short_op_name(op_name):
            notes.append(short_op_name(op_name))
    if notes:  # text from the dump: one line, control characters shown escaped
        line += "  // " + visible(" · ".join(notes))
    out.add(indent + line, ins.start)
    note_indent = indent + "  // "
    target = custom_call_target(ins) if ins.opcode == "custom-call" else None
    if target is not None:
        out.add(f"{note_indent}{visible(target)}: {explain_target(target)}", ins.start)
        names = result_names(ins)
        if names:
            out.add(note_indent + "results: " + ", ".join(
                f"{{{i}}} {n}" for i, n in enumerate(names)), ins.start)
    if ins.opcode == "fusion":
        kind, inferred = fusion_backend_kind(ins)
        if inferred:
            hlo_kind = ins.attribute("kind")
            out.add(f"{note_indent}{kind} (inferred from the name gemm_fusion_*, no "
                    f"backend_config): {FUSION_KINDS.get(kind, '')}".rstrip(), ins.start)
            if hlo_kind is not None and hlo_kind.value in HLO_FUSION_KINDS:
                out.add(f"{note_indent}{hlo_kind.value}: {HLO_FUSION_KINDS[hlo_kind.value]}",
                        ins.start)
    if config is not None:
        explained = decode_backend_config(config.value)
        if explained.pretty.strip() not in ("{}", ""):
            out.add(note_indent + "backend_config:", config.name_start)
            for pretty_line in explained.pretty.split("\n"):
                if len(pretty_line) > MAX_ANNOTATION_LINE:
                    pretty_line = pretty_line[:MAX_ANNOTATION_LINE - 3] + "..."
                out.add(note_indent + "  " + pretty_line, config.name_start)
            if explained.error:
                out.add(note_indent + "  (" + explained.error + ")", config.name_start)
            for path, note in explained.notes:
                out.add(f"{note_indent}  - {path} = {note}", config.name_start)
