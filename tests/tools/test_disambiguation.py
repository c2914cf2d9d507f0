"""query_entity_disambiguation: scoring on hand-made store answers, then against the real Neo4j."""

from __future__ import annotations

from typing import Any

import pytest

from kgr.model.schema import KGSchema
from kgr.store.lookup import CandidateHit, EntityRecord, RelatedEdge, lucene_escape, lucene_query
from kgr.tools import disambiguation as dis
from kgr.tools.context import ToolContext
from kgr.tools.registry import call_tool


def rec(name: str, etype: str = "Organization", aliases: list[str] | None = None) -> EntityRecord:
    from kgr.model.canonical import entity_key

    aliases = aliases if aliases is not None else [name]
    key = entity_key(etype, name)
    return EntityRecord(key=key, name=name, type=etype, aliases=aliases,
                        properties={"key": key, "name": name, "type": etype, "aliases": aliases})


def hit(r: EntityRecord, *, exact_key: bool = False, score: float = 1.0, rels: list[RelatedEdge] | None = None
        ) -> CandidateHit:
    return CandidateHit(entity=r, exact_key=exact_key, score=score, relationships=rels or [])


class FakeStore:
    """Answers find_entity_candidates from a dict keyed by (type, name as looked up)."""

    def __init__(self, answers: dict[tuple[str, str], list[CandidateHit]]):
        self.answers = answers
        self.calls: list[list[tuple[str, str]]] = []

    def __call__(self, graph: Any, names: list[tuple[str, str]], **kw: Any) -> list[list[CandidateHit]]:
        self.calls.append(list(names))
        return [list(self.answers.get(n, [])) for n in names]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch):
    def install(answers: dict[tuple[str, str], list[CandidateHit]]) -> FakeStore:
        store = FakeStore(answers)
        monkeypatch.setattr(dis, "find_entity_candidates", store)
        return store

    return install


CTX = ToolContext(graph=object())  # type: ignore[arg-type]
IBM = rec("IBM", aliases=["IBM", "International Business Machines"])
MICROSOFT = rec("Microsoft")


def run(entities: dict[str, list[str]], relations: dict[str, list[tuple[str, str]]] | None = None,
        ctx: ToolContext = CTX, **extra: Any) -> dict:
    payload = {"extracted_kg": {"entities": entities, "relations": {
        t: [{"subject": s, "object": o} for s, o in ps] for t, ps in (relations or {}).items()}}, **extra}
    return call_tool("query_entity_disambiguation", payload, context=ctx)


def test_exact_match_by_key_and_by_alias(fake) -> None:
    fake({("Organization", "IBM"): [hit(IBM, exact_key=True)],
          ("Organization", "I.B.M."): [hit(IBM, exact_key=True)],
          ("Organization", "International Business Machines"): [hit(IBM, score=5.0)]})
    out = run({"Organization": ["IBM", "I.B.M.", "International Business Machines"]},
              disambiguation_strategy="exact_match")
    for r in out["disambiguation_results"]:
        assert r["best_match"]["candidate"]["name"] == "IBM" and r["confidence"] == 1.0 and r["is_disambiguated"]
    assert out["summary"] == {"total_entities": 3, "disambiguated_entities": 3, "disambiguation_rate": 1.0,
                              "average_confidence": 1.0, "unmatched_entities": 0}
    assert out["quality_score"] == 1.0  # 0.6·1 + 0.4·1
    assert out["final_kg"] == {"entities": {"Organization": ["IBM"]}, "relations": {}}
    assert out["standardization_suggestions"] == [
        "Use 'IBM' for 'I.B.M.', 'International Business Machines' (Organization): the knowledge graph's name."]
    assert out["disambiguation_strategy"] == "exact_match" and out["similarity_threshold"] == 0.8


def test_exact_match_gives_zero_to_near_misses(fake) -> None:
    fake({("Organization", "Microsft"): [hit(MICROSOFT)]})
    out = run({"Organization": ["Microsft"]}, disambiguation_strategy="exact_match", similarity_threshold=0.0)
    r = out["disambiguation_results"][0]
    assert r["candidates"][0]["confidence"] == 0.0
    assert r["best_match"] is None and r["is_disambiguated"] is False  # 0.0 never matches, even at threshold 0
    assert out["quality_score"] == 0.0
    assert out["standardization_suggestions"][-1].startswith("No knowledge-graph match for 1 entities")


def test_semantic_similarity_and_threshold_boundary(fake) -> None:
    fake({("Organization", "Microsft"): [hit(MICROSOFT)]})
    sim = 16 / 17  # difflib ratio of "microsft" (8) and "microsoft" (9): 2·8/17
    at = run({"Organization": ["Microsft"]}, similarity_threshold=sim)
    assert at["disambiguation_results"][0]["is_disambiguated"] is True
    assert at["disambiguation_results"][0]["confidence"] == round(sim, 4)
    assert not any(s.startswith("Verify") for s in at["standardization_suggestions"])  # 0.94 >= 0.9
    above = run({"Organization": ["Microsft"]}, similarity_threshold=sim + 1e-6)
    assert above["disambiguation_results"][0]["is_disambiguated"] is False
    assert above["disambiguation_results"][0]["candidates"][0]["confidence"] == round(sim, 4)


def test_low_confidence_matches_are_flagged(fake) -> None:
    fake({("Organization", "Mcrosft"): [hit(MICROSOFT)]})
    out = run({"Organization": ["Mcrosft"]})
    # "mcrosft" (7) vs "microsoft" (9): matching blocks "m", "cros", "ft" -> 2·7/16 = 0.875 < 0.9
    assert out["disambiguation_results"][0]["confidence"] == 0.875
    assert "Verify 'Mcrosft' → 'Microsoft' (Organization, confidence 0.88) before relying on it." in \
        out["standardization_suggestions"]


def test_quality_score_arithmetic(fake) -> None:
    fake({("Organization", "IBM"): [hit(IBM, exact_key=True)],
          ("Organization", "Microsoft"): [hit(MICROSOFT, exact_key=True)],
          ("Organization", "Microsft"): [hit(MICROSOFT)],
          ("Organization", "Initech"): []})
    out = run({"Organization": ["IBM", "Microsoft", "Microsft", "Initech"]})
    rate = 3 / 4
    avg = (1.0 + 1.0 + 16 / 17 + 0.0) / 4
    assert out["summary"]["disambiguation_rate"] == 0.75
    assert out["summary"]["average_confidence"] == pytest.approx(avg, abs=1e-4)
    assert out["quality_score"] == pytest.approx(0.6 * rate + 0.4 * avg, abs=1e-4)
    assert out["summary"]["unmatched_entities"] == 1
    assert out["final_kg"]["entities"]["Organization"] == ["IBM", "Microsoft", "Initech"]


def test_candidates_are_type_specific(fake) -> None:
    paris_city = rec("Paris", "Location")
    fake({("Person", "Paris"): [hit(paris_city, exact_key=False, score=9.0)]})
    out = run({"Person": ["Paris"]})
    assert out["disambiguation_results"][0]["candidates"] == []
    assert "'Paris' is Location in the knowledge graph but was extracted as Person: check its type." in \
        out["standardization_suggestions"]


def test_ties_broken_by_context_then_score(fake) -> None:
    a = rec("Jordan", "Person", ["Jordan"])
    b = rec("Jordan B", "Person", ["Jordan"])  # same alias: both exact
    b_rel = RelatedEdge(type="PLAYS_FOR", direction="out", properties={}, target=rec("Chicago Bulls", "Team"))
    fake({("Person", "Jordan"): [hit(a, score=3.0), hit(b, score=1.0, rels=[b_rel])]})
    no_ctx = run({"Person": ["Jordan"]})
    assert no_ctx["disambiguation_results"][0]["best_match"]["candidate"]["name"] == "Jordan"  # higher score
    ctx = run({"Person": ["Jordan"]}, context="He scored for the Chicago Bulls.")
    assert ctx["disambiguation_results"][0]["best_match"]["candidate"]["name"] == "Jordan B"
    rel = ctx["relationships_results"][0]
    assert rel["entity"]["name"] == "Jordan B"
    assert rel["relationships"][0] == {"type": "PLAYS_FOR", "direction": "out", "properties": {},
                                       "target": {"name": "Chicago Bulls", "properties": rec("Chicago Bulls", "Team").properties}}


def test_final_kg_rewrites_relations(fake) -> None:
    fake({("Organization", "I.B.M."): [hit(IBM, exact_key=True)]})
    out = run({"Person": ["Ada"], "Organization": ["I.B.M.", "Big Blue Corp", "big blue corp"]},
              {"WORKS_AT": [("Ada", "I.B.M."), ("Ada", "IBM"), ("Ada", "big blue corp")]})
    assert out["final_kg"] == {
        "entities": {"Person": ["Ada"], "Organization": ["IBM", "Big Blue Corp"]},
        "relations": {"WORKS_AT": [{"subject": "Ada", "object": "IBM"}, {"subject": "Ada", "object": "Big Blue Corp"}]},
    }
    assert "Use 'Big Blue Corp' for 'big blue corp' (Organization): one name per entity." in \
        out["standardization_suggestions"]


def test_schema_aliases_resolve_before_lookup(fake) -> None:
    store = fake({("Organization", "IBM"): [hit(IBM, exact_key=True)]})
    schema = KGSchema.model_validate({"entity_types": {"Organization": {"aliases": {"IBM": ["Big Blue"]}}}})
    out = run({"Organization": ["Big Blue"]}, ctx=ToolContext(graph=object(), schema=schema))  # type: ignore[arg-type]
    assert store.calls == [[("Organization", "IBM")]]
    assert out["disambiguation_results"][0]["best_match"]["candidate"]["name"] == "IBM"


def test_embedding_hook(fake) -> None:
    car = rec("Automobile", "Vehicle")
    fake({("Vehicle", "Car"): [hit(car)]})
    vectors = {"Car": [1.0, 0.0], "Automobile": [0.96, 0.28]}  # cosine 0.96

    def embed(texts):
        return [vectors[t] for t in texts]

    ctx = ToolContext(graph=object(), embed=embed)  # type: ignore[arg-type]
    out = run({"Vehicle": ["Car"]}, ctx=ctx)
    assert out["disambiguation_results"][0]["confidence"] == pytest.approx(0.96, abs=1e-4)
    assert out["disambiguation_results"][0]["is_disambiguated"] is True
    plain = run({"Vehicle": ["Car"]})  # without the hook: string similarity, no match
    assert plain["disambiguation_results"][0]["is_disambiguated"] is False


def test_empty_extraction_does_not_query(fake) -> None:
    store = fake({})
    out = run({})
    assert store.calls == []
    assert out["summary"]["total_entities"] == 0 and out["quality_score"] == 0.0
    assert out["disambiguation_results"] == [] and out["standardization_suggestions"] == []


def test_unicode_names(fake) -> None:
    zoe = rec("Zoë Ünal", "Person")
    fake({("Person", "ZOË ÜNAL"): [hit(zoe, exact_key=True)], ("Person", "李白"): []})
    out = run({"Person": ["ZOË ÜNAL", "李白"]})
    assert out["disambiguation_results"][0]["best_match"]["candidate"]["name"] == "Zoë Ünal"
    assert out["disambiguation_results"][1]["is_disambiguated"] is False


@pytest.mark.parametrize("extracted, stored, etype", [
    ("UNIVAC II", "UNIVAC I", "Machine"), ("Harvard Mark II", "Harvard Mark I", "Machine"),
    ("Alan Turing Jr", "Alan Turing", "Person"), ("Louis XV", "Louis XIV", "Person"),
])
def test_numbered_and_generational_namesakes_are_never_fuzzy_matched(fake, extracted, stored, etype) -> None:
    """Issue 31, item 8: "UNIVAC II" resolved to "UNIVAC I", "Alan Turing Jr" to "Alan Turing"
    (similarity 0.94-0.96, above the 0.8 threshold)."""
    assert dis.string_similarity(extracted, stored) >= 0.8  # what matched them before
    fake({(etype, extracted): [hit(rec(stored, etype))]})
    out = run({etype: [extracted]}, similarity_threshold=0.5)
    r = out["disambiguation_results"][0]
    assert r["candidates"][0]["confidence"] == 0.0 and r["best_match"] is None
    assert out["final_kg"]["entities"] == {etype: [extracted]}


def test_the_same_numeral_spelled_two_ways_still_matches(fake) -> None:
    mark = rec("Harvard Mark II", "Machine")
    fake({("Machine", "Harvard Mark 2"): [hit(mark)]})
    out = run({"Machine": ["Harvard Mark 2"]}, similarity_threshold=0.5)
    assert out["disambiguation_results"][0]["best_match"]["candidate"]["name"] == "Harvard Mark II"


def test_string_similarity_values() -> None:
    assert dis.string_similarity("I.B.M.", "ibm") == 1.0
    assert dis.string_similarity("IBM", "International Business Machines") == dis.ACRONYM_SIMILARITY
    assert dis.string_similarity("Microsft Zz", "Microsoft Zz Corp") == pytest.approx(2 * 11 / 23)  # without "corp"
    assert dis.string_similarity("Lovelace Ada", "Ada Lovelace") == 1.0  # sorted tokens agree
    assert dis.string_similarity("!!!", "x") == 0.0


def test_lucene_query_escapes_special_characters() -> None:
    assert lucene_escape('a+b-c&&d||e!(f){g}[h]^i"j~k*l?m:n\\o/p') == \
        'a\\+b\\-c\\&\\&d\\|\\|e\\!\\(f\\)\\{g\\}\\[h\\]\\^i\\"j\\~k\\*l\\?m\\:n\\\\o\\/p'
    q = lucene_query('AT&T "Labs" (US)')
    assert q.startswith('"at t labs us"^4') and '"AT\\&T \\"Labs\\" \\(US\\)"^2' in q
    assert lucene_query("!!!") == ""


# ---------------------------------------------------------------------------------------------
# against the real Neo4j
# ---------------------------------------------------------------------------------------------

@pytest.mark.neo4j
def test_ibm_variants_resolve_to_one_entity(graph) -> None:
    from kgr.store.staging import stage

    # the store knows IBM, with "International Business Machines" as an alias (via the schema's table)
    schema = KGSchema.model_validate({"entity_types": {"Organization": {
        "aliases": {"IBM": ["International Business Machines"]}}, "Person": {}}})
    stage(graph, [], schema=schema, entities=[("Organization", "IBM"), ("Organization", "International Business Machines"),
                                              ("Organization", "Microsoft Corp")])
    kg = {"Organization": ["IBM", "I.B.M.", "International Business Machines"]}
    for strategy in ("exact_match", "semantic_similarity"):
        out = run(kg, ctx=ToolContext(graph=graph), disambiguation_strategy=strategy)
        keys = {r["best_match"]["candidate"]["properties"]["key"] for r in out["disambiguation_results"]}
        assert keys == {"Organization:ibm"}, strategy
        assert all(r["confidence"] == 1.0 for r in out["disambiguation_results"])
        assert out["final_kg"]["entities"] == {"Organization": ["IBM"]}
        assert out["quality_score"] == 1.0
    aliases = out["disambiguation_results"][0]["best_match"]["candidate"]["properties"]["aliases"]
    assert "International Business Machines" in aliases


@pytest.mark.neo4j
def test_fuzzy_candidates_relationships_and_one_query_per_batch(graph) -> None:
    from kgr.model.triples import TripleAssertion
    from kgr.store.staging import stage

    stage(graph, [TripleAssertion(subject="Ada Lovelace", subject_type="Person", relation="WORKS_WITH",
                                  object="Charles Babbage", object_type="Person", source="doc1")],
          entities=[("Organization", "Microsoft Corp")])

    class Counting:
        def __init__(self, g):
            self.g, self.reads = g, 0
            self.uri, self.database = g.uri, g.database

        def read(self, *a, **k):
            self.reads += 1
            return self.g.read(*a, **k)

    counting = Counting(graph)
    names = ["Ada Lovelace", "Charles Babbage", "Lovelace", *[f"Nobody {i}" for i in range(47)]]
    out = run({"Person": names, "Organization": ["Microsft", 'AT&T "Labs" (US)', "C++/CLI: a*b?"]},
              ctx=ToolContext(graph=counting))  # type: ignore[arg-type]
    assert counting.reads == 1  # 53 names, one batch, one query
    by = {r["original_entity"]["name"]: r for r in out["disambiguation_results"]}
    assert by["Ada Lovelace"]["confidence"] == 1.0
    ms = by["Microsft"]
    assert ms["is_disambiguated"] and ms["best_match"]["candidate"]["name"] == "Microsoft Corp"
    assert ms["confidence"] == pytest.approx(16 / 17, abs=1e-4)  # "microsft" vs "microsoft" once "corp" is dropped
    rel = next(r for r in out["relationships_results"] if r["entity"]["name"] == "Ada Lovelace")
    edge = rel["relationships"][0]
    assert edge["type"] == "WORKS_WITH" and edge["direction"] == "out"
    assert edge["target"]["name"] == "Charles Babbage"
    assert edge["properties"]["votes"] == 1 and edge["properties"]["relationship"] == "PENDING_REL"
    assert by["Nobody 3"]["is_disambiguated"] is False


@pytest.mark.neo4j
def test_missing_fulltext_index_is_reported(graph) -> None:
    """Without the fulltext index, the real database's refusal becomes a KgrNotFound naming the fix."""
    from kgr.errors import KgrNotFound
    from kgr.store.admin import init_store
    from kgr.store.lookup import find_entity_candidates

    graph.driver.execute_query("DROP INDEX entity_names IF EXISTS", database_=graph.database)
    try:
        with pytest.raises(KgrNotFound, match="run `kgr init`"):
            find_entity_candidates(graph, [("Person", "Ada")])
        assert find_entity_candidates(graph, []) == []
        assert find_entity_candidates(graph, [("Person", "...")]) == [[]]  # nothing to ask
    finally:
        init_store(graph)


@pytest.mark.neo4j
def test_declared_and_numbered_entities_are_never_fuzzy_matched(graph) -> None:
    """Issue 13, item 6: with EDVAC in the graph, an extraction of EDSAC (both machines of the example
    schema) resolved to EDVAC."""
    from pathlib import Path

    from kgr.model.schema import load_schema
    from kgr.store.staging import stage

    schema = load_schema(Path(__file__).resolve().parents[2] / "examples" / "schema.json")
    assert schema.declares("Machine", "EDSAC") and schema.declares("Machine", "edvac")
    stage(graph, [], schema=schema, entities=[("Machine", "EDVAC"), ("Publication", "Paper 12")])
    ctx = ToolContext(graph=graph, schema=schema)
    out = run({"Machine": ["EDSAC", "EDVAC"], "Publication": ["Paper 13"]}, ctx=ctx,
              disambiguation_strategy="semantic_similarity", similarity_threshold=0.5)
    best = {r["original_entity"]["name"]: r["best_match"] for r in out["disambiguation_results"]}
    assert best["EDSAC"] is None and best["Paper 13"] is None  # distinct by declaration / by number
    assert best["EDVAC"]["candidate"]["name"] == "EDVAC" and best["EDVAC"]["confidence"] == 1.0
    assert sorted(out["final_kg"]["entities"]["Machine"]) == ["EDSAC", "EDVAC"]
