"""The LLM extractor end to end: litellm over real HTTP against the local OpenAI-compatible stub."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from kgr.errors import KgrExtractionError
from kgr.extract import make_extractor
from kgr.extract.base import ExtractionResult, extract_concurrently
from kgr.extract.llm import LLMExtractor
from kgr.extract.llm_client import RetryPolicy
from kgr.extract.llm_prompt import build_messages, parse_reply
from kgr.model.schema import KGSchema
from tests.support.llm_stub import StubReply

SCHEMA = KGSchema.model_validate(
    {
        "name": "test",
        "entity_types": {
            "Person": {"description": "A human being", "names": ["Ada Lovelace"]},
            "Place": {"description": "A city"},
            "Machine": {},
        },
        "relation_types": {
            "BORN_IN": {"domain": ["Person"], "range": ["Place"], "functional": True},
            "DESIGNED": {"domain": ["Person"], "range": ["Machine"]},
        },
    }
)
TEXT = "Charles Babbage was born in London. He designed the Analytical Engine."
GOOD = {
    "entities": {"Person": ["Charles Babbage"], "Place": ["London"], "Machine": ["Analytical Engine"]},
    "relations": {
        "BORN_IN": [{"subject": "Charles Babbage", "object": "London"}],
        "DESIGNED": [{"subject": "Charles Babbage", "object": "Analytical Engine"}],
    },
}
FAST = RetryPolicy(max_attempts=3, initial_backoff=0.01, max_backoff=0.05, jitter=0.0)


@pytest.fixture(params=["openai-sdk", "litellm-http"])
def llm_stub(request, llm_stub_factory, monkeypatch):
    """The stub, and litellm's route for ``openai/`` models: the OpenAI SDK's client (in process, by
    default) or litellm's HTTP handler (an ingestion worker's, :func:`kgr.litellm_offline.openai_http_route`).
    Every test below that talks to the stub runs through both."""
    from kgr.litellm_offline import OPENAI_HTTP_SWITCH

    monkeypatch.setenv(OPENAI_HTTP_SWITCH, "true" if request.param == "litellm-http" else "false")
    return llm_stub_factory()


def make(stub, **kw) -> LLMExtractor:
    kw.setdefault("retry", FAST)
    kw.setdefault("timeout", 5.0)
    return LLMExtractor("openai/stub-model", api_base=stub.base_url, api_key="stub-key", **kw)


def triples(result: ExtractionResult) -> set[tuple[str, str, str]]:
    return {(p.subject, r, p.object) for r, ps in result.kg.relations.items() for p in ps}


# -- normal extraction -------------------------------------------------------------------------


def test_normal_extraction_over_http(llm_stub):
    llm_stub.enqueue(StubReply.json(GOOD, usage={"prompt_tokens": 120, "completion_tokens": 30}))
    result = make(llm_stub).extract(TEXT, SCHEMA)

    assert triples(result) == {
        ("Charles Babbage", "BORN_IN", "London"),
        ("Charles Babbage", "DESIGNED", "Analytical Engine"),
    }
    assert result.kg.entities == GOOD["entities"]
    assert result.proposed_types.is_empty and result.rejected == []
    assert (result.usage.prompt_tokens, result.usage.completion_tokens, result.usage.total_tokens) == (120, 30, 150)
    assert result.llm_calls == 1
    assert result.cost_usd == 0.0  # litellm cannot price "stub-model"
    assert result.extractor == "llm:openai/stub-model"

    (req,) = llm_stub.requests
    assert req.path == "/v1/chat/completions"
    assert req.body["model"] == "stub-model"
    assert req.headers["authorization"] == "Bearer stub-key"
    assert req.body["response_format"] == {"type": "json_object"}
    system, user = req.messages
    assert system["role"] == "system" and user["role"] == "user"
    # the prompt is conditioned on the schema: types, domain -> range, functional flag, descriptions
    assert "- Person: A human being (e.g. Ada Lovelace)" in system["content"]
    assert "- BORN_IN (Person -> Place) [functional: at most one object per subject]" in system["content"]
    assert "- DESIGNED (Person -> Machine)" in system["content"]
    assert TEXT in user["content"]
    assert "Recommendations" not in user["content"]


def test_guidance_goes_into_the_prompt(llm_stub):
    llm_stub.enqueue(StubReply.json(GOOD))
    make(llm_stub).extract(TEXT, SCHEMA, guidance=["Extract more Machine entities", "Check BORN_IN relations"])
    user = llm_stub.last_request.messages[-1]["content"]
    assert "Recommendations from the assessment of the previous extraction" in user
    assert "- Extract more Machine entities\n- Check BORN_IN relations" in user
    assert user.index("Recommendations") < user.index(TEXT)


def test_code_fenced_json_is_accepted_without_repair(llm_stub):
    llm_stub.enqueue(StubReply.text("Here you go:\n```json\n" + json.dumps(GOOD) + "\n```"))
    result = make(llm_stub).extract(TEXT, SCHEMA)
    assert len(triples(result)) == 2
    assert result.llm_calls == 1 and len(llm_stub.requests) == 1


# -- repair ----------------------------------------------------------------------------------------


def test_malformed_json_is_repaired_with_one_request(llm_stub):
    bad = '{"entities": {"Person": ["Charles Babbage"], "Place": ["London"]}, "relations": {"BORN_IN": ['
    llm_stub.enqueue(
        StubReply.text(bad, usage={"prompt_tokens": 100, "completion_tokens": 10}),
        StubReply.json(GOOD, usage={"prompt_tokens": 130, "completion_tokens": 40}),
    )
    result = make(llm_stub).extract(TEXT, SCHEMA)

    assert len(triples(result)) == 2
    assert result.llm_calls == 2
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (230, 50)
    first, repair = llm_stub.requests
    # the repair request replays the conversation, the bad reply, and the parse error
    assert repair.messages[:2] == first.messages
    assert repair.messages[2] == {"role": "assistant", "content": bad}
    assert repair.messages[3]["role"] == "user"
    assert "invalid JSON" in repair.messages[3]["content"]
    assert "corrected JSON" in repair.messages[3]["content"]


def test_wrong_shape_is_repaired_too(llm_stub):
    llm_stub.enqueue(StubReply.json({"entities": ["Charles Babbage"]}), StubReply.json(GOOD))
    result = make(llm_stub).extract(TEXT, SCHEMA)
    assert len(triples(result)) == 2
    assert "does not match the required format at entities" in llm_stub.last_request.messages[-1]["content"]


def test_still_invalid_after_repair_fails_with_reason(llm_stub):
    llm_stub.enqueue(StubReply.text("not json"), StubReply.text("{still: not json}"))
    with pytest.raises(KgrExtractionError, match="still invalid after one repair request") as info:
        make(llm_stub).extract(TEXT, SCHEMA)
    assert info.value.reason == "invalid_output"
    assert info.value.llm_calls == 2
    assert len(llm_stub.requests) == 2  # exactly one repair attempt


# -- retries ---------------------------------------------------------------------------------------


def test_rate_limit_then_success(llm_stub):
    llm_stub.enqueue(StubReply.error(429, "slow down", retry_after=0), StubReply.json(GOOD))
    result = make(llm_stub).extract(TEXT, SCHEMA)
    assert len(triples(result)) == 2
    assert result.llm_calls == 2
    assert len(llm_stub.requests) == 2
    assert llm_stub.requests[0].body == llm_stub.requests[1].body  # the same request, retried


def test_server_error_then_success(llm_stub):
    llm_stub.enqueue(StubReply.error(503), StubReply.error(500), StubReply.json(GOOD))
    result = make(llm_stub).extract(TEXT, SCHEMA)
    assert len(triples(result)) == 2 and result.llm_calls == 3


def test_rate_limited_on_every_attempt_fails_after_max_attempts(llm_stub):
    llm_stub.enqueue(*[StubReply.error(429, "quota exceeded")] * 5)
    with pytest.raises(KgrExtractionError, match=r"rate limited \(HTTP 429\) on each of 3 attempt") as info:
        make(llm_stub).extract(TEXT, SCHEMA)
    assert info.value.reason == "rate_limited"
    assert len(llm_stub.requests) == 3
    assert llm_stub.pending == 2


def test_backoff_grows_between_attempts(llm_stub):
    llm_stub.enqueue(*[StubReply.error(503)] * 3)
    policy = RetryPolicy(max_attempts=3, initial_backoff=0.15, max_backoff=1.0, jitter=0.0)
    with pytest.raises(KgrExtractionError):
        make(llm_stub, retry=policy).extract(TEXT, SCHEMA)
    t = [r.received_at for r in llm_stub.requests]
    assert t[1] - t[0] >= 0.14 and t[2] - t[1] >= 0.29  # 0.15 s, then 0.30 s


def test_timeout_fails_with_clear_reason(llm_stub):
    llm_stub.enqueue(StubReply.sleep(3.0), StubReply.sleep(3.0))
    ex = make(llm_stub, timeout=0.3, retry=RetryPolicy(max_attempts=2, initial_backoff=0.01, jitter=0.0))
    started = time.monotonic()
    with pytest.raises(KgrExtractionError, match=r"timed out after 0.3 s on each of 2 attempt\(s\)") as info:
        ex.extract(TEXT, SCHEMA)
    assert time.monotonic() - started < 2.5
    assert info.value.reason == "timeout"
    assert info.value.attempts == 2
    assert len(llm_stub.requests) == 2


@pytest.mark.parametrize("api_base", ["notaurl", "127.0.0.1:8000/v1", "http://", "ftp://h/v1", "http://h:port/v1"])
def test_an_api_base_that_is_not_a_url_is_refused_before_any_request(api_base):
    """litellm would only refuse it request by request, each failure retried as a server error."""
    from kgr.errors import KgrValidationError
    from kgr.ingest.config import IngestConfig

    with pytest.raises(KgrValidationError, match=r"api_base: .* is not an http:// or https:// URL with a host") as info:
        LLMExtractor("openai/stub-model", api_base=api_base)
    assert info.value.field == "api_base"
    with pytest.raises(ValueError, match="is not an http:// or https:// URL"):
        IngestConfig(model="openai/stub-model", api_base=api_base)
    for fine in ("http://127.0.0.1:8000/v1", "https://llm.example.com", "http://[::1]:8000/v1", "", None):
        assert LLMExtractor("openai/stub-model", api_base=fine).api_base == fine


def test_non_transient_error_is_not_retried(llm_stub):
    llm_stub.enqueue(StubReply.error(401, "invalid api key"), StubReply.json(GOOD))
    with pytest.raises(KgrExtractionError, match="HTTP 401") as info:
        make(llm_stub).extract(TEXT, SCHEMA)
    assert info.value.reason == "request_error"
    assert len(llm_stub.requests) == 1
    assert "stub-key" not in str(info.value)


# -- schema violations -------------------------------------------------------------------------------


def test_schema_violations_are_proposed_or_rejected(llm_stub):
    reply = {
        "entities": {
            "Person": ["Charles Babbage", "Ada Lovelace"],
            "Place": ["London"],
            "Machine": ["Analytical Engine"],
            "Language": ["Note G"],
        },
        "relations": {
            "DESIGNED": [
                {"subject": "Charles Babbage", "object": "Analytical Engine"},
                {"subject": "London", "object": "Analytical Engine"},  # wrong domain
            ],
            "BORN_IN": [{"subject": "Ada Lovelace", "object": "Ada Lovelace"}],  # wrong range (and a loop)
            "WROTE": [{"subject": "Ada Lovelace", "object": "Note G"}],  # unknown relation type
        },
    }
    llm_stub.enqueue(StubReply.json(reply))
    result = make(llm_stub).extract(TEXT, SCHEMA)

    assert triples(result) == {("Charles Babbage", "DESIGNED", "Analytical Engine")}
    assert "Language" not in result.kg.entities
    assert result.proposed_types.entities == {"Language": ["Note G"]}
    (wrote,) = result.proposed_types.relations["WROTE"]
    assert (wrote.subject, wrote.subject_type, wrote.object, wrote.object_type) == (
        "Ada Lovelace", "Person", "Note G", "Language",
    )
    reasons = {(r.type, r.subject, r.object): r.reason for r in result.rejected}
    assert reasons[("DESIGNED", "London", "Analytical Engine")] == "DESIGNED domain is ['Person'], got Place"
    assert "BORN_IN range is ['Place'], got Person" in reasons[("BORN_IN", "Ada Lovelace", "Ada Lovelace")]


# -- async and concurrency ---------------------------------------------------------------------------


def test_aextract(llm_stub):
    llm_stub.enqueue(StubReply.error(429), StubReply.json(GOOD))
    result = asyncio.run(make(llm_stub).aextract(TEXT, SCHEMA))
    assert len(triples(result)) == 2 and result.llm_calls == 2


def test_batch_with_a_timed_out_chunk_completes_the_rest(llm_stub_factory):
    def responder(body):
        if "SLOW" in body["messages"][-1]["content"]:
            return StubReply.sleep(3.0)
        return StubReply.json(GOOD)

    stub = llm_stub_factory(default=responder, latency=0.2)
    ex = make(stub, timeout=0.8, retry=RetryPolicy(max_attempts=1))
    texts = [f"chunk {i}: {TEXT}" for i in range(7)] + ["SLOW chunk"]
    started = time.monotonic()
    results = asyncio.run(extract_concurrently(ex, texts, SCHEMA, concurrency=8))
    elapsed = time.monotonic() - started

    assert [isinstance(r, ExtractionResult) for r in results] == [True] * 7 + [False]
    assert isinstance(results[-1], KgrExtractionError) and results[-1].reason == "timeout"
    assert all(len(triples(r)) == 2 for r in results[:7])
    assert elapsed < 0.8 + 0.2 * 7  # concurrent, not sequential
    assert stub.max_inflight >= 4


def test_max_concurrency_bounds_requests_in_flight(llm_stub_factory):
    stub = llm_stub_factory(default=StubReply.json(GOOD), latency=0.15)
    ex = make(stub, max_concurrency=2)
    results = asyncio.run(extract_concurrently(ex, [TEXT] * 6, SCHEMA, concurrency=6))
    assert all(isinstance(r, ExtractionResult) for r in results)
    assert stub.max_inflight == 2


def _litellm_price(model: str) -> tuple[float, float]:
    import litellm

    entry = litellm.model_cost[model]
    return entry["input_cost_per_token"], entry["output_cost_per_token"]


def test_cost_of_a_model_litellm_can_price_is_tokens_times_its_price(llm_stub):
    # a malformed first reply: two answered requests, both priced and summed
    llm_stub.enqueue(StubReply.text('{"entities": ', usage={"prompt_tokens": 1000, "completion_tokens": 7}),
                     StubReply.json(GOOD, usage={"prompt_tokens": 1300, "completion_tokens": 50}))
    ex = LLMExtractor("openai/gpt-4o-mini", api_base=llm_stub.base_url, api_key="k", retry=FAST)
    result = ex.extract(TEXT, SCHEMA)
    p_in, p_out = _litellm_price("gpt-4o-mini")
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (2300, 57)
    assert result.cost_usd == pytest.approx(2300 * p_in + 57 * p_out, rel=1e-9)
    assert result.cost_usd > 0 and result.unpriced_calls == 0 and ex.priced
    assert result.llm_calls == 2

    llm_stub.enqueue(StubReply.json(GOOD, usage={"prompt_tokens": 400, "completion_tokens": 100}))
    async_result = asyncio.run(ex.aextract(TEXT, SCHEMA))
    assert async_result.cost_usd == pytest.approx(400 * p_in + 100 * p_out, rel=1e-9)


def test_unpriced_model_costs_nothing_is_reported_unpriced_and_priced_once_by_litellm(llm_stub, monkeypatch):
    import litellm

    # kgr must use the cost litellm computed for the response (None for an unpriced model), never price again
    calls: list[object] = []
    real = litellm.completion_cost
    monkeypatch.setattr(litellm, "completion_cost", lambda *a, **kw: calls.append(kw) or real(*a, **kw))
    llm_stub.enqueue(StubReply.text("not json", usage={"prompt_tokens": 100, "completion_tokens": 5}),
                     StubReply.json(GOOD, usage={"prompt_tokens": 120, "completion_tokens": 30}))
    ex = make(llm_stub)
    result = ex.extract(TEXT, SCHEMA)
    assert not ex.priced
    assert (result.cost_usd, result.unpriced_calls, result.llm_calls) == (0.0, 2, 2)
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (220, 35)
    assert calls == []
    # the request is what it was: the zero-price placeholder changes nothing litellm sends
    body = llm_stub.requests[-1].body
    assert body["model"] == "stub-model" and body["response_format"] == {"type": "json_object"}

    # a failed call reports its unpriced answered requests too
    llm_stub.enqueue(StubReply.text("no", usage={"prompt_tokens": 10, "completion_tokens": 1}),
                     StubReply.text("still no", usage={"prompt_tokens": 10, "completion_tokens": 1}))
    with pytest.raises(KgrExtractionError) as info:
        ex.extract(TEXT, SCHEMA)
    assert (info.value.reason, info.value.unpriced_calls, info.value.cost_usd) == ("invalid_output", 2, 0.0)


def test_user_given_prices_price_an_unknown_model(llm_stub):
    llm_stub.enqueue(StubReply.json(GOOD, usage={"prompt_tokens": 1200, "completion_tokens": 300}))
    ex = LLMExtractor("openai/kgr-test-self-hosted", api_base=llm_stub.base_url, api_key="k", retry=FAST,
                      input_cost_per_token=2e-6, output_cost_per_token=8e-6)
    result = ex.extract(TEXT, SCHEMA)
    assert ex.priced and result.unpriced_calls == 0
    assert result.cost_usd == pytest.approx(1200 * 2e-6 + 300 * 8e-6, rel=1e-9)
    with pytest.raises(KgrExtractionError, match="both input_cost_per_token and output_cost_per_token"):
        LLMExtractor("openai/x", input_cost_per_token=1e-6)
    with pytest.raises(KgrExtractionError, match="negative"):
        LLMExtractor("openai/x", input_cost_per_token=-1.0, output_cost_per_token=1.0)


def test_no_dead_litellm_settings(monkeypatch):
    import litellm

    import kgr.litellm_offline as llm_module

    monkeypatch.setattr(llm_module, "_LITELLM", None)  # import afresh
    monkeypatch.delattr(litellm, "telemetry", raising=False)  # (another kgr module may still set it)
    assert llm_module.load_litellm() is litellm and litellm.suppress_debug_info is True
    assert not hasattr(litellm, "telemetry")  # the extractor sets no attribute litellm does not have



def test_kgr_imports_litellm_only_through_load_litellm():
    """Any other ``import litellm`` could run before the offline switch and let litellm fetch its
    price map from the network (the ingestion workers and the token counter once did)."""
    import ast
    from pathlib import Path

    import kgr

    offenders = []
    for path in Path(kgr.__file__).parent.rglob("*.py"):
        if path.name == "litellm_offline.py" and path.parent.name == "kgr":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "litellm" or n.startswith("litellm.") for n in names):
                offenders.append(f"{path.relative_to(Path(kgr.__file__).parent)}:{node.lineno}")
    assert offenders == []


def test_token_counter_and_worker_warm_up_import_litellm_offline():
    """In a fresh interpreter without the switch set and no way out (a dead proxy), counting tokens
    and a worker's warm-up import litellm offline, and the warm-up brings the OpenAI SDK's resources."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    env.update(HTTPS_PROXY="http://127.0.0.1:9", HTTP_PROXY="http://127.0.0.1:9", LITELLM_LOG="WARNING")
    code = (
        "import os, sys\n"
        "from kgr.slices.render import TokenCounter\n"
        "assert TokenCounter('openai/gpt-4o-mini')('hello world') > 0\n"
        "from kgr.litellm_offline import warm_up_litellm\n"
        "warm_up_litellm()\n"
        "print(os.environ.get('LITELLM_LOCAL_MODEL_COST_MAP'), 'openai.resources' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["True", "True"]
    assert "cost map" not in run.stderr


def test_a_workers_warm_up_prepares_its_route_without_sending_a_request(llm_stub_factory):
    """The warm-up loads what the first request through ``hosted_vllm/`` would load (the route's
    modules, litellm's tokenizer) with a mock completion: the stub sees only the real request that
    follows, and that request imports none of them."""
    import os
    import subprocess
    import sys

    llm_stub = llm_stub_factory()
    llm_stub.reply_json({"entities": {}, "relations": {}})
    code = (
        "import sys\n"
        "from kgr.litellm_offline import warm_up_litellm\n"
        f"warm_up_litellm('hosted_vllm/stub-model', {llm_stub.base_url!r})\n"
        "main = vars(sys.modules['litellm.main'])\n"
        "print('encoding' in main, 'litellm.llms.hosted_vllm.chat.transformation' in sys.modules)\n"
        "before = set(sys.modules)\n"
        "from kgr.extract.llm import LLMExtractor\n"
        "from kgr.model.schema import KGSchema\n"
        f"ex = LLMExtractor('hosted_vllm/stub-model', api_base={llm_stub.base_url!r}, api_key='k')\n"
        "ex.extract('Ada Lovelace was born in London.', KGSchema())\n"
        "new = sorted(m for m in set(sys.modules) - before if m.startswith(('litellm.llms', 'tiktoken')))\n"
        "print(new)\n"
    )
    env = {**os.environ, "LITELLM_LOG": "WARNING"}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["True True", "[]"]
    assert llm_stub.served == 1  # the mock completion never left the process


# -- pieces ------------------------------------------------------------------------------------------


def test_make_extractor_picks_llm_when_a_model_is_given(llm_stub):
    ex = make_extractor(model="openai/stub-model", api_base=llm_stub.base_url, api_key="x")
    assert isinstance(ex, LLMExtractor)
    with pytest.raises(KgrExtractionError, match="needs --model"):
        make_extractor("llm")
    with pytest.raises(KgrExtractionError, match="unknown extractor"):
        make_extractor("magic")  # type: ignore[arg-type]


def test_parse_reply_accepts_text_around_the_object_and_nulls():
    out = parse_reply('Sure! {"entities": {"Person": ["Ada"]}, "relations": null} Hope this helps.')
    assert out.entities == {"Person": ["Ada"]} and out.relations == {}


def test_build_messages_for_an_open_schema():
    system, user = build_messages("Some text.", KGSchema())
    assert "(open: choose descriptive PascalCase types)" in system["content"]
    assert user["content"].endswith('"""\nSome text.\n"""')


def test_retry_policy_respects_retry_after_within_the_cap():
    p = RetryPolicy(initial_backoff=0.1, max_backoff=2.0, jitter=0.0)
    assert p.wait_seconds(1) == pytest.approx(0.1)
    assert p.wait_seconds(3) == pytest.approx(0.4)
    assert p.wait_seconds(1, retry_after=30) == pytest.approx(2.0)


def test_invalid_construction():
    with pytest.raises(KgrExtractionError, match="model name"):
        LLMExtractor("")
    with pytest.raises(KgrExtractionError, match="timeout"):
        LLMExtractor("openai/x", timeout=0)


def test_local_server_without_a_key(llm_stub, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    llm_stub.enqueue(StubReply.json(GOOD))
    ex = LLMExtractor("openai/stub-model", api_base=llm_stub.base_url, retry=FAST)
    assert len(triples(ex.extract(TEXT, SCHEMA))) == 2
    assert llm_stub.last_request.headers["authorization"] == "Bearer kgr-no-key"


def test_unreachable_server_is_a_connection_error(llm_stub_factory):
    stub = llm_stub_factory()
    base = stub.base_url
    stub.stop()
    ex = LLMExtractor("openai/stub-model", api_base=base, api_key="k", retry=RetryPolicy(max_attempts=2, jitter=0))
    with pytest.raises(KgrExtractionError, match="connection failed on each of 2 attempt") as info:
        ex.extract(TEXT, SCHEMA)
    assert info.value.reason == "connection_error"


# -- litellm's own HTTP route for OpenAI-compatible servers -------------------------------------------------


def test_hosted_vllm_route_without_the_openai_sdk(llm_stub):
    """``hosted_vllm/<name>`` reaches an OpenAI-compatible server through litellm's own HTTP client
    (no OpenAI SDK: about 1.3 ms less CPU per call, see the README); the extractor behaves as with
    ``openai/``: the request, usage, unpriced accounting, retries of 429 and 5xx, the repair, and a
    401 that is not retried, async and sync. (litellm's ``aiohttp_openai/`` route loses the usage.)"""
    ex = LLMExtractor("hosted_vllm/stub-model", api_base=llm_stub.base_url, api_key="stub-key", retry=FAST, timeout=5.0)
    llm_stub.enqueue(StubReply.error(429, "slow down", retry_after=0), StubReply.error(503),
                     StubReply.text("not json", usage={"prompt_tokens": 10, "completion_tokens": 5}),
                     StubReply.json(GOOD, usage={"prompt_tokens": 120, "completion_tokens": 30}))
    result = asyncio.run(ex.aextract(TEXT, SCHEMA))
    assert triples(result) == {("Charles Babbage", "BORN_IN", "London"),
                               ("Charles Babbage", "DESIGNED", "Analytical Engine")}
    assert result.llm_calls == 4 and len(llm_stub.requests) == 4
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (120 + 10, 30 + 5)  # + the bad reply's
    assert result.cost_usd == 0.0 and result.unpriced_calls == 2
    first = llm_stub.requests[0]
    assert first.path == "/v1/chat/completions" and first.body["model"] == "stub-model"
    assert first.headers["authorization"] == "Bearer stub-key"
    assert TEXT in first.messages[-1]["content"]
    assert "invalid JSON" in llm_stub.requests[-1].messages[-1]["content"]

    llm_stub.enqueue(StubReply.error(401, "invalid api key"))
    with pytest.raises(KgrExtractionError, match="HTTP 401") as info:
        asyncio.run(ex.aextract(TEXT, SCHEMA))
    assert info.value.reason == "request_error" and len(llm_stub.requests) == 5
    llm_stub.enqueue(StubReply.error(500), StubReply.json(GOOD))
    assert len(triples(ex.extract(TEXT, SCHEMA))) == 2 and len(llm_stub.requests) == 7


# -- the worker's route to an OpenAI-compatible server -------------------------------------------------


def test_which_models_a_worker_sends_through_litellms_http_handler():
    from kgr.litellm_offline import OPENAI_HTTP_SWITCH as SWITCH, openai_http_route

    base = "http://127.0.0.1:8000/v1"
    assert openai_http_route("openai/m", base, {}) is True  # a self-hosted OpenAI-compatible server
    assert openai_http_route("openai/gpt-4o-mini", None, {}) is None  # OpenAI's API keeps the SDK
    assert openai_http_route("hosted_vllm/m", base, {}) is None  # already on the handler
    assert openai_http_route("anthropic/claude", base, {}) is None and openai_http_route(None, base, {}) is None
    assert openai_http_route(object(), base, {}) is None  # a custom extractor's model object
    # the job's own setting wins, read as litellm reads it (only "true" is on)
    assert [openai_http_route("openai/m", base, {SWITCH: v}) for v in ("true", " TRUE ", "false", "1", "")] == \
        [True, True, False, False, False]


def test_kgr_ingests_switch_holds_for_the_job_and_is_put_back(monkeypatch):
    import os

    from kgr.litellm_offline import OPENAI_HTTP_SWITCH as SWITCH, openai_http_route_during

    base = "http://127.0.0.1:8000/v1"
    monkeypatch.delenv(SWITCH, raising=False)
    with openai_http_route_during("openai/m", base) as on:
        assert on is True and os.environ[SWITCH] == "true"
    assert SWITCH not in os.environ
    with pytest.raises(RuntimeError), openai_http_route_during("openai/m", base):
        raise RuntimeError("the job failed")
    assert SWITCH not in os.environ  # put back on failure too
    monkeypatch.setenv(SWITCH, "no")  # the user's own value: off, and left as written
    with openai_http_route_during("openai/m", base) as on:
        assert on is False and os.environ[SWITCH] == "false"
    assert os.environ[SWITCH] == "no"
    with openai_http_route_during("hosted_vllm/m", base) as on:
        assert on is None and os.environ[SWITCH] == "no"


def test_both_openai_routes_give_the_same_extraction_usage_cost_and_failures(llm_stub_factory, monkeypatch):
    """The worker's route (litellm's HTTP handler) and the SDK's, over real HTTP: the same messages
    sent, the same parsed result, tokens and price, the same retried 429 and unretried 401."""
    from kgr.litellm_offline import OPENAI_HTTP_SWITCH, set_openai_http_route

    monkeypatch.setenv(OPENAI_HTTP_SWITCH, "false")  # restored after the test
    llm_stub = llm_stub_factory()
    seen = {}
    for on in (False, True):
        set_openai_http_route(on)
        llm_stub.reset()
        llm_stub.enqueue(StubReply.error(429, "slow down", retry_after=0),
                         StubReply.json(GOOD, usage={"prompt_tokens": 1000, "completion_tokens": 40}),
                         StubReply.error(401, "invalid api key"))
        ex = LLMExtractor("openai/gpt-4o-mini", api_base=llm_stub.base_url, api_key="stub-key", retry=FAST)
        result = asyncio.run(ex.aextract(TEXT, SCHEMA))
        with pytest.raises(KgrExtractionError, match="HTTP 401") as info:
            ex.extract(TEXT, SCHEMA)
        agents = {r.headers["user-agent"].split("/")[0].removeprefix("Async") for r in llm_stub.requests}
        seen[on] = (triples(result), result.kg.entities, result.usage, result.cost_usd, result.llm_calls,
                    info.value.reason, len(llm_stub.requests), llm_stub.requests[1].body["messages"], agents)
    assert seen[False][-1] == {"OpenAI"} and seen[True][-1] == {"litellm"}
    assert seen[True][:-1] == seen[False][:-1]
    assert seen[True][3] > 0 and seen[True][4] == 2 and seen[True][5] == "request_error" and seen[True][6] == 3
