"""Seed 002 (openxla/xla#23630): a convolution with bias and ReLU in FP16.

On a GPU XLA fuses the three into one cuDNN call,
``custom_call_target="__cudnn$convBiasActivationForward"`` with
``"activation_mode":"kRelu"`` in its ``cudnn_conv_backend_config``.
"""

import jax
import jax.numpy as jnp

BATCH, SIZE, C_IN, C_OUT = 8, 32, 64, 64


@jax.jit
def conv_bias_relu(x, w, b):
    y = jax.lax.conv_general_dilated(x, w, window_strides=(1, 1), padding="SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return jax.nn.relu(y + b)


def main():
    kx, kw = jax.random.split(jax.random.key(0))
    x = jax.random.normal(kx, (BATCH, SIZE, SIZE, C_IN), jnp.float16)
    w = jax.random.normal(kw, (3, 3, C_IN, C_OUT), jnp.float16)
    b = jnp.ones((C_OUT,), jnp.float16)
    print("conv_bias_relu:", conv_bias_relu(x, w, b).shape)


if __name__ == "__main__":
    main()
