"""lark internals in one place (hlo_lsp.syntax.lark_compat): the speed-ups are
applied on the lark this was made for, and skipped (never a crash) otherwise."""

from __future__ import annotations

import logging

import lark
import pytest
from lark import Lark

from hlo_lsp.syntax import lark_compat
from hlo_lsp.syntax.lark_compat import build_scanners, streamline, supported
from hlo_lsp.syntax.versions import version_tuple
from hlo_lsp.syntax.parser import parse

GRAMMAR = r'''
start: pair+
pair: WORD "=" NUMBER
%import common.WORD
%import common.NUMBER
%import common.WS
%ignore WS
'''


def test_versions():
    assert version_tuple("1.3.1") == (1, 3, 1) and version_tuple("1.2.0rc1") == (1, 2, 0)
    assert version_tuple("dev") == ()
    assert supported("1.3.1") and supported("1.1.9")
    assert not supported("0.12.0") and not supported("2.0.0") and not supported("x")
    assert supported()  # the installed lark (the test environment pins a 1.x)


def test_speed_ups_apply_to_a_lalr_parser():
    parser = Lark(GRAMMAR, parser="lalr", lexer="contextual")
    assert streamline(parser) and build_scanners(parser)
    assert len(parser.parse("a = 1 b = 2").children) == 2


def test_speed_ups_are_skipped_on_another_lark(monkeypatch, caplog):
    monkeypatch.setattr(lark, "__version__", "2.1.0")
    monkeypatch.setattr(lark_compat, "_warned", set())
    parser = Lark(GRAMMAR, parser="lalr", lexer="contextual")
    with caplog.at_level(logging.WARNING, logger="hlo_lsp.syntax.lark_compat"):
        assert not streamline(parser) and not build_scanners(parser)
    assert "streamline skipped" in caplog.text and "2.1.0" in caplog.text
    assert len(parser.parse("a = 1 b = 2").children) == 2   # still parses


@pytest.mark.parametrize("broken", ["parser", "callbacks"])
def test_an_unexpected_layout_is_skipped(monkeypatch, broken):
    monkeypatch.setattr(lark_compat, "_warned", set())
    parser = Lark(GRAMMAR, parser="lalr", lexer="contextual")
    if broken == "parser":
        parser = type("NotLark", (), {"parser": object()})()
    else:
        parser.parser.parser.parser_conf.callbacks = {"not a rule": None}
    assert not streamline(parser)
    assert parse("HloModule m\n\nENTRY e {\n  ROOT c = f32[] constant(1)\n}\n").problems == []
