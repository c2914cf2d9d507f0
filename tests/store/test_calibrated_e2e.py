"""The calibrated policy on the real Neo4j: the seam, independent sources, labels, review, re-reading."""

from __future__ import annotations

import json
import random

import pytest
from typer.testing import CliRunner

from kgr.cli.main import app
from kgr.engine import Engine
from kgr.extract.verify import RulesVerifier
from kgr.evidence.features import FEATURES
from kgr.promotion.config import CalibratedConfig
from kgr.promotion.policies import make_policy
from kgr.model.review import EdgeLabel
from kgr.model.schema import KGSchema
from kgr.model.triples import TripleAssertion
from kgr.store.provenance import ChunkMark, commit_chunks, upsert_chunks
from kgr.store.rounds import read_context, read_round, run_round
from kgr.model.promotion import RoundRequest
from kgr.store.staging import stage
from kgr.store.versions import current_state, full_hash, list_versions, promoted_edges, rollback

pytestmark = pytest.mark.neo4j

SCHEMA = KGSchema.model_validate({
    "entity_types": {"Person": {"patterns": [r"\bP\d\d\b"]}, "Organization": {"patterns": [r"\bOrg\d\b"]},
                     "City": {"patterns": [r"\bCity\d\b"]}},
    "relation_types": {
        "WORKS_AT": {"domain": ["Person"], "range": ["Organization"], "triggers": ["works at"]},
        "KNOWS": {"domain": ["Person"], "range": ["Person"], "triggers": ["knows"]},
        "LOCATED_IN": {"domain": ["Organization"], "range": ["City"], "functional": True, "triggers": ["is located in"]},
    },
})
FAST = CalibratedConfig(embedding=False)


def A(s, st, r, o, ot, src, conf=0.9):
    return TripleAssertion(subject=s, subject_type=st, relation=r, object=o, object_type=ot, source=src, confidence=conf)


def world(seed: int = 3, *, people: int = 60, false_share: float = 0.25) -> tuple[list[TripleAssertion], set]:
    """People at five organisations, friendships inside them; false facts put people at random
    organisations and link strangers. True facts have 1-4 documents, false ones 1-2."""
    rng = random.Random(seed)
    orgs = [f"Org{i}" for i in range(5)]
    at = {f"P{i:02d}": orgs[i % 5] for i in range(people)}
    facts = [(p, "Person", "WORKS_AT", o, "Organization") for p, o in at.items()]
    for p in at:
        mates = [q for q in at if at[q] == at[p] and q != p]
        for q in rng.sample(mates, 2):
            facts.append((p, "Person", "KNOWS", q, "Person"))
    facts += [(o, "Organization", "LOCATED_IN", f"City{i % 2}", "City") for i, o in enumerate(orgs)]
    truth = {(f[0], f[2], f[3]) for f in facts}
    false = []
    while len(false) < false_share * len(facts):
        p, q = rng.sample(sorted(at), 2)
        f = (p, "Person", "WORKS_AT", rng.choice(orgs), "Organization") if rng.random() < 0.5 else \
            (p, "Person", "KNOWS", q, "Person")
        if (f[0], f[2], f[3]) not in truth:
            false.append(f)
    out = []
    for f in facts:
        for d in rng.sample(range(400), rng.choice([1, 2, 2, 3, 4])):
            out.append(A(*f, f"doc-{d}"))
    for f in false:
        for d in rng.sample(range(400), rng.choice([1, 1, 2])):
            out.append(A(*f, f"doc-{d}"))
    rng.shuffle(out)
    return out, truth


def test_one_run_round_serves_every_policy(graph):
    rows, _ = world()
    for name in ("quorum", "gedig", "calibrated"):
        from kgr.store.admin import init_store, reset

        reset(graph)
        init_store(graph, SCHEMA)
        stage(graph, rows, schema=SCHEMA)
        policy = make_policy(name, FAST if name == "calibrated" else None)
        summary = run_round(graph, policy, schema=SCHEMA)
        assert summary.policy == name and summary.version == 1 and summary.promoted > 0
        assert summary.candidates == summary.promoted + summary.held + summary.rejected
        assert current_state(graph)[1] == full_hash(e.key for e in promoted_edges(graph))
        note = list_versions(graph)[0].note
        assert name in note, (name, note)
    # only the calibrated policy scores: p_hat and the feature vector are on its promoted edges
    r = graph.driver.execute_query("MATCH ()-[r:WORKS_AT]->() WHERE r.valid_to IS NULL "
                                   "RETURN min(r.p_hat) AS lo, max(size(r.features)) AS width").records[0]
    assert 0.5 <= r["lo"] <= 1.0 and r["width"] == len(FEATURES)


def test_votes_from_chunks_of_one_document_count_as_one_independent_source(graph):
    from types import SimpleNamespace

    def chunk(cid, doc, i):
        return SimpleNamespace(id=cid, document_id=doc, index=i, text=f"text {cid}", sha256=cid, start=0, end=1)

    upsert_chunks(graph, [chunk("c1", "d1", 0), chunk("c2", "d1", 1), chunk("c3", "d2", 0)])
    stage(graph, [A("Ann", "Person", "WORKS_AT", "Acme", "Organization", c) for c in ("c1", "c2")]
          + [A("Bob", "Person", "WORKS_AT", "Acme", "Organization", c) for c in ("c1", "c3")]
          + [A("Cyd", "Person", "WORKS_AT", "Acme", "Organization", s) for s in ("doc-7#1", "doc-7#2", "doc-8")],
          schema=SCHEMA)
    ctx, _ = read_context(graph, "calibrated")
    inputs = read_round(graph, RoundRequest(limit=10), ctx)
    docs = {c.subject_key: (c.votes, c.documents) for c in inputs.candidates}
    assert docs == {"Person:ann": (2, 1), "Person:bob": (2, 2), "Person:cyd": (3, 2)}
    # explain says it too, beside the votes (a reader weighs documents, not chunks)
    kg = Engine(graph, schema=SCHEMA)
    why = {c.subject_key: kg.explain(c.key) for c in inputs.candidates}
    assert {k: (w.votes, w.documents) for k, w in why.items()} == docs


def test_explain_counts_the_documents_of_overflow_votes(graph):
    """Past the inline limit votes are (:Vote) nodes; their documents count too."""
    from kgr.store.staging import MAX_INLINE_VOTES

    n = MAX_INLINE_VOTES + 5
    stage(graph, [A("Ann", "Person", "WORKS_AT", "Acme", "Organization", f"doc-{i % 3 if i < MAX_INLINE_VOTES else 9}#{i}")
                  for i in range(n)], schema=SCHEMA)
    key = graph.read("pending_edges", {"statuses": None})[0]["key"]
    why = Engine(graph, schema=SCHEMA).explain(key)
    assert (why.votes, why.documents) == (n, 4)  # doc-0, doc-1, doc-2 inline, doc-9 only in the overflow


def test_a_false_label_retires_a_promoted_edge_exactly_and_rollback_restores_it(graph):
    kg = Engine(graph, schema=SCHEMA)
    stage(graph, [A(f"P{i}", "Person", "WORKS_AT", "Acme", "Organization", s) for i in range(4) for s in ("a", "b")])
    kg.promote(policy="quorum")
    kg.snapshot("before")
    edges = {e.subject: e for e in promoted_edges(graph)}
    victim = edges["P1"].key
    rep = kg.label([EdgeLabel(key=victim, label=False, reviewer="ann"),
                    EdgeLabel(key=edges["P2"].key, label=True, reviewer="ann")])
    assert (rep.labelled, rep.retired, rep.rejected) == (2, 1, 0)
    now = {e.key for e in promoted_edges(graph)}
    assert victim not in now and len(now) == 3
    assert current_state(graph)[1] == full_hash(now)  # the hash equals a recomputation
    assert list_versions(graph)[0].kind == "label"
    why = graph.read("decisions_for_edge", {"key": victim})[0]
    assert why["status"] == "rejected"
    assert [d["action"] for d in why["decisions"]][-2:] in (["label", "retire"], ["retire", "label"])
    assert any("labelled false by ann" in d["reason"] for d in why["decisions"])
    p_hat = graph.driver.execute_query("MATCH ()-[r:WORKS_AT {key: $k}]->() WHERE r.valid_to IS NULL RETURN r.p_hat AS p",
                                       k=edges["P2"].key).records[0]["p"]
    assert p_hat == 1.0
    # a later round never promotes the edge labelled false again
    kg.promote(config=FAST)
    assert victim not in {e.key for e in promoted_edges(graph)}
    rollback(graph, "before")
    assert {e.key for e in promoted_edges(graph)} == set(edges[s].key for s in edges)


def test_a_rejected_edge_labelled_true_is_reported_back_in_play(graph):
    kg = Engine(graph, schema=SCHEMA)
    stage(graph, [A("P0", "Person", "WORKS_AT", "Acme", "Organization", "a")])
    key = graph.read("pending_edges", {"statuses": None})[0]["key"]
    assert kg.label([EdgeLabel(key=key, label=False, reviewer="a")]).rejected == 1
    rep = kg.label([EdgeLabel(key=key, label=True, reviewer="b")])
    assert (rep.relabelled, rep.reopened, rep.rejected) == (1, 1, 0)
    assert graph.read("pending_edges", {"statuses": None})[0]["status"] == "pending"
    assert kg.label([EdgeLabel(key=key, label=True, reviewer="c")]).reopened == 0  # already in play


def test_unknown_or_contradictory_labels_write_nothing(graph):
    kg = Engine(graph, schema=SCHEMA)
    stage(graph, [A("P0", "Person", "WORKS_AT", "Acme", "Organization", s) for s in ("a", "b")])
    key = graph.read("pending_edges", {"statuses": None})[0]["key"]
    from kgr.errors import KgrConflict, KgrNotFound

    with pytest.raises(KgrNotFound, match="no staged edge with key 0123456789abcdef01234567"):
        kg.label([EdgeLabel(key=key, label=True, reviewer="a"),
                  EdgeLabel(key="0123456789abcdef01234567", label=True, reviewer="a")])
    with pytest.raises(KgrConflict, match="labelled both true and false"):
        kg.label([EdgeLabel(key=key, label=True, reviewer="a"), EdgeLabel(key=key, label=False, reviewer="b")])
    assert graph.driver.execute_query("MATCH (l:ReviewLabel) RETURN count(l) AS n").records[0]["n"] == 0
    assert current_state(graph)[0] == 0


def test_explain_names_a_relation_the_schema_does_not_declare(graph, neo4j_settings, monkeypatch, tmp_path):
    """``--explain 'Software:curl|SUPPORT|Protocol:TLS'`` said "no staged edge" and nothing more: a
    relation the schema does not declare now gets a did-you-mean (the schema's relations, case-blind)."""
    from kgr.errors import KgrNotFound

    stage(graph, [A("P0", "Person", "WORKS_AT", "Acme", "Organization", s) for s in ("a", "b")])
    kg = Engine(graph, schema=SCHEMA)
    with pytest.raises(KgrNotFound, match=r"^no staged edge Person:p0 -\[WORK_AT\]-> Organization:acme; 'WORK_AT' is no "
                                          r"relation of the schema: did you mean 'WORKS_AT'\?$"):
        kg.explain("Person:P0|WORK_AT|Organization:Acme")
    with pytest.raises(KgrNotFound, match=r"did you mean 'WORKS_AT'\?$"):
        kg.explain("Person:P0|works_at|Organization:Acme")
    with pytest.raises(KgrNotFound, match=r"'EMPLOYS' is no relation of the schema: its relations are KNOWS, LOCATED_IN, "
                                          r"WORKS_AT$"):
        kg.explain("Person:P0|EMPLOYS|Organization:Acme")
    with pytest.raises(KgrNotFound, match=r"^no staged edge Person:p0 -\[KNOWS\]-> Organization:acme$"):
        kg.explain("Person:P0|KNOWS|Organization:Acme")  # a declared relation: no hint
    with pytest.raises(KgrNotFound, match=r"-\[WORK_AT\]-> Organization:acme$"):
        Engine(graph).explain("Person:P0|WORK_AT|Organization:Acme")  # no schema: nothing to suggest from
    assert kg.explain("Person:P0|WORKS_AT|Organization:Acme").votes == 2
    monkeypatch.setenv("NEO4J_URI", neo4j_settings.uri)
    schema_file = tmp_path / "schema.json"
    schema_file.write_text(SCHEMA.model_dump_json(), encoding="utf-8")
    res = CliRunner().invoke(app, ["promote", "--schema", str(schema_file), "--explain",
                                   "Person:P0|WORK_AT|Organization:Acme"])
    assert res.exit_code == 1 and "did you mean 'WORKS_AT'?" in res.stderr, (res.stdout, res.stderr)


def test_labels_refit_the_scorer_and_change_decisions(graph):
    """Labels on some candidates move the scores of the unlabelled ones that look like them."""
    rows, truth = world(seed=11)
    stage(graph, rows, schema=SCHEMA)
    kg = Engine(graph, schema=SCHEMA)
    cfg = CalibratedConfig(embedding=False, target_fmr=0.1, min_per_class=10)  # this world has < 20 false ones
    kg.promote_until_done(config=cfg)
    before = {r["key"]: r for r in graph.read("pending_edges", {"statuses": None})}
    p_before = _p_hats(graph)
    # a reviewer answers the 30 single-document KNOWS candidates nearest the cut with the truth
    single = [k for k, r in before.items() if r["relation"] == "KNOWS" and r["votes"] == 1 and k in p_before]
    single.sort(key=lambda k: abs(p_before[k] - 0.5))
    is_true = {k: (before[k]["subject"], "KNOWS", before[k]["object"]) in truth for k in single}
    # 15 of each answer: the supervised stage waits for min_per_class labels of each class (10 here)
    answered = [k for k in single if is_true[k]][:15] + [k for k in single if not is_true[k]][:15]
    labels = [EdgeLabel(key=k, label=is_true[k], reviewer="t") for k in answered]
    assert min(sum(lab.label for lab in labels), sum(not lab.label for lab in labels)) >= 10
    assert any(lab.label for lab in labels) and not all(lab.label for lab in labels)
    kg.label(labels)
    summary = kg.promote(config=cfg)
    assert summary.version is not None and summary.cut is not None and summary.cut.labels == len(labels)
    # the supervised stage weighs the features: its explanations name the latent class and features
    moved_by = [json.loads(d["inputs"])["evidence"] for d in graph.driver.execute_query(
        "MATCH (d:Decision {version: $v}) WHERE d.action = 'promote' RETURN d.inputs AS inputs "
        "UNION ALL MATCH ()-[p:PENDING_REL {held_version: $v}]->() RETURN p.held_inputs AS inputs",
        v=summary.version).records]
    assert moved_by and any(name == "latent_class" for ev in moved_by for name, _ in ev)
    p_after = _p_hats(graph)
    moved = [k for k in p_before if k not in answered and k in p_after and abs(p_after[k] - p_before[k]) > 1e-6]
    assert len(moved) > 10  # unlabelled candidates were rescored by the refit model
    after = {r["key"]: r for r in graph.read("pending_edges", {"statuses": None})}
    for lab in labels:  # the labelled ones follow their labels
        assert after[lab.key]["status"] == ("promoted" if lab.label else "rejected"), lab


def _p_hats(graph) -> dict[str, float]:
    rows = graph.driver.execute_query("MATCH ()-[p:PENDING_REL]->() WHERE p.p_hat IS NOT NULL RETURN p.key AS k, p.p_hat AS p")
    return {r["k"]: r["p"] for r in rows.records}


def test_review_queue_ranks_by_uncertainty_about_the_cut_and_impact(graph):
    stage(graph, [A(f"P{i}", "Person", rel, f"O{i}", "Organization" if rel == "WORKS_AT" else "Person", s)
                  for i, rel in enumerate(["WORKS_AT"] * 4 + ["KNOWS"] * 2) for s in ("a",)], schema=None)
    rows = graph.read("pending_edges", {"statuses": None})
    p = {"P0": 0.9, "P1": 0.92, "P2": 0.5, "P3": 0.99, "P4": 0.9, "P5": 0.2}  # hand-set scores, cut 0.9
    for r in rows:
        graph.driver.execute_query("MATCH ()-[x:PENDING_REL {key: $k}]->() SET x.p_hat = $p, x.status = 'held'",
                                   k=r["key"], p=p[r["subject"]])
    graph.driver.execute_query("MERGE (s:PolicyState {name: 'calibrated'}) SET s.state = $st",
                               st=json.dumps({"last_tau": 0.9}))
    q = Engine(graph).review_queue(limit=4, audit_share=0.0)
    assert q.tau == 0.9
    # P0 sits on the cut with a similar WORKS_AT neighbour (P1): first; P4 on the cut alone; then P1; P2 last
    assert [i.subject for i in q.items] == ["P0", "P1", "P4", "P2"]
    assert [round(i.priority, 3) for i in q.items] == [1.693, 1.325, 1.0, 0.111]
    assert q.items[0].evidence[0].source == "a" and {i.why for i in q.items} == {"priority"}
    # with audits: a quarter of the queue is a uniform pick from the rest, spread through it
    q = Engine(graph).review_queue(limit=4, audit_share=0.5)
    assert [i.why for i in q.items] == ["priority", "audit", "priority", "audit"]
    assert [i.subject for i in q.items if i.why == "priority"] == ["P0", "P1"]
    assert len({i.key for i in q.items}) == 4
    # the draw recorded its inclusion level: 2 audits among the 4 edges the priority picks left
    levels = graph.driver.execute_query("MATCH (d:AuditDraw) RETURN d.level AS q").records
    assert [r["q"] for r in levels] == [0.5, 0.5]


def test_audit_draws_top_newcomers_up_to_the_level_of_the_edges_audited_before(graph):
    """A first draw audits the old edges at level 0.5 and is answered; then new edges arrive. The
    next draw's level is solved over both (old edges exposed at 0.5, newcomers at 0), and with as
    many picks as newcomers it lifts every edge to one level: the newcomers are the ones drawn."""
    import time as _time

    stage(graph, [A(f"Old{i}", "Person", "WORKS_AT", "Acme", "Organization", "a") for i in range(8)], schema=None)
    graph.driver.execute_query("MATCH ()-[x:PENDING_REL]->() SET x.p_hat = 0.5, x.status = 'held'")
    first = Engine(graph).review_queue(limit=4, audit_share=1.0)
    assert len(first.items) == 4 and {i.why for i in first.items} == {"audit"}
    Engine(graph).label([EdgeLabel(key=i.key, label=True, reviewer="t") for i in first.items])
    _time.sleep(0.05)
    stage(graph, [A(f"New{i}", "Person", "WORKS_AT", "Acme", "Organization", "b") for i in range(4)], schema=None)
    graph.driver.execute_query("MATCH ()-[x:PENDING_REL]->() WHERE x.p_hat IS NULL SET x.p_hat = 0.5, x.status = 'held'")
    second = Engine(graph).review_queue(limit=4, audit_share=1.0)
    # 4 old edges left at 0.5, 4 newcomers at 0: 4 (Q - 0.5) / 0.5 + 4 Q = 4 gives Q = 2/3; a newcomer
    # is drawn with 2/3, an old edge with 1/3
    q = graph.driver.execute_query("MATCH (d:AuditDraw) RETURN d.level AS q ORDER BY d.drawn_at DESC LIMIT 1"
                                   ).records[0]["q"]
    assert q == pytest.approx(2 / 3, abs=1e-6)
    assert len(second.items) == 4 and {i.subject for i in first.items}.isdisjoint(i.subject for i in second.items)


def test_escalated_candidates_are_reread_and_decided_on_the_evidence(graph):
    """Single-document candidates below the cut whose endpoints appear together in a chunk are
    escalated; the rules verifier re-reads the chunk; a stated fact is promoted, a denied one is not."""
    from types import SimpleNamespace

    rows, truth = world(seed=5)
    assert ("P02", "KNOWS", "P17") not in truth and ("P03", "KNOWS", "P13") not in truth
    stage(graph, rows, schema=SCHEMA)
    # P02 and P17 work at Org2, P03 and P13 at Org3, and neither pair is friends. One document
    # each, read from a chunk that states the first and denies the second.
    texts = {"k1": "P02 knows P17 from the chess club. They meet on Fridays.",
             "k2": "P03 never knows P13, whatever the rumours say."}
    upsert_chunks(graph, [SimpleNamespace(id=c, document_id=f"doc-{c}", index=0, text=t, sha256=c, start=0, end=len(t))
                          for c, t in texts.items()])
    stage(graph, [A("P02", "Person", "KNOWS", "P17", "Person", "k1"),
                  A("P03", "Person", "KNOWS", "P13", "Person", "k2")], schema=SCHEMA)
    from kgr.model.canonical import entity_key

    commit_chunks(graph, [ChunkMark(chunk_id=cid, entity_keys=[entity_key(*e) for e in ents], extractor="test")
                          for cid, ents in (("k1", [("Person", "P02"), ("Person", "P17")]),
                                            ("k2", [("Person", "P03"), ("Person", "P13")]))])
    kg = Engine(graph, schema=SCHEMA)
    rounds = kg.promote_until_done(config=CalibratedConfig(embedding=False, target_fmr=0.2),
                                   verifier=RulesVerifier())
    reread = [r.reread for r in rounds if r.reread is not None]
    assert reread and sum(r.claims for r in reread) >= 2
    ev = {r["e"]: r["a"] for r in graph.driver.execute_query(
        "MATCH (v:VerifierAnswer)-[:FROM]->(c:Chunk) RETURN c.id AS e, v.answer AS a").records}
    assert ev == {"k1": "supports", "k2": "contradicts"}
    status = {(r["subject"], r["object"]): r["status"] for r in graph.read("pending_edges", {"statuses": None})}
    assert status[("P02", "P17")] == "promoted" and status[("P03", "P13")] != "promoted"
    # both were escalated by the first round and decided again on their answers by a later one
    for pair, moved in ((("P02", "P17"), 1), (("P03", "P13"), -1)):
        key = next(r["key"] for r in graph.read("pending_edges", {"statuses": None}) if (r["subject"], r["object"]) == pair)
        ps = [json.loads(d["inputs"]).get("p_hat") for d in graph.read("decisions_for_edge", {"key": key})[0]["decisions"]]
        assert len(ps) >= 2 and (ps[-1] - ps[0]) * moved > 0.1, (pair, ps)


def test_an_edge_reread_without_an_answer_is_decided_again_not_left_unread(graph):
    """An escalated edge whose chunks name only one of its ends gets no claim to read; the re-read
    still marks it read, so the next round decides it again (its reason no longer says that no
    verifier has read it, and it is not re-read again)."""
    from types import SimpleNamespace

    from kgr.model.canonical import entity_key
    from kgr.store import evidence

    rows, truth = world(seed=5)
    stage(graph, rows, schema=SCHEMA)
    text = "P02 knows P17 from the chess club."
    upsert_chunks(graph, [SimpleNamespace(id="k1", document_id="doc-k1", index=0, text=text, sha256="k1", start=0,
                                          end=len(text))])
    stage(graph, [A("P02", "Person", "KNOWS", "P17", "Person", "k1")], schema=SCHEMA)
    commit_chunks(graph, [ChunkMark(chunk_id="k1", entity_keys=[entity_key("Person", "P02")], extractor="test")])
    kg = Engine(graph, schema=SCHEMA)
    cfg = CalibratedConfig(embedding=False, target_fmr=0.2)
    first = kg.promote(config=cfg, verifier=RulesVerifier())
    assert first.reread is not None and first.reread.no_chunks >= 1
    p = next(r for r in graph.read("pending_edges", {"statuses": None}) if (r["subject"], r["object"]) == ("P02", "P17"))
    held = graph.driver.execute_query("MATCH ()-[p:PENDING_REL {key: $k}]->() RETURN p.held_reason AS r, "
                                      "p.evidence_rev AS rev, p.decided_evidence_rev AS dec", k=p["key"]).records[0]
    assert "no verifier has read it" in held["r"] and held["rev"] == held["dec"] + 1  # marked read: to decide again
    assert p["key"] not in {k for k, _, _ in evidence.escalated(graph, limit=1000)}  # and not to read again
    kg.promote(config=cfg, verifier=RulesVerifier())
    after = graph.driver.execute_query("MATCH ()-[p:PENDING_REL {key: $k}]->() RETURN p.reason AS r, "
                                       "p.evidence_rev AS rev, p.decided_evidence_rev AS dec", k=p["key"]).records[0]
    assert after["rev"] == after["dec"] and "no verifier has read it" not in after["r"]


def test_cli_review_queue_label_and_explain(graph, neo4j_settings, monkeypatch, tmp_path):
    monkeypatch.setenv("NEO4J_URI", neo4j_settings.uri)
    rows, _ = world(seed=2, people=30)
    stage(graph, rows, schema=SCHEMA)
    Engine(graph, schema=SCHEMA).promote_until_done(config=CalibratedConfig(embedding=False, target_fmr=0.2))
    runner = CliRunner()
    res = runner.invoke(app, ["review", "queue", "--limit", "3", "--json"])
    assert res.exit_code == 0, res.output
    items = json.loads(res.stdout)["items"]
    assert len(items) == 3 and {"key", "subject", "relation", "object", "p_hat", "evidence"} <= set(items[0])
    f = tmp_path / "labels.jsonl"
    f.write_text("\n".join(json.dumps({"key": it["key"], "label": False, "reviewer": "cli"}) for it in items) + "\n")
    res = runner.invoke(app, ["review", "label", str(f), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["labelled"] == 3
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"key": items[0]["key"], "label": True, "reviewer": "x"}) + "\n{\"key\": 1}\n")
    res = runner.invoke(app, ["review", "label", str(bad)])
    assert res.exit_code == 1 and "bad.jsonl:2" in res.stderr and "nothing was recorded" in res.stderr
    scored = next(r["key"] for r in graph.read("pending_edges", {"statuses": ["promoted"]}))
    res = runner.invoke(app, ["promote", "--explain", scored])
    assert res.exit_code == 0 and "p_hat = " in res.stdout and "gate DG" in res.stdout and "moved most" in res.stdout


def test_two_rounds_deciding_at_once_commit_one_set_of_decisions(graph):
    """Issue 13, item 5: two `kgr promote` at once both recorded a full set of decisions. A round's
    write now checks, under the version lock, that the store is still at the version it read."""
    from kgr.store.rounds import RoundConflict, write_round

    stage(graph, [A(f"P{i}", "Person", "WORKS_AT", "Acme", "Organization", s) for i in range(6) for s in ("a", "b")],
          schema=SCHEMA)
    policy = make_policy("quorum")
    ctx, state = read_context(graph, policy.name)
    inputs_a = read_round(graph, policy.plan(ctx, state), ctx, schema=SCHEMA)
    inputs_b = read_round(graph, policy.plan(ctx, state), ctx, schema=SCHEMA)
    first = write_round(graph, policy.decide(inputs_a, state), inputs_a, policy=policy.name)
    assert first.promoted == 6
    with pytest.raises(RoundConflict, match="moved from version 0 to 1"):
        write_round(graph, policy.decide(inputs_b, state), inputs_b, policy=policy.name)
    decisions = graph.driver.execute_query("MATCH (d:Decision) RETURN d.version AS v, count(*) AS n").records
    assert [(r["v"], r["n"]) for r in decisions] == [(1, 6)]  # one version, one decision per edge
    assert current_state(graph)[0] == 1 and current_state(graph)[1] == full_hash(e.key for e in promoted_edges(graph))
    # run_round reads again after a conflict: the next round finds nothing left to decide
    assert run_round(graph, policy, schema=SCHEMA).version is None


@pytest.mark.parametrize("policy_name", ["quorum", "calibrated"])
def test_four_rounds_at_once_decide_each_edge_once_per_version(graph, policy_name):
    """Issue 13, item 5: four rounds started together on four threads, while staging adds votes.
    Every version's decisions are one per edge; an edge is promoted by one version only; the hash
    equals a full recomputation."""
    import threading

    assertions, _ = world(seed=11, people=40)
    stage(graph, assertions[: len(assertions) // 2], schema=SCHEMA)
    policy = make_policy(policy_name)
    gate = threading.Barrier(5)
    errors: list[BaseException] = []

    def rounds() -> None:
        gate.wait()
        try:
            for _ in range(2):
                run_round(graph, policy, schema=SCHEMA, attempts=10)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def more_votes() -> None:
        gate.wait()
        for i in range(len(assertions) // 2, len(assertions), 25):
            stage(graph, assertions[i:i + 25], schema=SCHEMA)

    threads = [threading.Thread(target=rounds) for _ in range(4)] + [threading.Thread(target=more_votes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    # the calibrated cut promotes nothing on the first half of this world's votes (it starts near 80 %):
    # when the four threads' rounds all ran before the staging thread got that far (a loaded machine),
    # nothing is promoted yet; one more round on the complete votes settles it
    run_round(graph, policy, schema=SCHEMA, attempts=10)
    per_version = graph.driver.execute_query(
        "MATCH (d:Decision) WITH d.version AS v, d.edge_key AS k, count(*) AS n RETURN max(n) AS most, "
        "count(DISTINCT v) AS versions", database_=graph.database).records[0]
    assert per_version["most"] == 1 and per_version["versions"] >= 1
    promotions = graph.driver.execute_query(
        "MATCH (d:Decision {action: 'promote'}) WITH d.edge_key AS k, count(*) AS n RETURN k, n",
        database_=graph.database).records
    current = [e.key for e in promoted_edges(graph)]
    assert len(current) == len(set(current)) > 0
    retired = {r["k"] for r in graph.driver.execute_query(
        "MATCH (d:Decision {action: 'retire'}) RETURN DISTINCT d.edge_key AS k", database_=graph.database).records}
    # a second promotion of an edge needs a retirement in between (the calibrated cut may exchange edges)
    assert all(r["n"] == 1 or r["k"] in retired for r in promotions)
    versions = [v.version for v in list_versions(graph) if v.kind == "promotion"]
    assert len(set(versions)) == len(versions) >= 1
    assert current_state(graph)[1] == full_hash(current)
