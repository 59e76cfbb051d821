"""Hostile input stays cheap: every regular expression that sees user text scans
in linear time (a long line must not freeze the server; these inputs took
seconds to minutes with backtracking patterns)."""

from __future__ import annotations


from hlo_lsp.model.hlo import decode_metadata
from hlo_lsp.syntax.chunks import Skeleton
from hlo_lsp.syntax.parser import parse
from tests.helpers import TRAIN_AFTER, cpu_seconds, read


def _seconds(fn, *args) -> float:
    """The processor time ``fn(*args)`` took in this thread (a busy machine
    does not count: tests.helpers.cpu_seconds)."""
    return cpu_seconds(fn, *args)[1]


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


def _many_computations(n: int) -> str:
    """A module of ``n`` small computations (a fusion each) and an ENTRY calling them."""
    out = ["HloModule many", ""]
    for k in range(n):
        out += [f"%fc{k} (x: f32[8]) -> f32[8] {{", "  %x = f32[8]{0} parameter(0)",
                *[f"  %n{i} = f32[8]{{0}} negate(f32[8]{{0}} %{'x' if i == 0 else f'n{i - 1}'})"
                  for i in range(40)],
                "  ROOT %r = f32[8]{0} negate(f32[8]{0} %n39)", "}", ""]
    out += ["ENTRY %main (p: f32[8]) -> f32[8] {", "  %p = f32[8]{0} parameter(0)"]
    prev = "p"
    for k in range(n):
        out.append(f"  %f{k} = f32[8]{{0}} fusion(f32[8]{{0}} %{prev}), kind=kLoop, calls=%fc{k}")
        prev = f"f{k}"
    out += [f"  ROOT %out = f32[8]{{0}} negate(f32[8]{{0}} %{prev})", "}", ""]
    return "\n".join(out)


def test_a_mistake_costs_its_computation_not_the_document(monkeypatch):
    """A dump truncated by an editor or a mutated one (the fuzz run's 1.9 MB
    truncated dump took 2.8 s to analyse, 4.4 s for its first requests): the text
    given to the parser adds up to less than 1.3 times the document (a failed
    group's computations read whole before its mistake are kept; the grammar
    reads a broken computation from the line the scanner declined), and pure
    lark (twice as slow) sees only the pieces whose error is reported, never the
    document again. The model and the problems are those of a parse
    computation by computation."""
    from hlo_lsp.syntax import chunks, driver as P
    from hlo_lsp.syntax.chunks import parse_chunked
    from tests.helpers import model_key

    fed = {"fast": 0, "pure": 0}
    run_fast, run = P._run_fast, P._run

    def counted_fast(text, start="start", base=0, read=None, unfinished=None, confirm=True):
        fed["fast"] += len(text)
        return run_fast(text, start, base, read, unfinished, confirm)

    def counted(text, start, base=0):
        fed["pure"] += len(text)
        return run(text, start, base)

    monkeypatch.setattr(P, "_run_fast", counted_fast)
    monkeypatch.setattr(P, "_run", counted)
    text = _many_computations(400)
    assert len(text) > 700_000
    cut = text[:text.rindex("ROOT %out")]             # truncated in the ENTRY
    middle = text.index("%n20", len(text) // 2)       # a token deleted mid-document
    mutated = text[:middle] + text[middle + 4:]
    for bad in (cut, mutated):
        fed.update(fast=0, pure=0)
        module = parse_chunked(bad)
        assert module is not None and module.problems
        assert len(module.computations) == 401
        assert fed["fast"] < 1.3 * len(bad), fed
        assert fed["pure"] < 0.1 * len(bad), fed
        grouped, chunks.GROUP_CHARS = chunks.GROUP_CHARS, 0  # each computation alone
        try:
            alone = parse_chunked(bad)
        finally:
            chunks.GROUP_CHARS = grouped
        assert module.problems == alone.problems
        assert model_key(module.computations) == model_key(alone.computations)


def test_error_recovery_leaves_no_cycles_behind():
    """A parse that recovers from syntax errors keeps no lark exception whose
    traceback holds the parse's frames (and through them the partial model):
    the server freezes live objects out of the collector's scans, so such
    cycles would be kept until a full collection. Checked by collecting with
    ``DEBUG_SAVEALL`` after parsing broken texts whole and chunk by chunk."""
    import gc

    from hlo_lsp.model.hlo import Instruction
    from hlo_lsp.syntax.chunks import Skeleton, parse_chunked
    from hlo_lsp.syntax.parser import parse
    from tests.helpers import TRAIN_AFTER, read

    text = read(TRAIN_AFTER)
    cut = text.index("ROOT", len(text) // 2)
    broken = [text[:cut] + "oops = ( \n" + text[cut:],            # a broken instruction
              text.replace(" parameter(0)", " parameter(", 3),    # an incomplete line
              text.replace("\n}\n", "\n", 1)]                     # a missing brace
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for t in broken:
            module = parse(t)
            assert module.problems
            chunked = parse_chunked(t, Skeleton(t))
            assert chunked is None or chunked.problems
            del module, chunked
        gc.collect()
        kept = [type(o).__name__ for o in gc.garbage
                if isinstance(o, (Instruction, BaseException))]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert kept == []


def test_a_deep_tuple_costs_its_depth_not_its_square():
    """Each level of a tuple shape renders its elements' texts: a tuple nested
    10,000 levels deep held 100 MB of texts (1 s per parse, read again at each
    step of error recovery). Past the depth the model describes, the text is
    a fixed one; up to it, the tuple is rendered."""
    from hlo_lsp.model.shapes import MAX_TUPLE_DEPTH
    from hlo_lsp.syntax.parser import DEEP_TUPLE_TEXT

    def entry_shape(depth):
        shape = "(" * depth + "f32[]" + ")" * depth
        module = parse(f"HloModule m\n\nENTRY e (p: {shape}) -> f32[] {{\n"
                       f"  p = {shape} parameter(0)\n  ROOT c = f32[] constant(0)\n}}\n")
        return module.computations[0].instructions[0].shape

    shallow = entry_shape(MAX_TUPLE_DEPTH)
    assert shallow.text == "(" * MAX_TUPLE_DEPTH + "f32[]" + ")" * MAX_TUPLE_DEPTH
    deep, cpu_s = cpu_seconds(entry_shape, 10_000)
    assert cpu_s < 1.0, cpu_s   # processor time
    assert deep.text == DEEP_TUPLE_TEXT
    held, level = 0, deep
    while level.elements:
        held += len(level.text)
        level = level.elements[0]
    assert held < MAX_TUPLE_DEPTH ** 2 + 10_000 * len(DEEP_TUPLE_TEXT)
    assert level.text == "f32[]"
