"""query_kg_storage: counting and partial failures on an in-memory stand-in, then the real Neo4j."""

from __future__ import annotations

from typing import Any

import pytest

from kgr.errors import KgrNeo4jUnavailable
from kgr.model.canonical import entity_key
from kgr.model.schema import KGSchema
from kgr.model.triples import TripleAssertion
from kgr.store.staging import RejectedRow, StageReport
from kgr.tools import storage as st
from kgr.tools.context import ToolContext
from kgr.tools.registry import call_tool


class FakeGraph:
    uri = "bolt://user:secret@db.example:7687"
    database = "kg"


class FakeStage:
    """An in-memory staging area with :func:`kgr.store.staging.stage`'s counting rules."""

    def __init__(self, fail_on_call: int | None = None, reject: str | None = None):
        self.entities: set[str] = set()
        self.votes: dict[str, set[str]] = {}
        self.calls = 0
        self.fail_on_call = fail_on_call
        self.reject = reject

    def __call__(self, graph: Any, assertions: list[TripleAssertion], *, schema: KGSchema | None = None,
                 entities: Any = (), batch_size: int = 2000, **kw: Any) -> StageReport:
        self.calls += 1
        if self.calls == self.fail_on_call:
            raise KgrNeo4jUnavailable("Neo4j at bolt://db.example:7687 is unavailable (ServiceUnavailable: gone)")
        rep = StageReport(rows=len(assertions))

        def ensure(t: str, n: str) -> None:
            key = entity_key(t, schema.resolve_name(t, n) if schema else n)
            if key not in self.entities:
                self.entities.add(key)
                rep.new_entities += 1

        for t, n in entities:
            ensure(t, n)
        for i, a in enumerate(assertions):
            if a.relation == self.reject:
                rep.rejected.append(RejectedRow(index=i, reason=f"unknown relation type {a.relation}"))
                continue
            ensure(a.subject_type, a.subject)
            ensure(a.object_type, a.object)
            voters = self.votes.setdefault(a.key, set())
            if a.source in voters:
                rep.repeated_votes += 1
            else:
                voters.add(a.source)
                rep.new_votes += 1
        return rep


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch):
    def install(**kw: Any) -> FakeStage:
        stage = FakeStage(**kw)
        monkeypatch.setattr(st, "stage", stage)
        return stage

    return install


KG = {
    "entities": {"Person": ["Ada", "Bob", "ADA"], "Organization": ["IBM"]},
    "relations": {
        "WORKS_AT": [{"subject": "Ada", "object": "IBM"}, {"subject": "ada", "object": "I.B.M."},
                     {"subject": "Bob", "object": "IBM"}, {"subject": "Cy", "object": "IBM"}],
        "KNOWS": [{"subject": "Ada", "object": "Bob"}],
    },
}


def store(payload: dict, **ctx: Any) -> dict:
    return call_tool("query_kg_storage", payload, context=ToolContext(graph=FakeGraph(), **ctx))  # type: ignore[arg-type]


def test_counts_on_first_storage(fake) -> None:
    fake()
    out = store({"extracted_kg": KG, "source": "doc-1"})
    s = out["storage_status"]
    # entities: 4 entries, "ADA" repeats "Ada" -> 3 stored, 1 skipped
    assert s["entities_storage"] == {"code": 0, "message": "3 entities stored, 1 skipped as duplicates, 0 failed",
                                     "stored_count": 3, "skipped_count": 1, "failed_count": 0}
    # relations: 5 entries, ada->I.B.M. repeats Ada->IBM, "Cy" is no entity -> 3 stored, 1 skipped, 1 failed
    r = s["relations_storage"]
    assert (r["code"], r["stored_count"], r["skipped_count"], r["failed_count"]) == (-1, 3, 1, 1)
    assert s["overall_success"] is False
    d = out["storage_details"]
    assert d["total_entities"] == 4 and d["total_relations"] == 5
    assert d["duplicates_detected"] == {"entity_duplicates": 1, "relation_duplicates": 1}
    assert d["entity_types_processed"] == ["Person", "Organization"]
    assert d["relation_types_processed"] == ["WORKS_AT", "KNOWS"]
    assert out["final_kg"] == {
        "entities": {"Person": ["Ada", "Bob"], "Organization": ["IBM"]},
        "relations": {"WORKS_AT": [{"subject": "Ada", "object": "IBM"}, {"subject": "Bob", "object": "IBM"}],
                      "KNOWS": [{"subject": "Ada", "object": "Bob"}]},
    }
    assert any("WORKS_AT('Cy', 'IBM'): subject 'Cy' is not among the entities" in w for w in out["warnings"])
    assert out["storage_summary"]["database_config"] == {"host": "db.example:7687", "database": "kg"}
    assert "secret" not in str(out)
    assert out["storage_summary"]["operation_timestamp"].endswith("+00:00")
    assert any("kgr promote" in r for r in out["recommendations"])


def test_second_storage_from_same_source_skips_everything(fake) -> None:
    fake()
    store({"extracted_kg": KG, "source": "doc-1"})
    again = store({"extracted_kg": KG, "source": "doc-1"})
    e, r = again["storage_status"]["entities_storage"], again["storage_status"]["relations_storage"]
    assert (e["stored_count"], e["skipped_count"], e["failed_count"]) == (0, 4, 0)  # 3 existing + 1 repeat
    assert (r["stored_count"], r["skipped_count"], r["failed_count"]) == (0, 4, 1)  # 3 repeated votes + 1 repeat
    assert any("already voted for by source 'doc-1'" in w for w in again["warnings"])
    other = store({"extracted_kg": KG, "source": "doc-2"})
    assert other["storage_status"]["relations_storage"]["stored_count"] == 3


def test_partial_failure_in_the_relation_phase(fake) -> None:
    fake(fail_on_call=4)  # calls: entity batches [Ada, Bob], [IBM]; relation batches [2], [1]
    out = store({"extracted_kg": KG, "source": "doc-1"}, batch_size=2)
    e, r = out["storage_status"]["entities_storage"], out["storage_status"]["relations_storage"]
    assert (e["code"], e["stored_count"], e["failed_count"]) == (0, 3, 0)
    # 3 distinct valid relations: the first batch of 2 committed, the last one did not; plus "Cy"
    assert (r["code"], r["stored_count"], r["skipped_count"], r["failed_count"]) == (-1, 2, 1, 2)
    assert "KgrNeo4jUnavailable" in r["message"]
    assert any(w.startswith("Relation storage stopped after 2 of 3 relations") for w in out["warnings"])
    assert out["final_kg"]["relations"] == {"WORKS_AT": [{"subject": "Ada", "object": "IBM"},
                                                         {"subject": "Bob", "object": "IBM"}]}
    assert out["storage_status"]["overall_success"] is False
    assert any("Store again once the database is reachable" in x for x in out["recommendations"])


def test_partial_failure_in_the_entity_phase(fake) -> None:
    fake(fail_on_call=2)
    out = store({"extracted_kg": KG, "source": "doc-1"}, batch_size=2)
    e, r = out["storage_status"]["entities_storage"], out["storage_status"]["relations_storage"]
    assert (e["code"], e["stored_count"], e["skipped_count"], e["failed_count"]) == (-1, 2, 1, 1)
    # relations were not attempted: 3 valid + "Cy" fail, the repeat is skipped
    assert (r["code"], r["stored_count"], r["skipped_count"], r["failed_count"]) == (-1, 0, 1, 4)
    assert r["message"].endswith("not attempted: the entity phase failed")
    assert out["final_kg"] == {"entities": {"Person": ["Ada", "Bob"]}, "relations": {}}


def test_failure_before_anything_is_written_raises(fake) -> None:
    fake(fail_on_call=1)
    with pytest.raises(KgrNeo4jUnavailable, match="unavailable"):
        store({"extracted_kg": KG, "source": "doc-1"})


def test_closed_schema_and_invalid_names(fake) -> None:
    fake()
    schema = KGSchema.model_validate({"entity_types": {"Person": {}}, "relation_types": {"KNOWS": {}}})
    kg = {"entities": {"Person": ["Ada", "Bob", "!!!"], "Organization": ["IBM"]},
          "relations": {"KNOWS": [{"subject": "Ada", "object": "Bob"}], "WORKS_AT": [{"subject": "Ada", "object": "IBM"}]}}
    out = store({"extracted_kg": kg, "source": "s"}, schema=schema)
    e, r = out["storage_status"]["entities_storage"], out["storage_status"]["relations_storage"]
    assert (e["stored_count"], e["failed_count"]) == (2, 2)  # "!!!" has no letters; Organization not in schema
    assert (r["stored_count"], r["failed_count"]) == (1, 1)
    joined = "\n".join(out["warnings"])
    assert "Organization 'IBM': entity type Organization is not in the KG schema" in joined
    assert "object 'IBM' failed validation; relation type WORKS_AT is not in the KG schema" in joined
    assert any("Map the rejected types" in x for x in out["recommendations"])


def test_ambiguous_endpoint_and_rejected_rows(fake) -> None:
    fake(reject="BANNED")
    kg = {"entities": {"Person": ["Paris", "Ada"], "Location": ["Paris"]},
          "relations": {"LIVES_IN": [{"subject": "Ada", "object": "Paris"}], "BANNED": [{"subject": "Ada", "object": "Ada"}]}}
    out = store({"extracted_kg": kg, "source": "s"})
    r = out["storage_status"]["relations_storage"]
    assert (r["stored_count"], r["failed_count"]) == (0, 2)
    joined = "\n".join(out["warnings"])
    assert "object 'Paris' is listed under several types (Location, Person)" in joined
    assert "BANNED('Ada', 'Ada'): unknown relation type BANNED" in joined


def test_source_precedence_and_default(fake) -> None:
    stage = fake()
    out = store({"extracted_kg": KG, "source": "agent-says"}, source="session-chunk")
    assert any("Input source 'agent-says' ignored" in w for w in out["warnings"])
    assert all("session-chunk" in voters for voters in stage.votes.values())
    default = store({"extracted_kg": KG})
    src = st.default_source(__import__("kgr.model.kg", fromlist=["ExtractedKG"]).ExtractedKG.model_validate(KG))
    assert src.startswith("kgr-tool:") and any(src in w for w in default["warnings"])
    assert default["storage_status"]["relations_storage"]["stored_count"] == 3
    again = store({"extracted_kg": KG})
    assert again["storage_status"]["relations_storage"]["stored_count"] == 0  # same content, same source


def test_empty_extraction(fake) -> None:
    stage = fake()
    out = store({"extracted_kg": {"entities": {}, "relations": {}}, "source": "s"})
    assert out["storage_status"]["overall_success"] is True
    assert out["storage_status"]["entities_storage"]["code"] == 0
    assert out["storage_details"]["total_entities"] == 0 and stage.calls == 0
    assert out["storage_summary"]["performance_metrics"]["overall_throughput"] >= 0.0


def test_unicode(fake) -> None:
    fake()
    kg = {"entities": {"Person": ["Zoë Ünal", "李白"]}, "relations": {"MET": [{"subject": "Zoë Ünal", "object": "李白"}]}}
    out = store({"extracted_kg": kg, "source": "s"})
    assert out["storage_status"]["overall_success"] is True
    assert out["final_kg"] == kg


# ---------------------------------------------------------------------------------------------
# against the real Neo4j
# ---------------------------------------------------------------------------------------------

def _votes(graph, subjects: set[str]) -> dict[tuple[str, str, str], int]:
    """Votes of the pending edges whose subject is one of ``subjects`` (other writers may share the database)."""
    from kgr.store.export import iter_exported

    return {(t.subject, t.relation, t.object): t.votes for t in iter_exported(graph, pending=True)
            if t.subject in subjects}


@pytest.mark.neo4j
def test_votes_same_source_idempotent_second_source_adds_one(graph) -> None:
    kg = {"entities": {"Person": ["Ada Lovelace", "Charles Babbage"], "Organization": ["Royal Society"]},
          "relations": {"WORKS_WITH": [{"subject": "Ada Lovelace", "object": "Charles Babbage"}],
                        "MEMBER_OF": [{"subject": "Charles Babbage", "object": "Royal Society"}]}}
    ctx = ToolContext(graph=graph)
    first = call_tool("query_kg_storage", {"extracted_kg": kg, "source": "chunk-1"}, context=ctx)
    assert first["storage_status"]["overall_success"] is True
    assert first["storage_status"]["entities_storage"]["stored_count"] == 3
    assert first["storage_status"]["relations_storage"]["stored_count"] == 2
    mine = {"Ada Lovelace", "Charles Babbage"}
    after_first = _votes(graph, mine)
    assert after_first == {("Ada Lovelace", "WORKS_WITH", "Charles Babbage"): 1,
                           ("Charles Babbage", "MEMBER_OF", "Royal Society"): 1}

    again = call_tool("query_kg_storage", {"extracted_kg": kg, "source": "chunk-1"}, context=ctx)
    assert _votes(graph, mine) == after_first  # same source: unchanged
    assert again["storage_status"]["relations_storage"]["skipped_count"] == 2
    assert again["storage_status"]["entities_storage"]["skipped_count"] == 3

    second = call_tool("query_kg_storage", {"extracted_kg": kg, "source": "chunk-2"}, context=ctx)
    assert second["storage_status"]["relations_storage"]["stored_count"] == 2
    assert _votes(graph, mine) == {k: v + 1 for k, v in after_first.items()}  # one more vote each


@pytest.mark.neo4j
def test_disambiguate_then_store_then_match(graph) -> None:
    schema = KGSchema.model_validate({"entity_types": {"Organization": {
        "aliases": {"IBM": ["International Business Machines"]}}, "Person": {}},
        "relation_types": {"WORKS_AT": {}}})
    ctx = ToolContext(graph=graph, schema=schema, source="chunk-9")
    kg = {"entities": {"Organization": ["IBM", "I.B.M.", "International Business Machines"], "Person": ["Ada"]},
          "relations": {"WORKS_AT": [{"subject": "Ada", "object": "I.B.M."}]}}
    d1 = call_tool("query_entity_disambiguation", {"extracted_kg": kg}, context=ctx)
    assert d1["summary"]["disambiguated_entities"] == 0  # empty store
    assert d1["final_kg"]["entities"]["Organization"] == ["IBM"]  # merged by canonical form and alias table
    s = call_tool("query_kg_storage", {"extracted_kg": d1["final_kg"]}, context=ctx)
    assert s["storage_status"]["overall_success"] is True
    assert s["storage_status"]["entities_storage"]["stored_count"] == 2
    d2 = call_tool("query_entity_disambiguation", {"extracted_kg": kg}, context=ctx)
    assert d2["summary"]["disambiguated_entities"] == 4 and d2["quality_score"] == 1.0
    ibm = next(r for r in d2["relationships_results"] if r["entity"]["name"] == "IBM")
    assert ibm["relationships"][0]["type"] == "WORKS_AT" and ibm["relationships"][0]["direction"] == "in"
    assert _votes(graph, {"Ada"}) == {("Ada", "WORKS_AT", "IBM"): 1}
