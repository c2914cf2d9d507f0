"""Batch ingestion: documents → chunks → tool-driven extraction loop → staging → promotion.

Per chunk, following Agentic-KGR's protocol (Appendix A.4):

1. **extract** with the configured extractor (rules or LLM);
2. **density** (mandatory): while ``needs_more_extraction`` and rounds < ``max_rounds``,
   re-extract with the density tool's recommendations as guidance (results are merged);
3. **coverage** and **quality**, then **iterative feedback**: continue (another guided round) or stop;
4. **disambiguation** against Neo4j (its ``final_kg`` is what gets stored);
5. **storage**: the chunk's relations are staged as votes whose source is the chunk id, in ONE
   transaction with the chunk's ``processed_at`` mark and its MENTIONS, so a chunk is processed
   exactly when its votes are in the graph. Types outside the schema are staged as
   ``(:SchemaProposal)`` votes; domain/range violations are left to the promotion policy.

Then promotion rounds run every ``promote_every`` chunks and at the end.

Resumability: chunk ids are content hashes recorded in Neo4j; chunks already processed are
skipped, so a killed job re-run finishes with the same graph as an uninterrupted one.
Memory stays bounded: documents and chunks are streamed, and at most ``2 × concurrency`` chunks
are in flight.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kgr.errors import KgrError, KgrNeo4jUnavailable
from kgr.extract.base import ExtractionResult, Extractor
from kgr.ingest.chunking import Chunk, ChunkingConfig, iter_chunks
from kgr.ingest.loaders import LoadIssue, iter_documents
from kgr.model.canonical import entity_key
from kgr.model.decisions import RoundSummary
from kgr.model.kg import ExtractedKG, RelationPair
from kgr.model.schema import KGSchema
from kgr.model.triples import TripleAssertion
from kgr.store import provenance
from kgr.store.connection import Graph, Tx
from kgr.store.staging import StageReport, check_assertion, write_batch
from kgr.tools.context import ToolContext
from kgr.tools.registry import call_tool

__all__ = ["IngestConfig", "IngestReport", "ChunkOutcome", "ingest", "make_extractor"]


class IngestConfig(BaseModel):
    """Every ingestion option, with its default."""

    model_config = ConfigDict(extra="forbid")

    extractor: Literal["rules", "llm"] = "rules"
    model: str | None = Field(None, description="litellm model name (llm extractor)")
    api_base: str | None = Field(None, description="OpenAI-compatible base URL (llm extractor)")
    concurrency: int = Field(4, ge=1, le=256, description="chunks processed at once")
    chunking: ChunkingConfig = Field(default_factory=ChunkingConfig)
    max_rounds: int = Field(3, ge=1, le=20, description="extraction rounds per chunk (density/feedback loop)")
    similarity_threshold: float = Field(0.8, ge=0, le=1, description="disambiguation threshold")
    promote_every: int = Field(0, ge=0, description="run a promotion round every N chunks (0 = only at the end)")
    promote: bool = True
    policy: Literal["gedig", "quorum"] = "gedig"


class ChunkFailure(BaseModel):
    chunk_id: str
    document_id: str
    reason: str


class ChunkOutcome(BaseModel):
    chunk_id: str
    rounds: int
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    tool_calls: dict[str, int]
    staged: StageReport
    proposals: int
    rejected: int


class IngestReport(BaseModel):
    """The final report of ``kgr ingest`` (``--json`` prints it)."""

    documents: int = 0
    chunks: int = 0
    chunks_skipped: int = Field(0, description="already processed in an earlier run")
    chunks_processed: int = 0
    chunks_failed: list[ChunkFailure] = Field(default_factory=list)
    load_issues: list[str] = Field(default_factory=list)
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    tool_calls: dict[str, int] = Field(default_factory=dict)
    rounds_per_chunk: dict[str, float] = Field(default_factory=dict, description="mean, max, histogram")
    triples_staged: int = 0
    new_votes: int = 0
    new_edges: int = 0
    schema_proposals: int = 0
    rejected_items: int = 0
    promotion: list[RoundSummary] = Field(default_factory=list)
    seconds: float = 0.0

    def render(self) -> str:
        lines = [
            f"documents {self.documents}, chunks {self.chunks} ({self.chunks_processed} processed, "
            f"{self.chunks_skipped} already done, {len(self.chunks_failed)} failed) in {self.seconds:.1f} s",
            f"triples staged {self.triples_staged}: {self.new_votes} new votes, {self.new_edges} new edges; "
            f"{self.schema_proposals} schema proposals, {self.rejected_items} rejected items",
            f"LLM calls {self.llm_calls}, tokens {self.prompt_tokens}+{self.completion_tokens}, cost ${self.cost_usd:.4f}",
            "tool calls: " + ", ".join(f"{k} {v}" for k, v in sorted(self.tool_calls.items())),
            "rounds per chunk: " + ", ".join(f"{k} {v:g}" for k, v in self.rounds_per_chunk.items()),
        ]
        for p in self.promotion:
            lines.append(f"promotion v{p.version}: {p.promoted} promoted, {p.held} held, {p.rejected} rejected "
                         f"of {p.candidates}")
        for f in self.chunks_failed[:20]:
            lines.append(f"failed chunk {f.chunk_id[:12]} ({f.document_id[:12]}): {f.reason}")
        return "\n".join(lines)


def make_extractor(config: IngestConfig) -> Extractor:
    """The configured extractor: ``rules`` (offline, default) or ``llm`` (litellm)."""
    if config.extractor == "llm":
        from kgr.errors import KgrValidationError
        from kgr.extract.llm import LLMExtractor

        if not config.model:
            raise KgrValidationError("the llm extractor needs --model", field="model")
        return LLMExtractor(model=config.model, api_base=config.api_base)
    from kgr.extract.rules import RulesExtractor

    return RulesExtractor()


def _merge(a: ExtractedKG, b: ExtractedKG) -> ExtractedKG:
    ents = {t: list(dict.fromkeys([*a.entities.get(t, []), *b.entities.get(t, [])]))
            for t in dict.fromkeys([*a.entities, *b.entities])}
    rels: dict[str, list[RelationPair]] = {}
    for t in dict.fromkeys([*a.relations, *b.relations]):
        seen: dict[tuple[str, str], RelationPair] = {}
        for r in [*a.relations.get(t, []), *b.relations.get(t, [])]:
            seen.setdefault((r.subject, r.object), r)
        rels[t] = list(seen.values())
    return ExtractedKG(entities=ents, relations=rels)


def _tool_schema(schema: KGSchema) -> dict[str, list[str]]:
    return {"entity_schema": sorted(schema.entity_types), "relation_schema": sorted(schema.relation_types)}


def _assertions(kg: ExtractedKG, schema: KGSchema, source: str) -> tuple[list[TripleAssertion], int]:
    """The relations of ``kg`` as assertions from ``source`` (endpoint types looked up in entities)."""
    out: list[TripleAssertion] = []
    bad = 0
    for rel, pairs in kg.relations.items():
        spec = schema.relation_types.get(rel)
        for p in pairs:
            st, ot = kg.entity_types_of(p.subject), kg.entity_types_of(p.object)
            if spec is not None:  # prefer the declared domain/range when a name has several types
                st = [t for t in st if not spec.domain or t in spec.domain] or st
                ot = [t for t in ot if not spec.range or t in spec.range] or ot
            if not st or not ot:
                bad += 1
                continue
            try:
                a = TripleAssertion(subject=p.subject, subject_type=st[0], relation=rel, object=p.object,
                                    object_type=ot[0], source=source)
                check_assertion(a, schema)
            except (KgrError, ValueError):
                bad += 1
                continue
            out.append(a)
    return out, bad


class _Loop:
    """The per-chunk extraction loop (thread-safe: no shared mutable state but the graph driver)."""

    def __init__(self, graph: Graph, schema: KGSchema, extractor: Extractor, config: IngestConfig):
        self.graph, self.schema, self.extractor, self.config = graph, schema, extractor, config
        self.ctx = ToolContext(graph=graph, schema=schema)

    def run(self, chunk: Chunk) -> ChunkOutcome:
        calls: Counter[str] = Counter()
        text, tschema = chunk.text, _tool_schema(self.schema)
        kg = ExtractedKG()
        history: list[dict] = []
        feedback: list[str] = []
        guidance: list[str] | None = None
        usage = [0, 0, 0, 0.0]  # llm calls, prompt, completion, cost
        proposals: list[tuple[str, str, str]] = []
        rejected = 0
        rounds = 0

        def tool(name: str, payload: dict[str, Any]) -> dict[str, Any]:
            calls[name] += 1
            return call_tool(name, payload, context=self.ctx)

        while True:
            rounds += 1
            res: ExtractionResult = self.extractor.extract(text, self.schema, guidance=guidance)
            usage[0] += res.llm_calls
            usage[1] += res.usage.prompt_tokens
            usage[2] += res.usage.completion_tokens
            usage[3] += res.cost_usd
            rejected += len(res.rejected)
            for t, names in res.proposed_types.entities.items():
                proposals.append(("entity", t, names[0] if names else ""))
            for r, rels in res.proposed_types.relations.items():
                proposals.append(("relation", r, f"{rels[0].subject} -> {rels[0].object}" if rels else ""))
            kg = _merge(kg, res.kg)
            base = {"text": text, "schema": tschema, "extracted_kg": kg.model_dump()}
            density = tool("query_extraction_density", base)
            if density["needs_more_extraction"] and rounds < self.config.max_rounds:
                guidance = density["recommendations"]
                history.append(kg.model_dump())
                continue
            coverage = tool("query_coverage_feedback", base)
            quality = tool("query_quality_metrics", base)
            fb = tool("query_iterative_feedback", {**base, "extraction_history": [*history, kg.model_dump()],
                                                   "feedback_history": feedback[-50:],
                                                   "max_iterations": self.config.max_rounds})
            feedback.extend(quality.get("recommendations", [])[:5])
            history.append(kg.model_dump())
            if fb["should_continue_iteration"] and rounds < self.config.max_rounds:
                guidance = [*coverage.get("recommendations", []), *fb.get("recommendations", [])][:10] or None
                continue
            break

        final = kg
        if kg.entity_count:
            dis = tool("query_entity_disambiguation", {"extracted_kg": kg.model_dump(),
                                                      "similarity_threshold": self.config.similarity_threshold,
                                                      "context": text[:20000]})
            final = ExtractedKG.model_validate(dis["final_kg"])
        assertions, bad = _assertions(final, self.schema, chunk.id)
        entities = [(t, n) for t, names in final.entities.items() if self.schema.has_entity_type(t) for n in names]
        keys = []
        for t, n in entities:
            try:
                keys.append(entity_key(t, self.schema.resolve_name(t, n)))
            except KgrError:
                bad += 1
        extractor_name = getattr(res, "extractor", "") or self.config.extractor

        def unit(tx: Tx) -> tuple[StageReport, int]:
            rep = write_batch(tx, assertions, schema=self.schema, entities=entities)
            n = provenance.stage_schema_proposals(tx, chunk.id, proposals)
            provenance.finish_chunk(tx, chunk.id, keys, extractor=extractor_name, rounds=rounds)
            return rep, n

        calls["query_kg_storage"] += 1  # the storage step, in the chunk's own transaction
        staged, n_props = self.graph.write_unit(unit)
        return ChunkOutcome(chunk_id=chunk.id, rounds=rounds, llm_calls=usage[0], prompt_tokens=usage[1],
                            completion_tokens=usage[2], cost_usd=usage[3], tool_calls=dict(calls), staged=staged,
                            proposals=n_props, rejected=rejected + bad)


def _batches(chunks: Iterator[Chunk], size: int) -> Iterator[list[Chunk]]:
    batch: list[Chunk] = []
    for c in chunks:
        batch.append(c)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def ingest(
    graph: Graph,
    paths: Sequence[str | Path],
    schema: KGSchema,
    *,
    config: IngestConfig | None = None,
    extractor: Extractor | None = None,
    on_progress: Callable[[str, int], None] | None = None,
    promote: Callable[[], RoundSummary] | None = None,
) -> IngestReport:
    """Ingest files/directories into the store (see the module docstring).

    ``on_progress(event, n)`` receives ``documents``, ``chunks``, ``llm_calls`` and ``triples``
    increments; ``promote`` runs one promotion round (default: none, the caller decides).
    """
    cfg = config or IngestConfig()
    ext = extractor or make_extractor(cfg)
    loop = _Loop(graph, schema, ext, cfg)
    report = IngestReport()
    started = time.perf_counter()
    rounds: list[int] = []
    lock = threading.Lock()
    tick = on_progress or (lambda event, n: None)
    since_promotion = 0
    issues: list[LoadIssue] = []
    paths_by_doc: dict[str, str | None] = {}

    def documents() -> Iterator:
        for doc in iter_documents([str(p) for p in paths], on_error=issues.append):
            report.documents += 1
            paths_by_doc[doc.id] = doc.path
            tick("documents", 1)
            yield doc

    def absorb(fut: Future, chunk: Chunk) -> None:
        nonlocal since_promotion
        try:
            out: ChunkOutcome = fut.result()
        except KgrNeo4jUnavailable:
            raise
        except KgrError as exc:
            with lock:
                report.chunks_failed.append(ChunkFailure(chunk_id=chunk.id, document_id=chunk.document_id,
                                                         reason=str(exc).splitlines()[0][:300]))
            return
        with lock:
            report.chunks_processed += 1
            rounds.append(out.rounds)
            report.llm_calls += out.llm_calls
            report.prompt_tokens += out.prompt_tokens
            report.completion_tokens += out.completion_tokens
            report.cost_usd += out.cost_usd
            for k, v in out.tool_calls.items():
                report.tool_calls[k] = report.tool_calls.get(k, 0) + v
            report.triples_staged += out.staged.rows
            report.new_votes += out.staged.new_votes
            report.new_edges += out.staged.new_edges
            report.schema_proposals += out.proposals
            report.rejected_items += out.rejected
            since_promotion += 1
        tick("llm_calls", out.llm_calls)
        tick("triples", out.staged.rows)
        tick("chunks", 1)

    window = 2 * cfg.concurrency
    with ThreadPoolExecutor(max_workers=cfg.concurrency, thread_name_prefix="kgr-ingest") as pool:
        inflight: dict[Future, Chunk] = {}
        for batch in _batches(iter_chunks(documents(), config=cfg.chunking), 64):
            report.chunks += len(batch)
            provenance.upsert_chunks(graph, batch, paths=paths_by_doc)
            done_ids = provenance.processed_chunk_ids(graph, [c.id for c in batch])
            for chunk in batch:
                if chunk.id in done_ids:
                    report.chunks_skipped += 1
                    tick("chunks", 1)
                    continue
                while len(inflight) >= window:
                    finished, _ = wait(inflight, return_when=FIRST_COMPLETED)
                    for f in finished:
                        absorb(f, inflight.pop(f))
                inflight[pool.submit(loop.run, chunk)] = chunk
                if promote is not None and cfg.promote_every and since_promotion >= cfg.promote_every:
                    for f in list(inflight):  # a round sees a consistent batch
                        absorb(f, inflight.pop(f))
                    report.promotion.append(promote())
                    since_promotion = 0
        for f in list(inflight):
            absorb(f, inflight.pop(f))
    if promote is not None and cfg.promote:
        report.promotion.append(promote())
    report.load_issues = [str(i) for i in issues][:100]
    if rounds:
        hist = Counter(rounds)
        report.rounds_per_chunk = {"mean": round(statistics.fmean(rounds), 3), "max": float(max(rounds)),
                                   **{f"={k}": float(v) for k, v in sorted(hist.items())}}
    report.seconds = time.perf_counter() - started
    return report


def iter_paths(paths: Iterable[str]) -> list[Path]:
    return [Path(p) for p in paths]
