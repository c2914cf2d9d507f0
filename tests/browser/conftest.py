"""A small history for the Browser tests, built with kgr's own store functions on the real Neo4j.

Timeline (epoch seconds; ``T0`` = 2023-11-14T22:13:20Z, one day = 86400 s)::

    T0        stage  Babbage -DESIGNED-> Difference Engine      (chunk c3, 0.7)
    T1=T0+30d stage  Ada -WORKS_AT-> IBM                        (chunks c1 0.9, c2 0.8)
              stage  Ada -BORN_IN-> London                      (chunk c1, 0.9)
    v1        quorum 2: WORKS_AT(Ada, IBM) promoted; BORN_IN and DESIGNED held      snapshot A
    T2=T1+1d  stage  Grace -WORKS_AT-> US Navy                  (chunk c3 0.9, bare source src:file 0.8)
    v2        quorum 2: WORKS_AT(Grace, US Navy) promoted; the others held again    snapshot B
    v3        rollback to A: WORKS_AT(Grace, US Navy) retired (valid_to 3)          snapshot C
    T0+35d    age (ξ 0.1/day, TTL 30 days): DESIGNED expires (35 days without a new vote)

Documents: d1 ``docs/ada.txt`` (chunks c1, c2), d2 ``docs/navy.txt`` (chunk c3). MENTIONS: c1 → Ada,
IBM, London; c2 → Ada, IBM; c3 → Grace, US Navy, Babbage, Difference Engine.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kgr.model.canonical import edge_key, entity_key
from kgr.model.triples import TripleAssertion
from kgr.store.aging import AgingConfig, age
from kgr.store.connection import Graph
from kgr.engine import promote_by_quorum
from kgr.store.provenance import ChunkMark, commit_chunks, upsert_chunks
from kgr.store.staging import stage
from kgr.store.versions import create_snapshot, rollback

DAY = 86400.0
T0 = 1_700_000_000.0
T1 = T0 + 30 * DAY
T2 = T1 + DAY
T_AGE = T0 + 35 * DAY

TEXTS = {
    "c1": "Ada worked at IBM. Ada was born in London.",
    "c2": "At IBM, Ada wrote programs.",
    "c3": "Grace served in the US Navy. Babbage designed the Difference Engine.",
}


def _chunk(cid: str, doc: str, index: int) -> SimpleNamespace:
    return SimpleNamespace(id=cid, document_id=doc, index=index, text=TEXTS[cid], sha256=f"sha-{cid}",
                           start=0, end=len(TEXTS[cid]))


def _t(s: str, st: str, r: str, o: str, ot: str, src: str, conf: float) -> TripleAssertion:
    return TripleAssertion(subject=s, subject_type=st, relation=r, object=o, object_type=ot, source=src,
                           confidence=conf)


def _ekey(s: tuple[str, str], r: str, o: tuple[str, str]) -> str:
    return edge_key(entity_key(*s), r, entity_key(*o))


ADA, IBM, LONDON = ("Person", "Ada"), ("Organization", "IBM"), ("Place", "London")
GRACE, NAVY = ("Person", "Grace"), ("Organization", "US Navy")
BABBAGE, ENGINE = ("Person", "Babbage"), ("Machine", "Difference Engine")

KEYS = SimpleNamespace(
    ada_ibm=_ekey(ADA, "WORKS_AT", IBM),
    ada_london=_ekey(ADA, "BORN_IN", LONDON),
    grace_navy=_ekey(GRACE, "WORKS_AT", NAVY),
    babbage_engine=_ekey(BABBAGE, "DESIGNED", ENGINE),
)


def build_history(graph: Graph) -> SimpleNamespace:
    """Stage, promote, snapshot, roll back and age the history above; return edge keys and times."""
    upsert_chunks(graph, [_chunk("c1", "d1", 0), _chunk("c2", "d1", 1), _chunk("c3", "d2", 0)],
                  paths={"d1": "docs/ada.txt", "d2": "docs/navy.txt"}, now=T0)
    stage(graph, [_t("Babbage", "Person", "DESIGNED", "Difference Engine", "Machine", "c3", 0.7)], now=T0)
    stage(graph, [
        _t("Ada", "Person", "WORKS_AT", "IBM", "Organization", "c1", 0.9),
        _t("Ada", "Person", "WORKS_AT", "IBM", "Organization", "c2", 0.8),
        _t("Ada", "Person", "BORN_IN", "London", "Place", "c1", 0.9),
    ], now=T1)
    v1 = promote_by_quorum(graph, quorum=2, now=T1 + 60)
    create_snapshot(graph, "A", now=T1 + 120)
    stage(graph, [
        _t("Grace", "Person", "WORKS_AT", "US Navy", "Organization", "c3", 0.9),
        _t("Grace", "Person", "WORKS_AT", "US Navy", "Organization", "src:file", 0.8),
    ], now=T2)
    v2 = promote_by_quorum(graph, quorum=2, now=T2 + 60)
    create_snapshot(graph, "B", now=T2 + 90)
    rb = rollback(graph, "A", now=T2 + 120)
    create_snapshot(graph, "C", now=T2 + 150)
    aged = age(graph, AgingConfig(xi=0.1, ttl_days=30), now=T_AGE)
    mentions = {"c1": [ADA, IBM, LONDON], "c2": [ADA, IBM], "c3": [GRACE, NAVY, BABBAGE, ENGINE]}
    commit_chunks(graph, [ChunkMark(chunk_id=cid, entity_keys=[entity_key(*e) for e in ents], extractor="test",
                                    rounds=1) for cid, ents in mentions.items()], now=T_AGE)
    assert (v1.version, v1.promoted, v2.version, v2.promoted, rb.version, rb.retired) == (1, 1, 2, 1, 3, 1)
    assert aged.expired_keys == [KEYS.babbage_engine]
    return SimpleNamespace(**vars(KEYS), T0=T0, T1=T1, T2=T2, T_AGE=T_AGE, DAY=DAY, texts=TEXTS)


@pytest.fixture
def history(graph: Graph) -> SimpleNamespace:
    """The graph fixture (a clean real Neo4j) holding the history above: edge keys
    (``ada_ibm``, ``ada_london``, ``grace_navy``, ``babbage_engine``), times and chunk texts."""
    return build_history(graph)
