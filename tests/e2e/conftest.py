"""End-to-end tests: the servers and `hlo-lsp dump` runs they start remember
confirmed recompile commands (hlo_lsp.dump.trust) in a directory of this test
session, never in the user's own state directory. A test that needs its own
sets HLO_LSP_STATE_DIR with monkeypatch before its server starts."""

from __future__ import annotations

import os

import pytest

from hlo_lsp.dump.trust import STATE_DIR_ENV


@pytest.fixture(scope="session", autouse=True)
def _session_state_dir(tmp_path_factory):
    before = os.environ.get(STATE_DIR_ENV)
    os.environ[STATE_DIR_ENV] = str(tmp_path_factory.mktemp("hlo-lsp-state"))
    yield
    if before is None:
        os.environ.pop(STATE_DIR_ENV, None)
    else:
        os.environ[STATE_DIR_ENV] = before


@pytest.fixture(scope="session")
def real_cpu(tmp_path_factory):
    """The readers' real CPU profile (:func:`tests.helpers.real_cpu_profile`: two
    compiles of the tests' JAX program, one profile each), made once per session
    for every end-to-end test that reads it. Do not modify it (copy it)."""
    pytest.importorskip("jax")
    from tests.helpers import real_cpu_profile

    return real_cpu_profile(tmp_path_factory.mktemp("profiled"))
