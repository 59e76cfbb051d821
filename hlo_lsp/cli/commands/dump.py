"""``hlo-lsp dump``: run a JAX program with XLA dumping on, and record a recipe.

    hlo-lsp dump [--platform auto|cuda|rocm|cpu|tpu] [--cpu-fallback] [--out DIR]
                 [--timeout SECONDS] -- python train.py ARGS...

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

from hlo_lsp.dump.recipe import PLATFORMS, PlatformError, RecipeError, choose_platform, new_recipe, platform_label


def add_subcommand(subparsers) -> None:
    """Add ``dump`` to the ``hlo-lsp`` argument parser."""
    p = subparsers.add_parser(
        "dump", help="run a JAX program with XLA dumping into DIR and write a recipe",
        description="Run a JAX program with XLA dumping into DIR, and record how "
                    "(DIR/hlo-lsp-recipe.json) so that the dump can be refreshed later. "
                    "DIR's old dump is replaced only when the program succeeds.",
        usage="hlo-lsp dump [--platform P] [--cpu-fallback] [--out DIR] -- COMMAND ...")
    p.add_argument("--platform", default="auto", choices=("auto", "gpu", *PLATFORMS),
                   help="JAX platform (JAX_PLATFORMS). auto: cuda or rocm when a GPU is "
                        "visible; without one, an error unless --cpu-fallback")
    p.add_argument("--cpu-fallback", action="store_true",
                   help="with --platform auto, compile on the CPU when no GPU is visible")
    p.add_argument("--out", default="xla_dump",
                   help="dump directory (default: ./xla_dump); its old dump files are "
                        "replaced only when the program succeeds")
    p.add_argument("--timeout", type=float, default=None,
                   help="stop the program after this many seconds")
    p.add_argument("program", nargs=argparse.REMAINDER,
                   help="the command to run, after --, e.g. -- python train.py")
    p.set_defaults(run=run)


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
    hint = ("Use --platform cpu to dump on the CPU."
            if args.platform != "auto" else
            "Use --platform cpu to dump on the CPU, or --cpu-fallback to fall back to "
            "it when there is no GPU.")
    try:
        platform, note = choose_platform(args.platform, None,
                                         allow_cpu_fallback=args.cpu_fallback, hint=hint)
    except PlatformError as exc:
        _say(f"error: {exc}")
        return 2
    if note:
        _say(note)
    out = os.path.abspath(args.out)
    recipe = new_recipe(command, os.getcwd(), out, platform)
    _say(f"running `{recipe.display_command()}` on {platform_label(platform)} "
         f"(JAX_PLATFORMS={platform}), dumping into {out}")

    def echo(stream: str, line: str) -> None:
        print(line, file=sys.stdout if stream == "stdout" else sys.stderr, flush=True)

    from hlo_lsp.dump.names import module_id
    from hlo_lsp.dump.recompile import hlo_files
    had_dump = bool(hlo_files(out))
    try:
        result = asyncio.run(recompile(recipe, out, platform=platform, on_output=echo,
                                       timeout=args.timeout))
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
    files = hlo_files(out)
    modules = sorted({(d.number, d.module_name) for d in files.values()})
    _say(f"{len(modules)} modules, {len(files)} HLO text files in {out} "
         f"({result.seconds:.1f} s)")
    for number, name in modules:
        stages = sorted(n for n, d in files.items() if d.number == number)
        _say(f"  {module_id(number)}.{name}: " + ", ".join(
            n.split(f"{name}.", 1)[-1] for n in stages))
    if had_dump:
        _say("compared with the dump it replaced:")
        for line in result.summary.splitlines()[1:]:
            _say(f"  {line}")
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
