"""Shapes, element types and layouts of HLO text, decoded and explained.

An array shape arrives from the parser as one token such as
``f32[8,128]{1,0:T(8,128)S(1)}``; :func:`parse_array_shape` decodes it on demand
(hover, inlay hints), so parsing a multi-megabyte dump never pays for it.

Facts mirror ``xla/xla_data.proto`` (PrimitiveType), ``xla/primitive_util.h``
(bit widths) and ``xla/layout.h`` / ``xla/layout.cc`` (layout printing).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Protocol, Sequence

from hlo_lsp.model.memo import short_text_cache

#: Element type -> (bit width, description). Sub-byte types occupy one byte per
#: element unless the layout packs them with ``E(bits)`` (xla/primitive_util.h).
ELEMENT_TYPES: dict[str, tuple[int, str]] = {
    "pred": (8, "boolean"),
    "s1": (1, "1-bit signed integer"),
    "s2": (2, "2-bit signed integer"),
    "s4": (4, "4-bit signed integer"),
    "s8": (8, "8-bit signed integer"),
    "s16": (16, "16-bit signed integer"),
    "s32": (32, "32-bit signed integer"),
    "s64": (64, "64-bit signed integer"),
    "u1": (1, "1-bit unsigned integer"),
    "u2": (2, "2-bit unsigned integer"),
    "u4": (4, "4-bit unsigned integer"),
    "u8": (8, "8-bit unsigned integer"),
    "u16": (16, "16-bit unsigned integer"),
    "u32": (32, "32-bit unsigned integer"),
    "u64": (64, "64-bit unsigned integer"),
    "f16": (16, "IEEE half precision float"),
    "bf16": (16, "bfloat16: 8 exponent bits, 7 mantissa bits"),
    "f32": (32, "IEEE single precision float"),
    "f64": (64, "IEEE double precision float"),
    "c64": (64, "complex of two f32"),
    "c128": (128, "complex of two f64"),
    "f8e5m2": (8, "FP8 E5M2 (IEEE-like, with infinities)"),
    "f8e4m3": (8, "FP8 E4M3 (IEEE-like, with infinities)"),
    "f8e4m3fn": (8, "FP8 E4M3, finite only (no infinities, NaN kept)"),
    "f8e4m3b11fnuz": (8, "FP8 E4M3 with exponent bias 11, finite, no negative zero"),
    "f8e3m4": (8, "FP8 E3M4 (IEEE-like)"),
    "f8e5m2fnuz": (8, "FP8 E5M2, finite, no negative zero"),
    "f8e4m3fnuz": (8, "FP8 E4M3, finite, no negative zero"),
    "f8e8m0fnu": (8, "MX scale type: 8 exponent bits, no mantissa, unsigned"),
    "f4e2m1fn": (4, "FP4 E2M1, finite (MX value type)"),
    "token": (0, "ordering token (no data)"),
    "opaque": (0, "opaque handle"),
}

#: Memory spaces printed as ``S(n)`` in a layout (xla/layout.h; 5 is host on GPU/TPU).
MEMORY_SPACES = {0: "default device memory", 1: "alternate (fast / collective) memory",
                 2: "semaphore memory", 5: "host memory"}

_SHAPE_RE = re.compile(
    r"(?P<buffer>b\()?(?P<type>[a-z0-9]+)\[(?P<dims>[^\]]*)\](?:\{(?P<layout>[^{}]*)\})?\)?")
_TILE_RE = re.compile(r"\(([^()]*)\)")


@dataclass(frozen=True, slots=True)
class Layout:
    """A decoded layout such as ``{1,0:T(8,128)(2,1)S(1)}``.

    ``minor_to_major`` lists dimensions fastest-varying first; ``tiles`` are the
    ``T(...)`` tiles, outermost first; ``memory_space`` is ``S(n)`` (0 if absent);
    ``element_size_bits`` is ``E(n)`` (0 if absent); ``extra`` keeps every other
    layout item verbatim (``D(..)``, ``L(..)``, ``SC(..)``, ``P(..)``, ``M(..)``).
    """

    minor_to_major: tuple[int, ...]
    tiles: tuple[tuple[str, ...], ...] = ()
    memory_space: int = 0
    element_size_bits: int = 0
    extra: tuple[str, ...] = ()

    def explain(self, rank: int) -> list[str]:
        """Lines of plain English describing this layout for an array of ``rank``."""
        lines: list[str] = []
        m2m = self.minor_to_major
        if rank >= 1 and len(m2m) != rank:
            # XLA rejects such a layout (xla/layout_util.cc ValidateLayoutForShape).
            lines.append(f"minor_to_major {{{','.join(map(str, m2m))}}} lists {len(m2m)} "
                         f"dimensions, but the array has {rank}: not a valid layout")
        elif rank >= 2 and m2m == tuple(range(rank - 1, -1, -1)):
            lines.append(f"minor_to_major {{{','.join(map(str, m2m))}}}: row-major "
                         "(last dimension contiguous)")
        elif rank >= 2 and m2m == tuple(range(rank)):
            lines.append(f"minor_to_major {{{','.join(map(str, m2m))}}}: column-major "
                         "(first dimension contiguous)")
        elif rank >= 2:
            lines.append(f"minor_to_major {{{','.join(map(str, m2m))}}}: dimension {m2m[0]} "
                         f"varies fastest, dimension {m2m[-1]} slowest")
        for tile in self.tiles:
            lines.append(f"tiled by ({','.join(tile)}) over the minor-most dimensions")
        if self.element_size_bits:
            lines.append(f"elements packed to {self.element_size_bits} bits (E)")
        if self.memory_space:
            where = MEMORY_SPACES.get(self.memory_space, "backend-specific memory")
            lines.append(f"memory space S({self.memory_space}): {where}")
        lines.extend(f"layout attribute {item}" for item in self.extra)
        return lines


@dataclass(frozen=True, slots=True)
class ArrayShape:
    """An array shape: element type, dimensions and optional layout.

    ``dims`` holds sizes; a bounded dynamic dimension ``<=N`` has size ``N`` and
    ``dynamic[i]`` true; an unbounded ``?`` has size ``-1``.

    ``num_elements``, ``byte_size`` and ``is_dynamic`` are computed once, when
    the shape is made: a shape is frozen, and the cost model and the summary
    read them tens of thousands of times per dump (:func:`parse_array_shape`
    gives each distinct text one shape object).
    """

    element_type: str
    dims: tuple[int, ...]
    dynamic: tuple[bool, ...]
    layout: Layout | None
    text: str
    #: Number of elements, ``None`` for an unbounded dimension.
    num_elements: int | None = field(init=False, repr=False, compare=False)
    #: Size in bytes of the array data (upper bound for bounded dynamic shapes).
    #: Sub-byte types take one byte per element unless the layout packs them
    #: with ``E(bits)``; tiling padding is not counted. ``None`` if a dimension
    #: is unbounded or the element type is unknown.
    byte_size: int | None = field(init=False, repr=False, compare=False)
    #: Whether a dimension is dynamic (bounded ``<=N`` or unbounded ``?``).
    is_dynamic: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        count = None if any(d < 0 for d in self.dims) else math.prod(self.dims)
        object.__setattr__(self, "num_elements", count)
        object.__setattr__(self, "byte_size", _array_bytes(self.element_type, self.layout, count))
        object.__setattr__(self, "is_dynamic", any(self.dynamic))

    @property
    def rank(self) -> int:
        return len(self.dims)


def _array_bytes(element_type: str, layout: Layout | None, count: int | None) -> int | None:
    """Bytes of ``count`` elements of ``element_type`` (see :attr:`ArrayShape.byte_size`)."""
    info = ELEMENT_TYPES.get(element_type)
    if count is None or info is None:
        return None
    bits = info[0]
    if layout is not None and layout.element_size_bits:
        bits = layout.element_size_bits
    elif 0 < bits < 8:
        bits = 8
    return (count * bits + 7) // 8


@dataclass(frozen=True, slots=True)
class TupleShape:
    """A tuple shape ``(s0, s1, ...)``; ``elements`` are ArrayShape or TupleShape."""

    elements: tuple["Shape", ...] = field(default_factory=tuple)

    @property
    def text(self) -> str:
        return "(" + ", ".join(e.text for e in self.elements) + ")"

    @property
    def byte_size(self) -> int | None:
        """Sum of the element sizes in bytes (the tuple's pointer table is not counted)."""
        total = 0
        for e in self.elements:
            size = e.byte_size
            if size is None:
                return None
            total += size
        return total


Shape = ArrayShape | TupleShape


def _parse_layout(text: str) -> Layout:
    head, _, tail = text.partition(":")
    m2m = tuple(int(x) for x in head.split(",") if x.strip().lstrip("-").isdigit())
    tiles: list[tuple[str, ...]] = []
    memory_space = 0
    element_bits = 0
    extra: list[str] = []
    i = 0
    while i < len(tail):
        j = i
        while j < len(tail) and tail[j].isalpha():
            j += 1
        key = tail[i:j]
        groups = []
        while j < len(tail) and tail[j] == "(":
            m = _TILE_RE.match(tail, j)
            if not m:
                break
            groups.append(m.group(1))
            j = m.end()
        if j == i:  # unexpected character: keep the rest verbatim
            extra.append(tail[i:])
            break
        if key == "T":
            tiles.extend(tuple(g.split(",")) for g in groups)
        elif key == "S" and groups and groups[0].isdigit():
            memory_space = int(groups[0])
        elif key == "E" and groups and groups[0].isdigit():
            element_bits = int(groups[0])
        else:
            extra.append(key + "".join(f"({g})" for g in groups))
        i = j
    return Layout(m2m, tuple(tiles), memory_space, element_bits, tuple(extra))


@short_text_cache(maxsize=16384, max_chars=1000)
def parse_array_shape(text: str) -> ArrayShape:
    """Decode one ``ARRAY_SHAPE`` token (see grammar/hlo.lark). The same text
    gives the same (frozen) shape: a module writes few distinct shapes many
    times, so decoded shapes are remembered (the last 16,384 texts of at most
    1,000 characters).

    Raises ValueError if ``text`` is not an array shape.
    """
    m = _SHAPE_RE.fullmatch(text.strip())
    if not m:
        raise ValueError(f"not an array shape: {text!r}")
    dims: list[int] = []
    dynamic: list[bool] = []
    for d in m.group("dims").split(","):
        d = d.strip()
        if not d:
            continue
        if d == "?":
            dims.append(-1)
            dynamic.append(True)
        elif d.startswith("<="):
            dims.append(int(d[2:]))
            dynamic.append(True)
        else:
            dims.append(int(d))
            dynamic.append(False)
    layout = _parse_layout(m.group("layout")) if m.group("layout") is not None else None
    return ArrayShape(m.group("type"), tuple(dims), tuple(dynamic), layout, text)


#: Tuples nested deeper than this are not decoded (hover says so and a warning
#: marks them). XLA's parser has no such limit, it recurses until its stack
#: overflows (about 7,000 levels with jaxlib 0.10 on Linux); real programs nest a
#: few levels.
MAX_TUPLE_DEPTH = 100


class ShapeNode(Protocol):
    """What :func:`decode_shape` reads of a shape as written: the text of an
    array shape, or the elements of a tuple (``hlo_lsp.model.hlo.ShapeToken``)."""

    text: str
    elements: "Sequence[ShapeNode] | None"


def tuple_depth(node: ShapeNode) -> int:
    """How deeply tuples nest in ``node``: 0 for an array shape, 1 for a tuple of
    arrays. Iterative: any depth is fine."""
    deepest = 0
    stack = [(node, 0)]
    while stack:
        n, depth = stack.pop()
        if n.elements is not None:
            depth += 1
            deepest = max(deepest, depth)
            stack.extend((e, depth) for e in n.elements)
    return deepest


def decode_shape(node: ShapeNode, max_depth: int = MAX_TUPLE_DEPTH) -> Shape:
    """The decoded shape of ``node``. Raises ValueError for a malformed array
    shape or a tuple nested deeper than ``max_depth`` levels (the message says
    how deep). Iterative, so it never hits Python's recursion limit."""
    if node.elements is None:  # an array shape: no tuple to measure
        return parse_array_shape(node.text)
    depth = tuple_depth(node)
    if depth > max_depth:
        raise ValueError(f"tuple nested {depth} levels deep; hlo-lsp decodes shapes "
                         f"up to {max_depth} levels")
    # Post-order without recursion: children are decoded before their tuple.
    done: dict[int, Shape] = {}
    stack: list[tuple[ShapeNode, bool]] = [(node, False)]
    while stack:
        n, expanded = stack.pop()
        if n.elements is None:
            done[id(n)] = parse_array_shape(n.text)
        elif expanded:
            done[id(n)] = TupleShape(tuple(done[id(e)] for e in n.elements))
        else:
            stack.append((n, True))
            stack.extend((e, False) for e in n.elements)
    return done[id(node)]


#: Counts from this on are written as a power of two (:func:`format_integer`).
HUGE_COUNT = 2 ** 80


def format_integer(n: int) -> str:
    """An element or byte count with thousands separators, ``"33,554,432"``; from
    :data:`HUGE_COUNT` (1 YiB) on, which only the dimensions of broken or
    hostile text reach, as ``"about 2^1328"``: such a number has hundreds of
    digits, and past 4,300 Python refuses to write it
    (``sys.int_info.str_digits_check_threshold``)."""
    if n >= HUGE_COUNT:
        return f"about 2^{n.bit_length() - 1}"
    return f"{n:,}"


def format_bytes(n: int) -> str:
    """``n`` bytes as ``"33,554,432 B (32.0 MiB)"`` (:func:`format_integer`)."""
    if n < 1024:
        return f"{n} B"
    if n >= HUGE_COUNT:
        return f"{format_integer(n)} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024:
            break
    return f"{n:,} B ({value:.1f} {unit})"


def describe_shape(shape: Shape) -> list[str]:
    """Markdown lines describing ``shape``: element type, dims, bytes, layout."""
    if isinstance(shape, TupleShape):
        lines = [f"tuple of {len(shape.elements)} elements"]
        size = shape.byte_size
        if size is not None:
            lines[0] += f", {format_bytes(size)} in total"
        for i, e in enumerate(shape.elements):
            lines.append(f"{{{i}}} `{e.text}`" + (
                f" ({format_bytes(e.byte_size)})" if e.byte_size is not None else ""))
        return lines
    bits, what = ELEMENT_TYPES.get(shape.element_type, (0, "unknown element type"))
    dims = "x".join("?" if d < 0 else (f"<={d}" if dyn else str(d))
                    for d, dyn in zip(shape.dims, shape.dynamic)) or "scalar"
    lines = [f"`{shape.element_type}`: {what}" + (f", {bits} bits" if bits else "")]
    count = shape.num_elements
    size = shape.byte_size
    line = f"dimensions {dims}"
    if count is not None and shape.rank:
        line += f" = {format_integer(count)} elements"
    if size is not None:
        line += f", {format_bytes(size)}"
        if shape.is_dynamic:
            line += " at most"
    lines.append(line)
    if shape.layout is not None:
        lines.extend(shape.layout.explain(shape.rank))
    return lines
