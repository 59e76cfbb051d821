"""The two tiers of the test suite (issue 42).

- The full run, ``python3 dev.py test`` (what ``.ci/run`` runs): every test under
  ``testpaths`` (pyproject.toml), the editors' and the browser's too.
- The fast tier, ``python3 dev.py test --fast``, for the edit-test loop: the
  tests under ``tests/`` that are neither ``slow`` (a JAX program, a wheel) nor
  ``full`` (:data:`FULL_ONLY`: the editors, the browser, the launchers, GPU
  compiles, the long fuzz run): the unit tests of every layer (a new
  ``tests/unit/<layer>/`` is in it without a change here), the protocol tests
  through pygls' client in ``tests/e2e/``, the fuzz harness's own tests and the
  differential test. Under 5 minutes on a 2-core machine, run by one
  pytest-xdist worker per core.

A test joins the full run only by its path here or by ``@pytest.mark.slow``;
everything else is fast, so a new test is in the loop by default."""

from __future__ import annotations

#: Node ids (or their beginnings, relative to the repository) only the full run
#: has: the editors' suites (Neovim, VS Code, code-server), the pages in
#: Chromium, SLURM and ssh launchers, deviceless GPU compiles, the wheel in a
#: fresh venv, and the fuzz run of HLO_LSP_FUZZ_SECONDS (60 s; 180 in CI).
FULL_ONLY = (
    "editors/",
    "tests/browser/",
    "tests/e2e/test_launchers.py",
    "tests/e2e/test_gpu_",
    "tests/e2e/test_wheel.py",
    "tests/fuzz/test_fuzz.py::test_the_fuzz_run_finds_nothing",
)

#: pytest's ``-m`` expression of the fast tier.
FAST = "not slow and not full"
#: The directory the fast tier collects.
FAST_PATHS = ("tests",)


def fast_workers() -> int:
    """pytest-xdist workers for the fast tier: one per core, at most 4."""
    import os

    return max(1, min(4, os.cpu_count() or 1))


def full_only(nodeid: str) -> bool:
    """Whether the test ``nodeid`` (pytest's, relative to the repository) runs in
    the full run only."""
    return nodeid.replace("\\", "/").startswith(FULL_ONLY)
