"""``hlo-lsp profile DIR [--run NAME] [--json]``: the profiles ``jax.profiler``
wrote under or beside ``DIR`` (a dump directory, a ``plugins/profile`` folder or
one run: :func:`hlo_lsp.dump.profiles.find_runs`) and, per run, the XLA modules
it measured: name, XLA's program ids (when the profile has them), executions,
step time (one execution's mean, µs; :class:`hlo_lsp.model.profile.ModuleProfile`)
and the instructions measured. A run that cannot be read is one line on stderr
(the others are listed; exit status 1).

``hlo-lsp profile DIR --model-explorer OUT.json [--module NAME] [--hlo FILE]
[--value self|total]`` writes the measured times of one module as Model
Explorer's node data, so that its graph of the HLO module is coloured by the
same numbers (:func:`model_explorer_node_data`).

Also the one way the other commands (``summary``, ``diff``, ``graph`` with
``--profile DIR [--run NAME]``) join a profile to their file
(:func:`file_profile`): the newest run by default, the join
:func:`hlo_lsp.dump.profiles.join_file`, its refusal (another compile of a
module of the same name...) or an unreadable profile as one line on stderr
and a non-zero exit, never numbers of another compile.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

#: Model Explorer's colours from the least to the most measured time (white to red).
GRADIENT = ({"stop": 0, "bgColor": "#ffffff"}, {"stop": 0.5, "bgColor": "#ffc078"},
            {"stop": 1, "bgColor": "#e03131"})


def pick_run(directory: str, name: str | None):
    """The run of ``directory`` named ``name`` (its directory name, the capture
    time), else the newest. Raises :class:`hlo_lsp.dump.loading.LoadError` with
    one line when there is no run, or none of that name (listing them)."""
    from hlo_lsp.dump.loading import LoadError
    from hlo_lsp.dump.profiles import find_runs, newest_run

    runs = find_runs(directory)
    if not runs:
        raise LoadError(f"{directory}: no profile (plugins/profile/<run>/ with a "
                        "*.trace.json.gz, as jax.profiler.trace writes)")
    if name is None:
        return newest_run(runs)
    for run in runs:
        if name in (run.name, run.path):
            return run
    raise LoadError(f"{directory}: no profile run {name!r}; runs: "
                    + ", ".join(r.name for r in runs))


def read_profile(run):
    """The events of ``run`` (:func:`hlo_lsp.dump.profiles.read_run`); a file
    that is not a profile is a :class:`~hlo_lsp.dump.loading.LoadError` naming
    it and the reason, in one line."""
    from hlo_lsp.dump.loading import LoadError
    from hlo_lsp.dump.profiles import ProfileError, read_run

    try:
        return read_run(run)
    except ProfileError as exc:
        raise LoadError(f"not a profile that can be read: {exc}") from None


def file_profile(loaded, directory: str, run_name: str | None = None):
    """The measured times of ``loaded`` (:class:`hlo_lsp.dump.loading.Loaded`)
    in the profile of ``directory`` (run ``run_name``, default the newest): a
    :class:`hlo_lsp.dump.profiles.FileProfile` with ``measured`` set. Raises
    :class:`~hlo_lsp.dump.loading.LoadError` with the join's sentence when it
    shows nothing (another compile of a module of the same name, a module the
    profile did not measure, not the after-optimizations file)."""
    from hlo_lsp.dump.loading import LoadError
    from hlo_lsp.dump.profiles import join_file

    run = pick_run(directory, run_name)
    joined = join_file(loaded.module, loaded.path, run, read_profile(run))
    if joined.measured is None:
        raise LoadError(f"{loaded.path}: {joined.message}")
    return joined


def add_profile_arguments(p: argparse.ArgumentParser, many: bool = False) -> None:
    """``--profile DIR`` (twice with ``many``: old and new) and ``--run NAME``
    (``args.profile_run``: ``args.run`` is the subcommand's function)."""
    if many:
        p.add_argument("--profile", metavar="DIR", action="append", default=[],
                       help="a profile of OLD, then one of NEW (jax.profiler.trace's "
                            "directory, plugins/profile or a run): the measured change per "
                            "kernel group")
    else:
        p.add_argument("--profile", metavar="DIR",
                       help="a profile of this module (jax.profiler.trace's directory, the "
                            "dump directory holding it, plugins/profile or a run): the "
                            "measured times")
    p.add_argument("--run", metavar="NAME", action="append" if many else "store",
                   dest="profile_run", default=[] if many else None,
                   help="the profile run (its directory name; default: the newest)"
                        + (" (once per --profile)" if many else ""))


def module_profiles(trace) -> list:
    """Every module ``trace`` (:class:`hlo_lsp.dump.profiles.ProfileTrace`)
    measured, as :class:`hlo_lsp.model.profile.ModuleProfile`, one per module
    name (its compiles together when the profile has no program ids), in the
    order the profile first measured them."""
    from hlo_lsp.model.profile import measure, module_names

    return [measure(trace.events, name) for name in module_names(trace.events)]


def model_explorer_node_data(profile, value: str = "self", names=None) -> dict:
    """Model Explorer's node data for one graph (``GraphNodeData``) from
    ``profile`` (a :class:`hlo_lsp.model.profile.ModuleProfile`)::

        {"results": {"<instruction name>": {"value": <µs>}, ...},
         "gradient": [{"stop": 0, "bgColor": "#ffffff"}, ..., {"stop": 1, ...}]}

    ``value``: ``"self"`` (each instruction's measured self time, µs, summed over
    every event: a loop's own time, its body's apart) or ``"total"``. ``names``:
    the instructions kept (a file's), None for every measured one.

    The format: Model Explorer's custom node data JSON for one graph, as the
    ``ai-edge-model-explorer`` Python package 0.1.x writes it
    (google-ai-edge/model-explorer,
    ``src/server/package/src/model_explorer/node_data_builder.py``:
    ``GraphNodeData.save_to_file``, ``results`` keyed by node id, each a
    ``NodeDataResult`` with a numeric ``value``; ``gradient``: ``GradientItem``
    stops from 0 to 1). Documented in its wiki,
    https://github.com/google-ai-edge/model-explorer/wiki ("2. User Guide": custom node data; "4. API Guide": building node data). Its HLO adapter
    (``adapters/hlo/direct_hlo_to_json_graph_convert.cc``, ``GetInstructionId``)
    gives each node the HLO instruction's name as its id, so the keys are the
    names without ``%``."""
    results = {}
    for op, m in sorted(profile.ops.items()):
        if names is not None and op not in names:
            continue
        results[op] = {"value": round(m.self_us if value == "self" else m.total_us, 3)}
    return {"results": results, "gradient": [dict(g) for g in GRADIENT]}


def _list(args: argparse.Namespace) -> int:
    from hlo_lsp.dump.profiles import find_runs
    from hlo_lsp.model.units import format_microseconds as us

    runs = [pick_run(args.dir, args.profile_run)] if args.profile_run else find_runs(args.dir)
    if not runs:
        pick_run(args.dir, None)  # raises: no profile
    from hlo_lsp.dump.loading import LoadError

    out, bad = [], []
    for run in runs:
        try:
            trace = read_profile(run)
        except LoadError as exc:  # one line per run that cannot be read; the others listed
            print(f"hlo-lsp profile: run {run.name}: {exc}", file=sys.stderr)
            bad.append({"run": run.name, "path": run.path, "error": str(exc)})
            continue
        out.append((run, trace, module_profiles(trace)))
    if args.json:
        data = [{"run": run.name, "path": run.path, "file": trace.path,
                 "devices": list(trace.devices), "skipped_events": trace.skipped,
                 "modules": [{"name": p.module, "program_ids": list(p.program_ids),
                              "executions": p.executions, "step_us": p.step_mean_us,
                              "total_step_us": p.step_us, "instructions": len(p.ops),
                              "devices": list(p.devices)} for p in profiles]}
                for run, trace, profiles in out]
        json.dump({"directory": os.path.abspath(args.dir), "runs": data, "unreadable": bad},
                  sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return 1 if bad else 0
    print(f"{os.path.abspath(args.dir)}: {len(out)} profile run{'s' if len(out) != 1 else ''}"
          " (newest last)")
    for run, trace, profiles in out:
        print(f"\nrun {run.name}  {trace.path}")
        print(f"  {len(profiles)} module{'s' if len(profiles) != 1 else ''} measured"
              + (f" on {', '.join(trace.devices)}" if trace.devices else ""))
        for p in profiles:
            ids = ", ".join(f"{i}" for i in p.program_ids) or "not in this file"
            print(f"  {p.module}: program ids {ids}; {p.executions} execution"
                  f"{'s' if p.executions != 1 else ''}, step {us(p.step_mean_us)} each "
                  f"({us(p.step_us)} in all); {len(p.ops)} instructions measured")
        if trace.skipped:
            print(f"  {trace.skipped} events of XLA instructions could not be read")
    return 1 if bad else 0


def _model_explorer(args: argparse.Namespace) -> int:
    from hlo_lsp.dump.loading import LoadError, load

    if args.hlo:
        loaded = load(args.hlo, args.module)
        profile = file_profile(loaded, args.dir, args.profile_run).measured
        names = {i.name.name for c in loaded.module.computations for i in c.instructions}
    else:
        trace = read_profile(pick_run(args.dir, args.profile_run))
        profiles = module_profiles(trace)
        chosen = [p for p in profiles if args.module in (None, p.module)]
        if len(chosen) != 1:
            listed = ", ".join(p.module for p in profiles) or "none"
            raise LoadError(f"{trace.path}: " + (
                f"no module {args.module!r} measured" if args.module else
                "several modules measured, choose one with --module")
                + f"; modules: {listed}")
        profile, names = chosen[0], None
    data = model_explorer_node_data(profile, args.value, names)
    with open(args.model_explorer, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {args.model_explorer} ({len(data['results'])} instructions of "
          f"{profile.module}, measured {args.value} time in µs)", file=sys.stderr)
    return 0


def _run(args: argparse.Namespace) -> int:
    if args.model_explorer:
        return _model_explorer(args)
    return _list(args)


def add_subcommand(subparsers) -> None:
    """Register ``profile`` (see module docstring)."""
    p = subparsers.add_parser(
        "profile", help="list the profiles (jax.profiler) of a directory and what they measured",
        description="The runs jax.profiler.trace wrote under or beside DIR and, per run, the "
                    "XLA modules measured (name, program ids, executions, step time). With "
                    "--model-explorer OUT.json: one module's measured times as Model "
                    "Explorer's node data (keyed by instruction name).")
    p.add_argument("dir", help="a dump directory, a profile directory, plugins/profile or a run")
    p.add_argument("--run", metavar="NAME", dest="profile_run",
                   help="one run (its directory name; default: all, or the newest with "
                        "--model-explorer)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--model-explorer", metavar="OUT", help="write Model Explorer's node data "
                                                          "JSON of one module to OUT")
    p.add_argument("--module", metavar="NAME", help="the module (with --model-explorer)")
    p.add_argument("--hlo", metavar="FILE",
                   help="the module's HLO file (after optimizations): joined as the other "
                        "commands do (another compile is refused); only its instructions")
    p.add_argument("--value", choices=("self", "total"), default="self",
                   help="the time each node gets (default: self, its own)")
    p.set_defaults(run=_run)
