"""Incremental analysis: an edit is applied as a slice, the line index and the
computation skeleton are updated inside the edited window only, and the chunked
parse reuses every computation outside it. Each incremental result must equal
the one computed from scratch, on a real dump, for edits of every kind."""

from __future__ import annotations

import random
import re

import pytest

from tests.helpers import CORPUS, CORPUS_ABSENT, TRAIN_AFTER, read
from hlo_lsp.model.check import check
from hlo_lsp.syntax.edits import EditWindow, apply_changes, compose
from hlo_lsp.features.diagnostics import diagnostics
from hlo_lsp.syntax.chunks import Skeleton, parse_chunked
from hlo_lsp.model.hlo import HloModule
from hlo_lsp.syntax.parser import parse
from hlo_lsp.syntax.lines import LineIndex


def fingerprint(module: HloModule) -> list:
    """Every name, reference and offset of a module, comparable with ==."""
    out = []
    for c in module.computations:
        out.append(("comp", c.name.name, c.name.start, c.start, c.body_start, c.end,
                    c.is_entry, tuple((p.ref.name, p.ref.start) for p in c.params)))
        for i in c.instructions:
            out.append((i.name.name, i.name.start, i.name.end, i.start, i.end,
                        i.opcode, i.opcode_start, i.is_root,
                        None if i.shape is None else (i.shape.text, i.shape.start),
                        tuple((o.ref.name, o.ref.start, o.ref.end) for o in i.operands),
                        tuple((a.name, a.name_start, a.value_start, a.value_end)
                              for a in i.attributes),
                        tuple((r.attr, r.ref.name, r.ref.start) for r in i.called)))
    return out


def problems(module: HloModule) -> list:
    return [(p.start, p.end, p.message) for p in diagnostics(module)]


def _position(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset)
    return line, offset - (text.rfind("\n", 0, offset) + 1)


def _random_edit(rng: random.Random, text: str) -> tuple[int, int, str]:
    """A (start, end, replacement) edit of the kinds an editor session makes."""
    kind = rng.choice(["rename", "type", "newline", "delete_lines", "paste_computation",
                       "break_syntax", "break_header", "delete_span", "at_end"])
    pos = rng.randrange(len(text))
    if kind == "rename":
        at = text.find("%", pos)
        at = at if at >= 0 else text.index("%")
        return at + 1, at + 2, rng.choice("xyzQ")
    if kind == "type":
        return pos, pos, rng.choice(["a", "1", " ", ",", "%q"])
    if kind == "newline":
        return pos, pos, "\n"
    if kind == "delete_lines":
        start = text.rfind("\n", 0, pos) + 1
        end = start
        for _ in range(rng.randint(1, 30)):
            nxt = text.find("\n", end)
            if nxt < 0:
                break
            end = nxt + 1
        return start, end, ""
    if kind == "paste_computation":
        head = text.find("\n%", pos)
        head = head + 1 if head >= 0 else text.index("\n%") + 1
        close = text.index("\n}\n", head) + 3
        at = text.find("\n\n", close)
        at = at + 1 if at >= 0 else len(text)
        return at, at, text[head:close].replace("%", "%copy_", 1) + "\n"
    if kind == "break_syntax":
        return pos, pos, "(("
    if kind == "break_header":
        brace = text.find(" {\n", pos)
        brace = brace if brace >= 0 else text.index(" {\n")
        return brace, brace + 2, ""
    if kind == "delete_span":
        return pos, min(len(text), pos + rng.randint(1, 5000)), ""
    return len(text), len(text), "\n// a comment at the end\n"


def test_window_composition_keeps_prefix_and_suffix():
    rng = random.Random(5)
    for _ in range(300):
        texts = ["".join(rng.choice("ab\n") for _ in range(rng.randint(0, 40)))]
        windows = []
        for _ in range(rng.randint(1, 5)):
            t = texts[-1]
            s = rng.randint(0, len(t))
            e = rng.randint(s, len(t))
            new = "".join(rng.choice("cd\n") for _ in range(rng.randint(0, 6)))
            texts.append(t[:s] + new + t[e:])
            windows.append(EditWindow(s, e, s + len(new)))
        w = compose(windows)
        old, new = texts[0], texts[-1]
        assert 0 <= w.start <= w.old_end <= len(old) and w.start <= w.new_end <= len(new)
        assert old[:w.start] == new[:w.start]
        assert old[w.old_end:] == new[w.new_end:]
        assert w.new_end - w.old_end == len(new) - len(old)
    assert compose([]) is None
    assert compose([EditWindow(0, 1, 1), None]) is None


def test_apply_changes_matches_a_plain_edit_with_utf16_columns():
    text = "HloModule m\n// é 😀 x\nENTRY e {\n  ROOT a = f32[] constant(1)\n}\n"
    lines = LineIndex(text)                       # UTF-16: 😀 is two code units
    # Replace "x" after the emoji (UTF-16 column 8), then insert a line before it.
    new, new_lines, window = apply_changes(text, lines, [
        ((1, 8, 1, 9), "y"), ((0, 11, 0, 11), "\n// added")])
    assert new == "HloModule m\n// added\n// é 😀 y\nENTRY e {\n  ROOT a = f32[] constant(1)\n}\n"
    assert new_lines.starts == LineIndex(new).starts
    assert new[:window.start] == text[:window.start]
    assert new[window.new_end:] == text[window.old_end:]
    # A change without a range replaces the whole text: no window.
    whole, whole_lines, none = apply_changes(new, new_lines, [(None, "HloModule n\n")])
    assert (whole, none, whole_lines.starts) == ("HloModule n\n", None, [0, 12])


def test_random_edits_on_a_real_dump_equal_a_fresh_analysis():
    """Edits of every kind, chained as in a session: text, line index, skeleton,
    model (every offset) and diagnostics equal those computed from scratch."""
    rng = random.Random(11)
    text = read(TRAIN_AFTER)
    lines, skeleton = LineIndex(text), Skeleton(text)
    module = parse_chunked(text, skeleton)
    assert module is not None and fingerprint(module) == fingerprint(parse(text))
    heads = skeleton.heads  # parsed in one piece, then cut at the computations
    assert [(c.start, c.end) for c in module.chunks] == list(zip(heads, [*heads[1:], len(text)]))
    assert [c.computations for c in module.chunks] == [[c] for c in module.computations]
    kinds_with_errors = 0
    for step in range(60):
        start, end, new = _random_edit(rng, text)
        rng_ = (*_position(text, start), *_position(text, end))
        new_text, new_lines, window = apply_changes(text, lines, [(rng_, new)])
        assert new_text == text[:start] + new + text[end:], step
        assert new_lines.starts == LineIndex(new_text).starts, step
        new_skeleton = skeleton.edited(new_text, window)
        assert new_skeleton.heads == Skeleton(new_text).heads, step
        incremental = parse_chunked(new_text, new_skeleton, module, window)
        fresh = parse_chunked(new_text)
        assert (incremental is None) == (fresh is None), step
        if fresh is None:  # the module header itself broke: whole-text parse
            incremental = fresh = parse(new_text)
        assert fingerprint(incremental) == fingerprint(fresh), step
        assert problems(incremental) == problems(fresh), step
        kinds_with_errors += bool(fresh.problems)
        text, lines, skeleton, module = new_text, new_lines, new_skeleton, incremental
    assert kinds_with_errors > 5  # the session went through broken states too


def test_an_edit_reparses_only_the_computation_it_touched():
    text = read(TRAIN_AFTER)
    before = parse_chunked(text)
    old = {c.name.name: c for c in before.computations}
    target = before.computations[len(before.computations) // 2]
    ins = target.instructions[-1]
    # Insert a line before the target's last instruction: later computations move.
    at = ins.start
    new_text, _, window = apply_changes(text, LineIndex(text),
                                        [((*_position(text, at), *_position(text, at)),
                                          "%extra = f32[] constant(0)\n  ")])
    after = parse_chunked(new_text, Skeleton(new_text), before, window)
    reparsed = [c.name.name for c in after.computations if c is not old[c.name.name]]
    assert reparsed == [target.name.name]
    assert [i.name.name for i in after.by_name[target.name.name].instructions][-2:] == \
        ["extra", ins.name.name]
    later = after.computations[-1]
    assert new_text[later.name.start:later.name.end].lstrip("%") == later.name.name
    assert fingerprint(after) == fingerprint(parse(new_text))


def test_semantic_check_cache_follows_moved_computations():
    """Cached per-computation problems move with their computation."""
    text = read(TRAIN_AFTER)
    broken = text.replace("(%", "(%nosuch_", 1)
    module = parse_chunked(broken)
    first = [(p.start, p.message) for p in check(module)]
    assert len(first) == 1 and "nosuch_" in first[0][1]
    moved_text = "// shifted\n" + broken
    window = EditWindow(0, 0, len("// shifted\n"))
    moved = parse_chunked(moved_text, Skeleton(moved_text), module, window)
    assert [(p.start, p.message) for p in check(moved)] == \
        [(s + len("// shifted\n"), m) for s, m in first]
    assert moved_text[check(moved)[0].start:].startswith("%nosuch_")


@pytest.mark.parametrize("cut", ["HloModule", "FileNames"])
def test_a_broken_module_header_falls_back_to_the_whole_text(cut):
    text = read(TRAIN_AFTER)
    at = text.find(cut)
    if at < 0:
        pytest.skip(f"{cut} not in this dump")
    broken = text[:at] + "((" + text[at:]
    assert parse_chunked(broken) is None
    assert parse(broken).problems


@pytest.mark.parametrize("seed", range(4))
def test_skeleton_after_edits_equals_a_fresh_one_with_mixed_line_endings(seed):
    """Found by the fuzz run (seed 0, document 356): in a dump with CR, LF and
    CRLF line ends, a line break typed into a long header line made the edited
    skeleton see a computation head that a fresh one does not (the edited lines
    were searched up to a CR, where the head pattern's line does not end), so
    the diagnostics after the edit differed from those of a fresh open."""
    rng = random.Random(seed)
    lines = read(TRAIN_AFTER).split("\n")
    text = "".join(ln + rng.choice(["\n", "\r", "\r\n"]) for ln in lines)
    skeleton = Skeleton(text)
    for _ in range(200):
        a = rng.randrange(len(text) + 1)
        b = min(len(text), a + rng.choice([0, 0, 1, 3, 40]))
        new = rng.choice(["\n", "\r", "\r\n", "{", "}", " {\r", "ENTRY %e {\n", "", "x"])
        edited = text[:a] + new + text[b:]
        skeleton = skeleton.edited(edited, EditWindow(a, b, a + len(new)))
        text = edited
        assert skeleton.heads == Skeleton(text).heads


def test_edits_on_one_line_of_a_long_computation_reread_that_line_only(monkeypatch):
    """An edit that stays on one instruction's line is read as that line alone
    (hlo_lsp.syntax.chunks._edited_line; every computation counts as long
    here): the model and diagnostics equal a fresh parse's, whether the edit
    breaks the line or not; with keep_previous the previous model is untouched."""
    from hlo_lsp.syntax import chunks

    monkeypatch.setattr(chunks, "LINE_EDIT_CHARS", 0)
    taken = []
    line_path = chunks._edited_line
    monkeypatch.setattr(chunks, "_edited_line",
                        lambda *a: taken.append(line_path(*a)) or taken[-1])
    from hlo_lsp.model import check as checks
    seeded = []  # the checks of the other instructions taken over (model.check.line_edited)

    def line_edited(old, new, *rest):
        checks.line_edited(old, new, *rest)
        seeded.append(new in checks._LOCAL_CACHE)

    monkeypatch.setattr(chunks, "line_edited", line_edited)
    rng = random.Random(3)
    text = read(TRAIN_AFTER)
    lines, skeleton = LineIndex(text), Skeleton(text)
    module = parse_chunked(text, skeleton)
    for step in range(80):
        names = [m.start() for m in re.finditer(r"(?<=[ (])%[\w.]+", text)]
        at = rng.choice(names) + rng.randint(1, 3)
        start, end, new = rng.choice([(at, at, "x"), (at, at + 1, ""), (at, at + 1, "Q"),
                                      (at, at, "(("), (at, at, " "), (at, at, "7")])
        rng_ = (*_position(text, start), *_position(text, end))
        new_text, new_lines, window = apply_changes(text, lines, [(rng_, new)])
        new_skeleton = skeleton.edited(new_text, window)
        keep = step % 2 == 0
        before = fingerprint(module)
        found = chunks.edited_chunk(new_text, new_skeleton, module, window, keep)
        incremental = parse_chunked(new_text, new_skeleton, module, window, keep,
                                    found[0] if found else None)
        if keep:
            assert fingerprint(module) == before, step
        fresh = parse_chunked(new_text) or parse(new_text)  # as a fresh open parses it
        assert fingerprint(incremental) == fingerprint(fresh), step
        assert problems(incremental) == problems(fresh), step
        text, lines, skeleton, module = new_text, new_lines, new_skeleton, incremental
    # the line path was taken for many edits; not for lines that broke (nor for
    # later edits in a computation left broken)
    assert sum(c is not None for c in taken) > 25 and any(c is None for c in taken)
    # ... and for most of those the other instructions' checks were taken over
    assert sum(seeded) > 15 and not all(seeded)


def test_header_lines_are_those_a_line_start_search_finds():
    """The skeleton's search led by the line break finds exactly the lines the
    plain pattern anchored at line starts does: a header on the first line,
    after blank lines, after CR-only or CRLF lines (``\\r`` ends a line, as in
    the LSP specification and XLA's lexer), a ``{`` ending at a ``\\r``,
    indented lines, and random slices of real dumps starting at a line start."""
    from hlo_lsp.syntax.chunks import _HEAD, _head_lines

    at_line_start = re.compile(r"(?<![^\n\r])" + _HEAD.pattern)

    def plain(text, start=0, end=None):
        return [m.start() for m in at_line_start.finditer(
            text, start, len(text) if end is None else end)]

    cases = ["ENTRY %e {\n}\n", "\n\nf {\n  x = f32[] parameter(0)\n}\n",
             "a {\r\nb {\rc {\n", "  nope {\n%p (x: f32[]) -> f32[] {\n", "", "{\n",
             "HloModule m\n\nENTRY e {  \n}", "a {\r\r\n b {\rc d {", read(TRAIN_AFTER)]
    for text in cases:
        assert _head_lines(text) == plain(text), text[:40]
    assert _head_lines("a {\r\nb {\rc {\n") == [0, 5, 9]
    rng = random.Random(3)
    for text in (read(TRAIN_AFTER), read(TRAIN_AFTER).replace("\n", "\r"),
                 read(TRAIN_AFTER).replace("\n", "\r\n")):
        starts = [0] + [i + 1 for i, ch in enumerate(text) if ch in "\r\n"]
        for _ in range(100):
            a, b = sorted(rng.sample(starts, 2))
            assert _head_lines(text, a, b) == plain(text, a, b), (a, b)


def test_head_named_by_search_equals_the_index_of_every_header(monkeypatch):
    """A lookup by a search for the name finds what the index of every header
    name finds: the first header naming it, or None; past the limit of
    occurrences looked at, the index answers."""
    from hlo_lsp.syntax import chunks
    from hlo_lsp.syntax.chunks import _HEAD_NAME

    text = read(TRAIN_AFTER)
    # a second header of one name, and names inside other names
    text += "\n%s {\n  ROOT p = f32[] parameter(0)\n}\n" % _HEAD_NAME.match(
        text, Skeleton(text).heads[1]).group(1)
    skeleton = Skeleton(text)
    first: dict[str, int] = {}
    for head in skeleton.heads:
        first.setdefault(_HEAD_NAME.match(text, head).group(1), head)
    assert len(first) > 20 and len(first) < len(skeleton.heads)
    for name in [*first, "no_such_computation", "add", "p"]:
        assert Skeleton(text).head_named(name) == first.get(name), name
    assert Skeleton(text)._search_head(next(iter(first))) is not False
    monkeypatch.setattr(chunks, "HEAD_SEARCH_HITS", 1)
    common = max(first, key=lambda n: text.count(n))
    fresh = Skeleton(text)
    assert fresh._search_head(common) is False
    assert fresh.head_named(common) == first[common] and fresh._names is not None


def test_strings_left_open_give_the_same_problems_fresh_or_edited():
    """The fuzz harness's seed 0, document 1072 (a corpus dump with two tokens
    duplicated, then two edits): a quote doubled and another deleted leave
    strings open that run to the end of their computations' chunks. Parsed
    fresh (a group's failed parse carried into the chunk) and after the edits
    (the chunk alone), the problems are the same, and a chunk's end that is
    not the document's is no "unexpected end of input"."""
    source = CORPUS / "morenfang__xla_hlo_dump_parse__data__module_0707.after_optimizations.txt"
    if not source.exists():
        pytest.skip(CORPUS_ABSENT)
    text = read(source)
    for old, new in (("%param_0.33 = f32[1000,81]{0,1} parameter(0)",
                      "%param_0.33 = f32[1000,81]{0,1} parameterparameter(0)"),
                     ('%arg0.1 = f32[1,14,14,256]{3,2,1,0} parameter(0), parameter_replication='
                      '{false}, metadata={op_name="XLA_Args"}',
                      '%arg0.1 = f32[1,14,14,256]{3,2,1,0} parameter(0), parameter_replication='
                      '{false}, metadata={op_name="XLA_Args""}')):
        assert text.count(old) == 1
        text = text.replace(old, new)
    lines, skeleton = LineIndex(text), Skeleton(text)
    module = parse_chunked(text, skeleton)
    for rng_, new in [((51, 155, 51, 160), ""), ((164, 217, 165, 12), ")"),
                      ((19, 132, 19, 134), "\r\n"), ((162, 3, 162, 3), "(")]:
        text, lines, window = apply_changes(text, lines, [(rng_, new)])
        skeleton = skeleton.edited(text, window)
        module = parse_chunked(text, skeleton, module, window)
    fresh = parse_chunked(text)
    assert problems(module) == problems(fresh)
    cut = [p for p in fresh.problems if p.message.startswith("unexpected end of input")
           and text[p.end:].strip()]
    assert cut == []
