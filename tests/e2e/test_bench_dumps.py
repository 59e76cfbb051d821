"""The speed benchmark of issue 17 (benchmarks/bench_dumps.py) runs: its two
measurements work on a real dump, so the README's table can be regenerated."""

from __future__ import annotations

import asyncio

from benchmarks.bench_dumps import server_full_index, xla_in_own_process
from tests.helpers import TRAIN_AFTER


def test_both_sides_of_the_benchmark_measure_a_real_dump():
    xla = xla_in_own_process(TRAIN_AFTER)
    ours = asyncio.run(server_full_index(TRAIN_AFTER))
    # seconds, of a 60 KB dump: XLA's call alone (no interpreter start-up), and
    # a full analysis that published its diagnostics
    assert 0 < xla < 1.0
    assert 0 < ours < 10.0
