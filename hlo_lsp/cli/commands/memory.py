"""``hlo-lsp memory FILE [-o OUT | --text] [--top N]``: memory over the schedule of an
after-optimizations dump, from XLA's reports beside it
(:mod:`hlo_lsp.features.memory`): the live-range report (``X-live-range.txt``)
with sizes from the buffer assignment, else an estimate from the buffer
assignment and the ENTRY schedule. Without ``-o``: the peak and its largest
buffers as text; with ``-o OUT``: a self-contained HTML page with the chart
(:mod:`hlo_lsp.features.graph_page.memory_page`); with ``--text``: the chart
as text for a terminal (:func:`hlo_lsp.features.text_pictures.memory_text`, a bar
of block elements per step, names from the reports escaped).
"""

from __future__ import annotations

import argparse
import os
import sys


def _run(args: argparse.Namespace) -> int:
    from hlo_lsp.features.graph_page import page_title
    from hlo_lsp.features.graph_page.memory_page import MEMORY_TITLE, memory_html
    from hlo_lsp.dump.loading import load
    from hlo_lsp.features.memory import format_text, timeline_for

    loaded = load(args.file, args.module)
    timeline = timeline_for(loaded.path, loaded.module)
    if timeline is None:
        print(f"hlo-lsp memory: error: no live-range or buffer-assignment report beside "
              f"{loaded.path} (XLA writes them for after-optimizations dumps with "
              "--xla_dump_hlo_as_text)", file=sys.stderr)
        return 2
    if args.text:
        from hlo_lsp.features.text_pictures import memory_text

        sys.stdout.write(memory_text(timeline, loaded.module, args.top).text)
    elif args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(memory_html(timeline,
                                page_title(loaded.module, loaded.path, MEMORY_TITLE),
                                os.path.basename(loaded.path)))
        print(f"wrote {args.output} (peak {timeline.peak_bytes} bytes)", file=sys.stderr)
    else:
        sys.stdout.write(format_text(timeline, args.top))
    return 0


def add_subcommand(subparsers) -> None:
    """Register ``memory`` (see module docstring)."""
    p = subparsers.add_parser(
        "memory", help="bytes live over the schedule, the peak and its buffers",
        description="From the live-range report beside an after-optimizations dump (sizes "
                    "from the buffer assignment), or an estimate from the buffer "
                    "assignment alone: bytes live at each step, the peak and the buffers "
                    "alive then. Text on stdout, or an HTML page with -o.")
    p.add_argument("file", help="an after-optimizations HLO dump or a dump directory")
    p.add_argument("--module", metavar="NAME", help="the module (several in FILE)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("-o", "--output", metavar="OUT", help="write an HTML page")
    out.add_argument("--text", action="store_true",
                     help="print the chart as text for a terminal (a bar per step)")
    p.add_argument("--top", type=int, default=20, help="buffers listed (text, default 20)")
    p.set_defaults(run=_run)
