"""The promotion benchmark's streams (``scripts/promotion_streams.py``): pure, no Neo4j."""

from __future__ import annotations

import hashlib
import sys
from collections import Counter
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

import promotion_streams as ps  # noqa: E402 - after the path set-up

from kgr.extract.base import Extractor  # noqa: E402
from kgr.extract.rules import RulesExtractor  # noqa: E402
from kgr.ingest.chunking import chunk_text  # noqa: E402
from kgr.model.canonical import entity_key  # noqa: E402


def _digest(chunks) -> str:
    d = hashlib.sha256()
    for c in chunks:
        d.update(b"--wave--\n")
        for a in c:
            d.update(repr((a.subject, a.subject_type, a.relation, a.object, a.object_type, a.source,
                           a.confidence)).encode() + b"\n")
    return d.hexdigest()


# Computed with scripts/bench_promotion.py's own build_stream BEFORE the stream code moved to
# scripts/promotion_streams.py (same digest functions as here): the move must not change a thing.
BEFORE_MOVE = {
    (1000, 7, 4): ("eaf0f4857386bd70e5028c1d9fd995bfe43f774fabd7c0f8231f0493f16fb0f5",
                   "081b8e5b33151f201021c421f106a90f3b4e75093e0675d82d25edac0649d291", 4852),
    (200, 3, 4): ("9b932da352f731a7aaf863ca7a5f0a5db7f00162877258c23abc3a6ddf108efa",
                  "872c3c97fac40d8b87daa26ca118475827daef4f6929f1bcc242d1c954405914", 2180),
}


@pytest.mark.parametrize("args", sorted(BEFORE_MOVE))
def test_networkx_stream_is_unchanged_by_the_move(args):
    n_synthetic, seed, waves = args
    stream, chunks = ps.build_stream(n_synthetic=n_synthetic, seed=seed, waves=waves)
    kinds = hashlib.sha256(repr(sorted((i, k, stream.votes[i]) for i, k in stream.kind.items())).encode()).hexdigest()
    assert (_digest(chunks), kinds, len(stream.assertions)) == BEFORE_MOVE[args]
    ls = ps.networkx_stream(seed=seed, n_synthetic=n_synthetic, waves=waves)
    assert _digest([w.assertions for w in ls.waves]) == BEFORE_MOVE[args][0]
    assert ls.truth == {i: k == "true" for i, k in stream.kind.items()}
    assert ls.document_votes == ls.votes == stream.votes


# -- the text stream ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def text():
    return ps.text_stream(7)


def test_text_stream_shape(text):
    assert text.name == "text" and text.extractor is not None and isinstance(text.extractor, Extractor)
    assert not text.assertions and len(text.documents) == text.notes["documents"] == 120
    assert len(text.waves) == 4 and all(w.documents for w in text.waves)
    assert len({d for d, _ in text.documents}) == len(text.documents)
    # each paragraph is exactly one chunk under kgr's default chunking (the pipeline's)
    n_chunks = 0
    for doc_id, body in text.documents:
        chunks = [c.text for c in chunk_text(body, doc_id, config=text.chunking)]
        assert chunks == body.strip().split("\n\n")
        n_chunks += len(chunks)
    assert n_chunks == text.notes["chunks"]
    assert max(text.notes["chunks_per_document"]) >= 4
    # keys are entity_key(type, name), types as declared
    for (s, rel, o), k in text.kind.items():
        spec = text.schema.relation_types[rel]
        assert s.split(":", 1)[0] in spec.domain and o.split(":", 1)[0] in spec.range
        assert text.truth[(s, rel, o)] is (k == "true")
    kinds = Counter(text.kind.values())
    assert set(kinds) == set(ps.TEXT_KINDS)
    assert kinds["true"] == text.notes["facts"]
    assert any(text.schema.relation_types[r].functional for r in text.schema.relation_types)
    # a fact stated twice in one document: two chunk votes, one document vote
    assert any(text.votes[i] > text.document_votes[i] for i, k in text.kind.items() if k == "true")
    # repeated falsehoods collect several documents, like facts
    assert max(text.document_votes[i] for i, k in text.kind.items() if k == "repeated") >= 3
    assert text.notes["denials"] > 0


def test_rules_extractor_recovers_the_facts_and_nothing_false(text):
    rules = RulesExtractor()
    got = ps.extract_documents(text.documents, rules, text.schema)
    idents = {(a.subject_key, a.relation, a.object_key) for a, _, _ in got}
    facts = {i for i, k in text.kind.items() if k == "true"}
    assert len(idents & facts) >= 0.9 * len(facts)
    assert idents <= facts, sorted(idents - facts)[:5]


def test_hallucinated_triples_are_labelled_false(text):
    ext = text.extractor
    assert isinstance(ext, ps.HallucinatingExtractor)
    seen = Counter()
    for doc_id, body in text.documents[:40]:
        for ch in chunk_text(body, doc_id, config=text.chunking):
            for h in ext.hallucinations(ch.text, text.schema):
                ident = (entity_key(h.subject_type, h.subject), h.relation, entity_key(h.object_type, h.object))
                assert text.is_true(ident) is (ident in {i for i, k in text.kind.items() if k == "true"})
                if text.truth[ident] is False:
                    assert text.kind[ident] in ps.TEXT_KINDS[1:]
                    seen[h.mode] += 1
    assert set(seen) == {"repeated", "comention", "swap", "world"}
    # label() answers for triples no chunk yields
    people = sorted(text.schema.entity_types["Person"].names)
    assert text.label((entity_key("Person", people[0]), "MENTORED", entity_key("Person", people[0] + "x"))) is None
    company = text.schema.entity_types["Company"].names[0]
    odd = (entity_key("Person", people[0]), "WORKS_AT", entity_key("Company", company))
    assert text.label(odd) in (True, False)


def test_hallucinations_are_deterministic_per_chunk_text(text):
    doc_id, body = text.documents[3]
    chunks = list(chunk_text(body, doc_id, config=text.chunking))
    fresh = ps.HallucinatingExtractor(RulesExtractor(), rate=text.extractor.rate, seed=text.extractor.seed,
                                      confusions=text.extractor.confusions)
    for ch in chunks:
        a = text.extractor.extract(ch.text, text.schema)
        b = fresh.extract(ch.text, text.schema)
        c = fresh.extract(ch.text, text.schema, guidance=["Candidate entity mentions not extracted yet: 'X'"])
        assert a.kg == b.kg == c.kg
        # the same text in another document (another chunk id) hallucinates the same
        again = next(chunk_text(ch.text, "elsewhere", config=text.chunking))
        assert fresh.hallucinations(again.text, text.schema) == text.extractor.hallucinations(ch.text, text.schema)
    # another seed, other hallucinations somewhere
    other = ps.HallucinatingExtractor(RulesExtractor(), rate=0.5, seed=99)
    texts = [ch.text for d, b in text.documents[:10] for ch in chunk_text(b, d, config=text.chunking)]
    assert any(other.hallucinations(t, text.schema) != fresh.hallucinations(t, text.schema) for t in texts)


def test_offline_assertions_match_the_pipeline(text):
    """extract_documents turns extractions into assertions exactly as the ingestion pipeline does."""
    from kgr.ingest.assertions import assertions_of as _assertions

    doc_id, body = text.documents[0]
    for ch in chunk_text(body, doc_id, config=text.chunking):
        res = text.extractor.extract(ch.text, text.schema)
        mine = [a for a, _, _ in ps.extract_documents([(doc_id, body)], text.extractor, text.schema)
                if a.source == ch.id]
        theirs, rejected = _assertions(res.kg, text.schema, ch.id)
        assert not rejected
        assert sorted(a.model_dump_json() for a in mine) == sorted(a.model_dump_json() for a in theirs)


# -- the public KG stream -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kg():
    return ps.public_kg_stream(7)


def test_public_kg_stream_loads_the_committed_subset(kg):
    data = ps.load_wordnet_subset()
    assert ps.WORDNET_SUBSET.stat().st_size < 1_000_000
    assert len(data.relations) >= 8 and len({r for _, r, _ in data.triples}) >= 8
    assert 2000 <= len(data.triples) <= 4000
    kinds = Counter(kg.kind.values())
    assert set(kinds) == set(ps.KG_KINDS) and all(kinds[k] > 0 for k in ps.KG_KINDS)
    assert kinds["true"] == len(data.triples)
    assert len(kg.waves) == 4 and sum(len(w.assertions) for w in kg.waves) == kg.notes["assertions"]
    assert all(a.source.startswith("doc-") for a in kg.assertions)
    assert {(a.subject_key, a.relation, a.object_key) for a in kg.assertions} == set(kg.kind)


def test_the_data_readme_names_the_committed_file():
    readme = (SCRIPTS / "data" / "README.md").read_text(encoding="utf-8")
    digest = hashlib.sha256(ps.WORDNET_SUBSET.read_bytes()).hexdigest()
    assert digest in readme, "scripts/data/README.md: update the SHA-256 of wordnet_subset.json.gz"
    source = ps.load_wordnet_subset().source
    assert "Princeton" in source["copyright"] and "ALL copies" in source["licence_text"]


def test_public_kg_keys_are_typed_as_the_schema_says(kg):
    types = set(kg.schema.entity_types)
    for a in kg.assertions[:3000]:
        assert a.subject_key == entity_key(a.subject_type, a.subject)
    for (s, rel, o), k in kg.kind.items():
        st, ot = s.split(":", 1)[0], o.split(":", 1)[0]
        assert st in types and ot in types
        spec = kg.schema.relation_types[rel]
        if k == "type":
            assert st in spec.domain and ot not in spec.range
        else:
            assert st in spec.domain and ot in spec.range, (s, rel, o, k)


def test_public_kg_never_labels_an_entailed_triple_false(kg):
    data = ps.load_wordnet_subset()
    excluded = {data.triple(*t).ident for t in data.excluded}
    assert excluded and not excluded & set(kg.kind)
    assert all(kg.is_true(i) for i in list(excluded)[:100])


# -- the oracle ---------------------------------------------------------------------------------


def test_oracle_frontier_runs_on_every_stream(text, kg):
    nx_stream = ps.networkx_stream(seed=3, n_synthetic=200)
    for stream in (nx_stream, text, kg):
        out = ps.oracle_frontier(stream)
        assert out["groups"] > 1
        for fr in (out["any votes"], out["votes >= 2"]):
            assert 0.0 <= fr["max_acceptance_at_fmr_0.01"] <= 1.0
            assert all(v is None or 0.0 <= v <= 1.0 for v in fr["min_fmr_at_acceptance"].values())
    docs = ps.oracle_frontier(text, by="documents")
    assert docs["groups"] > 1
    # on the old Stream type too (what bench_promotion.py passes)
    stream, _ = ps.build_stream(n_synthetic=200, seed=3, waves=4)
    assert ps.oracle_frontier(stream) == ps.oracle_frontier(nx_stream)
