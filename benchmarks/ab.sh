#!/usr/bin/env bash
# Interleaved A/B of the speed and memory figures: this checkout ("new") against
# another checkout of hlo-lsp ("old", e.g. `git worktree add ../old 81ab155`, its
# benchmarks/out/ holding the same 4 MB dump). For each round, new then old:
# bench_first_hover, a 300-edit typing storm, bench_dumps and bench_parse, each
# with PYTHONPATH set to the checkout under test (the servers they start inherit
# it). Figures as JSON in OUTDIR, one file per benchmark, side and round.
#
#   benchmarks/ab.sh OLD_CHECKOUT [ROUNDS=2] [OUTDIR=benchmarks/out/ab]
set -u
old=$(cd "$1" && pwd); rounds=${2:-2}
new=$(cd "$(dirname "$0")/.." && pwd); out=${3:-$new/benchmarks/out/ab}
py=${PYTHON:-$new/.venv/bin/python}
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  for side in new old; do
    dir=$new; [ "$side" = old ] && dir=$old
    echo "== round $r $side $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
    run() { (cd "$dir" && PYTHONPATH="$dir" "$py" "$@" > /dev/null 2>&1) || echo "failed: $*"; }
    run benchmarks/bench_first_hover.py --runs 5 --json "$out/first_hover.$side.$r.json"
    run benchmarks/bench_storm.py --edits 300 --rate 5 --idle 5 --json "$out/storm300.$side.$r.json"
    run benchmarks/bench_dumps.py --runs 3 --json "$out/dumps.$side.$r.json"
    run benchmarks/bench_parse.py --repeat 3 --json "$out/parse.$side.$r.json"
  done
done
