"""Entity resolution on the real Neo4j (kgr.store.resolve, kgr.store.split): merges and splits as one
version, cannot-links, dry runs, rollback and order independence."""

from __future__ import annotations

import random
from pathlib import Path
from collections import defaultdict

import pytest
from typer.testing import CliRunner

from kgr.cli.main import app
from kgr.engine import Engine
from kgr.errors import KgrNotFound, KgrValidationError
from kgr.model.canonical import edge_key, entity_key
from kgr.model.resolution import PairLabel
from kgr.model.triples import TripleAssertion
from kgr.store.admin import fingerprint
from kgr.engine import promote_by_quorum
from kgr.store.resolve import read_entities, record_pair_labels, resolve, review_pairs, split_entity
from kgr.store.staging import stage
from kgr.store.versions import current_state, full_hash, list_versions, promoted_edges, rollback
from tests.support.people import SCHEMA, people_records, person_triples

pytestmark = pytest.mark.neo4j


def T(name, rel, obj, otype, src):
    return TripleAssertion(subject=name, subject_type="Person", relation=rel, object=obj, object_type=otype,
                           source=src, confidence=0.9)


def votes_by_source(graph) -> dict[str, set[tuple[str, str, str]]]:
    """source -> {(subject key, relation, object key)} over every live staged edge (inline + overflow)."""
    out: dict[str, set] = defaultdict(set)
    for v in read_entities(graph, None):
        for e in v.edges:
            if e.outgoing:
                for s in e.sources:
                    out[s].add((v.key, e.relation, e.other))
    return dict(out)


def entity_of(graph) -> dict[str, str]:
    """source -> the live Person entity its votes are on."""
    return {s: next(iter(t))[0] for s, t in votes_by_source(graph).items()}


def check_hash(graph) -> str:
    _, h = current_state(graph)
    assert h == full_hash(e.key for e in promoted_edges(graph))
    return h


def test_resolve_merges_duplicates_and_splits_namesakes(graph):
    recs = people_records(30, 3)
    stage(graph, [t for r in recs for t in person_triples(r)], schema=SCHEMA)
    rep = resolve(graph, SCHEMA)
    assert rep.version == current_state(graph)[0] and list_versions(graph, 1)[0].kind == "resolve"
    assert rep.merges and rep.splits
    # people 0..9 and 20..29 share names (alyssa lowe ...): at most one person's sources per entity, mostly
    where = entity_of(graph)
    person_entities = defaultdict(set)
    mixed = 0
    by_entity = defaultdict(set)
    for r in recs:
        person_entities[r["person"]].add(where[r["id"]])
        by_entity[where[r["id"]]].add(r["person"])
    mixed = sum(1 for ps in by_entity.values() if len(ps) > 1)
    whole = sum(1 for ents in person_entities.values() if len(ents) == 1)
    assert whole >= 24, f"only {whole} of 30 people ended on one entity"
    assert mixed <= 3, f"{mixed} entities hold two people"
    check_hash(graph)


def test_dry_run_changes_nothing(graph):
    recs = people_records(12, 3)
    stage(graph, [t for r in recs for t in person_triples(r)], schema=SCHEMA)
    before, state = fingerprint(graph), current_state(graph)
    rep = resolve(graph, SCHEMA, dry_run=True)
    assert rep.dry_run and rep.version is None and (rep.merges or rep.splits)
    assert all(m.evidence is not None and m.evidence.comparisons for m in rep.merges)  # proposals carry evidence
    assert fingerprint(graph) == before and current_state(graph) == state
    res = CliRunner().invoke(app, ["resolve", "--dry-run", "--json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert fingerprint(graph) == before and current_state(graph) == state


def test_an_unknown_type_is_refused_with_a_did_you_mean(graph):
    """``kgr resolve --type Softwre --dry-run`` said "0 pairs" and exited 0: a type neither the
    schema declares nor any entity has is now refused, naming the closest type and the known ones."""
    stage(graph, [T("ada lovelace", "WORKS_AS", "writer", "Occupation", "s1")], schema=SCHEMA)
    before = fingerprint(graph)
    with pytest.raises(KgrNotFound, match=r"^type: unknown entity type 'Persn'; did you mean 'Person'\? "
                                                 r"\(known types: Date, Occupation, Person, Place\)$"):
        Engine(graph, schema=SCHEMA).resolve(type="Persn", dry_run=True)
    assert Engine(graph, schema=SCHEMA).resolve(type="Date", dry_run=True).merges == []  # declared, no entity
    assert Engine(graph).resolve(type="Occupation", dry_run=True).merges == []  # no schema: an entity's type
    with pytest.raises(KgrNotFound, match=r"'Date' \(known types: Occupation, Person\)$"):
        Engine(graph).resolve(type="Date", dry_run=True)  # no schema and no Date entity: nothing to suggest
    res = CliRunner().invoke(app, ["resolve", "--type", "Persn", "--dry-run"])
    assert res.exit_code == 1 and res.stdout == "", (res.stdout, res.stderr)
    assert res.stderr.startswith("Error: type: unknown entity type 'Persn'; did you mean 'Person'?")
    assert fingerprint(graph) == before


def test_cannot_link_stops_a_chain(graph):
    # A and C are two people (birth dates share no component); B, with no birth date, looks like both
    stage(graph, [T("jacob green", "BORN_ON", "1950-03-01", "Date", "a1"),
                  T("jacob green", "LIVES_IN", "bondi", "Place", "a1"),
                  T("jacob green", "WORKS_AS", "nurse", "Occupation", "a1"),
                  T("jacob grene", "LIVES_IN", "bondi", "Place", "b1"),
                  T("jacob grene", "WORKS_AS", "nurse", "Occupation", "b1"),
                  T("jacob grene", "LIVES_IN", "carlton", "Place", "b2"),
                  T("jacob grene", "WORKS_AS", "pilot", "Occupation", "b2"),
                  T("jakob green", "BORN_ON", "1962-07-11", "Date", "c1"),
                  T("jakob green", "LIVES_IN", "carlton", "Place", "c1"),
                  T("jakob green", "WORKS_AS", "pilot", "Occupation", "c1")]
          + [t for r in people_records(10, 3, seed=3)[3:] for t in person_triples(r)], schema=SCHEMA)
    rep = resolve(graph, SCHEMA, target_fmr=0.5)
    where = entity_of(graph)
    assert where["a1"] != where["c1"], "a chain joined two people with different birth dates"
    assert any("BORN_ON" in b.reason for b in rep.blocked)  # the refused link is reported with its reason
    assert where["b1"] in (where["a1"], where["c1"])  # B went to one side


def _namesakes(graph):
    stage(graph, [T("jacob green", "BORN_ON", "1950-03-01", "Date", "s1"),
                  T("jacob green", "LIVES_IN", "bondi", "Place", "s1"),
                  T("jacob green", "LIVES_IN", "bondi", "Place", "s2"),
                  T("jacob green", "BORN_ON", "1950-03-01", "Date", "s2"),
                  T("jacob green", "WORKS_AS", "nurse", "Occupation", "s2"),
                  T("jacob green", "BORN_ON", "1962-07-11", "Date", "s3"),
                  T("jacob green", "LIVES_IN", "bondi", "Place", "s3"),
                  T("jacob green", "LIVES_IN", "hobart", "Place", "s3"),
                  T("jacob green", "BORN_ON", "1962-07-11", "Date", "s4"),
                  T("jacob green", "WORKS_AS", "pilot", "Occupation", "s4")], schema=SCHEMA)


def test_split_moves_exactly_its_sources_votes(graph):
    _namesakes(graph)
    promote_by_quorum(graph, quorum=2)  # BORN_ON x2, LIVES_IN bondi x3 promoted on jacob green
    before = votes_by_source(graph)
    key = entity_key("Person", "jacob green")
    with pytest.raises(KgrNotFound):
        split_entity(graph, SCHEMA, "Person:nobody here")
    rep = split_entity(graph, SCHEMA, key)
    assert rep.version is not None and len(rep.splits) == 1
    moved = set(rep.splits[0].sources)
    assert moved in ({"s1", "s2"}, {"s3", "s4"})
    new = rep.splits[0].into
    assert new.startswith("Person:jacob green#")
    after = votes_by_source(graph)
    assert set(after) == set(before)  # no vote lost or added
    for s, edges in before.items():
        want = {(new if subj == key and s in moved else subj, rel, obj) for subj, rel, obj in edges}
        assert after[s] == want, s
    # the promoted BORN_ON of the moved group moved with all its votes; LIVES_IN bondi (votes on both
    # sides) stays promoted on the parent
    current = {(e.subject_key, e.relation, e.object_key) for e in promoted_edges(graph)}
    moved_dob = "Date:1950 03 01" if moved == {"s1", "s2"} else "Date:1962 07 11"
    assert (new, "BORN_ON", moved_dob) in current and (key, "BORN_ON", moved_dob) not in current
    assert (key, "LIVES_IN", "Place:bondi") in current
    check_hash(graph)
    # the move is explained from both keys of the BORN_ON edge, by one (:Decision) node
    old_dob, new_dob = edge_key(key, "BORN_ON", moved_dob), edge_key(new, "BORN_ON", moved_dob)
    for k, side in ((old_dob, f"votes moved to {new_dob}"), (new_dob, f"received 2 votes of {old_dob}")):
        why = [d for d in graph.read("decisions_for_edge", {"key": k})[0]["decisions"] if d["action"] == "split"]
        assert len(why) == 1 and side in why[0]["reason"], (k, why)
    nodes = graph.driver.execute_query("MATCH (d:Decision {action: 'split', edge_key: $k}) RETURN d.new_key AS n",
                                       k=old_dob).records
    assert [r["n"] for r in nodes] == [new_dob]
    # the split key survives the CLI's key normalisation, and nothing conflicts any more
    res = CliRunner().invoke(app, ["split", new.upper().replace("PERSON", "Person"), "--json"])
    assert res.exit_code == 0, res.output


def test_resolve_then_rollback_restores_the_promoted_graph(graph):
    recs = people_records(12, 3)
    stage(graph, [t for r in recs for t in person_triples(r)], schema=SCHEMA)
    promote_by_quorum(graph, quorum=1)
    v0, h0 = current_state(graph)
    edges0 = [e.model_dump() for e in promoted_edges(graph)]
    rep = resolve(graph, SCHEMA)
    assert rep.version == v0 + 1 and (rep.merges or rep.splits)
    assert current_state(graph)[1] != h0  # promoted edges moved
    check_hash(graph)
    rb = rollback(graph, v0)
    assert current_state(graph)[1] == h0 == rb.hash
    assert [e.model_dump() for e in promoted_edges(graph)] == edges0


def _run(graph, order_seed: int) -> dict[str, str]:
    recs = people_records(20, 3, seed=11)
    triples = [t for r in recs for t in person_triples(r)]
    random.Random(order_seed).shuffle(triples)
    stage(graph, triples, schema=SCHEMA, batch_size=17)
    resolve(graph, SCHEMA)
    return entity_of(graph)


def test_resolution_is_independent_of_record_order(graph, _session_graph):
    from kgr.store.admin import reset

    first = _run(graph, 1)
    reset(_session_graph)
    second = _run(graph, 2)
    assert len(set(first.values())) < len(first)  # records were merged: the comparison is not vacuous
    assert first == second


def test_labels_steer_the_next_resolution(graph):
    recs = people_records(12, 3)
    stage(graph, [t for r in recs for t in person_triples(r)], schema=SCHEMA)
    dry = resolve(graph, SCHEMA, dry_run=True)
    m = dry.merges[0]
    record_pair_labels(graph, [PairLabel(a=m.keep, b=m.drop, label=False, reviewer="t")])
    again = resolve(graph, SCHEMA, dry_run=True)
    assert (m.keep, m.drop) not in {(x.keep, x.drop) for x in again.merges}
    assert next(t for t in again.types if t.type == "Person").labelled_pairs >= 1
    assert review_pairs(graph, limit=5) == []  # nothing written by dry runs


def test_review_pairs_and_labels_through_the_cli(graph, tmp_path):
    import json

    recs = people_records(15, 3, seed=9)
    stage(graph, [t for r in recs for t in person_triples(r)], schema=SCHEMA)
    schema_file = tmp_path / "schema.json"
    schema_file.write_text(SCHEMA.model_dump_json(), encoding="utf-8")
    runner = CliRunner()
    res = runner.invoke(app, ["resolve", "--schema", str(schema_file), "--target-fmr", "0.0001", "--json"])
    assert res.exit_code == 0, res.output
    rep = json.loads(res.stdout)
    assert not rep["dry_run"] and rep["review"]  # a strict target leaves pairs in the uncertain band
    queue = json.loads(runner.invoke(app, ["review", "pairs", "--json"]).stdout)
    assert queue and queue == sorted(queue, key=lambda q: abs(q["probability"] - 0.5))  # most uncertain first
    first = queue[0]
    lines = tmp_path / "pairs.jsonl"
    lines.write_text(json.dumps({"a": first["a"], "b": first["b"], "label": False, "reviewer": "t"}) + "\n")
    res = runner.invoke(app, ["review", "label-pairs", str(lines), "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["labelled"] == 1
    assert all((q["a"], q["b"]) != (first["a"], first["b"]) for q in
               json.loads(runner.invoke(app, ["review", "pairs", "--json"]).stdout))


def test_merges_of_connected_entities_in_one_wave_end_like_merges_one_by_one(graph):
    recs = people_records(12, 3)
    typo = {r["person"]: r["name"] for r in recs if r["id"].endswith("-1")}
    knows = TripleAssertion(subject=typo[0], subject_type="Person", relation="KNOWS", object=typo[1],
                            object_type="Person", source="k1", confidence=0.9)
    stage(graph, [t for r in recs for t in person_triples(r)] + [knows], schema=SCHEMA)
    resolve(graph, SCHEMA)
    where = entity_of(graph)
    edges = votes_by_source(graph)["k1"]
    # the KNOWS vote sits between the entities its two people ended on, whatever merged into what
    assert edges == {(where["r0-0"], "KNOWS", where["r1-0"])}
    check_hash(graph)


def test_units_know_which_document_listed_them_side_by_side(graph, tmp_path):
    from kgr.ingest.config import IngestConfig
    from kgr.ingest.loaders import file_document_id
    from kgr.ingest.pipeline import ingest
    from kgr.model.schema import load_schema
    from kgr.resolution import build_units

    schema = load_schema(Path(__file__).resolve().parents[2] / "tests" / "data" / "extract" / "schema.json")
    doc = tmp_path / "maven-core.txt"
    doc.write_text("maven-core (1.0-1) unstable; urgency=medium\n\n  * New upstream release.\n"
                   "  * Depend on libjansi-java (>= 3.2) instead of an older copy.\n\n"
                   " -- A Packager <a@example.org>  Mon, 01 Jan 2024 10:00:00 +0000\n\n"
                   "maven-core (1.0-0) unstable; urgency=medium\n\n  * Depend on libslf4j-java (>= 1.10)\n\n"
                   " -- A Packager <a@example.org>  Mon, 01 Dec 2023 10:00:00 +0000\n", encoding="utf-8")
    ingest(graph, [doc], schema, config=IngestConfig(promote=False, resolve=False))
    units = {u.name: u for u in build_units(read_entities(graph, "Software"), [])}
    slot = ("DEPENDS_ON<", "Software:maven core", file_document_id(doc))
    # both libraries, read back from Neo4j with their sources' document, are listed by the one changelog
    assert slot in units["libjansi java"].listed and slot in units["libslf4j java"].listed
    assert {s[0] for s in units["maven core"].listed} == {"DEPENDS_ON>"}
