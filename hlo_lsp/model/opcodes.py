"""HLO opcodes and their families.

The opcode names are those of ``HLO_OPCODE_LIST`` in xla/hlo/ir/hlo_opcode.h
(openxla/xla, 2025); the family grouping is ours, for hover text and semantic
highlighting.
"""

from __future__ import annotations

ELEMENTWISE = frozenset("""
abs acos acosh add and asin asinh atan atan2 atanh cbrt ceil clamp compare complex convert
bitcast-convert cosine cosh count-leading-zeros divide erf exponential exponential-minus-one
floor imag is-finite log log-plus-one logistic maximum minimum mulhi multiply negate not or
popcnt power real reduce-precision remainder round-nearest-afz round-nearest-even rsqrt select
shift-left shift-right-arithmetic shift-right-logical sign sine sinh sqrt stochastic-convert
subtract tan tanh xor map
""".split())

DATA_MOVEMENT = frozenset("""
bitcast broadcast concatenate copy copy-start copy-done dynamic-reshape dynamic-slice
dynamic-update-slice gather get-dimension-size get-tuple-element iota pad reshape reverse
scatter set-dimension-size slice transpose tuple shuffle constant parameter
""".split())

COMPUTE = frozenset("""
dot ragged-dot scaled-dot convolution fft cholesky triangular-solve batch-norm-grad
batch-norm-inference batch-norm-training reduce reduce-window select-and-scatter sort topk
scan rng rng-bit-generator rng-get-and-update-state
""".split())

COLLECTIVES = frozenset("""
all-gather all-gather-start all-gather-done all-reduce all-reduce-start all-reduce-done
all-to-all ragged-all-to-all collective-broadcast collective-permute collective-permute-start
collective-permute-done collective-reduce reduce-scatter replica-id partition-id send send-done
recv recv-done infeed outfeed
""".split())

CONTROL_FLOW = frozenset("""
call conditional while fusion async-start async-update async-done domain opt-barrier
add-dependency after-all
""".split())

CUSTOM_CALL = frozenset({"custom-call"})

FAMILIES: dict[str, frozenset[str]] = {
    "elementwise": ELEMENTWISE,
    "data movement": DATA_MOVEMENT,
    "compute": COMPUTE,
    "collective": COLLECTIVES,
    "control flow": CONTROL_FLOW,
    "custom-call": CUSTOM_CALL,
}

OPCODES: frozenset[str] = frozenset().union(*FAMILIES.values())


def family(opcode: str) -> str | None:
    """The family of ``opcode`` ("elementwise", "collective", ...), None if unknown."""
    for name, members in FAMILIES.items():
        if opcode in members:
            return name
    return None
