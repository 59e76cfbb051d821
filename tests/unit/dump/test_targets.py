"""Target GPUs and deviceless records (hlo_lsp.dump.targets), the runner command
(hlo_lsp.dump.environment.deviceless_command) and the runner's flag handling, without
JAX. The compile itself is tested in tests/e2e/test_gpu_deviceless.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from hlo_lsp.dump import deviceless
from hlo_lsp.dump.environment import deviceless_command
from hlo_lsp.dump.recipe import Recipe, RecipeError
from hlo_lsp.dump.targets import (NO_AUTOTUNING, RECORD_FILE, RECORD_FORMAT, RUNNER,
                                  TargetError, builtin_targets, deviceless_statement,
                                  parse_config, read_deviceless, resolve_target)

REFERENCE = "/work/shared/reference/gpu-targets/h100_sxm.txtpb"


def test_builtin_targets_are_cuda_configs_with_their_source():
    targets = {name: resolve_target(name) for name in builtin_targets()}
    assert {n: t.compute_capability for n, t in targets.items()} == {
        "a100": (8, 0), "b200": (10, 0), "h100": (9, 0), "l4": (8, 9)}
    assert {n: t.core_count for n, t in targets.items()} == {
        "a100": 108, "b200": 148, "h100": 132, "l4": 58}
    for t in targets.values():
        assert t.builtin and os.path.isfile(t.path)
        assert "Source" in t.source or "from NVIDIA" in t.source, t.name
        assert "runtime_version" in open(t.path).read()  # needed for deviceless compiles
    assert targets["h100"].description == "NVIDIA H100 80GB HBM3"
    assert "openxla/xla pull request #25919" in targets["h100"].source


@pytest.mark.skipif(not os.path.exists(REFERENCE), reason="no shared reference config")
def test_h100_is_the_reference_config():
    with open(REFERENCE) as ref:
        assert open(resolve_target("h100").path).read() == ref.read()


def test_names_are_case_insensitive_with_aliases_and_paths_work(tmp_path):
    assert resolve_target("H100").name == "h100"
    assert resolve_target("h100_sxm").name == "h100"
    mine = tmp_path / "my_gpu.txtpb"
    shutil.copy(resolve_target("l4").path, mine)
    t = resolve_target("my_gpu.txtpb", cwd=str(tmp_path))
    assert (t.name, t.path, t.builtin, t.compute_capability) == (
        "my_gpu", str(mine), False, (8, 9))


def test_unknown_target_and_bad_configs_are_clear_errors(tmp_path):
    with pytest.raises(TargetError, match="unknown target 'v100'.*h100.*get_topology_for_devices"):
        resolve_target("v100", cwd=str(tmp_path))
    (tmp_path / "rocm.txtpb").write_text(
        'gpu_device_info { core_count: 1 }\nplatform_name: "ROCM"\n')
    with pytest.raises(TargetError, match="platform 'ROCM'"):
        resolve_target("rocm.txtpb", cwd=str(tmp_path))
    (tmp_path / "junk.txtpb").write_bytes(b"\xff\x00 not a proto")
    with pytest.raises(TargetError, match="not an XLA GpuTargetConfig"):
        resolve_target("junk.txtpb", cwd=str(tmp_path))
    with pytest.raises(TargetError, match="no cuda_compute_capability"):
        parse_config('gpu_device_info { core_count: 3 }\nplatform_name: "CUDA"\n')


def _record(dump, **extra):
    data = {"format": RECORD_FORMAT, "target": "h100", "jax_version": "0.10.2",
            "jaxlib_version": "0.10.2", "xla_flags": "--xla_gpu_enable_triton_gemm=false",
            "autotuning": False, "compiled": [{"module": "jit_f", "devices": 1}],
            "failed": [], **extra}
    (dump / RECORD_FILE).write_text(json.dumps(data))


def test_record_statement_and_untrusted_records(tmp_path):
    hlo = tmp_path / "module_0001.jit_f.sm_9.0a_gpu_after_optimizations.txt"
    hlo.write_text("HloModule jit_f\n")
    assert deviceless_statement(hlo) is None
    _record(tmp_path)
    record = read_deviceless(tmp_path)
    assert record.compiled == [{"module": "jit_f", "devices": 1}]
    assert deviceless_statement(hlo) == (
        f"Compiled for H100 without a GPU (jax 0.10.2): kernels {NO_AUTOTUNING}.")
    for bad in ("[1, 2]", "{", json.dumps({"format": "other/1", "target": "h100"}),
                json.dumps({"format": RECORD_FORMAT, "target": 3, "compiled": "x"})):
        (tmp_path / RECORD_FILE).write_text(bad)
        r = read_deviceless(tmp_path)
        assert r is None or (r.target == "the target GPU" and r.compiled == []), bad


def test_runner_goes_between_interpreter_and_program():
    h100 = resolve_target("h100")
    opts = [str(RUNNER), "--target-config", h100.path, "--target", "h100", "--dump-to", "/d", "--"]
    assert deviceless_command(["python3", "train.py", "--steps", "1"], h100.path, "h100",
                              "/d") == ["python3", *opts, "train.py", "--steps", "1"]
    assert deviceless_command(["env", "A=1", "/v/bin/python", "-m", "pkg.train"], h100.path,
                              "h100", "/d") == ["env", "A=1", "/v/bin/python", *opts,
                                                "-m", "pkg.train"]
    for argv in (["bash", "run.sh"], ["python"], ["python", "-u", "x.py"]):
        with pytest.raises(RecipeError):
            deviceless_command(argv, h100.path, "h100", "/d")


def test_recipe_records_the_target():
    r = Recipe(["python", "x.py"], "/w", platform="cpu", target="h100")
    assert r.to_json()["target"] == "h100"
    assert Recipe.from_json(r.to_json()).target == "h100"
    assert Recipe.from_json({"command": ["python"], "cwd": "/w"}).target is None


def test_runner_takes_only_the_dump_flags_out():
    assert deviceless.strip_dump_flags(
        "--xla_gpu_enable_triton_gemm=false --xla_dump_to=/a b --xla_dump_hlo_as_text") == \
        "--xla_gpu_enable_triton_gemm=false b"
    assert deviceless.strip_dump_flags(
        '--xla_dump_to="/my dumps/x" --xla_gpu_autotune_level=4') == \
        "--xla_gpu_autotune_level=4"
    assert deviceless.RECORD_FILE == RECORD_FILE and deviceless.RECORD_FORMAT == RECORD_FORMAT


@pytest.mark.parametrize("runner", ["deviceless.py", "profiling_hook.py"])
def test_runner_is_a_script_without_hlo_lsp(runner, tmp_path):
    """Each runner runs under the program's interpreter, where hlo-lsp may be
    absent: without site-packages (``-S -I``: no hlo_lsp, no jax) it starts,
    loading only the files beside it, and answers ``--help``."""
    path = RUNNER.parent / runner
    done = subprocess.run([sys.executable, "-S", "-I", str(path), "--help"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: {runner}")
    assert sys.modules["hlo_lsp.dump.deviceless"]


DEVICELESS_EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples",
                                   "gpu", "deviceless")


@pytest.mark.parametrize("scenario,needle", [
    ("fp8_cublaslt", 'custom_call_target="__cublas$lt$matmul$f8"'),
    ("fp8_triton_gemm", '"kind":"__triton_nested_gemm_fusion"'),
    ("fp8_splitk", "%gemm_fusion_dot = f32[4,256,384]"),
    ("fp8_fusion_log", "%gemm_fusion_dot = f32[4,256,384]"),
    ("multi_output_fusion_log", "%loop_exponential_multiply_fusion = (f32[512,1024]"),
    ("conv_bias_relu", 'custom_call_target="__cudnn$convBiasActivationForward"'),
    ("pallas_mosaic_gpu", 'custom_call_target="mosaic_gpu_v2"'),
    ("spmd_mesh8", "all-reduce-start("),
])
def test_committed_deviceless_examples_show_their_seed(scenario, needle):
    """examples/gpu/deviceless/ (made by examples/gpu/make_deviceless_dumps.py without a
    GPU): each H100 dump shows the kernel of its report and says what it is."""
    from hlo_lsp.dump.recompile import hlo_files

    d = os.path.join(DEVICELESS_EXAMPLES, scenario)
    [after] = [n for n, name in hlo_files(d).items()
               if name.stage == "after_optimizations"]
    assert after.endswith(".sm_9.0a_gpu_after_optimizations.txt")
    assert needle in open(os.path.join(d, after)).read()
    assert "without a GPU" in deviceless_statement(os.path.join(d, after))
    if scenario == "spmd_mesh8":
        assert read_deviceless(d).compiled[0]["devices"] == 8
