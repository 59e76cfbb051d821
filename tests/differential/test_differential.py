"""A fast, seeded subset of the differential test against XLA's parser
(benchmarks/differential.py; the full run is in docs/benchmarks.md and the
README's figures): single mutations of ../shared corpus files, XLA's verdict against
hlo-lsp's own diagnostics."""

from __future__ import annotations

import pytest

from hlo_lsp.syntax import xla as xla_oracle

if not xla_oracle.available():
    pytest.skip("jaxlib (XLA's parser) is not installed", allow_module_level=True)

from benchmarks.differential import MUTATIONS, Tally, accepted_files, run  # noqa: E402


@pytest.fixture(scope="module")
def tally(corpus_dir):
    oracle = xla_oracle.XlaOracle(timeout=30)
    try:
        files = accepted_files(oracle, corpus_dir, 12_000)
        assert len(files) > 100
        return run(oracle, files, seed=7, mutants=140, tally=Tally())
    finally:
        oracle.close()


def test_seeded_mutants_agree_with_xla(tally, capsys):
    total = sum(tally.mutants.values())
    rejects = sum(tally.xla_rejects.values())
    both = sum(tally.both_reject.values())
    same = sum(tally.same_line.values())
    false_accepts = sum(tally.false_accepts.values())
    false_rejects = sum(tally.false_rejects.values())
    with capsys.disabled():
        print(f"\ndifferential (seed 7): {total} mutants, XLA rejects {rejects}, false accepts "
              f"{false_accepts}, false rejects {false_rejects}, first error on XLA's line "
              f"{same}/{both}")
    assert set(tally.mutants) == set(MUTATIONS) and total == 140
    assert false_rejects == 0, [e for e in tally.examples if e[0] == "false reject"]
    assert same >= 0.85 * both


def test_false_accepts_at_most_two_percent(tally):
    rejects = sum(tally.xla_rejects.values())
    false_accepts = sum(tally.false_accepts.values())
    assert false_accepts <= 0.02 * rejects, [e for e in tally.examples if e[0] == "false accept"]
