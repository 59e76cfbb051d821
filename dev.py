#!/usr/bin/env python3
"""The two commands of README.md, each doing its own set-up on a fresh machine
with nothing but Python 3.11+:

    python3 dev.py demo [FILE]      # the real server driven over stdio on a bundled dump
    python3 dev.py test [PYTEST_ARGS...]   # the test suite (what CI runs)
    python3 dev.py test --fast [PYTEST_ARGS...]   # the fast tier, for the edit-test loop

The fast tier (tests/tiers.py) is tests/ without the slow tests (JAX programs,
the wheel) and without the editors, the browser, the launchers, GPU compiles
and the long fuzz run: the unit tests of every layer and the protocol tests
through pygls' client, in under 5 minutes on two cores.

Both create ./.venv on first use and install hlo-lsp into it (the demo needs only
the server's own dependencies; the tests add jax/jaxlib, pytest, pytest-lsp).
Re-running reinstalls only when pyproject.toml changed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import venv

ROOT = pathlib.Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")

#: Free disk an install of the `cuda` extra needs (bytes): jax[cuda12]'s wheels are
#: about 3.5 GB downloaded and unpacked by pip in the temporary directory, 5.5 GB
#: installed in .venv (measured with jax 0.10.2 on this project's CI machine).
CUDA_INSTALL_BYTES = 10 * 2**30


def fast_tier_args(args: list[str]) -> list[str]:
    """pytest's arguments for ``test --fast ARGS``: the fast tier's ``-m``
    expression and, unless ARGS name a test path, its directories (both from
    tests/tiers.py, which says which tests only the full run has)."""
    spec = importlib.util.spec_from_file_location("hlo_lsp_tiers", ROOT / "tests" / "tiers.py")
    tiers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tiers)
    named = any((ROOT / a.split("::")[0]).exists() for a in args if not a.startswith("-"))
    # one pytest-xdist worker per core (the tier is CPU-bound: 250 s of one core
    # on 2 cores), unless the arguments choose (-n 0: none)
    workers = [] if any(a == "-n" or a.startswith(("-n", "--numprocesses")) for a in args) \
        else ["-n", str(tiers.fast_workers())]
    return ["-m", tiers.FAST, *workers, *args, *([] if named else tiers.FAST_PATHS)]


def check_free_disk(needed: int, what: str) -> None:
    """Exit with one message when the file systems of .venv and of the temporary
    directory (pip unpacks there) have less than ``needed`` bytes free between
    them, rather than let pip fail half-way with ``[Errno 28] No space left on
    device``."""
    places = {}
    for place in (VENV if VENV.exists() else ROOT, pathlib.Path(tempfile.gettempdir())):
        places.setdefault(place.stat().st_dev, place)
    free = sum(shutil.disk_usage(p).free for p in places.values())
    if free < needed:
        where = " and ".join(str(p) for p in places.values())
        sys.exit(f"installing {what} needs about {needed / 2**30:.0f} GiB free on {where}; "
                 f"{free / 2**30:.1f} GiB is free")


def ensure_env(extra: str) -> None:
    """Create .venv and install ``.[extra]`` into it unless already current."""
    if sys.version_info < (3, 11):
        sys.exit(f"hlo-lsp needs Python 3.11 or newer (this is {sys.version.split()[0]})")
    if not PYTHON.exists():
        print(f"creating {VENV.relative_to(ROOT)} ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    spec = f".[{extra}]" if extra else "."
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + spec.encode()).hexdigest()
    stamp = VENV / f".installed-{(extra or 'base').replace(',', '-')}"
    if stamp.exists() and stamp.read_text() == digest:
        return
    if "cuda" in extra.split(","):
        check_free_disk(CUDA_INSTALL_BYTES, "the cuda extra (jax[cuda12])")
    print(f"installing hlo-lsp{spec[1:]} into {VENV.relative_to(ROOT)} ...", flush=True)
    subprocess.run([str(PYTHON), "-m", "pip", "install", "--quiet", "--upgrade", "pip"],
                   check=True)
    subprocess.run([str(PYTHON), "-m", "pip", "install", "--quiet", "-e", spec],
                   check=True, cwd=ROOT)
    stamp.write_text(digest)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("demo", "test"):
        print(__doc__)
        return 2
    command, rest = argv[0], argv[1:]
    if command == "demo":
        try:
            ensure_env("fast")
        except subprocess.CalledProcessError:  # no lark-cython wheel here: pure Python
            ensure_env("")
        return subprocess.call([str(BIN / "hlo-lsp"), "demo", *rest], cwd=ROOT)
    # HLO_LSP_REQUIRE_GPU_COMPILE (.ci/run): also the `cuda` extra (jax[cuda12], ~5.5 GB),
    # so that the deviceless GPU tests run instead of skipping.
    ensure_env("test,cuda" if os.environ.get("HLO_LSP_REQUIRE_GPU_COMPILE") else "test")
    if "--fast" in rest:
        rest = fast_tier_args([a for a in rest if a != "--fast"])
    return subprocess.call([str(PYTHON), "-m", "pytest", *rest], cwd=ROOT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
