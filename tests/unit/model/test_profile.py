"""The join of measured events to instructions (hlo_lsp.model.profile): totals,
self time of nested spans, executions, the identity of the compile measured.
Events here are unit inputs built in the test, not a profile presented as
XLA's; the real traces are read in tests/unit/dump/test_profiles.py."""

from hlo_lsp.model.profile import OpEvent, identify, measure


def ev(op, start, dur, run="1", track="t", module="jit_f", program_id=None):
    return OpEvent(module=module, op=op, start_us=start, duration_us=dur, track=track,
                   run=run, program_id=program_id)


def test_totals_counts_and_self_time_of_a_loop_and_its_body():
    events = [ev("while.1", 0, 10), ev("body", 1, 2), ev("body", 4, 3), ev("after", 11, 1),
              ev("while.1", 20, 8, run="2"), ev("body", 21, 1, run="2"),
              ev("after", 29, 1, run="2")]
    m = measure(events, "jit_f")
    assert m.executions == 2
    assert m.step_us == 12 + 10
    w = m.ops["while.1"]
    assert (w.count, w.total_us, w.self_us, w.min_us, w.max_us) == (2, 18, 12, 8, 10)
    assert m.ops["body"].count == 3 and m.ops["body"].self_us == 6
    assert m.share("while.1") == 18 / 22


def test_nesting_only_within_a_track_and_grandchildren_count_once():
    events = [ev("outer", 0, 10), ev("mid", 1, 6), ev("leaf", 2, 2), ev("other", 1, 6, track="u")]
    m = measure(events, "jit_f")
    assert m.ops["outer"].self_us == 4      # minus mid only, not leaf again
    assert m.ops["mid"].self_us == 4
    assert m.ops["other"].self_us == 6


def test_another_module_and_another_program_are_not_joined():
    events = [ev("a", 0, 1, program_id=6), ev("a", 2, 1, program_id=8), ev("b", 0, 1, module="jit_g")]
    assert measure(events, "jit_f", program_id=6).ops["a"].count == 1
    assert measure(events, "jit_h") is None


def test_identity_by_program_id_then_by_instructions():
    m = measure([ev("fusion.3", 0, 1, program_id=6)], "jit_f")
    assert identify(m, ["fusion.3"], 6).same
    refused = identify(m, ["fusion.3"], 8, "module_0008.jit_f.cpu_after_optimizations.txt")
    assert not refused.same
    assert "module_0006" in refused.reason and "module_0008" in refused.reason
    m = measure([ev("fusion.3", 0, 1)], "jit_f")
    assert identify(m, ["fusion.3", "add.1"], None).same
    refused = identify(m, ["fusion.4"], None, "f.txt")
    assert not refused.same and "fusion.3" in refused.reason and "f.txt" in refused.reason
