"""The scanner (hlo_lsp/syntax/scanner.py) against the grammar it is a fast path for.

Wherever the scanner reads a text itself, it must build the model the grammar's
builder builds, field by field; wherever the grammar rejects a text, the
scanner must not accept it. Checked on every real file of ``../shared/corpus``
and ``examples/``, and on thousands of mutations of real computations.
"""

from __future__ import annotations

import random
import re

import pytest

from tests.helpers import (CORPUS, EXAMPLES, FP8_DUMP, COLLECTIVES_STEP, TRAIN_AFTER,
                           model_key, read)
from hlo_lsp.syntax import driver, parser, scanner


def grammar(text: str, base: int = 0) -> list | None:
    """The grammar's items for ``text`` (lark alone), None when it does not parse."""
    return driver._grammar_items(text, base)


def scanned(text: str, base: int = 0) -> list | None:
    """The scanner's items for ``text`` with no fallback: None unless the scanner
    read every computation itself (a module header is still the grammar's)."""
    patterns = driver._scanner_patterns()
    prefix = scanner.first_head(patterns, text)
    return scanner.scan(patterns, text, base, lambda piece, at: grammar(piece, at)
                        if at == base and len(piece) == prefix else None)


def _files() -> list:
    files = sorted(p for p in EXAMPLES.rglob("*") if p.suffix in (".txt", ".hlo") and p.is_file())
    if CORPUS.is_dir():
        files += sorted(p for p in CORPUS.iterdir() if p.suffix in (".txt", ".hlo"))
    return files


def test_the_scanner_builds_the_grammars_model_on_every_real_file():
    files = _files()
    assert len(files) > 30
    read_by_scanner = total = 0
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        expected = grammar(text)
        got = scanner.scan(driver._scanner_patterns(), text, 0, grammar)
        if expected is None:
            assert got is None, f"{path.name}: the scanner accepts what the grammar rejects"
            continue
        assert got is not None, path.name
        assert model_key(got) == model_key(expected), path.name
        total += len(text)
        mine = scanned(text)
        if mine is not None:
            read_by_scanner += len(text)
    # the fast path is the path: most of the text is read without the grammar
    assert read_by_scanner > 0.5 * total


def _mixed_breaks(text: str) -> str:
    rng = random.Random(5)
    return "".join(line + rng.choice(["\n", "\r\n", "\r"]) for line in text.split("\n"))


@pytest.mark.parametrize("breaks", ["\n", "\r\n", "\r", "mixed"])
def test_the_scanner_reads_machine_printed_dumps_without_the_grammar(breaks):
    # Line breaks as the LSP specification and XLA's lexer know them: `\r` too.
    for path in (TRAIN_AFTER, FP8_DUMP, COLLECTIVES_STEP):
        text = read(path)
        text = _mixed_breaks(text) if breaks == "mixed" else text.replace("\n", breaks)
        got = scanned(text)
        assert got is not None, path.name
        assert model_key(got) == model_key(grammar(text))


def test_parse_uses_the_scanner_and_equals_the_grammar(monkeypatch):
    text = read(TRAIN_AFTER)
    calls = []
    real = scanner.scan
    monkeypatch.setattr(scanner, "scan", lambda *a: calls.append(1) or real(*a))
    fast = parser.parse(text)
    assert calls
    monkeypatch.setattr(driver, "USE_SCANNER", False)
    slow = parser.parse(text)
    assert model_key(fast.computations) == model_key(slow.computations)
    assert fast.problems == slow.problems == []


@pytest.mark.parametrize("text", [
    # a keyword where a name goes: the grammar's lexer reads the keyword
    "ENTRY (p: f32[]) -> f32[] {\n  ROOT r = f32[] negate(p)\n}\n",
    "e {\n  ROOT = f32[] parameter(0)\n}\n",
    "e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] add(p, ROOT)\n}\n",
    # `parameter(` and `constant` where an opcode goes
    "e {\n  ROOT p = f32[] parameter(x)\n}\n",
    "e {\n  ROOT p = f32[] parameter (0)\n}\n",
    "e {\n  ROOT c = f32[] constant (1)\n}\n",
    "e {\n  ROOT c = f32[] constant\n(1)\n}\n",
    # attributes with forms of their own
    "e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] custom-call(p), custom_call_target=\"x\", literal=s32[] 1\n}\n",
    "e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] call(p), to_apply={ a = f32[] parameter(0) }\n}\n",
    "e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] call(p), to_apply=%c, control-predecessors={p}\n}\n",
    "e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] call(p), branch_computations={%a, b}\n}\n",
    "e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] call(p), calls={}\n}\n",
    # shapes, operands and comments as XLA prints them, and as it may not
    "e (p: (f32[2]{0}, /*index=1*/s32[])) -> () {\n  ROOT t = () tuple()\n}\n",
    "e {\n  p = (f32[2]{0}, u8[0]{0}) parameter(0)\n  ROOT g = f32[2]{0} get-tuple-element((f32[2]{0}, u8[0]{0}) %p), index=0\n}\n",
    "e {\n  p = f32[] parameter(0) // a comment\n  // a line of comment\n  ROOT r = f32[] negate(f32[] p) /* c */\n} // e\n",
    "e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] add(p, , p)\n}\n",
    "e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] add(p,\n p)\n}\n",
    "e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] add(p, p), metadata={op_name=\"a\"}\r\n}, execution_thread=\"side\"\n",
    "e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] add(p, p), metadata={op_name=\"a\"}}\n}\n",
    "e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] add(p, p) x\n}\n",
    "e {\n  p = f32[2] {0} parameter(0)\n}\n",
    "e {\n  ROOT r = f32[] add(f32[] parameter(0), f32[] parameter(1))\n}\n",
    "e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] add(p, p)\n}, execution_thread=\"a\" x\n",
])
def test_the_scanner_declines_or_agrees_on_edge_cases(text):
    expected = grammar(text)
    got = scanned(text)
    if expected is None:
        assert got is None
    elif got is not None:
        assert model_key(got) == model_key(expected)
    full = scanner.scan(driver._scanner_patterns(), text, 0, grammar)
    assert (full is None) == (expected is None)
    if full is not None:
        assert model_key(full) == model_key(expected)


_PIECES = [" ", ",", "(", ")", "%", "{", "}", "[", "]", "=", "\"", "/*c*/", "//", "\n", "\r",
           ":", "->", "ROOT ", "ENTRY ", "parameter", "constant", "x", "0", "-", ".", "f32[2]",
           "(f32[], s32[])", ", calls=%x", ", literal=s32[] 1", "\t", "'"]
_COMPUTATION = re.compile(r"^(?:ENTRY )?%?[\w.\-]+ [^\n]*\{\n(?:[^\n]*\n)*?\}\n", re.M)


def _mutate(rng: random.Random, text: str) -> str:
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(text))
        kind = rng.random()
        if kind < 0.45:
            text = text[:at] + rng.choice(_PIECES) + text[at:]
        elif kind < 0.75:
            text = text[:at] + text[at + rng.randint(1, 4):]
        elif kind < 0.9:
            end = min(len(text), at + rng.randint(1, 40))
            text = text[:at] + text[at:end] + text[at:]
        else:
            text = text.replace("\n", "\r\n") if rng.random() < 0.5 else text[:at]
    return text


def test_mutated_computations_are_declined_or_read_as_the_grammar_reads_them():
    rng = random.Random(20261126)
    sources = [read(p) for p in (TRAIN_AFTER, FP8_DUMP, COLLECTIVES_STEP)]
    corpus_gpu = CORPUS / "renfang__xla_hlo_dump_parse__data__module_0225.after_optimizations.txt"
    if corpus_gpu.is_file():
        sources.append(read(corpus_gpu))
    chunks = [m.group() for text in sources for m in _COMPUTATION.finditer(text)
              if len(m.group()) < 6000]
    assert len(chunks) > 50
    accepted = rejected_by_both = 0
    for _ in range(3000):
        text = _mutate(rng, rng.choice(chunks))
        got = scanned(text, 7)
        expected = grammar(text, 7)
        # with the grammar reading what the scanner declines, from the line it
        # declined on (the scanner's instructions before it, blanked for the
        # grammar, then put first): the grammar's model, or both reject
        full = scanner.scan(driver._scanner_patterns(), text, 7, grammar)
        assert (full is None) == (expected is None), text
        if full is not None:
            assert model_key(full) == model_key(expected), text
        if got is not None:
            assert expected is not None, f"the scanner accepts what the grammar rejects:\n{text}"
            assert model_key(got) == model_key(expected), text
            accepted += 1
        elif expected is None:
            rejected_by_both += 1
    # both sides of the test happen: mutants the scanner reads, and broken ones
    assert accepted > 300 and rejected_by_both > 300, (accepted, rejected_by_both)


def test_the_grammar_reads_a_declined_computation_from_the_declined_line():
    """A line the scanner declines deep in a long computation (a nested operand
    instruction, then a broken line): the grammar is given the header, the last
    instruction the scanner read and the rest, the lines before blanked at the
    same offsets. The model, and the first error, are the grammar's own."""
    head = "HloModule m\n\nENTRY %e (p: f32[]) -> f32[] {\n  %p = f32[] parameter(0)\n"
    body = "".join(f"  %a{k} = f32[] negate(%p)\n" for k in range(2000))
    nested = "  %n = f32[] add(f32[] negate(%p), %a3)\n"
    good = head + body + nested + "  ROOT %r = f32[] add(%n, %a1)\n}\n"
    broken = head + body + "  %n = f32[] add(%p %a3)\n  ROOT %r = f32[] add(%n, %a1)\n}\n"
    pieces = []

    def fallback(piece, at):
        pieces.append(piece)
        return grammar(piece, at)

    patterns = driver._scanner_patterns()
    got = scanner.scan(patterns, good, 0, fallback)
    assert model_key(got) == model_key(grammar(good))
    assert len(got[-1].instructions) == 2004           # parameter, 2000, negate, n, r
    read_by_grammar = pieces[-1]
    assert len(read_by_grammar) == len(good) - good.index("ENTRY")
    assert "%a0 " not in read_by_grammar and "%a1999 = " in read_by_grammar

    pieces.clear()
    assert scanner.scan(patterns, broken, 0, fallback) is None
    assert "%a0 " not in pieces[-1]
    fast = parser.parse(broken)
    assert fast.problems and fast.problems[0].message.startswith("unexpected '%a3'")
    slow_scanner = driver.USE_SCANNER
    try:
        driver.USE_SCANNER = False
        slow = parser.parse(broken)
    finally:
        driver.USE_SCANNER = slow_scanner
    assert fast.problems == slow.problems
    assert model_key(fast.computations) == model_key(slow.computations)


def test_a_split_file_costs_the_scanner_no_more_than_the_grammar(monkeypatch):
    """Each part of a split file is parsed in a text blanked with spaces but for
    the part: looking for the first computation header must skip blank lines
    in a step each, not a character at a time (the first version took 4.5x the
    grammar's time on a 172 KB file of 134 parts)."""
    import time

    part = ("HloModule m{k}\n\n%add{k} (a: f32[], b: f32[]) -> f32[] {{\n"
            "  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
            "  ROOT %s = f32[] add(%a, %b)\n}}\n\nENTRY %e{k} (p: f32[8]) -> f32[] {{\n"
            "  %p = f32[8]{{0}} parameter(0)\n  %z = f32[] constant(0)\n"
            "  ROOT %r = f32[] reduce(%p, %z), dimensions={{0}}, to_apply=%add{k}\n}}\n")
    text = "\n// -----\n\n".join(part.format(k=k) for k in range(150))

    def best(use_scanner: bool) -> float:
        monkeypatch.setattr(driver, "USE_SCANNER", use_scanner)
        times = []
        for _ in range(3):
            t0 = time.thread_time()   # processor time: a busy machine does not count
            module = parser.parse(text)
            times.append(time.thread_time() - t0)
            assert len(module.computations) == 300 and not module.problems
        return min(times)

    scanner_s, grammar_s = best(True), best(False)
    assert scanner_s < 2.0 * grammar_s, (scanner_s, grammar_s)
