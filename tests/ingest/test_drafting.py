"""The per-chunk drafting loop: which tools a round runs, and its CPU steps taking turns on the loop."""

from __future__ import annotations

import ast
import asyncio
import functools
import time
from pathlib import Path

import pytest

import kgr.ingest.drafting as drafting
from kgr.extract import RulesExtractor
from kgr.ingest.chunking import chunk_text
from kgr.ingest.config import IngestConfig
from kgr.ingest.drafting import ChunkDrafter, Drafted
from kgr.model.schema import load_schema
from kgr.tools.context import ToolContext
from kgr.tools.registry import call_tool

SCHEMA = load_schema(Path(__file__).resolve().parents[2] / "examples" / "schema.json")
TEXT = "Charles Babbage was born in London. Charles Babbage designed the Difference Engine."


class AsyncRules(RulesExtractor):
    """The rules extractor, awaited on the loop (as the LLM extractor is)."""

    async def aextract(self, chunk_text, schema, *, guidance=None):
        await asyncio.sleep(0)
        return self.extract(chunk_text, schema, guidance=guidance)


def _chunks(n: int):
    return [next(chunk_text(f"Record {i}. {TEXT}", f"doc-{i}")) for i in range(n)]


@pytest.mark.neo4j
def test_the_last_round_runs_only_the_quality_tool(graph):
    drafter = ChunkDrafter(graph, SCHEMA, RulesExtractor(), IngestConfig(max_rounds=1, concurrency=2), time.time())
    try:
        chunk = _chunks(1)[0]
        out = asyncio.run(drafter.draft(chunk))
    finally:
        drafter.close()
    assert isinstance(out, Drafted)
    # density, coverage and feedback only decide whether another round runs: with none left, they do not run
    assert out.outcome.tool_calls == {"query_quality_metrics": 1, "query_entity_disambiguation": 1}
    kg = RulesExtractor().extract(chunk.text, SCHEMA).kg
    quality = call_tool("query_quality_metrics", {
        "text": chunk.text, "schema": {"entity_schema": sorted(SCHEMA.entity_types),
                                       "relation_schema": sorted(SCHEMA.relation_types)},
        "extracted_kg": kg.model_dump()}, context=ToolContext(schema=SCHEMA))
    assert out.quality == pytest.approx(quality["overall_score"] / 100.0)


@pytest.mark.neo4j
def test_chunks_cpu_steps_take_turns_one_per_loop_iteration(graph, monkeypatch):
    """A probe that yields once per iteration (as an LLM reply's callback would) never waits behind
    more than one tool step, although eight chunks have their tool steps ready at the same moment."""
    steps = 0

    def counting(fn):
        @functools.wraps(fn)
        def count(params, *, context):
            nonlocal steps
            steps += 1
            return fn(params, context=context)
        return count

    # every tool but disambiguation, which runs in the lookup pool, off the loop
    for name in ("query_extraction_density", "query_quality_metrics", "query_iterative_feedback",
                 "query_coverage_feedback"):
        monkeypatch.setattr(drafting, name, counting(getattr(drafting, name)))
    drafter = ChunkDrafter(graph, SCHEMA, AsyncRules(), IngestConfig(max_rounds=2, concurrency=8), time.time())

    async def main() -> tuple[list[int], list]:
        tasks = [asyncio.create_task(drafter.draft(c)) for c in _chunks(8)]
        seen, last = [], 0
        while not all(t.done() for t in tasks):
            await asyncio.sleep(0)
            seen.append(steps - last)
            last = steps
        return seen, await asyncio.gather(*tasks)

    try:
        seen, results = asyncio.run(main())
    finally:
        drafter.close()
    assert all(isinstance(r, Drafted) for r in results)
    assert steps == sum(sum(n for name, n in r.outcome.tool_calls.items()
                            if name != "query_entity_disambiguation") for r in results) >= 16
    assert max(seen) == 1
    # every tool step and every chunk's reply and rows took a turn
    assert drafter._lane.released >= steps + 2 * len(results)  # noqa: SLF001


class WithAnExpandingName(RulesExtractor):
    """The rules extractor's answer, plus a person whose name NFKC expands past the key index."""

    BIG = "\ufdfa" * 1024

    def extract(self, chunk_text, schema, *, guidance=None):
        res = super().extract(chunk_text, schema, guidance=guidance)
        kg = res.kg.model_copy(deep=True)
        kg.entities["Person"].append(self.BIG)
        kg.relations["BORN_IN"].append(kg.relations["BORN_IN"][0].model_copy(update={"subject": self.BIG}))
        return res.model_copy(update={"kg": kg})


@pytest.mark.neo4j
def test_a_name_nfkc_expands_is_rejected_with_its_reason_and_the_chunk_goes_on(graph):
    """Issue 31, item 7, in ingestion: the name is a rejection saying why (not "no letters or
    digits"), and the chunk's other entities and assertions are staged as usual."""
    drafter = ChunkDrafter(graph, SCHEMA, WithAnExpandingName(), IngestConfig(max_rounds=1), time.time())
    try:
        out = asyncio.run(drafter.draft(_chunks(1)[0]))
    finally:
        drafter.close()
    assert sorted((a.relation, a.subject, a.object) for a in out.assertions) == [
        ("BORN_IN", "Charles Babbage", "London"), ("DESIGNED", "Charles Babbage", "Difference Engine")]
    assert {n for _, n in out.entities} == {"Charles Babbage", "London", "Difference Engine"}
    reasons = [r.reason for r in out.outcome.rejections if r.item.startswith("\ufdfa")]
    assert len(reasons) == 2 and all("canonicalises (NFKC) to 33792 bytes" in r for r in reasons), reasons


def test_the_loop_calls_the_tools_as_typed_functions():
    """No module of the ingestion package looks a tool up by name (``run_tool("query_…", dict)``):
    it calls the tool functions with their input models, so go-to-definition follows them."""
    by_name = []
    for path in sorted(Path(drafting.__file__).parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                named = any(isinstance(a, ast.Constant) and str(a.value).startswith("query_") for a in node.args)
                if callee in {"run_tool", "call_tool", "get_tool"} or named:
                    by_name.append(f"{path.name}:{node.lineno}")
            if isinstance(node, ast.ImportFrom) and any(a.name in {"run_tool", "call_tool"} for a in node.names):
                by_name.append(f"{path.name}:{node.lineno}")
    assert not by_name, by_name
