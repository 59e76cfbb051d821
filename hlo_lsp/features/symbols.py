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
    if module.parts:
        return _split_file_symbols(module, comps)
    if module.name is None:
        return comps
    end = max([module.header_end, tables.end] + [c.end for c in module.computations])
    return [Symbol(module.name.name, "module", f"{len(module.computations)} computations",
                   0, end, module.name.start, module.name.end, comps)]


def _split_file_symbols(module: HloModule, symbols: list[Symbol]) -> list[Symbol]:
    """A split file's outline: a module symbol per part (``// -----``), holding
    the symbols that lie in that part."""
    out = []
    for i, part in enumerate(module.parts):
        kids = [s for s in symbols if part.start <= s.start < part.end]
        computations = sum(1 for s in kids if s.kind in ("computation", "entry"))
        name = part.name.name if part.name is not None else f"module {i + 1}"
        sel = (part.name.start, part.name.end) if part.name is not None else (part.start,
                                                                               part.start)
        out.append(Symbol(name, "module", f"part {i + 1} of {len(module.parts)}: "
                          f"{computations} computations", part.start, part.end, *sel, kids))
    return out
