"""Is an attribute's value written as XLA's parser reads it?

One check per value syntax of ``xla/hlo/parser/hlo_parser.cc``
(``ParseAttributeHelper``: the ``AttrTy`` of each attribute) for the attributes
whose values hlo-lsp keeps as text: dimension lists, slices, paddings,
windows, dim labels, metadata. Each check returns "" for a value XLA accepts
and otherwise what is wrong, in words; :func:`value_problem` is the one entry.

The rules were checked against jaxlib 0.10.2's parser value by value (the
differential test, ``benchmarks/differential.py``, keeps them honest):
``dimensions={0,,}``, ``slice={[0:]}``, ``padding=0__2``, ``window={stride=2}``
(no ``size``), ``metadata={="x"}``, ``metadata={op_name=x}`` (unquoted) and a
metadata key given twice are all "error parsing attribute ...".

Values repeat across a dump (``dimensions={0}`` thousands of times), so the
answers about short ones are remembered (:func:`hlo_lsp.model.memo.short_text_cache`);
a hostile dump's megabyte of metadata is checked and forgotten.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from hlo_lsp.model.memo import short_text_cache

__all__ = ["value_problem", "split_top_level", "BLOCK_COMMENT", "DIMENSION_LIST_ATTRIBUTES", "UNKNOWN_KEY"]

#: The start of the message for a metadata key this XLA version does not know:
#: a warning, not an error (newer XLA adds keys, as it adds attributes).
UNKNOWN_KEY = "unknown metadata key"

#: Attributes whose value is a braced list of integers, ``{}`` or ``{1,0}``
#: (hlo_parser.cc AttrTy::kBracedInt64List).
DIMENSION_LIST_ATTRIBUTES: frozenset[str] = frozenset({
    "dimensions", "slice_sizes", "dynamic_slice_sizes", "lhs_contracting_dims",
    "rhs_contracting_dims", "lhs_batch_dims", "rhs_batch_dims", "offset_dims",
    "collapsed_slice_dims", "start_index_map", "inserted_window_dims",
    "update_window_dims", "scatter_dims_to_operand_dims", "operand_batching_dims",
    "start_indices_batching_dims", "input_batching_dims", "scatter_indices_batching_dims",
    "fft_length",
})

_INT_LIST = re.compile(r"\{\s*(?:-?\d+\s*(?:,\s*-?\d+\s*)*)?\}")
# `[start:limit]` or `[start:limit:stride]` per dimension (AttrTy::kSliceRanges).
_SLICE = re.compile(r"\{\s*(?:\[\s*-?\d+\s*:\s*-?\d+\s*(?::\s*-?\d+\s*)?\]"
                    r"(?:\s*,\s*\[\s*-?\d+\s*:\s*-?\d+\s*(?::\s*-?\d+\s*)?\])*\s*)?\}")
# `low_high[_interior]` per dimension, joined by `x` (AttrTy::kPaddingConfig).
_PADDING = re.compile(r"-?\d+_-?\d+(?:_-?\d+)?(?:x-?\d+_-?\d+(?:_-?\d+)?)*")
# `b01f_01io->b01f` (AttrTy::kConvolutionDimensionNumbers); dot-like labels
# such as `bf_io->bf` too. Three non-empty parts.
_DIM_LABELS = re.compile(r"[0-9a-z?]+_[0-9a-z?]+->[0-9a-z?]+")
# A window's items (AttrTy::kWindow): `size=3x3 stride=2x2 pad=1_1x1_1 ...`.
_WINDOW_ITEM = re.compile(r"(size|stride|lhs_dilate|rhs_dilate|rhs_reversal)=(-?\d+(?:x-?\d+)*)"
                          r"|pad=(-?\d+_-?\d+(?:x-?\d+_-?\d+)*)")

#: Keys of ``metadata={...}`` (xla_data.proto OpMetadata as the parser reads
#: them) and whether the value is a quoted string, an integer or a braced list.
_METADATA_KEYS: dict[str, str] = {
    "op_type": "string", "op_name": "string", "source_file": "string",
    "deduplicated_name": "string", "scheduling_name": "string",
    "source_line": "int", "source_end_line": "int", "source_column": "int",
    "source_end_column": "int", "stack_frame_id": "int", "profile_type": "list",
}
_METADATA_TOKEN = re.compile(
    r'\s*,?\s*(?:([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*+"|\{[^{}]*\}|[^\s,{}"]++)|(\S))')
_INT = re.compile(r"-?\d+")
#: A quoted string (group 1, kept) or a comment, which hlo_lexer.cc skips
#: between a metadata value's tokens.
_STRING_OR_COMMENT = re.compile(r'("(?:[^"\\]|\\.)*+")|//[^\n\r]*+|/\*(?:[^*]|\*(?!/))*+\*/')

#: At most this long, a value has its answer remembered.
VALUE_CACHE_CHARS = 1000


def value_problem(name: str, value: str) -> str:
    """What XLA's parser finds wrong in ``name=value``, "" when nothing or when
    hlo-lsp does not model that attribute's syntax. A message starting with
    :data:`UNKNOWN_KEY` is a warning. Never raises; linear time."""
    if name not in _CHECKS:
        return ""
    return _problem(value, name)


@short_text_cache(maxsize=1 << 14, max_chars=VALUE_CACHE_CHARS)
def _problem(value: str, name: str) -> str:
    return _CHECKS[name](value)


def _fullmatch(pattern: re.Pattern, message: str) -> Callable[[str], str]:
    """The check of a value ``pattern`` reads whole: "" or ``message``."""
    return lambda value: "" if pattern.fullmatch(value) else message


#: A ``//`` comment, to a line break (``\r`` included: hlo_lexer.cc).
_LINE_COMMENT = re.compile(r"//[^\n\r]*")
#: A ``/* ... */`` comment (hlo_lexer.cc skips them anywhere between tokens).
BLOCK_COMMENT = re.compile(r"/\*(?:[^*]|\*(?!/))*+\*/")
_DIM = r"\s*(?:\d+|<=\d+|\?)\s*"
_ARRAY_SHAPE = re.compile(
    rf"(?:b\()?[a-z][a-z0-9]*\[(?:{_DIM}(?:,{_DIM})*)?\]"
    r"(?:\{(?:\s*\d+\s*(?:,\s*\d+\s*)*)?(?::[^{}]*)?\})?\)?")
_ELEMENT_TYPES = frozenset(
    "pred s1 s2 s4 s8 s16 s32 s64 u1 u2 u4 u8 u16 u32 u64 f16 f32 f64 bf16 c64 c128 token "
    "opaque f8e5m2fnuz f8e5m2 f8e4m3fnuz f8e4m3fn f8e4m3b11fnuz f8e4m3 f8e3m4 f8e8m0fnu "
    "f4e2m1fn".split())


def split_top_level(text: str) -> list[str]:
    """``text`` split at the commas outside brackets (all of ``([{``)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return out


def _shape_ok(text: str, depth: int = 0) -> bool:
    """Is ``text`` an array shape or a tuple of shapes (nesting bounded)?"""
    text = text.strip()
    if text.startswith("("):
        if not text.endswith(")") or depth > 32:
            return False
        inner = text[1:-1].strip()
        return not inner or all(_shape_ok(t, depth + 1) for t in split_top_level(inner))
    if text in ("token[]", "token"):
        return True
    m = _ARRAY_SHAPE.fullmatch(text)
    return m is not None and text.removeprefix("b(").split("[", 1)[0] in _ELEMENT_TYPES


def _program_shape_problem(value: str) -> str:
    """``{(parameter shapes)->result shape}`` (hlo_parser.cc ParseComputationLayout):
    a shape for each parameter and one for the result."""
    wrong = "error parsing attribute entry_computation_layout: expects {(parameter shapes)->result shape}"
    value = _LINE_COMMENT.sub("", BLOCK_COMMENT.sub("", value))  # `/*index=5*/` every five
    if not (value.startswith("{") and value.endswith("}")):
        return wrong
    params, arrow, result = value[1:-1].partition("->")
    params = params.strip()
    if not arrow or not (params.startswith("(") and params.endswith(")")):
        return wrong
    if not _shape_ok(params) or not _shape_ok(result):
        return wrong
    return ""


def _window_problem(value: str) -> str:
    if not (value.startswith("{") and value.endswith("}")):
        return "error parsing attribute window: expects {size=... stride=... pad=...}"
    body = value[1:-1].strip()
    if not body:
        return ""
    seen = set()
    for item in body.split():
        m = _WINDOW_ITEM.fullmatch(item)
        if m is None:
            return f"error parsing attribute window: unexpected {item!r}"
        seen.add(m.group(1) or "pad")
    if "size" not in seen:
        return "error parsing attribute window: a window needs size="
    return ""


def _metadata_problem(value: str) -> str:
    if not (value.startswith("{") and value.endswith("}")):
        return "error parsing attribute metadata: expects {key=value ...}"
    body = _STRING_OR_COMMENT.sub(lambda m: m.group(1) or " ", value[1:-1])
    seen: set[str] = set()
    for m in _METADATA_TOKEN.finditer(body):
        key, raw, stray = m.groups()
        if stray is not None:
            return f"error parsing attribute metadata: unexpected {stray!r}"
        kind = _METADATA_KEYS.get(key)
        if kind is None:
            return f"{UNKNOWN_KEY} {key} (XLA of jaxlib 0.10.2 rejects it; a newer XLA may accept it)"
        if key in seen:
            return f"error parsing attribute metadata: {key} is given twice"
        seen.add(key)
        first = raw[0]
        if ((kind == "string") != (first == '"') or (kind == "list") != (first == "{")
                or (kind == "int" and not _INT.fullmatch(raw))):
            return (f"error parsing attribute metadata: {key} expects "
                    f"{'a quoted string' if kind == 'string' else 'an integer' if kind == 'int' else 'a braced list'}")
    return ""


#: Attribute name -> the check of its values (value -> "" or what is wrong): the
#: attributes whose syntax hlo-lsp models.
_CHECKS: dict[str, Callable[[str], str]] = {
    **{name: _fullmatch(_INT_LIST, f"error parsing attribute {name}: expects a list of "
                        "integers such as {1,0}")
       for name in DIMENSION_LIST_ATTRIBUTES},
    "slice": _fullmatch(_SLICE, "error parsing attribute slice: expects {[start:limit], ...} "
                        "or [start:limit:stride]"),
    "padding": _fullmatch(_PADDING, "error parsing attribute padding: expects "
                          "low_high[_interior] per dimension, joined by x"),
    "dim_labels": _fullmatch(_DIM_LABELS, "error parsing attribute dim_labels: expects labels "
                             "such as b01f_01io->b01f"),
    "window": _window_problem,
    "metadata": _metadata_problem,
    "entry_computation_layout": _program_shape_problem,
}
