"""Large and adversarial inputs stay bounded: no quadratic text scans, no regex backtracking."""

from __future__ import annotations

import time

import pytest

from kgr.tools.registry import call_tool

PURE = ["query_extraction_density", "query_coverage_feedback", "query_quality_metrics", "query_iterative_feedback"]
N = 300_000  # characters per text; the limit is 1,000,000

TEXTS = {
    "initials": "a. " * (N // 3),  # a period after every single letter: no sentence breaks
    "capital_run": "A " * (N // 2),  # one endless run of capitalised words
    "one_word": "A" * N,  # a single huge token
    "suffixes": ("xitis " * (N // 6)),  # what a naive disease regex would backtrack on
    "cjk": "我住在北京。" * (N // 6),
}
KG = {
    "entities": {"Person": [f"Person {i}" for i in range(2000)], "Org": [f"Org Inc {i}" for i in range(500)]},
    "relations": {"KNOWS": [{"subject": f"Person {i}", "object": f"Person {i + 1}"} for i in range(1999)]},
}
SCHEMA = {"entity_schema": ["Person", "Org", *[f"T{i}" for i in range(100)]],
          "relation_schema": ["KNOWS", *[f"R{i}" for i in range(100)]]}


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(TEXTS))
def test_pure_tools_on_large_adversarial_texts(kind: str) -> None:
    text = TEXTS[kind]
    for name in PURE:
        payload = {"text": text, "schema": SCHEMA, "extracted_kg": KG}
        if name == "query_iterative_feedback":
            payload["extraction_history"] = [{"entities": {"Person": ["Person 1"]}}]
        started = time.perf_counter()
        call_tool(name, payload)
        assert time.perf_counter() - started < 20.0, (kind, name)


def test_a_million_characters_is_accepted() -> None:
    out = call_tool("query_coverage_feedback", {"text": "x " * 500_000, "schema": {"entity_schema": ["Person"]},
                                                "extracted_kg": {}})
    assert out["coverage_score"] == 0.4  # 0.6·0 + 0.4·1 (no relation types: nothing missing)


# -- work that grew with the product of two sizes (issue 31, item 5) --------------------------------

def _timed(name: str, payload: dict) -> float:
    call_tool(name, {"text": "Warm up.", "schema": {}, "extracted_kg": {}})  # imports, not timed
    started = time.perf_counter()
    call_tool(name, payload)
    return time.perf_counter() - started


def test_relation_endpoints_in_far_apart_sentences() -> None:
    # "Ann" fills the first 8,000 sentences, "Zed" the last 8,000: the pairwise adjacency test
    # compared 64 million sentence pairs (about 20 s); the set lookups take 16,000
    k = 8000
    text = "Ann went. " * k + "Nobody came. Nobody came. " + "Zed stayed. " * k
    kg = {"entities": {"Person": ["Ann", "Zed"]}, "relations": {"KNOWS": [{"subject": "Ann", "object": "Zed"}]}}
    payload = {"text": text, "schema": {"entity_schema": ["Person"], "relation_schema": ["KNOWS"]}, "extracted_kg": kg}
    assert _timed("query_quality_metrics", payload) < 8.0
    out = call_tool("query_quality_metrics", payload)
    assert out["evaluation_results"]["accuracy"]["details"]["relations_not_in_text"] == 1


def test_names_inside_longer_names_are_found_by_their_rarest_token() -> None:
    # 8,000 mentions "Al B<i>" and entities "Zz Al B<i> Cc": each mention was compared with every
    # entity holding "al" (35 s); the rarest token "b<i>" names one
    k = 8000
    text = " ".join(f"Al B{i} went." for i in range(k))
    kg = {"entities": {"Person": [f"Zz Al B{i} Cc" for i in range(k)]}, "relations": {}}
    from kgr.model.kg import ExtractedKG
    from kgr.tools._text import analyze_text
    from kgr.tools.density import unextracted_mentions

    profile, parsed = analyze_text(text), ExtractedKG.model_validate(kg)
    started = time.perf_counter()
    assert unextracted_mentions(profile, parsed, keep_years=False) == []
    assert time.perf_counter() - started < 5.0


def test_boundary_check_is_not_quadratic_in_names_and_mentions() -> None:
    # 8,000 entities "Al B<i>" inside 8,000 mentions "Al B<i> Cc": 39 s before, all boundary errors
    k = 8000
    text = " ".join(f"Al B{i} Cc went." for i in range(k))
    kg = {"entities": {"Person": [f"Al B{i}" for i in range(k)]}, "relations": {}}
    payload = {"text": text, "schema": {"entity_schema": ["Person"], "relation_schema": []}, "extracted_kg": kg}
    assert _timed("query_quality_metrics", payload) < 15.0
    out = call_tool("query_quality_metrics", payload)
    assert out["evaluation_results"]["accuracy"]["details"]["boundary_errors"] == k
