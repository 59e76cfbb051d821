"""Hostile input stays cheap: every regular expression that sees user text scans
in linear time (a long line must not freeze the server; these inputs took
seconds to minutes with backtracking patterns)."""

from __future__ import annotations

import time

from hlo_lsp.model.hlo import decode_metadata
from hlo_lsp.syntax.chunks import Skeleton
from hlo_lsp.syntax.parser import parse
from tests.helpers import TRAIN_AFTER, read


def _seconds(fn, *args) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def test_a_long_line_of_word_characters_is_scanned_once():
    text = "HloModule m\n" + "a" * 200_000 + "\n"
    assert _seconds(Skeleton, text) < 0.5          # quadratic: about 45 s
    edited = text[:100] + "b" + text[100:]
    skeleton = Skeleton(text)
    from hlo_lsp.syntax.edits import EditWindow
    assert _seconds(skeleton.edited, edited, EditWindow(100, 100, 101)) < 0.5


def test_metadata_without_keys_is_decoded_in_linear_time():
    assert _seconds(decode_metadata, "x" * 1_000_000) < 0.5    # quadratic: minutes
    assert decode_metadata('op_name="a b" source_line=3 9k=1 k_2="q\\"q"') == {
        "op_name": "a b", "source_line": 3, "k_2": 'q"q'}


def test_a_line_break_typed_into_a_megabyte_of_metadata():
    text = read(TRAIN_AFTER)
    at = text.index('op_name="') + len('op_name="')
    text = text[:at] + "x" * 500_000 + "\n" + "y" * 500_000 + text[at:]
    assert _seconds(lambda: (parse(text), Skeleton(text))) < 10


def test_stack_frame_rows_with_long_words():
    text = ("HloModule m\n\nFileLocations\n1 {" + "a" * 300_000 + "}\n\n"
            "ENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n")
    assert _seconds(parse, text) < 5


def test_hover_on_a_layout_of_the_wrong_rank_explains_it():
    from hlo_lsp.features.hover import hover

    text = "HloModule m\n\nENTRY e {\n  ROOT p = f32[2,3]{} parameter(0)\n}\n"
    got = hover(parse(text), text.index("f32[2,3]{}") + 2)
    assert got is not None and "lists 0 dimensions, but the array has 2" in got.markdown


def test_a_braced_value_left_open_over_commented_lines_fails_at_once():
    """Found by the fuzz harness (seed 0, document 20): a line deleted from an XLA
    test file left `frontend_attributes={a={n = 1, ...` open, followed by
    `// CHECK:` lines holding quotes and braces. A comment could end anywhere
    under backtracking, so every split of every comment was tried: exponential
    in the lines that followed (500 characters: 8 s; the whole 2 KB part never
    finished). Comments now end at their line's end, and the value fails at once."""
    head = ("HloModule m\n\nENTRY e {\n  ROOT c = f32[] constant(1), "
            "frontend_attributes={a={n = 1 : i32, t =\n")
    check = '// CHECK: %1 = mhlo.composite "foo.bar" %0 {x = {n = 1 : i32}, v = 1} : t\n'
    for lines in (4, 40):
        text = head + check * lines + "}\n"
        assert _seconds(parse, text) < 1.0, lines
    problems = parse(head + check * 40 + "}\n").problems
    assert problems and problems[0].message == "unexpected '{'; expected an attribute value"
