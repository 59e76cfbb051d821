"""``hlo-lsp experiment FILE:LINE [--flag F]... [--list] [--json] [--yes]``: experiments
with XLA flags on a dump (issue 44; docs/experiments.md).

Without ``--flag`` (or with ``--list``): the entries of hlo-lsp's table of XLA
flags (:mod:`hlo_lsp.model.flag_experiments`) that apply to the instruction on
line LINE (from 1) of FILE, a file of a dump directory: each one's key, the
flag as ``XLA_FLAGS`` takes it, what it does and its ``xla/xla.proto`` field.
``--json``: ``{"file", "line", "instruction", "experiments": [{"key", "flag",
"value", "argument", "title", "what", "source", "kind", "platform",
"default"}...]}``.

With ``--flag F`` (a key such as ``triton-gemm-off`` or the flag itself,
``--xla_gpu_enable_triton_gemm=false``; given more than once, each flag is set:
``--flag triton-gemm-off --flag cublaslt-off``): the dump's recipe (its
``hlo-lsp-recipe.json``, as ``hlo-lsp dump`` writes it) runs again with the
flags added to its ``XLA_FLAGS``, into ``<dump>.experiments/<flag>=<value>/``
beside the dump (several: each ``<flag>=<value>``, sorted, joined by ``+``,
:func:`hlo_lsp.dump.experiments.variant_name`; deviceless for the recipe's
target GPU, through its launcher); the dump itself is not changed. Two
``--flag`` setting one flag to different values are refused (exit 2). Then
the report: what the instruction became (its counterpart by the matcher that
survives renames), its estimated time before and after, the module's counts
that changed. ``--json``: :meth:`hlo_lsp.dump.experiments.ExperimentResult.to_json`
(``{"ok", "cancelled", "error", "experiment", "experiments", "argument",
"dumpDir", "variantDir", "variantFile", "line", "outcome": {"instruction",
"counterpart", "before", "after", "secondsBefore", "secondsAfter", "device",
"sentence", ...}, "change", "message"}``).

A recipe is untrusted input (anyone who ships a dump writes it): it runs when
its exact plan was confirmed before (in the editor, :mod:`hlo_lsp.dump.trust`)
or with ``--yes`` (then remembered as confirmed); otherwise the plan is
printed and nothing runs (exit 2).
Exit status: 0 done, 1 the variant failed (one sentence on stderr), 2 a usage
error or nothing run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys


def _say(msg: str) -> None:
    print(f"hlo-lsp experiment: {msg}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    """Run the ``experiment`` subcommand; returns the exit status."""
    from hlo_lsp.dump.experiments import experiments_at
    from hlo_lsp.dump.names import parse_dump_name
    from hlo_lsp.dump.recipe import RecipeError, load_recipe
    from hlo_lsp.dump.targets import read_deviceless
    from hlo_lsp.model.flag_experiments import (EXPERIMENTS, FlagConflict, UnknownExperiment,
                                                combine_named)

    path, sep, line = args.location.rpartition(":")
    if not sep or not line.isdigit() or int(line) < 1:
        _say(f"error: {args.location}: expected FILE:LINE (LINE from 1)")
        return 2
    path = os.path.abspath(path)
    if parse_dump_name(os.path.basename(path)) is None or not os.path.isfile(path):
        _say(f"error: {path} is not a file of an XLA dump directory")
        return 2
    dump_dir = os.path.dirname(path)
    try:
        recipe = load_recipe(dump_dir)
    except RecipeError as exc:
        _say(f"error: {exc}")
        return 2
    deviceless = bool(recipe and recipe.target) or read_deviceless(dump_dir) is not None
    ins, offered = experiments_at(path, int(line) - 1, deviceless)
    if not args.flag or args.list:
        return _list(args, path, int(line), ins, offered)
    try:
        experiment = combine_named(args.flag)
    except UnknownExperiment as exc:
        _say(f"error: {exc}; one of: " + ", ".join(dict.fromkeys(e.key for e in EXPERIMENTS)))
        return 2
    except FlagConflict as exc:
        _say(f"error: {exc}")
        return 2
    if ins is None:
        _say(f"error: no instruction on line {line} of {path}")
        return 2
    if recipe is None:
        _say(f"error: {dump_dir} has no recipe (hlo-lsp-recipe.json): make the dump with "
             "`hlo-lsp dump -- python your_program.py` first")
        return 2
    return _run(args, recipe, path, int(line) - 1, experiment)


def _list(args, path: str, line: int, ins, offered) -> int:
    from hlo_lsp.model.visible import visible

    if args.json:
        json.dump({"file": path, "line": line,
                   "instruction": ins.name.name if ins is not None else None,
                   "experiments": [e.to_dict() for e in offered]},
                  sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    if ins is None:
        print(f"No instruction on line {line} of {visible(path)}.")
        return 0
    if not offered:
        print(f"%{visible(ins.name.name)}: no experiment of the table applies.")
        return 0
    print(f"%{visible(ins.name.name)}: experiments (hlo-lsp experiment {visible(path)}:{line} "
          "--flag KEY):")
    for e in offered:
        print(f"  {e.key:<26} {e.argument}\n  {'':<26} {e.what} ({e.source})")
    return 0


def _run(args, recipe, path: str, line: int, experiment) -> int:
    from hlo_lsp.analysis.recompile import confirmation_message
    from hlo_lsp.dump import trust
    from hlo_lsp.dump.environment import plan_run
    from hlo_lsp.dump.experiments import run_experiment, variant_dir, variant_recipe
    from hlo_lsp.dump.launchers import LauncherError
    from hlo_lsp.dump.platforms import choose_platform, launch_platform
    from hlo_lsp.dump.recipe import RecipeError
    from hlo_lsp.dump.targets import TargetError, resolve_target

    variant = variant_recipe(recipe, experiment)
    try:
        target = resolve_target(variant.target, variant.cwd) if variant.target else None
        if target is not None:
            platform = "cpu"
        elif variant.launcher is not None:
            platform = launch_platform(None, variant.platform)
        else:
            platform = choose_platform(None, variant.platform)[0]
        plan = plan_run(variant, None, variant.launcher)
    except (RecipeError, TargetError, LauncherError) as exc:
        _say(f"error: {exc}")
        return 2
    if not args.yes and not trust.is_confirmed(plan):
        _say(confirmation_message(
            f"The recipe of {os.path.dirname(path)} with {experiment.argument} added to its "
            f"XLA_FLAGS, compiling into {variant_dir(os.path.dirname(path), experiment)}, has "
            "not been confirmed; give --yes to run it:", plan, platform, target,
            str(trust.state_dir())))
        return 2
    if args.yes and not trust.is_confirmed(plan):
        try:
            trust.remember(plan)  # what the confirmation says: the editor asks no more
        except OSError as exc:
            _say(f"could not remember the confirmation in {trust.state_dir()}: {exc}")

    def echo(stream: str, text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    _say(f"running `{plan.display_command()}` with {experiment.argument}"
         + (f", compiling for {target.label} without a GPU" if target else ""))
    try:
        result = asyncio.run(run_experiment(variant, path, line, experiment, platform=platform,
                                            target=target, plan=plan, on_output=echo,
                                            timeout=args.timeout, device=args.device))
    except KeyboardInterrupt:
        _say("interrupted; nothing was changed")
        return 130
    if args.json:
        json.dump(result.to_json(), sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    elif result.ok:
        print(result.message)
    if not result.ok:
        _say(result.message)
        return 1
    return 0


def add_subcommand(subparsers) -> None:
    """Register ``experiment`` (see module docstring)."""
    p = subparsers.add_parser(
        "experiment", help="recompile a dump with more XLA flags and say what an "
                           "instruction became",
        description="List the XLA flags of hlo-lsp's table that decide what the instruction "
                    "on FILE:LINE became, or (--flag) run the dump's recipe with one of them "
                    "(or several: --flag more than once) into "
                    "<dump>.experiments/<flag>=<value>/ (several: joined by +) and report "
                    "what the instruction became there, with its estimated time before and "
                    "after.")
    p.add_argument("location", metavar="FILE:LINE",
                   help="a file of a dump directory and the line of an instruction, from 1")
    p.add_argument("--flag", metavar="F", action="append",
                   help="the experiment: a key (triton-gemm-off) or the flag "
                        "(--xla_gpu_enable_triton_gemm=false); more than once to set "
                        "several flags together")
    p.add_argument("--list", action="store_true", help="list the experiments that apply")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--yes", action="store_true",
                   help="run the recipe even if its plan was never confirmed (and remember it)")
    p.add_argument("--timeout", type=float, default=None, metavar="S",
                   help="stop the program after S seconds")
    p.add_argument("--device", metavar="NAME",
                   help="the device of the estimates (default: the dump's)")
    p.set_defaults(run=run)
