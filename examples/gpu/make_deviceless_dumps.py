#!/usr/bin/env python3
"""Regenerate examples/gpu/deviceless/: H100 dumps of the seed scenarios, made on a
machine WITHOUT a GPU by ``hlo-lsp dump --target h100`` (JAX's deviceless
ahead-of-time compilation; needs the ``cuda`` extra: ``pip install -e '.[cuda]'``).

    python examples/gpu/make_deviceless_dumps.py [SCENARIO ...]

Each scenario is one program of examples/gpu/programs/ with the XLA flags of its
report. Kernels are chosen without autotuning (it needs the device): on a real
H100 the autotuner may pick differently. The LLVM IR and PTX XLA writes beside
the HLO (``*.ll``, ``*.ptx``) are removed to keep the examples small (but for
``fp8_fusion_log``, which keeps only its few files that issue 44's tests read:
the GEMM fusion's PTX and LLVM IR, the priority-fusion log); everything
else is as XLA and hlo-lsp wrote it (HLO before/after optimizations, buffer
assignment, memory report, thunk sequence, debug options, gpu_target_config,
hlo-lsp-deviceless.json, hlo-lsp-recipe.json).
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
OUT = HERE / "deviceless"

# name -> (program, XLA_FLAGS, what the dump shows)
SCENARIOS = {
    "fp8_cublaslt": ("fp8_matmul.py", "--xla_gpu_enable_triton_gemm=false",
                     "seed 001, before: one __cublas$lt$matmul$f8 call"),
    "fp8_triton_gemm": ("fp8_matmul.py", "",
                        "seed 001, after: a Triton GEMM fusion (__triton_nested_gemm_fusion) "
                        "on BF16 operands dequantized by separate loop fusions, no cuBLASLt"),
    "fp8_splitk": ("fp8_matmul_bias.py", "",
                   "issue 40: a scaled FP8 matmul with a bias becomes a BF16 Triton GEMM "
                   "with split-K 4 (f32[4,256,384], then a reduce), no FP8 GEMM"),
    "conv_bias_relu": ("conv_bias_relu.py", "",
                       "seed 002: __cudnn$convBiasActivationForward"),
    "pallas_mosaic_gpu": ("pallas_mosaic_gpu.py", "", "seed 004: a mosaic_gpu_v2 custom call"),
    "spmd_mesh8": ("spmd_mesh8.py", "", "8 H100s: num_partitions=8 and an async all-reduce"),
    "fp8_fusion_log": ("fp8_matmul_bias.py", "--xla_dump_hlo_pass_re=.*",
                       "issue 44: pass dumps on; kept: the after-optimizations HLO and its "
                       "reports, XLA:GPU's "
                       "priority-fusion log (why each producer was or was not fused) and the "
                       "PTX and optimized LLVM IR of the Triton GEMM fusion's kernel"),
    "multi_output_fusion_log": ("reduce_stats.py", "--xla_dump_hlo_pass_re=.*",
                                "issue 44: a fusion renamed after priority fusion (a multi-output "
                                "fusion); kept: the after-optimizations HLO and its reports, the "
                                "priority-fusion "
                                "log and the pass snapshot after priority-fusion"),
}
DROP = (".ll", ".ptx", ".o")


def _keep_fusion_log(out: pathlib.Path) -> None:
    """Of a dump with pass dumps on, keep the after-optimizations HLO and its
    reports (buffer assignment, live ranges, memory usage), the priority-fusion
    log, the deviceless record and the PTX and optimized LLVM IR holding the GEMM
    fusion's kernel (``.entry gemm_fusion_dot(``); drop the rest (66 pass
    snapshots, the other kernels, the recipe) to keep the example small."""
    gemm = [p for p in out.glob("*.ptx") if ".entry gemm_fusion_dot(" in p.read_text()]
    keep = {p.name for p in gemm}
    keep |= {p.name.replace(".ptx", ".ir-with-opt.ll") for p in gemm}
    for path in out.iterdir():
        name = path.name
        if name in keep or name == "hlo-lsp-deviceless.json" or \
                name.endswith(".priority_fusion_dump.txt") or \
                "gpu_after_optimizations" in name and name.endswith(".txt"):
            continue
        path.unlink()


def _keep_fusion_snapshot(out: pathlib.Path) -> None:
    """Of a dump with pass dumps on, keep the after-optimizations HLO and its
    reports, the priority-fusion log, the pass snapshot right after
    ``priority-fusion`` (the module whose names the log's fusions have) and the
    deviceless record; drop the rest (the other snapshots, kernels, the recipe)."""
    for path in out.iterdir():
        name = path.name
        if name == "hlo-lsp-deviceless.json" or name.endswith(".priority_fusion_dump.txt") or \
                "gpu_after_optimizations" in name and name.endswith(".txt") or \
                ".after_priority-fusion." in name and name.endswith(".txt"):
            continue
        path.unlink()


#: Scenarios that keep another selection of what XLA wrote than all but DROP.
KEEP = {"fp8_fusion_log": _keep_fusion_log, "multi_output_fusion_log": _keep_fusion_snapshot}


def make(name: str) -> None:
    program, flags, what = SCENARIOS[name]
    out = OUT / name
    env = dict(os.environ, XLA_FLAGS=flags)
    env.pop("JAX_PLATFORMS", None)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    print(f"{name}: {what}", flush=True)
    subprocess.run([sys.executable, "-m", "hlo_lsp", "dump", "--target", "h100",
                    "--out", str(out.relative_to(ROOT)), "--", sys.executable,
                    str((HERE / "programs" / program).relative_to(ROOT))],
                   cwd=ROOT, env=env, check=True)
    if name in KEEP:
        KEEP[name](out)
        return
    for path in out.iterdir():
        if path.name.endswith(DROP):
            path.unlink()


def main(argv: list[str]) -> int:
    names = argv or list(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        print(f"unknown scenario(s) {unknown}: {', '.join(SCENARIOS)}", file=sys.stderr)
        return 2
    for name in names:
        make(name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
