"""features/autotuning.py and its hover paragraph on a real deviceless H100 dump
(examples/gpu/deviceless/fp8_triton_gemm: XLA wrote an empty results file) and
on openxla/xla's public results files (tests/data/autotuning/)."""

from __future__ import annotations

from hlo_lsp.dump.autotuning import (autotune_paths, from_message, parse_textproto,
                                     read_autotune_file)
from hlo_lsp.features.autotuning import (Autotuned, autotuning_for, autotuning_lines,
                                         autotuning_mark)
from hlo_lsp.features.hover import hover
from hlo_lsp.syntax.parser import parse
from tests.helpers import EXAMPLES, ROOT

DUMP = EXAMPLES / "gpu" / "deviceless" / "fp8_triton_gemm"
AFTER = DUMP / "module_0001.jit_matmul_fn_with_scale.sm_9.0a_gpu_after_optimizations.txt"
DATA = ROOT / "tests" / "data" / "autotuning"


def _module():
    text = AFTER.read_text()
    return text, parse(text)


def _ins(module, name):
    return next(i for c in module.computations for i in c.instructions if i.name.name == name)


def test_deviceless_kernels_are_marked_chosen_by_heuristics():
    text, module = _module()
    files = [read_autotune_file(p) for p in autotune_paths(str(DUMP))]
    gemm = _ins(module, "gemm_fusion_dot_general.1")
    assert autotuning_for(module, gemm, files) is None
    assert autotuning_mark(module, gemm, files) == "chosen by heuristics"
    assert autotuning_mark(module, gemm, files, deviceless=True) == \
        "chosen by heuristics (deviceless)"
    assert autotuning_mark(module, _ins(module, "a_fp8.1"), files) == ""  # a parameter
    at = text.index("%gemm_fusion_dot_general.1 =") + 1
    got = hover(module, at, autotuning=files).markdown
    assert "*Not autotuned: the dump's autotuning results are empty" in got
    assert "Not autotuned" not in hover(module, at).markdown  # without the files


def test_public_results_do_not_match_this_dump():
    # No public AutotuneResults file is of a module dumped here: the join says
    # nothing rather than guessing.
    _, module = _module()
    files = [read_autotune_file(DATA / n) for n in
             ("test_autotune_cache.textproto", "gpu_compiler_test_autotune_db.textproto")]
    gemm = _ins(module, "gemm_fusion_dot_general.1")
    assert autotuning_for(module, gemm, files) is None
    assert autotuning_mark(module, gemm, files) == ""


def test_hover_lines_of_a_results_winner_and_of_logs():
    [entry] = read_autotune_file(DATA / "test_autotune_cache.textproto").results
    lines = autotuning_lines(Autotuned(entry, None, ("/d/results.textproto",)))
    assert lines[0] == ("**Autotuned** on sm_8.0 with 42331013120B RAM, 108 cores, 1410000KHz "
                        "clock, 1215000KHz mem clock, 41943040B L2$: chose Triton 32x32x32 tiles, "
                        "split-k 1, 1 stages, 4 warps, 31.7 µs")
    assert "31.7 µs" in lines[0] and "Triton 32x32x32" in lines[0].replace("\\", "")
    assert lines[1] == "From `results.textproto`"
    [log] = from_message("l", parse_textproto(
        'logs { results { run_time { nanos: 45000 } triton { block_m: 64 block_n: 128 '
        'block_k: 32 split_k: 1 num_stages: 3 num_warps: 4 } } '
        'results { run_time { nanos: 38000 } gemm { algorithm: 12 } } '
        'compute_capability { major: 9 } fusion_name: "f" }')).logs
    lines = [line.replace("\\", "") for line in autotuning_lines(Autotuned(None, log, ()))]
    assert lines == ["**Autotuned** on sm_9.0: 2 candidates; winner cuBLAS algorithm 12, 38 µs",
                     "- cuBLAS algorithm 12: 38 µs",
                     "- Triton 64x128x32 tiles, split-k 1, 3 stages, 4 warps: 45 µs"]


def test_join_by_the_canonical_key():
    # A fused computation of a real dump against the same text in XLA's canonical
    # form (names tmp_N, operand shapes printed): the signature XLA's key reduces to.
    text, module = _module()
    gemm = _ins(module, "gemm_fusion_dot_general.1")
    from hlo_lsp.features.autotuning import instruction_key_text
    from hlo_lsp.dump.autotuning import hlo_signature
    sig = hlo_signature(instruction_key_text(module, gemm))
    assert any(line.startswith("f8e4m3fn[32,128]{1,0} convert/1") for line in sig)
    assert any(" dot/2, lhs_contracting_dims={1}, rhs_contracting_dims={1}" in line
               for line in sig)


def test_summary_note_marks_heuristics_and_autotuned():
    from hlo_lsp.features.autotuning import autotuning_note
    from hlo_lsp.model.summary import kernel_summary
    _, module = _module()
    offsets = [k.offset for k in kernel_summary(module).kernels]
    files = [read_autotune_file(p) for p in autotune_paths(str(DUMP))]
    note = autotuning_note(module, offsets, files, deviceless=True)
    assert note.startswith("Autotuning: ") and "chosen by heuristics (deviceless)" in note
    assert "autotuned" not in note
    assert autotuning_note(module, offsets, [], deviceless=False) == ""
    bad = read_autotune_file(DUMP / "hlo-lsp-recipe.json")
    assert autotuning_note(module, offsets, [bad]).endswith("1 autotuning file not read")


def test_join_a_custom_call_by_xlas_key_and_hover_it():
    # Not a dump: the public cuBLAS entry's own key text, given a name and operand
    # names as a dump prints them, so the join's positive path is tested on
    # XLA's real key (no dump made here matches a public entry; see README).
    db = read_autotune_file(DATA / "gpu_compiler_test_autotune_db.textproto")
    key = db.results[0].hlo
    head, attrs = key.split(" custom-call(", 1)
    attrs = attrs.split("), ", 1)[1]
    text = ("HloModule m\n\nENTRY e {\n"
            "  %p0 = bf16[128,1024,1024]{2,1,0} parameter(0)\n"
            "  %p1 = bf16[128,1024,1024]{2,1,0} parameter(1)\n"
            f"  ROOT %cublas-batch-gemm.1 = {head} custom-call(%p0, %p1), "
            'metadata={op_name="jit(f)/dot_general"}, ' + attrs + "\n}\n")
    module = parse(text)
    assert not module.problems
    ins = _ins(module, "cublas-batch-gemm.1")
    tuned = autotuning_for(module, ins, [db])
    assert tuned is not None and tuned.result is db.results[0]
    assert autotuning_mark(module, ins, [db], deviceless=True) == "autotuned"
    md = hover(module, text.index("%cublas-batch-gemm.1") + 1, autotuning=[db]).markdown
    assert ("**Autotuned** on CUDA: 9.0, Cores: 132, GPU clock: 1.98 GHz, Memory bandwidth: "
            "3352 GB/s, L2 cache: 50 MB, DNN version: 9.10.0: chose cuBLAS algorithm -1, "
            "1 ns") in md.replace("\\", "")
    assert "From `gpu_compiler_test_autotune_db.textproto`" in md
    # another instruction of the same module is not joined
    assert autotuning_for(module, _ins(module, "p0"), [db]) is None
