"""pytest set-up shared by every test: the corpus fixture, and the client side of
requests that pytest-lsp's test client does not implement. Helpers and paths are
in :mod:`tests.helpers`."""

from __future__ import annotations

import pathlib

import pytest

from tests.helpers import CORPUS, CORPUS_ABSENT
from tests.tiers import full_only


def pytest_report_header(config) -> str:
    """Whether the corpus tests run: the first lines of every run say."""
    if CORPUS.is_dir():
        return f"corpus: {CORPUS} ({sum(1 for _ in CORPUS.iterdir())} entries)"
    return (f"corpus: ABSENT ({CORPUS}): the tests on it skip, saying so; the scanner, "
            "fuzz and cost tests use the bundled examples only")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "full: only in the full run (python3 dev.py test), not in the fast tier "
        "(python3 dev.py test --fast): the editors, the browser, the launchers, GPU "
        "compiles, the wheel, the long fuzz run; set by path (tests/tiers.py)")


def pytest_collection_modifyitems(config, items):
    """The tests only the full run has (tests/tiers.py) are marked ``full``;
    ``python3 dev.py test --fast`` deselects them with ``-m "not slow and not full"``."""
    for item in items:
        if full_only(item.nodeid):
            item.add_marker(pytest.mark.full)
        if "profiled_dump" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)  # it runs a JAX program


@pytest.fixture(scope="session")
def corpus_dir() -> pathlib.Path:
    if not CORPUS.is_dir():
        pytest.skip(CORPUS_ABSENT)
    return CORPUS


# The server registers its file watchers with client/registerCapability when the
# client claims dynamic registration (VS Code does); pytest-lsp's test client does
# not implement that request, so answer it the way an editor does.
from lsprotocol import types as _types  # noqa: E402
from pytest_lsp.client import LanguageClient as _Client  # noqa: E402
from pytest_lsp.client import default_feature as _default_feature  # noqa: E402


@_default_feature(_types.CLIENT_REGISTER_CAPABILITY)
def _register_capability(client: _Client, params: _types.RegistrationParams):
    client.registrations = getattr(client, "registrations", []) + list(params.registrations)


@_default_feature(_types.CLIENT_UNREGISTER_CAPABILITY)
def _unregister_capability(client: _Client, params: _types.UnregistrationParams):
    return None


@pytest.fixture(scope="session", autouse=True)
def _parsers_built_first():
    """The grammar's parsers, built in the main thread before any test starts a
    thread, as the server builds them at initialize. lark reads the grammar's
    string literals with ast.literal_eval, and CPython 3.11 keeps one AST
    recursion counter for all threads: a parser built by a stray thread of one
    test while another test calls ast.parse failed the latter with "AST
    constructor recursion depth mismatch"."""
    from hlo_lsp.syntax.parser import warm_up

    warm_up()


@pytest.fixture(scope="session")
def profiled_dump(tmp_path_factory) -> pathlib.Path:
    """A real profiled CPU dump outside the repository, made once per session by
    ``hlo-lsp dump --platform cpu --profile 5`` (:func:`tests.helpers.make_profiled_dump`;
    ``hlo-lsp dump``'s confirmation remembered in a state directory of its own): the
    dump directory, the program ``profiled_net.py`` in its parent. Tests using it are
    marked ``slow`` (:func:`pytest_collection_modifyitems`). Do not modify it (copy it)."""
    pytest.importorskip("jax")
    import os

    from tests.helpers import make_profiled_dump

    work = tmp_path_factory.mktemp("profiled")
    env = dict(os.environ, HLO_LSP_STATE_DIR=str(work / "state"))
    return make_profiled_dump(work / "project", env=env)
