"""textDocument/documentSymbol: module -> computations -> instructions."""

from __future__ import annotations

from dataclasses import dataclass, field

from hlo_lsp.model.hlo import HloModule


@dataclass(slots=True)
class Symbol:
    """An outline entry. ``kind`` is "module", "computation", "entry",
    "instruction", "parameter" or "table"; ``detail`` shows shape and opcode."""

    name: str
    kind: str
    detail: str
    start: int
    end: int
    selection_start: int
    selection_end: int
    children: list["Symbol"] = field(default_factory=list)


def document_symbols(module: HloModule, instructions: bool = True) -> list[Symbol]:
    """The outline of ``module``. With ``instructions=False`` computations are
    leaves (used for very large documents)."""
    comps: list[Symbol] = []
    # An inline computation (Computation.inline) is a child of the instruction
    # whose attribute holds it, so that every child lies inside its parent.
    holders: dict[int, Symbol] = {}
    for comp in module.computations:
        kids: list[Symbol] = []
        if instructions:
            by_id: dict[int, Symbol] = {}
            for ins in comp.instructions:
                shape = ins.shape.text if ins.shape is not None else ""
                detail = f"{shape} {ins.opcode}".strip()
                if ins.is_root:
                    detail = "ROOT " + detail
                kind = "parameter" if ins.parameter_number is not None else "instruction"
                by_id[id(ins)] = sym = Symbol(ins.name.name, kind, detail, ins.start, ins.end,
                                              ins.name.start, ins.name.end)
                kids.append(sym)
            for inner in comp.nested:
                holder = comp.instruction_at(inner.start)
                if holder is not None:
                    holders[id(inner)] = by_id[id(holder)]
        symbol = Symbol(comp.name.name, "entry" if comp.is_entry else "computation",
                        "inline computation" if comp.inline else comp.signature(with_name=False),
                        comp.start, comp.end, comp.name.start, comp.name.end, kids)
        holder_symbol = holders.get(id(comp)) if comp.inline else None
        if holder_symbol is not None:
            holder_symbol.children.append(symbol)
        elif not comp.inline or instructions:
            comps.append(symbol)
    tables = module.frames
    if tables.sections:
        table_kids = [Symbol(kind, "table", "", s, e, s, s + len(kind))
                      for kind, s, e in tables.sections]
        comps.insert(0, Symbol("stack frames", "table", f"{len(tables.frames)} frames",
                               tables.start, tables.end, tables.start,
                               tables.start + len(tables.sections[0][0]), table_kids))
    if module.name is None:
        return comps
    end = max([module.header_end] + [c.end for c in module.computations])
    return [Symbol(module.name.name, "module", f"{len(module.computations)} computations",
                   0, end, module.name.start, module.name.end, comps)]
