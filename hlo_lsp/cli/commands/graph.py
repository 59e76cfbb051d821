"""``hlo-lsp graph FILE [--computation NAME | --around NAME [--hops K]] [-o OUT]
[-f html|dot|svg|json] [--text]``: the dataflow graph of a computation or of the
neighbourhood of an instruction (:func:`hlo_lsp.features.graph.graph`, the same
data as the ``hlo/graph`` request), as a self-contained HTML page
(:mod:`hlo_lsp.features.graph_page`: Graphviz in WebAssembly inlined, nodes coloured
by kind, fusion clusters, pan and zoom, a click posts the node's source range),
Graphviz DOT, SVG (needs Graphviz's ``dot`` on PATH) or JSON; with ``--text``,
as text for a terminal (:mod:`hlo_lsp.features.text_pictures`: operand and user
trees, names from the dump escaped). ``--profile DIR [--run NAME]``: the nodes
shaded by measured self time, the time in their label and tooltip (the profile
joined as ``hlo-lsp summary --profile`` joins it; a refusal is one line on
stderr and exit status 2).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys

FORMATS = ("html", "dot", "svg", "json")


def _format(args: argparse.Namespace) -> str:
    if args.format:
        return args.format
    ext = os.path.splitext(args.output or "")[1].lower().lstrip(".")
    return {"htm": "html", "gv": "dot"}.get(ext, ext) if ext in FORMATS + ("htm", "gv") \
        else ("html" if args.output else "dot")


def _print_text(args: argparse.Namespace, loaded) -> int:
    """``--text``: the dataflow as text (:func:`hlo_lsp.features.text_pictures.graph_text`)."""
    from hlo_lsp.features.text_pictures import graph_text

    pic = graph_text(loaded.module, args.computation, args.around, args.hops)
    if pic is None:
        what = f"instruction {args.around!r}" if args.around else \
            f"computation {args.computation!r}"
        print(f"hlo-lsp graph: error: no {what} in {loaded.path}", file=sys.stderr)
        return 2
    sys.stdout.write(pic.text)
    if pic.message:
        print(pic.message, file=sys.stderr)
    return 0


def _run(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from hlo_lsp.features.graph_page import graph_html, graph_title
    from hlo_lsp.dump.loading import load
    from hlo_lsp.dump.untrusted import read_text
    from hlo_lsp.features.graph import graph, to_dot
    from hlo_lsp.syntax.lines import LineIndex

    loaded = load(args.file, args.module)
    module = loaded.module
    if args.text:
        return _print_text(args, loaded)
    profile = None
    if args.profile:
        from hlo_lsp.cli.commands.profile import file_profile
        profile = file_profile(loaded, args.profile, args.profile_run).measured
    g = graph(module, args.computation, args.around, args.hops, args.limit, profile=profile)
    if g is None:
        what = f"instruction {args.around!r}" if args.around else \
            f"computation {args.computation!r}"
        print(f"hlo-lsp graph: error: no {what} in {loaded.path}", file=sys.stderr)
        return 2
    if loaded.offset:  # a later module of a multi-module file: offsets into the file
        for n in g.nodes:
            n.start += loaded.offset
            n.end += loaded.offset
            n.name_start += loaded.offset
            n.name_end += loaded.offset
    fmt = _format(args)
    if fmt == "html":
        lines = LineIndex(read_text(loaded.path))
        out = graph_html(g, lines, os.path.basename(loaded.path),
                         pathlib.Path(loaded.path).resolve().as_uri(),
                         graph_title(module, loaded.path, g, bool(args.around)))
    elif fmt == "json":
        out = json.dumps(asdict(g), indent=1) + "\n"
    else:
        out = to_dot(g)
        if fmt == "svg":
            dot = shutil.which("dot")
            if dot is None:
                print("hlo-lsp graph: error: -f svg needs Graphviz's `dot` on PATH "
                      "(apt install graphviz); -f html renders without it", file=sys.stderr)
                return 2
            out = subprocess.run([dot, "-Tsvg"], input=out, capture_output=True, text=True,
                                 check=True).stdout
    if args.output and args.output != "-":
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(out)
        if g.message:
            print(g.message, file=sys.stderr)
        print(f"wrote {args.output} ({len(g.nodes)} nodes, {len(g.edges)} edges)",
              file=sys.stderr)
    else:
        sys.stdout.write(out)
    return 0


def add_subcommand(subparsers) -> None:
    """Register ``graph`` (see module docstring)."""
    from hlo_lsp.cli.commands.profile import add_profile_arguments
    from hlo_lsp.features.graph import DEFAULT_LIMIT

    p = subparsers.add_parser(
        "graph", help="draw the dataflow graph of a computation (HTML, DOT, SVG, JSON)",
        description="The dataflow graph of a computation (default ENTRY) or of the "
                    "neighbourhood of one instruction: nodes coloured by kind (fusion, "
                    "custom-call, collective, parameter, constant), fusions and while "
                    "bodies as clusters. HTML pages render offline; clicking a node "
                    "shows (and posts to a parent window) its source range.")
    p.add_argument("file", help="an HLO file or an XLA dump directory")
    p.add_argument("--module", metavar="NAME", help="the module (several in FILE)")
    p.add_argument("--computation", metavar="NAME", help="the computation (default ENTRY)")
    p.add_argument("--around", metavar="NAME", help="an instruction: draw its neighbourhood")
    p.add_argument("--hops", type=int, default=None,
                   help="operand/user steps around --around (default 3)")
    p.add_argument("--limit", type=int, default=DEFAULT_LIMIT,
                   help=f"nodes at most (default {DEFAULT_LIMIT})")
    p.add_argument("-o", "--output", metavar="OUT",
                   help="file to write (default: DOT on stdout); its extension picks the "
                        "format unless -f is given")
    p.add_argument("-f", "--format", choices=FORMATS, help="html, dot, svg or json")
    p.add_argument("--text", action="store_true",
                   help="print the dataflow as text for a terminal: the instruction's "
                        "operands and users as indented trees up to --hops steps (without "
                        "--around: the computation's parameters and its ROOT's operands)")
    add_profile_arguments(p)
    p.set_defaults(run=_run)
