"""The slicer's in-memory graph (kgr.slices.adjacency) against the real Neo4j: it cuts the very
slices the Neo4j path cuts (same ids, on graphs full of priority ties), and it is never used once
the store moved on (a promotion, outcome feedback, a wiped and rebuilt store)."""

from __future__ import annotations

import random
import re
import shutil
import time
from pathlib import Path

import pytest

import kgr.slices.build as slice_build
from kgr.ingest.config import IngestConfig
from kgr.ingest.pipeline import ingest
from kgr.model.schema import load_schema
from kgr.model.slices import SlicePolicy
from kgr.model.triples import TripleAssertion
from kgr.slices import build_slice, report_outcome
from kgr.slices.adjacency import PromotedAdjacency, _holder, adjacency_for, warm_adjacency
from kgr.store.admin import reset
from kgr.engine import promote_by_quorum
from kgr.store.slices import promoted_edges_around, slice_state
from kgr.store.staging import stage

pytestmark = pytest.mark.neo4j
ROOT = Path(__file__).resolve().parents[2]
TIGHT = SlicePolicy(name="tight", fanout=3, max_nodes=12, radius=2)


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("KGR_SLICE_KEY", "adjacency-slice-key-0123456789")
    monkeypatch.setenv("KGR_SLICE_CACHE", "1")


def random_graph(graph, seed: int, n: int = 40, m: int = 160) -> list[str]:
    """m random edges over n people, confidences and vote counts from small sets (many ties in b)."""
    rng = random.Random(seed)
    items = []
    for _ in range(m):
        s, o = rng.sample(range(n), 2)
        conf = rng.choice([0.5, 0.7, 0.9])
        for src in rng.sample(["a", "b", "c", "d"], rng.choice([2, 2, 3, 4])):
            items.append(TripleAssertion(subject=f"P{s}", subject_type="Person", relation=rng.choice(["KNOWS", "LIKES"]),
                                         object=f"P{o}", object_type="Person", source=src, confidence=conf))
    stage(graph, items)
    promote_by_quorum(graph, quorum=2)
    return [f"Person:p{i}" for i in range(n)]


def cut(graph, anchors, policy, *, cache: bool, monkeypatch):
    monkeypatch.setenv("KGR_SLICE_CACHE", "1" if cache else "0")
    return [build_slice(graph, anchors=[a], policy=policy) for a in anchors]


def test_memory_and_neo4j_cut_the_same_slices(graph, monkeypatch):
    keys = random_graph(graph, seed=11)
    adj = warm_adjacency(graph)
    assert adj is not None and adj.markers == slice_state(graph).markers and adj.edges > 100
    state = slice_state(graph)
    rng = random.Random(5)
    for _ in range(40):  # the hop read itself: the same edges for any frontier, fanout and weights
        frontier = rng.sample(keys, rng.randint(1, 6))
        fanout, weights = rng.choice([1, 2, 3, 8]), rng.choice([(1.0, 0.25, 0.5), (0.0, 1.0, 0.0), (1.0, 0.0, 0.0)])
        mem = {e.key for e in adj.around(frontier, fanout, weights)}
        neo = {e.key for e in promoted_edges_around(graph, frontier, fanout=fanout, types=state.types, weights=weights)}
        assert mem == neo, (frontier, fanout, weights)
    reads = []
    real_around = PromotedAdjacency.around
    monkeypatch.setattr(PromotedAdjacency, "around", lambda self, *a: reads.append(1) or real_around(self, *a))
    assert adj.quoted_edges == adj.edges  # every edge's first sources were read with the copy
    for policy in (TIGHT, "default", "wide"):
        from_memory = cut(graph, keys[:15], policy, cache=True, monkeypatch=monkeypatch)  # quotes preloaded
        assert len(reads) >= 15  # (each slice's hops came from memory)
        reads.clear()
        from_neo4j = cut(graph, keys[:15], policy, cache=False, monkeypatch=monkeypatch)
        assert not reads
        assert [s.slice_id for s in from_memory] == [s.slice_id for s in from_neo4j]
        adj.forget_quotes(preloaded=True)  # as before the copy's quotes are read: quotes read live, kept
        live = cut(graph, keys[:15], policy, cache=True, monkeypatch=monkeypatch)
        assert [s.slice_id for s in live] == [s.slice_id for s in from_neo4j]
        again = cut(graph, keys[:15], policy, cache=True, monkeypatch=monkeypatch)  # quotes now kept in memory
        assert [s.slice_id for s in again] == [s.slice_id for s in from_neo4j]
        assert adj._quotes  # (they were)


def test_a_copy_is_never_used_after_the_store_moved_on(graph, monkeypatch):
    keys = random_graph(graph, seed=3)
    adj = warm_adjacency(graph)
    s = build_slice(graph, anchors=[keys[0]], policy=TIGHT)
    assert adjacency_for(graph, slice_state(graph)) is adj  # current: used
    # outcome feedback changes weights without a new version: the copy is stale at once
    bad = s.edges[0].key
    for _ in range(4):
        report_outcome(graph, s.slice_id, -1, edges=[bad])
    state = slice_state(graph)
    assert state.markers != adj.markers and adjacency_for(graph, state) is None
    after = build_slice(graph, anchors=[keys[0]], policy=TIGHT)
    assert bad not in {e.key for e in after.edges}  # inhibitory, vetoed: the stale copy still had it neutral
    monkeypatch.setenv("KGR_SLICE_CACHE", "0")
    assert build_slice(graph, anchors=[keys[0]], policy=TIGHT).slice_id == after.slice_id
    monkeypatch.setenv("KGR_SLICE_CACHE", "1")
    # a background read follows; once it is in, slices use it again and cut the same slice
    deadline = time.monotonic() + 20
    while adjacency_for(graph, slice_state(graph)) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert adjacency_for(graph, slice_state(graph)) is not None
    assert build_slice(graph, anchors=[keys[0]], policy=TIGHT).slice_id == after.slice_id


def test_a_wiped_store_rebuilt_to_the_same_version_and_keys_is_another_store(graph, monkeypatch):
    def build(conf: float) -> None:
        stage(graph, [TripleAssertion(subject="Ada", subject_type="Person", relation="KNOWS", object=o,
                                      object_type="Person", source=src, confidence=conf)
                      for o in ("Bob", "Cy", "Dee") for src in ("s1", "s2")])
        promote_by_quorum(graph, quorum=2)

    build(0.9)
    old = warm_adjacency(graph)
    reset(graph)
    build(0.5)  # same version, same edge keys (so the same content hash), other confidences
    state = slice_state(graph)
    assert (state.version, state.hash) == old.markers[1:3] and state.markers != old.markers
    s = build_slice(graph, anchors=["Person:ada"])
    assert {round(e.confidence, 3) for e in s.edges} == {0.75}  # the new store's (noisy-or of two 0.5 votes)


def test_over_the_limit_or_off_no_copy(graph, monkeypatch):
    random_graph(graph, seed=4, m=30)
    monkeypatch.setenv("KGR_SLICE_CACHE_MAX_EDGES", "5")
    _holder(graph).current = None
    assert warm_adjacency(graph) is None and _holder(graph).too_big == slice_state(graph).markers
    assert adjacency_for(graph, slice_state(graph)) is None  # no second read at the same markers
    monkeypatch.setenv("KGR_SLICE_CACHE_MAX_EDGES", "2000000")
    monkeypatch.setenv("KGR_SLICE_CACHE", "0")
    assert warm_adjacency(graph) is None


def test_kept_quotes_are_the_live_ones(graph, monkeypatch):
    """Quotes are kept with the copy only when complete (quotes_per_edge of them): a staged edge's
    first sources never change between versions, while a shorter list can still grow, and does."""
    stage(graph, [TripleAssertion(subject="Ada", subject_type="Person", relation="KNOWS", object="Bob",
                                  object_type="Person", source=src) for src in ("s1", "s2")])
    promote_by_quorum(graph, quorum=2)
    adj = warm_adjacency(graph)
    three = SlicePolicy(name="three", quotes_per_edge=3)
    first = build_slice(graph, anchors=["Person:ada"], policy=three)
    assert [q.source for q in first.edges[0].quotes] == ["s1", "s2"] and not adj._quotes  # 2 < 3: not kept
    stage(graph, [TripleAssertion(subject="Ada", subject_type="Person", relation="KNOWS", object="Bob",
                                  object_type="Person", source="s3")])  # staging moves no marker
    assert adjacency_for(graph, slice_state(graph)) is adj
    grown = build_slice(graph, anchors=["Person:ada"], policy=three)
    assert [q.source for q in grown.edges[0].quotes] == ["s1", "s2", "s3"] and adj._quotes  # now complete: kept
    assert build_slice(graph, anchors=["Person:ada"], policy=three).slice_id == grown.slice_id
    monkeypatch.setenv("KGR_SLICE_CACHE", "0")
    assert build_slice(graph, anchors=["Person:ada"], policy=three).slice_id == grown.slice_id


def test_quotes_read_with_the_copy_are_the_live_ones(graph, monkeypatch, tmp_path):
    """The sources and sentence quotes read with the copy (kgr.slices.adjacency.preload_quotes) give
    the quotes slice_quotes reads: documents and paths of a real ingest (files and a JSONL), text cut
    inside astral characters (Cypher's left() counts code points, as Python does), a policy asking
    for shorter quotes; and a slice served from them reads no quote at all. An edge with fewer
    sources than asked is read live, and shows the vote that arrives later."""
    corpus = tmp_path / "corpus"
    shutil.copytree(ROOT / "examples" / "corpus", corpus)
    for f in sorted(corpus.glob("*.md"))[:3]:  # astral characters opening the sentences the quotes show
        text = re.sub(r"(?m)^(?=[A-Z][a-z]+ [A-Z])", "\U0001d504\U0001d521\U0001d51e \U0001F600 ", f.read_text(encoding="utf-8"))
        f.write_text(text, encoding="utf-8")
    ingest(graph, [corpus], load_schema(ROOT / "examples" / "schema.json"), config=IngestConfig(promote=False))
    promote_by_quorum(graph, quorum=1)
    adj = warm_adjacency(graph)
    assert adj is not None and adj.quoted_edges == adj.edges > 20
    reads = []
    real = slice_build.edge_quotes
    monkeypatch.setattr(slice_build, "edge_quotes", lambda *a, **k: reads.append(len(a[1])) or real(*a, **k))
    anchors = sorted({k for r in adj._rows for k in (r[2], r[5])})[:12]
    short = SlicePolicy(name="short-quotes", quote_chars=21, quotes_per_edge=2, budget_tokens=8000)
    for policy in ("default", "wide", short):
        reads.clear()
        memory = cut(graph, anchors, policy, cache=True, monkeypatch=monkeypatch)
        served = [e for s in memory for e in s.edges if e.votes >= (2 if policy != "default" else 1)]
        live_reads = sum(reads)
        neo = cut(graph, anchors, policy, cache=False, monkeypatch=monkeypatch)
        assert [s.slice_id for s in memory] == [s.slice_id for s in neo]
        assert [[e.quotes for e in s.edges] for s in memory] == [[e.quotes for e in s.edges] for s in neo]
        assert served and live_reads <= sum(len(s.edges) for s in memory) - len(served)  # only short lists read
    quotes = [q for s in memory for e in s.edges for q in e.quotes]
    assert any(q.quote and q.quote.startswith("\U0001d504\U0001d521\U0001d51e \U0001F600") for q in quotes)
    assert any(q.path and q.path.endswith(".jsonl") for q in quotes) and all(len(q.quote or "") <= 21 for q in quotes)
    # one source, two asked: read live, and the second vote shows at once (staging moves no marker)
    monkeypatch.setenv("KGR_SLICE_CACHE", "1")
    edge = next(e for s in memory for e in s.edges if e.votes == 1)
    rel, o_key = edge.relation, edge.object
    reads.clear()
    before = build_slice(graph, anchors=[edge.subject], policy="wide")
    assert reads and [q.source for q in next(e for e in before.edges if e.key == edge.key).quotes] == [edge.quotes[0].source]
    names = {n.key: n for n in before.nodes}
    stage(graph, [TripleAssertion(subject=names[edge.subject].name, subject_type=names[edge.subject].type,
                                  relation=rel, object=names[o_key].name, object_type=names[o_key].type,
                                  source="a-later-source")])
    assert adjacency_for(graph, slice_state(graph)) is adj
    after = build_slice(graph, anchors=[edge.subject], policy="wide")
    assert [q.source for q in next(e for e in after.edges if e.key == edge.key).quotes][-1] == "a-later-source"
