"""kgr's own labels and relationship types can never be reached from user data (issue 13, items 1-2).

Each test reproduces a reported break: a relation named PENDING_REL doubled edge keys and failed
later staging with a traceback; an entity type Snapshot broke `kgr snapshot list`; Document, Chunk
and Decision inflated the status counts.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kgr.cli.main import app
from kgr.errors import KgrSchemaError
from kgr.model.canonical import OWN_NON_ENTITY_RELATION_TYPES, RESERVED_LABELS, RESERVED_RELATION_TYPES, reserved_name
from kgr.model.schema import KGSchema, load_schema
from kgr.model.triples import TripleAssertion
from kgr.store.admin import status
from kgr.store.group_commit import GroupWriter
from kgr.engine import promote_by_quorum
from kgr.store.staging import stage

pytestmark = pytest.mark.neo4j


def A(s, st, r, o, ot, src):
    return TripleAssertion(subject=s, subject_type=st, relation=r, object=o, object_type=ot, source=src)


def test_a_relation_named_pending_rel_is_rejected_and_changes_nothing(graph):
    good = [A("Ada", "Person", "WORKS_AT", "IBM", "Org", s) for s in ("a", "b")]
    bad = [A("Ada", "Person", "PENDING_REL", "IBM", "Org", s) for s in ("a", "b", "c")]
    rep = stage(graph, good + bad)
    assert len(rep.rejected) == 3 and all("kgr's own relationship types" in r.reason for r in rep.rejected)
    promote_by_quorum(graph, quorum=2)
    later = stage(graph, [A("Ada", "Person", "PENDING_REL", "IBM", "Org", "d")])  # used to raise _MissingEndpoints
    assert len(later.rejected) == 1 and later.new_votes == 0
    st = status(graph)
    assert st.promoted == 1 and st.pending_by_status == {"promoted": 1} and st.votes == 2
    keys = graph.driver.execute_query("MATCH ()-[r]->() WHERE r.key IS NOT NULL RETURN r.key AS k").records
    assert len(keys) == 2  # one staged edge and its promoted copy: no doubled keys


def test_entity_types_named_like_kgr_labels_are_rejected(graph, neo4j_settings, monkeypatch):
    monkeypatch.setenv("NEO4J_URI", neo4j_settings.uri)
    for label in ("Snapshot", "Document", "Chunk", "Decision", "KgrThing"):
        rep = stage(graph, [A("v1", label, "NAMED", "x", "Thing", s) for s in ("a", "b")])
        assert len(rep.rejected) == 2 and label in rep.rejected[0].reason
    assert status(graph).entities == 0 and status(graph).documents == 0 and status(graph).decisions == 0
    res = CliRunner().invoke(app, ["snapshot", "list", "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout) == []


def test_the_group_commit_rejects_reserved_names_per_row(graph):
    gc = GroupWriter(graph)
    try:
        rep = gc.stage([A("Ada", "Person", "WORKS_AT", "IBM", "Org", "a"), A("Ada", "Person", "PENDING_REL", "IBM", "Org", "a")])
    finally:
        gc.close()
    assert rep.new_votes == 1 and [r.index for r in rep.rejected] == [1]


def test_a_schema_cannot_declare_a_reserved_type(tmp_path):
    for body, word in (({"entity_types": {"Snapshot": {}}}, "Snapshot"),
                       ({"entity_types": {"A": {}}, "relation_types": {"PENDING_REL": {}}}, "PENDING_REL")):
        f = tmp_path / "s.json"
        f.write_text(json.dumps(body))
        with pytest.raises(KgrSchemaError, match=f"'{word}' is one of kgr's own"):
            load_schema(f)
    assert KGSchema.model_validate({"entity_types": {"Snapshots": {}}})  # a different name is fine


def test_every_label_and_type_the_templates_write_is_reserved():
    import re
    from pathlib import Path

    text = " ".join(p.read_text() for p in Path("cypher").glob("*.j2") if not p.name.startswith("bench_"))
    labels = set(re.findall(r"\(\w*:([A-Z][A-Za-z]+)[ {)]", text)) - {"Entity"}
    types = set(re.findall(r"\[\w*:([A-Z_]{3,})[ {\]]", text))
    assert labels <= RESERVED_LABELS, labels - RESERVED_LABELS
    assert types <= RESERVED_RELATION_TYPES | OWN_NON_ENTITY_RELATION_TYPES
    assert reserved_name("Entity", relation=False) and reserved_name("KGR_LINK", relation=True)


def test_a_user_relation_named_like_a_provenance_link_stays_apart(graph):
    """PART_OF is a natural relation (WordNet has it); kgr's own PART_OF joins chunks to documents.
    Every statement names the endpoint labels, so the two never mix."""
    from types import SimpleNamespace

    from kgr.store.provenance import upsert_chunks
    from kgr.store.versions import promoted_edges

    upsert_chunks(graph, [SimpleNamespace(id="c1", document_id="d1", index=0, text="t", sha256="c1", start=0, end=1)])
    stage(graph, [A("Lisbon", "Place", "PART_OF", "Portugal", "Place", s) for s in ("c1", "x")])
    promote_by_quorum(graph, quorum=2)
    assert [(e.subject, e.relation, e.object) for e in promoted_edges(graph)] == [("Lisbon", "PART_OF", "Portugal")]
    st = status(graph)
    assert (st.documents, st.chunks, st.promoted) == (1, 1, 1)
