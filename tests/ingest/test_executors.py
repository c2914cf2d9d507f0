"""The process and Ray executors draft chunks in other processes and end in the graph an in-process
ingest of the same corpus gives — votes, sources, chunks (the fingerprint) and, after a promotion
round, the promoted set and its hash — with the offline rules extractor and with the stub LLM over
real HTTP, also when a worker is killed in the middle of the run. The Ray cluster has two nodes,
each its own raylet process (``ray.cluster_utils.Cluster``), and the actors are spread over both."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from kgr.ingest.config import IngestConfig
from kgr.ingest.pipeline import ingest
from kgr.litellm_offline import OPENAI_HTTP_SWITCH
from kgr.model.schema import load_schema
from kgr.store.admin import fingerprint, reset
from kgr.store.versions import current_state
from tests.support.corpus import generate_corpus, rules_reply
from tests.support.llm_stub import llm_stub_factory  # noqa: F401 - the fixture
from tests.support.rounds import gedig_round

pytestmark = [pytest.mark.neo4j, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = load_schema(ROOT / "examples" / "schema.json")
USAGE = {"prompt_tokens": 40, "completion_tokens": 20}


def _outcome(graph, corpus: Path, cfg: IngestConfig, *, during=None) -> tuple[object, str, tuple, str]:
    """Ingest ``corpus`` into an emptied store (``during(graph)`` runs beside it), then one promotion
    round: (report, staged fingerprint, (version, promoted hash), final fingerprint)."""
    reset(graph)
    side = threading.Thread(target=during, args=(graph,), daemon=True) if during else None
    if side:
        side.start()
    report = ingest(graph, [corpus], SCHEMA, config=cfg)
    if side:
        side.join(timeout=120)
    staged = fingerprint(graph)
    summary = gedig_round(graph, schema=SCHEMA)
    assert summary.promoted > 0
    return report, staged, current_state(graph), fingerprint(graph)


def _processed(graph) -> int:
    return graph.driver.execute_query(
        "MATCH (c:Chunk) WHERE c.processed_at IS NOT NULL RETURN count(c) AS n").records[0]["n"]


def _process_counts(graph) -> dict:
    rec = graph.driver.execute_query("MATCH (c:Chunk) RETURN c.process_count AS k, count(*) AS n").records
    return {r["k"]: r["n"] for r in rec}


def _pids(pattern: str, *, parent: int | None = None) -> list[int]:
    """Processes whose command line contains ``pattern`` (children of ``parent`` when given)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            ppid = int(next(line.split()[1] for line in Path(f"/proc/{entry}/status").read_text().splitlines()
                            if line.startswith("PPid:")))
        except (OSError, StopIteration, ValueError):
            continue
        if pattern in cmd and (parent is None or ppid == parent):
            found.append(int(entry))
    return sorted(found)


def _killer(pattern: str, at: int, killed: list[int], *, parent: int | None = None):
    """Beside the ingest: once ``at`` chunks are processed, SIGKILL one worker process."""
    def run(graph) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if _processed(graph) >= at:
                pids = _pids(pattern, parent=parent)
                if pids:
                    os.kill(pids[0], signal.SIGKILL)
                    killed.append(pids[0])
                    return
            time.sleep(0.02)
    return run


# -- local worker processes ---------------------------------------------------------------------------

def test_process_executor_gives_the_in_process_graph_with_the_rules_extractor(graph, tmp_path):
    corpus = generate_corpus(tmp_path / "c.jsonl", SCHEMA, 150)
    base = IngestConfig(concurrency=4, promote=False)
    ref = _outcome(graph, corpus, base)
    got = _outcome(graph, corpus, base.model_copy(update={"executor": "process", "workers": 2}))
    assert got[0].chunks_processed == 150 and got[0].chunks_failed == []
    assert got[0].executor == "process" and len(got[0].workers) == 2
    assert got[0].transactions < 150  # the job's writer commits groups of chunks
    # the workers' start and stop are reported as parts of the job's time (a benchmark leaves them out)
    assert 0 < got[0].executor_start_seconds and 0 < got[0].executor_stop_seconds
    assert got[0].executor_start_seconds + got[0].executor_stop_seconds < got[0].seconds
    assert ref[0].executor_stop_seconds == 0 and "stopped in" in got[0].render()
    assert got[1:] == ref[1:]  # staged fingerprint, promoted state, everything after the round
    assert _process_counts(graph) == {1: 150}


def _agents(requests) -> set[str]:
    """Who sent ``requests``: ``OpenAI`` (the OpenAI SDK's client) or ``litellm`` (its HTTP handler)."""
    return {r.headers["user-agent"].split("/")[0].removeprefix("Async") for r in requests}


def test_process_executor_with_the_stub_llm_survives_a_killed_worker(graph, tmp_path, llm_stub_factory, monkeypatch):
    monkeypatch.delenv(OPENAI_HTTP_SWITCH, raising=False)  # litellm's default in process, kgr's in the workers
    n = 160
    corpus = generate_corpus(tmp_path / "c.jsonl", SCHEMA, n)
    stub = llm_stub_factory(default=rules_reply(SCHEMA, usage=USAGE), latency=0.05)
    base = IngestConfig(extractor="llm", model="openai/gpt-4o-mini", api_base=stub.base_url, api_key="stub-key",
                        timeout=10, max_attempts=2, max_rounds=1, concurrency=8, promote=False)
    ref = _outcome(graph, corpus, base)
    assert ref[0].llm_calls == n
    asked = len(stub.requests)
    killed: list[int] = []
    got = _outcome(graph, corpus, base.model_copy(update={"executor": "process", "workers": 2}),
                   during=_killer("kgr.ingest.executors", n // 3, killed, parent=os.getpid()))
    assert len(killed) == 1, "no worker was killed: the run ended first"
    # the job in process asked through the OpenAI SDK, the workers through litellm's HTTP handler
    assert _agents(stub.requests[:asked]) == {"OpenAI"} and _agents(stub.requests[asked:]) == {"litellm"}
    assert got[0].chunks_processed == n and got[0].chunks_failed == []
    assert got[0].worker_restarts == 1
    assert got[0].llm_calls >= n  # the killed worker's chunks were asked again ...
    assert _process_counts(graph) == {1: n}  # ... and written once
    assert got[1:] == ref[1:]


def test_the_jobs_environment_keeps_its_workers_on_the_openai_sdk(graph, tmp_path, llm_stub_factory, monkeypatch):
    """EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER=false in the job: its workers ask through the SDK (kgr
    respects the user's own setting; that the job's decision reaches workers whose environment does not
    carry it is shown by the Ray test below)."""
    corpus = generate_corpus(tmp_path / "c.jsonl", SCHEMA, 12)
    stub = llm_stub_factory(default=rules_reply(SCHEMA, usage=USAGE))
    monkeypatch.setenv(OPENAI_HTTP_SWITCH, "false")
    cfg = IngestConfig(extractor="llm", model="openai/gpt-4o-mini", api_base=stub.base_url, api_key="stub-key",
                       max_rounds=1, concurrency=4, promote=False, executor="process", workers=2)
    got = _outcome(graph, corpus, cfg)
    assert got[0].chunks_processed == 12 and _agents(stub.requests) == {"OpenAI"}


# -- a two-node Ray cluster ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ray_cluster():
    if os.environ.get("KGR_REQUIRE_NEO4J") == "1":  # CI: a dev dependency, installed by the test command
        import ray
    else:
        ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "object_store_memory": 80 * 2**20})
    cluster.add_node(num_cpus=2, object_store_memory=80 * 2**20)
    ray.init(address=cluster.address, include_dashboard=False, configure_logging=False)
    yield cluster
    ray.shutdown()
    cluster.shutdown()


def test_ray_executor_on_two_nodes_gives_the_in_process_graph(graph, tmp_path, ray_cluster, llm_stub_factory,
                                                               monkeypatch):
    monkeypatch.delenv(OPENAI_HTTP_SWITCH, raising=False)
    n = 120
    corpus = generate_corpus(tmp_path / "c.jsonl", SCHEMA, n)
    base = IngestConfig(concurrency=4, promote=False)
    ref = _outcome(graph, corpus, base)
    got = _outcome(graph, corpus, base.model_copy(update={"executor": "ray", "workers": 2}))
    assert got[0].chunks_processed == n and got[0].chunks_failed == []
    nodes = {w.split()[1] for w in got[0].workers}
    assert len(got[0].workers) == 2 and len(nodes) == 2  # one actor on each node
    assert got[1:] == ref[1:]

    # the stub LLM, and an actor's process SIGKILLed a third of the way: a new actor takes its chunks
    stub = llm_stub_factory(default=rules_reply(SCHEMA, usage=USAGE), latency=0.05)
    llm = IngestConfig(extractor="llm", model="openai/gpt-4o-mini", api_base=stub.base_url, api_key="stub-key",
                       timeout=10, max_attempts=2, max_rounds=1, concurrency=8, promote=False)
    ref = _outcome(graph, corpus, llm)
    asked = len(stub.requests)
    killed: list[int] = []
    got = _outcome(graph, corpus, llm.model_copy(update={"executor": "ray", "workers": 2}),
                   during=_killer("DraftActor", n // 3, killed))
    assert len(killed) == 1, "no actor was killed: the run ended first"
    # the job's choice of route reached the actors (their nodes' environment does not set it)
    assert _agents(stub.requests[:asked]) == {"OpenAI"} and _agents(stub.requests[asked:]) == {"litellm"}
    assert got[0].chunks_processed == n and got[0].chunks_failed == []
    assert got[0].worker_restarts == 1
    assert _process_counts(graph) == {1: n}
    assert got[1:] == ref[1:]


def test_ray_workers_beyond_the_clusters_memory_are_refused(graph, tmp_path, ray_cluster):
    """1024 actors at 350 MiB each are more than the test cluster's memory: refused before any starts."""
    import ray

    from kgr.errors import KgrValidationError

    assert 1024 * 350 * 2**20 > ray.cluster_resources()["memory"]
    corpus = generate_corpus(tmp_path / "c.jsonl", SCHEMA, 4)
    reset(graph)
    before = _pids("DraftActor")
    with pytest.raises(KgrValidationError, match="1024 workers need about 350.0 GiB .* the Ray cluster has") as info:
        ingest(graph, [corpus], SCHEMA, config=IngestConfig(executor="ray", workers=1024, promote=False))
    assert info.value.field == "workers"
    time.sleep(1)  # an actor Ray had been asked for would be starting by now
    assert _pids("DraftActor") == before
    assert graph.driver.execute_query("MATCH (n) WHERE n:Chunk OR n:Document RETURN count(n) AS n").records[0]["n"] == 0


def test_ray_workers_channel_refuses_a_stranger(graph, ray_cluster):
    """Chunks reach the Ray actors over sockets they open to the job, authenticated with a key made
    for the job: a connection without the key is refused, and the job goes on drafting."""
    from multiprocessing import AuthenticationError
    from multiprocessing.connection import Client

    from kgr.ingest.chunking import chunk_text
    from kgr.ingest.drafting import Drafted
    from kgr.ingest.executors import open_remote

    drafts = open_remote(graph, SCHEMA, IngestConfig(executor="ray", workers=2, concurrency=4, promote=False),
                         time.time())
    try:
        assert len({w.split()[1] for w in drafts.placement}) == 2  # one actor on each node
        with pytest.raises(AuthenticationError):
            Client(drafts.listener.address, authkey=b"not the job's key")
        chunks = [c for i in range(6) for c in chunk_text(f"Ada Lovelace met Charles Babbage in London ({i}).", f"d{i}")]
        done = [drafts.submit(c).result(timeout=60) for c in chunks]
        assert all(isinstance(d, Drafted) and d.chunk.id == c.id for d, c in zip(done, chunks))
        assert drafts.restarts == 0
    finally:
        drafts.close()


def test_executor_errors_are_clear_and_an_extractor_object_travels(graph, tmp_path):
    """An extractor given as an object is pickled to the workers (and must pickle); a Graph opened
    on a driver of the caller's has no settings for the workers to connect with."""
    from kgr.errors import KgrValidationError
    from kgr.extract import RulesExtractor
    from kgr.store.connection import Graph

    corpus = generate_corpus(tmp_path / "c.jsonl", SCHEMA, 6)
    cfg = IngestConfig(executor="process", workers=1, promote=False)

    class Unpicklable(RulesExtractor):
        def __init__(self):
            super().__init__()
            self.hook = lambda: None  # a lambda does not pickle

    with pytest.raises(KgrValidationError, match="cannot be sent to the workers"):
        ingest(graph, [corpus], SCHEMA, config=cfg, extractor=Unpicklable())
    bare = Graph(graph.driver, graph.database, uri=graph.uri)  # no settings
    with pytest.raises(KgrValidationError, match="need a Graph opened by kgr.connect"):
        ingest(bare, [corpus], SCHEMA, config=cfg)
    own = RulesExtractor()
    own.model = 3  # an extractor's own ``model`` attribute, not a litellm name: no route to decide
    rep = ingest(graph, [corpus], SCHEMA, config=cfg, extractor=own)
    assert rep.chunks_processed == 6 and rep.new_votes > 0 and rep.executor == "process"


def test_a_worker_freezes_what_its_start_made(graph, monkeypatch):
    """A worker process leaves its imports and drafter (litellm's tables with the LLM extractor) to
    the collector's permanent generation once started, so full collections do not scan them per
    chunk; KGR_GC_FREEZE=0 in the job's environment leaves its collector alone."""
    from kgr.ingest.executors import open_remote

    cfg = IngestConfig(extractor="llm", model="openai/gpt-4o-mini", api_base="http://127.0.0.1:9/v1",
                       executor="process", workers=2, promote=False)
    frozen = []
    for setting in ("1", "0"):
        monkeypatch.setenv("KGR_GC_FREEZE", setting)
        drafts = open_remote(graph, SCHEMA, cfg, time.time())
        try:
            frozen.append([s.frozen for s in drafts.slots])
        finally:
            drafts.close()
    assert all(n > 100_000 for n in frozen[0]), frozen  # litellm's objects, in each worker
    assert frozen[1] == [0, 0]


def test_worker_processes_are_bounded_by_the_available_memory(graph, tmp_path, monkeypatch):
    """More workers than the available memory holds (350 MiB each) is refused before any starts or
    anything is written; the default (one per CPU) is capped to what fits instead."""
    from kgr.errors import KgrValidationError
    from kgr.ingest.executors import open_remote
    from kgr.ingest.executors import process as proc_mod

    assert proc_mod.available_mb() is not None and proc_mod.available_mb() > 0  # Linux: /proc/meminfo
    monkeypatch.setattr(proc_mod, "available_mb", lambda: 2 * proc_mod.WORKER_MB + 100)
    corpus = generate_corpus(tmp_path / "c.jsonl", SCHEMA, 4)
    reset(graph)
    with pytest.raises(KgrValidationError, match="3 workers need about 1.0 GiB .* this machine has .* use at most 2") as info:
        ingest(graph, [corpus], SCHEMA, config=IngestConfig(executor="process", workers=3, promote=False))
    assert info.value.field == "workers"
    assert _pids("kgr.ingest.executors", parent=os.getpid()) == []
    assert graph.driver.execute_query("MATCH (n) WHERE n:Chunk OR n:Document RETURN count(n) AS n").records[0]["n"] == 0

    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    drafts = open_remote(graph, SCHEMA, IngestConfig(executor="process", promote=False), time.time())
    try:
        assert len(drafts.slots) == 2  # 8 CPUs, memory for 2
    finally:
        drafts.close()
