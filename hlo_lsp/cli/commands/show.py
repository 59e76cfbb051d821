"""``hlo-lsp show FILE [--module NAME] [--inline-fusions] [--keep-metadata] [--no-op-names]``:
print the readable view of a module (:mod:`hlo_lsp.features.readable`), each
instruction's ``// file.py:LINE`` followed by its short ``op_name`` (forward
``jvp(...)`` and backward ``transpose(jvp(...))`` told apart) unless
``--no-op-names``."""

from __future__ import annotations

import argparse
import sys


def _run(args: argparse.Namespace) -> int:
    from hlo_lsp.dump.loading import load
    from hlo_lsp.features.readable import render

    loaded = load(args.file, args.module)
    view = render(loaded.module, inline_fusions=args.inline_fusions,
                  keep_metadata=args.keep_metadata, op_names=not args.no_op_names)
    sys.stdout.write(view.text)
    return 0


def add_subcommand(subparsers) -> None:
    """Register ``show`` (see module docstring)."""
    p = subparsers.add_parser(
        "show", help="print a readable view of an HLO module",
        description="Print an HLO module with metadata reduced to '// file.py:LINE', "
                    "backend_config expanded and explained under its instruction, and "
                    "the shape of every operand.")
    p.add_argument("file", help="an HLO file or an XLA dump directory")
    p.add_argument("--module", metavar="NAME",
                   help="the module to show (files with several modules, dump directories)")
    p.add_argument("--inline-fusions", action="store_true",
                   help="print each fused computation indented under its fusion")
    p.add_argument("--keep-metadata", action="store_true",
                   help="keep metadata={...} and the stack-frame tables")
    p.add_argument("--no-op-names", action="store_true",
                   help="leave out the short op_name after each instruction's source line")
    p.set_defaults(run=_run)
