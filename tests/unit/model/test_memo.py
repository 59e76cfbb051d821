"""``short_text_cache``: answers about short texts are remembered, about long
ones computed every time and never kept (a dump's metadata may hold megabytes)."""

from __future__ import annotations

from hlo_lsp.model.collectives import GROUPS_CACHE_CHARS, parse_replica_groups
from hlo_lsp.model.memo import short_text_cache


def test_short_texts_are_remembered_and_long_ones_are_not_kept():
    calls = []

    @short_text_cache(maxsize=8, max_chars=10)
    def length(text: str, scale: int = 1) -> int:
        calls.append(text)
        return len(text) * scale

    assert [length("abc"), length("abc"), length("abc", 2)] == [3, 3, 6]
    assert calls == ["abc", "abc"]  # (text, 1) and (text, 2) are two questions
    long = "x" * 11
    assert [length(long), length(long)] == [11, 11]
    assert calls[2:] == [long, long]
    assert length.cache_info().currsize == 2 and length.max_chars == 10
    assert length.__name__ == "length"


def test_replica_groups_of_hostile_length_are_decoded_but_not_kept():
    from hlo_lsp.model import collectives

    cache = collectives._parse_replica_groups
    before = cache.cache_info().currsize
    huge = "{" + ",".join("{%d,%d}" % (2 * i, 2 * i + 1) for i in range(2000)) + "}"
    assert len(huge) > GROUPS_CACHE_CHARS
    groups = parse_replica_groups(huge)
    assert groups.form == "list" and groups.group_count == 2000
    assert cache.cache_info().currsize == before


def test_short_text_memo_keeps_short_texts_up_to_its_size():
    from hlo_lsp.model.memo import ShortTextMemo

    calls = []

    def upper(text: str) -> str:
        calls.append(text)
        if text == "bad":
            raise ValueError(text)
        return text.upper()

    memo = ShortTextMemo(upper, maxsize=2, max_chars=3)
    assert [memo["ab"], memo["ab"], memo["abcd"], memo["abcd"]] == ["AB", "AB", "ABCD", "ABCD"]
    assert calls == ["ab", "abcd", "abcd"] and dict(memo) == {"ab": "AB"}
    assert memo.get("zz") is None and "zz" not in memo  # get answers from memory only
    memo["x"]
    memo["y"]  # a third entry: the memo was full and starts again
    assert dict(memo) == {"y": "Y"}
    try:
        memo["bad"]
    except ValueError:
        pass
    assert "bad" not in memo


def test_the_analysis_of_a_hostile_dump_keeps_none_of_its_long_texts():
    """A megabyte of metadata, a shape with thousands of dimensions, a wide tuple:
    after the analysis (its checks, inlay hints and hovers) is dropped, what it
    allocated and is still alive is a small fraction of the text. Before the
    caches followed ``short_text_cache``'s rule, the check of attribute values
    kept every value (the metadata's megabyte) and the check of shapes every
    shape's text, for the life of the server."""
    import gc
    import tracemalloc

    from hlo_lsp.features.hover import hover
    from hlo_lsp.features.inlay_hints import inlay_hints
    from hlo_lsp.analysis.documents import analyze

    def module(tag: str) -> str:
        dims = ",".join(["2"] * 3000)
        wide = "(" + ", ".join(f"f32[{i + 1}]{{0}}" for i in range(400)) + ")"
        op_name = tag + "x" * 1_000_000
        return (f"HloModule m_{tag}\n\nENTRY %main () -> f32[] {{\n"
                f"  %a = f32[{dims}]{{}} parameter(0)\n"
                f"  %t = {wide} parameter(1)\n"
                f"  %c = f32[] constant(1), metadata={{op_name=\"{op_name}\"}}\n"
                f"  ROOT %r = f32[] add(f32[] %c, f32[] %c), metadata={{op_name=\"{op_name}\"}}\n"
                "}\n")

    def use(text: str) -> None:
        analysis = analyze("file:///hostile.hlo", 1, text)
        inlay_hints(analysis.module)
        for needle in ("%a =", "%t =", "%c =", "add("):
            hover(analysis.module, text.index(needle) + 1)

    use(module("warm"))  # what is built once (parsers, tables) is built before
    text = module("probe")
    gc.collect()
    tracemalloc.start()
    try:
        use(text)
        gc.collect()
        alive = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(text) > 2_000_000
    assert alive < 200_000, f"{alive:,} bytes still held after the analysis"
