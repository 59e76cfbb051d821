"""Write ``hlo_lsp/model/opcode_rules.py`` from XLA's own parser.

The operand counts and attribute lists of each opcode live in XLA's
``xla/hlo/parser/hlo_parser.cc`` (``ParseInstructionRhs``: one ``case`` per
opcode with its ``attrs`` map and ``ParseOperands(&operands, builder,
expected_size)``). Rather than transcribe them by hand, this script asks the
installed jaxlib's parser: for every opcode of ``hlo_lsp.model.opcodes.OPCODES``
it parses one instruction with 0..6 operands (XLA answers "expects N operands"),
one with an attribute no opcode has (XLA lists the allowed attributes), and one
with the right operands and no attributes (XLA names a required attribute).

Usage: ``python benchmarks/opcode_rules.py`` (needs jaxlib); review the diff.
"""

from __future__ import annotations

import pprint
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hlo_lsp.model.opcodes import OPCODES  # noqa: E402
from hlo_lsp.syntax.xla import XlaOracle, jaxlib_version  # noqa: E402

MAX_OPERANDS = 6
_COUNT = re.compile(r"expects (\d+) operands, but has (\d+) operands")
_ALLOWED = re.compile(r'unexpected attribute "zz_probe"\. Allowed attributes: (.*)$')
_REQUIRED = re.compile(r"attribute (\S+) is expected but not seen")


#: Values of the right syntax for the attributes XLA requires, so that the
#: probe learns the next required one (XLA reports one at a time).
SAMPLE_VALUES = {
    "dimensions": "{0}", "to_apply": "%c", "calls": "%c", "body": "%c", "condition": "%c",
    "select": "%c", "scatter": "%c", "comparator": "%c", "branch_computations": "{%c}",
    "custom_call_target": '"x"', "index": "0", "k": "1", "slice": "{[0:1]}",
    "padding": "0_0", "window": "{size=1}", "dim_labels": "b0f_0io->b0f",
    "distribution": "rng_uniform", "fft_type": "FFT", "fft_length": "{1}",
    "direction": "EQ", "iota_dimension": "0", "exponent_bits": "8", "mantissa_bits": "7",
    "feature_index": "0", "epsilon": "0.001", "lhs_contracting_dims": "{0}",
    "rhs_contracting_dims": "{0}", "offset_dims": "{0}", "collapsed_slice_dims": "{}",
    "start_index_map": "{0}", "index_vector_dim": "0", "slice_sizes": "{1}",
    "update_window_dims": "{0}", "inserted_window_dims": "{}",
    "scatter_dims_to_operand_dims": "{0}", "dynamic_slice_sizes": "{1}",
    "source_target_pairs": "{{0,0}}", "algorithm": "rng_default", "largest": "true",
    "kind": "kLoop", "is_cross_program_prefetch": "false", "replica_groups": "{}",
    "dimension": "0", "channel_id": "1",
}


def _text(opcode: str, operands: int, attrs: str = "") -> str:
    params = "\n".join(f"  p{i} = f32[] parameter({i})" for i in range(MAX_OPERANDS))
    args = ", ".join(f"p{i}" for i in range(operands))
    return (f"HloModule m\n\nc {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
            f"  ROOT s = f32[] add(a, b)\n}}\n\nENTRY e {{\n{params}\n"
            f"  ROOT r = f32[] {opcode}({args}){attrs}\n}}\n")


def probe(oracle: XlaOracle, opcode: str) -> dict:
    """What XLA's parser says about ``opcode``: the operand counts it accepts
    (None: any), its allowed attributes and the first required one."""
    counts = []
    expected = set()  # the N of XLA's "expects N operands"
    for k in range(MAX_OPERANDS + 1):
        v = oracle.check(_text(opcode, k))
        found = _COUNT.search(v.message) if v is not None and not v.ok else None
        if found:
            expected.add(int(found.group(1)))
        else:  # accepted, another error, or an abort (XLA CHECK-fails on some)
            counts.append(k)
    if len(expected) == 1:  # XLA names the one count it takes
        counts = sorted(expected)
    rule: dict = {"operands": None if len(counts) == MAX_OPERANDS + 1 else tuple(counts)}
    k = counts[0] if counts else 0
    v = oracle.check(_text(opcode, k, ", zz_probe=1"))
    m = _ALLOWED.search(v.message) if v is not None and not v.ok else None
    rule["attributes"] = tuple(sorted(a.strip() for a in m.group(1).split(","))) if m else None
    required: list[str] = []
    attrs = ""
    while len(required) < 8:
        v = oracle.check(_text(opcode, k, attrs))
        m = _REQUIRED.search(v.message) if v is not None and not v.ok else None
        if not m or m.group(1) in required:
            break
        required.append(m.group(1))
        if m.group(1) not in SAMPLE_VALUES:
            break
        attrs += f", {m.group(1)}={SAMPLE_VALUES[m.group(1)]}"
    rule["required"] = tuple(required)
    return rule


def main() -> int:
    oracle = XlaOracle()
    rules = {op: probe(oracle, op) for op in sorted(OPCODES)}
    oracle.close()
    out = ROOT / "hlo_lsp" / "model" / "opcode_rules.py"
    # Many opcodes share one attribute list (XLA's common attributes): each
    # distinct list is written once, in ATTRIBUTE_SETS, and named by index.
    sets: list[tuple] = sorted({r["attributes"] for r in rules.values() if r["attributes"]})
    lines = []
    for op, r in sorted(rules.items()):
        attrs = ("None" if r["attributes"] is None
                 else f"ATTRIBUTE_SETS[{sets.index(r['attributes'])}]")
        lines.append(f"    {op!r}: {{'operands': {r['operands']!r}, 'attributes': {attrs}, "
                     f"'required': {r['required']!r}}},")
    body = "{\n" + "\n".join(lines) + "\n}"
    sets_text = pprint.pformat(sets, width=96, compact=True)
    out.write_text(f'''"""What XLA's HLO parser accepts per opcode: operand counts, allowed and
required attributes.

Source: ``xla/hlo/parser/hlo_parser.cc`` (``HloParserImpl::ParseInstructionRhs``,
one case per opcode: ``ParseOperands(..., expected_size)`` and the ``attrs``
map of optional and required attributes), as compiled into jaxlib
{jaxlib_version()}. Generated by ``benchmarks/opcode_rules.py``, which asks that
parser (do not edit by hand; run the script again for a newer jaxlib).

``RULES[opcode]``:

- ``operands``: the operand counts XLA accepts (a tuple), or None for any count
  up to the probe's limit (variadic opcodes);
- ``attributes``: the attribute names XLA allows on the opcode (None: unknown);
- ``required``: the attributes XLA requires (its parser reports one at a time;
  the probe stops at one it has no sample value for, so the list may be short).
"""

from __future__ import annotations

#: The distinct attribute lists, which RULES names by index.
ATTRIBUTE_SETS: list[tuple[str, ...]] = {sets_text}

RULES: dict[str, dict] = {body}
''', encoding="utf-8")
    print(f"wrote {out} ({len(rules)} opcodes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
