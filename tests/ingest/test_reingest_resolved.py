"""Re-ingestion with entity resolution on (issue 30, "merges outlive their evidence"): a corpus
ingested with resolution, edited (the document behind a merge deleted, others edited and deleted)
and re-ingested with ``prune``, ends as a fresh ingest of the final corpus: the same entities and
merges, staged evidence, promoted set and hash. Real Neo4j, a scripted extractor, the quorum policy."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgr.extract.base import ExtractionResult
from kgr.ingest.config import IngestConfig
from kgr.ingest.pipeline import ingest
from kgr.model.kg import ExtractedKG
from kgr.model.schema import KGSchema
from kgr.promotion.policies import make_policy
from kgr.store.admin import reset
from kgr.store.rounds import run_round
from tests.ingest.test_reingest import _state
from tests.support.people import RECORDS, SCHEMA, people_records, record_text

pytestmark = pytest.mark.neo4j

_RELS = (("BORN_ON", "Date"), ("LIVES_IN", "Place"), ("WORKS_AS", "Occupation"))


class Scripted:
    """Reads the record a document spells out: ``name | dob | place | job`` (``-``: not said)."""

    def extract(self, chunk_text: str, schema: KGSchema, *, guidance: list[str] | None = None) -> ExtractionResult:
        name, *values = (x.strip() for x in chunk_text.strip().split("|"))
        said = [(rel, otype, v) for (rel, otype), v in zip(_RELS, values) if v != "-"]
        kg = ExtractedKG.model_validate({
            "entities": {"Person": [name], **{otype: [v] for _, otype, v in said}},
            "relations": {rel: [{"subject": name, "object": v}] for rel, _, v in said}})
        return ExtractionResult(kg=kg, extractor="scripted")


#: jacob green (k1, k2) and jacob grene (d1) share nothing but a close name; m1 says jacob green is
#: a nurse in hobart, as d1 says of jacob grene: the document behind their merge.
JACOB = {"k1": "jacob green | - | bondi | pilot", "k2": "jacob green | - | bondi | -",
         "d1": "jacob grene | - | hobart | nurse", "m1": "jacob green | - | hobart | nurse"}


def _docs() -> dict[str, str]:
    people = {r["id"]: f"{r['name']} | {r['dob']} | {r['place']} | {r['job']}" for r in people_records(10, 3, seed=3)[3:]}
    return {**people, **JACOB}


def _write(root: Path, docs: dict[str, str]) -> None:
    for f in root.glob("*.txt"):
        if f.stem not in docs:
            f.unlink()
    for name, text in docs.items():
        (root / f"{name}.txt").write_text(text + "\n", encoding="utf-8")


def _ingest(graph, root: Path, *, prune: bool = False):
    cfg = IngestConfig(max_rounds=1, concurrency=1, resolve=True, prune=prune)
    policy = make_policy("quorum", quorum=2)  # the default (calibrated) policy promotes nothing on so few facts
    return ingest(graph, [root], SCHEMA, config=cfg, extractor=Scripted(),
                  promote=lambda: run_round(graph, policy, schema=SCHEMA))


def _merges(graph) -> set[tuple[str, str]]:
    return {(r["key"], r["into"]) for r in graph.driver.execute_query(
        "MATCH (e:Entity) WHERE e.merged_into IS NOT NULL RETURN e.key AS key, e.merged_into AS into").records}


def test_reingest_with_resolution_equals_a_fresh_ingest(graph, tmp_path):
    root = tmp_path / "corpus"
    root.mkdir()
    first = _docs()
    reset(graph)
    _write(root, first)
    _ingest(graph, root)
    assert ("Person:jacob grene", "Person:jacob green") in _merges(graph)  # m1's merge
    final = {k: v for k, v in first.items() if k not in ("m1", "r3-2", "r5-0")}  # m1 and two others deleted
    # two edited: their old chunks are forgotten, the new ones staged; d1's entity (jacob grene) is left
    # without a source by the forget, and its new chunk's name must not be linked to the surviving
    # near-namesake jacob green (the drafting step links exact names only, as in a fresh ingest)
    final["k1"] = "jacob green | - | bondi | chemist"
    final["d1"] = "jacob grene | - | hobart | baker"
    _write(root, final)
    report = _ingest(graph, root, prune=True)
    assert report.documents_pruned == 3
    incremental, merges = _state(graph), _merges(graph)
    reset(graph)
    _ingest(graph, root)
    assert ("Person:jacob grene", "Person:jacob green") not in _merges(graph)  # nothing left to merge them
    assert merges == _merges(graph)
    scratch = _state(graph)
    assert len(scratch.get("promoted", ())) > 10 and len(merges) > 10
    for k in sorted(set(incremental) | set(scratch)):
        assert incremental.get(k) == scratch.get(k), (k, incremental.get(k, set()) ^ scratch.get(k, set())
                                                       if k != "hash" else None)



def test_a_run_that_stops_between_the_unmerge_and_the_resolution_is_completed_by_the_next(graph, tmp_path, monkeypatch):
    import kgr.ingest.pipeline as pipeline
    from kgr.store.admin import status
    from kgr.store.unmerge import resolution_due

    root = tmp_path / "corpus"
    root.mkdir()
    reset(graph)
    _write(root, _docs())
    _ingest(graph, root)
    final = {k: v for k, v in _docs().items() if k != "m1"}
    _write(root, final)

    def crash(*args, **kwargs):
        raise RuntimeError("stopped before resolving")

    monkeypatch.setattr(pipeline, "resolve_entities", crash)
    with pytest.raises(RuntimeError, match="before resolving"):
        _ingest(graph, root, prune=True)  # m1 forgotten and the Person merges undone, then the stop
    assert resolution_due(graph) == ["Person"] == status(graph).resolve_due and not _merges(graph)
    monkeypatch.undo()
    again = _ingest(graph, root, prune=True)  # nothing new to read or prune: the debt alone resolves
    assert again.documents_pruned == 0 and again.resolution is not None and resolution_due(graph) == []
    incremental, merges = _state(graph), _merges(graph)
    reset(graph)
    _ingest(graph, root)
    assert merges == _merges(graph) and len(merges) > 10
    assert incremental == _state(graph)



# -- random histories (scripts/reingest_histories.py measures more of them) ---------------------------
def replay(graph, root: Path, history: list[dict[str, int]]) -> tuple[tuple[dict, set], tuple[dict, set]]:
    """Ingest each corpus of ``history`` ({record id: variant}, :func:`record_text`) into ``root`` in
    turn, re-ingesting with ``prune``, then a fresh ingest of the last one: the store (``_state``) and
    the merges after each way."""
    reset(graph)
    for step, docs in enumerate(history):
        _write(root, {rid: record_text(rid, v) for rid, v in docs.items()})
        _ingest(graph, root, prune=step > 0)
    incremental = _state(graph), _merges(graph)
    reset(graph)
    _ingest(graph, root)
    return incremental, (_state(graph), _merges(graph))


@pytest.mark.timeout(900)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture], derandomize=True)
@given(history=st.lists(st.dictionaries(st.sampled_from(sorted(RECORDS)), st.integers(0, 2), min_size=20, max_size=30),
                        min_size=2, max_size=3))
def test_random_histories_with_resolution_equal_a_fresh_ingest(graph, tmp_path_factory, history):
    """Person records added, deleted and edited (fields dropped, another birth date) over two or three
    re-ingests with ``prune``, resolution on at the end of each job: the store (entities and merges,
    staged evidence, promoted set and hash) equals a fresh ingest of the last corpus. Most of the
    population is in every corpus, so each history has people with two or three records to merge.
    It failed on main 25f0d4e (the drafting step's fuzzy links, an unmerge's promoted edges left
    below quorum, entities without evidence in the resolution's population)."""
    (incremental, merges), (scratch, fresh) = replay(graph, tmp_path_factory.mktemp("people"), history)
    assert merges == fresh
    for k in sorted(set(incremental) | set(scratch)):
        assert incremental.get(k) == scratch.get(k), (k, incremental.get(k, set()) ^ scratch.get(k, set())
                                                       if k != "hash" else None)
