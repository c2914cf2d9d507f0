"""The JSON API fuzzed from its own OpenAPI document with schemathesis.

Every operation of ``/openapi.json`` (the six tools, the helpers, /tools, /health, /metrics) gets
schema-valid and schema-invalid requests; every response must be a documented status with a body
matching its schema, never a 5xx, invalid data must be rejected and valid data accepted. The
server runs on the test database, so storage calls really write (random entities and votes).
Bounded: at most 25 examples per operation and a per-example deadline (30 s: a hang, not a slow
shared machine; the server's own request deadlines are tested in test_slow_clients).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig

import httpx

from kgr.litellm_offline import load_litellm
from kgr.server.app import BackgroundServer
from kgr.server.openapi import openapi_document
from kgr.server.security import ServerConfig

pytestmark = pytest.mark.neo4j


@pytest.fixture(scope="module")
def fuzz_server(_session_graph) -> Iterator[BackgroundServer]:
    # A slice asked for with a model name counts tokens with litellm, whose first import costs 3 s
    # on a quiet machine and 15-50 s on a loaded one: imported here, it is not charged to the first
    # fuzzed call's time limit (a 504 would be a timing artefact, not a conformance failure).
    load_litellm("the fuzzed slices' token counter")
    with BackgroundServer(ServerConfig(port=0, request_timeout=20), graph=_session_graph) as srv:
        yield srv


# The document the server serves (checked below), loaded at import: schemathesis' lazy fixture
# loader does not work with the installed pytest, and the document needs no running server.
DOCUMENT = openapi_document(token_required=False)
# schemathesis' defaults, plus 413: a body over the size limit is rejected before it is parsed
CONFIG = SchemathesisConfig.from_dict({"checks": {"negative_data_rejection": {"expected-statuses": [
    "400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429", "5xx"]}}})
schema = schemathesis.openapi.from_dict(DOCUMENT, config=CONFIG)


def test_served_document_is_the_fuzzed_one(fuzz_server):
    assert httpx.get(fuzz_server.url + "/openapi.json", timeout=30).json() == DOCUMENT


@schema.parametrize()
@settings(max_examples=15, deadline=30_000, suppress_health_check=list(HealthCheck), derandomize=True)
def test_api_conforms_to_its_openapi(case, fuzz_server):
    response = case.call_and_validate(base_url=fuzz_server.url, timeout=30)
    assert response.status_code < 500


def test_fuzzing_hit_valid_and_invalid_paths_without_5xx(fuzz_server):
    """Runs after the fuzzing above (same module-scoped server): both outcomes were exercised."""
    counts = httpx.get(fuzz_server.url + "/metrics", timeout=30).json()["responses_by_status"]
    print("fuzz responses by status:", counts)
    assert counts.get("200", 0) > 100 and counts.get("422", 0) > 20, counts
    assert not [s for s in counts if s.startswith("5")], counts
