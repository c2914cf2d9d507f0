"""FailFast: which finished chunks stop a job (kgr/ingest/fail_fast.py). Pure: no database."""

from __future__ import annotations

import pytest

from kgr.errors import KgrExtractionError
from kgr.ingest.fail_fast import FailFast
from kgr.ingest.report import ChunkFailure, ChunkOutcome


def _out(kind: str | None = None, status: int | None = None) -> ChunkOutcome:
    failure = None if kind is None else ChunkFailure(chunk_id="c", document_id="d", kind=kind, reason="r",
                                                     http_status=status)
    return ChunkOutcome(chunk_id="c", failure=failure)


def test_refusals_before_any_success_stop_the_job_at_the_threshold():
    ff = FailFast(after=3)
    ff.observe(_out("request_error", 401))
    ff.observe(_out("timeout"))  # neither counts nor resets
    ff.observe(_out("credentials"))  # a request the client would not send (no key)
    with pytest.raises(KgrExtractionError, match="refused the first 3 chunks .HTTP 403"):
        ff.observe(_out("request_error", 403))


@pytest.mark.parametrize(("kind", "status", "fix"), [
    ("request_error", 401, "rejected the API key"), ("request_error", 403, "may not use this model"),
    ("request_error", 404, "check --model and --api-base"), ("credentials", None, "no usable API key")])
def test_by_default_the_first_refusal_stops_the_job_with_its_fix(kind, status, fix):
    with pytest.raises(KgrExtractionError, match=rf"^stopped: the LLM refused the first chunk .*{fix}.*re-run"):
        FailFast().observe(_out(kind, status))


@pytest.mark.parametrize("other", [("server_error", 500), ("rate_limited", 429), ("request_error", 400),
                                   ("request_error", None), ("invalid_output", None)])
def test_other_failures_never_stop_the_job(other):
    ff = FailFast(after=2)
    for _ in range(10):
        ff.observe(_out(*other))
    assert ff.refused == 0


def test_after_a_success_refusals_are_ordinary_failures():
    ff = FailFast(after=2)
    ff.observe(_out("request_error", 401))
    ff.observe(_out())
    for _ in range(10):
        ff.observe(_out("request_error", 401))
    assert ff.succeeded and ff.refused == 1
