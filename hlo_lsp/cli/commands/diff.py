"""``hlo-lsp diff OLD NEW [--module NAME] [--json]``: compare the kernel
summaries of two dumps of the same program (:mod:`hlo_lsp.features.compare`): custom-calls
that appeared or disappeared, fusions that appeared, disappeared or changed kind,
counts per category, and the instructions added, removed or changed (shape,
layout, kind, target, backend_config) per Python line
(:mod:`hlo_lsp.model.instruction_diff`), with a warning when the two modules
are not of the same program, and the change in cost terms: estimated time,
FLOPs, transcendentals and bytes accessed in total and per changed kernel
(:func:`hlo_lsp.model.cost_change.compare_costs`). Exit status 0 either way (1 is not "different")."""

from __future__ import annotations

import argparse
import json
import sys


def _run(args: argparse.Namespace) -> int:
    from hlo_lsp.dump.loading import load
    from hlo_lsp.features.compare import compare, format_text
    from hlo_lsp.dump.names import device_for
    from hlo_lsp.model.summary import kernel_summary

    old = load(args.old, args.module)
    new = load(args.new, args.module)
    diff = compare(kernel_summary(old.module), kernel_summary(new.module),
                   old.module, new.module, device_for(new.path, args.device))
    if args.json:
        data = diff.to_dict()
        data["old"]["path"] = old.path
        data["new"]["path"] = new.path
        json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_text(diff, f"old {old.path}", f"new {new.path}"))
    return 0


def add_subcommand(subparsers) -> None:
    """Register ``diff`` (see module docstring)."""
    p = subparsers.add_parser(
        "diff", help="compare the kernels of two dumps of the same program",
        description="Which custom-calls appeared or disappeared, which fusions changed "
                    "kind, and counts per category, between OLD and NEW.")
    p.add_argument("old", help="the old HLO file or dump directory")
    p.add_argument("new", help="the new HLO file or dump directory")
    p.add_argument("--module", metavar="NAME", help="the module (several in a file)")
    p.add_argument("--device", metavar="KEY",
                   help="accelerator of the time estimates (see hlo-lsp summary --device); "
                        "default: from the new dump's file name")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=_run)
