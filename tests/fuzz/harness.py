"""A seeded fuzz harness: mutated HLO files through the real server over stdio.

Seeds are the files of the shared corpus (``../shared/corpus``, read only; see
its SOURCES.tsv) and of ``examples/`` (only ``examples/`` when the corpus is
absent). Each document is a seed file changed by one or two mutations (tokens
and lines deleted, duplicated or swapped, truncation, flipped bytes, CR / CRLF /
mixed line endings, tuples nested hundreds to ten thousand deep, lines of
100 KB and more, lone surrogates, huge metadata strings, :data:`INJECTIONS`
(Markdown, HTML, ESC, bidi, newlines) in op_name, op_type, source_file,
custom_call_target, backend_config and frontend_attributes), a quarter of them
with special files beside them (:class:`SpecialFiles`: FIFOs, ``/dev/zero``
links, sockets, a report replaced while read, named like the document's reports,
its other stage and an unopened document asked about), opened in the server
(``python -m hlo_lsp`` driven by pytest-lsp's client, with VS Code's
capabilities), then edited with random incremental ``didChange`` ranges (CRLF
positions included) between batches of every request the server answers.

Checked: the server never exits; every request is answered within
:data:`SLOW_S` seconds (times ``slow_factor``: 10 in the suite, where an answer
over its limit is reported as ``over budget`` and fails only past ten times it) (an answer counts from the request's sending to the
moment its last byte has been read from the server's stdout by the relay the
server runs behind, :mod:`tests.fuzz.relay`: the harness's own work, decoding
and checking answers and mutating texts, which an editor does not do, is left
out; :class:`LoopWatch` says how long it kept the harness busy, and
:class:`SpeedProbe` how fast the machine ran meanwhile) (``slow``; on
documents of a megabyte and more, within
:data:`SLOW_S_PER_MB` seconds per megabyte when that is longer: those requests
wait for the analysis of the whole document) and at all within
:data:`UNANSWERED_S` (``unanswered``); no error answer but ContentModified / RequestCancelled
(``errors``); no ``Traceback`` in the server's stderr (``tracebacks``); no
``window/showMessage`` of type Error (``error_popups``); no hover whose
Markdown renders an element the server does not write (an image, link, heading
or raw HTML) or holds a control character (``markup``, :func:`hover_markup`,
with markdown-it-py); every range, position,
semantic token and folding range lies inside the document per the
specification's line rules (``off_document``: lines end at ``\\n``, ``\\r\\n``
or ``\\r``; columns in UTF-16 code units; an independent implementation, not
``LineIndex``); the final diagnostics and outline equal those of a fresh server
that opened the final text (``mismatches``).

Every failure is reported with the seed and document number that reproduce it;
the first of each kind is written to the output directory as the text it
happened on, minimized line by line against a scratch server when it is a
request's failure, with a JSON file naming the request.

Run it: ``python -m tests.fuzz.harness --seconds 180 --seed 1`` (or
``benchmarks/fuzz.py``); ``HLO_LSP_FUZZ_SECONDS`` / ``HLO_LSP_FUZZ_SEED`` set
the defaults. With ``HLO_LSP_FUZZ_SERVER_LOG=1`` the servers log at INFO, and
the report says what each server logged while its answers over 2 s waited
(:func:`stall_cause`: a full garbage collection, another document's analysis,
the document's own, or nothing).
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import functools
import gc
import json
import os
import pathlib
import random
import re
import signal
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

import attrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, LanguageClient
from pygls.protocol import default_converter

from hlo_lsp.dump.names import is_non_hlo_dump_file
from hlo_lsp.lsp.messages import PASS_HISTORY_CHANGED
from tests.fuzz.relay import ANSWER_ID
from tests.helpers import rss_bytes

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CORPUS = ROOT.parent / "shared" / "corpus"

SLOW_S = 2.0
SLOW_S_PER_MB = 2.0
UNANSWERED_S = 30.0
#: The fuzz test of the suite (tests/fuzz/test_fuzz.py) fails on an answer only
#: when it took this many times its :func:`slow_limit`: the answers over their
#: limit are counted and reported (``over budget``), but a busy machine must not
#: fail the suite (issue 42). The command line's default is 1 (``--slow-factor``):
#: a long run on an idle machine counts every answer over its limit as ``slow``.
SUITE_SLOW_FACTOR = 10.0
#: The harness's event loop late by more than this counts as a stall (see LoopWatch).
STALL_S = 0.05
CONTENT_MODIFIED, REQUEST_CANCELLED = -32801, -32800
FAILURE_KINDS = ("crashes", "slow", "unanswered", "errors", "tracebacks", "error_popups",
                 "off_document", "mismatches", "markup")
TRACEBACK = "Traceback (most recent call last)"
#: Seed files larger than this are used as "a few large files" only.
LARGE = 1_000_000
#: The share of documents made from a large seed file (``--large-share``).
LARGE_SHARE = 0.04
#: ``--rig-nice``'s default: the niceness of the fresh server, the reference the
#: final answers are compared with, and of the harness's own thread once the
#: servers it times have started (:meth:`Fuzzer._run`). On a machine of two
#: processors the two of them used two fifths of the processor time of a run
#: with two lanes (seed 51, three minutes: harness 70 s, fresh server 61 s, the
#: lanes 90 and 80 s), at the priority of the servers whose answers are timed.
#: Neither is timed, and an editor runs neither; at niceness 10 they take what
#: the timed servers leave.
RIG_NICE = 10

# -------------------------------------------------------------------- lines ---
_BREAK = re.compile(r"\r\n|\r|\n")


class LoopWatch:
    """When the harness's own event loop was busy (checking a large answer,
    mutating a text of megabytes). Had the loop stamped the answers it reads,
    each stall would add to the times of the answers that arrive meanwhile;
    the relay (:mod:`tests.fuzz.relay`) stamps them instead, and the watch
    says how busy the harness was (its processor time is the servers' too) and
    how much of the answers over 2 s it overlapped. A task sleeps
    :data:`STALL_S` / 5 at a time; each wake-up later than :data:`STALL_S` is a
    stall, kept as (start, end) in monotonic seconds."""

    def __init__(self) -> None:
        self.stalls: list[tuple[float, float]] = []
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._watch())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _watch(self) -> None:
        tick = STALL_S / 5
        while True:
            t0 = time.monotonic()
            await asyncio.sleep(tick)
            late = time.monotonic() - t0 - tick
            if late > STALL_S:
                self.stalls.append((t0 + tick, t0 + tick + late))

    def within(self, t0: float, t1: float) -> float:
        """Seconds of stalls inside ``[t0, t1]`` (the stalls follow one another:
        their ends are in order too)."""
        total = 0.0
        for i in range(bisect.bisect_right(self.stalls, t0, key=lambda s: s[1]),
                       len(self.stalls)):
            a, b = self.stalls[i]
            if a >= t1:
                break
            total += min(b, t1) - max(a, t0)
        return total


class SpeedProbe:
    """How fast this machine runs Python, sampled through a run. On this
    project's virtual machines the same analysis takes 0.6 s for minutes, then
    1.1 s (the processor time doubles, not the waiting, and the kernel counts no
    steal time), which no figure of the run would otherwise show. A
    thread of the harness times, every :attr:`period` seconds, the processor
    time (``time.thread_time``: waiting for a processor or for the GIL does not
    count) of a fixed loop of dictionary and string work, the best of three; a
    sample's *speed* is the run's fastest sample divided by it (1.0: as fast as
    the machine ran at all, 0.5: everything took twice as long). The probe costs
    under 1% of a processor."""

    def __init__(self, period: float = 1.0) -> None:
        self.period = period
        #: (monotonic time, processor seconds of the loop)
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @staticmethod
    def _loop() -> float:
        """Processor seconds of the fixed loop (about 2 ms on this machine)."""
        t0 = time.thread_time()
        table: dict[int, str] = {}
        for i in range(2500):
            table[i % 97] = table.get(i % 89, "")[:8] + str(i)
        return time.thread_time() - t0

    def sample(self) -> float:
        """One sample: the best of three runs of the loop (processor seconds)."""
        return min(self._loop() for _ in range(3))

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="speed probe", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            self.samples.append((time.monotonic(), self.sample()))

    def speeds(self, t0: float = float("-inf"), t1: float = float("inf")) -> list[float]:
        """The speeds of the samples taken in ``[t0, t1]`` (monotonic seconds),
        against the fastest sample of the run so far."""
        best = min((s for _, s in self.samples), default=0.0)
        if best <= 0:
            return []
        lo = bisect.bisect_left(self.samples, t0, key=lambda s: s[0])
        hi = bisect.bisect_right(self.samples, t1, key=lambda s: s[0])
        return [best / s for _, s in self.samples[lo:hi]]


def utf16_len(s: str) -> int:
    """Length of ``s`` in UTF-16 code units (a lone surrogate is one unit)."""
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


class Lines:
    """The specification's lines of a text (independent of hlo_lsp's LineIndex):
    ``starts[i]``/``ends[i]`` are code-point offsets of line ``i`` without its
    terminator."""

    def __init__(self, text: str) -> None:
        self.text = text
        spans = [m.span() for m in _BREAK.finditer(text)]
        self.starts = [0, *(end for _, end in spans)]
        self.ends = [*(start for start, _ in spans), len(text)]
        self._units: dict[int, int] = {}

    @property
    def count(self) -> int:
        return len(self.starts)

    def units(self, line: int) -> int:
        """UTF-16 length of ``line`` (without its terminator)."""
        if line not in self._units:
            self._units[line] = utf16_len(self.text[self.starts[line]:self.ends[line]])
        return self._units[line]

    def offset(self, line: int, character: int) -> int:
        """Code-point offset of a position; a column past the line's end means
        the line's end, a line past the last line the end of the text (the
        specification's rules, as VS Code applies them)."""
        if line >= self.count:
            return len(self.text)
        start, end = self.starts[line], self.ends[line]
        if self.units(line) == end - start:  # no character outside the BMP
            return start + min(character, end - start)
        units = 0
        for i in range(start, end):
            if units >= character:
                return i
            units += 2 if ord(self.text[i]) > 0xFFFF else 1
        return end

    def position(self, offset: int) -> types.Position:
        """The position of a code-point offset."""
        lo, hi = 0, self.count - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        start = self.starts[lo]
        return types.Position(line=lo, character=utf16_len(self.text[start:min(offset, self.ends[lo])]))

    def inside(self, pos: Any) -> bool:
        """Whether a position lies in the document (column at most the line's length)."""
        line, ch = _get(pos, "line"), _get(pos, "character")
        return (isinstance(line, int) and isinstance(ch, int) and 0 <= line < self.count
                and 0 <= ch <= self.units(line))


@functools.lru_cache(maxsize=8)
def lines_of(text: str) -> Lines:
    """:class:`Lines` of ``text``, kept for the same text (a document's requests
    and batches between edits, its final check; a string's hash is computed once)."""
    return Lines(text)


def answers_stay_json(text: str) -> bool:
    """Whether the answers about ``text`` are left as JSON (see :func:`send`):
    those about a document of :data:`LARGE` characters and more."""
    return len(text) >= LARGE


def untyped(method: str) -> bool:
    """Whether lsprotocol leaves the result of ``method`` untyped (``LSPAny``:
    ``workspace/executeCommand`` and the server's own ``hlo/*`` requests).
    pygls would turn every JSON object of such a result into a namedtuple of a
    class made for it, which checks nothing and took a fifth of the harness's
    time (py-spy, two lanes)."""
    return method == types.WORKSPACE_EXECUTE_COMMAND or method.startswith("hlo/")


def slow_limit(chars: int) -> float:
    """Seconds a request about a document of ``chars`` characters may take."""
    return max(SLOW_S, SLOW_S_PER_MB * chars / 1e6)


_ANALYZED = re.compile(r" analyzed (\S+) v")
#: A full collection, logged by hlo_lsp.analysis.collector at INFO: seconds, and what it
#: left: objects, MB in malloc, Python's small-object blocks.
_COLLECTED = re.compile(r" full garbage collection in ([0-9.]+) s \((\d+) objects frozen"
                        r"(?:; (\S+) MB in malloc, (\d+) Python blocks)?\)")


def stall_cause(log: list[str], uri: str) -> str:
    """What a server logged (at INFO: ``hlo_lsp.analysis.documents`` and
    ``hlo_lsp.analysis.collector``) while a request about ``uri`` waited, in one of
    four words: "a full collection" (the collector holds the interpreter
    until it is done), "another document's analysis" (left over from a closed
    document or running for another one), "its own analysis", or "nothing"."""
    if any(_COLLECTED.search(line) for line in log):
        return "a full collection"
    analysed = {m.group(1) for line in log if (m := _ANALYZED.search(line))}
    if analysed - {uri}:
        return "another document's analysis"
    return "its own analysis" if analysed else "nothing"


def _get(obj: Any, name: str) -> Any:
    """Field ``name`` (lsprotocol's snake_case) of an lsprotocol object, or of the
    same value as JSON (its camelCase key: a large document's answers are left
    as JSON, see :func:`send`)."""
    if isinstance(obj, dict):
        return obj[name] if name in obj else obj.get(_camel(name))
    return getattr(obj, name, None)


@functools.lru_cache(maxsize=None)
def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)


#: Fields that hold a range, as lsprotocol and as JSON name them.
_RANGES = frozenset(n for f in ("range", "selection_range", "origin_selection_range",
                                "target_range", "target_selection_range")
                    for n in (f, _camel(f)))


def apply_change(text: str, change: types.TextDocumentContentChangePartial) -> str:
    """``text`` after one incremental change, per the specification."""
    lines = lines_of(text)
    start = lines.offset(change.range.start.line, change.range.start.character)
    end = lines.offset(change.range.end.line, change.range.end.character)
    return text[:start] + change.text + text[end:]


# ------------------------------------------------------------ range checking ---
_TOKENS = (types.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, types.TEXT_DOCUMENT_SEMANTIC_TOKENS_RANGE)


def off_document(result: Any, lines: Lines, uri: str, method: str) -> list[str]:
    """Descriptions of every range or position in ``result`` (a request's answer
    about document ``uri``) that is not inside the document."""
    bad: list[str] = []
    if method in _TOKENS and result is not None:
        data = list(_get(result, "data") or [])
        line = col = 0
        for i in range(0, len(data) - len(data) % 5, 5):
            dl, dc, length = data[i], data[i + 1], data[i + 2]
            line, col = line + dl, (col + dc if dl == 0 else dc)
            if not (0 <= line < lines.count and col + length <= lines.units(line)):
                bad.append(f"semantic token {i // 5} at {line}:{col} length {length}")
        if len(data) % 5:
            bad.append(f"semantic tokens: {len(data)} numbers, not a multiple of 5")
        return bad
    if method == types.TEXT_DOCUMENT_FOLDING_RANGE and result is not None:
        for r in result:
            s, e = _get(r, "start_line"), _get(r, "end_line")
            if not (0 <= s <= e < lines.count):
                bad.append(f"folding range {s}-{e} of {lines.count} lines")
        return bad

    def walk(obj: Any, doc_uri: str | None, path: str) -> None:
        if obj is None or isinstance(obj, (str, int, float, bool)):
            return
        if isinstance(obj, (list, tuple)):
            for i, x in enumerate(obj):
                walk(x, doc_uri, f"{path}[{i}]")
            return
        items = obj.items() if isinstance(obj, dict) else (
            (a.name, getattr(obj, a.name)) for a in attrs.fields(type(obj))) \
            if attrs.has(type(obj)) else ()
        here = _get(obj, "uri") or _get(obj, "target_uri") or doc_uri
        for name, value in items:
            if name in ("data", "command", "arguments"):
                continue
            if name in _RANGES:
                if here == uri and value is not None:
                    s, e = _get(value, "start"), _get(value, "end")
                    if not (lines.inside(s) and lines.inside(e)) or \
                            (_get(s, "line"), _get(s, "character")) > \
                            (_get(e, "line"), _get(e, "character")):
                        bad.append(f"{path}.{name} {_fmt(s)}-{_fmt(e)}")
            elif name == "position" and here == uri and value is not None:
                if not lines.inside(value):
                    bad.append(f"{path}.position {_fmt(value)}")
            else:
                walk(value, here, f"{path}.{name}")

    walk(result, uri, "result")
    return bad


def _fmt(pos: Any) -> str:
    return f"{_get(pos, 'line')}:{_get(pos, 'character')}"


# ------------------------------------------------------------------ seeds ---
def seed_files(corpus: pathlib.Path = CORPUS) -> list[pathlib.Path]:
    """The HLO files to mutate: those of the corpus (when present) and of
    examples/ whose first 64 KB hold ``HloModule`` or ``ENTRY`` (not the
    reports and logs beside them: :func:`hlo_lsp.dump.names.is_non_hlo_dump_file`),
    sorted."""
    candidates = []
    if corpus.is_dir():
        candidates += sorted(p for p in corpus.rglob("*") if p.is_file()
                             and p.suffix in (".txt", ".hlo"))
    candidates += sorted(EXAMPLES.rglob("*.txt"))
    out = []
    for p in candidates:
        if is_non_hlo_dump_file(p.name):
            # XLA's logs beside a dump that quote HLO (the priority-fusion
            # dump's module before fusion): the server does not read them as HLO
            continue
        with open(p, "rb") as f:
            head = f.read(65536)
        if b"HloModule" in head or b"ENTRY" in head:
            out.append(p)
    return out


# -------------------------------------------------------------- mutations ---
_TOKEN = re.compile(r"[%\w.\-\[\]{}$]+|\S")
_SHAPE = re.compile(r"\b(?:f32|f16|bf16|s32|u32|pred|s8|u8|f64|s64)\[[\d,]*\](?:\{[\d,]*\})?")
_INSTRUCTION = re.compile(r"^\s*(?:ROOT )?%?[\w.\-]+ = .*\)", re.M)


def _token_spans(text: str, rng: random.Random, n: int) -> list[tuple[int, int]]:
    if not text:
        return []
    spans = []
    for _ in range(n):
        m = _TOKEN.search(text, rng.randrange(len(text)))
        if m:
            spans.append(m.span())
    return spans


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def mutate(text: str, rng: random.Random) -> tuple[str, str]:
    """One random mutation of ``text``: (new text, what was done)."""
    kind = rng.choice(MUTATIONS)
    return kind(text, rng), kind.__name__


def delete_tokens(t, rng):
    for s, e in sorted(_token_spans(t, rng, rng.randint(1, 5)), reverse=True):
        t = t[:s] + t[e:]
    return t


def duplicate_tokens(t, rng):
    for s, e in sorted(_token_spans(t, rng, rng.randint(1, 5)), reverse=True):
        t = t[:e] + t[s:e] + t[e:]
    return t


def swap_tokens(t, rng):
    spans = sorted(set(_token_spans(t, rng, 2)))
    if len(spans) == 2 and spans[0][1] <= spans[1][0]:
        (a, b), (c, d) = spans
        t = t[:a] + t[c:d] + t[b:c] + t[a:b] + t[d:]
    return t


def delete_lines(t, rng):
    ls = _lines(t)
    for _ in range(rng.randint(1, 4)):
        if ls:
            del ls[rng.randrange(len(ls))]
    return "".join(ls)


def duplicate_lines(t, rng):
    ls = _lines(t)
    if ls:
        i = rng.randrange(len(ls))
        ls[i:i] = ls[i:i + rng.randint(1, 20)]
    return "".join(ls)


def swap_lines(t, rng):
    ls = _lines(t)
    if len(ls) > 1:
        i, j = rng.randrange(len(ls)), rng.randrange(len(ls))
        ls[i], ls[j] = ls[j], ls[i]
    return "".join(ls)


def truncate(t, rng):
    return t[:rng.randrange(len(t) + 1)]


def flip_bytes(t, rng):
    data = bytearray(t.encode("utf-8", "surrogatepass"))
    for _ in range(rng.randint(1, 8)):
        if data:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    # surrogateescape: undecodable bytes become lone surrogates, as an editor
    # may send them
    return bytes(data).decode("utf-8", "surrogateescape")


def line_endings(t, rng):
    how = rng.choice(["\r", "\r\n", "mixed"])
    if how != "mixed":
        return t.replace("\r\n", "\n").replace("\n", how)
    return "".join(line.rstrip("\r\n") + rng.choice(["\n", "\r\n", "\r"])
                   if line.endswith(("\n", "\r")) else line for line in _lines(t))


def deep_tuple(t, rng):
    depth = rng.choice([64, 101, 400, 1200, 10000])
    matches = list(_SHAPE.finditer(t))
    if not matches:
        return t + "\nENTRY %deep (p: " + "(" * depth + "f32[]" + ")" * depth + ") -> f32[] {\n" \
            "  ROOT %c = f32[] constant(0)\n}\n"
    m = rng.choice(matches)
    return t[:m.start()] + "(" * depth + m.group() + ")" * depth + t[m.end():]


def long_line(t, rng):
    size = rng.choice([100_000, 150_000, 300_000])
    filler = rng.choice(["x" * size, "%a.1, " * (size // 6), "(" * size, "{" * size,
                         '"' * size, "\\" * size, "f32[1,2]{1,0} " * (size // 14)])
    ls = _lines(t) or [""]
    i = rng.randrange(len(ls))
    ls.insert(i, filler + "\n")
    return "".join(ls)


def lone_surrogates(t, rng):
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(t) + 1)
        t = t[:i] + rng.choice(["\udc80", "\ud800", "\udfff", "\U0001F600", "\\udc80"]) + t[i:]
    m = re.search(r'source_file="', t)
    if m:
        t = t[:m.end()] + rng.choice(["\udc80", "\\udc80", "\ud83d"]) + t[m.end():]
    return t


def huge_metadata(t, rng):
    size = rng.choice([50_000, 200_000])
    value = rng.choice(["a" * size, "\\\"" * (size // 2), "/" * size])
    ms = list(_INSTRUCTION.finditer(t))
    if not ms:
        return t + f'\n%x = f32[] constant(0), metadata={{op_name="{value}"}}\n'
    m = rng.choice(ms)
    meta = rng.choice([f', metadata={{op_name="{value}" source_file="{value}" source_line=1}}',
                       f', backend_config="{value}"', f', frontend_attributes={{a="{value}"}}'])
    return t[:m.end()] + meta + t[m.end():]


#: The share of documents with special files beside them (:class:`SpecialFiles`).
SPECIAL_SHARE = 0.25
#: Text an attacker shipping a dump writes where a person reads it (issue 41):
#: Markdown (heading, link, remote image, emphasis, table), HTML, entities,
#: autolinks, terminal control, bidi overrides, line breaks, backtick runs.
INJECTIONS = (
    "x` \n\n# H [l](https://attacker.invalid/a) ![t](https://attacker.invalid/b.png) `y",
    "<img src=https://attacker.invalid/p.png onerror=alert(1)><script>alert(1)</script>",
    "<a href='https://attacker.invalid/c'>c</a><h1>head</h1><iframe src=x></iframe>",
    "\x1b]0;owned\x07\x1b[2J\x1b[31mred\x1b[0m",
    "\u202eevil\u2066txt.exe\u2069\u200f",
    "```\n# fenced\n```\n<h2>after</h2>",
    "a|b| c\n\n| x | y |\n|---|---|",
    "https://attacker.invalid/auto www.attacker.invalid <https://attacker.invalid/x>",
    "&lt;img src=x&gt; &#60;b&#62; &amp;",
    "*em* _u_ **b** [ref]\n\n[ref]: https://attacker.invalid/r",
    "\\`\\*` `` ``` ```` `",
    "\r\n- item\r1. one\n> quote\n===\u2028\u2029\x85",
)
#: The text fields of an instruction :func:`inject_text` writes into.
INJECTED_FIELDS = ("op_name", "op_type", "source_file", "custom_call_target",
                   "backend_config", "frontend_attributes")
_QUOTED_FIELD = re.compile(r'\b(op_name|op_type|source_file|custom_call_target|backend_config)='
                           r'"(?:[^"\\\n]|\\.)*"')


def hlo_quoted(s: str) -> str:
    """``s`` as an HLO quoted string: ``\\``, ``"`` and ``\\n`` escaped
    (xla/hlo/parser/hlo_lexer.cc), every other character (ESC, bidi, CR) as it is."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def inject_text(t, rng):
    """An :data:`INJECTIONS` string in a text field of one to three instructions:
    an existing op_name, op_type, source_file, custom_call_target or
    backend_config value replaced, or a field added (a backend_config as JSON
    holding the string, frontend_attributes)."""
    for _ in range(rng.randint(1, 3)):
        value = rng.choice(INJECTIONS)
        found = list(_QUOTED_FIELD.finditer(t))
        if found and rng.random() < 0.5:
            m = rng.choice(found)
            field_ = m.group(1)
            v = json.dumps({"name": value}) if field_ == "backend_config" and \
                rng.random() < 0.5 else value
            t = t[:m.start()] + f"{field_}={hlo_quoted(v)}" + t[m.end():]
            continue
        ms = list(_INSTRUCTION.finditer(t))
        if not ms:
            return t + f'\n%x = f32[] constant(0), metadata={{op_name={hlo_quoted(value)}}}\n'
        m = rng.choice(ms)
        field_ = rng.choice(INJECTED_FIELDS)
        q = hlo_quoted(value)
        extra = {"op_name": f", metadata={{op_name={q} source_file={q} source_line=1}}",
                 "op_type": f", metadata={{op_type={q} op_name={q}}}",
                 "source_file": f", metadata={{source_file={q} source_line=2}}",
                 "custom_call_target": f", custom_call_target={q}",
                 "backend_config": f", backend_config={hlo_quoted(json.dumps({'k': value}))}",
                 "frontend_attributes": f", frontend_attributes={{a={q}}}"}[field_]
        t = t[:m.end()] + extra + t[m.end():]
    return t


MUTATIONS = [delete_tokens, duplicate_tokens, swap_tokens, delete_lines, duplicate_lines,
             swap_lines, truncate, flip_bytes, line_endings, deep_tuple, long_line,
             lone_surrogates, huge_metadata, inject_text, inject_text]


def random_change(text: str, rng: random.Random) -> types.TextDocumentContentChangePartial:
    """A random incremental change of ``text``: a range (sometimes ending past a
    line's end or between ``\\r`` and ``\\n``) and a replacement."""
    lines = lines_of(text)
    a = rng.randrange(len(text) + 1)
    b = min(len(text), a + rng.choice([0, 0, 1, 2, 5, 20, 200]))
    start, end = lines.position(a), lines.position(b)
    if rng.random() < 0.1:  # past the end of the line: means the line's end
        end = types.Position(line=end.line, character=end.character + rng.randint(1, 3))
    crlf = [m.start() for m in re.finditer("\r\n", text[max(0, a - 2000):a + 2000])]
    if crlf and rng.random() < 0.15:  # between \r and \n: past the line's end
        at = lines.position(max(0, a - 2000) + rng.choice(crlf))
        start = end = types.Position(line=at.line, character=at.character + 1)
    words = _TOKEN.findall(text[max(0, a - 200):a + 200]) or ["%x"]
    new = rng.choice(["", "\n", "\r\n", "\r", rng.choice(words), " " + rng.choice(words),
                      "(", ")", "{", "}", "\udc80", "\U0001F600", ", ", "ROOT ",
                      text[a:b] * 2, "%p = f32[] parameter(0)\n"])
    return types.TextDocumentContentChangePartial(
        range=types.Range(start=start, end=end), text=new)


# ----------------------------------------------------- untrusted surroundings ---
#: What a special file beside a document is made as (issue 41 items 1 and 2).
SPECIAL_KINDS = ("fifo", "dev_zero", "socket", "replaced")
#: The names a special file takes beside ``X.txt``: its reports, and the other
#: optimization stage's dump.
SPECIAL_SUFFIXES = ("-buffer-assignment.txt", "-memory-usage-report.txt", "-live-range.txt",
                    "-buffer-assignment-values.txt")


class SpecialFiles:
    """Special files made beside a document's path (which the server reads for
    hover, ``hlo/memory`` and the counterparts): FIFOs, symlinks to
    ``/dev/zero``, Unix sockets, and a report replaced again and again, between a
    regular file and a FIFO, while the server may read it. :meth:`close`
    removes them."""

    def __init__(self, directory: pathlib.Path, name: str, rng: random.Random) -> None:
        self.paths: list[pathlib.Path] = []
        self._sockets: list[Any] = []
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        base = name[:-4] if name.endswith(".txt") else name
        names = [base + suffix for suffix in rng.sample(SPECIAL_SUFFIXES, rng.randint(1, 3))]
        if "after_optimizations" in name:
            names.append(name.replace("after_optimizations", "before_optimizations"))
        names.append(f"special{rng.randrange(10**6)}.hlo")  # a request about it unopened
        for n in names:
            self._make(directory / n, rng.choice(SPECIAL_KINDS))

    def _make(self, path: pathlib.Path, kind: str) -> None:
        import socket
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "dev_zero":
            path.symlink_to("/dev/zero")
        elif kind == "socket":
            if len(os.fsencode(path)) >= 100:  # sun_path's limit
                os.mkfifo(path)
            else:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.bind(str(path))
                self._sockets.append(sock)
        else:
            thread = threading.Thread(target=self._replace, args=(path,), daemon=True)
            thread.start()
            self._threads.append(thread)
        self.paths.append(path)

    def _replace(self, path: pathlib.Path) -> None:
        regular, fifo = path.with_name(path.name + ".r"), path.with_name(path.name + ".f")
        text = "BufferAssignment:\nallocation 0: size 4, parameter 0\n" * 2000
        while not self._stop.is_set():
            with contextlib.suppress(OSError):
                regular.write_text(text)
                os.replace(regular, path)
                time.sleep(0.002)
                os.mkfifo(fifo)
                os.replace(fifo, path)
            time.sleep(0.002)

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(5)
        for sock in self._sockets:
            sock.close()
        for path in self.paths:
            for p in (path, path.with_name(path.name + ".r"), path.with_name(path.name + ".f")):
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()


def injected_hover(uri: str, text: str, rng: random.Random) -> types.HoverParams | None:
    """A hover on the name of an instruction whose line holds an
    :data:`INJECTIONS` string (the hover shows its op_name, source_file,
    custom_call_target and backend_config), None when there is none."""
    spots = [m.start() for m in re.finditer(r"(?m)^[ \t]*(?:ROOT )?(%[\w.\-]+ = )"
                                            r"(?=[^\n]*(?:attacker\.invalid|\x1b|\u202e|```))",
                                            text)]
    if not spots:
        return None
    at = rng.choice(spots)
    at = text.index("%", at) + 1
    return types.HoverParams(_doc(uri), lines_of(text).position(at))


#: The elements a hover's Markdown renders to (headings, links, images, HTML
#: and block quotes come only from text the server did not escape).
HOVER_ELEMENTS = frozenset({"p", "strong", "em", "code", "pre", "ul", "ol", "li", "hr", "br",
                            "table", "thead", "tbody", "tr", "th", "td"})


def hover_markup(result: Any) -> list[str]:
    """What in a hover answer's Markdown, rendered by a CommonMark renderer
    (markdown-it-py, HTML allowed as VS Code's hover renderer sees it), is not
    what the server writes: elements beyond :data:`HOVER_ELEMENTS` (an ``<img>``,
    ``<a>``, heading, raw HTML), a control character. [] when markdown-it-py is
    not installed or the answer is empty."""
    try:
        import markdown_it
    except ImportError:
        return []
    contents = _get(result, "contents") if result is not None else None
    if contents is None:
        return []
    parts = contents if isinstance(contents, list) else [contents]
    md = "\n\n".join(p if isinstance(p, str) else str(_get(p, "value") or "") for p in parts)
    html = markdown_it.MarkdownIt("commonmark").enable("table").render(md)
    bad = sorted({tag for tag in re.findall(r"<([a-zA-Z][a-zA-Z0-9]*)", html)
                  if tag.lower() not in HOVER_ELEMENTS})
    out = [f"<{tag}> in the rendered hover" for tag in bad]
    controls = sorted({f"U+{ord(ch):04X}" for ch in md if not ch.isprintable() and ch != "\n"})
    if controls:
        out.append("control characters in the Markdown: " + ", ".join(controls[:5]))
    return out


# -------------------------------------------------------------- the client ---
@dataclass
class Published:
    """The diagnostics of one document as last published, with their version."""

    version: int | None
    diagnostics: list[types.Diagnostic]


def _register(ls, params):
    """client/(un)registerCapability, workspace/codeLens/refresh (the client
    declares VS Code's capabilities, refreshSupport among them: the server asks
    when a profile's first read ends after its answers) and hlo/passHistoryChanged
    (a dump directory whose history the harness asked for changed): accepted, as
    an editor does."""
    return None


class Server:
    """One ``python -m hlo_lsp`` over stdio, with pytest-lsp's client; its
    stderr is kept (``stderr``)."""

    def __init__(self, env: dict[str, str], nice: int | None = None) -> None:
        self.env = env
        #: the server's niceness (None: the harness's); see :mod:`tests.fuzz.relay`
        self.nice = nice
        self.client: LanguageClient | None = None
        self.stderr: list[str] = []
        #: when each line of ``stderr`` was read (monotonic s)
        self.stderr_read: list[float] = []
        #: the server logs at INFO (its analyses and full garbage collections)
        #: when ``HLO_LSP_FUZZ_SERVER_LOG`` is 1: see :meth:`log_between`
        self.log_info = env.get("HLO_LSP_FUZZ_SERVER_LOG") == "1"
        self.published: dict[str, Published] = {}
        self.changed = asyncio.Event()
        self.xla = env.get("HLO_LSP_FUZZ_XLA") == "1"
        #: request id -> when the relay had read the last byte of its answer
        #: (monotonic s; :mod:`tests.fuzz.relay`), as read from ``stamps``
        self.arrived: dict[str, float] = {}
        self._stamps: Any = None     # the relay's file of stamps, open for reading
        self._stamps_path = ""
        self._stamps_pending = ""    # its last line, until it is whole
        self._server_pid: int | None = None
        #: ids of requests whose answers stay JSON (see :func:`send`)
        self.raw: set[str] = set()
        #: their answers' results, until :func:`send` takes them
        self.raw_results: dict[str, Any] = {}

    async def start(self) -> None:
        client = LanguageClient(converter_factory=default_converter)
        features = dict(DEFAULT_CLIENT_FEATURES)

        def on_diagnostics(ls, params: types.PublishDiagnosticsParams) -> None:
            self._on_diagnostics(params)

        features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = on_diagnostics
        features[types.CLIENT_REGISTER_CAPABILITY] = _register
        features[types.CLIENT_UNREGISTER_CAPABILITY] = _register
        features[types.WORKSPACE_CODE_LENS_REFRESH] = _register
        features[PASS_HISTORY_CHANGED] = _register
        for method, func in features.items():
            client.feature(method)(func)
        # The server runs behind a relay that times its answers (tests/fuzz/relay.py):
        # the harness's loop, busy checking answers, would time them late.
        fd, stamps = tempfile.mkstemp(prefix="hlo-lsp-fuzz-stamps-")
        os.close(fd)
        self._stamps_path = stamps
        self._stamps = open(stamps, encoding="ascii")  # the relay writes it, from the start
        # pygls' own start_io: pytest-lsp's would forward stderr to ours
        await super(LanguageClient, client).start_io(
            sys.executable, "-m", "tests.fuzz.relay",
            *(["--nice", str(self.nice)] if self.nice is not None else []), stamps, "--",
            sys.executable, "-m", "hlo_lsp", *(["--log-level", "info"] if self.log_info else []),
            env=self.env)
        # pygls' reading task has been created but has not read yet: each body it
        # reads from here on is seen before it is decoded
        _set_aside_raw(client._server.stdout, self, client.protocol)
        self.client = client
        self._reader = asyncio.create_task(self._read_stderr(client._server))
        await client.initialize_session(types.InitializeParams(
            capabilities=client_capabilities("visual_studio_code"),
            initialization_options={"xlaDiagnostics": self.xla,
                                    "workspace": {"index": False}}))
        await self._warm_up()

    async def _warm_up(self) -> None:
        """One small document opened, hovered and closed: the grammar and the
        modules a first request loads are not timed as a request's."""
        uri = "file:///hlo-lsp-fuzz/warm-up.hlo"
        text = "HloModule m\n\nENTRY %main (p: f32[2]) -> f32[2] {\n" \
               "  ROOT %p = f32[2]{0} parameter(0)\n}\n"
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="hlo", version=1, text=text)))
        for method, params in requests_for(uri, text, random.Random(0), 20):
            await send(self, method, params)
        await self.diagnostics_for(uri, 1, 30)
        self.client.text_document_did_close(types.DidCloseTextDocumentParams(_doc(uri)))
        self.published.pop(uri, None)

    def _on_diagnostics(self, params: types.PublishDiagnosticsParams) -> None:
        self.published[params.uri] = Published(params.version, list(params.diagnostics))
        self.changed.set()

    async def _read_stderr(self, proc) -> None:
        # by chunks, not readline(): a line past the reader's limit (64 KiB)
        # would end the reading, and the server would block on a full pipe
        pending = bytearray()
        while chunk := await proc.stderr.read(1 << 16):
            pending += chunk
            end = pending.rfind(b"\n") + 1
            now = time.monotonic()
            for line in pending[:end].splitlines(keepends=True):
                self.stderr.append(line.decode("utf-8", "replace"))
                self.stderr_read.append(now)
            del pending[:end]
        if pending:
            self.stderr.append(pending.decode("utf-8", "replace"))
            self.stderr_read.append(time.monotonic())

    def log_between(self, t0: float, t1: float) -> list[str]:
        """The lines of the server's stderr read between monotonic times ``t0``
        and ``t1`` (a log line is read when the server has written it: the
        collection or analysis it reports ended in that window)."""
        return self.stderr[bisect.bisect_left(self.stderr_read, t0):
                           bisect.bisect_right(self.stderr_read, t1)]

    def read_stamps(self) -> None:
        """Take the relay's new stamps into :attr:`arrived` (the relay writes
        each before it passes the answer on: an answer received has its stamp
        in the file)."""
        if self._stamps is None:
            return
        data = self._stamps_pending + self._stamps.read()
        lines = data.split("\n")
        self._stamps_pending = lines.pop()
        for line in lines:
            key, _, value = line.partition(" ")
            if key == "pid":
                self._server_pid = int(value)
            elif value:
                self.arrived.setdefault(key, float(value))

    @property
    def pid(self) -> int | None:
        """The server's process id (not its relay's); None before it started."""
        if self.client is None:
            return None
        if self._server_pid is None:
            self.read_stamps()
        return self._server_pid

    @property
    def alive(self) -> bool:
        return self.client is not None and self.client._server.returncode is None

    async def stop(self) -> None:
        if self.client is None:
            return
        try:
            if self.alive:
                await asyncio.wait_for(self.client.shutdown_session(), 10)
        except Exception:  # noqa: BLE001 - a broken server is killed below
            pass
        proc = self.client._server
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        server_pid = self.pid
        if server_pid is not None:
            # the server ends when its stdin (the relay's) closes; a hung one is killed
            with contextlib.suppress(ProcessLookupError):
                os.kill(server_pid, signal.SIGKILL)
        if self._stamps is not None:
            self._stamps.close()
            self._stamps = None
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._stamps_path)
        try:
            await self.client.stop()
        except Exception as exc:  # noqa: BLE001 - e.g. its reader failed on a broken stream
            self.stderr.append(f"(the client's stop failed: {exc!r})\n")
        self._reader.cancel()

    async def diagnostics_for(self, uri: str, version: int, timeout: float,
                              quiet: float | None = None) -> Published | None:
        """The diagnostics published for ``version`` of ``uri``; None if none came
        within ``timeout``. The first publication of the version, or with
        ``quiet`` (default 0.3 s with XLA's verdict on, ``HLO_LSP_FUZZ_XLA=1``,
        which may be published after ours) the last one once no newer
        publication came for ``quiet`` seconds."""
        deadline = time.monotonic() + timeout
        if quiet is None:
            quiet = 0.3 if self.xla else 0.0
        while time.monotonic() < deadline:
            got = self.published.get(uri)
            if got is not None and got.version == version:
                if not quiet:
                    return got
                self.changed.clear()
                try:
                    await asyncio.wait_for(self.changed.wait(), quiet)
                    continue
                except asyncio.TimeoutError:
                    return self.published.get(uri)
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(),
                                       max(0.01, min(1.0, deadline - time.monotonic())))
            except asyncio.TimeoutError:
                pass
        return None




def _set_aside_raw(stdout: asyncio.StreamReader, server: "Server", protocol: Any) -> None:
    """Leave the answers of ``server.raw`` requests as JSON: each is decoded
    here (:func:`_set_aside`) before pygls sees it (``json.loads`` and cattrs
    into lsprotocol objects take longer than the server for answers of tens of
    thousands of items, and an editor does neither). pygls reads each message
    body with ``readexactly``; the id is in its first or last bytes. (When
    the answer arrived is the relay's stamp: :meth:`Server.read_stamps`.)"""
    read = stdout.readexactly

    async def readexactly(n: int) -> bytes:
        body = await read(n)
        for part in (body[:256], body[-256:]):
            for m in ANSWER_ID.finditer(part):
                msg_id = m.group(1).decode("utf-8", "replace")
                if msg_id in server.raw:
                    server.raw.discard(msg_id)
                    protocol._result_types.pop(msg_id, None)
                    body = _set_aside(body, msg_id, server.raw_results)
        return body

    stdout.readexactly = readexactly


def _set_aside(body: bytes, msg_id: str, results: dict[str, Any]) -> bytes:
    """The answer ``body`` to request ``msg_id`` with its result decoded here, as
    plain JSON, into ``results[msg_id]``, and replaced by null for pygls to read:
    pygls decodes every JSON object of a message through a Python hook, several
    seconds of the harness's time for the tens of thousands of objects of a large
    document's inlay hints, folding ranges or outline, during which it reads no
    other server's answers. An error answer is left to pygls."""
    message = json.loads(body)
    if not isinstance(message, dict) or "result" not in message:
        return body
    results[msg_id] = message["result"]
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": None}).encode()


def _doc(uri):
    return types.TextDocumentIdentifier(uri=uri)


def request_makers(uri: str, text: str, rng: random.Random) -> dict[str, Callable[[], Any]]:
    """Per request kind the server answers (the method, or
    ``workspace/executeCommand <command>``), a function that makes random
    params for one about ``uri``: at random places, mostly names, with the
    options of each kind drawn at random. Every request and command the server
    registers has one (``test_harness.py`` checks it against the server's
    registry), but ``hlo.recompile``, which runs the user's program."""
    lines = lines_of(text)
    names = [m.start() + 1 for m in re.finditer("%", text[:200_000])] or [0]

    def pos():
        off = rng.choice(names) if rng.random() < 0.7 else rng.randrange(len(text) + 1)
        return lines.position(off)

    def rng_range():
        a, b = sorted((pos(), pos()), key=lambda p: (p.line, p.character))
        return types.Range(start=a, end=b)

    def position_json() -> dict:
        p = pos()
        return {"line": p.line, "character": p.character}

    def graph_params() -> dict:
        params: dict[str, Any] = {"textDocument": {"uri": uri}, "page": rng.random() < 0.2}
        if rng.random() < 0.7:
            params["position"] = position_json()
        if rng.random() < 0.3:
            params["hops"] = rng.choice([0, 1, 3, 50])
        if rng.random() < 0.3:
            params["limit"] = rng.choice([1, 20, 200, 5000, 10**9])
        if rng.random() < 0.3:  # the picture as text (Neovim without a browser)
            params["format"] = "text"
        return params

    def profile_dir() -> str:
        # the document's own directory (a dump directory), nowhere, or not a path
        return rng.choice([os.path.dirname(urlparse(uri).path) or "/", "",
                           "/nonexistent/profiles", "relative/dir", "bad\x00path", "\udc80"])

    whole = types.Range(start=types.Position(line=0, character=0),
                        end=lines.position(len(text)))
    command = types.WORKSPACE_EXECUTE_COMMAND
    return {
        types.TEXT_DOCUMENT_HOVER: lambda: types.HoverParams(_doc(uri), pos()),
        types.TEXT_DOCUMENT_DEFINITION: lambda: types.DefinitionParams(_doc(uri), pos()),
        types.TEXT_DOCUMENT_REFERENCES: lambda: types.ReferenceParams(
            context=types.ReferenceContext(include_declaration=rng.random() < 0.5),
            text_document=_doc(uri), position=pos()),
        types.TEXT_DOCUMENT_DOCUMENT_SYMBOL: lambda: types.DocumentSymbolParams(_doc(uri)),
        types.TEXT_DOCUMENT_FOLDING_RANGE: lambda: types.FoldingRangeParams(_doc(uri)),
        types.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL: lambda: types.SemanticTokensParams(_doc(uri)),
        types.TEXT_DOCUMENT_SEMANTIC_TOKENS_RANGE: lambda: types.SemanticTokensRangeParams(
            _doc(uri), whole if rng.random() < 0.3 else rng_range()),
        types.TEXT_DOCUMENT_INLAY_HINT: lambda: types.InlayHintParams(
            _doc(uri), whole if rng.random() < 0.5 else rng_range()),
        types.TEXT_DOCUMENT_CODE_LENS: lambda: types.CodeLensParams(_doc(uri)),
        types.TEXT_DOCUMENT_DOCUMENT_LINK: lambda: types.DocumentLinkParams(_doc(uri)),
        types.TEXT_DOCUMENT_CODE_ACTION: lambda: types.CodeActionParams(
            _doc(uri), rng_range(), types.CodeActionContext(diagnostics=[])),
        types.WORKSPACE_SYMBOL: lambda: types.WorkspaceSymbolParams(
            query=rng.choice(["", "fusion", "main", "%", "\udc80", "x" * 1000])),
        "hlo/inlineRegions": lambda: {"textDocument": {"uri": uri}},
        "hlo/counterpart": lambda: {"textDocument": {"uri": uri}, "position": position_json()},
        "hlo/counterpartFiles": lambda: {"textDocument": {"uri": uri}},
        "hlo/workspaceStatus": lambda: None,
        "hlo/graph": graph_params,
        "hlo/memory": lambda: {"textDocument": {"uri": uri},
                               **({"format": "text"} if rng.random() < 0.3 else {})},
        command + " hlo.showSummary": lambda: types.ExecuteCommandParams(
            "hlo.showSummary", [uri, {"format": rng.choice(["markdown", "text"])}]),
        command + " hlo.readableView": lambda: types.ExecuteCommandParams(
            "hlo.readableView", [uri, {"inlineFusions": rng.random() < 0.5,
                                       "keepMetadata": rng.random() < 0.5}]),
        command + " hlo.compareDumps": lambda: types.ExecuteCommandParams(
            "hlo.compareDumps", [uri, uri]),
        command + " hlo.gotoCounterpart": lambda: types.ExecuteCommandParams(
            "hlo.gotoCounterpart", [uri, position_json()]),
        "hlo/profileRuns": lambda: {"textDocument": {"uri": uri},
                                    **({"path": profile_dir()} if rng.random() < 0.7 else {})},
        command + " hlo.loadProfile": lambda: types.ExecuteCommandParams(
            "hlo.loadProfile", [{"uri": uri, **({"path": profile_dir()}
                                                if rng.random() < 0.7 else {})}]),
        "hlo/passHistory": lambda: {"textDocument": {"uri": uri}},
        "hlo/passBlame": lambda: {"textDocument": {"uri": uri}, "position": position_json()},
    }


def requests_for(uri: str, text: str, rng: random.Random, n: int) -> list[tuple[str, Any]]:
    """``n`` random requests about ``uri`` (kind, params) of the kinds of
    :func:`request_makers`, no kind more than twice."""
    makers = request_makers(uri, text, rng)
    return [(k, makers[k]()) for k in rng.sample(list(makers) * 2, n)]


@dataclass
class Outcome:
    """What one request did: its answer or error, and how long it took."""

    method: str
    params: Any
    seconds: float
    result: Any = None
    error: str | None = None
    unanswered: bool = False
    #: when it was sent (monotonic s)
    sent: float = 0.0


async def send(server: Server, kind: str, params: Any, raw: bool = False,
               wait_s: float = UNANSWERED_S) -> Outcome:
    """Send one request (``kind`` is the method, or ``workspace/executeCommand
    <command>``) and time its answer. The answer is decoded into lsprotocol's
    types, which checks its form, unless ``raw``: then it is left as JSON (the
    answers about a document of megabytes, whose decoding cost the harness
    more than the server's work: their form is the one checked on smaller
    documents, made by the same code). The answers that lsprotocol does not
    type (``LSPAny``: :func:`untyped`) are always left as JSON. No answer
    within ``wait_s`` seconds is ``unanswered``."""
    method = kind.split(" ", 1)[0]
    raw = raw or untyped(method)
    msg_id = str(uuid.uuid4())
    t0 = time.monotonic()

    def seconds() -> float:
        server.raw.discard(msg_id)
        now = time.monotonic()
        server.read_stamps()
        return server.arrived.pop(msg_id, now) - t0

    if raw:
        server.raw.add(msg_id)
    fut = server.client.protocol.send_request_async(method, params, msg_id=msg_id)
    try:
        result = await asyncio.wait_for(asyncio.shield(fut), wait_s)
        result = server.raw_results.pop(msg_id, result)
        return Outcome(kind, params, seconds(), result, sent=t0)
    except asyncio.TimeoutError:
        return Outcome(kind, params, seconds(), unanswered=True, sent=t0)
    except JsonRpcException as exc:
        code = getattr(exc, "code", None)
        err = None if code in (CONTENT_MODIFIED, REQUEST_CANCELLED) else f"{code}: {exc}"
        return Outcome(kind, params, seconds(), error=err, sent=t0)
    except Exception as exc:  # noqa: BLE001 - e.g. the server exited
        return Outcome(kind, params, seconds(), error=f"{type(exc).__name__}: {exc}", sent=t0)


# ------------------------------------------------------------------ report ---
@dataclass
class Failure:
    """One failure: its kind, what happened, and what reproduces it."""

    kind: str
    detail: str
    seed: int
    document: int
    source: str
    text: str
    request: tuple[str, Any] | None = None
    history: list[str] = field(default_factory=list)


@dataclass
class Report:
    """Counts of one run and its failures."""

    seed: int
    seconds: float = 0.0
    lanes: int = 1
    #: the niceness of the fresh server and the harness (None: the caller's)
    rig_nice: int | None = None
    documents: int = 0
    edits: int = 0
    requests: int = 0
    #: special files made beside documents (:class:`SpecialFiles`), hover answers
    #: rendered as Markdown (:func:`hover_markup`)
    special_files: int = 0
    hovers_rendered: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FAILURE_KINDS, 0))
    failures: list[Failure] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    #: answers over their :func:`slow_limit` (a failure only past ``slow_factor``
    #: times it, then also counted as ``slow``)
    over_budget: int = 0
    slow_factor: float = 1.0
    #: request kind -> (longest answer in seconds, characters of that document)
    slowest: dict[str, tuple[float, int]] = field(default_factory=dict)
    #: answers over SLOW_S whatever the document's size (``slow`` counts those
    #: over :func:`slow_limit`), and over SLOW_S on documents under a megabyte
    over_2s: int = 0
    over_2s_small: int = 0
    #: request kind -> its answers over SLOW_S
    over_2s_by_kind: dict[str, int] = field(default_factory=dict)
    #: what the server logged while answers over SLOW_S waited (see
    #: :func:`stall_cause`; only with ``HLO_LSP_FUZZ_SERVER_LOG=1``) -> their number
    over_2s_during: dict[str, int] = field(default_factory=dict)
    #: document number -> its answers over SLOW_S: (seed file, characters, how the
    #: text was made (the first mutation), answers, longest in seconds); the report
    #: names the documents with the most
    over_2s_docs: dict[int, tuple[str, int, str, int, float]] = field(default_factory=dict)
    #: the harness's event-loop stalls (:class:`LoopWatch`): how many, their total
    #: and longest seconds, and their seconds inside answers over SLOW_S
    loop_stalls: int = 0
    loop_stalled_s: float = 0.0
    loop_longest_s: float = 0.0
    over_2s_loop_s: float = 0.0
    #: the machine's speed through the run (:class:`SpeedProbe`): the median and
    #: 10th percentile of the samples, and the median speed during each answer
    #: over SLOW_S (None when no sample fell inside it)
    speed_median: float | None = None
    speed_p10: float | None = None
    over_2s_speeds: list[float | None] = field(default_factory=list)
    #: the answer times (s) of requests about documents of :data:`LARGE` characters
    #: and more
    large_seconds: list[float] = field(default_factory=list)
    #: server ("lane 0", ..., "fresh") -> its resident memory in MB after its
    #: first document, the largest after any document, after its last
    memory: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    #: seconds the servers were left idle after the run (``--idle-seconds``), and
    #: server -> its resident memory in MB then
    idle_s: float = 0.0
    idle_memory: dict[str, float] = field(default_factory=dict)
    #: server -> what its last full collection left (server log at INFO): objects,
    #: MB in malloc, Python blocks, as logged (None: not logged)
    idle_objects: dict[str, tuple] = field(default_factory=dict)

    def note_memory(self, name: str, pid: int | None) -> None:
        """Record the resident memory of server ``name`` (process ``pid``) now."""
        mb = rss_bytes(pid) / 2**20 if pid else 0.0
        if not mb:
            return
        first, top, _ = self.memory.get(name, (mb, mb, mb))
        self.memory[name] = (first, max(top, mb), mb)

    def note_idle_memory(self, name: str, pid: int | None, log: list[str] = ()) -> None:
        """Record the resident memory of server ``name`` after the idle time, and
        the objects its last full collection left (from its ``log``, at INFO:
        ``HLO_LSP_FUZZ_SERVER_LOG=1``), which tell referenced objects from
        memory the allocator keeps (see :func:`hlo_lsp.analysis.collector.malloc_in_use`)."""
        mb = rss_bytes(pid) / 2**20 if pid else 0.0
        if mb:
            self.idle_memory[name] = mb
        for line in reversed(log):
            found = _COLLECTED.search(line)
            if found:
                self.idle_objects[name] = found.group(2, 3, 4)
                break

    def over_2s_by_document(self, top: int = 8) -> str:
        """The documents with the most answers over SLOW_S (then the longest)."""
        if not self.over_2s_docs:
            return ""
        ranked = sorted(self.over_2s_docs.items(), key=lambda kv: (-kv[1][3], -kv[1][4]))
        return (f"  documents with answers over {SLOW_S:.0f} s: {len(ranked)}; most: " + "; ".join(
            f"{doc} ({source[:60]}, {chars / 1e6:.1f} MB, {how[:40]}): {n}, longest {s:.2f} s"
            for doc, (source, chars, how, n, s) in ranked[:top]))

    def _large_line(self) -> str:
        """The answer times on documents of a megabyte and more: count, median,
        90th and 99th percentile."""
        t = sorted(self.large_seconds)
        if not t:
            return "  answers on documents of 1 MB and more: none"

        def q(p: float) -> float:
            return t[min(len(t) - 1, int(p * len(t)))]
        return (f"  answers on documents of 1 MB and more: {len(t)}, median {q(0.5):.2f} s, "
                f"p90 {q(0.9):.2f} s, p99 {q(0.99):.2f} s, longest {t[-1]:.2f} s")

    def _speed_line(self) -> str:
        """The machine's speed through the run and during the answers over SLOW_S."""
        if self.speed_median is None:
            return ""
        during = sorted(s for s in self.over_2s_speeds if s is not None)
        return (f"  the machine's speed (SpeedProbe: 1.0 is the fastest sample of the run): "
                f"median {self.speed_median:.2f}, 10th percentile {self.speed_p10:.2f}"
                + (f"; during the answers over {SLOW_S:.0f} s: median "
                   f"{during[len(during) // 2]:.2f}, {sum(s >= 0.8 for s in during)} of "
                   f"{len(self.over_2s_speeds)} at 0.8 and more" if during else ""))

    @property
    def failed(self) -> int:
        return sum(self.counts.values())

    def summary(self) -> str:
        rig = "" if self.rig_nice is None else f" (the rig at niceness {self.rig_nice})"
        head = (f"fuzz seed={self.seed}, {self.lanes} lane(s){rig}: {self.seconds:.0f} s, "
                f"{self.documents} documents, "
                f"{self.edits} edits, {self.requests} requests, "
                f"{self.special_files} special files, {self.hovers_rendered} hovers rendered; " +
                ", ".join(f"{k} {v}" for k, v in self.counts.items()))
        lines = [head, f"  answers over their limit ({SLOW_S:.0f} s, {SLOW_S_PER_MB:.0f} s per "
                       f"MB from 1 MB): {self.over_budget}" + (
                           f" (reported; slow counts those over {self.slow_factor:g}x it)"
                           if self.slow_factor != 1 else ""),
                 f"  answers over {SLOW_S:.0f} s: {self.over_2s} "
                       f"({self.over_2s_small} on documents under 1 MB)" + "".join(
                           f"; {kind} {n}" for kind, n in sorted(
                               self.over_2s_by_kind.items(), key=lambda kv: -kv[1])) + (
                           "; meanwhile the server logged: " + "; ".join(
                               f"{cause} {n}" for cause, n in sorted(
                                   self.over_2s_during.items(), key=lambda kv: -kv[1]))
                           if self.over_2s_during else ""),
                 self.over_2s_by_document(),
                 (f"  the harness's event loop stalled {self.loop_stalls} times over "
                  f"{STALL_S * 1000:.0f} ms, {self.loop_stalled_s:.1f} s in all, longest "
                  f"{self.loop_longest_s:.2f} s; inside answers over {SLOW_S:.0f} s: "
                  f"{self.over_2s_loop_s:.1f} s"),
                 self._speed_line(),
                 self._large_line(),
                 "  slowest answers: " + ", ".join(
            f"{k.split(' ')[-1]} {s:.2f} s ({n / 1e6:.1f} MB)"
            for k, (s, n) in sorted(self.slowest.items(), key=lambda kv: -kv[1][0])[:6])]
        lines = [line for line in lines if line]  # no line for documents when none
        if self.memory:
            idle = f", after {self.idle_s:.0f} s idle" if self.idle_memory else ""
            lines.append("  server memory (RSS in MB after the first document, largest, "
                         f"after the last{idle}): " + ", ".join(
                             f"{name} {a:.0f}/{b:.0f}/{c:.0f}" + (
                                 f"/{self.idle_memory[name]:.0f}"
                                 if name in self.idle_memory else "")
                             for name, (a, b, c) in sorted(self.memory.items())))
        if self.idle_objects:
            lines.append("  left by the last full collection (objects, MB in malloc, Python "
                         "blocks): " + ", ".join(
                             f"{name} " + "/".join(v or "?" for v in left)
                             for name, left in sorted(self.idle_objects.items())))
        for f in self.failures[:30]:
            req = f" ({f.request[0]})" if f.request else ""
            lines.append(f"  {f.kind}{req}: {f.detail[:300]} [seed {f.seed}, document "
                         f"{f.document}, from {f.source}]")
        if len(self.failures) > 30:
            lines.append(f"  ... {len(self.failures) - 30} more")
        lines += [f"  reproducer: {w}" for w in self.written]
        return "\n".join(lines)


@functools.lru_cache(maxsize=1)
def _converter():
    """pygls' converter (building one costs milliseconds: made once)."""
    return default_converter()


def _jsonable(obj: Any) -> Any:
    try:
        return _converter().unstructure(obj)
    except Exception:  # noqa: BLE001
        return repr(obj)


# -------------------------------------------------------------------- run ---
class Fuzzer:
    """Drives the servers; see the module docstring."""

    def __init__(self, seed: int, seconds: float, out: pathlib.Path,
                 files: list[pathlib.Path], minimize_s: float = 60.0,
                 tree: pathlib.Path = ROOT, lanes: int = 1,
                 large_share: float = LARGE_SHARE, idle_s: float = 0.0,
                 rig_nice: int | None = None, slow_factor: float = 1.0) -> None:
        self.seed, self.seconds, self.out, self.files = seed, seconds, out, files
        #: an answer fails as ``slow`` past this many times its slow_limit, and as
        #: ``unanswered`` without an answer in :meth:`wait_s`
        self.slow_factor = slow_factor
        #: the niceness of the fresh server and of the harness's thread during the
        #: run (:data:`RIG_NICE`); None: both keep the caller's. The thread keeps it
        #: after the run: the command line sets it, a caller that goes on does not
        self.rig_nice = rig_nice
        self.lanes = lanes
        self.large_share = large_share
        #: after the run, the servers are left idle this long before their memory
        #: is noted again: long enough for the server's idle collection
        #: (hlo_lsp.analysis.collector.ModelCollector, 10 s), what they hold then is
        #: what they keep, not garbage waiting for a collection
        self.idle_s = idle_s
        #: lane -> its server, kept alive for the idle time
        self._idle: dict[str, Server] = {}
        self.minimize_s = minimize_s
        self.env = dict(os.environ, PYTHONPATH=str(tree), PYTHONUNBUFFERED="1")
        self.report = Report(seed, lanes=lanes, rig_nice=rig_nice, slow_factor=slow_factor)
        self.watch = LoopWatch()
        self.probe = SpeedProbe()
        #: (sent, answered) of each answer over SLOW_S, for the probe's speeds
        self._over_2s_windows: list[tuple[float, float]] = []
        self.tmp = out / "docs"

    def wait_s(self, chars: int) -> float:
        """How long a request about a document of ``chars`` characters is waited
        for before it is ``unanswered``: :data:`UNANSWERED_S`, or longer when the
        slow limit allowed is longer."""
        return max(UNANSWERED_S, self.slow_factor * slow_limit(chars))

    def too_slow(self, seconds: float, chars: int) -> bool:
        """Whether an answer of ``seconds`` fails as ``slow``."""
        return seconds > self.slow_factor * slow_limit(chars)

    def fail(self, kind: str, detail: str, doc: int, source: str, text: str,
             request=None, history=()) -> None:
        self.report.counts[kind] += 1
        self.report.failures.append(Failure(kind, detail, self.seed, doc, source, text,
                                            request, list(history)))

    async def run(self) -> Report:
        """Fuzz for ``seconds``; the report of the run."""
        self.tmp.mkdir(parents=True, exist_ok=True)
        # The harness decodes answers of thousands of objects: at the collector's
        # default thresholds it walked its whole heap about once a second, up to
        # 0.15 s each time, with every server's answer waiting to be read and
        # stamped. What the harness keeps is frozen; the young generation is
        # collected every 50,000 allocations instead of 700.
        thresholds = gc.get_threshold()
        gc.freeze()
        gc.set_threshold(50_000, 20, 20)
        self.watch.start()
        self.probe.start()
        try:
            return await self._run()
        finally:
            self.watch.stop()
            self.probe.stop()
            self.note_speeds()
            stalls = self.watch.stalls
            self.report.loop_stalls = len(stalls)
            self.report.loop_stalled_s = sum(b - a for a, b in stalls)
            self.report.loop_longest_s = max((b - a for a, b in stalls), default=0.0)
            gc.set_threshold(*thresholds)
            gc.unfreeze()

    def note_speeds(self) -> None:
        """Put the probe's speeds into the report: through the run, and the
        median during each answer over SLOW_S."""
        speeds = sorted(self.probe.speeds())
        if not speeds:
            return
        self.report.speed_median = speeds[len(speeds) // 2]
        self.report.speed_p10 = speeds[len(speeds) // 10]
        for t0, t1 in self._over_2s_windows:
            inside = sorted(self.probe.speeds(t0, t1))
            self.report.over_2s_speeds.append(inside[len(inside) // 2] if inside else None)

    async def _run(self) -> Report:
        self._small = [p for p in self.files if p.stat().st_size < LARGE]
        self._large = [p for p in self.files if p.stat().st_size >= LARGE]
        self._next = 0
        fresh = Server(self.env, nice=self.rig_nice)
        await fresh.start()
        self._fresh = fresh
        servers = [Server(self.env) for _ in range(self.lanes)]
        await asyncio.gather(*(server.start() for server in servers))
        # From here on the harness's thread runs below the servers it times (and
        # so does a server it starts again after a crash: it inherits the niceness)
        if self.rig_nice is not None:
            _lower_this_thread(self.rig_nice)
        self._t0 = time.monotonic()
        try:
            await asyncio.gather(*(self._lane(f"lane {i}", server)
                                   for i, server in enumerate(servers)))
            self.report.seconds = time.monotonic() - self._t0
            if self._idle:
                await asyncio.sleep(self.idle_s)
                self.report.idle_s = self.idle_s
                for name, server in [*self._idle.items(), ("fresh", self._fresh)]:
                    self.report.note_idle_memory(name, server.pid, server.stderr)
        finally:
            self.report.seconds = self.report.seconds or time.monotonic() - self._t0
            for server in [*self._idle.values(), self._fresh]:
                await server.stop()
        try:
            await self.write_reproducers()
        except Exception as exc:  # noqa: BLE001 - the counts are reported anyway
            self.report.written.append(f"(writing the reproducers failed: {exc!r})")
        return self.report

    async def _lane(self, name: str, server: Server) -> None:
        """One server taking documents until the time is up. Lanes run side by
        side (each document is reproducible alone: its generator is seeded by
        the run's seed and its own number), sharing the fresh server. The
        memory of both servers is noted after each document. With an idle time
        the lane's server is left running for :meth:`_run` to measure."""
        try:
            while time.monotonic() - self._t0 < self.seconds:
                doc = self._next
                self._next += 1
                # each document has its own generator: seed and number reproduce it
                drng = random.Random(f"{self.seed}:{doc}")
                large = self._large and drng.random() < self.large_share
                pool = self._large if large else self._small
                source = drng.choice(pool)
                server = await self.document(server, doc, source, drng)
                self.report.documents += 1
                self.report.note_memory(name, server.pid)
                self.report.note_memory("fresh", self._fresh.pid)
        except BaseException:
            await server.stop()
            raise
        if self.idle_s and server.alive:
            self._idle[name] = server
        else:
            await server.stop()

    async def _restart_if_dead(self, server: Server, doc: int, source: str, text: str,
                               history: list[str]) -> Server:
        if server.alive:
            return server
        self.fail("crashes", f"server exited with {server.client._server.returncode}; "
                  f"stderr tail: {''.join(server.stderr[-5:])[-500:]}", doc, source, text,
                  None, history)
        await server.stop()
        new = Server(self.env, nice=server.nice)
        await new.start()
        return new

    async def document(self, server: Server, doc: int, source: pathlib.Path,
                       rng: random.Random) -> Server:
        text = source.read_text(encoding="utf-8", errors="surrogateescape")
        history = []
        for _ in range(rng.choice([1, 1, 2])):
            text, what = mutate(text, rng)
            history.append(what)
        uri = (self.tmp / f"doc{doc}.{source.name}").as_uri()
        special = None
        if rng.random() < SPECIAL_SHARE:
            special = SpecialFiles(self.tmp, f"doc{doc}.{source.name}", rng)
            self.report.special_files += len(special.paths)
            history.append("special files: " + ", ".join(p.name for p in special.paths))
        try:
            return await self._document(server, doc, source, rng, text, history, uri, special)
        finally:
            if special is not None:
                special.close()

    async def _document(self, server: Server, doc: int, source: pathlib.Path,
                        rng: random.Random, text: str, history: list[str], uri: str,
                        special: "SpecialFiles | None") -> Server:
        client = server.client
        version = 1
        versions = {1: text}
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="hlo", version=1, text=text)))
        errors_seen = len(client.messages)
        log_seen = len(server.stderr)
        steps = rng.randint(2, 6) if len(text) < LARGE else 2
        for _step in range(steps):
            if not server.alive:
                break
            if rng.random() < 0.5:
                # each change is about the text the ones before it left
                new, changes = text, []
                for _ in range(1 + rng.choice([0, 0, 1, 2])):
                    changes.append(random_change(new, rng))
                    new = apply_change(new, changes[-1])
                version += 1
                client.text_document_did_change(types.DidChangeTextDocumentParams(
                    types.VersionedTextDocumentIdentifier(uri=uri, version=version), changes))
                history.append(f"edit v{version}: " + json.dumps(
                    [_jsonable(c) for c in changes], ensure_ascii=True)[:2000])
                text = new
                versions[version] = text
                self.report.edits += 1
            batch = requests_for(uri, text, rng, rng.randint(2, 5))
            injected = injected_hover(uri, text, rng)
            if injected is not None:
                batch.append((types.TEXT_DOCUMENT_HOVER, injected))
            if special is not None and rng.random() < 0.5:
                # a document not open in the editor: the server reads it from disk
                unopened = special.paths[-1].as_uri()
                batch.append((types.TEXT_DOCUMENT_HOVER, types.HoverParams(
                    _doc(unopened), types.Position(line=0, character=0))))
            raw = answers_stay_json(text)
            wait_s = self.wait_s(len(text))
            outcomes = await asyncio.gather(*(send(server, k, p, raw, wait_s)
                                              for k, p in batch))
            self.report.requests += len(outcomes)
            lines = lines_of(text)
            for o in outcomes:
                self.judge(o, lines, uri, doc, source.name, text, history, server)
            new_log = server.stderr[log_seen:]
            log_seen = len(server.stderr)
            if any(TRACEBACK in line for line in new_log):
                self.fail("tracebacks", "".join(new_log)[-1500:], doc, source.name, text,
                          None, history + [f"requests: {[k for k, _ in batch]}"])
                self.report.failures[-1].request = ("batch", batch)
        server = await self._restart_if_dead(server, doc, source.name, text, history)
        if server.client is not client:  # restarted: nothing more to compare
            return server
        for msg in client.messages[errors_seen:]:
            if msg.type == types.MessageType.Error:
                self.fail("error_popups", msg.message, doc, source.name, text, None, history)
        await self.compare(server, self._fresh, uri, version, versions, doc, source.name, text,
                           history)
        client.text_document_did_close(types.DidCloseTextDocumentParams(_doc(uri)))
        self._fresh = await self._restart_if_dead(self._fresh, doc, source.name, text, history)
        return server

    def judge(self, o: Outcome, lines: Lines, uri: str, doc: int, source: str, text: str,
              history: list[str], server: Server | None = None) -> None:
        req = (o.method, o.params)
        if o.unanswered:
            self.fail("unanswered", f"{o.method}: no answer in {self.wait_s(len(text)):.0f} s", doc,
                      source, text, req, history)
            return
        slowest = self.report.slowest.get(o.method)
        if slowest is None or o.seconds > slowest[0]:
            self.report.slowest[o.method] = (o.seconds, len(text))
        if len(text) >= LARGE:
            self.report.large_seconds.append(o.seconds)
        if o.seconds > SLOW_S:
            self.report.over_2s += 1
            self.report.over_2s_loop_s += self.watch.within(o.sent, o.sent + o.seconds)
            self._over_2s_windows.append((o.sent, o.sent + o.seconds))
            self.report.over_2s_small += len(text) < LARGE
            kind = o.method.split(" ")[-1]
            self.report.over_2s_by_kind[kind] = self.report.over_2s_by_kind.get(kind, 0) + 1
            _, _, how, n, longest = self.report.over_2s_docs.get(doc, ("", 0, "", 0, 0.0))
            self.report.over_2s_docs[doc] = (source, len(text), how or (history or ["?"])[0],
                                             n + 1, max(longest, o.seconds))
            during = ""
            if server is not None and server.log_info:
                during = stall_cause(server.log_between(o.sent, o.sent + o.seconds), uri)
                self.report.over_2s_during[during] = self.report.over_2s_during.get(during, 0) + 1
                during = f"; meanwhile {during}"
        if o.seconds > slow_limit(len(text)):
            self.report.over_budget += 1
        if self.too_slow(o.seconds, len(text)):
            factor = f" x {self.slow_factor:g}" if self.slow_factor != 1 else ""
            self.fail("slow", f"{o.method}: {o.seconds:.1f} s on {len(text):,} characters "
                      f"(limit {slow_limit(len(text)):.1f} s{factor}){during}", doc, source,
                      text, req, history)
        if o.error:
            self.fail("errors", f"{o.method}: {o.error}", doc, source, text, req, history)
            return
        method = o.method.split(" ", 1)[0]
        bad = off_document(o.result, lines, uri, method)
        if bad:
            self.fail("off_document", f"{o.method}: {'; '.join(bad[:5])}", doc, source, text,
                      req, history)
        if method == types.TEXT_DOCUMENT_HOVER and o.result is not None:
            self.report.hovers_rendered += 1
            bad = hover_markup(o.result)
            if bad:
                self.fail("markup", f"{o.method}: {'; '.join(bad)}", doc, source, text, req,
                          history)

    async def compare(self, server: Server, fresh: Server, uri: str, version: int,
                      versions: dict[int, str], doc: int, source: str, text: str,
                      history: list[str]) -> None:
        """Final diagnostics (and outline) equal a fresh server's on the final text."""
        timeout = max(60 if len(text) >= LARGE else 20, self.wait_s(len(text)))
        got = await server.diagnostics_for(uri, version, timeout)
        if got is None:
            self.fail("mismatches", f"no diagnostics for the final version {version} within "
                      f"{timeout} s", doc, source, text, None, history)
            return
        for v, published in [(version, got)]:
            bad = off_document({"items": published.diagnostics}, lines_of(versions[v]),
                               uri, "diagnostics")
            if bad:
                self.fail("off_document", f"diagnostics: {'; '.join(bad[:5])}", doc, source,
                          text, None, history)
        raw = answers_stay_json(text)
        symbols = await send(server, types.TEXT_DOCUMENT_DOCUMENT_SYMBOL,
                             types.DocumentSymbolParams(_doc(uri)), raw)
        fresh.client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="hlo", version=1, text=text)))
        try:
            ref = await fresh.diagnostics_for(uri, 1, timeout)
            ref_symbols = await send(fresh, types.TEXT_DOCUMENT_DOCUMENT_SYMBOL,
                                     types.DocumentSymbolParams(_doc(uri)), raw)
        finally:
            fresh.client.text_document_did_close(types.DidCloseTextDocumentParams(_doc(uri)))
            fresh.published.pop(uri, None)

        def key(ds):
            return sorted((d.range.start.line, d.range.start.character, d.range.end.line,
                           d.range.end.character, d.message, d.severity, d.source) for d in ds)

        if ref is None:
            self.fail("mismatches", "the fresh server published no diagnostics", doc, source,
                      text, None, history)
        elif key(got.diagnostics) != key(ref.diagnostics) and key(
                (got := await server.diagnostics_for(uri, version, timeout, quiet=0.5)
                 or got).diagnostics) != key(ref.diagnostics):
            # (an edit's first publication checks the edited computation; the
            # module's own follows when it finds more: the last one counts)
            a, b = set(key(got.diagnostics)), set(key(ref.diagnostics))
            self.fail("mismatches", f"diagnostics after edits differ from a fresh open: only "
                      f"after edits {sorted(a - b)[:3]}, only fresh {sorted(b - a)[:3]}", doc,
                      source, text, None, history)
        if (symbols.result != ref_symbols.result if raw else
                _jsonable(symbols.result) != _jsonable(ref_symbols.result)):
            self.fail("mismatches", "documentSymbol after edits differs from a fresh open",
                      doc, source, text, None, history)
        server.published.pop(uri, None)

    # ------------------------------------------------------------ reproducers ---
    async def write_reproducers(self) -> None:
        """The first failure of each kind (and request method), minimized when it
        is one request's, as ``<out>/fuzz-<seed>-<n>.hlo`` plus ``.json``."""
        seen = set()
        firsts = []
        for f in self.report.failures:
            k = (f.kind, f.request[0] if f.request else None)
            if k not in seen:
                seen.add(k)
                firsts.append(f)
        if not firsts:
            return
        self.out.mkdir(parents=True, exist_ok=True)
        scratch: Server | None = None   # started for the first request to replay
        deadline = time.monotonic() + self.minimize_s
        try:
            for n, f in enumerate(firsts):
                text, request = f.text, f.request
                if request and (scratch is None or not scratch.alive):
                    if scratch is not None:
                        await scratch.stop()
                    scratch = Server(self.env)
                    await scratch.start()
                if request and request[0] == "batch":
                    request = await self._culprit(scratch, f.kind, text, request[1])
                if request and request[0] != "batch":
                    text = await self._minimize(scratch, f.kind, text, request, deadline)
                base = self.out / f"fuzz-{self.seed}-{n}"
                # lone surrogates as the three bytes UTF-8 would give them
                base.with_suffix(".hlo").write_bytes(text.encode("utf-8", "surrogatepass"))
                base.with_suffix(".json").write_text(json.dumps({
                    "kind": f.kind, "detail": f.detail[:5000], "seed": f.seed,
                    "document": f.document, "source": f.source,
                    "request": None if not request else
                    [request[0], _jsonable(request[1])] if request[0] != "batch" else
                    [[k, _jsonable(p)] for k, p in request[1]],
                    "history": f.history[-50:],
                    "reproduce": f"python -m tests.fuzz.harness --seed {f.seed} "
                                 f"--documents {f.document + 1}",
                }, indent=1, default=repr))
                self.report.written.append(str(base.with_suffix(".hlo")))
        finally:
            if scratch is not None:
                await scratch.stop()

    async def _fails(self, server: Server, kind: str, text: str, request) -> bool:
        """Whether opening ``text`` and sending ``request`` alone fails as ``kind``."""
        self._trial = getattr(self, "_trial", 0) + 1
        uri = (self.tmp / f"min{self._trial}.hlo").as_uri()
        log_seen = len(server.stderr)
        server.client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="hlo", version=1, text=text)))
        method, params = request
        params = _retarget(params, uri)
        try:
            o = await send(server, method, params, wait_s=self.wait_s(len(text)))
        finally:
            if server.alive:
                server.client.text_document_did_close(types.DidCloseTextDocumentParams(_doc(uri)))
        await asyncio.sleep(0.05)
        if kind == "crashes":
            return not server.alive
        if kind == "tracebacks":
            return any(TRACEBACK in line for line in server.stderr[log_seen:])
        if kind == "slow":
            return self.too_slow(o.seconds, len(text)) or o.unanswered
        if kind == "unanswered":
            return o.unanswered
        if kind == "errors":
            return o.error is not None
        if kind == "off_document":
            return not o.unanswered and o.error is None and bool(
                off_document(o.result, Lines(text), uri, method.split(" ", 1)[0]))
        return False

    async def _culprit(self, server: Server, kind: str, text: str, batch):
        """The request of a batch that alone reproduces the failure, else the batch."""
        for req in batch:
            if await self._fails(server, kind, text, req):
                return req
        return ("batch", batch)

    async def _minimize(self, server: Server, kind: str, text: str, request,
                        deadline: float) -> str:
        """``text`` with as many lines removed as keep the failure (ddmin on lines,
        until ``deadline``); positions in ``request`` are kept as they are."""
        if not await self._fails(server, kind, text, request):
            return text
        lines = text.splitlines(keepends=True)
        chunk = max(1, len(lines) // 2)
        while chunk >= 1 and time.monotonic() < deadline:
            i, removed = 0, False
            while i < len(lines) and time.monotonic() < deadline:
                trial = lines[:i] + lines[i + chunk:]
                if trial and await self._fails(server, kind, "".join(trial), request):
                    lines, removed = trial, True
                else:
                    i += chunk
                if not server.alive:
                    return "".join(lines)
            if not removed:
                chunk //= 2
        return "".join(lines)


def _lower_this_thread(nice: int) -> None:
    """Niceness ``nice`` for the calling thread only (Linux keeps one per thread:
    ``setpriority`` on the thread's id), unless its niceness is that or more
    already; threads and processes it starts later inherit it."""
    tid = threading.get_native_id()
    with contextlib.suppress(OSError):
        if os.getpriority(os.PRIO_PROCESS, tid) < nice:
            os.setpriority(os.PRIO_PROCESS, tid, nice)


def _retarget(params: Any, uri: str) -> Any:
    """``params`` about another document."""
    if isinstance(params, dict):
        return {k: ({"uri": uri} if k == "textDocument" else v) for k, v in params.items()}
    if isinstance(params, types.ExecuteCommandParams):
        args = [uri if isinstance(a, str) and a.startswith("file:") else a
                for a in params.arguments or []]
        return types.ExecuteCommandParams(params.command, args)
    if attrs.has(type(params)) and hasattr(params, "text_document"):
        return attrs.evolve(params, text_document=_doc(uri))
    return params


def main(argv: list[str] | None = None) -> int:
    """The command line: run, print the report, exit 1 on any failure."""
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.harness",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float,
                        default=float(os.environ.get("HLO_LSP_FUZZ_SECONDS", "60")))
    parser.add_argument("--seed", type=int,
                        default=int(os.environ.get("HLO_LSP_FUZZ_SEED", "0") or 0))
    parser.add_argument("--out", type=pathlib.Path,
                        default=pathlib.Path(os.environ.get("HLO_LSP_FUZZ_OUT", "fuzz-out")))
    parser.add_argument("--corpus", type=pathlib.Path, default=CORPUS)
    parser.add_argument("--minimize-seconds", type=float, default=60.0)
    parser.add_argument("--documents", type=int, default=0,
                        help="stop after this many documents (0: run for --seconds)")
    parser.add_argument("--lanes", type=int,
                        default=int(os.environ.get("HLO_LSP_FUZZ_LANES", "1") or 1),
                        help="servers fuzzed side by side (each with its own documents)")
    parser.add_argument("--large-share", type=float, default=LARGE_SHARE,
                        help="the share of documents made from a seed file of 1 MB and "
                             f"more (default {LARGE_SHARE}); a larger share measures the "
                             "answers on large documents in a shorter run")
    parser.add_argument("--rig-nice", type=int, default=RIG_NICE,
                        help="niceness of the fresh server and the harness, which are "
                             f"not timed (default {RIG_NICE}; -1: the caller's)")
    parser.add_argument("--slow-factor", type=float, default=1.0,
                        help="an answer fails as slow past this many times its limit "
                             f"({SLOW_S:g} s, {SLOW_S_PER_MB:g} s per MB from 1 MB; the "
                             f"suite's fuzz test uses {SUITE_SLOW_FACTOR:g}); the answers "
                             "over the limit itself are reported as 'over budget'")
    parser.add_argument("--idle-seconds", type=float, default=15.0,
                        help="after the run, leave the servers idle this long and note "
                             "their memory again (0: not at all)")
    args = parser.parse_args(argv)
    report = run(args.seed, args.seconds, args.out, seed_files(args.corpus),
                 args.minimize_seconds, args.documents, lanes=args.lanes,
                 large_share=args.large_share, idle_s=args.idle_seconds,
                 rig_nice=None if args.rig_nice < 0 else args.rig_nice,
                 slow_factor=args.slow_factor)
    print(report.summary())
    return 1 if report.failed else 0


def run(seed: int, seconds: float, out: pathlib.Path, files: list[pathlib.Path],
        minimize_s: float = 60.0, documents: int = 0, tree: pathlib.Path = ROOT,
        lanes: int = 1, large_share: float = LARGE_SHARE, idle_s: float = 0.0,
        rig_nice: int | None = None, slow_factor: float = 1.0) -> Report:
    """One fuzz run (blocking): its report. ``documents`` > 0 stops after that many;
    ``lanes`` servers are fuzzed side by side; ``large_share`` of the documents
    come from seed files of :data:`LARGE` characters and more; the servers' memory
    is noted again after ``idle_s`` seconds idle at the end; ``rig_nice``: see
    :class:`Fuzzer` (the calling thread keeps that niceness); an answer fails as
    ``slow`` past ``slow_factor`` times its :func:`slow_limit`."""
    fuzzer = Fuzzer(seed, seconds if not documents else 1e9, out, files, minimize_s, tree,
                    lanes=lanes, large_share=large_share, idle_s=idle_s, rig_nice=rig_nice,
                    slow_factor=slow_factor)
    if documents:
        original = fuzzer.document

        async def counted(*a):
            result = await original(*a)
            if fuzzer.report.documents + 1 >= documents:
                fuzzer.seconds = 0
            return result

        fuzzer.document = counted
    return asyncio.run(fuzzer.run())


if __name__ == "__main__":
    raise SystemExit(main())
