"""The committed CPU dump in examples/cpu_dump/ can be regenerated.

Re-runs examples/make_dump.py into a temporary directory (about 5 s on the
CPU) and checks that the fresh dump has the same kinds of files and that its
after-optimizations HLO still has the constructs the example exists to show,
and that XLA's own parser accepts every HLO text file, fresh and committed.
"""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

jax = pytest.importorskip("jax")
pytestmark = pytest.mark.slow  # runs JAX programs

ROOT = pathlib.Path(__file__).resolve().parents[2]
MAKE_DUMP = ROOT / "examples" / "make_dump.py"
COMMITTED = ROOT / "examples" / "cpu_dump"
MAIN_MODULE = "jit_train_step"

REQUIRED_IN_AFTER_OPT = [
    "fusion(",
    "kind=kLoop",
    "while(",
    "conditional(",
    "branch_computations=",
    "to_apply=",
    "dot(",
    "stack_frame_id=",
]
METADATA_TABLES = ["FileNames", "FunctionNames", "FileLocations", "StackFrames"]


def _parse_hlo(path: pathlib.Path):
    from jax._src.lib import xla_client as xc

    return xc.hlo.hlo_module_from_text(path.read_text())


def _kinds(directory: pathlib.Path) -> set[str]:
    """File names of the main module with the module number stripped."""
    return {re.sub(r"^module_\d+\.", "", p.name)
            for p in directory.iterdir() if f".{MAIN_MODULE}." in p.name}


@pytest.fixture(scope="module")
def fresh_dump(tmp_path_factory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("cpu_dump")
    subprocess.run([sys.executable, str(MAKE_DUMP), "--out", str(out)],
                   check=True, timeout=120, capture_output=True, text=True)
    return out


def _after_opt(directory: pathlib.Path) -> pathlib.Path:
    files = list(directory.glob(f"module_*.{MAIN_MODULE}.cpu_after_optimizations.txt"))
    assert len(files) == 1, sorted(p.name for p in directory.iterdir())
    return files[0]


def test_fresh_dump_has_same_kinds_of_files(fresh_dump):
    expected = {
        f"{MAIN_MODULE}.before_optimizations.txt",
        f"{MAIN_MODULE}.cpu_after_optimizations.txt",
        f"{MAIN_MODULE}.cpu_after_optimizations-buffer-assignment.txt",
        f"{MAIN_MODULE}.cpu_after_optimizations-memory-usage-report.txt",
    }
    assert _kinds(fresh_dump) == expected
    assert _kinds(COMMITTED) == expected
    # Nothing but pruned text files, no per-module subfolders.
    for p in fresh_dump.iterdir():
        assert p.is_file() and p.name.endswith(".txt"), p.name


@pytest.mark.parametrize("which", ["fresh", "committed"])
def test_after_optimizations_has_constructs(which, fresh_dump):
    text = _after_opt(fresh_dump if which == "fresh" else COMMITTED).read_text()
    missing = [s for s in REQUIRED_IN_AFTER_OPT if s not in text]
    assert not missing, f"{which} dump lacks {missing}"
    lines = set(text.splitlines())
    assert all(t in lines for t in METADATA_TABLES), "stack-frame tables missing"
    assert "make_dump.py" in text  # FileNames points back at the program
    # A reduction fusion: a fused computation whose root is a reduce.
    assert re.search(r"ROOT %\S+ = \S+ reduce\(", text)


@pytest.mark.parametrize("which", ["fresh", "committed"])
def test_xla_parses_every_hlo_file(which, fresh_dump):
    directory = fresh_dump if which == "fresh" else COMMITTED
    hlo_files = sorted(p for p in directory.iterdir()
                       if p.name.endswith("optimizations.txt"))
    assert len(hlo_files) >= 2
    for p in hlo_files:
        module = _parse_hlo(p)
        assert module.name in p.name
