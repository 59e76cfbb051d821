"""The profile benchmark of issue 43 (benchmarks/bench_profile.py) runs: on a
small real profile it makes with ``hlo-lsp dump --profile``, each of its
measurements works (both readers and their references, the join, the server
with and without a profile), so docs/benchmarks.md's table can be regenerated.
No time is asserted."""

from __future__ import annotations

import asyncio

import pytest

from benchmarks.bench_profile import (MODULE, burst_session, busiest_op, first_hover,
                                      make_profile, one_in_process, server_session, table,
                                      time_join)
from hlo_lsp.dump.profiles import read_trace_json

pytest.importorskip("jax")
pytestmark = pytest.mark.slow


def test_every_measurement_of_the_profile_benchmark_runs(tmp_path):
    made = make_profile(tmp_path / "work", calls=2, steps=5)
    events = read_trace_json(str(made["trace"])).events
    assert events and {e.module for e in events} == {MODULE}
    procs = {kind: [one_in_process(kind, made[file])]
             for kind, file in (("trace", "trace"), ("json", "trace"), ("xplane", "xplane"),
                                ("import+visit", "xplane"), ("answer", "xplane"),
                                ("visit", "xplane"))}
    # both readers find the same executions; the references see every event
    assert procs["trace"][0]["items"] == procs["xplane"][0]["items"] == len(events)
    assert procs["answer"][0]["items"] == len(events)
    assert procs["visit"][0]["items"] >= len(events)
    assert procs["xplane"][0]["child_peak_rss"] > 0
    empty = tmp_path / "empty"
    empty.mkdir()
    needle = f"%{busiest_op(events)} ="
    servers = {"with": [asyncio.run(server_session(made["module"], made["dump"] / "profile",
                                                   needle, 3))],
               "without": [asyncio.run(server_session(made["module"], empty, needle, 3))]}
    assert servers["with"][0]["measured_shown"]
    assert not servers["without"][0]["measured_shown"]
    servers["burst"] = [asyncio.run(burst_session(made["module"], made["dump"] / "profile", 2))]
    servers["burst_without"] = [asyncio.run(burst_session(made["module"], empty, 2))]
    assert servers["burst"][0]["all_answered_s"] > 0
    before = made["module"].with_name(made["module"].name.replace("cpu_after_optimizations",
                                                                  "before_optimizations"))
    servers["before"] = [asyncio.run(first_hover(before, made["dump"] / "profile"))]
    servers["before_without"] = [asyncio.run(first_hover(before, empty))]
    figures = {"events": len(events), "trace_bytes": 1, "xplane_bytes": 1, "hovers": 3,
               "burst": 2, "procs": procs, "servers": servers, "join": time_join(events, None, 1),
               "join_program": None}
    rows = table(figures)
    assert len(rows) == 15 and all(row.count("|") >= 5 for row in rows)
