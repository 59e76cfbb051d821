"""Issue 44: reductions of one elementwise producer, as a JAX user writes row
statistics. Compiled for an H100 (jax 0.10.2) XLA:GPU's priority fusion makes a
loop fusion of ``tanh(x) * y`` (``fusion.1`` in its log) and input fusions of
the reductions; the later ``multi_output_fusion`` pass merges ``exp(x)`` into
that loop fusion, a multi-output fusion whose root is a tuple, and
``rename_fusions`` renames it ``loop_exponential_multiply_fusion``: a name the
priority-fusion log never wrote, found only by matching the module after
priority fusion (its pass snapshot) with the after-optimizations module. Runs on
the CPU as it is; for the H100 dump without a GPU, with pass dumps on:

    XLA_FLAGS=--xla_dump_hlo_pass_re=.* hlo-lsp dump --target h100 --out DIR -- \\
        python examples/gpu/programs/reduce_stats.py
"""

import jax
import jax.numpy as jnp


@jax.jit
def stats(x, y):
    a = jnp.tanh(x) * y
    return a.sum(-1), (a * a).max(-1), jnp.exp(x).sum(0)


if __name__ == "__main__":
    print(stats(jnp.ones((512, 1024)), jnp.ones((512, 1024))))
