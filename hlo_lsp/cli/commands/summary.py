"""``hlo-lsp summary FILE [--module NAME] [--json]``: what the module will run
(fusions and their kinds, custom-calls and their libraries, collectives), see
:mod:`hlo_lsp.model.summary`."""

from __future__ import annotations

import argparse
import json
import sys


def _run(args: argparse.Namespace) -> int:
    from hlo_lsp.dump.loading import load
    from hlo_lsp.dump.targets import deviceless_statement
    from hlo_lsp.features.summary import format_text
    from hlo_lsp.model.summary import kernel_summary

    loaded = load(args.file, args.module)
    summary = kernel_summary(loaded.module)
    note = deviceless_statement(loaded.path) or ""
    if args.json:
        data = summary.to_dict()
        data["path"] = loaded.path
        data["deviceless"] = note or None
        if loaded.offset:
            for k in data["kernels"]:
                k["offset"] += loaded.offset
        json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_text(summary, note))
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
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=_run)
