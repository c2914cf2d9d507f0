"""The LLM verifier end to end: litellm over real HTTP against the local OpenAI-compatible stub."""

from __future__ import annotations

import json
import re

import pytest

from kgr.errors import KgrExtractionError
from kgr.extract.llm_client import RetryPolicy
from kgr.extract.llm_prompt import BadOutput as _BadOutput
from kgr.extract.verify import Claim, LLMVerifier, parse_verdict, verifier_messages
from kgr.model.schema import KGSchema
from tests.support.llm_stub import StubReply

SCHEMA = KGSchema.model_validate(
    {
        "entity_types": {
            "Person": {"aliases": {"Charles Babbage": ["Babbage"]}},
            "Machine": {},
            "Place": {},
        },
        "relation_types": {
            "DESIGNED": {"domain": ["Person"], "range": ["Machine"], "description": "drew up the design of"},
            "BORN_IN": {"domain": ["Person"], "range": ["Place"], "functional": True},
        },
    }
)
TEXT = "Charles Babbage designed the Analytical Engine. He was born in London."
FAST = RetryPolicy(max_attempts=3, initial_backoff=0.01, max_backoff=0.05, jitter=0.0)


def claim(obj: str = "Analytical Engine", relation: str = "DESIGNED", *, text: str = TEXT, key: str = "e1",
          chunk_id: str = "c1") -> Claim:
    object_type = {"DESIGNED": "Machine", "BORN_IN": "Place"}[relation]
    return Claim(edge_key=key, subject="Charles Babbage", subject_type="Person", relation=relation, object=obj,
                 object_type=object_type, chunk_id=chunk_id, chunk_text=text)


def make(stub, **kw) -> LLMVerifier:
    kw.setdefault("retry", FAST)
    kw.setdefault("timeout", 5.0)
    kw.setdefault("concurrency", 1)
    return LLMVerifier(kw.pop("model", "openai/stub-model"), api_base=stub.base_url, api_key="stub-key", **kw)


# -- answers and the request ----------------------------------------------------------------------------


def test_supports_and_contradicts_over_http(llm_stub):
    llm_stub.enqueue(
        StubReply.json({"answer": "supports", "quote": "Charles Babbage designed the Analytical Engine."}),
        StubReply.json({"answer": "contradicts", "quote": "He was born in London."}),
    )
    report = make(llm_stub).verify([claim(), claim("Paris", "BORN_IN", key="e2")], SCHEMA)
    first, second = report.verdicts
    assert (first.edge_key, first.chunk_id, first.answer, first.quote, first.error) == (
        "e1", "c1", "supports", "Charles Babbage designed the Analytical Engine.", None)
    assert (second.edge_key, second.answer, second.quote) == ("e2", "contradicts", "He was born in London.")
    assert {v.verifier for v in report.verdicts} == {"llm:openai/stub-model"}
    assert (report.calls, report.failures) == (2, 0)


def test_the_request_carries_the_triple_the_types_the_rule_and_the_chunk(llm_stub):
    llm_stub.enqueue(StubReply.json({"answer": "silent", "quote": ""}))
    make(llm_stub).verify([claim("Paris", "BORN_IN")], SCHEMA)
    (req,) = llm_stub.requests
    assert req.body["model"] == "stub-model"
    assert req.headers["authorization"] == "Bearer stub-key"
    assert req.body["response_format"] == {"type": "json_object"}
    assert req.body["temperature"] == 0
    system, user = req.messages
    assert system["role"] == "system" and user["role"] == "user"
    content = system["content"]
    assert 'Claim: "Charles Babbage" (a Person; also written: "Babbage") -[BORN_IN]-> "Paris" (a Place)' in content
    assert "BORN_IN connects Person to Place; functional: a subject has at most one object." in content
    assert 'Answer "supports" only if the text states the claim' in content
    assert 'Answer "contradicts" only if the text states the opposite or an incompatible fact' in content
    assert '{"answer": "supports" | "contradicts" | "silent"' in content
    assert TEXT in user["content"] and TEXT not in content
    assert req.messages == verifier_messages(claim("Paris", "BORN_IN"), SCHEMA)


# -- lenient reading and repair -----------------------------------------------------------------------------


def test_fenced_json_is_read(llm_stub):
    llm_stub.enqueue(StubReply.text('```json\n{"answer": "supports", "quote": "Charles Babbage designed it."}\n```'))
    report = make(llm_stub).verify([claim()], SCHEMA)
    assert [(v.answer, v.quote) for v in report.verdicts] == [("supports", "Charles Babbage designed it.")]
    assert report.calls == 1 and len(llm_stub.requests) == 1


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        ('{"answer": "SUPPORTED", "quote": "q"}', "supports"),
        ('{"answer": "yes", "quote": "q"}', "supports"),
        ('{"Answer": "Supports."}', "supports"),
        ('{"verdict": "refutes", "quote": "q"}', "contradicts"),
        ('{"answer": "no"}', "contradicts"),
        ('{"answer": "Contradiction"}', "contradicts"),
        ('{"answer": "unknown", "quote": ""}', "silent"),
        ('{"answer": "Not mentioned"}', "silent"),
        ('Here you go: {"answer": "silent", "quote": ""} {"answer": "supports"}', "silent"),
        ("SUPPORTED", "supports"),
    ],
)
def test_synonyms_and_case_are_accepted(llm_stub, reply, answer):
    llm_stub.enqueue(StubReply.text(reply))
    report = make(llm_stub).verify([claim()], SCHEMA)
    assert [v.answer for v in report.verdicts] == [answer]
    assert (report.calls, report.failures) == (1, 0)


def test_a_garbage_reply_gets_one_repair_request(llm_stub):
    llm_stub.enqueue(
        StubReply.text("I think the text is about computers."),
        StubReply.json({"answer": "supports", "quote": "Charles Babbage designed the Analytical Engine."}),
    )
    report = make(llm_stub).verify([claim()], SCHEMA)
    assert [v.answer for v in report.verdicts] == ["supports"]
    assert report.verdicts[0].error is None
    assert (report.calls, report.failures) == (2, 0)
    first, second = llm_stub.requests
    assert second.messages[:2] == first.messages
    assert second.messages[2] == {"role": "assistant", "content": "I think the text is about computers."}
    repair = second.messages[3]
    assert repair["role"] == "user"
    assert repair["content"].startswith("Your reply could not be used: no JSON object in the reply.")
    assert '{"answer": "supports" | "contradicts" | "silent", "quote": "..."}' in repair["content"]


def test_garbage_twice_is_silent_with_an_error_and_counted(llm_stub):
    llm_stub.enqueue(
        StubReply.text("no idea, sorry"),
        StubReply.text('{"answer": "perhaps"}'),
        StubReply.json({"answer": "supports", "quote": "Charles Babbage designed the Analytical Engine."}),
    )
    report = make(llm_stub).verify([claim(), claim(key="e2")], SCHEMA)
    bad, good = report.verdicts
    assert (bad.edge_key, bad.answer, bad.quote) == ("e1", "silent", "")
    assert bad.error == ('verifier reply still invalid after one repair request (openai/stub-model): '
                         '"answer" must be "supports", "contradicts" or "silent", got "perhaps"')
    assert (good.edge_key, good.answer, good.error) == ("e2", "supports", None)
    assert (report.calls, report.failures) == (3, 1)


def test_parse_verdict_rejects_what_it_cannot_read():
    for content, problem in [
        (None, "the reply was empty"),
        ("  ", "the reply was empty"),
        ("the claim is plausible", "no JSON object in the reply"),
        ('{"quote": "x"}', 'the JSON object has no "answer"'),
        ('{"answer": 3}', '"answer" must be'),
        ('{"answer": "not supported"}', '"answer" must be'),
    ]:
        with pytest.raises(_BadOutput, match=re.escape(problem)):
            parse_verdict(content)
    assert parse_verdict('{"answer": "supports", "quote": 7}') == ("supports", "")
    assert parse_verdict(json.dumps({"answer": "supports", "quote": "x" * 400}))[1] == "x" * 299 + "…"


# -- provider errors ----------------------------------------------------------------------------------------


def test_rate_limit_then_success_is_retried(llm_stub):
    llm_stub.enqueue(StubReply.error(429, "slow down", retry_after=0), StubReply.json({"answer": "supports"}))
    report = make(llm_stub).verify([claim()], SCHEMA)
    assert [v.answer for v in report.verdicts] == ["supports"]
    assert (report.calls, report.failures) == (2, 0)
    first, second = llm_stub.requests
    assert first.body == second.body  # the same request, retried


def test_persistent_rate_limits_make_that_claim_silent(llm_stub):
    llm_stub.enqueue(*[StubReply.error(429, "quota exceeded")] * 3, StubReply.json({"answer": "contradicts"}))
    report = make(llm_stub).verify([claim(), claim(key="e2")], SCHEMA)
    failed, answered = report.verdicts
    assert failed.answer == "silent"
    assert failed.error is not None and "rate limited (HTTP 429) on each of 3 attempt(s)" in failed.error
    assert answered.answer == "contradicts"
    assert (report.calls, report.failures) == (4, 1)


def test_authentication_errors_raise(llm_stub):
    llm_stub.enqueue(StubReply.error(401, "invalid api key"), StubReply.json({"answer": "supports"}))
    with pytest.raises(KgrExtractionError, match="HTTP 401") as info:
        make(llm_stub).verify([claim(), claim(key="e2")], SCHEMA)
    assert "\n" not in str(info.value) and "stub-key" not in str(info.value)
    assert len(llm_stub.requests) == 1  # not retried, and the next claim is not sent


def test_bad_requests_raise_under_concurrency_too(llm_stub_factory):
    stub = llm_stub_factory(default=StubReply.error(400, "context length exceeded"))
    with pytest.raises(KgrExtractionError, match="HTTP 400"):
        make(stub, concurrency=4).verify([claim(key=f"e{i}") for i in range(6)], SCHEMA)


# -- accounting --------------------------------------------------------------------------------------------


def test_usage_is_summed_and_an_unpriced_model_has_no_cost(llm_stub):
    llm_stub.enqueue(
        StubReply.json({"answer": "supports"}, usage={"prompt_tokens": 100, "completion_tokens": 10}),
        StubReply.text("garbage", usage={"prompt_tokens": 40, "completion_tokens": 3}),
        StubReply.json({"answer": "silent"}, usage={"prompt_tokens": 60, "completion_tokens": 5}),
    )
    report = make(llm_stub).verify([claim(), claim(key="e2")], SCHEMA)
    assert (report.usage.prompt_tokens, report.usage.completion_tokens, report.usage.total_tokens) == (200, 18, 218)
    assert report.calls == 3
    assert report.cost_usd is None and report.unpriced_calls == 3  # litellm cannot price "stub-model"


def test_given_prices_give_a_cost(llm_stub):
    llm_stub.enqueue(
        StubReply.json({"answer": "supports"}, usage={"prompt_tokens": 1000, "completion_tokens": 100}),
        StubReply.json({"answer": "silent"}, usage={"prompt_tokens": 500, "completion_tokens": 50}),
    )
    verifier = make(llm_stub, model="openai/stub-verifier-priced", prices=(1e-6, 2e-6))
    report = verifier.verify([claim(), claim(key="e2")], SCHEMA)
    assert report.cost_usd == pytest.approx(1500 * 1e-6 + 150 * 2e-6)
    assert report.unpriced_calls == 0


# -- concurrency ------------------------------------------------------------------------------------------


def test_verdicts_keep_the_claims_order_under_concurrency(llm_stub_factory):
    n = 8

    def responder(body):
        index = int(re.search(r"chunk number (\d+)", body["messages"][-1]["content"]).group(1))
        answer = "supports" if index % 2 == 0 else "contradicts"
        # later claims answer first
        return StubReply.json({"answer": answer, "quote": f"chunk number {index}"}, delay=0.03 * (n - index))

    stub = llm_stub_factory(default=responder)
    claims = [claim(text=f"This is chunk number {i}.", key=f"e{i}", chunk_id=f"c{i}") for i in range(n)]
    report = make(stub, concurrency=n).verify(claims, SCHEMA)
    assert [v.edge_key for v in report.verdicts] == [f"e{i}" for i in range(n)]
    assert [v.chunk_id for v in report.verdicts] == [f"c{i}" for i in range(n)]
    assert [v.quote for v in report.verdicts] == [f"chunk number {i}" for i in range(n)]
    assert [v.answer for v in report.verdicts] == ["supports", "contradicts"] * (n // 2)
    assert stub.max_inflight > 1
    assert (report.calls, report.failures) == (n, 0)


def test_concurrency_is_bounded(llm_stub_factory):
    stub = llm_stub_factory(default=StubReply.json({"answer": "silent"}, delay=0.05))
    report = make(stub, concurrency=3).verify([claim(key=f"e{i}") for i in range(9)], SCHEMA)
    assert len(report.verdicts) == 9
    assert stub.max_inflight <= 3


def test_no_claims_no_requests(llm_stub):
    report = make(llm_stub).verify([], SCHEMA)
    assert report.verdicts == [] and report.calls == 0 and llm_stub.requests == []
