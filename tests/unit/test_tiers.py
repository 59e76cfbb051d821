"""The fast tier (python3 dev.py test --fast) is defined by paths and markers
(tests/tiers.py): a new layer's tests are in it without a change."""

from __future__ import annotations

import importlib.util
import shutil

import pytest

from tests.helpers import ROOT
from tests.tiers import FAST, FAST_PATHS, FULL_ONLY, fast_workers, full_only


def test_the_fast_tier_has_every_unit_and_protocol_test_and_none_of_the_full_runs():
    for nodeid in ("tests/unit/analysis/test_hover.py::test_hover_on_a_fusion",  # a new layer
                   "tests/unit/lsp/test_index_start.py::test_x",
                   "tests/e2e/test_server.py::test_hover",
                   "tests/fuzz/test_fuzz.py::test_the_relay_dies_of_the_signal_that_killed_the_server",
                   "tests/differential/test_differential.py::test_x"):
        assert not full_only(nodeid), nodeid
    for nodeid in ("editors/nvim/tests/test_nvim.py::test_x",
                   "editors/vscode/test/test_code_server.py::test_x",
                   "tests/browser/test_pages.py::test_x",
                   "tests/e2e/test_launchers.py::test_x",
                   "tests/e2e/test_gpu_deviceless.py::test_x",
                   "tests/e2e/test_wheel.py::test_x",
                   "tests/fuzz/test_fuzz.py::test_the_fuzz_run_finds_nothing"):
        assert full_only(nodeid), nodeid


def test_each_full_only_path_names_what_is_there():
    """A renamed file would otherwise move its tests into the fast tier unseen."""
    for prefix in FULL_ONLY:
        path, _, test = prefix.partition("::")
        if path.endswith("/"):
            assert (ROOT / path).is_dir(), prefix
        elif path.endswith(".py"):
            assert (ROOT / path).is_file(), prefix
            assert not test or f"def {test}(" in (ROOT / path).read_text(), prefix
        else:  # a file name's beginning
            assert list((ROOT / path).parent.glob((ROOT / path).name + "*.py")), prefix


def _dev():
    spec = importlib.util.spec_from_file_location("dev", ROOT / "dev.py")
    dev = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dev)
    return dev


def test_dev_py_test_fast_runs_the_tier():
    dev = _dev()
    n = ["-n", str(fast_workers())]
    assert dev.fast_tier_args([]) == ["-m", FAST, *n, *FAST_PATHS]
    assert dev.fast_tier_args(["-k", "hover"]) == ["-m", FAST, *n, "-k", "hover", *FAST_PATHS]
    assert dev.fast_tier_args(["tests/unit/lsp", "-x"]) == ["-m", FAST, *n, "tests/unit/lsp", "-x"]
    assert dev.fast_tier_args(["-n", "0"]) == ["-m", FAST, "-n", "0", *FAST_PATHS]


def test_dev_py_stops_with_one_message_when_the_disk_cannot_hold_the_cuda_extra(capsys):
    """A full disk once failed CI half-way through pip's install of jax[cuda12]
    ("[Errno 28] No space left on device"): dev.py says so before it starts."""
    dev = _dev()
    dev.check_free_disk(1, "the cuda extra")  # room enough: nothing happens
    free = shutil.disk_usage(ROOT).free
    with pytest.raises(SystemExit) as stop:
        dev.check_free_disk(free * 4 + 2**40, "the cuda extra (jax[cuda12])")
    message = str(stop.value)
    assert message.startswith("installing the cuda extra (jax[cuda12]) needs about ")
    assert "GiB is free" in message
