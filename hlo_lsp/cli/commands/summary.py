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
and ``collectives``.

``--profile DIR [--run NAME]``: the kernels by measured time in a profile of this
compile (:func:`hlo_lsp.cli.commands.profile.file_profile`, the one join
:func:`hlo_lsp.dump.profiles.join_file`): count, total, share of the step and
measured mean self time over the roofline estimate on the device the profile ran
on, the kernels furthest from their roofline, the measured control flow
(:func:`hlo_lsp.features.summary.format_measured`). With ``--json`` (the
contract for scripts, docs/profiles.md): the JSON above, plus
``"profile": {"path", "run", ...}`` at the top level and ``"measured": {"count", "total_us", "self_us"}`` on every
entry of ``"kernels"`` the profile measures (µs, summed over every event), the
measured control flow in ``"control_flow"``. A profile of another compile of a
module of the same name, or a file that is not a profile: one line on stderr,
exit status 2, nothing on stdout."""

from __future__ import annotations

import argparse
import json
import os
import sys


def _run(args: argparse.Namespace) -> int:
    from hlo_lsp.dump.loading import load
    from hlo_lsp.dump.autotuning import read_dump_autotuning
    from hlo_lsp.dump.targets import deviceless_statement
    from hlo_lsp.features.autotuning import autotuning_note
    from hlo_lsp.dump.names import device_for
    from hlo_lsp.features.summary import (FOLDED_ROWS, format_folded, format_measured,
                                          format_text, format_top)
    from hlo_lsp.model.folding import fold_summary
    from hlo_lsp.model.summary import kernel_summary, ranked_kernels
    from hlo_lsp.features.memory import format_text as memory_text, peak_dict, timeline_for

    loaded = load(args.file, args.module)
    joined = None
    if args.profile:  # joined first: a refusal prints nothing else
        from hlo_lsp.cli.commands.profile import file_profile
        joined = file_profile(loaded, args.profile, args.profile_run)
    # XLA's memory reports beside the dump (after optimizations): the peak and what holds it
    memory = timeline_for(loaded.path, loaded.module) if not loaded.offset else None
    summary = kernel_summary(loaded.module)
    note = deviceless_statement(loaded.path) or ""
    tuning = autotuning_note(loaded.module, [k.offset for k in summary.kernels],
                             read_dump_autotuning(os.path.dirname(os.path.abspath(loaded.path))),
                             bool(note))
    device = device_for(loaded.path, args.device)
    measured = _measured(args, loaded, summary, joined) if joined is not None else None
    heading = "\n".join(n for n in (note, tuning) if n)  # the text reports' note
    if args.json:
        groups = ranked_kernels(loaded.module, summary, device)
        folded = fold_summary(loaded.module, summary, device)
        data = summary.to_dict()
        data["path"] = loaded.path
        data["deviceless"] = note or None
        data["autotuning"] = tuning or None
        data.update(folded.to_dict(args.top or None))
        data["top"] = [g.to_dict() for g in groups[:args.top or len(groups)]]
        data["memory"] = peak_dict(memory) if memory is not None else None
        if loaded.offset:
            for k in data["kernels"]:
                k["offset"] += loaded.offset
        if measured is not None:
            _add_measured(data, measured, joined, loaded.offset)
        json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    elif measured is not None:
        sys.stdout.write(format_measured(measured, joined.run.name, args.top or FOLDED_ROWS))
        if args.all:
            sys.stdout.write("\n" + format_text(summary, heading))
    elif args.all:
        sys.stdout.write(format_text(summary, heading))
        if args.top:
            groups = ranked_kernels(loaded.module, summary, device)
            sys.stdout.write("\n" + format_top(groups, device, args.top))
    else:
        folded = fold_summary(loaded.module, summary, device)
        sys.stdout.write(format_folded(folded, heading, args.top or FOLDED_ROWS))
        if memory is not None:
            sys.stdout.write("\nMemory at the peak (hlo-lsp memory FILE for the chart)\n"
                             + "".join(f"  {line}\n"
                                       for line in memory_text(memory, 5).splitlines()))
    return 0


def _measured(args: argparse.Namespace, loaded, summary, joined):
    """``summary --profile``: the kernels of ``summary`` with the times of
    ``joined`` (a :class:`hlo_lsp.dump.profiles.FileProfile`), estimates on the
    device the profile ran on."""
    from hlo_lsp.dump.names import device_for
    from hlo_lsp.features.measured import profile_device
    from hlo_lsp.features.summary import measured_summary

    device = profile_device(joined.device, device_for(loaded.path, args.device))
    return measured_summary(loaded.module, summary, joined.measured, device)


def _add_measured(data: dict, ms, joined, offset: int) -> None:
    """The contract for scripts (docs/profiles.md) added to ``data``, the JSON
    of ``hlo-lsp summary --json`` (its kernels' offsets already in the file)."""
    from hlo_lsp.features.summary import measured_dict, measured_row_dict

    profile = joined.measured
    data["profile"] = {"path": joined.source, "run": joined.run.name,
                       "run_path": joined.run.path, "device": joined.device or None,
                       "module": profile.module, "program_ids": list(profile.program_ids),
                       "executions": profile.executions, "step_us": profile.step_mean_us,
                       "total_step_us": profile.step_us,
                       "estimate_device": ms.device.key if ms.device is not None else None}
    rows = {r.name: r for r in ms.kernels}
    for k in data["kernels"]:
        r = rows.get(k["name"])
        if r is not None:
            k["measured"] = measured_dict(r.measured)
            k["measured_share"] = r.share
            k["measured_vs_estimate"] = r.ratio
    data["control_flow"] = [measured_row_dict(r, offset) for r in ms.control_flow]
    data["other_measured"] = [measured_row_dict(r, offset) for r in ms.other]
    data["furthest_from_roofline"] = [r.name for r in ms.furthest()]


def add_subcommand(subparsers) -> None:
    """Register ``summary`` (see module docstring)."""
    from hlo_lsp.cli.commands.profile import add_profile_arguments

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
                        "--all: also list them after the kernels; with --profile: the N "
                        "kernels that took the most measured time)")
    p.add_argument("--all", action="store_true",
                   help="list every kernel (the full table, long for big modules)")
    p.add_argument("--device", metavar="KEY",
                   help="accelerator of the estimate (h100-sxm, h100-pcie, a100-sxm-80gb, "
                        "b200, l4, tpu-v5e, cpu); default: from the dump's file name")
    p.add_argument("--json", action="store_true", help="print JSON (with totals and top)")
    add_profile_arguments(p)
    p.set_defaults(run=_run)
