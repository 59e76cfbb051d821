"""``hlo-lsp dump``: run a JAX program with XLA dumping on, and record a recipe.

    hlo-lsp dump [--platform auto|cuda|rocm|cpu|tpu] [--cpu-fallback] [--out DIR]
                 [--timeout SECONDS] [--profile [N]] -- python train.py ARGS...
    hlo-lsp dump --target h100|a100|l4|b200|CONFIG.txtpb [--out DIR] -- python train.py ARGS...
    hlo-lsp dump --launcher slurm|ssh|docker|podman|apptainer|'ARGV {command}'
                 [--launcher-arg ARG]... [--host HOST] [--ssh-options OPTS] [--image IMAGE]
                 [--shared | --not-shared] [--platform P] [--out DIR] -- python train.py

With ``--launcher``, the program runs where the GPUs are: as a SLURM job
(``srun``), on another machine over ssh (the dump is copied back), or in a
container (:mod:`hlo_lsp.dump.launchers`); the launcher is recorded in the
recipe, so that recompiling from the editor runs it the same way, and
remembered as confirmed (it is the user's own command line). ``--platform
auto`` then means ``cuda`` (this machine's devices say nothing about the
other one).

With ``--target``, no GPU is needed: the program runs on the CPU as it would, and
every function it jits is also compiled for the target GPU (JAX's deviceless
ahead-of-time compilation; ``jax[cuda12]`` must be installed for the program's
Python, e.g. ``pip install 'hlo-lsp[cuda]'``), so DIR holds the dump XLA writes
for that GPU (``*.sm_9.0a_gpu_after_optimizations.txt`` for an H100) — with
kernels chosen without autotuning, which needs the device
(:mod:`hlo_lsp.dump.targets`, :mod:`hlo_lsp.dump.deviceless`).

With ``--profile [N]``, the program also runs under ``jax.profiler``
(:mod:`hlo_lsp.dump.capture`, :mod:`hlo_lsp.dump.profiling_hook`): N calls of its
jitted functions (default 10), counted over all of them, are traced, each
function's first call (its compile) left out; the profile is written into
``DIR/profile/plugins/profile/<run>/`` with the new dump and the recipe records
``profile``, so that a recompile profiles again. With ``--target``, the program
runs on the CPU: the profile measures the CPU's compile, not the target's, and
the output says so.

The program runs with ``XLA_FLAGS`` = your own ``XLA_FLAGS`` with
``--xla_dump_to=<new temp dir next to DIR> --xla_dump_hlo_as_text`` (any
``--xla_dump_to`` of yours is replaced) and ``JAX_PLATFORMS=<platform>``. When
it exits 0 and XLA wrote HLO text, the dump files in DIR are replaced by the
new ones and ``DIR/hlo-lsp-recipe.json`` records how to do it again (see
docs/recompile.md). When it fails, DIR is left as it was.

Exit status: the program's when it fails, 2 for a usage or platform problem,
130 when interrupted, else 0.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from hlo_lsp.dump.capture import DEFAULT_CALLS
from hlo_lsp.dump.launchers import PRESETS, LauncherError, launcher_from_options
from hlo_lsp.dump.names import (AFTER_OPTIMIZATIONS, BEFORE_OPTIMIZATIONS, DumpName,
                                is_pass_snapshot, module_id, stage_label)
from hlo_lsp.dump.environment import new_recipe
from hlo_lsp.dump.platforms import choose_platform, launch_platform, platform_label
from hlo_lsp.dump.recipe import MAX_PROFILE_CALLS, PLATFORMS, PlatformError, RecipeError
from hlo_lsp.dump.targets import TargetError, builtin_targets, resolve_target
from hlo_lsp.model.visible import visible


def add_subcommand(subparsers) -> None:
    """Add ``dump`` to the ``hlo-lsp`` argument parser."""
    p = subparsers.add_parser(
        "dump", help="run a JAX program with XLA dumping into DIR and write a recipe",
        description="Run a JAX program with XLA dumping into DIR, and record how "
                    "(DIR/hlo-lsp-recipe.json) so that the dump can be refreshed later. "
                    "DIR's old dump is replaced only when the program succeeds.",
        usage="hlo-lsp dump [--platform P | --target GPU] [--cpu-fallback] [--out DIR] "
              "[--profile [N]] -- COMMAND ...")
    p.add_argument("--platform", default="auto", choices=("auto", "gpu", *PLATFORMS),
                   help="JAX platform (JAX_PLATFORMS). auto: cuda or rocm when a GPU is "
                        "visible; without one, an error unless --cpu-fallback")
    p.add_argument("--target", default=None, metavar="GPU",
                   help="compile for this GPU without having it: "
                        f"{', '.join(builtin_targets())}, or the path of an XLA "
                        "GpuTargetConfig text file; the program runs on the CPU and "
                        "every function it jits is also compiled for the target "
                        "(needs jax[cuda12]; kernels chosen without autotuning)")
    p.add_argument("--cpu-fallback", action="store_true",
                   help="with --platform auto, compile on the CPU when no GPU is visible")
    p.add_argument("--out", default="xla_dump",
                   help="dump directory (default: ./xla_dump); its old dump files are "
                        "replaced only when the program succeeds")
    p.add_argument("--timeout", type=float, default=None,
                   help="stop the program after this many seconds")
    p.add_argument("--profile", type=profile_calls, nargs="?", const=DEFAULT_CALLS,
                   default=None, metavar="N",
                   help="also trace N calls of the program's jitted functions with "
                        f"jax.profiler (default {DEFAULT_CALLS}), each function's first "
                        "call (its compile) left out, into DIR/profile/plugins/profile/; "
                        "recorded in the recipe. With --target the program runs on the "
                        "CPU: the profile is of the CPU's compile, not the GPU's")
    p.add_argument("--launcher", default=None, metavar="LAUNCHER",
                   help=f"run the program through a launcher: a preset ({', '.join(PRESETS)}) "
                        "or an argument list as shell words holding {command}, e.g. "
                        "'srun --gpus=1 --partition=gpu {command}'; recorded in the recipe")
    p.add_argument("--launcher-arg", action="append", default=None, metavar="ARG",
                   help="an argument of the preset (srun or `docker run` options), "
                        "repeatable; write --launcher-arg=--partition=gpu")
    p.add_argument("--host", default=None, help="ssh launcher: the machine")
    p.add_argument("--ssh-options", default=None, metavar="OPTS",
                   help="ssh launcher: ssh options as shell words, e.g. '-p 2222 -i KEY'")
    p.add_argument("--image", default=None, help="container launchers: the image")
    shared = p.add_mutually_exclusive_group()
    shared.add_argument("--shared", dest="shared", action="store_true", default=None,
                        help="the launcher's machine sees DIR at the same path")
    shared.add_argument("--not-shared", dest="shared", action="store_false",
                        help="ssh launcher: dump into a remote temporary directory and copy "
                             "it back (the default for ssh)")
    p.add_argument("program", nargs=argparse.REMAINDER,
                   help="the command to run, after --, e.g. -- python train.py")
    p.set_defaults(run=run)


def profile_calls(text: str) -> int:
    """``--profile``'s N: an integer from 1 to :data:`MAX_PROFILE_CALLS`."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of calls: {text!r}") from None
    if not 1 <= value <= MAX_PROFILE_CALLS:
        raise argparse.ArgumentTypeError(
            f"the number of calls is from 1 to {MAX_PROFILE_CALLS}, not {value}")
    return value


def module_lines(files: dict[str, DumpName]) -> list[str]:
    """One short line per module of a dump, in module-number order, from its HLO
    text files (file name -> decoded name; non-HLO files must already be left
    out): ``module_0001.jit_f: before_optimizations, after_spmd_partitioner,
    sm_9.0a_gpu_after_optimizations, 69 pass snapshots`` — the stages by name
    (before, named passes, after), the per-pass dumps as a count. Names from
    the dump are data: control characters are shown escaped."""
    order = {BEFORE_OPTIMIZATIONS: 0, AFTER_OPTIMIZATIONS: 2}
    modules: dict[tuple[int, str], list[DumpName]] = {}
    for decoded in files.values():
        modules.setdefault((decoded.number, decoded.module_name), []).append(decoded)
    out = []
    for (number, name), decoded in sorted(modules.items()):
        snapshots = sum(is_pass_snapshot(d) for d in decoded)
        stages = sorted({(order.get(d.stage, 1), stage_label(d) or "(no stage in the name)")
                         for d in decoded if not is_pass_snapshot(d)})
        parts = [label for _, label in stages]
        if snapshots:
            parts.append(f"{snapshots} pass snapshot{'s' if snapshots != 1 else ''}")
        out.append(visible(f"{module_id(number)}.{name}: {', '.join(parts)}"))
    return out



def _say(msg: str) -> None:
    print(f"hlo-lsp dump: {msg}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    """Run the ``dump`` subcommand; returns the exit status."""
    from hlo_lsp.dump.recompile import recompile

    command = list(args.program)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        _say("error: give the command to run after --, e.g. "
             "hlo-lsp dump -- python train.py")
        return 2
    target = None
    if args.target:
        if args.platform not in ("auto", "cpu"):
            _say(f"error: --target {args.target} compiles on this machine's CPU; it cannot "
                 f"be combined with --platform {args.platform}")
            return 2
        try:
            target = resolve_target(args.target)
        except TargetError as exc:
            _say(f"error: {exc}")
            return 2
        args.platform = "cpu"
    launcher = None
    given = [flag for flag, value in (("--launcher-arg", args.launcher_arg),
                                      ("--host", args.host),
                                      ("--ssh-options", args.ssh_options),
                                      ("--image", args.image))
             if value is not None]
    if given and (not args.launcher or args.launcher.lower() not in PRESETS):
        _say(f"error: {', '.join(given)} {'is an option' if len(given) == 1 else 'are options'}"
             f" of a launcher preset: give --launcher {'|'.join(PRESETS[1:])}"
             + (" (an argument list holds its own options)" if args.launcher else ""))
        return 2
    if args.shared is not None and not args.launcher:
        _say("error: --shared/--not-shared describe a launcher: give --launcher")
        return 2
    if args.launcher:
        preset = args.launcher if args.launcher.lower() in PRESETS else None
        try:
            launcher = launcher_from_options(preset, None if preset else args.launcher,
                                             args=args.launcher_arg, host=args.host,
                                             ssh_options=args.ssh_options, image=args.image,
                                             shared=args.shared)
        except (LauncherError, ValueError) as exc:
            _say(f"error: --launcher: {exc}")
            return 2
    hint = ("Use --platform cpu to dump on the CPU."
            if args.platform != "auto" else
            "Use --platform cpu to dump on the CPU, or --cpu-fallback to fall back to "
            "it when there is no GPU.")
    try:
        if launcher is not None and target is None:
            platform, note = launch_platform(args.platform, None), ""
        else:
            platform, note = choose_platform(args.platform, None,
                                             allow_cpu_fallback=args.cpu_fallback, hint=hint)
    except PlatformError as exc:
        _say(f"error: {exc}")
        return 2
    if note:
        _say(note)
    out = os.path.abspath(args.out)
    recipe = new_recipe(command, os.getcwd(), out, platform,
                        target=(target.name if target.builtin else target.path)
                        if target else None, launcher=launcher, profile=args.profile)
    if target is not None:
        _say(f"running `{recipe.display_command()}` on the CPU and compiling what it "
             f"jits for {target.label} without a GPU, dumping into {out}")
    else:
        _say(f"running `{recipe.display_command()}` on {platform_label(platform)} "
             f"(JAX_PLATFORMS={platform}), dumping into {out}")

    if launcher is not None:
        _say(f"through the {launcher.name} launcher `{launcher.display()}`")
    if args.profile:
        _say(f"profiling {args.profile} call{'s' if args.profile != 1 else ''} of its jitted "
             f"functions after the first of each, into {os.path.join(out, 'profile')}"
             + (f" (the program's run on the CPU, not on the {target.label})"
                if target is not None else ""))

    def stage(s) -> None:
        _say(s.message())

    def echo(stream: str, line: str) -> None:
        print(line, file=sys.stdout if stream == "stdout" else sys.stderr, flush=True)

    from hlo_lsp.dump.names import holds_hlo_text
    from hlo_lsp.dump.recompile import hlo_files
    had_dump = bool(hlo_files(out))
    try:
        result = asyncio.run(recompile(recipe, out, platform=platform, on_output=echo,
                                       timeout=args.timeout, target=target,
                                       launcher=launcher, on_stage=stage,
                                       profile=args.profile))
    except KeyboardInterrupt:
        _say(f"interrupted; the program was stopped and {out} is unchanged")
        return 130
    except (RecipeError, OSError) as exc:
        _say(f"error: {exc}")
        return 1
    if not result.ok:
        _say(f"error: {result.error}; {out} is unchanged")
        if result.returncode and result.returncode > 0:
            return result.returncode
        return 1
    files = {n: d for n, d in hlo_files(out).items() if holds_hlo_text(os.path.join(out, n))}
    lines = module_lines(files)
    _say(f"{len(lines)} module{'s' if len(lines) != 1 else ''}, {len(files)} HLO text "
         f"file{'s' if len(files) != 1 else ''} in {out} "
         f"({result.seconds:.1f} s)")
    for line in lines:
        _say(f"  {line}")
    if had_dump:
        _say("compared with the dump it replaced:")
        for line in result.summary.splitlines()[1:]:
            if line not in (*result.deviceless.splitlines(), *result.profile.splitlines()):
                _say(f"  {line}")
    for line in (*result.deviceless.splitlines(), *result.profile.splitlines()):
        _say(line)
    if result.recipe_file:
        try:
            from hlo_lsp.dump.recipe import load_recipe
            saved = load_recipe(out)
            versions = (f" (jax {saved.jax_version}, jaxlib {saved.jaxlib_version})"
                        if saved and saved.jax_version else "")
        except RecipeError:
            versions = ""
        _say(f"recipe: {result.recipe_file}{versions}")
    return 0
