"""What shapes cost, the arithmetic under XLA's ``HloCostAnalysis``
(xla/service/hlo_cost_analysis.cc, xla/shape_util.cc): the bytes of a buffer as
XLA's CPU backend counts them (:func:`shape_size`), element counts, window
attributes (:func:`parse_window`), and the FLOPs of a dot and of a convolution
over the window positions that land inside the input. The per-instruction rules
that use them are :mod:`hlo_lsp.model.cost`. Pure; never raises on a malformed
shape (it counts zero).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from hlo_lsp.model.hlo import Instruction
from hlo_lsp.model.shapes import ArrayShape, Shape, TupleShape


#: Bytes of a pointer on the 64-bit hosts XLA's CPU backend runs on: the size
#: of a tuple's index table entry and of an opaque value
#: (``ShapeUtil::ByteSizeOf(shape, sizeof(void*))``, xla/shape_util.cc).
POINTER_BYTES = 8

#: FLOPs of one fused multiply-add (``HloCostAnalysis::kFmaFlops``).
FMA_FLOPS = 2


def shape_size(shape: Shape | None) -> int:
    """Bytes of the top-level buffer of ``shape`` as XLA's CPU backend counts
    them (``CpuExecutable::ShapeSizeBytes``): an array's elements (sub-byte
    types one byte each unless an ``E(n)`` layout packs them), plus 4 bytes per
    dimension when a dimension is dynamic; a tuple's table of 8-byte pointers;
    8 for an opaque value, 0 for a token. 0 when the shape is unknown."""
    if shape is None:
        return 0
    if isinstance(shape, TupleShape):
        return POINTER_BYTES * len(shape.elements)
    if shape.element_type == "opaque":
        return POINTER_BYTES
    size = shape.byte_size or 0
    if shape.is_dynamic:
        size += 4 * shape.rank
    return size


def elements(shape: Shape | None) -> int:
    """Elements of an array shape (``ShapeUtil::ElementsIn``); of a tuple, its
    first element's (XLA's cost rules use the first result of variadic ops)."""
    if isinstance(shape, TupleShape):
        return elements(shape.elements[0]) if shape.elements else 0
    if shape is None:
        return 0
    return shape.num_elements or 0


def leaf_elements(shape: Shape | None) -> int:
    """Elements of every array in ``shape`` (``ShapeUtil::ElementsInRecursive``)."""
    if isinstance(shape, TupleShape):
        return sum(leaf_elements(e) for e in shape.elements)
    return elements(shape)


def leaf_bytes(shape: Shape | None) -> int:
    """:func:`shape_size` summed over the arrays of ``shape``."""
    if isinstance(shape, TupleShape):
        return sum(leaf_bytes(e) for e in shape.elements)
    return shape_size(shape)


def decode(ins: Instruction | None) -> Shape | None:
    """The decoded result shape of ``ins``; None when absent or malformed."""
    if ins is None or ins.shape is None:
        return None
    try:
        return ins.shape.decode()
    except (ValueError, TypeError):
        return None


def int_list(value: str | None) -> list[int]:
    """``{1,0}`` or ``1x2`` -> ``[1, 0]`` / ``[1, 2]``; [] when absent."""
    if not value:
        return []
    return [int(x) for x in re.findall(r"-?\d+", value)]


@dataclass(frozen=True, slots=True)
class WindowDim:
    """One dimension of a ``window={...}`` attribute (xla/xla_data.proto Window)."""

    size: int = 1
    stride: int = 1
    pad_low: int = 0
    pad_high: int = 0
    base_dilation: int = 1
    window_dilation: int = 1


def parse_window(value: str | None) -> list[WindowDim]:
    """The dimensions of ``window={size=3x3 stride=2x2 pad=0_1x0_1 lhs_dilate=..
    rhs_dilate=..}`` (printed by xla/window_util.cc ``ToString``); [] without one."""
    if not value:
        return []
    fields = dict(re.findall(r"(\w+)=([-\d_x]+)", value))
    sizes = int_list(fields.get("size", "").replace("x", ","))
    n = len(sizes)

    def per_dim(key: str, default: int) -> list[int]:
        vals = [int(v) for v in fields[key].split("x")] if key in fields else []
        return vals if len(vals) == n else [default] * n

    pads = fields.get("pad", "").split("x") if "pad" in fields else []
    lows, highs = [0] * n, [0] * n
    if len(pads) == n:
        for i, p in enumerate(pads):
            m = re.fullmatch(r"(-?\d+)_(-?\d+)", p)
            if m:
                lows[i], highs[i] = int(m.group(1)), int(m.group(2))
    stride, lhs, rhs = per_dim("stride", 1), per_dim("lhs_dilate", 1), per_dim("rhs_dilate", 1)
    return [WindowDim(sizes[i], stride[i], lows[i], highs[i], lhs[i], rhs[i]) for i in range(n)]


def dot_flops(lhs: Shape | None, result: Shape | None, lhs_contracting: list[int]) -> int:
    """FLOPs of a dot: 2 per output element per contracted element
    (``HloCostAnalysis::GetDotFlops``). A dimension listed twice counts once
    (XLA's shape inference rejects the dot; a broken attribute such as
    ``lhs_contracting_dims={0,=, ...`` lists every number up to the line's end)."""
    if not isinstance(lhs, ArrayShape):
        return 0
    width = 1
    for d in set(lhs_contracting):
        if 0 <= d < lhs.rank:
            width *= max(lhs.dims[d], 0)
    return FMA_FLOPS * elements(result) * width


def _labels(part: str) -> tuple[dict[str, int], list[int]]:
    """Positions of the letters and of the spatial digits of one ``dim_labels`` part."""
    letters = {c: i for i, c in enumerate(part) if c.isalpha()}
    digits = sorted((int(c), i) for i, c in enumerate(part) if c.isdigit())
    return letters, [i for _, i in digits]


def convolution_flops(lhs: Shape | None, rhs: Shape | None, result: Shape | None,
                      dim_labels: str, window: list[WindowDim], feature_groups: int = 1,
                      batch_groups: int = 1) -> int:
    """FLOPs of a convolution: 2 per multiply-add, one multiply-add per input
    feature (of its group), output feature, batch element (of its group) and
    pair of kernel and output positions that reads an input element rather
    than padding or a dilation hole (``HloCostAnalysis::GetConvolutionFlops``).
    ``dim_labels`` as printed (``b01f_01io->b01f``); 0 when it does not decode."""
    if not all(isinstance(s, ArrayShape) for s in (lhs, rhs, result)):
        return 0
    m = re.fullmatch(r"([a-z0-9]+)_([a-z0-9]+)->([a-z0-9]+)", dim_labels.strip())
    if not m:
        return 0
    (in_l, in_sp), (k_l, k_sp), (out_l, out_sp) = (_labels(p) for p in m.groups())
    if window and not len(window) == len(in_sp) == len(k_sp) == len(out_sp):
        return 0
    try:  # labels that name dimensions the shapes lack (a hand-edited dump): 0
        input_feature = lhs.dims[in_l["f"]]
        batch = lhs.dims[in_l["b"]]
        output_feature = result.dims[out_l["f"]]
        if not window:
            window, kernel, output, inputs = [WindowDim()], [1], [1], [1]
        else:
            kernel = [rhs.dims[i] for i in k_sp]
            output = [result.dims[i] for i in out_sp]
            inputs = [lhs.dims[i] for i in in_sp]
    except (KeyError, IndexError):
        return 0
    positions = 1
    for w, k, o, n in zip(window, kernel, output, inputs):
        positions *= _valid_positions(w, k, o, n)
    fma = (input_feature // max(feature_groups, 1)) * output_feature * \
        (batch // max(batch_groups, 1)) * positions
    return fma * FMA_FLOPS


def _valid_positions(w: WindowDim, kernel: int, output: int, inputs: int) -> int:
    """Pairs (kernel position, output position) of one spatial dimension whose
    input index is a real element (the loop of ``GetConvolutionFlops``, with
    its two shortcuts)."""
    if (inputs == output and kernel == output and inputs == w.base_dilation
            and w.window_dilation == 1 and max(1, inputs - 1) == w.stride
            and w.pad_low == 0 and w.pad_high == 0):
        return inputs
    if (inputs == 1 and kernel == output and w.window_dilation == 1 and w.base_dilation == 1
            and w.stride == 1 and w.pad_high == output - 1 and w.pad_low == output - 1):
        return output
    return sum(_valid_outputs(k * w.window_dilation - w.pad_low, w.stride, w.base_dilation,
                              output, inputs)
               for k in range(kernel))


def _valid_outputs(offset: int, stride: int, base_dilation: int, output: int,
                   inputs: int) -> int:
    """Output positions ``o`` in ``[0, output)`` whose dilated input index
    ``u = o * stride + offset`` is a real element: ``u`` a multiple of
    ``base_dilation`` and ``0 <= u / base_dilation < inputs``. Counted in closed
    form, not by visiting every ``o`` (a strided convolution over a long axis has
    millions of pairs)."""
    stride, base_dilation = max(stride, 1), max(base_dilation, 1)
    # 0 <= o * stride + offset <= (inputs - 1) * base_dilation, with 0 <= o < output.
    lo = max(0, -(offset // stride))  # ceil(-offset / stride)
    hi = min(output - 1, ((inputs - 1) * base_dilation - offset) // stride)
    if inputs <= 0 or hi < lo:
        return 0
    if base_dilation == 1:
        return hi - lo + 1
    # o * stride = -offset (mod base_dilation): a residue class modulo
    # base_dilation / g, or no solution when g does not divide the offset.
    g = math.gcd(stride, base_dilation)
    if offset % g:
        return 0
    period = base_dilation // g
    first = (-offset // g) * pow(stride // g, -1, period) % period if period > 1 else 0
    start = lo + (first - lo) % period
    return 0 if start > hi else (hi - start) // period + 1


def log2_ceiling(n: int) -> int:
    """``ceil(log2(n))`` for ``n`` >= 1 (0 for ``n`` <= 1): a sort's comparisons
    per element."""
    return (n - 1).bit_length() if n > 0 else 0


def transpose_is_bitcast(operand: Shape | None, result: Shape | None,
                          dimensions: list[int]) -> bool:
    """``ShapeUtil::TransposeIsBitcast``: the transpose only renames
    dimensions, given the layouts (xla/shape_util.cc)."""
    if not (isinstance(operand, ArrayShape) and isinstance(result, ArrayShape)):
        return False
    if operand.element_type != result.element_type:
        return False
    if operand.layout is None or result.layout is None:
        # The parser gives a shape without layout the default (major-to-minor) one.
        in_m2m = operand.layout.minor_to_major if operand.layout else \
            tuple(range(operand.rank - 1, -1, -1))
        out_m2m = result.layout.minor_to_major if result.layout else \
            tuple(range(result.rank - 1, -1, -1))
    else:
        in_m2m, out_m2m = operand.layout.minor_to_major, result.layout.minor_to_major
    if len(out_m2m) != len(dimensions) or len(in_m2m) != len(dimensions):
        return False
    try:
        return all(dimensions[out_m2m[i]] == in_m2m[i] for i in range(len(dimensions)))
    except IndexError:
        return False
