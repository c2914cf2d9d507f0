"""The extractor interface: result model, accounting helpers, concurrent extraction."""

from __future__ import annotations

import asyncio

import pytest

from kgr.errors import KgrExtractionError
from kgr.extract import ExtractionResult, Extractor, RulesExtractor, TokenUsage, extract_concurrently
from kgr.model.schema import KGSchema

SCHEMA = KGSchema.model_validate(
    {
        "entity_types": {"Person": {"names": ["Ada"]}, "Place": {"names": ["London"]}},
        "relation_types": {"BORN_IN": {"domain": ["Person"], "range": ["Place"], "triggers": ["born in"]}},
    }
)


def test_token_usage_adds_and_serialises_its_total():
    u = TokenUsage(prompt_tokens=3, completion_tokens=4) + TokenUsage(prompt_tokens=10)
    assert u.model_dump() == {"prompt_tokens": 13, "completion_tokens": 4, "total_tokens": 17}


def test_result_defaults_are_empty_and_round_trip():
    r = ExtractionResult()
    assert r.kg.entity_count == 0 and r.proposed_types.is_empty and r.rejected == []
    assert r.llm_calls == 0 and r.cost_usd == 0.0
    assert ExtractionResult.model_validate_json(r.model_dump_json(exclude={"usage": {"total_tokens"}})) == r


class Flaky:
    """A sync-only extractor that fails on one text."""

    def extract(self, chunk_text, schema, *, guidance=None):
        if "bad" in chunk_text:
            raise KgrExtractionError("cannot read this chunk")
        return RulesExtractor().extract(chunk_text, schema, guidance=guidance)


def test_extract_concurrently_runs_sync_extractors_and_keeps_failures_in_place():
    assert isinstance(Flaky(), Extractor)
    texts = ["Ada was born in London.", "bad chunk", "Ada was born in London."]
    out = asyncio.run(extract_concurrently(Flaky(), texts, SCHEMA, concurrency=2))
    assert isinstance(out[1], KgrExtractionError)
    assert [p.object for p in out[0].kg.relations["BORN_IN"]] == ["London"]
    assert out[0] == out[2]
    with pytest.raises(ValueError, match="concurrency"):
        asyncio.run(extract_concurrently(Flaky(), texts, SCHEMA, concurrency=0))
