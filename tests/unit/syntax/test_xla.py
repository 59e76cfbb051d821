"""jax._src only in hlo_lsp.syntax.xla, behind a version check: another jaxlib
makes the XLA oracle unavailable (logged), never a crash or a false error."""

from __future__ import annotations

import logging

from hlo_lsp.syntax import xla
from hlo_lsp.syntax.versions import in_range, version_tuple


def test_version_ranges():
    assert version_tuple("0.10.2") == (0, 10, 2)
    assert in_range("0.10.2", xla.JAXLIB_VERSIONS)
    assert not in_range("0.3.25", xla.JAXLIB_VERSIONS)
    assert not in_range("1.0.0", xla.JAXLIB_VERSIONS)
    assert not in_range("", xla.JAXLIB_VERSIONS)


def test_an_untested_jaxlib_leaves_the_oracle_off(monkeypatch, caplog):
    monkeypatch.setattr(xla, "jaxlib_version", lambda: "99.0.0")
    monkeypatch.setattr(xla, "_said", set())
    with caplog.at_level(logging.INFO, logger="hlo_lsp.xla"):
        assert not xla.available()
    assert "jaxlib 99.0.0 is not one of the versions" in caplog.text
    parse, why = xla.load_parser()
    assert parse is None and "99.0.0" in why


def test_without_jaxlib(monkeypatch):
    monkeypatch.setattr(xla, "jaxlib_version", lambda: None)
    assert not xla.available()
    assert xla.load_parser() == (None, "jaxlib is not installed")


def test_the_servers_worker_yields_the_processors_to_the_server():
    """``XlaOracle(nice=N)`` starts its worker N steps nicer than the process
    that starts it (``/proc/<pid>/stat``, field 19), before it reads a request:
    the language server's worker runs at SERVER_WORKER_NICE."""
    import os

    def niceness(pid: int) -> int:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[16])

    assert xla.SERVER_WORKER_NICE > 0
    for nice in (0, 7):
        oracle = xla.XlaOracle(nice=nice)
        try:
            oracle.check("HloModule m\n\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n")
            assert niceness(oracle._proc.pid) == os.nice(0) + nice
        finally:
            oracle.close()
