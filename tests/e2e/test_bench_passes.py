"""The pass-history benchmark of issue 44 (benchmarks/bench_passes.py) runs:
each of its measurements works on a real pass dump (examples/cpu_passes/)."""

from __future__ import annotations

import json

from benchmarks.bench_passes import main
from tests.helpers import EXAMPLES


def test_the_benchmark_measures_a_real_pass_dump(tmp_path, capsys):
    out = tmp_path / "figures.json"
    assert main(["--dir", str(EXAMPLES / "cpu_passes"), "--rounds", "1", "--json", str(out)]) == 0
    figures = json.loads(out.read_text())
    assert figures["snapshots"] == 24
    assert all(f["median"] > 0 for f in figures["figures"].values())
    assert "hlo-lsp passes / reading the files" in capsys.readouterr().out
