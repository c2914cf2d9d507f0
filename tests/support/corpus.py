"""Generated corpora for ingestion tests, and a stub LLM that reads like the rules extractor.

``generate_corpus`` writes one-chunk JSONL documents of "<subject> <trigger> <object>." sentences
whose names cannot be confused with each other, so disambiguation cannot depend on the order chunks
are processed in: any two correct ingests of such a corpus end in the same graph.
``rules_reply(schema)`` is an :class:`~tests.support.llm_stub.LLMStub` default that answers each
extraction request with what the offline rules extractor finds in the request's text.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from kgr.extract.rules import RulesExtractor
from kgr.model.canonical import canonical_name
from kgr.model.schema import KGSchema
from kgr.tools.disambiguation import string_similarity
from tests.support.llm_stub import StubReply

__all__ = ["distinct_names", "generate_corpus", "rules_reply"]


def distinct_names(schema: KGSchema) -> dict[str, list[str]]:
    """Gazetteer names that belong to one type only and are not near-duplicates of each other, so
    that disambiguation against the store cannot depend on the order chunks are processed in."""
    types_of: dict[str, set[str]] = {}
    for t, spec in schema.entity_types.items():
        for n in [*spec.names, *(a for al in spec.aliases.values() for a in al)]:
            types_of.setdefault(canonical_name(n), set()).add(t)
    out: dict[str, list[str]] = {}
    for t, spec in schema.entity_types.items():
        keep: list[str] = []
        for n in spec.names:
            if types_of[canonical_name(n)] == {t} and all(string_similarity(n, m) < 0.7 for m in keep):
                keep.append(n)
        out[t] = keep
    return out


def generate_corpus(path: Path, schema: KGSchema, n_docs: int, *, seed: int = 7, sentences: int = 5) -> Path:
    """A JSONL corpus of ``n_docs`` one-chunk documents, each a few "<subject> <trigger> <object>."
    sentences built from the schema's names and triggers (facts repeat, so votes accumulate)."""
    names = distinct_names(schema)
    rels = [(r, s) for r, s in sorted(schema.relation_types.items()) if s.domain and s.range and s.triggers]
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n_docs):
            parts = [f"Record {i}."]
            for _ in range(sentences):
                rel, spec = rng.choice(rels)
                s, o = rng.choice(names[rng.choice(spec.domain)]), rng.choice(names[rng.choice(spec.range)])
                trigger = next(t for t in spec.triggers if not t.endswith(" by"))
                if s != o:
                    parts.append(f"{s} {trigger} {o}.")
            fh.write(json.dumps({"id": f"doc-{i:04d}", "text": " ".join(parts)}) + "\n")
    return path


def rules_reply(schema: KGSchema, **kw: Any):  # noqa: ANN201 - a function of the request body
    """A stub default: the rules extractor's graph of the text between the prompt's ``\"\"\"`` lines."""
    rules = RulesExtractor()

    def answer(body: dict[str, Any]) -> StubReply:
        user = body["messages"][-1]["content"]
        text = user.split('"""\n', 1)[1].rsplit('\n"""', 1)[0]
        return StubReply.json(rules.extract(text, schema).kg.model_dump(), **kw)

    return answer
