"""Differential test of hlo-lsp's diagnostics against XLA's own parser.

Takes the HLO files of a corpus that XLA's parser accepts, applies seeded single
mutations to each (:data:`MUTATIONS`), and compares, mutant by mutant, XLA's
verdict (jaxlib's parser in a worker process, :class:`hlo_lsp.syntax.xla.XlaOracle`:
an abort there is counted, never fatal) with hlo-lsp's own error diagnostics
(parser + semantic checks, without the XLA-verdict layer).

Reported: false rejects (XLA accepts, we report an error), false accepts (XLA
rejects, we report none), and, where both reject, how often our first error is
on XLA's line.

Usage::

    python benchmarks/differential.py --seed 1 --seed 2 --mutants 1200
    python benchmarks/differential.py --corpus ../shared/corpus --show 20
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hlo_lsp.features.diagnostics import diagnostics  # noqa: E402
from hlo_lsp.model.hlo import Severity  # noqa: E402
from hlo_lsp.syntax.lines import LineIndex  # noqa: E402
from hlo_lsp.syntax.parser import parse  # noqa: E402
from hlo_lsp.syntax.xla import XlaOracle  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus"
_TOKEN = re.compile(r"%?[A-Za-z_][\w.\-]*|-?\d+|\S")
_OPERANDS = re.compile(r"(?<=[\w\-])\(((?:%?[\w.\-]+)(?:, *%?[\w.\-]+)*)\)")
_DIM = re.compile(r"(?<=[\[,])\d+(?=[\],])")
_CALLED = re.compile(r"(?:calls|to_apply|body|condition|select|scatter|comparator)=%?([\w.\-]+)")
_OPCODE = re.compile(r"(?<= )([a-z][a-z\-]*)(?=\()")
_OPCODES = ("add", "multiply", "negate", "bitcast", "copy", "reduce", "tuple", "broadcast",
            "reshape", "convert", "select", "dot", "fusion", "exponential", "slice")


def _delete_token(text: str, rng: random.Random) -> str | None:
    toks = list(_TOKEN.finditer(text))
    if not toks:
        return None
    m = rng.choice(toks)
    return text[:m.start()] + text[m.end():]


def _duplicate_operand(text: str, rng: random.Random) -> str | None:
    found = list(_OPERANDS.finditer(text))
    if not found:
        return None
    m = rng.choice(found)
    first = m.group(1).split(",")[0].strip()
    return text[:m.end(1)] + ", " + first + text[m.end(1):]


def _change_dimension(text: str, rng: random.Random) -> str | None:
    found = list(_DIM.finditer(text))
    if not found:
        return None
    m = rng.choice(found)
    new = str(int(m.group()) + rng.choice((1, 2, 7)))
    return text[:m.start()] + new + text[m.end():]


def _rename_called(text: str, rng: random.Random) -> str | None:
    found = list(_CALLED.finditer(text))
    if not found:
        return None
    m = rng.choice(found)
    return text[:m.end(1)] + "_x" + text[m.end(1):]


def _drop_brace(text: str, rng: random.Random) -> str | None:
    found = [i for i, c in enumerate(text) if c == "}"]
    if not found:
        return None
    i = rng.choice(found)
    return text[:i] + text[i + 1:]


def _replace_opcode(text: str, rng: random.Random) -> str | None:
    found = list(_OPCODE.finditer(text))
    if not found:
        return None
    m = rng.choice(found)
    return text[:m.start()] + rng.choice(_OPCODES) + text[m.end():]


def _swap_lines(text: str, rng: random.Random) -> str | None:
    lines = text.split("\n")
    body = [i for i, line in enumerate(lines) if "=" in line and "HloModule" not in line]
    if len(body) < 2:
        return None
    i = rng.choice(body[:-1])
    lines[i], lines[i + 1] = lines[i + 1], lines[i]
    return "\n".join(lines)


MUTATIONS = {
    "delete token": _delete_token, "duplicate operand": _duplicate_operand,
    "change dimension": _change_dimension, "rename called computation": _rename_called,
    "drop }": _drop_brace, "replace opcode": _replace_opcode, "swap lines": _swap_lines,
}


@dataclass
class Tally:
    """Counts per mutation kind; ``examples`` keeps a few disagreements."""

    mutants: Counter = field(default_factory=Counter)
    xla_rejects: Counter = field(default_factory=Counter)
    false_accepts: Counter = field(default_factory=Counter)
    false_rejects: Counter = field(default_factory=Counter)
    both_reject: Counter = field(default_factory=Counter)
    same_line: Counter = field(default_factory=Counter)
    aborts: Counter = field(default_factory=Counter)
    examples: list = field(default_factory=list)


def accepted_files(oracle: XlaOracle, corpus: Path, max_bytes: int) -> list[tuple[str, str]]:
    """(name, text) of the corpus files up to ``max_bytes`` that XLA accepts."""
    out = []
    for path in sorted(corpus.rglob("*")):
        if not path.is_file() or path.suffix not in (".hlo", ".txt", ".hlotxt"):
            continue
        if path.stat().st_size > max_bytes:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        verdict = oracle.check(text)
        if verdict is not None and verdict.ok:
            out.append((path.name, text))
    return out


def our_errors(text: str):
    """hlo-lsp's own error diagnostics of ``text`` (no XLA verdict)."""
    return [p for p in diagnostics(parse(text)) if p.severity == Severity.ERROR]


def run(oracle: XlaOracle, files: list[tuple[str, str]], seed: int, mutants: int,
        tally: Tally | None = None) -> Tally:
    """Make ``mutants`` seeded single mutations of ``files`` and compare verdicts."""
    tally = tally or Tally()
    rng = random.Random(seed)
    kinds = sorted(MUTATIONS)
    made = 0
    attempts = 0
    while made < mutants and attempts < mutants * 5:
        attempts += 1
        name, text = rng.choice(files)
        kind = kinds[made % len(kinds)]
        mutant = MUTATIONS[kind](text, rng)
        if mutant is None or mutant == text:
            continue
        made += 1
        tally.mutants[kind] += 1
        verdict = oracle.check(mutant)
        if verdict is None:
            tally.aborts[kind] += 1
            continue
        errors = our_errors(mutant)
        if verdict.ok:
            if errors:
                tally.false_rejects[kind] += 1
                tally.examples.append(("false reject", kind, name, errors[0].message))
            continue
        tally.xla_rejects[kind] += 1
        if not errors:
            tally.false_accepts[kind] += 1
            tally.examples.append(("false accept", kind, name,
                                   f"{verdict.line}:{verdict.column} {verdict.message[:100]}"))
            continue
        tally.both_reject[kind] += 1
        first = min(errors, key=lambda p: p.start)
        if LineIndex(mutant).line_of(first.start) == verdict.line - 1:
            tally.same_line[kind] += 1
        else:
            tally.examples.append(("other line", kind, name,
                                   f"XLA {verdict.line}: {verdict.message[:80]} | ours "
                                   f"{LineIndex(mutant).line_of(first.start) + 1}: "
                                   f"{first.message[:80]}"))
    return tally


def table(tally: Tally) -> str:
    """The tally as a Markdown table, a row per mutation kind and a total."""
    rows = ["| mutation | mutants | XLA aborts | XLA rejects | false accepts | "
            "false rejects | first error on XLA's line |",
            "|---|---:|---:|---:|---:|---:|---:|"]

    def row(label, keys):
        def s(c):
            return sum(c[k] for k in keys)
        both = s(tally.both_reject)
        rej = s(tally.xla_rejects)
        fa = s(tally.false_accepts)
        rows.append(f"| {label} | {s(tally.mutants)} | {s(tally.aborts)} | {rej} | "
                    f"{fa} ({100 * fa / max(rej, 1):.1f}%) | {s(tally.false_rejects)} | "
                    f"{s(tally.same_line)}/{both} ({100 * s(tally.same_line) / max(both, 1):.1f}%) |")
    for kind in sorted(tally.mutants):
        row(kind, [kind])
    row("**all**", list(tally.mutants))
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--seed", type=int, action="append")
    ap.add_argument("--mutants", type=int, default=1000, help="per seed")
    ap.add_argument("--max-bytes", type=int, default=40_000,
                    help="only corpus files up to this size (XLA's parse time)")
    ap.add_argument("--show", type=int, default=0, help="print this many disagreements")
    args = ap.parse_args(argv)
    oracle = XlaOracle(timeout=30)
    try:
        files = accepted_files(oracle, args.corpus, args.max_bytes)
        print(f"{len(files)} corpus files XLA accepts (<= {args.max_bytes} bytes)")
        tally = Tally()
        for seed in args.seed or [1, 2]:
            run(oracle, files, seed, args.mutants, tally)
    finally:
        oracle.close()
    print(table(tally))
    for ex in tally.examples[:args.show]:
        print(" | ".join(ex))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
