"""The parser and model on real dumps: structure, positions, recovery."""

from __future__ import annotations

import re

import pytest

from tests.helpers import CPU_DUMP, FP8_DUMP, FP8_REGRESSION, TRAIN_AFTER, read
from hlo_lsp.model.check import check
from hlo_lsp.model.hlo import Severity
from hlo_lsp.syntax.parser import parse
from hlo_lsp.model.shapes import parse_array_shape


def test_fp8_dump_structure_and_positions():
    text = read(FP8_DUMP)
    m = parse(text)
    assert m.problems == [] and check(m) == []
    assert m.name.name == "jit_matmul_fn"
    assert [c.name.name for c in m.computations] == ["wrapped_transpose_computation", "main.4"]
    assert m.entry.name.name == "main.4" and m.entry.is_entry
    gemm = m.entry.by_name["cublas-gemm.1.0"]
    assert gemm.opcode == "custom-call"
    # Every range covers exactly the text it names.
    assert text[gemm.name.start:gemm.name.end] == "%cublas-gemm.1.0"
    assert [text[o.ref.start:o.ref.end] for o in gemm.operands[:2]] == [
        "%Arg_0.1.0", "%wrapped_transpose"]
    assert gemm.operands[0].shape.text == "f8e4m3fn[128,128]{1,0}"
    assert len(gemm.operands) == 6  # /*index=5*/ comment skipped
    target = gemm.attribute("custom_call_target")
    assert target.value == '"__cublas$lt$matmul$f8"'
    config = gemm.attribute("backend_config")
    assert text[config.value_start:config.value_end].startswith('{"operation_queue_id"')
    fusion = m.entry.by_name["wrapped_transpose"]
    assert [(c.attr, c.ref.name) for c in fusion.called] == [
        ("calls", "wrapped_transpose_computation")]
    assert text[fusion.called[0].ref.start:fusion.called[0].ref.end] == \
        "%wrapped_transpose_computation"


def test_cpu_dump_has_control_flow_and_stack_frames():
    text = read(TRAIN_AFTER)
    m = parse(text)
    assert m.problems == [] and check(m) == []
    opcodes = {i.opcode for c in m.computations for i in c.instructions}
    assert {"fusion", "while", "conditional", "reduce", "dot"} <= opcodes
    attrs = {cr.attr for c in m.computations for i in c.instructions for cr in i.called}
    assert {"calls", "body", "condition", "branch_computations", "to_apply"} <= attrs
    assert m.frames.file_names and m.frames.frames
    # Resolve a real stack_frame_id back to the program that wrote the dump.
    ins = next(i for c in m.computations for i in c.instructions
               if "stack_frame_id" in i.metadata)
    stack = m.frames.resolve(ins.metadata["stack_frame_id"])
    assert stack and stack[0].file.endswith("make_dump.py")
    src = (CPU_DUMP.parent / "make_dump.py").read_text().splitlines()
    assert 1 <= stack[0].line <= len(src)
    assert stack[-1].function == "<module>" or len(stack) >= 1


def test_parent_frame_id_is_printed_plus_one():
    text = """HloModule m

FileNames
1 "a.py"

FunctionNames
1 "outer"
2 "inner"

FileLocations
1 {file_name_id=1 function_name_id=1 line=10 end_line=10 column=1 end_column=5}
2 {file_name_id=1 function_name_id=2 line=20 end_line=20 column=3 end_column=9}

StackFrames
1 {file_location_id=1 parent_frame_id=1}
2 {file_location_id=2 parent_frame_id=2}

ENTRY e {
  ROOT p = f32[] parameter(0), metadata={op_name="x" stack_frame_id=2}
}
"""
    m = parse(text)
    assert m.problems == []
    stack = m.frames.resolve(2)
    # Frame 2 (inner, line 20) has parent_frame_id=2, i.e. frame 1 (outer, line 10),
    # whose parent_frame_id=1 means no parent.
    assert [(f.function, f.line) for f in stack] == [("inner", 20), ("outer", 10)]


def test_error_recovery_keeps_the_rest_navigable():
    text = read(FP8_REGRESSION)
    broken_line = "%convert.6 = bf16[] convert(f32[] %parameter_2)"
    assert broken_line in text
    bad = text.replace(broken_line, "%convert.6 = bf16[] convert(f32[] %parameter_2",
                       1)  # missing ")"
    m = parse(bad)
    errors = [p for p in m.problems]
    assert errors, "a syntax error must be reported"
    line_start = bad.index("%convert.6 =")
    line_end = bad.index("\n", line_start)
    assert any(line_start <= p.start <= line_end for p in errors)
    good = parse(text)
    assert [c.name.name for c in m.computations] == [c.name.name for c in good.computations]
    # Every other instruction is still there, with its exact positions.
    assert m.instruction_count() == good.instruction_count() - 1
    fusion = next(c for c in m.computations if c.name.name == "fused_convert")
    root = fusion.root
    assert bad[root.name.start:root.name.end] == "%" + root.name.name


def test_error_recovery_asks_the_grammar_only_for_the_lines_the_scanner_declines(monkeypatch):
    """A broken line in a computation of thousands: the grammar (lark) reads the
    text up to the error once per attempt it cannot skip, and in recovery only
    the lines the scanner declines (the broken one, the header), not each of
    the thousands (a 3 MB ENTRY took 2 s to recover, now about 1 s). The model
    equals the one lark alone recovers, instruction for instruction."""
    from hlo_lsp.syntax import driver
    from hlo_lsp.syntax.chunks import _parse_chunk
    from tests.helpers import model_key

    body = "\n".join(f"  %a.{i} = f32[8]{{0}} add(f32[8]{{0}} %p, f32[8]{{0}} %p)"
                     for i in range(2000))
    text = (f"ENTRY %main (p: f32[8]) -> f32[8] {{\n  %p = f32[8]{{0}} parameter(0)\n"
            f"{body}\n  ROOT %r = f32[8]{{0}} copy(%a.0)\n}}\n")
    bad = text.replace("%a.999 = f32[8]{0} add(f32[8]{0} %p,", "%a.999 = f32[8]{0} add(f32[8]{0} %p", 1)
    calls = []
    run_lark = driver._run_lark

    def counted(piece, start, base):
        calls.append(start)
        return run_lark(piece, start, base)
    monkeypatch.setattr(driver, "_run_lark", counted)
    chunk = _parse_chunk(bad, 0, len(bad))
    assert [p.message for p in chunk.problems] == ["unexpected 'f32[8]{0}'; expected ')', ','"]
    # the chunk whole (once: the scanner's fallback is that same text), the
    # broken line alone (and joined with the next, as recovery tries)
    assert calls.count("start") == 1 and len(calls) <= 4, calls
    names = [i.name.name for i in chunk.computations[0].instructions]
    assert len(names) == 2002 - 1 and "a.999" not in names

    monkeypatch.setattr(driver, "USE_SCANNER", False)
    by_grammar = _parse_chunk(bad, 0, len(bad))
    assert by_grammar.problems == chunk.problems
    assert model_key(by_grammar.computations) == model_key(chunk.computations)


def test_error_recovery_reads_on_from_where_the_scan_stopped(monkeypatch):
    """A computation of 2,000 instructions broken on line 1,900: the scan read
    the lines before (the group of computations, then the computation alone),
    and error recovery takes those instructions and reads the lines after, as
    the whole parse and the chunked one do. Before, each of the three read the
    lines before the broken one again. The model and the problems are those of a
    recovery that reads every line."""
    from hlo_lsp.syntax import chunks, parser, recovery, scanner
    from tests.helpers import chain_module, model_key

    text = chain_module(2000, fusion_every=500)
    broken = text.replace("%a1899 = f32[8]{0} add(", "%a1899 = f32[8]{0} add((", 1)
    assert broken != text
    lines = []
    instruction = scanner.instruction

    def counted(patterns, text, pos, base=0):
        lines.append(pos)
        return instruction(patterns, text, pos, base)
    monkeypatch.setattr(scanner, "instruction", counted)
    read_on = parser.parse(broken), chunks.parse_chunked(broken)
    lines_read_on = len(lines)
    lines.clear()
    recover_computation = recovery._recover_computation
    monkeypatch.setattr(recovery, "_recover_computation",
                        lambda text, lines, h, stop, problems, known=None:
                        recover_computation(text, lines, h, stop, problems))
    every_line = parser.parse(broken), chunks.parse_chunked(broken)
    assert len(lines) > 4000 and lines_read_on < 400, (len(lines), lines_read_on)
    for fast, slow in zip(read_on, every_line):
        assert fast.problems and [(p.start, p.end, p.message) for p in fast.problems] == \
            [(p.start, p.end, p.message) for p in slow.problems]
        assert model_key(fast.computations) == model_key(slow.computations)
        assert len(fast.computations[-1].instructions) == 2000 + 4 + 1  # a1899 is not one


def test_the_grammar_reads_a_broken_computation_once_not_its_group(monkeypatch):
    """A module of 40 computations (one group of the chunked parse), one broken
    on its 10th line, each followed by a blank line: the grammar reads the
    broken computation from the last line the scanner read, and nothing longer.
    Before, the grammar also read the whole group (to confirm that it does not
    parse; the chunked parse reads it computation by computation anyway) and
    the broken computation's chunk once more (its blank line after the ``}``
    made it longer than the piece the grammar had failed on). The model and
    problems are those of the parse of the whole text."""
    from hlo_lsp.syntax import chunks, driver
    from tests.helpers import model_key

    def computation(k: int) -> str:
        body = [f"  %x{k}_{i} = f32[8]{{0}} add(f32[8]{{0}} %x{k}_{i - 1}, f32[8]{{0}} %p{k})"
                for i in range(1, 50)]
        return "\n".join([f"%c{k} (p{k}: f32[8]) -> f32[8] {{",
                          f"  %x{k}_0 = f32[8]{{0}} parameter(0)", *body,
                          f"  ROOT %r{k} = f32[8]{{0}} negate(f32[8]{{0}} %x{k}_49)", "}", ""])
    comps = [computation(k) for k in range(40)]
    comps[20] = comps[20].replace(f"%x20_9 = f32[8]{{0}} add(", "%x20_9 = f32[8]{0} add((", 1)
    text = "HloModule m\n\n" + "\n".join(comps) + "ENTRY %e (a: f32[8]) -> f32[8] {\n" \
        "  ROOT %a = f32[8]{0} parameter(0)\n}\n"
    assert 16 * 1024 < len(text) < chunks.GROUP_CHARS  # chunked, in one group
    read: list[int] = []
    run_lark = driver._run_lark

    def counted(piece, start, base):
        read.append(len(piece))
        return run_lark(piece, start, base)
    monkeypatch.setattr(driver, "_run_lark", counted)
    chunked = chunks.parse_chunked(text)
    assert read and max(read) <= len(comps[20]), (read, len(comps[20]))
    whole = parse(text)
    assert [(p.start, p.end, p.message) for p in chunked.problems] == \
        [(p.start, p.end, p.message) for p in whole.problems] and chunked.problems
    assert model_key(chunked.computations) == model_key(whole.computations)


def test_positions_when_blanks_and_comments_split_coarse_tokens():
    """The grammar lexes `%name = f32[2]`, `parameter(0)` and `, name=value` as one
    token each, and falls back to smaller tokens around comments; every range
    still covers exactly the text it names (XLA accepts this module)."""
    text = """HloModule m

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter( /*second*/ 1 )
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

ENTRY %main ( p: f32[2] , t: ( f32[], s32[] ) ) -> f32[2] {
  %p = /*array*/ f32[2]{0} parameter(0), metadata= /*m*/ {op_name="p"}
  %t = ( f32[], s32[] ) parameter(1)
  %z = f32[] constant(0)
  %r = f32[] reduce(%p, %z),
      dimensions={0}, to_apply=%add
  ROOT %b = f32[2]{0} broadcast(%r), dimensions={}
}
"""
    m = parse(text)
    assert m.problems == [] and check(m) == []
    add, main = m.computations

    def span(x):
        return text[x.start:x.end]

    assert [(span(p.ref), span(p.shape)) for p in main.params] == [
        ("p", "f32[2]"), ("t", "( f32[], s32[] )")]
    assert text[main.body_start] == "{" and span(main.result) == "f32[2]"
    y = add.by_name["y"]
    assert y.parameter_number == 1
    assert text[y.start:y.end] == "%y = f32[] parameter( /*second*/ 1 )"
    assert [(span(o.ref), span(o.shape)) for o in add.root.operands] == [
        ("%x", "f32[]"), ("%y", "f32[]")]
    p = main.by_name["p"]
    assert (span(p.name), span(p.shape), p.parameter_number) == ("%p", "f32[2]{0}", 0)
    meta = p.attribute("metadata")
    assert text[meta.name_start:meta.value_end] == 'metadata= /*m*/ {op_name="p"}'
    assert text[meta.value_start:meta.value_end] == meta.value == '{op_name="p"}'
    t = main.by_name["t"]
    assert (span(t.shape), [span(e) for e in t.shape.elements]) == (
        "( f32[], s32[] )", ["f32[]", "s32[]"])
    z = main.by_name["z"]
    assert (z.literal, text[z.opcode_start:z.end]) == ("(0)", "constant(0)")
    r = main.by_name["r"]
    assert text[r.opcode_start:r.opcode_start + len(r.opcode)] == "reduce"
    assert [(a.name, text[a.name_start:a.value_end]) for a in r.attributes] == [
        ("dimensions", "dimensions={0}"), ("to_apply", "to_apply=%add")]
    assert [span(c.ref) for c in r.called] == ["%add"] and text[r.end - 4:r.end] == "%add"
    assert main.root.name.name == "b" and text[main.root.start:main.root.end].startswith("ROOT")


def test_truncated_dump_reports_and_keeps_prefix():
    text = read(TRAIN_AFTER)
    cut = text[: len(text) // 2]
    m = parse(cut)
    assert m.problems
    assert any("not closed" in p.message or "end of input" in p.message for p in m.problems)
    assert len(m.computations) >= 5
    assert m.instruction_count() > 100


@pytest.mark.parametrize("payload", [
    "",
    "hello world",
    "\x00\x01\x02 binary \xff garbage",
    "HloModule",
    "{{{{{{{{{{{{{{{{{{{{{{{{{{{{",
    "ENTRY e {\n  ROOT x = f32[ constant(1)\n}",
    "HloModule m\nENTRY e {\n  ROOT a = f32[] add(b, c), metadata={op_name=\"x\n}",
    "\n".join("x" * 200 for _ in range(2000)),
])
def test_garbage_never_raises(payload):
    m = parse(payload)
    check(m)
    if payload.strip():
        assert m.problems, "garbage must produce a diagnostic"


def test_binary_file_is_reported_once_not_per_byte():
    data = bytes(range(256)) * 400
    m = parse(data.decode("latin-1"))
    assert m.problems and len(m.problems) < 600
    assert "binary" in m.problems[0].message or m.problems[0].start == 0


@pytest.mark.parametrize("text,etype,dims,size,m2m", [
    ("f32[8,128]{1,0}", "f32", (8, 128), 4096, (1, 0)),
    ("f8e4m3fn[32,64]{1,0}", "f8e4m3fn", (32, 64), 2048, (1, 0)),
    ("bf16[<=16,4]{0,1}", "bf16", (16, 4), 128, (0, 1)),
    ("s4[64]{0:E(4)}", "s4", (64,), 32, (0,)),
    ("pred[]", "pred", (), 1, None),
])
def test_array_shapes(text, etype, dims, size, m2m):
    s = parse_array_shape(text)
    assert (s.element_type, s.dims, s.byte_size) == (etype, dims, size)
    assert (s.layout.minor_to_major if s.layout else None) == m2m


def test_layout_tiling_and_memory_space():
    s = parse_array_shape("f32[1,64]{1,0:T(1,128)S(1)}")
    assert s.layout.tiles == (("1", "128"),) and s.layout.memory_space == 1
    text = "\n".join(s.layout.explain(s.rank))
    assert "row-major" in text and "S(1)" in text and "(1,128)" in text


def test_semantic_errors_match_xla_rules():
    text = """HloModule m
add {
  x = f32[] parameter(0)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  a = f32[2] parameter(0)
  a = f32[2] negatex(a)
  ROOT r = f32[] reduce(a, z), dimensions={0}, to_apply=mul
}
"""
    m = parse(text)
    assert m.problems == []
    messages = sorted(p.message for p in check(m))
    assert messages == sorted([
        "instruction does not exist: y",
        "instruction already exists: a",
        "unknown opcode: negatex",
        "instruction does not exist: z",
        "computation does not exist: mul",
    ])


def test_invalid_backend_config_json_is_information():
    """XLA's parser keeps backend_config as text; a value that is not JSON is said
    as information, not a warning (issue 40)."""
    text = read(FP8_DUMP).replace('"selected_algorithm":"4"', '"selected_algorithm":4,,')
    m = parse(text)
    problems = [p for p in check(m) if "backend_config is not valid JSON" in p.message]
    assert problems and all(p.severity == Severity.INFORMATION for p in problems)


def test_a_split_file_is_blanked_once_not_once_per_part(monkeypatch):
    """Each part of a split file is parsed at its own offsets, the rest of the
    text blanked: one blank copy of the text is made for all parts (each part
    blanking the whole file anew made a 172 KB file of 135 parts take 0.4 s
    more: quadratic in the file's length). The parts' text and offsets are those
    of the old way."""
    from hlo_lsp.syntax import parser, split

    part = ("HloModule m{k}\n\nENTRY %e{k} (p: f32[8]) -> f32[8] {{\n"
            "  ROOT %p = f32[8]{{0}} parameter(0)\n}}\n")
    text = "\r\n// -----\n".join(part.format(k=k) for k in range(40))
    blanked = []
    real = split.blanked

    def counting(t: str) -> str:
        blanked.append(len(t))
        return real(t)
    monkeypatch.setattr(parser, "blanked", counting)
    module = parser.parse(text)
    assert blanked == [len(text)]
    assert len(module.computations) == 40 and not module.problems
    assert [c.name.start for c in module.computations] == \
        [m.start() + len("ENTRY ") for m in re.finditer("ENTRY", text)]
    for start, end in split.split_parts(text)[:3]:
        old_way = re.sub(r"[^\n]+", lambda m: " " * len(m.group()), text[:start]) + \
            text[start:end] + re.sub(r"[^\n]+", lambda m: " " * len(m.group()), text[end:])
        assert split.blank_outside(text, start, end) == old_way
        assert split.blank_outside(text, start, end, split.blanked(text)) == old_way


def _long_first_line_text() -> str:
    """An ENTRY whose ROOT has a 20 KB tuple shape on its first line and a
    backend_config over eight lines, and text after the ENTRY's ``}`` (so the
    computation is read by error recovery, line by line)."""
    shape = "(" + ", ".join(["f32[5,7]"] * 2000) + ")"
    return ("fusion {\n  p = f32[5,7] parameter(0)\n  ROOT t = " + shape
            + " tuple(" + ", ".join(["p"] * 2000) + ")\n}\n\n"
            "ENTRY main {\n  p = f32[5,7] parameter(0)\n"
            "  ROOT fusion = " + shape + " fusion(p), kind=kCustom, calls=fusion,\n"
            "    backend_config={\n"
            '      "fusion_backend_config":{\n'
            '        "kind":"__triton",\n'
            '        "block_level_fusion_config":{\n'
            '          "output_tiles": [{"sizes":["4","4"]}],\n'
            '          "num_warps":"1",\n'
            '          "num_stages":"1"}}}\n'
            "}\n"
            '          "num_warps":"1",\n')


def test_recovery_joins_an_instruction_over_several_lines_without_a_parse_per_line(monkeypatch):
    """Error recovery reads an instruction written over several lines by
    joining lines to its first; each join parsed the piece again from its first
    line, nine parses of a 20 KB line on a fuzzed 21 KB file (document 5020 of
    seed 51: 2.3 s answers). A piece that leaves a bracket or a string open
    cannot parse: no parse of it. The model and problems are those of a parse
    after every join."""
    from hlo_lsp.syntax import recovery
    from tests.helpers import model_key

    text = _long_first_line_text()
    calls = []
    parse_instruction = recovery._parse_instruction

    def counted(piece, base, *args, **kwargs):
        calls.append(piece.count("\n"))
        return parse_instruction(piece, base, *args, **kwargs)
    monkeypatch.setattr(recovery, "_parse_instruction", counted)
    m = parse(text)
    assert calls == [0, 7]  # the first line alone, then its eight lines up to "}}}"
    root = m.entry.root
    assert root.name.name == "fusion" and root.attribute("backend_config") is not None
    assert [p.message for p in m.problems] == ["unexpected text after the end of computation main"]

    calls.clear()
    monkeypatch.setattr(recovery, "_left_open", lambda text, start, end: False)
    every_join = parse(text)
    assert calls == list(range(8))  # one parse per line joined
    assert every_join.problems == m.problems
    assert model_key(every_join.computations) == model_key(m.computations)


def test_recovery_without_parses_of_open_pieces_reads_mutated_files_as_before(monkeypatch):
    """The corpus files with a ``backend_config`` written over several lines,
    each with a token or a line deleted (seeded): the same problems and model
    with and without the parses of pieces that leave a bracket open."""
    import random
    from hlo_lsp.syntax import recovery
    from tests.helpers import CORPUS, CORPUS_ABSENT, model_key

    files = sorted(p for p in CORPUS.glob("*.hlo") if p.stat().st_size < 20_000
                   and "backend_config={\n" in p.read_text(errors="replace"))[:40]
    if not CORPUS.is_dir():
        pytest.skip(CORPUS_ABSENT)
    assert files, f"no .hlo file under 20 KB with a multi-line backend_config in {CORPUS}"
    rng = random.Random(22)
    compared = 0
    for path in files:
        text = path.read_text(errors="replace")
        tokens = [m.span() for m in re.finditer(r"[^\s,(){}\[\]]+|[(){}\[\],]", text)]
        for _ in range(4):
            a, b = rng.choice(tokens)
            if rng.random() < 0.5:
                a, b = text.rfind("\n", 0, a) + 1, text.find("\n", b) + 1 or len(text)
            mutated = text[:a] + text[b:]
            with monkeypatch.context() as patch:
                patch.setattr(recovery, "_left_open", lambda text, start, end: False)
                before = parse(mutated)
            after = parse(mutated)
            assert after.problems == before.problems, (path.name, a, b)
            assert model_key(after.computations) == model_key(before.computations), path.name
            compared += bool(after.problems)
    assert compared >= 20


@pytest.mark.parametrize("piece, left_open", [
    ("add(p,", True), ("add(p, q)", False), ("backend_config={", True),
    ('x="a(b"', False), ('x="a(b', True), ('x="a\\"(", y=(', True), ('x="a\\"(", y=()', False),
    ("}}}", False), ("((((", True), ("(f32[2], f32[3]{0})", False),
])
def test_left_open_counts_brackets_outside_strings(piece, left_open):
    from hlo_lsp.syntax.recovery import _left_open
    assert _left_open("xx" + piece + "yy", 2, 2 + len(piece)) is left_open
