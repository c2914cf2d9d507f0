"""Hostile names and JSON over HTTP against the real Neo4j (issue 31, items 7 and 8): a name NFKC
expands past the key index fails alone, with a reason, and the rest of the call is stored; a
reviewer name with controls is a 422 naming the field; a duplicate key in a body is a 400."""

from __future__ import annotations

import httpx
import pytest

pytestmark = pytest.mark.neo4j

BIG = "\ufdfa" * 1024  # 1,024 characters; 33,792 bytes once canonical


def test_storage_keeps_the_batch_around_a_name_nfkc_expands(http_server, graph):
    """Before: a 500 (the entity key overflowed Neo4j's index) and nothing of the call stored."""
    people = [f"Person {i}" for i in range(5)]
    kg = {"entities": {"Person": [*people[:2], BIG, *people[2:]], "Organization": ["Acme"]},
          "relations": {"WORKS_AT": [{"subject": p, "object": "Acme"} for p in [*people, BIG]]}}
    with httpx.Client(base_url=http_server.url, timeout=60) as c:
        r = c.post("/tools/query_kg_storage", json={"extracted_kg": kg, "source": "doc-nfkc"})
    assert r.status_code == 200, r.text
    st = r.json()["storage_status"]
    assert (st["entities_storage"]["stored_count"], st["entities_storage"]["failed_count"]) == (6, 1)
    assert (st["relations_storage"]["stored_count"], st["relations_storage"]["failed_count"]) == (5, 1)
    warning = next(w for w in r.json()["warnings"] if w.startswith("1 entities not stored"))
    assert "canonicalises (NFKC) to 33792 bytes of UTF-8, more than 4096" in warning
    assert graph.read("graph_counts")[0]["votes"] == 5


def test_a_key_typed_from_such_a_name_is_a_422(http_server):
    with httpx.Client(base_url=http_server.url, timeout=60) as c:
        r = c.post("/tools/entity_neighbourhood", json={"key": "Person:" + "\ufdfa" * 300})
    assert r.status_code in (404, 422), r.text  # never a 500
    assert r.json()["error"]["type"] in ("not_found", "validation_error")


@pytest.mark.parametrize("reviewer", ["eve\x1b[2J", "eve\nINFO forged", "eve\x00", "\u202eeve", "eve\u2028"])
def test_label_edges_refuses_a_reviewer_with_controls(http_server, reviewer):
    with httpx.Client(base_url=http_server.url, timeout=60) as c:
        r = c.post("/tools/label_edges", json={"labels": [{"key": "0" * 24, "label": False, "reviewer": reviewer}]})
    assert r.status_code == 422, r.text
    assert r.json()["error"]["field"] == "labels.0.reviewer" and "holds the character U+" in r.json()["error"]["message"]


def test_a_duplicate_key_in_a_body_is_refused(http_server):
    body = b'{"labels": [{"key": "000000000000000000000000", "label": true, "reviewer": "ada", "label": false}]}'
    with httpx.Client(base_url=http_server.url, timeout=60) as c:
        r = c.post("/tools/label_edges", content=body, headers={"content-type": "application/json"})
        deep = c.post("/tools/graph_status", content=b"[" * 100_000 + b"]" * 100_000,
                      headers={"content-type": "application/json"})
    assert r.status_code == 400 and "duplicate key 'label'" in r.json()["error"]["message"]
    assert deep.status_code == 400 and "nested deeper than the parser can follow" in deep.json()["error"]["message"]
