"""An LLM that cannot work stops an ingest at once (kgr/ingest/fail_fast.py), end to end: litellm,
the real Neo4j, in process and with worker processes.

- no key for the provider, an unknown model: refused before anything is read or written;
- a key litellm raises about before any request (the client refuses to send it: litellm reports
  HTTP 500 "Missing credentials", once retried 4 times per chunk) stops the job at the first chunk.
Either way no document is left partial (every document in the store has all its chunks, none
processed), and the next run with a working LLM resumes them, each chunk once. (The stub's HTTP 401
is in tests/ingest/test_pipeline_llm.py.)
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from kgr.errors import KgrExtractionError  # noqa: E402
from kgr.extract.llm_client import classify_failure, load_litellm  # noqa: E402
from kgr.ingest.config import IngestConfig  # noqa: E402
from kgr.ingest.pipeline import ingest  # noqa: E402
from kgr.model.schema import load_schema  # noqa: E402
from kgr.store.admin import status  # noqa: E402
from tests.support.llm_stub import StubReply, llm_stub_factory  # noqa: E402,F401 - the fixture

pytestmark = pytest.mark.neo4j

SCHEMA = load_schema(Path(_ROOT) / "examples" / "schema.json")
TEXT = "{tag}: Charles Babbage was born in London. Charles Babbage designed the Difference Engine."
GOOD = {"entities": {"Person": ["Charles Babbage"], "Place": ["London"]},
        "relations": {"BORN_IN": [{"subject": "Charles Babbage", "object": "London"}]}}
EXECUTORS = [pytest.param({}, id="inprocess"), pytest.param({"executor": "process", "workers": 2}, id="process")]


def _corpus(tmp_path: Path, n: int) -> Path:
    d = tmp_path / "corpus"
    d.mkdir()
    for i in range(n):
        (d / f"doc-{i:03d}.txt").write_text(TEXT.format(tag=f"DOC-{i:03d}"), encoding="utf-8")
    return d


def _config(**kw) -> IngestConfig:
    return IngestConfig(**{"extractor": "llm", "model": "openai/gpt-4o-mini", "timeout": 2.0, "max_attempts": 4,
                           "concurrency": 4, "max_rounds": 1, "promote": False, **kw})


def _documents(graph) -> list[tuple[int | None, int, int]]:
    """``(chunk_count, chunks in the store, chunks processed)`` of every document."""
    return [tuple(r.values()) for r in graph.driver.execute_query(
        "MATCH (d:Document) RETURN d.chunk_count AS cut, COUNT { (c:Chunk)-[:PART_OF]->(d) } AS stored, "
        "COUNT { (c:Chunk)-[:PART_OF]->(d) WHERE c.processed_at IS NOT NULL } AS done").records]


@pytest.fixture
def no_keys(monkeypatch):
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(var, raising=False)


def test_the_missing_credentials_error_is_never_retried_as_a_server_error(no_keys):
    """What litellm raises for an OpenAI model without a key (no request is sent): HTTP 500 on the
    outside, the SDK's bare OpenAIError underneath."""
    ll = load_litellm()
    with pytest.raises(Exception) as info:
        ll.completion(model="openai/gpt-4o-mini", messages=[{"role": "user", "content": "hi"}],
                      max_retries=0, num_retries=0)
    assert getattr(info.value, "status_code", None) == 500  # as litellm reports it
    assert classify_failure(info.value) == ("credentials", False)


@pytest.mark.parametrize("where", EXECUTORS)
def test_no_key_stops_the_job_before_anything_is_written(graph, tmp_path, no_keys, where):
    corpus = _corpus(tmp_path, 12)
    with pytest.raises(KgrExtractionError, match=r"^no API key for openai/gpt-4o-mini: set OPENAI_API_KEY"):
        ingest(graph, [corpus], SCHEMA, config=_config(**where))
    st = status(graph)
    assert (st.documents, st.chunks, st.entities) == (0, 0, 0)


def test_an_unknown_model_stops_the_job_before_anything_is_written(graph, tmp_path, no_keys):
    with pytest.raises(KgrExtractionError, match=r"^unknown model 'gpt-nonexistent-9': litellm cannot tell"):
        ingest(graph, [_corpus(tmp_path, 3)], SCHEMA, config=_config(model="gpt-nonexistent-9"))
    assert status(graph).documents == 0


# (litellm's request coroutine of a chunk cancelled in flight is never awaited: not kgr's)
@pytest.mark.filterwarnings("ignore:coroutine .* was never awaited:RuntimeWarning")
@pytest.mark.parametrize("where", EXECUTORS)
def test_a_credentials_error_raised_before_any_request_stops_the_job_at_the_first_chunk(
        graph, tmp_path, no_keys, monkeypatch, where, llm_stub_factory):
    """When the environment check cannot see that the key is missing (a provider litellm's check
    does not know), the client's refusal to send the request stops the job at the first chunk: one
    error, no retries, nothing processed."""
    ll = load_litellm()
    monkeypatch.setattr(ll, "validate_environment", lambda *a, **k: {"keys_in_environment": True, "missing_keys": []})
    corpus = _corpus(tmp_path, 40)
    with pytest.raises(KgrExtractionError) as info:
        ingest(graph, [corpus], SCHEMA, config=_config(**where))
    msg = str(info.value)
    assert msg.startswith("stopped: the LLM refused the first chunk (no request sent: LLM request not sent: "
                          "no usable API key for openai/gpt-4o-mini"), msg
    assert "Missing credentials" in msg and "\n" not in msg and "HTTP 500" not in msg
    left = _documents(graph)
    assert left and all(cut == stored and done == 0 for cut, stored, done in left), left  # whole, unprocessed

    stub = llm_stub_factory(default=StubReply.json(GOOD))  # the fix: a key and a server that accepts it
    report = ingest(graph, [corpus], SCHEMA, config=_config(api_base=stub.base_url, api_key="stub-key", **where))
    assert report.chunks_failed == [] and len(stub.requests) == 40  # each chunk once, those left resumed
    assert _documents(graph) == [(1, 1, 1)] * 40
