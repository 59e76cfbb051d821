"""Time the readable-HLO features (issue 6) against the parse of a large dump.

Usage::

    /work/venv/bin/python benchmarks/gen_dump.py --out /tmp/big.txt   # ~4 MB, once
    /work/venv/bin/python benchmarks/bench_readable.py /tmp/big.txt

Prints seconds for: parse, semantic tokens (whole document and a 20,000-character
range), inlay hints (whole document and a range), readable view (with and without
inlined fusions) and kernel summary. Each feature runs ``--repeat`` times; the
best time is reported.
"""

from __future__ import annotations

import argparse
import time


def _best(fn, repeat: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def main() -> None:
    from hlo_lsp.features.inlay_hints import inlay_hints
    from hlo_lsp.features.semantic_tokens import semantic_tokens
    from hlo_lsp.syntax.parser import parse
    from hlo_lsp.features.readable import render
    from hlo_lsp.model.summary import kernel_summary
    from hlo_lsp.syntax.lines import LineIndex

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with open(args.file, encoding="utf-8") as f:
        text = f.read()
    parse_s, module = _best(lambda: parse(text), 1)
    lines = LineIndex(text)
    mid = len(text) // 2
    rows = [("parse", parse_s, f"{len(text) / 1e6:.2f} MB, "
             f"{module.instruction_count()} instructions")]
    s, data = _best(lambda: semantic_tokens(module, lines), args.repeat)
    rows.append(("semantic tokens, full", s, f"{len(data) // 5} tokens"))
    s, data = _best(lambda: semantic_tokens(module, lines, mid, mid + 20_000), args.repeat)
    rows.append(("semantic tokens, 20k-char range", s, f"{len(data) // 5} tokens"))
    s, hints = _best(lambda: inlay_hints(module), args.repeat)
    rows.append(("inlay hints, full", s, f"{len(hints)} hints"))
    s, hints = _best(lambda: inlay_hints(module, mid, mid + 20_000), args.repeat)
    rows.append(("inlay hints, 20k-char range", s, f"{len(hints)} hints"))
    for inline in (False, True):
        s, view = _best(lambda: render(module, inline_fusions=inline), args.repeat)
        rows.append((f"readable view, inline_fusions={inline}", s,
                     f"{len(view.line_offsets)} lines"))
    s, summary = _best(lambda: kernel_summary(module), args.repeat)
    rows.append(("kernel summary", s, summary.headline()))
    for name, seconds, what in rows:
        print(f"{name:<40} {seconds:8.3f} s   {what}")


if __name__ == "__main__":
    main()
