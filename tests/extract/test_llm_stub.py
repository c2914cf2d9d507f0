"""The LLM stub itself: OpenAI wire format, scripting, latency, request log, tool calls."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from tests.support.llm_stub import LLMStub, StubReply

MESSAGES = [{"role": "user", "content": "hello"}]


def post(stub: LLMStub, path: str = "/v1/chat/completions", **body) -> httpx.Response:
    return httpx.post(stub.url + path, json={"model": "stub-model", "messages": MESSAGES, **body}, timeout=10)


def test_content_reply_has_the_openai_shape(llm_stub):
    llm_stub.enqueue(StubReply.json({"a": 1}, usage={"prompt_tokens": 7, "completion_tokens": 3}))
    r = post(llm_stub)
    assert r.status_code == 200
    data = r.json()
    assert data["object"] == "chat.completion" and data["model"] == "stub-model"
    (choice,) = data["choices"]
    assert choice["message"] == {"role": "assistant", "content": '{"a": 1}'}
    assert choice["finish_reason"] == "stop"
    assert data["usage"] == {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}


def test_both_paths_and_request_log(llm_stub):
    llm_stub.enqueue(StubReply.text("one"), StubReply.text("two"))
    assert post(llm_stub, "/chat/completions").json()["choices"][0]["message"]["content"] == "one"
    assert post(llm_stub, "/v1/chat/completions", temperature=0).json()["choices"][0]["message"]["content"] == "two"
    first, second = llm_stub.requests
    assert (first.path, second.path) == ("/chat/completions", "/v1/chat/completions")
    assert second.body["temperature"] == 0
    assert second.prompt == "hello"
    llm_stub.reset()
    assert llm_stub.requests == [] and llm_stub.pending == 0


def test_errors_raw_bodies_and_an_empty_queue(llm_stub):
    llm_stub.enqueue(StubReply.error(429, "slow down", retry_after=1.5), StubReply.raw("<html>oops</html>", 502))
    r = post(llm_stub)
    assert r.status_code == 429 and r.headers["retry-after"] == "1.5"
    assert r.json()["error"] == {"message": "slow down", "type": "rate_limit_error", "code": 429, "param": None}
    r = post(llm_stub)
    assert r.status_code == 502 and r.text == "<html>oops</html>"
    r = post(llm_stub)
    assert r.status_code == 500 and "no scripted reply left" in r.json()["error"]["message"]


def test_tool_calls_reply():
    with LLMStub() as stub:
        stub.reply_tool_calls(
            [
                {"name": "query_extraction_density", "arguments": {"text": "x", "schema": {}}},
                {"name": "query_kg_storage", "arguments": '{"kg": {}}', "id": "call_fixed"},
            ]
        )
        data = post(stub, tools=[]).json()
    msg = data["choices"][0]["message"]
    assert data["choices"][0]["finish_reason"] == "tool_calls"
    assert msg["content"] is None
    first, second = msg["tool_calls"]
    assert first["type"] == "function" and first["function"]["name"] == "query_extraction_density"
    assert json.loads(first["function"]["arguments"]) == {"text": "x", "schema": {}}
    assert second["id"] == "call_fixed" and second["function"]["arguments"] == '{"kg": {}}'


def test_tool_calls_through_litellm(llm_stub):
    from kgr.extract.llm_client import load_litellm as _litellm

    llm_stub.reply_tool_calls([{"name": "query_extraction_density", "arguments": {"text": "t"}}])
    resp = _litellm().completion(
        model="openai/stub-model", api_base=llm_stub.base_url, api_key="k", messages=MESSAGES, max_retries=0
    )
    (call,) = resp.choices[0].message.tool_calls
    assert call.function.name == "query_extraction_density"
    assert json.loads(call.function.arguments) == {"text": "t"}


def test_fixed_latency_and_default_responder(llm_stub_factory):
    seen = []

    def responder(body):
        seen.append(body["messages"][-1]["content"])
        return StubReply.text(f"echo {len(seen)}")

    stub = llm_stub_factory(latency=0.2, default=responder)
    started = time.monotonic()
    r = post(stub)
    assert time.monotonic() - started >= 0.2
    assert r.json()["choices"][0]["message"]["content"] == "echo 1" and seen == ["hello"]


def test_delayed_reply_does_not_block_other_requests(llm_stub):
    llm_stub.enqueue(StubReply.sleep(5.0), StubReply.text("fast"))
    with pytest.raises(httpx.ReadTimeout):
        post_timeout = httpx.post(llm_stub.base_url + "/chat/completions", json={"messages": MESSAGES}, timeout=0.3)
        del post_timeout
    started = time.monotonic()
    assert post(llm_stub).json()["choices"][0]["message"]["content"] == "fast"
    assert time.monotonic() - started < 1.0


def test_bad_requests_are_400(llm_stub):
    r = httpx.post(llm_stub.base_url + "/chat/completions", json={"model": "m"}, timeout=5)
    assert r.status_code == 400 and "messages" in r.json()["error"]["message"]
    r = post(llm_stub, stream=True)
    assert r.status_code == 400
    assert httpx.get(llm_stub.base_url + "/models", timeout=5).json()["data"][0]["id"] == "stub-model"


def test_stop_releases_the_port():
    stub = LLMStub().start()
    url = stub.url
    stub.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "/v1/models", timeout=1)


def test_a_benchmark_stub_keeps_a_bounded_request_log(llm_stub_factory):
    """``keep_requests`` bounds the log (the command line keeps none), while every request is counted."""
    for keep, kept in ((2, ["c", "d"]), (0, [])):
        stub = llm_stub_factory(default=StubReply.text("{}"), keep_requests=keep)
        for tag in "abcd":
            assert post(stub, messages=[{"role": "user", "content": tag}]).status_code == 200
        assert stub.served == 4
        assert [r.messages[-1]["content"] for r in stub.requests] == kept
