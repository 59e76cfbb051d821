"""Seed 001 (openxla/xla#17887): a scaled FP8 matmul, as JAX users write it for cuBLASLt.

XLA rewrites the dequantize -> dot -> scale -> clamp -> quantize pattern into one
``__cublas$lt$matmul$f8`` custom call when Triton GEMM is off
(``--xla_gpu_enable_triton_gemm=false``); with it on (the default, jax 0.10.2) the
dot becomes a Triton GEMM fusion on BF16 operands that separate loop fusions
dequantized: the regression of the report. Runs on the CPU as it is; for the H100 dump without a GPU:

    hlo-lsp dump --target h100 --out DIR -- python examples/gpu/programs/fp8_matmul.py
"""

import jax
import jax.numpy as jnp
import ml_dtypes

M, N, K = 32, 128, 64  # a is (M, K), b is (N, K), the result (M, N)

E4M3_MAX = float(ml_dtypes.finfo(jnp.float8_e4m3fn).max)
DQT = jnp.bfloat16  # the "dequantization" type (required to be BF16 for the rewrite)


@jax.jit
def matmul_fn_with_scale(a_fp8, b_fp8, a_scale, b_scale, d_scale):
    a_dqt = a_fp8.astype(DQT) * a_scale.astype(DQT)
    b_dqt = b_fp8.astype(DQT) * b_scale.astype(DQT)
    d_dqt = jax.lax.dot(a_dqt, b_dqt.T)
    d_dqt = d_dqt * d_scale.astype(DQT)
    d_dqt = jax.lax.clamp(DQT(-E4M3_MAX), d_dqt, DQT(E4M3_MAX))
    return d_dqt.astype(jnp.float8_e4m3fn)


def main():
    ka, kb = jax.random.split(jax.random.key(0))
    a = jax.random.normal(ka, (M, K), jnp.float32).astype(jnp.float8_e4m3fn)
    b = jax.random.normal(kb, (N, K), jnp.float32).astype(jnp.float8_e4m3fn)
    one = jnp.float32(1.0)
    d = matmul_fn_with_scale(a, b, one, one, one)
    print(f"matmul_fn_with_scale: {d.shape} {d.dtype}")


if __name__ == "__main__":
    main()
