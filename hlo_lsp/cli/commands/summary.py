"""``hlo-lsp summary FILE [--module NAME] [--top N] [--all] [--device KEY] [--json]``:
what the module will run, short for any module
(:func:`hlo_lsp.features.summary.format_folded`): totals, the N (default 10)
slowest kernel groups by roofline estimate with their share of the total,
repeated structure folded (the layers of an unrolled loop as one group with
its count, each loop body), collectives with the bytes each device sends, and
counts per kind (:func:`hlo_lsp.model.folding.fold_summary`). ``--all`` lists
every kernel (fusions and their kinds, custom-calls and their libraries,
collectives, :mod:`hlo_lsp.model.summary`), with ``--top N`` followed by the N
slowest kernel structures (:func:`hlo_lsp.model.summary.ranked_kernels`). The
JSON always has ``totals`` (the module's FLOPs, transcendentals and bytes
accessed as XLA's cost analysis counts them,
:func:`hlo_lsp.model.cost.module_cost`), ``top``, ``seconds``, ``repeats``
and ``collectives``."""

from __future__ import annotations

import argparse
import json
import sys


def _run(args: argparse.Namespace) -> int:
    from hlo_lsp.dump.loading import load
    from hlo_lsp.dump.targets import deviceless_statement
    from hlo_lsp.dump.names import device_for
    from hlo_lsp.features.summary import FOLDED_ROWS, format_folded, format_text, format_top
    from hlo_lsp.model.folding import fold_summary
    from hlo_lsp.model.summary import kernel_summary, ranked_kernels
    from hlo_lsp.features.memory import format_text as memory_text, peak_dict, timeline_for

    loaded = load(args.file, args.module)
    # XLA's memory reports beside the dump (after optimizations): the peak and what holds it
    memory = timeline_for(loaded.path, loaded.module) if not loaded.offset else None
    summary = kernel_summary(loaded.module)
    note = deviceless_statement(loaded.path) or ""
    device = device_for(loaded.path, args.device)
    if args.json:
        groups = ranked_kernels(loaded.module, summary, device)
        folded = fold_summary(loaded.module, summary, device)
        data = summary.to_dict()
        data["path"] = loaded.path
        data["deviceless"] = note or None
        data.update(folded.to_dict(args.top or None))
        data["top"] = [g.to_dict() for g in groups[:args.top or len(groups)]]
        data["memory"] = peak_dict(memory) if memory is not None else None
        if loaded.offset:
            for k in data["kernels"]:
                k["offset"] += loaded.offset
        json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    elif args.all:
        sys.stdout.write(format_text(summary, note))
        if args.top:
            groups = ranked_kernels(loaded.module, summary, device)
            sys.stdout.write("\n" + format_top(groups, device, args.top))
    else:
        folded = fold_summary(loaded.module, summary, device)
        sys.stdout.write(format_folded(folded, note, args.top or FOLDED_ROWS))
        if memory is not None:
            sys.stdout.write("\nMemory at the peak (hlo-lsp memory FILE for the chart)\n"
                             + "".join(f"  {line}\n"
                                       for line in memory_text(memory, 5).splitlines()))
    return 0


def add_subcommand(subparsers) -> None:
    """Register ``summary`` (see module docstring)."""
    p = subparsers.add_parser(
        "summary", help="summarize the kernels a compiled module runs",
        description="Walk ENTRY and its control flow (while, conditional, call): totals, "
                    "the slowest kernels by roofline estimate, repeated layers and loop "
                    "bodies folded, collectives with bytes moved, counts per kind. --all "
                    "lists each fusion (HLO and backend kind), custom-call (target, "
                    "library) and collective, with its Python source.")
    p.add_argument("file", help="an HLO file or an XLA dump directory")
    p.add_argument("--module", metavar="NAME", help="the module (several in FILE)")
    p.add_argument("--top", type=int, default=0, metavar="N",
                   help="the N slowest kernel groups by roofline estimate (default 10; with "
                        "--all: also list them after the kernels)")
    p.add_argument("--all", action="store_true",
                   help="list every kernel (the full table, long for big modules)")
    p.add_argument("--device", metavar="KEY",
                   help="accelerator of the estimate (h100-sxm, h100-pcie, a100-sxm-80gb, "
                        "b200, l4, tpu-v5e, cpu); default: from the dump's file name")
    p.add_argument("--json", action="store_true", help="print JSON (with totals and top)")
    p.set_defaults(run=_run)
