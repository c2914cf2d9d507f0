"""Slice anchors by meaning: entity name embeddings (litellm over real HTTP to the stub's
``/v1/embeddings``) in a real Neo4j vector index, ``kgr embed``, and ``kgr slice --query`` /
``get_context_slice`` finding an entity whose name shares no word with the query."""

from __future__ import annotations

import json

import httpx
import pytest
from typer.testing import CliRunner

from kgr.cli.main import app
from kgr.errors import KgrExtractionError, KgrNotFound, KgrValidationError
from kgr.extract.embedding import LiteLLMEmbedder, make_embedder
from kgr.extract.llm_client import RetryPolicy
from kgr.model.triples import TripleAssertion
from kgr.slices import build_slice
from kgr.slices.anchors import embed_entities
from kgr.store import embeddings as stored
from kgr.engine import promote_by_quorum
from kgr.store.staging import stage
from tests.support.llm_stub import LLMStub, StubReply, llm_stub, llm_stub_factory  # noqa: F401

pytestmark = pytest.mark.neo4j
MODEL = "openai/stub-embed"
QUERY = "the first computer programmer"
FAST = RetryPolicy(max_attempts=3, initial_backoff=0.01, max_backoff=0.02, jitter=0)


@pytest.fixture(autouse=True)
def _setup(graph, monkeypatch):
    monkeypatch.setenv("KGR_SLICE_KEY", "embed-slice-key-0123456789")
    for var in ("KGR_EMBEDDING_MODEL", "KGR_EMBEDDING_API_BASE", "KGR_EMBEDDING_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    yield
    graph.run_script("embedding_index_drop")  # other tests list the database's indexes


def unit(*xs: float) -> list[float]:
    v = [0.0] * 8
    for i, x in enumerate(xs):
        v[i] = x
    return v


def world(graph, stub: LLMStub) -> None:
    """Ada–Bob, Bob–Cy, Dee–Eve promoted. The stub embeds "Ada Lovelace" and the query close
    together, "Dee Smith" far from both; other names get hashed vectors."""
    rows = [("Ada Lovelace", "Charles Babbage"), ("Charles Babbage", "Cy"), ("Dee Smith", "Eve")]
    stage(graph, [TripleAssertion(subject=s, subject_type="Person", relation="KNOWS", object=o, object_type="Person",
                                  source=src) for s, o in rows for src in ("s1", "s2")])
    promote_by_quorum(graph, quorum=2)
    stub.embeddings.update({"Ada Lovelace": unit(1.0, 0.1), QUERY: unit(0.98, 0.15, 0.05),
                            "Dee Smith": unit(-1.0, 0.2), "Charles Babbage": unit(0.0, 0.0, 1.0)})


def test_embed_entities_then_a_query_finds_an_anchor_by_meaning(graph, llm_stub):
    world(graph, llm_stub)
    with pytest.raises(KgrNotFound):  # no name shares a word with the query: fulltext alone finds nothing
        build_slice(graph, query=QUERY)
    emb = LiteLLMEmbedder(MODEL, api_base=llm_stub.base_url, batch=2)
    with pytest.raises(KgrNotFound):  # an embedder, but nothing embedded yet: no index, no anchor by meaning
        build_slice(graph, query=QUERY, embed=emb)
    emb.requests = 0
    rep = embed_entities(graph, emb, batch=2)
    assert (rep.entities, rep.embedded, rep.already, rep.dimensions) == (5, 5, 0, 8)
    assert emb.requests == 3  # five names, two per request
    assert stored.index_state(graph).state == "ONLINE"
    assert stored.nearest_entities(graph, unit(1.0, 0.1), model=MODEL, k=1)[0][0] == "Person:ada lovelace"

    s = build_slice(graph, query=QUERY, embed=emb)
    assert s.anchors == ["Person:ada lovelace"]  # the nearest name; Dee points the other way
    assert {(e.subject, e.object) for e in s.edges} == {("Person:ada lovelace", "Person:charles babbage"),
                                                       ("Person:charles babbage", "Person:cy")}
    assert build_slice(graph, query=QUERY, embed=emb).slice_id == s.slice_id  # deterministic
    both = build_slice(graph, query="Dee " + QUERY, embed=emb)  # fulltext finds Dee, the embedding Ada
    assert "Person:dee smith" in both.anchors

    # resumable: nothing left to do; a new entity is embedded alone
    assert embed_entities(graph, emb).embedded == 0
    stage(graph, [TripleAssertion(subject="Fay", subject_type="Person", relation="KNOWS", object="Eve",
                                  object_type="Person", source="s3")])
    again = embed_entities(graph, emb)
    assert (again.embedded, again.already) == (1, 5)


def test_another_model_of_another_dimension_needs_replace(graph, llm_stub):
    world(graph, llm_stub)
    embed_entities(graph, LiteLLMEmbedder(MODEL, api_base=llm_stub.base_url))
    llm_stub.embeddings.clear()
    llm_stub.embedding_dims = 12
    other = LiteLLMEmbedder("openai/stub-embed-12", api_base=llm_stub.base_url)
    with pytest.raises(KgrValidationError, match="8-dimensional .* makes 12.*--replace"):
        embed_entities(graph, other)
    rep = embed_entities(graph, other, replace=True)
    assert rep.embedded == 5 and stored.index_state(graph).dimensions == 12
    # a query embedded by the old model cannot be compared with the store's new vectors
    with pytest.raises(KgrValidationError, match="8 dimensions"):
        stored.nearest_entities(graph, unit(1.0), model=MODEL)


def test_embedder_errors_are_clear_and_transient_ones_retried(llm_stub):
    emb = LiteLLMEmbedder(MODEL, api_base=llm_stub.base_url, retry=FAST)
    llm_stub.embedding_errors.extend([StubReply.error(503), StubReply.error(429)])
    assert len(emb(["a", "b"])) == 2  # two transient failures, then the vectors
    assert [r.path for r in llm_stub.requests] == ["/v1/embeddings"] * 3
    llm_stub.embedding_errors.append(StubReply.error(400, "bad model"))
    with pytest.raises(KgrExtractionError, match="request_error"):
        emb(["a"])
    llm_stub.embeddings["ragged"] = [1.0, 2.0]
    with pytest.raises(KgrExtractionError, match="dimensions"):
        emb(["a", "ragged"])
    assert "key" not in repr(LiteLLMEmbedder(MODEL, api_key="sk-secret-value")).lower().replace("api_base", "")
    with pytest.raises(KgrValidationError):
        LiteLLMEmbedder("")
    with pytest.raises(KgrValidationError, match="embedding_api_base: '127.0.0.1:8000' is not an http"):
        LiteLLMEmbedder(MODEL, api_base="127.0.0.1:8000")  # no scheme: refused before any request
    assert make_embedder(environ={}) is None
    configured = make_embedder(environ={"KGR_EMBEDDING_MODEL": MODEL, "KGR_EMBEDDING_API_BASE": llm_stub.base_url})
    assert configured is not None and configured.model == MODEL and configured.api_base == llm_stub.base_url


def test_cli_embed_and_slice_by_meaning(graph, llm_stub, neo4j_settings, monkeypatch):
    world(graph, llm_stub)
    monkeypatch.setenv("NEO4J_URI", neo4j_settings.uri)
    run = CliRunner().invoke
    missing = run(app, ["embed"])
    assert missing.exit_code == 1 and "--embedding-model" in missing.stderr
    opts = ["--embedding-model", MODEL, "--embedding-api-base", llm_stub.base_url]
    res = run(app, ["embed", *opts, "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["embedded"] == 5
    plain = run(app, ["slice", "--query", QUERY])
    assert plain.exit_code == 1 and "no entity matches" in plain.stderr
    monkeypatch.setenv("KGR_EMBEDDING_MODEL", MODEL)  # configured through the environment
    monkeypatch.setenv("KGR_EMBEDDING_API_BASE", llm_stub.base_url)
    found = run(app, ["slice", "--query", QUERY, "--json"])
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)["anchors"] == ["Person:ada lovelace"]
    # a new entity: kgr doctor says it is not embedded yet (a hint, not a failure)
    stage(graph, [TripleAssertion(subject="Fay", subject_type="Person", relation="KNOWS", object="Eve",
                                  object_type="Person", source="s3")])
    doc = run(app, ["doctor", "--json"])
    report = json.loads(doc.stdout)
    assert doc.exit_code == 0 and report["embeddings"] == {"entities": 6, "embedded": 5}
    assert any(f.startswith("1 of 6 entities have no name embedding") for f in report["findings"])
    monkeypatch.delenv("KGR_EMBEDDING_MODEL")
    assert json.loads(run(app, ["doctor", "--json"]).stdout)["embeddings"] is None


def test_server_slices_by_meaning_with_its_embedding_model(graph, llm_stub, monkeypatch):
    from kgr.server.app import BackgroundServer
    from kgr.server.security import ServerConfig

    world(graph, llm_stub)
    embed_entities(graph, LiteLLMEmbedder(MODEL, api_base=llm_stub.base_url))
    config = ServerConfig(port=0, embedding_model=MODEL, embedding_api_base=llm_stub.base_url)
    with BackgroundServer(config, graph=graph) as srv, httpx.Client(base_url=srv.url, timeout=30) as c:
        res = c.post("/tools/get_context_slice", json={"query": QUERY})
        assert res.status_code == 200, res.text
        assert res.json()["anchors"] == ["Person:ada lovelace"]
    with BackgroundServer(ServerConfig(port=0), graph=graph) as srv, httpx.Client(base_url=srv.url, timeout=30) as c:
        assert c.post("/tools/get_context_slice", json={"query": QUERY}).status_code == 404  # fulltext only


def test_ingest_embeds_the_new_names_and_survives_an_embedding_failure(graph, llm_stub, tmp_path):
    """With an embedding model, a job ends by embedding the names it added; when the embedding
    server refuses, the ingest stands (its chunks processed) and says what is left for kgr embed."""
    from pathlib import Path

    from kgr.ingest.config import IngestConfig
    from kgr.ingest.pipeline import ingest
    from kgr.model.schema import load_schema

    schema = load_schema(Path(__file__).resolve().parents[2] / "examples" / "schema.json")
    (tmp_path / "a.txt").write_text("Ada Lovelace worked with Charles Babbage in London.", encoding="utf-8")
    emb = LiteLLMEmbedder(MODEL, api_base=llm_stub.base_url)
    rep = ingest(graph, [tmp_path], schema, config=IngestConfig(max_rounds=1), embed=emb)
    total = stored.coverage(graph, MODEL)
    assert rep.chunks_processed == 1 and rep.new_entities > 0
    assert rep.embedded_entities == total.entities == total.embedded and rep.embedding_error is None
    assert "entity names embedded" in rep.render()

    (tmp_path / "b.txt").write_text("Grace Hopper worked with Howard Aiken at Harvard.", encoding="utf-8")
    llm_stub.embedding_errors.append(StubReply.error(400, "no such model"))
    rep = ingest(graph, [tmp_path], schema, config=IngestConfig(max_rounds=1), embed=emb)
    assert rep.chunks_processed == 1 and not rep.chunks_failed  # the ingest stands
    assert rep.embedded_entities == 0 and "embedding request failed" in rep.embedding_error
    assert "run kgr embed" in rep.render()
    left = stored.coverage(graph, MODEL)
    assert left.embedded < left.entities
    assert embed_entities(graph, emb).embedded == left.entities - left.embedded  # kgr embed finishes them


def test_cli_ingest_with_an_embedding_model(graph, llm_stub, neo4j_settings, monkeypatch, tmp_path):
    from pathlib import Path

    monkeypatch.setenv("NEO4J_URI", neo4j_settings.uri)
    (tmp_path / "a.txt").write_text("Ada Lovelace worked with Charles Babbage in London.", encoding="utf-8")
    schema = Path(__file__).resolve().parents[2] / "examples" / "schema.json"
    res = CliRunner().invoke(app, ["ingest", str(tmp_path), "--schema", str(schema), "--max-rounds", "1",
                                   "--embedding-model", MODEL, "--embedding-api-base", llm_stub.base_url, "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["embedded_entities"] == stored.coverage(graph, MODEL).entities > 0
