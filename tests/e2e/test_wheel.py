"""hlo-lsp as a user gets it: the wheel, installed into a clean venv, run outside
the checkout.

Builds the wheel (``pip wheel --no-deps``; hatchling comes from the index in
pip's build isolation), creates a fresh venv in a temporary directory (no
``--system-site-packages``, so a dependency missing from the wheel's metadata
shows) and installs the wheel there with pip; lark, pygls and lsprotocol come
from the configured index or pip's cache. Then ``hlo-lsp --version``,
``hlo-lsp check`` on the bundled dumps and ``hlo-lsp demo`` run from that venv
with the temporary directory as working directory and no PYTHONPATH, so only
what the wheel installed can be found (the grammar and the demo's dump among them).

Measured: about 10 s in all (build 2 s, venv 3.5 s, install 1.5 s, the commands
3 s), well under a CI budget, so neither ``--system-site-packages`` nor a local
wheelhouse is needed; without access to an index (or a pip cache holding the
dependencies and hatchling) the fixture fails with pip's message.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import zipfile

import pytest

from hlo_lsp import __version__

ROOT = pathlib.Path(__file__).resolve().parents[2]
GPU_DUMPS = sorted(p.name for p in (ROOT / "examples" / "gpu").glob("*.txt"))
DEMO_DUMP = "jit_matmul_fn.fp8_cublaslt.sm90_gpu_after_optimizations.txt"


def _env() -> dict[str, str]:
    """The environment without anything that would reach the checkout."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def _run(args: list, cwd: pathlib.Path, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], cwd=cwd, env=_env(), capture_output=True,
                          text=True, timeout=timeout)


def _ok(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, f"{proc.args}: exit {proc.returncode}\n" \
                                 f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


class Installed:
    """The wheel and the clean venv it is installed in."""

    def __init__(self, wheel: pathlib.Path, venv: pathlib.Path, work: pathlib.Path):
        self.wheel, self.venv, self.work = wheel, venv, work
        bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
        self.python = bin_dir / ("python.exe" if os.name == "nt" else "python")
        self.hlo_lsp = bin_dir / ("hlo-lsp.exe" if os.name == "nt" else "hlo-lsp")

    def run(self, *args) -> subprocess.CompletedProcess:
        return _run([self.hlo_lsp, *args], cwd=self.work)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    base = tmp_path_factory.mktemp("wheel")
    dist, venv, work = base / "dist", base / "venv", base / "work"
    work.mkdir()
    _ok(_run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", dist, ROOT],
             cwd=base))
    (wheel,) = dist.glob("hlo_lsp-*.whl")
    _ok(_run([sys.executable, "-m", "venv", venv], cwd=base))
    it = Installed(wheel, venv, work)
    _ok(_run([it.python, "-m", "pip", "install", "--quiet", wheel], cwd=base))
    return it


def test_no_source_directory_where_the_wheel_puts_data():
    """The wheel force-includes grammar/ and examples/ under hlo_lsp/: nothing in
    the source package may already have those names."""
    for name in ("grammar", "examples"):
        assert not (ROOT / "hlo_lsp" / name).exists(), f"hlo_lsp/{name} collides"
        assert not (ROOT / "hlo_lsp" / f"{name}.py").exists(), f"hlo_lsp/{name}.py collides"


@pytest.mark.slow
def test_wheel_contents(installed):
    names = zipfile.ZipFile(installed.wheel).namelist()
    assert len(names) == len(set(names))
    assert "hlo_lsp/grammar/hlo.lark" in names
    assert {f"hlo_lsp/examples/gpu/{n}" for n in GPU_DUMPS} <= set(names)
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert all(n.startswith(("hlo_lsp/", "hlo_lsp-")) for n in names), \
        [n for n in names if not n.startswith(("hlo_lsp/", "hlo_lsp-"))]
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


@pytest.mark.slow
def test_installed_package_is_the_wheel(installed):
    out = _ok(_run([installed.python, "-c",
                    "import hlo_lsp, sys; print(hlo_lsp.__file__);"
                    "from hlo_lsp.syntax.parser import grammar_text; print(len(grammar_text()))"],
                   cwd=installed.work))
    where, size = out.split()
    assert pathlib.Path(where).is_relative_to(installed.venv)
    assert int(size) == len((ROOT / "grammar" / "hlo.lark").read_text(encoding="utf-8"))


@pytest.mark.slow
def test_version(installed):
    assert _ok(installed.run("--version")).strip() == f"hlo-lsp {__version__}"


@pytest.mark.slow
def test_check_on_the_bundled_dumps(installed):
    site = _ok(_run([installed.python, "-c",
                     "import hlo_lsp, pathlib; print(pathlib.Path(hlo_lsp.__file__).parent)"],
                    cwd=installed.work)).strip()
    files = [pathlib.Path(site, "examples", "gpu", n) for n in GPU_DUMPS]
    out = _ok(installed.run("check", *files))
    for f in files:
        assert f"{f}: ok (" in out, out
    broken = installed.work / "broken.txt"
    broken.write_text("HloModule m\n\nENTRY e {\n  ROOT x = f32[] add(\n}\n", encoding="utf-8")
    proc = installed.run("check", broken.name)
    # `add(` goes on to the next line, where the `}` is the mistake (XLA: line 5 too).
    assert proc.returncode == 1 and proc.stdout.startswith("broken.txt:5:"), proc.stdout


@pytest.mark.slow
def test_demo_outside_the_checkout(installed):
    """``hlo-lsp demo`` with no FILE: the real server over stdio on the dump the
    wheel ships, found without the checkout."""
    proc = installed.run("demo")
    out = _ok(proc)
    lines = out.splitlines()
    assert lines[0].startswith(f"$ {installed.python} -m hlo_lsp   # hlo-lsp {__version__}")
    opened = lines[1]
    assert opened.startswith(f"opened {installed.venv}") and DEMO_DUMP in opened, opened
    # the hover of the cuBLASLt FP8 custom-call, with its explanation
    assert "── hover on the cuBLASLt custom-call" in out
    assert "**custom_call_target** `__cublas$lt$matmul$f8`: cuBLASLt FP8" in out
    # go-to-definition of the fusion's calls= and of a fused parameter found targets
    definition = out.index("── definition of %wrapped_transpose_computation")
    assert f"  → {DEMO_DUMP}:3:1  %wrapped_transpose_computation (" in out[definition:]
    assert "── definition of a called computation's parameter: %param_0" in out
    references = out.index("── references of %constant_1")
    assert f"  • {DEMO_DUMP}:" in out[references:]
    outline = out.index("── outline (document symbols)")
    assert "  module jit_matmul_fn  2 computations" in out[outline:]
    assert "      variable cublas-gemm.1.0  (f8e5m2[128,128]{1,0}, s8[33554432]{0}) custom-call" \
        in out[outline:]
    assert "none: the file parses (install hlo-lsp[jax] for XLA's verdict)" in out
    assert "Traceback" not in proc.stderr, proc.stderr
