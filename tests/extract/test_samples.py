"""The committed annotated samples (``tests/data/extract/sample*.jsonl``) are well-formed gold.

``scripts/bench_extract.py`` scores the offline extractor against these files, so a triple whose
types break the schema, or a sentence that appears in two samples (a blind sample that repeats a
tuning sentence is not blind), would make its precision and recall figures wrong without any error.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "data" / "extract"
SAMPLES = sorted(DATA.glob("sample*.jsonl"))
SPLITS = {"tune", "heldout", "blind"}


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_there_are_at_least_six_samples() -> None:
    assert len(SAMPLES) >= 6, [p.name for p in SAMPLES]


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_every_triple_fits_the_schema(path: Path) -> None:
    schema = json.loads((DATA / "schema.json").read_text(encoding="utf-8"))
    relations = schema["relation_types"]
    rows = _rows(path)
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), "duplicate sentence ids"
    bad = []
    for r in rows:
        assert r["text"].strip() and r["kind"] and r.get("split", "tune") in SPLITS, r["id"]
        for t in r["triples"]:
            rel = relations.get(t["relation"])
            if (rel is None or t["subject_type"] not in rel["domain"] or t["object_type"] not in rel["range"]
                    or not t["subject"].strip() or not t["object"].strip()):
                bad.append((r["id"], t["subject"], t["relation"], t["object"]))
    assert not bad, bad


def test_no_sentence_is_in_two_samples() -> None:
    seen: dict[str, str] = {}
    repeated = []
    for path in SAMPLES:
        for r in _rows(path):
            text = " ".join(r["text"].split())
            if text in seen and seen[text] != path.name:
                repeated.append((path.name, seen[text], text[:60]))
            seen.setdefault(text, path.name)
    assert not repeated, repeated
