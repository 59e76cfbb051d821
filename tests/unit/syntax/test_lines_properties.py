"""Property tests: LineIndex and apply_changes against a reference written
straight from the LSP 3.17 specification ("Text Documents": lines end at
``\\n``, ``\\r\\n`` or ``\\r``; a character past the end of a line means the end
of the line, before its terminator; positions count code units of the
negotiated encoding)."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from hlo_lsp.syntax.edits import EditWindow, apply_changes
from hlo_lsp.syntax.lines import LineIndex

ENCODINGS = ("utf-16", "utf-8", "utf-32")
texts = st.text(alphabet=st.sampled_from(["a", "b", " ", "\n", "\r", "é", "😀", "%", "="]),
                max_size=60)


def reference_lines(text: str) -> list[tuple[int, int]]:
    """(start, end before the terminator) of every line, by the specification."""
    out, start, i = [], 0, 0
    while i < len(text):
        if text[i] == "\r" and text[i + 1:i + 2] == "\n":
            out.append((start, i))
            i += 2
            start = i
        elif text[i] in "\r\n":
            out.append((start, i))
            i += 1
            start = i
        else:
            i += 1
    out.append((start, len(text)))
    return out


def units(s: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(s.encode("utf-8"))
    if encoding == "utf-32":
        return len(s)
    return len(s.encode("utf-16-le")) // 2


def reference_offset(text: str, line: int, character: int, encoding: str) -> int:
    lines = reference_lines(text)
    if line < 0:
        return 0
    if line >= len(lines):
        return len(text)
    start, end = lines[line]
    for i in range(start, end):
        if units(text[start:i], encoding) >= character:
            return i
    return end


@given(texts)
def test_lines_end_where_the_specification_says(text):
    index = LineIndex(text)
    assert index.spans() == reference_lines(text)
    assert LineIndex.split(text) == [text[s:e] for s, e in reference_lines(text)]
    for offset in range(len(text) + 1):
        line = index.line_of(offset)
        assert LineIndex.bounds(text, offset) == reference_lines(text)[line]


@given(texts, st.sampled_from(ENCODINGS), st.data())
def test_positions_round_trip(text, encoding, data):
    index = LineIndex(text, encoding)
    for line, (start, end) in enumerate(reference_lines(text)):
        for offset in range(start, end + 1):
            pos = index.position(offset)
            assert pos == (line, units(text[start:offset], encoding))
            assert index.offset(*pos) == offset
    line = data.draw(st.integers(-2, len(reference_lines(text)) + 2))
    character = data.draw(st.integers(0, 80))
    assert index.offset(line, character) == reference_offset(text, line, character, encoding)


@settings(max_examples=300)
@given(texts, st.data())
def test_an_edited_index_equals_a_fresh_one(text, data):
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    new = data.draw(texts)
    edited = text[:start] + new + text[end:]
    window = EditWindow(start, end, start + len(new))
    assert LineIndex(text).edited(edited, window).starts == LineIndex(edited).starts


@settings(max_examples=300)
@given(texts, st.sampled_from(ENCODINGS), st.data())
def test_apply_changes_follows_the_specification(text, encoding, data):
    changes, expected = [], text
    for _ in range(data.draw(st.integers(1, 3))):
        nlines = len(reference_lines(expected))
        sl = data.draw(st.integers(0, nlines))
        el = data.draw(st.integers(sl, nlines + 1))
        sc, ec = data.draw(st.integers(0, 30)), data.draw(st.integers(0, 30))
        new = data.draw(texts)
        s = reference_offset(expected, sl, sc, encoding)
        e = max(s, reference_offset(expected, el, ec, encoding))
        expected = expected[:s] + new + expected[e:]
        changes.append(((sl, sc, el, ec), new))
    got, lines, window = apply_changes(text, LineIndex(text, encoding), changes)
    assert got == expected
    assert lines.starts == LineIndex(expected).starts
    assert window is not None and got[:window.start] == text[:window.start]
    assert got[window.new_end:] == text[window.old_end:]
