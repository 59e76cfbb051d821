"""What one instruction runs as (hlo_lsp.model.kernels): the custom-call target
and the meaning of a cuBLAS(Lt) call's tuple results, one answer each."""

from __future__ import annotations

from tests.helpers import FP8_DUMP, read
from hlo_lsp.features.hover import hover
from hlo_lsp.model.hlo import unquote
from hlo_lsp.model.kernels import custom_call_target, result_names, tuple_element
from hlo_lsp.syntax.parser import parse

ESCAPED = r'''HloModule m

ENTRY %e (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %c = f32[4]{0} custom-call(%p), custom_call_target="my\"target\\x"
}
'''


def _ins(module, name):
    return next(i for c in module.computations for i in c.instructions if i.name.name == name)


def test_custom_call_target_is_unquoted_and_unescaped():
    module = parse(ESCAPED)
    assert custom_call_target(_ins(module, "c")) == 'my"target\\x'
    assert custom_call_target(_ins(module, "p")) is None
    assert unquote('"a\\"b"') == 'a"b' and unquote("kLoop") == "kLoop"
    assert unquote("'x'") == "x" and unquote('"') == '"'
    # the hover names the same target
    offset = ESCAPED.index("%c =") + 1
    assert '**custom_call_target** `my"target\\x`' in hover(module, offset).markdown


def test_result_names_and_tuple_elements_of_the_fp8_call():
    text = read(FP8_DUMP)
    module = parse(text)
    call = _ins(module, "cublas-gemm.1.0")
    assert custom_call_target(call) == "__cublas$lt$matmul$f8"
    assert result_names(call) == ["output", "workspace (s8 scratch)"]
    gte = next(i for c in module.computations for i in c.instructions
               if i.opcode == "get-tuple-element")
    element = tuple_element(gte)
    assert (element.producer, element.index, element.meaning) == (call, 0, "output")
    assert tuple_element(call) is None
    # damax_output=true and three results: d_amax is element 1
    damax = text.replace('"damax_output":false', '"damax_output":true').replace(
        "(f8e5m2[128,128]{1,0}, s8[33554432]{0})",
        "(f8e5m2[128,128]{1,0}, f32[], s8[33554432]{0})")
    call = _ins(parse(damax), "cublas-gemm.1.0")
    assert result_names(call) == ["output", "d_amax (max |output|, for FP8 rescaling)",
                                  "workspace (s8 scratch)"]
