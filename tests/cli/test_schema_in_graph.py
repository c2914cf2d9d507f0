"""The graph knows its schema (issue 32, item 4): `kgr init --schema` stores it, later commands use
it without `--schema`, another schema is refused unless migrated to, and `kgr reset` empties the
database. Through the real CLI (typer's CliRunner) against the real Neo4j."""

from __future__ import annotations

import json
import threading

import pytest
from typer.testing import CliRunner

from kgr.cli.main import app
from kgr.engine import Engine
from kgr.errors import KgrSchemaMismatch
from kgr.model.schema import KGSchema
from kgr.store.schema_store import schema_history, store_schema

pytestmark = pytest.mark.neo4j

S1 = {"name": "software", "entity_types": {"Software": {}, "Person": {}},
      "relation_types": {"DEPENDS_ON": {"domain": ["Software"], "range": ["Software"]},
                         "DEVELOPED_BY": {"domain": ["Software"], "range": ["Person"]}}}
S2 = {**S1, "entity_types": {**S1["entity_types"], "Company": {}},
      "relation_types": {"DEPENDS_ON": S1["relation_types"]["DEPENDS_ON"]}}


@pytest.fixture
def kgr(graph, neo4j_settings, monkeypatch):
    monkeypatch.setenv("NEO4J_URI", neo4j_settings.uri)
    runner = CliRunner()

    def run(*args: str, code: int = 0, input: str | None = None):
        res = runner.invoke(app, list(args), input=input)
        assert res.exit_code == code, (res.stdout, res.stderr)
        return res

    return run


def _file(tmp_path, name, data):
    p = tmp_path / name
    p.write_text(json.dumps(data), encoding="utf-8")
    return p


def _triples(tmp_path):
    rows = [("Flask", "Software", "DEPENDS_ON", "Werkzeug", "Software"),
            ("Flask", "Software", "LIKES", "Jinja", "Software"),
            ("Flask", "Software", "DEVELOPED_BY", "Armin Ronacher", "Person")]
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps({"subject": s, "subject_type": st, "relation": r, "object": o, "object_type": ot,
                                     "source": "readme"}) + "\n" for s, st, r, o, ot in rows), encoding="utf-8")
    return p


def test_init_stores_the_schema_and_stage_uses_it_without_schema(kgr, tmp_path, graph):
    s1 = _file(tmp_path, "s1.json", S1)
    first = json.loads(kgr("init", "--schema", str(s1), "--json").stdout)
    assert first["schema"]["version"] == 1 and first["schema"]["action"] == "stored"
    again = json.loads(kgr("init", "--schema", str(s1), "--json").stdout)  # the same schema: nothing new
    assert again["schema"]["action"] == "unchanged" and again["schema"]["hash"] == first["schema"]["hash"]
    assert "the graph's schema is 'software' version 1" in kgr("init").stdout

    # no --schema: the stored one holds staging to it (LIKES is not in it)
    rep = json.loads(kgr("stage", str(_triples(tmp_path)), "--json").stdout)
    assert rep["new_votes"] == 2 and [r["reason"] for r in rep["rejected"]] == ["relation: unknown relation type LIKES"]
    st = json.loads(kgr("status", "--json").stdout)
    assert st["schema_version"] == 1 and st["schema_hash"] == first["schema"]["hash"]


def test_another_schema_is_refused_unless_migrated_to(kgr, tmp_path, graph):
    s1, s2 = _file(tmp_path, "s1.json", S1), _file(tmp_path, "s2.json", S2)
    kgr("init", "--schema", str(s1))
    for cmd in (("init", "--schema", str(s2)), ("stage", str(_triples(tmp_path)), "--schema", str(s2)),
                ("promote", "--schema", str(s2))):
        res = kgr(*cmd, code=1)
        assert res.stderr.count("\n") == 1, res.stderr  # one line
        assert res.stderr.startswith(f"Error: {s2} differs from the graph's schema 'software' (version 1, sha256:")
        assert "entity types +Company; relation types -DEVELOPED_BY" in res.stderr
        assert "kgr init --schema FILE --migrate" in res.stderr
    assert len(schema_history(graph)) == 1  # nothing written by the refusals

    out = json.loads(kgr("init", "--schema", str(s2), "--migrate", "--json").stdout)
    assert out["schema"]["version"] == 2 and out["schema"]["action"] == "migrated"
    assert out["schema"]["diff"]["entity_types_added"] == ["Company"]
    assert out["schema"]["diff"]["relation_types_removed"] == ["DEVELOPED_BY"]
    history = schema_history(graph)
    assert [h.version for h in history] == [2, 1] and history[0].diff.describe() == \
        "entity types +Company; relation types -DEVELOPED_BY"
    # now S2 is the graph's: stage uses it without --schema; S1 is refused in turn
    rep = json.loads(kgr("stage", str(_triples(tmp_path)), "--json").stdout)
    assert rep["new_votes"] == 1 and len(rep["rejected"]) == 2
    assert "differs from the graph's schema" in kgr("stage", str(_triples(tmp_path)), "--schema", str(s1),
                                                     code=1).stderr
    assert "--migrate needs --schema FILE" in kgr("init", "--migrate", code=1).stderr


def test_ingest_takes_the_stored_schema_and_needs_one(kgr, tmp_path, graph):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Flask depends on Werkzeug.", encoding="utf-8")
    res = kgr("ingest", str(docs), "--no-promote", code=1)
    assert res.stderr.startswith("Error: no KG schema: give --schema FILE")
    kgr("ingest", str(docs), "--schema", str(_file(tmp_path, "s1.json", S1)), "--no-promote", "--json")
    assert schema_history(graph)[0].kg_schema.name == "software"  # the first ingest stored it
    rep = json.loads(kgr("ingest", str(docs), "--no-promote", "--json").stdout)
    assert rep["chunks_skipped"] == 1  # ran on the stored schema


def test_slices_and_the_server_use_the_stored_schema(kgr, tmp_path, graph):
    from kgr.cli.serve import _served_schema
    from kgr.slices.build import schema_version

    kgr("init", "--schema", str(_file(tmp_path, "s1.json", S1)))
    kgr("stage", str(_triples(tmp_path)))
    kgr("promote", "--policy", "quorum", "--quorum", "1")
    s = json.loads(kgr("slice", "--anchor", "Software:flask", "--json").stdout)
    assert s["schema_version"] == schema_version(KGSchema.model_validate(S1)) != "none"
    st = json.loads(kgr("status", "--json").stdout)  # the same hash as the one the graph keeps, shortened
    assert st["schema_hash"].startswith(s["schema_version"]) and len(s["schema_version"]) == len("sha256:") + 16
    assert _served_schema(None) == KGSchema.model_validate(S1)
    with pytest.raises(KgrSchemaMismatch):
        _served_schema(_file(tmp_path, "s2.json", S2))


def test_concurrent_migrations_store_one_version_each(graph):
    schemas = [KGSchema.model_validate({**S1, "name": f"v{i}"}) for i in range(4)]
    store_schema(graph, schemas[0])
    errors = []

    def migrate(s):
        try:
            store_schema(graph, s, migrate=True)
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=migrate, args=(s,)) for s in schemas[1:]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    history = schema_history(graph)
    assert [h.version for h in history] == [4, 3, 2, 1]
    assert {h.kg_schema.name for h in history} == {"v0", "v1", "v2", "v3"}


def test_reset_asks_first_and_empties_the_database(kgr, tmp_path, graph):
    kgr("init", "--schema", str(_file(tmp_path, "s1.json", S1)))
    kgr("stage", str(_triples(tmp_path)))
    kgr("promote", "--policy", "quorum", "--quorum", "1")
    kgr("snapshot", "create", "one")

    def nodes() -> int:
        return graph.driver.execute_query("MATCH (n) RETURN count(n) AS n").records[0]["n"]

    before = nodes()
    res = kgr("reset", input="n\n", code=1)
    assert "Delete everything in" in res.stderr and "Error: not confirmed; nothing was deleted" in res.stderr
    assert kgr("reset", code=1).stderr.count("Error:") == 1  # no answer at all (stdin closed)
    assert nodes() == before
    out = json.loads(kgr("reset", "--yes", "--json").stdout)
    assert out["deleted"]["entities"] == 3 and out["version"] == 0
    labels = graph.driver.execute_query("MATCH (n) RETURN collect(DISTINCT labels(n)) AS l").records[0]["l"]
    assert labels == [["KgrState"]]  # the state node alone, initialised again: no schema, no snapshot, no data
    st = json.loads(kgr("status", "--json").stdout)
    assert (st["entities"], st["version"], st["schema_version"]) == (0, 0, None)
    kgr("stage", str(_triples(tmp_path)))  # a fresh store: no schema, nothing refused
    kgr("reset", input="y\n")
    assert nodes() == 1


def test_engine_reset_empties_the_store(graph):
    kg = Engine(graph, KGSchema.model_validate(S1))  # (not closed: the session's graph)
    kg.init()
    assert kg.schema_change.action == "stored" and kg.stored_schema().version == 1
    kg.reset()
    assert kg.stored_schema() is None and kg.status().entities == 0 and kg.status().version == 0


def test_the_store_tools_of_kgr_tool_use_the_stored_schema(kgr, tmp_path, graph):
    kgr("init", "--schema", str(_file(tmp_path, "s1.json", S1)))
    call = {"source": "doc-1", "extracted_kg": {
        "entities": {"Software": ["Flask", "Jinja", "Werkzeug"]},
        "relations": {"LIKES": [{"subject": "Flask", "object": "Jinja"}],
                      "DEPENDS_ON": [{"subject": "Flask", "object": "Werkzeug"}]}}}
    kgr("tool", "query_kg_storage", input=json.dumps(call))
    staged = graph.driver.execute_query("MATCH ()-[p:PENDING_REL]->() RETURN collect(p.type) AS t").records[0]["t"]
    assert staged == ["DEPENDS_ON"]  # LIKES is not in the graph's schema
    res = kgr("tool", "query_kg_storage", "--schema", str(_file(tmp_path, "s2.json", S2)), input=json.dumps(call),
              code=1)
    assert "differs from the graph's schema" in res.stderr


def test_storing_a_schema_on_a_graph_built_without_it_names_the_types_it_leaves_out(kgr, tmp_path, graph):
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps({"subject": "Linux", "subject_type": "Language", "relation": "DEPENDS_ON",
                             "object": "C", "object_type": "Language", "source": "s"}) + "\n")
    kgr("stage", str(p))  # no schema anywhere: an open vocabulary
    out = json.loads(kgr("init", "--schema", str(_file(tmp_path, "s1.json", S1)), "--json").stdout)
    assert out["undeclared_types"] == {"Language": 2}
    assert out["summary"].endswith("does not declare (kept as they are): Language (2)")
