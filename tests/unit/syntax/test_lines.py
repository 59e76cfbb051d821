"""One definition of lines (hlo_lsp.syntax.lines.LineIndex) for positions, the
workspace index, the reports and the parser's recovery."""

from __future__ import annotations

from hlo_lsp.dump.reports import parse_buffer_assignment
from hlo_lsp.syntax.lines import LineIndex


def test_spans_bounds_and_character_columns():
    text = "ab\n\ncé\r\nd"
    idx = LineIndex(text)
    # LSP 3.17: "\r\n" ends a line and is not part of it.
    assert idx.spans() == [(0, 2), (3, 3), (4, 6), (8, 9)]
    assert [text[s:e] for s, e in idx.spans()] == ["ab", "", "cé", "d"]
    assert LineIndex("").spans() == [(0, 0)] and LineIndex("x\n").spans() == [(0, 1), (2, 2)]
    for offset in range(len(text) + 1):
        line = idx.line_of(offset)
        assert LineIndex.bounds(text, offset) == idx.spans()[line]
    assert idx.line_col(6) == (2, 2)              # characters, not UTF-16 units
    assert LineIndex(text, "utf-8").line_col(6) == (2, 2)
    assert LineIndex(text).position(6) == (2, 2)


def test_split_numbers_lines_as_the_index_does():
    # str.splitlines also breaks at \x0c, \x1c, \u2028...; positions would drift.
    text = "a\x0cb\r\nc\u2028d\n"
    assert LineIndex.split(text) == ["a\x0cb", "c\u2028d", ""]
    assert len(LineIndex.split(text)) == LineIndex(text).line_count
    assert LineIndex.split("x") == ["x"]


def test_report_lines_follow_the_index():
    # A \u2028 in a line: str.splitlines would count one line too many.
    text = ("BufferAssignment: \u2028\r\nallocation 0: size 4, parameter 0, shape |f32[]| "
            "at ShapeIndex {}:\r\n value: <1 p.1 @0> (size=4,offset=0): f32[]{}\r\n")
    ba = parse_buffer_assignment(text)
    [alloc] = ba.allocations
    assert alloc.line == 1 == LineIndex(text).line_of(text.index("allocation"))
    [value] = alloc.values
    assert (value.line, value.shape) == (2, "f32[]{}")        # no \r in the shape
    line = LineIndex.split(text)[value.line]
    assert line[value.name_start:value.name_end] == "p.1"


def test_positions_and_line_bounds_cost_a_line_at_most():
    # Dumps have lines of 40,000 characters and more (a 2.7 MB corpus file's
    # outline converted 28,000 positions; whole-document inlay hints looked up
    # 11,000 line ends): a position costs less than its line, a line's bounds
    # its line, never the text.
    import time

    line = "x" * 1_000_000
    text = "\n".join([line] * 4)
    index = LineIndex(text)
    t0 = time.thread_time()   # processor time (a busy machine does not count)
    for k in range(0, 1_000_000, 100):
        assert index.position(1_000_001 + k) == (1, k)
        assert index.offset(1, k) == 1_000_001 + k
    short = "\n".join(["y" * 80] * 50_000)   # 4 MB of short lines
    for k in range(0, len(short), 400):
        start, end = LineIndex.bounds(short, k)
        assert start == k - k % 81 and end == start + 80
    assert time.thread_time() - t0 < 0.5
