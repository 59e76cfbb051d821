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
