"""The priority-fusion log (hlo_lsp/dump/fusion_dump.py) and its text-proto
reader (hlo_lsp/dump/text_proto.py), on the log XLA:GPU wrote for
examples/gpu/deviceless/fp8_fusion_log (a scaled FP8 matmul with a bias compiled
for H100 without a GPU, pass dumps on; made by examples/gpu/make_deviceless_dumps.py)."""

from __future__ import annotations

import math
import os
import re

import pytest

from hlo_lsp.dump import text_proto
from hlo_lsp.dump.fusion_dump import (FUSION, INELIGIBLE, PRIORITY, FusionDumpError,
                                      fusion_dump_beside, fusion_dump_for, fusion_dump_path,
                                      parse_fusion_dump, read_fusion_dump)
from hlo_lsp.dump.names import is_hlo_path, is_non_hlo_dump_file, parse_dump_name

from tests.helpers import EXAMPLES

DUMP = EXAMPLES / "gpu" / "deviceless" / "fp8_fusion_log"
AFTER = DUMP / "module_0001.jit_fp8_block.sm_9.0a_gpu_after_optimizations.txt"
LOG = DUMP / "module_0001.jit_fp8_block.priority_fusion_dump.txt"


def test_the_log_beside_every_stage_of_the_module():
    assert fusion_dump_path(str(AFTER)) == str(LOG)
    snapshot = DUMP / "module_0001.jit_fp8_block.0033.fusion.after_priority-fusion.before_cse.txt"
    assert fusion_dump_path(str(snapshot)) == str(LOG)
    assert fusion_dump_path(str(DUMP / "notes.txt")) is None


def test_steps_of_the_real_log_in_order():
    dump = read_fusion_dump(str(LOG))
    assert {s.kind for s in dump.steps} == {FUSION, INELIGIBLE, PRIORITY}
    # One step per fusion_steps entry, in the file's order (the module before
    # fusion, at the end, names its instructions too: cut it off).
    steps = LOG.read_text().split("gpu_device_info")[0]
    assert [s.producer for s in dump.steps] == re.findall(r'producer_name: "([^"]+)"', steps)
    first = dump.steps[0]
    assert first.kind == PRIORITY and first.consumers and first.us_fused > 0 and \
        first.us_unfused > 0


def test_the_gemm_fusion_is_not_fusible():
    about = read_fusion_dump(str(LOG)).about("gemm_fusion_dot")
    assert about.reasons == ("the producer is not fusible",)  # said 4 times, kept once
    assert about.fused_into == () and about.estimates == ()


def test_a_fused_producer_has_its_estimate_and_its_fusion():
    about = read_fusion_dump(str(LOG)).about("reduce.1")
    assert about.reasons == ()
    [(consumers, fused, unfused)] = about.estimates
    assert consumers == ("convert.1",)
    assert fused == pytest.approx(1.53775) and unfused == pytest.approx(2.77225)
    assert about.fused_into == (("convert.1", "fusion.1"),)


def test_a_fusion_lists_what_it_took_in():
    about = read_fusion_dump(str(LOG)).about("fusion.2")
    assert about.reasons == ("not fusing because there are only bitcast users",)
    assert [p for p, _ in about.took] == ["mul.6.0", "convert_element_type.6.0",
                                          "convert_element_type.7.0"]


def test_a_name_the_log_does_not_hold():
    assert read_fusion_dump(str(LOG)).about("loop_multiply_fusion") is None


def test_no_log_beside_a_dump_without_pass_dumps(tmp_path):
    hlo = tmp_path / "module_0001.jit_f.sm_9.0a_gpu_after_optimizations.txt"
    hlo.write_text("HloModule jit_f\n")
    assert fusion_dump_for(str(hlo)) is None
    assert fusion_dump_beside(str(hlo)) is None


@pytest.mark.parametrize("content,words", [
    ("fusion_steps { update_priority { producer_name: \"a\" ", "ends inside a message"),
    ("<html><body>not a proto</body></html>", "not a priority-fusion dump"),
    ("a: b: c", "not a priority-fusion dump"),
    ("unrelated_field: 3\n", "no fusion_steps"),
])
def test_a_bad_log_is_one_clear_message(tmp_path, content, words):
    hlo = tmp_path / "module_0001.jit_f.sm_9.0a_gpu_after_optimizations.txt"
    log = tmp_path / "module_0001.jit_f.priority_fusion_dump.txt"
    log.write_text(content)
    with pytest.raises(FusionDumpError) as err:
        fusion_dump_for(str(hlo))
    assert str(err.value).startswith(f"{log}: ") and words in str(err.value)
    assert "\n" not in str(err.value)
    beside = fusion_dump_beside(str(hlo))
    assert beside.steps == () and beside.problem == str(err.value)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_named_like_the_log_is_refused_without_blocking(tmp_path):
    hlo = tmp_path / "module_0001.jit_f.sm_9.0a_gpu_after_optimizations.txt"
    os.mkfifo(tmp_path / "module_0001.jit_f.priority_fusion_dump.txt")
    assert "not a regular file (a FIFO)" in fusion_dump_beside(str(hlo)).problem


def test_a_log_over_the_limit_is_refused(tmp_path):
    with pytest.raises(FusionDumpError, match="larger than 1 KiB"):
        read_fusion_dump(str(LOG), limit=1024)


def test_unknown_step_kinds_and_fields_are_skipped():
    dump = parse_fusion_dump('fusion_steps { new_kind { x: 1 } }\n'
                             'fusion_steps { producer_ineligible { producer_name: "p" '
                             'reason: "r" extra: ENUM } }\nnew_top_level: "x"\n', "f")
    [step] = dump.steps
    assert (step.kind, step.producer, step.reason) == (INELIGIBLE, "p", "r")
    assert math.isnan(step.us_fused)


def test_text_proto_values():
    message = text_proto.parse('a: -inf b: inf c: 0x1F d: "x\\101" \'y\' # comment\n'
                               'e < f: 1.5e3f > g: ENUM h: "\\303\\251"')
    assert message == [("a", -math.inf), ("b", "inf"), ("c", 31), ("d", "xAy"),
                       ("e", [("f", 1500.0)]), ("g", "ENUM"), ("h", "é")]


@pytest.mark.parametrize("bad,where", [
    ("a {" * (text_proto.MAX_DEPTH + 1), "nested deeper"),
    ("a: [1, 2]", "unexpected ."),
    ("a: }", "a value expected"),
    ("a: \"\\q\"", "unknown escape"),
    ("a\n\n: }", "line 3"),
])
def test_text_proto_refusals_name_the_line(bad, where):
    with pytest.raises(text_proto.TextProtoError, match=where):
        text_proto.parse(bad)


def test_kernel_and_log_files_are_not_hlo():
    # The file names XLA:GPU wrote for this program with pass dumps on.
    for name in ("module_0001.jit_fp8_block.priority_fusion_dump.txt",
                 "module_0001.jit_fp8_block.7.ptx", "module_0001.jit_fp8_block.7.ir-with-opt.ll",
                 "module_0001.jit_fp8_block.6.ir-no-opt.ll",
                 "module_0001.jit_fp8_block.constants.ir-no-opt.ll"):
        assert is_non_hlo_dump_file(name), name
        assert parse_dump_name(name) is None, name
    assert not is_hlo_path(str(LOG))
    assert not is_hlo_path(str(DUMP / "module_0001.jit_fp8_block.7.ptx"))
    assert is_hlo_path(str(AFTER))


def test_the_module_before_fusion_is_kept_for_a_matcher():
    from hlo_lsp.syntax.parser import parse

    before = read_fusion_dump(str(LOG)).module_before_fusion
    module = parse(before)
    names = {i.name.name for c in module.computations for i in c.instructions}
    assert {"gemm_fusion_dot", "mul.7.0", "reduce.1"} <= names


@pytest.mark.parametrize("name,base", [("mul.7.1", "mul.7"), ("mul.7", "mul"), ("a", "a"),
                                       ("x.", "x."), (".5", ".5"), ("fusion.v2", "fusion.v2")])
def test_name_base_drops_the_clone_number(name, base):
    from hlo_lsp.dump.fusion_dump import name_base
    assert name_base(name) == base


def test_fusions_made_at_a_consumer_of_any_clone_number():
    dump = read_fusion_dump(str(LOG))
    assert dump.fusions_made_at("mul.7") == {"fusion.2"}
    assert dump.fusions_made_at("gemm_fusion_dot") == set()


def test_mutated_logs_are_read_or_refused_with_the_one_error():
    """Untrusted input: the real log with bytes cut, swapped and inserted is either
    read or refused as FusionDumpError, never another exception."""
    import random

    rng = random.Random(44)
    original = LOG.read_text()[:4000]
    alphabet = '{}<>:;,"\'\\#\n -.0123456789abcxyz_\x00\u202e'
    for _ in range(400):
        chars = list(original)
        for _ in range(rng.randint(1, 8)):
            at = rng.randrange(len(chars))
            op = rng.randrange(3)
            if op == 0:
                del chars[at:at + rng.randint(1, 30)]
            elif op == 1:
                chars[at] = rng.choice(alphabet)
            else:
                chars.insert(at, rng.choice(alphabet))
        try:
            dump = parse_fusion_dump("".join(chars), "f")
        except FusionDumpError as exc:
            assert str(exc).startswith("f: ") and "\n" not in str(exc)
        else:
            assert all(isinstance(s.producer, str) for s in dump.steps)


def test_names_at_fusion_follow_the_renames_after_priority_fusion():
    from hlo_lsp.dump.fusion_dump import fusion_snapshot, names_at_fusion

    mof = EXAMPLES / "gpu" / "deviceless" / "multi_output_fusion_log"
    [after] = mof.glob("*gpu_after_optimizations.txt")
    log = fusion_dump_beside(str(after))
    assert fusion_snapshot(str(after)).endswith(
        "module_0001.jit_stats.0027.fusion.after_priority-fusion.before_cse.txt")
    # the multi-output fusion is the log's fusion.1; exp.1.1, fused into it by
    # multi_output_fusion, was exp.1.0 when priority fusion ran
    assert names_at_fusion(str(after), log) == {
        "loop_exponential_multiply_fusion": "fusion.1", "exp.1.1": "exp.1.0"}
    assert names_at_fusion(str(after), log, limit=1000) == {}  # the cost bound
    # Without a snapshot: the log's module before fusion, whose names the
    # after-optimizations module keeps where nothing renamed them.
    [fp8] = (EXAMPLES / "gpu" / "deviceless" / "fp8_fusion_log").glob(
        "*gpu_after_optimizations.txt")
    assert fusion_snapshot(str(fp8)) is None
    assert names_at_fusion(str(fp8), fusion_dump_beside(str(fp8))) == {}
