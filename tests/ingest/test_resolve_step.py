"""The entity resolution step at the end of an ingest job: the job's own documents are matched with
each other (before it, one job's result equalled plain staging). Real Neo4j, a scripted extractor."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgr.extract.base import ExtractionResult
from kgr.ingest.config import IngestConfig
from kgr.ingest.pipeline import ingest
from kgr.model.kg import ExtractedKG
from kgr.model.schema import KGSchema
from kgr.store.resolve import read_entities
from tests.support.people import SCHEMA, people_records

pytestmark = pytest.mark.neo4j


class Scripted:
    """Reads the record a document spells out: ``name | dob | place | job``."""

    def extract(self, chunk_text: str, schema: KGSchema, *, guidance: list[str] | None = None) -> ExtractionResult:
        name, dob, place, job = (x.strip() for x in chunk_text.strip().split("|"))
        kg = ExtractedKG.model_validate({
            "entities": {"Person": [name], "Date": [dob], "Place": [place], "Occupation": [job]},
            "relations": {"BORN_ON": [{"subject": name, "object": dob}], "LIVES_IN": [{"subject": name, "object": place}],
                          "WORKS_AS": [{"subject": name, "object": job}]}})
        return ExtractionResult(kg=kg, extractor="scripted")


def _corpus(tmp_path: Path) -> tuple[Path, dict[str, int]]:
    person_of = {}
    for r in people_records(12, 3, seed=2):
        p = tmp_path / f"{r['id']}.txt"
        p.write_text(f"{r['name']} | {r['dob']} | {r['place']} | {r['job']}\n", encoding="utf-8")
        person_of[str(p.resolve())] = r["person"]
    return tmp_path, person_of


def _people_per_entity(graph, person_of: dict[str, int]) -> dict[str, set[int]]:
    chunk_doc = {r["id"]: r["doc"] for r in graph.driver.execute_query(
        "MATCH (c:Chunk) RETURN c.id AS id, c.document_id AS doc").records}
    out: dict[str, set[int]] = {}
    for v in read_entities(graph, "Person"):
        for e in v.edges:
            for s in e.sources:
                out.setdefault(v.key, set()).add(person_of[chunk_doc[s]])
    return out


@pytest.mark.parametrize("resolve", [True, False])
def test_a_job_matches_its_own_documents(graph, tmp_path, resolve):
    corpus, person_of = _corpus(tmp_path)
    cfg = IngestConfig(max_rounds=1, promote=False, resolve=resolve)
    rep = ingest(graph, [corpus], SCHEMA, config=cfg, extractor=Scripted())
    assert rep.chunks_processed == 36
    per_entity = _people_per_entity(graph, person_of)
    if not resolve:  # plain staging: one entity per spelling, 3 per person (name, typo, word order)
        assert rep.resolution is None and len(per_entity) == 36 - _same_spelling(corpus)
        return
    assert rep.resolution is not None and rep.resolution.version is not None and rep.resolution.merges
    entities_of: dict[int, set[str]] = {}
    for key, people in per_entity.items():
        for p in people:
            entities_of.setdefault(p, set()).add(key)
    whole = sum(1 for keys in entities_of.values() if len(keys) == 1)
    assert whole >= 10, f"only {whole} of 12 people ended on one entity"
    assert all(len(people) == 1 for people in per_entity.values())  # no entity holds two people
    assert "resolution:" in rep.render()


def _same_spelling(corpus: Path) -> int:
    """Documents whose person name (canonical) repeats an earlier document's."""
    from kgr.model.canonical import canonical_name

    seen, repeats = set(), 0
    for p in sorted(corpus.glob("*.txt")):
        n = canonical_name(p.read_text().split("|")[0])
        repeats += n in seen
        seen.add(n)
    return repeats


class LivesIn:
    """Reads "A B" as A (a Person) LIVES_IN B (a Place)."""

    def extract(self, chunk_text: str, schema: KGSchema, *, guidance: list[str] | None = None) -> ExtractionResult:
        name, place = chunk_text.split()[:2]
        kg = ExtractedKG.model_validate({"entities": {"Person": [name], "Place": [place]},
                                         "relations": {"LIVES_IN": [{"subject": name, "object": place}]}})
        return ExtractionResult(kg=kg, extractor="scripted")


def test_the_report_names_a_name_staged_under_two_types_unless_the_schema_declares_it(graph, tmp_path):
    """The walkthrough's "Linux" as a Language, a Software and an Organization: resolution never merges
    across types, so the job says so; a name the schema lists under both types is its own choice."""
    for i, text in enumerate(["Jordan Perth", "Ann Jordan", "Sydney Perth", "Bob Sydney"]):
        (tmp_path / f"d{i}.txt").write_text(text + "\n", encoding="utf-8")
    raw = SCHEMA.model_dump(mode="json")
    raw["entity_types"]["Person"]["names"] = ["Sydney"]
    raw["entity_types"]["Place"]["names"] = ["Sydney"]
    cfg = IngestConfig(max_rounds=1, promote=False, resolve=False)
    rep = ingest(graph, [tmp_path], KGSchema.model_validate(raw), config=cfg, extractor=LivesIn())
    assert rep.new_edges == 4
    assert rep.names_under_several_types == ["jordan: Person, Place"]
    assert "names under several types" in rep.render() and "jordan: Person, Place" in rep.render()
