"""Big documents: a skeleton for answers before the full parse, and parses that
reuse every computation an edit did not touch.

XLA prints each computation header at column 0 and its instructions indented,
one per line. The :class:`Skeleton` finds the header lines with one regular
expression search over the text (tens of milliseconds for megabytes) and splits
the document into chunks: the module header with its stack-frame tables, then
one chunk per computation. The chunks are only a way to cut the work; each is
parsed with the grammar (``grammar/hlo.lark``). A chunk that does not parse on
its own is read with the parser's error recovery, alone; when the module header
or the stack-frame tables do not parse, the caller falls back to the whole-text
parse with recovery. A file laid out differently is never misread, only parsed
more slowly.

- :func:`parse_chunked` parses chunk by chunk (a first parse in one piece, then
  cut at the computations), reusing the computations of a previous parse outside
  the edited window (:class:`hlo_lsp.syntax.window.EditWindow`), shifted to their new
  offsets: an edit reparses only the computation it touched.
- :class:`ChunkCache` bounds the memory of the chunks parsed for quick answers.
- :func:`quick_definition` answers go-to-definition on an operand or a
  computation reference from two grammar-parsed lines (the cursor's and the
  target's) found by searching the text: no full parse needed.
"""

from __future__ import annotations

import bisect
import re
import weakref
from collections import OrderedDict
from dataclasses import dataclass

from lark.exceptions import UnexpectedInput

from hlo_lsp.syntax.window import EditWindow
from hlo_lsp.model.spans import Span
from hlo_lsp.model.check import line_edited
from hlo_lsp.model.hlo import Computation, HloModule, Instruction, Problem
from hlo_lsp.syntax.parser import _assemble, parse, parse_fragment, try_instruction, try_parse
from hlo_lsp.syntax.lines import LineIndex
from hlo_lsp.syntax.scanner import Unfinished

#: A computation header line: a name at column 0, the line ending with "{".
#: Lines end at ``\n``, ``\r\n`` or ``\r``, as the LSP specification and XLA's
#: lexer end them (:class:`hlo_lsp.syntax.lines.LineIndex`).
_HEAD = re.compile(r"(?:ENTRY[ \t]+)?%?[A-Za-z_][\w.\-]*+[^\n\r]*\{[ \t]*(?=[\n\r]|\Z)")
_HEAD_NAME = re.compile(r"(?:ENTRY[ \t]+)?%?([A-Za-z_][\w.\-]*)")
#: :data:`_HEAD` after the line break before it: a search led by a literal
#: character, which the regex engine skips to, rather than trying ``^`` at every
#: character (5x faster on 100 MB: docs/benchmarks.md).
_HEAD_AFTER_BREAK = re.compile(
    r"[\n\r]((?:ENTRY[ \t]+)?%?[A-Za-z_][\w.\-]*+[^\n\r]*\{[ \t]*(?=[\n\r]|\Z))")
_BREAK = re.compile(r"[\n\r]")


def _line_start(text: str, at: int) -> int:
    """The start of the line (in :data:`_HEAD`'s sense) that holds offset ``at``."""
    return max(text.rfind("\n", 0, at), text.rfind("\r", 0, at)) + 1


def _head_lines(text: str, start: int = 0, end: int | None = None) -> list[int]:
    r"""Offsets of the lines of ``text[start:end]`` that :data:`_HEAD` matches
    (``start`` is a line start: 0 or just after a line break)."""
    end = len(text) if end is None else end
    out = [start] if _HEAD.match(text, start, end) else []
    out.extend(m.start(1) for m in _HEAD_AFTER_BREAK.finditer(text, start, end))
    return out


#: Occurrences of a computation's name that :meth:`Skeleton.head_named` looks at
#: before it indexes every header name instead.
HEAD_SEARCH_HITS = 256


class Skeleton:
    """Computation chunk boundaries of a document (character offsets)."""

    __slots__ = ("text", "heads", "_names")

    def __init__(self, text: str, heads: list[int] | None = None) -> None:
        self.text = text
        self.heads: list[int] = _head_lines(text) if heads is None else heads
        self._names: dict[str, int] | None = None

    def edited(self, text: str, window: EditWindow) -> Skeleton:
        """The skeleton of ``text``, the result of an edit of this skeleton's text
        described by ``window``: header lines outside the lines the edit touched
        are kept (shifted after it); only those lines are searched again (lines
        as :data:`_HEAD` ends them), so that the search sees what a search of
        the whole text sees."""
        first = _line_start(text, window.start)                # same in both texts
        found = _BREAK.search(text, window.new_end)
        last_new = len(text) if found is None else found.start()
        last_old = last_new - window.delta                     # same line end in old
        heads = self.heads
        keep = bisect.bisect_left(heads, first)
        after = bisect.bisect_right(heads, last_old)
        out = heads[:keep]
        out.extend(_head_lines(text, first, last_new))
        delta = window.delta
        out.extend([h + delta for h in heads[after:]] if delta else heads[after:])
        return Skeleton(text, out)

    def head_named(self, name: str) -> int | None:
        """Offset of the first header line that names computation ``name`` (a
        candidate: callers confirm it with the grammar), or None.

        The first lookups search the text for the name itself (XLA prints a
        computation before its callers, so the search stops early: a
        millisecond, where indexing the 100,000 headers of a 100 MB dump takes
        0.1 s); a lookup that finds nothing within :data:`HEAD_SEARCH_HITS`
        occurrences of the name, and every later one, uses an index of all the
        header names."""
        if self._names is None:
            found = self._search_head(name)
            if found is not False:
                return found
            names: dict[str, int] = {}
            for head in self.heads:
                m = _HEAD_NAME.match(self.text, head)
                if m:
                    names.setdefault(m.group(1), head)
            self._names = names
        return self._names.get(name)

    def _search_head(self, name: str) -> int | None | bool:
        """:meth:`head_named` by a search for the literal name: the offset, None
        when the text has no header of that name, False when undecided (too many
        occurrences of the name looked at)."""
        text, heads = self.text, self.heads
        if not name:
            return False
        at = text.find(name)
        for _ in range(HEAD_SEARCH_HITS):
            if at < 0:
                return None
            line = _line_start(text, at)
            i = bisect.bisect_left(heads, line)
            if i < len(heads) and heads[i] == line:
                m = _HEAD_NAME.match(text, line)
                if m and m.group(1) == name:
                    return line
            at = text.find(name, at + 1)
        return False

    def bounds(self, i: int) -> tuple[int, int]:
        """``[start, end)`` of the i-th computation chunk."""
        end = self.heads[i + 1] if i + 1 < len(self.heads) else len(self.text)
        return self.heads[i], end

    @property
    def prefix_end(self) -> int:
        """End of the module header and stack-frame tables."""
        return self.heads[0] if self.heads else len(self.text)

    def chunk_index(self, offset: int) -> int:
        """Index of the chunk containing ``offset``; -1 in the prefix."""
        return bisect.bisect_right(self.heads, offset) - 1


@dataclass(slots=True)
class Chunk:
    """One computation chunk of a chunked parse: ``[start, end)`` in the text,
    what it parsed to, and the syntax problems found in it (when it did not
    parse on its own and was read with error recovery)."""

    start: int
    end: int
    computations: list[Computation]
    problems: list[Problem]


def parse_chunked(text: str, skeleton: Skeleton | None = None,
                  previous: HloModule | None = None,
                  window: EditWindow | None = None,
                  keep_previous: bool = False,
                  edited: Chunk | None = None) -> HloModule | None:
    """Parse ``text`` chunk by chunk (one computation each, see :class:`Skeleton`);
    None when the module header or the stack-frame tables do not parse (the
    caller then uses :func:`hlo_lsp.syntax.parser.parse` on the whole text).

    A chunk that does not parse on its own is read with the parser's error
    recovery, so its problems cost one computation's parse, not the document's.

    Reuse: the chunks of ``previous`` (an earlier parse of this document) are
    taken over where the text is unchanged, moved to their new offsets. By default
    they are moved in place, so ``previous`` must no longer be read; with
    ``keep_previous`` the chunks that move are copied instead (a request may
    still be reading ``previous``: see :class:`hlo_lsp.analysis.documents.DocumentStore`),
    and the ones that stay are shared. With ``window``, the edit that
    turned ``previous.text`` into ``text``, every chunk outside it is reused
    without looking at its text; without it, unchanged chunks are found by
    comparing their text. ``edited``: the chunk the edit falls in, already
    parsed (:func:`edited_chunk`), taken instead of parsing its text again. The
    result carries ``chunks`` and ``prefix`` (the parsed module header and
    stack-frame tables) for the next edit.
    """
    if text.startswith("// -----") or "\n// -----" in text:
        return None  # a split file: parsed part by part, as a whole
    skeleton = skeleton or Skeleton(text)
    reuse = _reuser(text, previous, window, keep_previous)
    module = HloModule(text)
    prefix_end = skeleton.prefix_end
    old_prefix = getattr(previous, "prefix", None)
    if (window is not None and old_prefix is not None and old_prefix[0] == prefix_end
            and window.start >= prefix_end):
        prefix_items = old_prefix[1]  # the edit is after it: same text, same offsets
    else:
        try:
            prefix = text[:prefix_end]
            prefix_items = parse_fragment(prefix, "start", 0) if prefix.strip() else []
        except UnexpectedInput:
            return None
        if any(isinstance(it, Computation) for it in prefix_items):
            return None  # a computation the skeleton did not see: not XLA's layout
    items: list = list(prefix_items)
    heads = skeleton.heads
    bounds = list(zip(heads, [*heads[1:], len(text)]))
    if reuse is _NO_REUSE:
        chunks = _parse_groups(text, bounds)
    else:
        chunks = []
        for start, end in bounds:
            chunk = reuse(start, end)
            if chunk is None:
                chunk = edited if edited is not None and (edited.start, edited.end) == \
                    (start, end) else _parse_chunk(text, start, end)
            chunks.append(chunk)
    for chunk in chunks:
        items.extend(chunk.computations)
        if chunk.problems:
            module.problems.extend(chunk.problems)
    _assemble(module, items)
    module.chunks = chunks
    module.prefix = (prefix_end, prefix_items)
    return module


#: A computation at least this long (characters) is not parsed again for an edit
#: that stays on one line of one of its instructions: that line is
#: (:func:`_edited_line`).
LINE_EDIT_CHARS = 16 * 1024


def edited_chunk(text: str, skeleton: Skeleton, previous: HloModule | None,
                 window: EditWindow, keep_previous: bool = False) -> tuple[Chunk, int] | None:
    """The chunk of ``text`` (one computation) that the edit ``window`` (from
    ``previous.text`` to ``text``) falls in, parsed, and that chunk's end in
    ``previous.text``; None unless the edit stays inside one computation of a
    chunked parse ``previous`` (after the module header, the computation's
    bounds unchanged but for the edit). In a computation of
    :data:`LINE_EDIT_CHARS` and more, an edit on one instruction's line re-reads
    that line only (:func:`_edited_line`; with ``keep_previous`` the
    computation is copied, else its instructions are moved). What an edit's
    first diagnostics need (:func:`hlo_lsp.features.diagnostics.edited_diagnostics`),
    handed to :func:`parse_chunked` afterwards so that it is read once."""
    old: list[Chunk] = getattr(previous, "chunks", None) or []
    prefix = getattr(previous, "prefix", None)
    if not old or prefix is None or prefix[0] != skeleton.prefix_end \
            or window.start < skeleton.prefix_end:
        return None
    i = skeleton.chunk_index(window.start)
    start, end = skeleton.bounds(i)
    old_end = end - window.delta
    if i < 0 or window.new_end > end or start == window.start:
        return None
    j = bisect.bisect_left([c.start for c in old], start)
    if j == len(old) or old[j].start != start or old[j].end != old_end:
        return None
    chunk = None
    if end - start >= LINE_EDIT_CHARS:
        chunk = _edited_line(text, previous.text, old[j], window, keep_previous,
                             len(previous.frames.frames))
    return (chunk or _parse_chunk(text, start, end)), old_end


def _edited_line(text: str, old_text: str, old: Chunk, window: EditWindow,
                 keep_previous: bool, frame_count: int) -> Chunk | None:
    """The chunk ``old`` (one computation of ``old_text``) after the edit
    ``window``, when the edit stays on the line of one of its instructions and
    the new line parses alone as one instruction: that line parsed, the
    instructions after it moved (:meth:`Computation.with_instruction`), the
    checks of the others taken over when they still hold
    (:func:`hlo_lsp.model.check.line_edited`; ``frame_count``: the StackFrames
    table's size). None otherwise (the caller parses the computation)."""
    if len(old.computations) != 1 or old.problems:
        return None
    comp = old.computations[0]
    if comp.nested or "\n" in old_text[window.start:window.old_end] \
            or "\n" in text[window.start:window.new_end]:
        return None
    line_start = old_text.rfind("\n", 0, window.start) + 1
    line_end = old_text.find("\n", window.old_end)
    instructions = comp.instructions
    k = bisect.bisect_right([ins.start for ins in instructions], window.start) - 1
    if line_end < 0 or k < 0:
        return None
    ins = instructions[k]
    # the instruction is that whole line (no other one, nested or not, on it)
    if not (line_start <= ins.start and ins.end <= line_end) \
            or old_text[line_start:ins.start].strip() \
            or (k > 0 and instructions[k - 1].end > line_start) \
            or (k + 1 < len(instructions) and instructions[k + 1].start < line_end):
        return None
    new = try_instruction(text[line_start:line_end + window.delta], line_start)
    if new is None or new.end > line_end + window.delta:
        return None
    moved = comp.with_instruction(k, new, window.delta, keep_previous)
    line_edited(comp, moved, k, ins, window.delta, frame_count)
    return Chunk(old.start, old.end + window.delta, [moved], [])


#: Characters of consecutive computations parsed in one call of the parser when
#: nothing can be reused: large enough that the cost per call does not count,
#: small enough that a group that fails (a mistake anywhere in it) wastes little.
GROUP_CHARS = 256 * 1024


def _parse_groups(text: str, bounds: list[tuple[int, int]]) -> list[Chunk]:
    """Every chunk of ``bounds`` (the computations' ``(start, end)``), parsed in
    groups of about :data:`GROUP_CHARS`: one parse per group (cheaper than one
    per computation), and a group that does not parse, or whose computations do
    not line up with its chunks, parsed chunk by chunk (with error recovery
    where needed), so a mistake costs its group's parse up to the mistake once
    more, not the text's: the chunks the group's parse read whole before it
    failed are kept (:func:`_read_whole`), and the chunk it failed in is read on
    from where it failed (``unfinished``: :func:`hlo_lsp.syntax.scanner.scan`)."""
    chunks: list[Chunk] = []
    i = 0
    while i < len(bounds):
        j = i + 1
        while j < len(bounds) and bounds[j][1] - bounds[i][0] <= GROUP_CHARS:
            j += 1
        group = bounds[i:j]
        start, end = group[0][0], group[-1][1]
        read: list = []
        unfinished: dict[int, Unfinished] = {}
        # (a group the scanner finds a computation in that does not parse is
        # parsed chunk by chunk below, not whole with the grammar first)
        parsed = try_parse(text[start:end], "start", start, read, unfinished, confirm=False) \
            if j - i > 1 else None
        if parsed is not None and len(parsed) == len(group) and all(
                isinstance(comp, Computation) and comp.start == s
                for comp, (s, _) in zip(parsed, group)):
            chunks.extend(Chunk(s, e, [comp], []) for comp, (s, e) in zip(parsed, group))
        else:
            whole = _read_whole(read, group)
            chunks.extend(Chunk(s, e, [whole[s]], []) if s in whole else
                          _parse_chunk(text, s, e, unfinished) for s, e in group)
        i = j
    return chunks


def _read_whole(read: list, group: list[tuple[int, int]]) -> dict[int, Computation]:
    """Chunk start -> its computation, for the chunks of ``group`` that the
    group's failed parse read whole: the items ``read`` hold a computation at
    the chunk's start and, right after it, one at the next chunk's start (the
    text between, up to the next header, was read too; the failure is later)."""
    at = {item.start: k for k, item in enumerate(read) if isinstance(item, Computation)}
    whole = {}
    for (s, _), (following, _) in zip(group, group[1:]):
        k = at.get(s)
        if k is not None and at.get(following) == k + 1:
            whole[s] = read[k]
    return whole


def _parse_chunk(text: str, start: int, end: int,
                 unfinished: dict[int, Unfinished] | None = None) -> Chunk:
    """Parse ``text[start:end]`` with the grammar; with error recovery if needed.
    ``unfinished``: what a parse of a larger piece read of the computations
    that do not parse, by document offset (:func:`hlo_lsp.syntax.scanner.scan`);
    this chunk's entries are taken out and read on from."""
    piece = text[start:end]
    error = None
    if unfinished is None:
        unfinished = {}
    try:
        parsed = parse_fragment(piece, "start", start, unfinished)
        if all(isinstance(it, Computation) for it in parsed):
            return Chunk(start, end, parsed, [])
    except UnexpectedInput as exc:
        # kept past this block: without its traceback (see parser._parse)
        error = exc.with_traceback(None)
    # error recovery reads the piece at offset 0
    here: dict[int, Unfinished] = {}
    for at in [at for at in unfinished if start <= at < end]:
        known = unfinished.pop(at)
        known.shift(-start)
        here[at - start] = known
    sub = parse(piece, error=error, unfinished=here)
    for comp in sub.computations:
        comp.shift(start)
    found = sub.problems
    if text[end:].strip() and len(found) > 1:
        # The piece's end is not the document's: an "unexpected end of input"
        # there is the chunk's cut (a string or bracket a broken line left open
        # runs to it), which the whole text's parse never meets; the recovery's
        # own problems say what is wrong (the fuzz harness's mismatch between a
        # fresh open and the same text reached by edits, seed 0 document 1072).
        found = [p for p in found
                 if not (p.start >= len(piece) - 1 and p.message.startswith(_END_OF_INPUT))]
    problems = [Problem(p.start + start, p.end + start, p.message, p.severity, p.source)
                for p in found]
    if sub.name is not None or sub.frames.start >= 0:
        problems.append(Problem(start, start + 1, "unexpected module header or "
                                "stack-frame table inside a computation"))
    return Chunk(start, end, sub.computations, problems)


#: How the parser words an error at the end of the text it was given
#: (:func:`hlo_lsp.syntax.driver._problem_from`).
_END_OF_INPUT = "unexpected end of input"


def _NO_REUSE(start: int, end: int) -> None:
    """The reuser when there is no previous parse."""
    return None


def _reuser(text: str, previous: HloModule | None, window: EditWindow | None,
            keep_previous: bool = False):
    """A function ``(start, end) -> Chunk | None`` giving the chunk of ``previous``
    that covers the same text as ``text[start:end]``, moved there (a moved copy
    with ``keep_previous``)."""
    old: list[Chunk] = getattr(previous, "chunks", None) or []
    if not old:
        return _NO_REUSE
    by_start = {c.start: c for c in old}

    def moved(c: Chunk, delta: int) -> Chunk:
        if delta and keep_previous:
            return Chunk(c.start + delta, c.end + delta,
                         [comp.shifted(delta) for comp in c.computations],
                         [Problem(p.start + delta, p.end + delta, p.message, p.severity,
                                  p.source) for p in c.problems])
        if delta:
            for comp in c.computations:
                comp.shift(delta)
            for p in c.problems:
                p.start += delta
                p.end += delta
            c.start += delta
            c.end += delta
        return c

    if window is not None:
        def by_window(start: int, end: int) -> Chunk | None:
            if end <= window.start:
                c = by_start.get(start)
                return c if c is not None and c.end == end else None
            if start >= window.new_end:
                delta = window.delta
                c = by_start.get(start - delta)
                return moved(c, delta) if c is not None and c.end == end - delta else None
            return None
        return by_window

    old_text = previous.text
    by_text = {old_text[c.start:c.end]: c for c in old}

    def by_text_lookup(start: int, end: int) -> Chunk | None:
        c = by_text.pop(text[start:end], None)
        return None if c is None else moved(c, start - c.start)
    return by_text_lookup


# ------------------------------------------------------------ quick answers --

def _instruction_on_line(text: str, offset: int) -> Instruction | None:
    start, end = LineIndex.bounds(text, offset)
    try:
        ins = parse_fragment(text[start:end], "instruction", start)
    except UnexpectedInput:
        return None
    return ins if isinstance(ins, Instruction) else None


def _name_pattern(name: str) -> str:
    return r"%?" + re.escape(name) + r"(?![\w.\-])"


_NAME_CHAR = re.compile(r"[\w.\-]")
_LINE_HEAD = re.compile(r"[ \t]*(?:ROOT[ \t]+)?%?")


def _mentions(text: str, name: str, start: int, end: int, definition: bool = False,
              keyword: bool = False):
    """Offsets in ``text[start:end]`` where ``name`` stands as a whole name
    (``%`` before it allowed); with ``definition`` only where it begins its line's
    instruction (``name =``, or with ``keyword`` the keyword ``ROOT``). A search
    for the literal name, checked at each hit: linear, and fast on megabytes."""
    after = re.compile(re.escape(name) + (r"[ \t]" if keyword else
                                         r"(?![\w.\-])[ \t]*=" if definition else
                                         r"(?![\w.\-])"))
    for m in after.finditer(text, start, end):
        at = m.start()
        if definition:
            line = LineIndex.bounds(text, at)[0]
            head = _LINE_HEAD.match(text, line, at)
            if head is not None and head.end() == at and (not keyword or "%" not in
                                                           text[line:at]):
                yield at
            continue
        before = at - 1 if at > 0 and text[at - 1] == "%" else at
        if before == 0 or not _NAME_CHAR.match(text, before - 1):
            yield at


def find_instruction(text: str, name: str, start: int, end: int) -> Instruction | None:
    """The instruction called ``name`` defined in ``text[start:end]`` (one
    computation), found by searching for ``name =`` at a line start
    (:func:`_mentions`) and confirmed by parsing that line with the grammar."""
    for at in _mentions(text, name, start, end, definition=True):
        ins = _instruction_on_line(text, at)
        if ins is not None and ins.name.name == name:
            return ins
    return None


def find_computation_head(text: str, name: str,
                          skeleton: Skeleton | None = None) -> tuple[int, int] | None:
    """Span of the name of computation ``name`` in its header line, confirmed by
    parsing the header with the grammar's ``computation_head`` rule. With a
    ``skeleton`` the candidate comes from its table of header names (no search)."""
    if skeleton is not None:
        head = skeleton.head_named(name)
        starts = [] if head is None else [head]
    else:
        pattern = re.compile(r"^(?:ENTRY[ \t]+)?" + _name_pattern(name)
                             + r"[ \t]*(?:\(|->|\{)", re.M)
        starts = [m.start() for m in pattern.finditer(text)]
    for start in starts:
        line_start, line_end = LineIndex.bounds(text, start)
        try:
            head = parse_fragment(text[line_start:line_end], "computation_head", line_start)
        except UnexpectedInput:
            continue
        ref = head[2]
        if ref.name == name:
            return ref.start, ref.end
    return None


def quick_definition(text: str, skeleton: Skeleton, offset: int) -> list[Span] | None:
    """Go-to-definition without a full parse, for an operand, a control
    predecessor or a computation reference at ``offset``; None for anything else
    (the caller then waits for the full analysis)."""
    ins = _instruction_on_line(text, offset)
    if ins is None:
        return None
    for ref in ins.uses():
        if ref.start <= offset <= ref.end:
            i = skeleton.chunk_index(offset)
            if i < 0:
                return None
            start, end = skeleton.bounds(i)
            target = find_instruction(text, ref.name, start, end)
            return [Span(target.name.start, target.name.end)] if target else None
    for cref in ins.called:
        if cref.ref.start <= offset <= cref.ref.end:
            head = find_computation_head(text, cref.ref.name, skeleton)
            return [Span(*head)] if head else None
    if ins.name.start <= offset <= ins.name.end and ins.parameter_number is None:
        return [Span(ins.name.start, ins.name.end)]
    return None


class ChunkCache:
    """Parsed chunks of one text for quick answers, least recently used first
    out: at most ``max_chars`` characters of chunk text are held parsed (a
    parsed chunk takes about 10x its text in memory), so hovering all over a
    100 MB dump keeps memory bounded. The module header (key -1) always stays."""

    def __init__(self, max_chars: int = 8 * 1024 * 1024) -> None:
        self.max_chars = max_chars
        self.chars = 0
        self._items: OrderedDict[int, tuple[int, list]] = OrderedDict()

    def get(self, key: int, size: int, parse_chunk) -> list:
        """The items of chunk ``key`` (``size`` characters), parsed by
        ``parse_chunk()`` if not held. Raises what ``parse_chunk`` raises."""
        held = self._items.get(key)
        if held is not None:
            self._items.move_to_end(key)
            return held[1]
        items = parse_chunk()
        self._items[key] = (size, items)
        self.chars += size
        while self.chars > self.max_chars and len(self._items) > 1:
            old_key, (old_size, _) = next(iter(self._items.items()))
            if old_key == -1:
                self._items.move_to_end(old_key)
                continue
            del self._items[old_key]
            self.chars -= old_size
        return items

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: int) -> bool:
        return key in self._items


#: A computation at least this long answers a quick hover from the lines it
#: needs (:func:`slim_computation`) rather than from a parse of all of it.
SLIM_CHARS = 64 * 1024
#: Most lines :func:`slim_computation` reads for the users of one instruction;
#: past it the whole computation is parsed (it is then needed anyway).
SLIM_MAX_USERS = 400
#: Most computations a quick hover reads besides the cursor's (those it calls,
#: directly or not).
MAX_QUICK_CALLEES = 64


def slim_computation(text: str, start: int, end: int, offset: int) -> Computation | None:
    """The computation ``text[start:end]`` holding only what a hover at
    ``offset`` reads of it: its header, the instruction on the cursor's line, the
    one the cursor names (that instruction or an operand's definition), that
    one's operands' definitions and its users, and the ROOT. Each line is found
    by searching the text and parsed alone with the grammar's ``instruction``
    rule, so a hover in a megabyte-long ENTRY costs milliseconds, not a parse of
    the whole computation. None when a line it needs does not parse on its own
    (an instruction over several lines, nested operands, an inline computation)
    or there are more than :data:`SLIM_MAX_USERS` user lines: the caller then
    parses the computation."""
    head_end = LineIndex.bounds(text, start)[1]
    head = try_parse(text[start:head_end].rstrip(), "computation_head", start)
    line_start, line_end = LineIndex.bounds(text, offset)
    ins = try_instruction(text[line_start:line_end], line_start)
    if head is None or ins is None or not start < line_start < end:
        return None
    found = {line_start: ins}

    def read(at: int) -> Instruction | None:
        a, b = LineIndex.bounds(text, at)
        got = found.get(a)
        if got is None:
            got = try_instruction(text[a:b], a)
            if got is not None:
                found[a] = got
        return got

    def defined(names) -> dict[str, Instruction] | None:
        """The first definition of each of ``names`` in the computation."""
        out: dict[str, Instruction] = {}
        for name in dict.fromkeys(names):
            for at in _mentions(text, name, head_end, end, definition=True):
                got = read(at)
                if got is None:
                    return None
                if got.name.name == name:
                    out[name] = got
                    break
        return out

    target = ins
    for ref in ins.uses():
        if ref.start <= offset <= ref.end:
            named = defined([ref.name])
            if named is None:
                return None
            target = named.get(ref.name, ins)
            break
    if defined(r.name for r in target.uses()) is None:
        return None
    # Users: every line naming the target; ROOT: the line that says so.
    lines = {LineIndex.bounds(text, at)[0]
             for at in _mentions(text, target.name.name, head_end, end)}
    root = next(_mentions(text, "ROOT", head_end, end, definition=True, keyword=True), None)
    if root is None or len(lines) >= SLIM_MAX_USERS:  # no ROOT: the last line is it
        return None
    lines.add(LineIndex.bounds(text, root)[0])
    for at in sorted(lines):
        if read(at) is None:
            return None
    _, is_entry, comp_name, params, result, _, body_start = head
    instructions = sorted(found.values(), key=lambda i: i.start)
    comp = Computation(comp_name, is_entry, params, result, start, body_start, end,
                       instructions)
    holder = weakref.ref(comp)
    for i in instructions:
        i._computation = holder
    return comp


def _chunk_items(text: str, skeleton: Skeleton, cache: ChunkCache, j: int) -> list:
    """The parsed items of chunk ``j`` of ``skeleton`` (-1: the module header
    and stack-frame tables), held in ``cache``. Raises UnexpectedInput when
    the chunk does not parse on its own."""
    if j < 0:
        prefix = text[:skeleton.prefix_end]
        return cache.get(j, len(prefix), lambda: parse_fragment(prefix, "start", 0)
                         if prefix.strip() else [])
    s, e = skeleton.bounds(j)
    return cache.get(j, e - s, lambda: parse_fragment(text[s:e], "start", s))


def _computation_at(text: str, skeleton: Skeleton, cache: ChunkCache, j: int, offset: int,
                    slim_from: int) -> Computation:
    """The computation of chunk ``j``, for a hover at ``offset`` in it: from
    :func:`slim_computation` when the chunk is ``slim_from`` characters or
    longer and not parsed already, else the whole chunk parsed (and held in
    ``cache``). Raises UnexpectedInput or ValueError when the chunk is not one
    computation that parses on its own."""
    s, e = skeleton.bounds(j)
    comp = slim_computation(text, s, e, offset) \
        if e - s >= slim_from and j not in cache else None
    if comp is None:
        [comp] = _chunk_items(text, skeleton, cache, j)
    return comp


def _fusion_caller(text: str, skeleton: Skeleton, comp: Computation,
                   cache: ChunkCache) -> Computation | None:
    """The computation holding the fusion that calls ``comp`` (``calls=`` its
    name), with at least that fusion in it: a hover in a fused computation says
    which kernel it is part of. None when no fusion calls it (an ENTRY never
    is: no search)."""
    if comp.is_entry:
        return None
    name = comp.name.name
    pattern = re.compile(r"calls=%?" + re.escape(name) + r"(?![\w.\-])")
    for m in pattern.finditer(text, skeleton.prefix_end):
        if comp.start <= m.start() < comp.end:
            continue
        j = skeleton.chunk_index(m.start())
        if j < 0:
            continue
        caller = _computation_at(text, skeleton, cache, j, m.start(), slim_from=0)
        ins = caller.instruction_at(m.start())
        if ins is not None and ins.opcode == "fusion":
            return caller
    return None


def partial_module(text: str, skeleton: Skeleton, offset: int,
                   cache: ChunkCache | None = None) -> HloModule | None:
    """A module holding only what a hover at ``offset`` needs: the header and
    stack-frame tables, the computation containing ``offset`` (in part, from
    :func:`slim_computation`, when it is :data:`SLIM_CHARS` or longer) and the
    computations it calls. None when those pieces do not parse on their own.
    ``cache`` keeps the parsed pieces for the next call on the same text."""
    cache = ChunkCache() if cache is None else cache
    i = skeleton.chunk_index(offset)
    if i < 0:
        return None
    items: list = []
    try:
        items.extend(_chunk_items(text, skeleton, cache, -1))
        comp = _computation_at(text, skeleton, cache, i, offset, slim_from=SLIM_CHARS)
        # the computations the instruction at the cursor (or the one it names)
        # calls, and theirs: a fusion's cost reads the reducer its fused scatter
        # applies
        at = comp.instruction_at(offset)
        named = [] if at is None else [at] + [
            comp.by_name[r.name] for r in at.uses()
            if r.start <= offset <= r.end and r.name in comp.by_name]
        wanted = sorted({c.ref.name for ins in named for c in ins.called})
        seen = set(wanted)
        for _ in range(MAX_QUICK_CALLEES):
            if not wanted:
                break
            head = find_computation_head(text, wanted.pop(0), skeleton)
            if head is None:
                continue
            for callee in _chunk_items(text, skeleton, cache, skeleton.chunk_index(head[0])):
                items.append(callee)
                more = sorted({c.ref.name for ins in getattr(callee, "instructions", ())
                               for c in ins.called} - seen)
                seen.update(more)
                wanted.extend(more)
        items.append(comp)
        caller = _fusion_caller(text, skeleton, comp, cache)
        if caller is not None:
            items.append(caller)
    except (UnexpectedInput, ValueError):
        return None
    module = HloModule(text)
    _assemble(module, items)
    module.computations.sort(key=lambda c: c.start)
    return module


__all__ = ["ChunkCache", "LineIndex", "Skeleton", "find_computation_head", "find_instruction",
           "parse_chunked", "partial_module", "quick_definition", "slim_computation"]
