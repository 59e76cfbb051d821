"""The kernel summary as reports: the plain-text table of ``hlo-lsp summary``
and the Markdown of the ``hlo.showSummary`` command.

The summary itself (which kernels a module runs, their kinds, targets and
Python source) is :func:`hlo_lsp.model.summary.kernel_summary`.
"""

from __future__ import annotations

from hlo_lsp.features.cost import format_count, format_seconds
from hlo_lsp.model.accelerators import Accelerator
from hlo_lsp.model.summary import CATEGORIES, Kernel, KernelGroup, KernelSummary


def _kernel_line(k: Kernel) -> list[str]:
    cells = [f"%{k.name}"]
    if k.category == "fusion":
        kind = k.hlo_kind or "?"
        if k.backend_kind:
            kind += f" {k.backend_kind}" + ("*" if k.backend_kind_inferred else "")
        cells.append(kind)
        cells.append(k.label)
        cells.append(", ".join(k.contains))
    elif k.category == "custom-call":
        cells.append(k.target)
        cells.append(k.library)
        cells.append("")
    else:
        cells.append(k.opcode)
        cells.append(k.shape)
        cells.append("")
    cells.append(k.where)
    cells.append(" > ".join(k.context))
    return cells


def _table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for r in rows:
        line = "  ".join(c.ljust(w) for c, w in zip(r, widths) if w)
        out.append(indent + line.rstrip())
    return out


_TITLES = {"fusion": "Fusions", "custom-call": "Custom-calls", "collective": "Collectives",
           "op": "Other ops (outside fusions)"}


def format_text(summary: KernelSummary, note: str = "") -> str:
    """The plain-text report of ``hlo-lsp summary``: headline, ``note`` (e.g. that
    the dump was compiled for a GPU without it, so its kernels were chosen without
    autotuning: :meth:`hlo_lsp.dump.targets.DevicelessRecord.statement`), then
    one table per category (name, kind/target, label, contents, Python source,
    control-flow context)."""
    lines = [f"HloModule {summary.module or '?'}, ENTRY %{summary.entry or '?'}",
             summary.headline(), *([note] if note else []), ""]
    inferred = False
    for cat in CATEGORIES:
        ks = summary.of(cat)
        lines.append(f"{_TITLES[cat]} ({len(ks)})")
        lines.extend(_table([_kernel_line(k) for k in ks]))
        inferred |= any(k.backend_kind_inferred for k in ks)
        lines.append("")
    if inferred:
        lines.append("* backend kind inferred from the fusion name (XLA's GemmFusion pass "
                     "names its Triton GEMM fusions gemm_fusion_*); the dump has no "
                     "backend_config")
    return "\n".join(lines).rstrip() + "\n"


def format_markdown(summary: KernelSummary, note: str = "") -> str:
    """Markdown report (the ``hlo.showSummary`` command): headline, ``note`` (see
    :func:`format_text`) in italics, and tables."""
    parts = [f"### Kernels of `{summary.module or '?'}` (ENTRY `%{summary.entry or '?'}`)",
             f"**{summary.headline()}**", *([f"*{note}*"] if note else [])]
    headers = {"fusion": "| fusion | kind | backend | contains | source | in |",
               "custom-call": "| custom-call | target | library | | source | in |",
               "collective": "| collective | opcode | shape | | source | in |",
               "op": "| op | opcode | shape | | source | in |"}
    for cat in CATEGORIES:
        ks = summary.of(cat)
        if not ks:
            continue
        rows = [f"**{_TITLES[cat]}** ({len(ks)})", "", headers[cat], "|---" * 6 + "|"]
        for k in ks:
            cells = _kernel_line(k)
            rows.append("| " + " | ".join(f"`{c}`" if i < 2 and c else c.replace("|", "\\|")
                                           for i, c in enumerate(cells)) + " |")
        parts.append("\n".join(rows))
    return "\n\n".join(parts) + "\n"


def format_top(groups: list[KernelGroup], device: Accelerator, top: int) -> str:
    """The ``--top N`` table of ``hlo-lsp summary``: the ``top`` slowest kernels
    (kernels of one structure folded into one row, ``Nx``) by roofline time
    on ``device``, with their share of the estimated total, FLOPs, bytes
    accessed and what bounds them (:func:`hlo_lsp.model.summary.ranked_kernels`)."""
    total = sum(g.seconds for g in groups)
    lines = [f"Top {min(top, len(groups))} of {len(groups)} kernel structures by estimated "
             f"time on {device.name} (roofline; total {format_seconds(total)}; a kernel "
             "in a loop counted once)"]
    rows = [["#", "kernel", "count", "time", "share", "FLOPs", "bytes", "bound", "label"]]
    for i, g in enumerate(groups[:top], 1):
        first = g.kernels[0]
        rows.append([str(i), f"%{first.name}", f"{len(g.kernels)}x", format_seconds(g.seconds),
                     f"{100 * g.share:.1f}%", format_count(g.cost.known_flops, ""),
                     format_count(g.cost.known_bytes, "B"), g.bound, first.label])
    lines.extend(_table(rows))
    return "\n".join(lines) + "\n"


__all__ = ["format_markdown", "format_text", "format_top"]
