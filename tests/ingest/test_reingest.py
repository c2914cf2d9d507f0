"""Re-ingestion of a corpus that changed: documents keep their path ids, an edited document's
vanished chunks are forgotten and its unchanged chunks are not extracted again, ``prune`` forgets
documents that left the corpus; and the result equals a fresh ingest of the final corpus.
Real Neo4j, the rules extractor (and the stub LLM for the no-call check)."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgr.extract import RulesExtractor
from kgr.ingest.chunking import ChunkingConfig
from kgr.ingest.config import IngestConfig
from kgr.ingest.pipeline import ingest
from kgr.model.schema import load_schema
from kgr.store.admin import reset
from kgr.promotion.policies import make_policy
from kgr.store.rounds import run_round
from kgr.store.versions import current_state
from tests.support.corpus import distinct_names as _distinct_names
from tests.support.llm_stub import llm_stub_factory  # noqa: F401 - the fixture

pytestmark = pytest.mark.neo4j

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SCHEMA = load_schema(EXAMPLES / "schema.json")
NAMES = _distinct_names(SCHEMA)
RELS = [(r, s) for r, s in sorted(SCHEMA.relation_types.items()) if s.domain and s.range and s.triggers]


def _sentence_pool(n: int = 40, seed: int = 3) -> list[str]:
    """``n`` distinct "<subject> <trigger> <object>." sentences from the example schema."""
    rng, out = random.Random(seed), []
    while len(out) < n:
        rel, spec = rng.choice(RELS)
        s, o = rng.choice(NAMES[rng.choice(spec.domain)]), rng.choice(NAMES[rng.choice(spec.range)])
        trigger = next(t for t in spec.triggers if not t.endswith(" by"))
        sent = f"{s} {trigger} {o}."
        if s != o and sent not in out:
            out.append(sent)
    return out


POOL = _sentence_pool()
# small chunks with overlap, so that a document has several chunks and edits shift them; large
# enough that no sentence is cut (the splitter keeps "Harvard Mark I. Tom Kilburn ..." as one
# sentence of 107 characters): a cut leaves fragments such as "Physical Laboratory", whose
# disambiguation against "National Physical Laboratory" depends on which chunk comes first, in a
# fresh ingest as much as in a re-ingest (docs/ingest.md, "Resuming"); one chunk at a time, too
#: Entity resolution is off: its merges stay when the documents behind them are forgotten (docs/resolve.md,
#: Limits), so a history of edits can keep a merge a fresh ingest would not make. Staging, forgetting and
#: promotion (the default policy) are what must not depend on history.
CONFIG = IngestConfig(chunking=ChunkingConfig(size=240, overlap=60, unit="chars"), concurrency=1, resolve=False)


def _ingest(graph, root: Path, *, prune: bool = False, extractor=None, policy=None):
    """Ingest ``root`` and promote with the default policy (the calibrated one: a settle), or ``policy``."""
    chosen = policy or make_policy()   # a new policy object per ingest, as a new process would have
    return ingest(graph, [root], SCHEMA, config=CONFIG.model_copy(update={"prune": prune}),
                  extractor=extractor or RulesExtractor(), promote=lambda: run_round(graph, chosen, schema=SCHEMA))


def _write_corpus(root: Path, docs: dict[str, list[int]]) -> None:
    for f in root.glob("*.txt"):
        if f.stem not in docs:
            f.unlink()
    for name, sentences in docs.items():
        (root / f"{name}.txt").write_text(" ".join(POOL[i] for i in sentences), encoding="utf-8")


def _state(graph) -> dict:
    """What must be equal: entities with their aliases, staged edges with votes, status and
    confidence, every vote (edge key and source), chunks, the current promoted keys and the promoted
    graph's hash (the versions at which edges were promoted differ between the two histories)."""
    out: dict[str, set] = {}
    for r in graph.read("graph_fingerprint"):
        detail = r["detail"] or []
        if r["kind"] == "promoted":
            if detail[1] is None or detail[1] == "null":
                out.setdefault("promoted", set()).add(r["key"])
            continue
        if r["kind"] == "pending":
            detail = [detail[0], detail[1], f"{float(detail[2]):.9f}"]
        out.setdefault(r["kind"], set()).add((r["key"], tuple(sorted(str(x) for x in detail))))
    # entities that something current needs (a staged edge, a current promoted edge, a mention); an
    # entity only a retired promoted edge names stays, for rollback, and is not part of the graph now
    live = {r["key"] for r in graph.driver.execute_query(
        "MATCH (e:Entity) WHERE EXISTS { (e)-[:PENDING_REL]-() } OR EXISTS { (:Chunk)-[:MENTIONS]->(e) } "
        "OR EXISTS { MATCH (e)-[r]-() WHERE r.valid_from IS NOT NULL AND r.valid_to IS NULL } "
        "RETURN e.key AS key").records}
    out["entity"] = {e for e in out.get("entity", set()) if e[0] in live}
    return {**out, "hash": current_state(graph)[1]}


docs_strategy = st.dictionaries(st.sampled_from(list("abcdef")), st.lists(st.integers(0, len(POOL) - 1), min_size=1,
                                                                          max_size=7, unique=True), min_size=1, max_size=4)


@pytest.mark.timeout(900)  # 15 histories of up to 5 ingests, each promoting with a settle
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture], derandomize=True)
@given(history=st.lists(docs_strategy, min_size=2, max_size=4))
def test_incremental_equals_from_scratch(graph, tmp_path_factory, history):
    """Ingest the first corpus, then edit it into each next one (sentences removed, added, changed;
    documents deleted and added) and re-ingest with prune each time, promoting with the default
    policy after each: the store (staged statuses, promoted edges, hash) equals a fresh ingest of the
    last corpus."""
    root = tmp_path_factory.mktemp("corpus")
    reset(graph)
    for step, docs in enumerate(history):
        _write_corpus(root, docs)
        report = _ingest(graph, root, prune=step > 0)
        if step:
            assert report.documents_pruned == len(set(history[step - 1]) - set(docs))
    incremental = _state(graph)
    reset(graph)
    _ingest(graph, root)
    scratch = _state(graph)
    for k in sorted(set(incremental) | set(scratch)):
        assert incremental.get(k) == scratch.get(k), (k, incremental.get(k, set()) ^ scratch.get(k, set())
                                                       if k != "hash" else None)


def test_unchanged_chunks_are_not_extracted_again(graph, tmp_path):
    reset(graph)
    root = tmp_path / "c"
    root.mkdir()
    _write_corpus(root, {"a": list(range(0, 8)), "b": list(range(8, 14))})
    calls: list[str] = []

    class Counting(RulesExtractor):
        def extract(self, chunk_text, schema, *, guidance=None):
            if guidance is None:
                calls.append(chunk_text)
            return super().extract(chunk_text, schema, guidance=guidance)

    first = _ingest(graph, root, extractor=Counting())
    n_first = len(calls)
    assert n_first == first.chunks_processed > 2
    # the last sentence of a changes: only the chunks that hold it are extracted again; b is untouched
    _write_corpus(root, {"a": [*range(0, 7), 20], "b": list(range(8, 14))})
    calls.clear()
    second = _ingest(graph, root, extractor=Counting())
    assert 1 <= len(calls) <= 2 and all(POOL[20] in c for c in calls)
    assert second.chunks_forgotten >= 1 and second.chunks_skipped == first.chunks_processed - second.chunks_forgotten


def test_prune_keeps_documents_whose_file_failed_to_load(graph, tmp_path):
    reset(graph)
    root = tmp_path / "c"
    root.mkdir()
    _write_corpus(root, {"a": [0, 1], "b": [2, 3]})
    _ingest(graph, root)
    (root / "b.txt").write_bytes(b"\xff\xfe broken \xc3")  # no longer UTF-8: a load issue, not a deletion
    report = _ingest(graph, root, prune=True)
    assert report.documents_pruned == 0 and report.load_issues
    shutil.rmtree(root)
    root.mkdir()
    _write_corpus(root, {"a": [0, 1]})
    report = _ingest(graph, root, prune=True)
    assert report.documents_pruned == 1


def test_reingest_over_the_stub_llm_calls_only_for_new_chunks(graph, tmp_path, llm_stub_factory):
    """Over real HTTP: the second ingest of an edited corpus sends one request per new chunk and
    none for the unchanged ones, and the forgotten chunk's vote leaves the graph."""
    from kgr.store.admin import status
    from tests.support.llm_stub import StubReply

    reply = {"entities": {"Person": ["Charles Babbage"], "Place": ["London"]},
             "relations": {"BORN_IN": [{"subject": "Charles Babbage", "object": "London"}]}}
    stub = llm_stub_factory(default=StubReply.json(reply, usage={"prompt_tokens": 10, "completion_tokens": 5}))
    cfg = IngestConfig(extractor="llm", model="openai/gpt-4o-mini", api_base=stub.base_url, api_key="stub-key",
                       timeout=5, max_attempts=2, max_rounds=1, promote=False)
    reset(graph)
    root = tmp_path / "c"
    root.mkdir()
    for tag in ("one", "two", "three"):
        (root / f"{tag}.txt").write_text(f"{tag}: Charles Babbage was born in London.", encoding="utf-8")
    first = ingest(graph, [root], SCHEMA, config=cfg)
    assert first.llm_calls == 3 == len(stub.requests)
    assert status(graph).votes == 3
    (root / "two.txt").write_text("two, revised: Charles Babbage was born in London.", encoding="utf-8")
    (root / "three.txt").unlink()
    second = ingest(graph, [root], SCHEMA, config=cfg.model_copy(update={"prune": True}))
    assert second.llm_calls == 1 == len(stub.requests) - 3  # only the revised chunk of "two"
    assert "revised" in str(stub.requests[-1].body)
    assert (second.chunks_skipped, second.chunks_forgotten, second.documents_pruned) == (1, 1, 1)
    assert status(graph).votes == 2  # one (revised) and one; three's vote forgotten with its document


@pytest.mark.slow
def test_reingest_killed_midway_then_rerun_equals_a_fresh_ingest(graph, neo4j_settings, tmp_path):
    """A re-ingest of an edited corpus (half the documents rewritten, 20 deleted) with --prune,
    SIGKILLed once part of the new chunks are in, then re-run: the staged graph (fingerprint) equals a
    fresh ingest of the edited corpus."""
    import json
    import os
    import signal
    import subprocess
    import sys
    import time

    from kgr.store.admin import fingerprint
    from tests.ingest.test_pipeline_resume import ROOT, SCHEMA_PATH, _env
    from tests.support.corpus import generate_corpus

    n = 200
    corpus = tmp_path / "corpus.jsonl"
    generate_corpus(corpus, SCHEMA, n, seed=7)
    old = corpus.read_text(encoding="utf-8").splitlines()
    generate_corpus(tmp_path / "other.jsonl", SCHEMA, n, seed=8)
    new = (tmp_path / "other.jsonl").read_text(encoding="utf-8").splitlines()
    edited = [new[i] if i % 2 else old[i] for i in range(n) if i % 10 != 3]  # rewrite odd ids, drop 20
    reset(graph)
    cfg = IngestConfig(promote=False)
    ingest(graph, [corpus], SCHEMA, config=cfg)
    corpus.write_text("\n".join(edited) + "\n", encoding="utf-8")

    cmd = [sys.executable, "-m", "kgr.cli", "ingest", str(corpus), "--schema", str(SCHEMA_PATH), "--no-promote",
           "--prune", "--json"]
    env = _env(neo4j_settings)
    t0 = time.time()

    def new_chunks() -> int:
        return graph.driver.execute_query("MATCH (c:Chunk) WHERE c.processed_at > $t RETURN count(c) AS n",
                                          t=t0).records[0]["n"]

    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    try:
        deadline = time.monotonic() + 180
        while proc.poll() is None and time.monotonic() < deadline:
            if new_chunks() >= 30:
                proc.send_signal(signal.SIGKILL)
                break
            time.sleep(0.02)
    finally:
        if proc.poll() is None:
            proc.kill()
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL, f"the job ended before it was killed: {err.decode()[-1000:]}"
    assert 30 <= new_chunks() < 100
    rerun = subprocess.run(cmd, env={**env, **os.environ, **env}, capture_output=True, text=True, timeout=240,
                           cwd=ROOT)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    report = json.loads(rerun.stdout)
    assert report["documents_pruned"] == 20 and report["chunks_failed"] == []
    incremental = fingerprint(graph)
    reset(graph)
    ingest(graph, [corpus], SCHEMA, config=cfg)
    assert incremental == fingerprint(graph)


def _fact_pool(n: int, seed: int) -> list[tuple[str, str]]:
    """``n`` distinct (sentence, edge key) pairs from the example schema (the key staging computes)."""
    from kgr.model.canonical import edge_key, entity_key

    rng, out, seen = random.Random(seed), [], set()
    while len(out) < n:
        rel, spec = rng.choice(RELS)
        st_, ot_ = rng.choice(spec.domain), rng.choice(spec.range)
        s, o = rng.choice(NAMES[st_]), rng.choice(NAMES[ot_])
        trigger = next(t for t in spec.triggers if not t.endswith(" by"))
        sent = f"{s} {trigger} {o}."
        if s != o and sent not in seen:
            seen.add(sent)
            out.append((sent, edge_key(entity_key(st_, s), rel, entity_key(ot_, o))))
    return out


def test_a_larger_edited_corpus_reingested_with_the_default_policy_equals_a_fresh_ingest(graph, tmp_path):
    """Issue 29: an edited corpus re-ingested with --prune promoted 79 edges under the default policy,
    a fresh ingest of the same final corpus 46 (same staged evidence). Twelve documents of ten
    sentences, six from 15 common ones and four from 60 rare ones (a fact in one to nine documents),
    edited twice (half rewritten, some deleted, some added) and re-ingested, each ingest promoting; a
    reviewer labels 30 edges after the first ingest (common facts true, rare ones false, all of them
    in every version of the corpus). The promoted set, every staged edge's status and the hash equal
    a fresh ingest's of the final corpus labelled alike afterwards."""
    from kgr.model.review import EdgeLabel
    from kgr.store.review import record_labels

    facts = _fact_pool(75, seed=11)
    rng = random.Random(5)

    def doc() -> list[int]:
        return rng.sample(range(15), 6) + rng.sample(range(15, 75), 4)

    docs = {f"d{i:02d}": doc() for i in range(12)}
    history = [dict(docs)]
    for _ in range(2):
        docs = {k: (doc() if rng.random() < 0.5 else v) for k, v in docs.items() if rng.random() > 0.15}
        docs.update({f"n{len(history)}{j}": doc() for j in range(3)})
        history.append(dict(docs))
    counts = [{i: sum(i in d for d in h.values()) for i in range(75)} for h in history]
    always = [i for i in range(75) if all(c[i] for c in counts)]
    labels = [EdgeLabel(key=facts[i][1], label=True, reviewer="t") for i in always if counts[-1][i] >= 3][:15]
    labels += [EdgeLabel(key=facts[i][1], label=False, reviewer="t") for i in always if counts[-1][i] <= 2][:15]
    root = tmp_path / "corpus"
    root.mkdir()

    def write(d: dict[str, list[int]]) -> None:
        for f in root.glob("*.txt"):
            if f.stem not in d:
                f.unlink()
        for name, sentences in d.items():
            (root / f"{name}.txt").write_text(" ".join(facts[i][0] for i in sentences), encoding="utf-8")

    def label_and_settle() -> None:
        record_labels(graph, labels)
        run_round(graph, make_policy(), schema=SCHEMA)

    reset(graph)
    for step, d in enumerate(history):
        write(d)
        _ingest(graph, root, prune=step > 0)
        if step == 0:
            label_and_settle()
    incremental = _state(graph)
    reset(graph)
    _ingest(graph, root)
    label_and_settle()
    scratch = _state(graph)
    assert len(labels) >= 20 and len(scratch.get("promoted", ())) > 10
    for k in sorted(set(incremental) | set(scratch)):
        assert incremental.get(k) == scratch.get(k), (k, incremental.get(k, set()) ^ scratch.get(k, set())
                                                       if k != "hash" else None)
