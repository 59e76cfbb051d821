"""hlo_lsp/dump/autotuning.py on real autotuning files: two AutotuneResults of
openxla/xla's test data (tests/data/autotuning/README.md) and the empty results
file XLA wrote into a deviceless H100 dump (examples/gpu/deviceless/)."""

from __future__ import annotations

import os

import pytest

from hlo_lsp.dump.autotuning import (TextProtoError, autotune_paths, candidate, from_message,
                                     hlo_signature, parse_textproto, read_autotune_file)
from tests.helpers import EXAMPLES, ROOT

DATA = ROOT / "tests" / "data" / "autotuning"
DEVICELESS = EXAMPLES / "gpu" / "deviceless" / "fp8_triton_gemm"


def test_triton_winner_with_its_measured_time():
    f = read_autotune_file(DATA / "test_autotune_cache.textproto")
    assert f.message is None and f.version == 3
    [entry] = f.results
    assert entry.device.startswith("sm_8.0 with 42331013120B RAM")
    assert entry.winner.backend == "Triton"
    assert entry.winner.config == "32x32x32 tiles, split-k 1, 1 stages, 4 warps"
    assert entry.winner.run_time_us == pytest.approx(31.744)
    assert entry.hlo.startswith("{\n  tmp_0 = f16[1,16,17,3]{3,2,1,0} parameter(0)")


def test_cublas_and_other_backends_of_the_h100_db():
    f = read_autotune_file(DATA / "gpu_compiler_test_autotune_db.textproto")
    assert f.message is None
    assert [r.winner.label() for r in f.results] == [
        "cuBLAS algorithm -1",
        "CUBLAS_FISSION xla.AutotuneResult.GemmKey",
        "NATIVE_EMITTER xla.gpu.NativeEmitterBackendConfig",
        "NATIVE_EMITTER xla.gpu.NativeEmitterBackendConfig"]
    assert all(r.device.startswith("CUDA: 9.0, Cores: 132") for r in f.results)
    # The custom-call key: the instruction without its name, backend config sorted.
    assert hlo_signature(f.results[0].hlo) == (
        '(bf16[128,1024,1024]{2,1,0}, s8[33554432]{0}) custom-call/2, '
        'custom_call_target="__cublas$gemm"',)


def test_deviceless_dump_results_are_empty():
    [path] = autotune_paths(str(DEVICELESS))
    assert path.endswith(".autotune_results.pbtxt")
    f = read_autotune_file(path)
    assert f.message is None and f.version == 3 and f.empty


def test_files_named_by_the_recipe_flags_come_first(tmp_path):
    (tmp_path / "results.textproto").write_text("version: 3\n")
    (tmp_path / "m.autotune_results.pbtxt").write_text("version: 3\n")
    flags = "--xla_gpu_dump_autotune_results_to=results.textproto --xla_dump_to=x"
    assert [os.path.basename(p) for p in autotune_paths(str(tmp_path), flags)] == [
        "results.textproto", "m.autotune_results.pbtxt"]
    # a relative name is the program's: against the recipe's working directory
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "logs.textproto").write_text("")
    got = autotune_paths(str(tmp_path), "--xla_gpu_dump_autotune_logs_to=logs.textproto",
                         cwd=str(tmp_path / "run"))
    assert got == [str(tmp_path / "run" / "logs.textproto"),
                   str(tmp_path / "m.autotune_results.pbtxt")]


def test_signature_ignores_names_operand_shapes_and_metadata():
    key = ("{\n  tmp_0 = f32[4]{0} parameter(0)\n"
           "  ROOT tmp_1 = f32[4]{0} negate(f32[4]{0} tmp_0)\n}")
    dump = ("{\n  %param_0.3 = f32[4]{0} parameter(0)\n  ROOT %negate.1 = f32[4]{0} "
            "negate(%param_0.3), metadata={op_name=\"jit(f)/neg\"}\n}")
    assert hlo_signature(key) == hlo_signature(dump)
    assert hlo_signature(key) != hlo_signature(key.replace("negate", "abs"))


def test_logs_every_candidate_and_failures():
    # The shape of AutotuningLogs as xla/autotuning.proto defines it (a parser
    # test of the message layout, not a file presented as XLA's).
    msg = parse_textproto('''logs {
      results { run_time { nanos: 38000 } gemm { algorithm: 12 } }
      results { run_time { nanos: 45000 } triton { block_m: 64 block_n: 128 block_k: 32
                split_k: 1 num_stages: 3 num_warps: 4 } }
      results { failure { kind: WRONG_RESULT msg: "mismatch" } triton { block_m: 16 } }
      compute_capability { major: 9 minor: 0 }
      fusion_name: "gemm_fusion_dot.1"
      selected_backend: "cublas"
    }''')
    [log] = from_message("logs.textproto", msg).logs
    assert log.device == "sm_9.0" and log.fusion_name == "gemm_fusion_dot.1"
    assert [c.run_time_us for c in log.candidates] == [38.0, 45.0, None]
    assert log.candidates[2].failure == "WRONG_RESULT: mismatch"
    assert log.winner().label() == "cuBLAS algorithm 12"


def test_text_proto_reader_details():
    msg = parse_textproto('a: "x" "y" b: -3 c: 1.5e3 d: ENUM '
                          'e { [type.googleapis.com/p.M] { f: 1 } }'
                          ' g: "\\010\\377\\"q"')
    assert msg["a"] == ["xy"] and msg["b"] == [-3] and msg["c"] == [1500.0]
    assert msg["d"] == ["ENUM"]
    assert msg["e"][0]["[type.googleapis.com/p.M]"] == [{"f": [1]}]
    assert msg["g"][0].endswith('"q') and msg["g"][0][0] == "\b"
    assert candidate({"run_time": [{"seconds": [0], "nanos": [0]}]}).run_time_us is None


@pytest.mark.parametrize("bad", ["a {", "a: ", "}", "a: {" * 40, "a: [1, 2]", "a @"])
def test_bad_text_is_one_clear_error(bad):
    with pytest.raises(TextProtoError, match=r"^line \d+: "):
        parse_textproto(bad)


def test_too_many_tokens_is_refused(tmp_path):
    from hlo_lsp.dump import autotuning
    path = tmp_path / "many.textproto"
    path.write_text("version: 3\n" * (autotuning.MAX_TOKENS // 2 + 1))
    assert "more than 500000 tokens" in read_autotune_file(path).message


def test_unreadable_files_give_one_message(tmp_path):
    binary = tmp_path / "results.pb"
    binary.write_bytes(b"\x08\x03\x12\x00\xff")
    assert "binary protocol buffer" in read_autotune_file(binary).message
    big = tmp_path / "big.textproto"
    big.write_text("version: 3\n" * 10)
    assert "larger than" in read_autotune_file(big, limit=20).message
    assert read_autotune_file(tmp_path).message  # a directory
    garbage = tmp_path / "g.textproto"
    garbage.write_text("results { device: 'x' hlo: }")
    assert read_autotune_file(garbage).message.startswith(f"{garbage}: not an autotuning")


def test_dump_autotuning_follows_the_recipe_flags(tmp_path):
    import shutil
    from hlo_lsp.dump.autotuning import read_dump_autotuning
    from hlo_lsp.dump.recipe import Recipe, save_recipe
    run, dump = tmp_path / "run", tmp_path / "dump"
    run.mkdir()
    dump.mkdir()
    shutil.copyfile(DATA / "test_autotune_cache.textproto", run / "results.textproto")
    save_recipe(Recipe(command=["python", "p.py"], cwd=str(run), env={
        "XLA_FLAGS": "--xla_gpu_dump_autotune_results_to=results.textproto"}), dump)
    [f] = read_dump_autotuning(str(dump))
    assert f.path == str(run / "results.textproto") and f.results[0].winner.backend == "Triton"


def test_a_recipe_that_cannot_be_used_reads_the_dump_directory_alone(tmp_path):
    from hlo_lsp.dump.autotuning import read_dump_autotuning
    (tmp_path / "hlo-lsp-recipe.json").write_text("{not json")
    assert read_dump_autotuning(str(tmp_path)) == ()
