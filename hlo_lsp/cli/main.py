"""Command line: ``hlo-lsp`` (the server on stdio) and its subcommands.

- ``hlo-lsp`` / ``hlo-lsp serve``: run the language server over stdio.
- ``hlo-lsp check FILE...``: print diagnostics as ``file:line:col: severity: message``;
  exit status 1 if any error.
- ``hlo-lsp demo [FILE]``: start the real server and drive it with a real LSP
  client over stdio through hover, definition, references, outline and folding,
  printing what an editor would show.
"""

from __future__ import annotations

import argparse
import logging
import sys

from hlo_lsp import __version__


def _serve(args: argparse.Namespace) -> int:
    level = getattr(logging, args.log_level.upper())
    logging.basicConfig(stream=sys.stderr, level=level,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    # pygls logs every message it sends, whole, at INFO: megabytes per answer
    # about a large dump. Its INFO is shown only with the server's DEBUG.
    logging.getLogger("pygls").setLevel(level if level <= logging.DEBUG
                                        else max(level, logging.WARNING))
    from hlo_lsp.lsp.server import serve_stdio
    return serve_stdio()


def _check(args: argparse.Namespace) -> int:
    import os

    from hlo_lsp.features.diagnostics import diagnostics
    from hlo_lsp.dump.names import is_non_hlo_dump_file
    from hlo_lsp.dump.untrusted import UntrustedFileError, read_text
    from hlo_lsp.model.hlo import Severity
    from hlo_lsp.syntax.parser import parse
    from hlo_lsp.syntax.lines import LineIndex

    errors = 0
    for path in args.files:
        if is_non_hlo_dump_file(os.path.basename(path)):
            if not args.quiet:
                print(f"{path}: skipped (an XLA dump report, not HLO text)")
            continue
        try:
            text = read_text(path)
        except UntrustedFileError as exc:  # a FIFO, a device, too large, unreadable
            print(f"{path}: error: {exc.reason}", file=sys.stderr)
            errors += 1
            continue
        module = parse(text)
        lines = LineIndex(text)
        problems = diagnostics(module)
        for p in problems:
            line, col = lines.position(p.start)
            print(f"{path}:{line + 1}:{col + 1}: {p.severity.name.lower()}: {p.message}")
        errors += sum(p.severity == Severity.ERROR for p in problems)
        if not problems and not args.quiet:
            print(f"{path}: ok ({len(module.computations)} computations, "
                  f"{module.instruction_count()} instructions)")
    return 1 if errors else 0


def _demo(args: argparse.Namespace) -> int:
    from hlo_lsp.cli.demo import run_demo
    return run_demo(args.file)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hlo-lsp",
                                     description="Language server for XLA HLO text.")
    parser.add_argument("--version", action="version", version=f"hlo-lsp {__version__}")
    parser.add_argument("--log-level", default="warning",
                        choices=["debug", "info", "warning", "error"],
                        help="server log level (logs go to stderr)")
    sub = parser.add_subparsers(dest="command")
    serve = sub.add_parser("serve", help="run the language server on stdio (default)")
    serve.add_argument("--stdio", action="store_true", help="accepted for editor compatibility")
    serve.set_defaults(run=_serve)
    check = sub.add_parser("check", help="print diagnostics for HLO files")
    check.add_argument("files", nargs="+")
    check.add_argument("-q", "--quiet", action="store_true", help="print only problems")
    check.set_defaults(run=_check)
    demo = sub.add_parser("demo", help="drive the real server over stdio on a bundled dump")
    demo.add_argument("file", nargs="?", help="an HLO file (default: the bundled FP8 GPU dump)")
    demo.set_defaults(run=_demo)
    for command in _command_modules():
        command.add_subcommand(sub)
    return parser


def _command_modules() -> tuple:
    """The modules of :mod:`hlo_lsp.cli.commands`, each with
    ``add_subcommand(subparsers)``, in the order their subcommands are listed.
    A new command module is added here (an import error is an error)."""
    from hlo_lsp.cli.commands import diff, dump, graph, memory, passes, profile, show, summary
    from hlo_lsp.cli.commands import experiment
    return (diff, dump, graph, memory, passes, profile, show, summary, experiment)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--stdio" in argv and not any(a in argv for a in ("serve", "check", "demo")):
        argv.remove("--stdio")  # `hlo-lsp --stdio`, as some editor configs pass
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "run", None) is None:
        args.run = _serve
    from hlo_lsp.dump.loading import LoadError
    if args.run is _serve:
        return args.run(args)
    # A command reads a dump, builds its models and exits: the collector stays
    # paused (the policy: hlo_lsp.analysis.collector, docs/architecture.md).
    from hlo_lsp.analysis.collector import paused_gc
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _VisibleStream(sys.stdout), _VisibleStream(sys.stderr)
    try:
        with paused_gc():
            return args.run(args)
    except LoadError as exc:  # a subcommand could not read its FILE: say so, no traceback
        print(f"hlo-lsp {args.command}: error: {exc}", file=sys.stderr)
        return 2
    finally:
        sys.stdout, sys.stderr = streams


class _VisibleStream:
    """A text stream that writes through ``stream`` what it is given with every
    control character but newline and tab made visible
    (:func:`hlo_lsp.model.visible.visible`): text from a dump (op_name,
    source_file, custom_call_target, file names) never reaches the terminal as
    an escape sequence. Everything else is the wrapped stream's."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        from hlo_lsp.model.visible import visible
        self._stream.write(visible(text, keep="\n\t"))
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)
