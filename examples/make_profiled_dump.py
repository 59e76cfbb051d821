"""Regenerate ``examples/cpu_profiled/``: a real XLA CPU dump of a small JAX program
with a real ``jax.profiler`` profile of it, made by ``hlo-lsp dump --profile``.

The program is :file:`profiled_net.py` (a convolution, a sort, a while loop, a
conditional and an FFT in one jitted function ``net``, called 6 times). This script
runs, from the program's directory::

    python -m hlo_lsp dump --platform cpu --profile 5 --out cpu_profiled -- PYTHON profiled_net.py

so the 5 calls after the first (which compiles) are traced, and the dump and the
profile are the ones a user gets. Then it prunes the dump to what the example is for:

* ``module_*.jit_net.cpu_after_optimizations.txt`` (the HLO the profile measured),
  its ``-buffer-assignment.txt`` and ``-memory-usage-report.txt``;
* ``profile/plugins/profile/<run>/<host>.xplane.pb`` and ``<host>.trace.json.gz``
  (written by ``jax.profiler``) and ``profile/hlo-lsp-profile.json`` (the
  profiling hook's record of what it traced);
* ``hlo-lsp-recipe.json``, the recipe ``hlo-lsp dump`` wrote (for the committed
  example, its machine-specific values made portable: ``cwd`` relative to the
  dump, ``python`` for the interpreter, no host, no ``XLA_FLAGS``, which only
  held the dump directory), so that the editor's "Recompile and profile" works on
  it (after the user confirms the command).

Usage (from anywhere)::

    /work/main/.venv/bin/python examples/make_profiled_dump.py              # -> examples/cpu_profiled/
    /work/main/.venv/bin/python examples/make_profiled_dump.py --workdir W  # W/profiled_net.py, W/cpu_profiled/

With ``--workdir`` the program is copied into W and the dump written to
``W/cpu_profiled`` with the recipe as written (tests make a profiled dump outside
the repository this way: ``tests/helpers.py``'s ``make_profiled_dump``). The
profile's timings and run name differ on every run; the HLO is deterministic.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
PROGRAM = "profiled_net.py"
OUT = "cpu_profiled"
MODULE = "jit_net"
CALLS = 5

_KEEP = re.compile(rf"^module_\d+\.{MODULE}\.cpu_after_optimizations"
                   r"(?:-buffer-assignment|-memory-usage-report)?\.txt$")
_RUN_FILES = (".xplane.pb", ".trace.json.gz")


def make(workdir: pathlib.Path, python: str = sys.executable,
         env: dict[str, str] | None = None, timeout: float = 600) -> pathlib.Path:
    """Run ``hlo-lsp dump --platform cpu --profile 5`` on ``workdir/profiled_net.py``
    (copied there when ``workdir`` is not this directory) into ``workdir/cpu_profiled``
    (emptied first), prune it, and return it. Raises CalledProcessError (with the
    command's output) when the dump fails."""
    workdir = workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    if workdir != HERE:
        shutil.copy(HERE / PROGRAM, workdir / PROGRAM)
    out = workdir / OUT
    shutil.rmtree(out, ignore_errors=True)
    run_env = dict(os.environ if env is None else env)
    run_env.pop("JAX_PLATFORMS", None)
    run_env.pop("XLA_FLAGS", None)
    run_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), run_env.get("PYTHONPATH", "")) if p)
    subprocess.run([python, "-m", "hlo_lsp", "dump", "--platform", "cpu",
                    "--profile", str(CALLS), "--out", OUT, "--", python, PROGRAM],
                   cwd=workdir, env=run_env, check=True, timeout=timeout,
                   capture_output=True, text=True)
    prune(out)
    return out


def prune(out: pathlib.Path) -> None:
    """Keep what the module docstring lists; remove everything else of ``out``."""
    for entry in out.iterdir():
        if entry.name == "profile" or entry.name == "hlo-lsp-recipe.json":
            continue
        if entry.is_dir():
            shutil.rmtree(entry)
        elif not _KEEP.match(entry.name):
            entry.unlink()
    profile = out / "profile"
    for path in sorted(profile.rglob("*"), reverse=True):
        if path.is_file() and not (path.name.endswith(_RUN_FILES)
                                   or path.name == "hlo-lsp-profile.json"):
            path.unlink()


def make_portable(out: pathlib.Path) -> None:
    """The committed recipe without this machine's paths (see the module docstring)."""
    path = out / "hlo-lsp-recipe.json"
    recipe = json.loads(path.read_text())
    recipe["cwd"] = os.path.relpath(HERE, out)
    recipe["command"] = ["python", *recipe["command"][1:]]
    recipe["python"] = None
    recipe["host"] = ""
    recipe["env"].pop("XLA_FLAGS", None)
    path.write_text(json.dumps(recipe, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=pathlib.Path, default=HERE,
                        help="where the program is copied and cpu_profiled/ written "
                             "(default: examples/)")
    args = parser.parse_args(argv)
    try:
        out = make(args.workdir)
    except subprocess.CalledProcessError as exc:
        sys.stderr.write(exc.stdout + exc.stderr)
        return exc.returncode or 1
    if args.workdir.resolve() == HERE:
        make_portable(out)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"{out}: {size} bytes")
    for p in sorted(out.rglob("*")):
        if p.is_file():
            print(f"  {p.relative_to(out)}  {p.stat().st_size}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
