"""Speed of the matcher that survives renames (hlo_lsp.model.matching, issue 44).

For each dump (default: the 4 MB CPU after-optimizations dump of
benchmarks/gen_dump.py, made when absent, and the largest after-optimizations
files of the shared corpus), the wall time (best of N, garbage collector paused
as the server and the command line run analyses) of
:func:`hlo_lsp.model.matching.match_structure` against:

- a second parse of the same text (every stage-1 fingerprint matches);
- the same text with every instruction and computation name changed (XLA's
  renaming passes, a recompile's renumbering);
- the same renamed text with every ``f32`` made ``bf16`` (no fingerprint but
  of integer and predicate subgraphs matches: the later stages pair the rest).

Each figure includes building both modules' graphs (fresh parses each time) and
is also given per MB of the old module's text: the project's budget is 2 s per MB.
Also reports how many instructions were paired with their renamed self.

    python benchmarks/bench_matcher.py [--dump PATH ...] [--repeat 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import gc
import json
import pathlib
import re
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hlo_lsp.model.matching import match_structure  # noqa: E402
from hlo_lsp.syntax.parser import parse  # noqa: E402

DEFAULT_DUMP = ROOT / "benchmarks" / "out" / "after_opt_4mb.txt"
CORPUS = ROOT.parent / "shared" / "corpus"
_NAME = re.compile(r"%([A-Za-z_][\w.\-]*)")


def _renamed(text: str) -> str:
    return _NAME.sub(r"%\1_r", text)


def measure(path: pathlib.Path, repeat: int) -> list[dict]:
    """One row per variant: name, seconds (best of ``repeat``), s/MB, pairs,
    pairs with their renamed (or same) self, instructions of the old module."""
    text = path.read_text()
    mb = len(text.encode()) / 1e6
    variants = {"itself": (text, ""), "renamed": (_renamed(text), "_r"),
                "renamed, f32 -> bf16": (_renamed(text).replace("f32[", "bf16["), "_r")}
    rows = []
    for label, (other, suffix) in variants.items():
        best, found = float("inf"), None
        for _ in range(repeat):
            a, b = parse(text), parse(other)
            gc.disable()
            try:
                t = time.perf_counter()
                found = match_structure(a, b)
                best = min(best, time.perf_counter() - t)
            finally:
                gc.enable()
        assert found is not None
        right = sum(1 for o, n in found.pairs if n.name.name == o.name.name + suffix)
        total = len(found.pairs) + len(found.removed)
        rows.append({"dump": path.name, "mb": round(mb, 3), "against": label,
                     "seconds": round(best, 3), "s_per_mb": round(best / mb, 3),
                     "pairs": len(found.pairs), "right": right, "instructions": total})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dump", action="append", type=pathlib.Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=pathlib.Path)
    args = ap.parse_args()
    dumps = args.dump
    if not dumps:
        if not DEFAULT_DUMP.exists():
            from benchmarks.gen_dump import generate
            DEFAULT_DUMP.parent.mkdir(parents=True, exist_ok=True)
            generate(str(DEFAULT_DUMP), 4.0)
        corpus = sorted(CORPUS.glob("*after_optimizations.txt"),
                        key=lambda p: -p.stat().st_size)[:2] if CORPUS.is_dir() else []
        dumps = [DEFAULT_DUMP, *corpus]
    rows = [row for d in dumps for row in measure(d, args.repeat)]
    for r in rows:
        print(f"{r['dump'][:60]:60} {r['mb']:6.2f} MB  vs {r['against']:22} "
              f"{r['seconds']:6.2f} s  {r['s_per_mb']:5.2f} s/MB  "
              f"{r['right']}/{r['instructions']} paired with their renamed self")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
