"""textDocument/foldingRange: computation bodies, the stack-frame tables, the
module header and any attribute value that spans several lines."""

from __future__ import annotations

from dataclasses import dataclass

from hlo_lsp.model.hlo import HloModule
from hlo_lsp.syntax.lines import LineIndex


@dataclass(frozen=True, slots=True)
class Fold:
    """Lines ``start_line..end_line`` (0-based, inclusive); ``kind`` is "region",
    "comment" or "imports" (LSP FoldingRangeKind values)."""

    start_line: int
    end_line: int
    kind: str = "region"
    collapsed_text: str | None = None


def folding_ranges(module: HloModule, lines: LineIndex) -> list[Fold]:
    """Every multi-line region of ``module``."""
    out: list[Fold] = []

    def add(start: int, end: int, kind: str = "region", text: str | None = None) -> None:
        a, b = lines.line_of(start), lines.line_of(max(start, end - 1))
        if b > a:
            out.append(Fold(a, b, kind, text))

    if module.name is not None:
        add(0, module.header_end, "region", f"HloModule {module.name.name} ...")
    for kind, s, e in module.frames.sections:
        add(s, e, "imports", kind)
    if module.frames.sections:
        add(module.frames.start, module.frames.end, "imports", "stack frames")
    for comp in module.computations:
        add(comp.start, comp.end, "region", comp.name.name)
        for ins in comp.instructions:
            if lines.line_of(ins.start) == lines.line_of(ins.end):
                continue
            add(ins.start, ins.end)
            for attr in ins.attributes:
                add(attr.name_start, attr.value_end, "region", attr.name)
    for attr in module.header_attributes:
        add(attr.name_start, attr.value_end, "region", attr.name)
    out.sort(key=lambda f: (f.start_line, -f.end_line))
    return out
