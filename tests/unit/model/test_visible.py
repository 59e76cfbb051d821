"""hlo_lsp.model.visible: dump text shown as text (issue 41, item 3)."""

from __future__ import annotations

from hlo_lsp.model.visible import visible


def test_printable_text_is_returned_as_it_is():
    text = "jit(train_step)/dot_general · é 中 \\n"
    assert visible(text) is text


def test_control_bidi_and_line_characters_are_escaped_as_repr_does():
    assert visible("a\x1b[2Jb\x07\x9b") == "a\\x1b[2Jb\\x07\\x9b"
    assert visible("x\ny\r\tz") == "x\\ny\\r\\tz"
    assert visible("evil\u202eyp.txt\u2066\u200f\u2028") == "evil\\u202eyp.txt\\u2066\\u200f\\u2028"
    assert visible("\U000e0001") == "\\U000e0001"
    for ch in ("\x1b", "\n", "\u202e", "\x00", "\x7f"):
        assert visible(ch) == repr(ch)[1:-1]


def test_kept_characters_and_idempotence():
    assert visible("a\nb\x1b\tc", keep="\n\t") == "a\nb\\x1b\tc"
    once = visible("a\x1b\u202eb")
    assert visible(once) == once
