"""Issue 40: a scaled FP8 matmul block with a bias, as a JAX user writes it.

``x`` and ``w`` are FP8 (e4m3fn) with one f32 scale each; the block dequantizes
both to BF16, multiplies and adds a BF16 bias. Compiled for an H100 with default
flags (jax 0.10.2) the dot is not an FP8 cuBLASLt call: loop fusions convert the
FP8 inputs to BF16, the dot runs as a Triton GEMM fusion with split-K 4 (its
result ``f32[4,256,384]``, four partial products over K = 512) and a loop fusion
sums the partial products and adds the bias. Runs on the CPU as it is; for the
H100 dump without a GPU:

    hlo-lsp dump --target h100 --out DIR -- python examples/gpu/programs/fp8_matmul_bias.py
"""

import jax
import jax.numpy as jnp

M, K, N = 256, 512, 384  # x is (M, K), w is (K, N), the bias (N,)
BF16 = jnp.bfloat16


@jax.jit
def fp8_block(x, w, sx, sw, b):
    y = (x.astype(BF16) * sx.astype(BF16)) @ (w.astype(BF16) * sw.astype(BF16))
    return y + b


def main():
    kx, kw, kb = jax.random.split(jax.random.key(0), 3)
    x = jax.random.normal(kx, (M, K), jnp.float32).astype(jnp.float8_e4m3fn)
    w = jax.random.normal(kw, (K, N), jnp.float32).astype(jnp.float8_e4m3fn)
    b = jax.random.normal(kb, (N,), jnp.float32).astype(BF16)
    y = fp8_block(x, w, jnp.float32(0.5), jnp.float32(0.25), b)
    print(f"fp8_block: {y.shape} {y.dtype}")


if __name__ == "__main__":
    main()
