"""Fusion decisions in hover and the kernel as a definition
(hlo_lsp/features/fusion_decisions.py through features/hover.py and
features/definition.py), on examples/gpu/deviceless/fp8_fusion_log: a scaled FP8
matmul with a bias compiled for H100 without a GPU with pass dumps on."""

from __future__ import annotations

import dataclasses

from hlo_lsp.dump.fusion_dump import FusionDump, FusionStep, INELIGIBLE, fusion_dump_beside
from hlo_lsp.dump.kernels import read_kernels
from hlo_lsp.features.definition import definition
from hlo_lsp.features.fusion_decisions import kernel_targets
from hlo_lsp.features.hover import hover
from hlo_lsp.model.spans import FileTarget, Span
from hlo_lsp.syntax.parser import parse

from tests.helpers import EXAMPLES, offset_of

DUMP = EXAMPLES / "gpu" / "deviceless" / "fp8_fusion_log"
AFTER = DUMP / "module_0001.jit_fp8_block.sm_9.0a_gpu_after_optimizations.txt"
LOG_NAME = "module_0001.jit_fp8_block.priority_fusion_dump.txt"


def _hover(needle: str, fusion) -> str:
    text = AFTER.read_text()
    got = hover(parse(text), offset_of(text, needle, 1), fusion=fusion)
    return got.markdown


def test_the_gemm_fusion_says_why_it_was_not_fused():
    md = _hover("%gemm_fusion_dot = ", fusion_dump_beside(str(AFTER)))
    assert (f"**Priority fusion** (`{LOG_NAME}`):\n"
            "- not fused into its users: the producer is not fusible") in md, md


def test_a_renamed_fusion_is_found_by_its_fused_root():
    # rename_fusions made fusion.2 loop_multiply_fusion; its root mul.7.1 is the
    # clone of mul.7.0, the consumer of the step that made fusion.2.
    md = _hover("%loop_multiply_fusion = ", fusion_dump_beside(str(AFTER)))
    assert ("where it is `fusion.2`, found by its fused root `mul.7.1`):\n"
            "- not fused into its users: not fusing because there are only bitcast users\n"
            "- took in `mul.6.0`, `convert_element_type.6.0`, `convert_element_type.7.0`") \
        in md, md


def test_at_a_use_too_and_nothing_without_the_log():
    md = _hover("%gemm_fusion_dot, %b.1", fusion_dump_beside(str(AFTER)))
    assert "the producer is not fusible" in md
    assert "Priority fusion" not in _hover("%gemm_fusion_dot = ", None)


def test_estimates_fused_against_unfused():
    dump = fusion_dump_beside(str(AFTER))
    from hlo_lsp.features.fusion_decisions import decisions_markdown
    md = decisions_markdown(dump.about("reduce.1"), LOG_NAME)
    assert ("- fused into `convert.1`: estimated 1.54 µs fused against 2.77 µs unfused\n"
            "- fused into `convert.1`, giving `fusion.1`") in md, md


def test_text_from_the_log_is_data_not_markdown():
    hostile = FusionDump("/d/" + LOG_NAME, (FusionStep(
        INELIGIBLE, "gemm_fusion_dot",
        reason="[click](https://evil.example) <img src=x> **bold** `tick`\n# heading"),))
    md = _hover("%gemm_fusion_dot = ", hostile)
    line = next(ln for ln in md.splitlines() if ln.startswith("- not fused"))
    assert line.endswith("\\[click\\](https\\://evil.example) \\<img src=x\\> "
                         "\\*\\*bold\\*\\* \\`tick\\`\\\\n# heading"), line


def test_an_unreadable_log_is_said_on_kernels_only():
    broken = FusionDump("/d/" + LOG_NAME, (), "/d/x: not a regular file (a FIFO)")
    assert "*Priority fusion log not read: /d/x: not a regular file (a FIFO)*" in \
        _hover("%gemm_fusion_dot = ", broken)
    assert "Priority fusion" not in _hover("%b.1 = ", broken)


def test_definition_of_the_gemm_fusion_is_its_ptx_entry_else_its_llvm_function():
    text = AFTER.read_text()
    module = parse(text)
    kernels = read_kernels(str(AFTER))
    for needle in ("%gemm_fusion_dot = ", "fusion(%bitcast.1.0"):
        [ptx] = definition(module, offset_of(text, needle, 1), None, kernels)
        assert isinstance(ptx, FileTarget) and ptx.path.endswith(".7.ptx")
        line = open(ptx.path).read().splitlines()[ptx.line - 1]
        assert line == ".visible .entry gemm_fusion_dot("
        assert line[ptx.column - 1:ptx.end_column - 1] == "gemm_fusion_dot"
    # kernel_targets gives the LLVM IR function after the PTX .entry; without
    # the PTX, the definition is the function.
    ins = next(i for c in module.computations for i in c.instructions
               if i.name.name == "gemm_fusion_dot")
    ptx_target, ll = kernel_targets(kernels, ins)
    assert ptx_target == ptx and ll.path.endswith(".7.ir-with-opt.ll")
    assert open(ll.path).read().splitlines()[ll.line - 1].startswith(
        "define ptx_kernel void @gemm_fusion_dot(")
    only_ll = dataclasses.replace(kernels, sites={
        k: tuple(s for s in v if s.kind == "llvm") for k, v in kernels.sites.items()})
    assert definition(module, offset_of(text, "%gemm_fusion_dot = ", 1), None, only_ll) == [ll]
    # A use still goes to the instruction; a kernel the dump lacks (this
    # example keeps one PTX file) leaves the definition as it was.
    [use] = definition(module, offset_of(text, "%gemm_fusion_dot, %b.1", 1), None, kernels)
    assert isinstance(use, Span)
    [own] = definition(module, offset_of(text, "%loop_add_fusion = ", 1), None, kernels)
    assert isinstance(own, Span)
    assert definition(module, offset_of(text, "%gemm_fusion_dot = ", 1), None, None) == \
        [dataclasses.replace(own, start=offset_of(text, "%gemm_fusion_dot = "),
                             end=offset_of(text, "%gemm_fusion_dot = ") + 16)]


MOF = EXAMPLES / "gpu" / "deviceless" / "multi_output_fusion_log"
MOF_AFTER = MOF / "module_0001.jit_stats.sm_9.0a_gpu_after_optimizations.txt"


def test_a_fusion_merged_and_renamed_after_priority_fusion_is_found_by_the_matcher():
    # examples/gpu/programs/reduce_stats.py: priority fusion made fusion.1 (tanh
    # into the multiply); multi_output_fusion merged exp.1.0 into it (a tuple
    # root) and rename_fusions named it loop_exponential_multiply_fusion. Neither
    # its own name nor its root finds it in the log; the matcher between the
    # snapshot after priority-fusion and this module does.
    from hlo_lsp.dump.fusion_dump import names_at_fusion
    from hlo_lsp.features.fusion_decisions import log_names

    text = MOF_AFTER.read_text()
    module = parse(text)
    mof = module.instruction_at(offset_of(text, "%loop_exponential_multiply_fusion = ", 1))
    log = fusion_dump_beside(str(MOF_AFTER))
    assert log_names(log, module, mof) == []
    named = dataclasses.replace(log, renamed=names_at_fusion(str(MOF_AFTER), log))
    assert log_names(named, module, mof) == [
        ("fusion.1", "found by matching the module after priority fusion with this one")]
    got = hover(module, offset_of(text, "%loop_exponential_multiply_fusion = ", 1),
                fusion=named).markdown
    assert ("**Priority fusion** (`module_0001.jit_stats.priority_fusion_dump.txt`, where it "
            "is `fusion.1`, found by matching the module after priority fusion with this "
            "one):") in got, got
    assert "- fused into `reduce_sum.14.0`, `fusion`: estimated" in got, got


def test_the_log_name_of_a_renamed_fusion_by_its_pass_history():
    # The pass history follows an instruction through every rename: its name when
    # priority fusion ran is the latest of its names the log knows (fusion.1, which
    # multi_output_fusion and rename_fusions made loop_exponential_multiply_fusion).
    from hlo_lsp.dump.passes import file_history
    from hlo_lsp.features.fusion_decisions import history_name, log_names

    text = MOF_AFTER.read_text()
    module = parse(text)
    mof = module.instruction_at(offset_of(text, "%loop_exponential_multiply_fusion = ", 1))
    log = fusion_dump_beside(str(MOF_AFTER))
    found = file_history(str(MOF_AFTER))
    names = found.blame(found.key_of("loop_exponential_multiply_fusion")).names
    assert names == ("fusion.1", "loop_exponential_multiply_fusion")
    assert history_name(log, names) == "fusion.1"
    assert history_name(log, ("loop_exponential_multiply_fusion",)) is None
    assert log_names(log, module, mof, names) == [
        ("fusion.1", "found by following it through the pass snapshots")]
    got = hover(module, offset_of(text, "%loop_exponential_multiply_fusion = ", 1),
                fusion=log, passes=found).markdown
    assert ("**Priority fusion** (`module_0001.jit_stats.priority_fusion_dump.txt`, where it "
            "is `fusion.1`, found by following it through the pass snapshots):") in got, got
    assert "**Pass history**: Created by `priority-fusion`" in got, got


def test_a_blame_whose_history_skips_the_rename_finds_the_log_by_the_matcher():
    # The one answer of `hlo-lsp blame` and hlo/passBlame (blamed_decisions): the names
    # along the pass history first; a history whose snapshots do not show the rename
    # (here: only its name in this file) falls back on the matcher's names, which both
    # the command line (with_renamed) and the server (DumpInputs.fusion_dump) set.
    from hlo_lsp.dump.fusion_dump import with_renamed
    from hlo_lsp.dump.passes import file_history
    from hlo_lsp.features.pass_history import blamed_decisions

    found = file_history(str(MOF_AFTER))
    blame = found.blame(found.key_of("loop_exponential_multiply_fusion"))
    log = fusion_dump_beside(str(MOF_AFTER))
    assert blamed_decisions(blame, log).name == "fusion.1"
    skipped = dataclasses.replace(blame, names=("loop_exponential_multiply_fusion",))
    assert blamed_decisions(skipped, log) is None
    named = with_renamed(str(MOF_AFTER), log)
    assert named.renamed["loop_exponential_multiply_fusion"] == "fusion.1"
    assert blamed_decisions(skipped, named) == log.about("fusion.1")
    assert with_renamed(str(MOF_AFTER), None) is None
    unread = FusionDump(log.path, (), "unreadable")
    assert with_renamed(str(MOF_AFTER), unread) is unread
    assert blamed_decisions(blame, unread) is None


def test_the_blame_and_the_hover_find_the_log_name_the_same_way():
    # names_in_log is the one answer of hover (log_names), `hlo-lsp blame` and
    # hlo/passBlame (blamed_decisions): with the blamed file parsed, a fusion the log
    # does not name is found by its fused root, as hover finds it
    # (examples/gpu/deviceless/fp8_fusion_log: loop_multiply_fusion, fusion.2 in the log).
    from hlo_lsp.dump.passes import Blame, Stage
    from hlo_lsp.features.fusion_decisions import log_names
    from hlo_lsp.features.pass_history import blamed_decisions

    after = EXAMPLES / "gpu" / "deviceless" / "fp8_fusion_log" / \
        "module_0001.jit_fp8_block.sm_9.0a_gpu_after_optimizations.txt"
    text = after.read_text()
    module = parse(text)
    log = fusion_dump_beside(str(after))
    ins = module.instruction_at(offset_of(text, "%loop_multiply_fusion = ", 1))
    [(name, how)] = log_names(log, module, ins)
    assert name == "fusion.2" and how.startswith("found by its fused root")
    stage = Stage(-1, "", "before_optimizations", "", after.name, str(after))
    blame = Blame("loop_multiply_fusion", stage, (), ("loop_multiply_fusion",))
    assert blamed_decisions(blame, log, module) == log.about("fusion.2")
    assert blamed_decisions(blame, log) is None  # the file not parsed: no fused root
