"""Seed 004: a Pallas kernel for the Mosaic GPU backend (``jax.experimental.pallas.mosaic_gpu``).

XLA sees it as one custom call, ``custom_call_target="mosaic_gpu_v2"``, whose
``backend_config`` carries the kernel. Mosaic GPU kernels need a GPU to RUN
(sm_9.0+): ``jax.lax.platform_dependent`` picks the Mosaic GPU kernel when the
function is lowered for CUDA and Pallas' interpreter elsewhere, so the program runs
on the CPU and ``hlo-lsp dump --target h100`` compiles the Mosaic GPU kernel.
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import mosaic_gpu as plgpu

N = 256


def add_one_kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...] + 1.0


def add_one(x, interpret=False):
    # Mosaic GPU compiler parameters select the backend (jax 0.10).
    return pl.pallas_call(add_one_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          compiler_params=plgpu.CompilerParams(), interpret=interpret,
                          name="add_one")(x)


@jax.jit
def pallas_add_one(x):
    return jax.lax.platform_dependent(x, cuda=add_one,
                                      default=lambda x: add_one(x, interpret=True))


def main():
    print("pallas_add_one:", pallas_add_one(jnp.zeros((N,), jnp.float32))[:3])


if __name__ == "__main__":
    main()
