"""Packing a slice into its token budget (pure): facts first, their provenance in a share of the
budget, then more facts."""

from __future__ import annotations

from kgr.model.slices import SliceQuote
from kgr.slices.render import TokenCounter, pack
from kgr.store.slices import EdgeRow, EntityRow

COUNT = TokenCounter()  # the documented estimate: ceil(characters / 4)
A = EntityRow(key="Person:a", type="Person", name="Ada")


def _edges(n: int) -> list[EdgeRow]:
    return [EdgeRow(key=f"e{i:02d}", relation="KNOWS", subject=A,
                    object=EntityRow(key=f"Person:p{i}", type="Person", name=f"Person {i}"),
                    confidence=0.9, votes=2) for i in range(n)]


def _quotes(edges: list[EdgeRow], chars: int) -> dict[str, list[SliceQuote]]:
    return {e.key: [SliceQuote(source=f"s-{e.key}", chunk_id=f"c-{e.key}", document_id="d", path=f"/docs/{e.key}.txt",
                               quote="x" * chars)] for e in edges}


def _quoted(kept: list[EdgeRow], text: str) -> list[str]:
    return [e.key for e in kept if f"/docs/{e.key}.txt" in text]


def test_facts_first_then_quotes_in_their_share_then_facts_again():
    edges = _edges(60)
    quotes = _quotes(edges, 120)
    bare = pack("p", 1, [A], edges, {}, 400, COUNT).edges
    kept, text, tokens, quoted_keys = pack("p", 1, [A], edges, quotes, 400, COUNT, quote_share=0.25)
    assert tokens <= 400 and tokens == COUNT(text)
    first = pack("p", 1, [A], edges, {}, 300, COUNT).edges  # the facts of (1 - 0.25) x 400 tokens
    assert [e.key for e in kept[:len(first)]] == [e.key for e in first]  # none pushed out by a quote
    quoted = _quoted(kept, text)
    assert quoted and quoted == [e.key for e in kept][:len(quoted)]  # the top facts carry their quote
    assert quoted_keys == frozenset(quoted)
    assert len(first) <= len(kept) < len(bare)  # the quotes took part of the budget, facts the rest

    none = pack("p", 1, [A], edges, quotes, 400, COUNT, quote_share=0.0)
    assert [e.key for e in none.edges] == [e.key for e in bare] and _quoted(none.edges, none.text) == []
    roomy = pack("p", 1, [A], edges[:12], quotes, 10_000, COUNT)
    assert len(roomy.edges) == 12 and _quoted(roomy.edges, roomy.text) == [e.key for e in edges[:12]]


def test_a_quote_too_long_for_the_rest_is_skipped_not_the_later_ones():
    edges = _edges(3)
    quotes = _quotes(edges, 40)
    quotes["e00"] = [quotes["e00"][0].model_copy(update={"quote": "y" * 2000})]
    kept, text, tokens, _ = pack("p", 1, [A], edges, quotes, 140, COUNT, quote_share=0.5)
    assert len(kept) == 3 and tokens <= 140
    assert "yyyy" not in text and _quoted(kept, text)[:1] == ["e01"]  # e00's long quote skipped, e01's in
