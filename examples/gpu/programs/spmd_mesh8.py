"""An SPMD program on 8 devices: a matmul whose contracting dimension is sharded
over a ``Mesh`` of 8, so each device computes a partial product and XLA inserts an
``all-reduce`` (on 8 GPUs: NCCL). On the CPU the program asks for 8 CPU devices;
``hlo-lsp dump --target h100`` compiles it for a 1x1x8 topology of H100s.
"""

import jax

jax.config.update("jax_num_cpu_devices", 8)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

ROWS, INNER, COLS = 256, 1024, 512


@jax.jit
def sharded_matmul(x, w):
    return jnp.tanh(x @ w)


def main():
    mesh = Mesh(np.array(jax.devices()[:8]), ("model",))
    x = jax.device_put(jnp.ones((ROWS, INNER), jnp.bfloat16), NamedSharding(mesh, P(None, "model")))
    w = jax.device_put(jnp.ones((INNER, COLS), jnp.bfloat16), NamedSharding(mesh, P("model", None)))
    print("sharded_matmul:", sharded_matmul(x, w).shape)


if __name__ == "__main__":
    main()
