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
