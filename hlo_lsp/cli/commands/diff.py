"""``hlo-lsp diff OLD NEW [--module NAME] [--json]``: compare the kernel
summaries of two dumps of the same program (:mod:`hlo_lsp.features.compare`): custom-calls
that appeared or disappeared, fusions that appeared, disappeared or changed kind,
counts per category, and the instructions added, removed or changed (shape,
layout, kind, target, backend_config) per Python line
(:mod:`hlo_lsp.model.instruction_diff`), with a warning when the two modules
are not of the same program, and the change in cost terms: estimated time,
FLOPs, transcendentals and bytes accessed in total and per changed kernel
(:func:`hlo_lsp.model.cost_change.compare_costs`). Exit status 0 either way (1 is not "different").

``--profile OLD_DIR --profile NEW_DIR`` (``--run`` once per profile to pick a
run): the measured change per kernel group, the kernels paired by the
comparison's instruction matcher (:func:`hlo_lsp.model.comparison.measured_changes`),
time per execution of the module before, after and the change (``"measured"``
in the JSON). Each profile is joined to its file as ``hlo-lsp summary
--profile`` joins it: a refusal is one line on stderr and exit status 2."""

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
    profiles = [None, None]
    if args.profile:
        from hlo_lsp.cli.commands.profile import file_profile
        from hlo_lsp.dump.loading import LoadError

        if len(args.profile) != 2 or len(args.profile_run) not in (0, 2):
            raise LoadError("--profile OLD_DIR --profile NEW_DIR: one profile of each side "
                            "(and --run twice, or not at all)")
        runs = args.profile_run or [None, None]
        profiles = [file_profile(loaded, d, r).measured
                    for loaded, d, r in zip((old, new), args.profile, runs)]
    diff = compare(kernel_summary(old.module), kernel_summary(new.module),
                   old.module, new.module, device_for(new.path, args.device), *profiles)
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
    from hlo_lsp.cli.commands.profile import add_profile_arguments

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
    add_profile_arguments(p, many=True)
    p.set_defaults(run=_run)
