"""``hlo-lsp passes DUMP_DIR [--module NAME] [--all] [--json]`` and ``hlo-lsp
blame FILE:LINE [--json]``: a module's pass history (:mod:`hlo_lsp.dump.passes`,
dumped with ``XLA_FLAGS=--xla_dump_hlo_pass_re=.*``).

``passes``: the timeline of one module (the only one with pass snapshots, or
``--module``: a name, ``module_NNNN`` or both): per pass that changed it, the
instructions added, removed and changed and the opcodes, custom-call targets
and fusion kinds that appeared or vanished, between the before- and
after-optimizations files (:func:`hlo_lsp.features.pass_history.format_timeline`).
DUMP_DIR may also be a file of the dump: its module. ``--json`` (the contract
for scripts): ``{"module": NAME, "snapshots": [{"index", "pipeline", "pass",
"file", "added", "removed", "changed"}...]}``, every file of the history in
order, the counts null for a file that could not be read.

``blame``: which pass created the instruction on line LINE (1-based) of FILE
(an after-optimizations file, a pass snapshot, ...) and each pass that changed
it since, with the snapshot files; ``--json``: ``{"instruction": <name in FILE>,
"created_by": {"pass", "pipeline", "index", "file"}, "changed_by": [<same
shape>...]}``.

A snapshot that cannot be read (not a regular file, too large, not HLO text)
is one line on stderr; the rest is still shown. No history (no pass snapshots,
several modules and no ``--module``, no instruction on the line): one line on
stderr, exit status 2."""

from __future__ import annotations

import argparse
import json
import os
import sys


def _passes(args: argparse.Namespace) -> int:
    from hlo_lsp.dump.passes import HistoryError, history_of_file, module_history, steps
    from hlo_lsp.features.pass_history import format_timeline

    try:
        if os.path.isdir(args.dump):
            history = module_history(args.dump, args.module)
        else:
            history = history_of_file(args.dump)[0]
    except (HistoryError, OSError) as exc:
        print(f"hlo-lsp passes: error: {exc}", file=sys.stderr)
        return 2
    done = list(steps(history))
    for step in done:
        if step.problem:
            print(f"hlo-lsp passes: {step.stage.path}: {step.problem}", file=sys.stderr)
    if args.json:
        json.dump({"module": history.module, "snapshots": [s.to_dict() for s in done]},
                  sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_timeline(history, done, args.all))
    return 0


def _blame(args: argparse.Namespace) -> int:
    from hlo_lsp.dump.changes import read_hlo
    from hlo_lsp.dump.fusion_dump import fusion_dump_beside, with_renamed
    from hlo_lsp.dump.passes import HistoryError, blame
    from hlo_lsp.features.fusion_decisions import decision_lines
    from hlo_lsp.features.pass_history import blamed_decisions, format_blame

    path, sep, line = args.location.rpartition(":")
    if not sep or not line.isdigit() or int(line) < 1:
        print(f"hlo-lsp blame: error: {args.location}: expected FILE:LINE (LINE from 1)",
              file=sys.stderr)
        return 2
    try:
        result = blame(path, int(line) - 1)
    except (HistoryError, OSError) as exc:
        print(f"hlo-lsp blame: error: {exc}", file=sys.stderr)
        return 2
    for problem in result.problems:
        print(f"hlo-lsp blame: {problem}", file=sys.stderr)
    # XLA:GPU's priority-fusion log, when written, with the matcher's names and the file
    # parsed (a fusion's root; parsed once for both), as the server has them
    fusion = fusion_dump_beside(path)
    read = read_hlo(path) if fusion is not None and not fusion.problem else None
    module = read[1] if read is not None else None
    fusion = with_renamed(path, fusion, module)
    if args.json:
        data = result.to_dict()
        decisions = blamed_decisions(result, fusion, module)
        if decisions is not None:
            data["priority_fusion"] = {"file": os.path.basename(fusion.path),
                                       "name": decisions.name,
                                       "decisions": decision_lines(decisions, str, str)}
        json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_blame(result, fusion, module))
    return 0


def add_subcommand(subparsers) -> None:
    """Register ``passes`` and ``blame`` (see module docstring)."""
    p = subparsers.add_parser(
        "passes", help="the pass history of a module in a dump directory",
        description="The passes that changed a module, in order, from the pass snapshots XLA "
                    "dumps with XLA_FLAGS=--xla_dump_hlo_pass_re=.*: instructions added, "
                    "removed and changed, opcodes, custom-call targets and fusion kinds that "
                    "appeared or vanished; passes that changed nothing are left out.")
    p.add_argument("dump", metavar="DUMP_DIR", help="an XLA dump directory (or one of its files)")
    p.add_argument("--module", metavar="NAME",
                   help="the module (a name, module_NNNN or both) when several have snapshots")
    p.add_argument("--all", action="store_true",
                   help="every snapshot, also those that changed nothing")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=_passes)
    b = subparsers.add_parser(
        "blame", help="the pass that created an instruction, and those that changed it",
        description="Follow the instruction on FILE:LINE back through the pass snapshots "
                    "beside FILE (across renames): the pass that created it and each pass "
                    "that changed it since, with their snapshot files.")
    b.add_argument("location", metavar="FILE:LINE",
                   help="a dump file (after optimizations, a snapshot) and a line, from 1")
    b.add_argument("--json", action="store_true", help="print JSON")
    b.set_defaults(run=_blame)
