"""Issue 43's acceptance on the command line: a real CPU trace of a JAX program
(a convolution, a sort, a while loop, a conditional), written outside the
repository at test time (tests/helpers.real_cpu_profile), joined to the dump's
after-optimizations file by `hlo-lsp summary --profile --json`, `diff`,
`profile` (and its Model Explorer export) and `graph`. The expected numbers are
summed directly from the trace's events (tests/helpers.trace_event_sums: gzip
+ json, not hlo-lsp's reader). Runs JAX on the CPU (slow)."""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from tests.helpers import trace_event_sums

pytest.importorskip("jax")
pytestmark = pytest.mark.slow

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def real(real_cpu):
    return real_cpu  # made once per session (tests/e2e/conftest.py)


def hlo_lsp(*args: str, ok: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "hlo_lsp", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=300)
    if ok:
        assert done.returncode == 0, done.stderr
    return done


def measured_entries(data: dict) -> dict[str, dict]:
    out = {k["name"]: k["measured"] for k in data["kernels"] if "measured" in k}
    for row in data["control_flow"] + data["other_measured"]:
        out[row["name"]] = row["measured"]
    return out


def test_summary_json_gives_each_measured_instruction_the_trace_events_count_and_total(real):
    expected = trace_event_sums(real.trace, "jit_net")
    assert {"while.9", "cond.1.clone", "sort.0", "convolution"} <= set(expected)
    data = json.loads(hlo_lsp("summary", real.module, "--profile", real.profile, "--json").stdout)
    plain = json.loads(hlo_lsp("summary", real.module, "--json").stdout)
    assert set(plain) < set(data)            # what summary --json has, and the profile's
    assert [k["name"] for k in data["kernels"]] == [k["name"] for k in plain["kernels"]]
    assert pathlib.Path(data["profile"]["path"]).parent == real.trace.parent  # its xplane
    assert data["profile"]["run"] == real.trace.parent.name
    assert data["profile"]["executions"] == real.executions
    measured = measured_entries(data)
    assert set(measured) == set(expected)   # every instruction the trace measures, no other
    for op, (count, total) in expected.items():
        assert measured[op]["count"] == count, op
        assert measured[op]["total_us"] == pytest.approx(total, rel=0.01), op
        assert 0 <= measured[op]["self_us"] <= measured[op]["total_us"] + 1e-6
    # the kernels' contract: exactly count, total_us and self_us
    assert all(set(k["measured"]) == {"count", "total_us", "self_us"}
               for k in data["kernels"] if "measured" in k)
    loop = next(r for r in data["control_flow"] if r["name"] == "while.9")
    assert loop["opcode"] == "while" and loop["measured"]["self_us"] < loop["measured"]["total_us"]
    # the directory holding the profile (a run chosen by name), plugins/profile, the run
    for where in ((real.root, "--run", real.trace.parent.name),
                  (real.profile / "plugins" / "profile",), (real.trace.parent,)):
        again = json.loads(hlo_lsp("summary", real.module, "--profile", *where,
                                   "--json").stdout)
        assert measured_entries(again) == measured and again["profile"] == data["profile"]
    done = hlo_lsp("summary", real.module, "--profile", real.root, "--run", "no_such_run",
                   ok=False)
    assert done.returncode != 0 and real.trace.parent.name in done.stderr


def test_summary_text_sorts_kernels_by_measured_time_and_calls_out_the_furthest(real):
    out = hlo_lsp("summary", real.module, "--profile", real.profile, "--top", "50").stdout
    assert f"measured in profile {real.trace.parent.name} (/host:CPU)" in out
    assert f"{real.executions} executions" in out
    table = out.split("Kernels by measured time", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    expected = trace_event_sums(real.trace, "jit_net")
    names = [line.split()[1].lstrip("%") for line in table]
    totals = [expected[n][1] for n in names]
    assert totals == sorted(totals, reverse=True)
    assert "Furthest from their roofline" in out
    assert "%while.9" in out and "%cond.1.clone" in out


def test_a_profile_of_another_compile_of_the_same_module_is_refused_naming_both(real):
    done = hlo_lsp("summary", real.other_module, "--profile", real.profile, "--json", ok=False)
    assert done.returncode != 0 and done.stdout == ""
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1 and "Traceback" not in line
    assert "jit_net" in line and real.other_module.name.split(".cpu")[0] in line
    assert "another compile" in line
    before = real.module.with_name(real.module.name.replace("cpu_after_optimizations",
                                                            "before_optimizations"))
    done = hlo_lsp("summary", before, "--profile", real.profile, ok=False)
    assert done.returncode != 0 and done.stdout == "" and "after-optimizations" in done.stderr


def test_a_profile_of_the_smaller_compile_is_refused_too(real):
    """By XLA's program id, which the xplane keeps (the trace JSON alone has
    none: then the instruction names decide, and a compile whose instructions
    are a subset of the file's is not told apart; docs/profiles.md)."""
    done = hlo_lsp("summary", real.module, "--profile", real.other_profile, "--json", ok=False)
    assert done.returncode != 0 and "another compile" in done.stderr


def test_a_file_that_is_not_a_profile_is_one_line_without_a_traceback(real, tmp_path):
    run = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    # made by the test from the real trace: cut in half (a gzip stream cut short)
    data = real.trace.read_bytes()
    (run / "vm.trace.json.gz").write_bytes(data[:len(data) // 2])
    done = hlo_lsp("summary", real.module, "--profile", tmp_path, ok=False)
    assert done.returncode != 0 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert "vm.trace.json.gz" in done.stderr
    # a JSON file that is no trace (written by the test)
    (run / "vm.trace.json.gz").unlink()
    (run / "vm.trace.json").write_text('{"displayTimeUnit": "ns"}')
    done = hlo_lsp("summary", real.module, "--profile", tmp_path, ok=False)
    assert done.returncode != 0 and done.stdout == "" and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "not a trace" in done.stderr
    done = hlo_lsp("summary", real.module, "--profile", tmp_path / "nothing", ok=False)
    assert done.returncode != 0 and "no profile" in done.stderr
    # `profile` lists the readable runs and says the unreadable one in one line
    shutil.copytree(real.trace.parent, run.parent / real.trace.parent.name)
    done = hlo_lsp("profile", tmp_path, ok=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "2026_01_01_00_00_00" in done.stderr
    assert f"run {real.trace.parent.name}" in done.stdout and "jit_net" in done.stdout


def test_diff_gives_the_measured_change_per_kernel_group_from_the_two_traces(real):
    old_sums = trace_event_sums(real.trace, "jit_net")
    [other_trace] = real.other_profile.glob("plugins/profile/*/*.trace.json.gz")
    new_sums = trace_event_sums(other_trace, "jit_net")
    args = (real.module, real.other_module, "--profile", real.profile,
            "--profile", real.other_profile)
    data = json.loads(hlo_lsp("diff", *args, "--json").stdout)["measured"]
    groups = data["groups"]
    assert groups and data["step_us"][0] > data["step_us"][1] > 0
    sort = next(g for g in groups if "sort.0" in g["old"])
    assert sort["new"] == ["sort.0"]       # paired by the instruction matcher (op_name, line)
    for g in groups:
        for side, sums, executions in ((0, old_sums, real.executions), (1, new_sums, 3)):
            names = g["old"] if side == 0 else g["new"]
            total = sum(sums[n][1] for n in names if n in sums)
            assert g["total_us"][side] == pytest.approx(total, rel=0.01), g["key"]
            assert g["us"][side] == pytest.approx(total / executions, rel=0.01), g["key"]
    changes = [abs(g["change_us"]) for g in groups]
    assert changes == sorted(changes, reverse=True)
    text = hlo_lsp("diff", *args).stdout
    assert "Measured" not in hlo_lsp("diff", real.module, real.other_module).stdout
    assert "Measured (per execution of the module, from the two profiles)" in text
    assert "%sort.0" in text.split("Measured (per execution", 1)[1]
    # a profile joined to the wrong side is refused as summary refuses it
    done = hlo_lsp("diff", real.module, real.other_module, "--profile", real.profile,
                   "--profile", real.profile, ok=False)
    assert done.returncode != 0 and "another compile" in done.stderr and done.stdout == ""


def test_profile_lists_runs_and_modules_and_exports_model_explorer_node_data(real, tmp_path):
    out = hlo_lsp("profile", real.root).stdout
    assert out.count("\nrun ") == 2
    number = int(re.search(r"module_(\d+)", real.module.name).group(1))
    assert f"jit_net: program ids {number}; {real.executions} executions" in out
    listed = json.loads(hlo_lsp("profile", real.profile, "--json").stdout)
    [run] = listed["runs"]
    [module] = run["modules"]
    assert module["name"] == "jit_net" and module["executions"] == real.executions
    assert pathlib.Path(run["file"]).parent == real.trace.parent

    summary = json.loads(hlo_lsp("summary", real.module, "--profile", real.profile,
                                 "--json").stdout)
    measured = measured_entries(summary)
    out_file = tmp_path / "node_data.json"
    hlo_lsp("profile", real.profile, "--model-explorer", out_file, "--hlo", real.module)
    node_data = json.loads(out_file.read_text())
    assert set(node_data["results"]) == set(measured)      # keyed by instruction names
    for name, result in node_data["results"].items():
        assert result["value"] == pytest.approx(measured[name]["self_us"], abs=1e-3)
    stops = [g["stop"] for g in node_data["gradient"]]
    assert stops[0] == 0 and stops[-1] == 1
    hlo_lsp("profile", real.profile, "--model-explorer", out_file, "--value", "total")
    totals = json.loads(out_file.read_text())["results"]
    assert totals["while.9"]["value"] == pytest.approx(measured["while.9"]["total_us"], abs=1e-3)
    done = hlo_lsp("profile", real.profile, "--model-explorer", out_file, "--hlo",
                   real.other_module, ok=False)
    assert done.returncode != 0 and "another compile" in done.stderr


def test_graph_shades_nodes_by_measured_self_time(real, tmp_path):
    data = json.loads(hlo_lsp("graph", real.module, "--profile", real.profile, "-f",
                              "json").stdout)
    expected = trace_event_sums(real.trace, "jit_net")
    nodes = {n["name"]: n for n in data["nodes"] if n["cluster"] is None}
    assert nodes["sort.0"]["measured"]["count"] == expected["sort.0"][0]
    assert nodes["sort.0"]["measured"]["total_us"] == pytest.approx(expected["sort.0"][1],
                                                                    rel=0.01)
    assert all(n["measured"] is None for n in data["nodes"] if n["name"] not in expected)
    dot = hlo_lsp("graph", real.module, "--profile", real.profile, "-f", "dot").stdout
    line = next(ln for ln in dot.splitlines() if 'label="while.9' in ln)
    assert "self " in line and "5x" in line and 'fillcolor="#' in line
    page = tmp_path / "g.html"
    hlo_lsp("graph", real.module, "--profile", real.profile, "-o", page)
    assert "measured self time" in page.read_text()
    plain = hlo_lsp("graph", real.module, "-f", "dot").stdout
    assert "self " not in plain
