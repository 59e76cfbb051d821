"""The JAX program of ``examples/cpu_profiled/`` (made by ``make_profiled_dump.py``
with ``hlo-lsp dump --platform cpu --profile 5``): a convolution, a sort, a while
loop, a conditional and an FFT in one jitted function, called once (its compile,
not traced) and then 5 times (traced)."""

import jax
import jax.numpy as jnp
from jax import lax

CALLS = 6


def net(x, k):
    y = lax.conv_general_dilated(x, k, (1, 1), "SAME")
    y = jnp.sort(y.reshape(-1))

    def body(c):
        i, v = c
        return i + 1, jnp.tanh(v) * 1.01

    _, y = lax.while_loop(lambda c: c[0] < 3, body, (0, y))
    y = lax.cond(y.sum() > 0, lambda v: v * 2, lambda v: v - 1, y)
    return jnp.fft.fft(y[:64]).real.sum() + y.sum()


if __name__ == "__main__":
    f = jax.jit(net)
    x = jnp.ones((2, 3, 16, 16))
    k = jnp.ones((4, 3, 3, 3))
    for _ in range(CALLS):
        f(x, k).block_until_ready()
