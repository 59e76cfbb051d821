"""``hlo-lsp summary FILE [--module NAME] [--top N] [--device KEY] [--json]``:
what the module will run (fusions and their kinds, custom-calls and their
libraries, collectives), see :mod:`hlo_lsp.model.summary`; with ``--top N``
the N slowest kernels by roofline estimate, repeated structures folded
(:func:`hlo_lsp.model.summary.ranked_kernels`). The JSON always has ``totals``
(the module's FLOPs, transcendentals and bytes accessed as XLA's cost analysis
counts them, :func:`hlo_lsp.model.cost.module_cost`) and ``top``."""

from __future__ import annotations

import argparse
import json
import sys


def _run(args: argparse.Namespace) -> int:
    from hlo_lsp.dump.loading import load
    from hlo_lsp.dump.targets import deviceless_statement
    from hlo_lsp.features.cost import device_for
    from hlo_lsp.features.summary import format_text, format_top
    from hlo_lsp.model.cost import module_cost
    from hlo_lsp.model.summary import kernel_summary, ranked_kernels

    loaded = load(args.file, args.module)
    summary = kernel_summary(loaded.module)
    note = deviceless_statement(loaded.path) or ""
    device = device_for(loaded.path, args.device)
    groups = ranked_kernels(loaded.module, summary, device) if args.top or args.json else []
    if args.json:
        data = summary.to_dict()
        data["path"] = loaded.path
        data["deviceless"] = note or None
        totals = module_cost(loaded.module)
        data["totals"] = {"flops": totals.flops, "transcendentals": totals.transcendentals,
                          "bytes_accessed": totals.bytes_accessed}
        data["device"] = device.key
        data["top"] = [g.to_dict() for g in groups[:args.top or len(groups)]]
        if loaded.offset:
            for k in data["kernels"]:
                k["offset"] += loaded.offset
        json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_text(summary, note))
        if args.top:
            sys.stdout.write("\n" + format_top(groups, device, args.top))
    return 0


def add_subcommand(subparsers) -> None:
    """Register ``summary`` (see module docstring)."""
    p = subparsers.add_parser(
        "summary", help="list the kernels a compiled module runs",
        description="Walk ENTRY and its control flow (while, conditional, call) and list "
                    "each fusion (HLO and backend kind), custom-call (target, library) and "
                    "collective, with its Python source.")
    p.add_argument("file", help="an HLO file or an XLA dump directory")
    p.add_argument("--module", metavar="NAME", help="the module (several in FILE)")
    p.add_argument("--top", type=int, default=0, metavar="N",
                   help="also list the N slowest kernels by roofline estimate, kernels of "
                        "the same structure folded")
    p.add_argument("--device", metavar="KEY",
                   help="accelerator of the estimate (h100-sxm, h100-pcie, a100-sxm-80gb, "
                        "b200, l4, tpu-v5e, cpu); default: from the dump's file name")
    p.add_argument("--json", action="store_true", help="print JSON (with totals and top)")
    p.set_defaults(run=_run)
