"""The custom request ``hlo/inlineRegions``: the in-line ranges an editor may
hide without touching the buffer (docs/protocol.md).

Each range covers the separator before the attribute and the attribute, e.g.
``, metadata={op_name="a" source_line=3}``, so that hiding it leaves a line
that still reads as HLO.
"""

from __future__ import annotations

from dataclasses import dataclass

from hlo_lsp.model.hlo import HloModule

KINDS = ("metadata", "backend_config", "frontend_attributes")


@dataclass(frozen=True, slots=True)
class InlineRegion:
    start: int
    end: int
    kind: str


def inline_regions(module: HloModule, kinds=KINDS) -> list[InlineRegion]:
    """Regions of the attributes named in ``kinds``, in text order."""
    text = module.text
    out: list[InlineRegion] = []
    wanted = set(kinds)
    for comp in module.computations:
        for ins in comp.instructions:
            for attr in ins.attributes:
                if attr.name not in wanted:
                    continue
                start = attr.name_start
                # Include the ", " before the attribute.
                j = start - 1
                while j >= 0 and text[j] in " \t":
                    j -= 1
                if j >= 0 and text[j] == ",":
                    start = j
                out.append(InlineRegion(start, attr.value_end, attr.name))
    return out
