"""Batch ingestion: documents → chunks → tool-driven extraction loop → staging → promotion.

Per chunk, following Agentic-KGR's protocol (Appendix A.4):

1. **extract** with the configured extractor (rules or LLM);
2. **density** (mandatory): while ``needs_more_extraction`` and rounds < ``max_rounds``,
   re-extract with the density tool's recommendations as guidance (results are merged);
3. **coverage** and **quality**, then **iterative feedback**: continue (another round, guided by
   the coverage and feedback recommendations) or stop — ``max_rounds`` bounds all rounds together;
4. **disambiguation** against Neo4j (its ``final_kg`` is what gets stored); names this run already
   resolved to a unique exact match are not looked up again (``disambiguation_cache``, see
   ``_Pipeline._disambiguate``: the graph is the same with and without it);
5. **storage**: the chunk's relations are staged as votes whose source is the chunk id, in ONE
   transaction with the chunk's ``processed_at`` mark and its MENTIONS, so a chunk is processed
   exactly when its votes are in the graph. This step is ``kgr.store.staging.write_batch``, not a
   ``query_kg_storage`` call (that tool commits on its own, apart from the chunk's mark), and the
   report says so: ``tool_calls`` counts only the tools actually called.

Then promotion rounds run every ``promote_every`` chunks and at the end (through the ``promote``
callable the caller passes; the report carries each round's summary).

What is staged
--------------
- Relations whose types and endpoint types fit the schema, as votes (one per chunk and edge).
  **Symmetric** relations (``RelationTypeSpec.symmetric``) are staged with their endpoints in a
  canonical order (the smaller entity key first, when the reversed triple also fits the domain and
  range), so ``A–B`` and ``B–A`` are one pending edge and share votes.
- Types outside the schema that the extractor proposes are staged as ``(:SchemaProposal)`` votes
  (one per chunk), never silently dropped and never written as edges.
- Everything else the extractor or the pipeline could not accept (a domain/range violation, an
  endpoint of unknown type, a name with no letters) is **rejected**: counted in
  ``rejected_items``, with the first :data:`MAX_LISTED` reasons in ``IngestReport.rejections``.

Failures
--------
A chunk whose extraction fails (an LLM timeout or rate limit after the retries, output still
invalid after the repair request: :class:`~kgr.errors.KgrExtractionError`) or whose tool input is
invalid is reported in ``chunks_failed`` with its kind and reason, and is **not** marked processed,
so a re-run retries it. The rest of the batch goes on. Neo4j becoming unavailable stops the job
(:class:`~kgr.errors.KgrNeo4jUnavailable`); re-running it resumes. Any other exception is a bug and
propagates.

Concurrency and throughput
--------------------------
Chunks run as coroutines on a private event loop (one thread). An extractor with ``aextract``
(the LLM extractor) is awaited on that loop, so ``concurrency`` LLM requests are in flight at once
without a thread each; other extractors run in a thread pool. The analysis tools are CPU-only and
run on the loop; disambiguation's Neo4j lookup runs in a small thread pool outside the concurrency
limit, so LLM requests never wait on the database. Storage goes through **one writer** (``writers``)
that commits the chunks ready at that moment together (at most ``commit_chunks`` per transaction,
each chunk's votes and mark always in the same transaction; the group's marks and MENTIONS in one
statement): no deadlocks between the job's own writes, and far fewer commits at high concurrency. A group that Neo4j refuses for a data
error is retried chunk by chunk, so one bad chunk cannot fail its neighbours.

Resumability and memory
-----------------------
Chunk ids are content hashes recorded in Neo4j; chunks already processed are skipped (and a chunk
repeated within one run — identical files — is processed once), so a killed job re-run finishes
with the same graph as an uninterrupted one. Documents and chunks are streamed; at most
``2 × concurrency + commit_chunks`` chunks are in flight, so memory does not grow with the corpus
(the set of chunk ids seen in the run, 64 bytes each, is the only per-chunk state kept; the
disambiguation cache holds at most ``disambiguation_cache`` names).
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import functools
import statistics
import sys
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kgr.errors import KgrCypherBug, KgrDatabaseError, KgrError, KgrNeo4jUnavailable
from kgr.extract.base import AsyncExtractor, ExtractionResult, Extractor
from kgr.ingest.chunking import Chunk, ChunkingConfig, iter_chunks
from kgr.ingest.loaders import LoadIssue, iter_documents
from kgr.model.canonical import canonical_name, entity_key
from kgr.model.decisions import RoundSummary
from kgr.model.kg import ExtractedKG, RelationPair
from kgr.model.promotion import DEFAULT_POLICY, PolicyName
from kgr.model.schema import KGSchema
from kgr.model.triples import TripleAssertion
from kgr.store import provenance
from kgr.store.connection import Graph
from kgr.store.staging import StageReport, check_assertion
from kgr.tools.context import ToolContext
from kgr.tools.disambiguation import rewrite_kg
from kgr.tools.registry import call_tool

__all__ = ["IngestConfig", "IngestReport", "ChunkFailure", "Rejection", "ChunkOutcome", "ingest", "make_extractor",
           "MAX_LISTED"]

#: Most failures and rejections listed in a report (the counts are always complete).
MAX_LISTED = 100
#: Chunks read, upserted and checked against Neo4j together.
_READ_BATCH = 64


_LLM_ONLY = ("model", "api_base", "input_cost_per_token", "output_cost_per_token")


class IngestConfig(BaseModel):
    """Every ingestion option, with its default."""

    model_config = ConfigDict(extra="forbid")

    extractor: Literal["rules", "llm"] = Field(
        "rules", description="rules (offline) or llm; a model given without an extractor means llm")
    model: str | None = Field(None, description="litellm model name (llm extractor)")
    input_cost_per_token: float | None = Field(
        None, ge=0, description="USD per prompt token, with output_cost_per_token: the model's price when litellm "
                                "has none (llm extractor)")
    output_cost_per_token: float | None = Field(None, ge=0, description="USD per completion token (llm extractor)")
    api_base: str | None = Field(None, description="OpenAI-compatible base URL (llm extractor)")
    api_key: str | None = Field(None, repr=False, exclude=True,
                                description="API key (llm extractor); default: the provider's environment variable")
    timeout: float = Field(60.0, gt=0, le=3600, description="seconds per LLM request (each attempt)")
    max_attempts: int = Field(4, ge=1, le=20, description="LLM requests per call, retries of transient errors included")
    concurrency: int = Field(4, ge=1, le=256, description="chunks (and so LLM requests) in flight at once")
    commit_chunks: int = Field(32, ge=1, le=1000, description="most chunks committed together in one write transaction")
    writers: int = Field(1, ge=1, le=16, description="write transactions in flight at once")
    chunking: ChunkingConfig = Field(default_factory=ChunkingConfig)
    max_rounds: int = Field(3, ge=1, le=20, description="extraction rounds per chunk (density/feedback loop)")
    similarity_threshold: float = Field(0.8, ge=0, le=1, description="disambiguation threshold")
    disambiguation_cache: int = Field(
        65_536, ge=0, le=10_000_000,
        description="most entity names whose unique exact match in the store is remembered for the rest of the run "
                    "(they are not looked up again); 0: look every name up")
    promote_every: int = Field(0, ge=0, description="run a promotion round every N chunks (0 = only at the end)")
    promote: bool = True
    final_promotion_rounds: int = Field(1000, ge=1, description=(
        "at the end, promotion rounds until the backlog is worked through (a round decides at most "
        "5,000 candidates and promotes at most 1,000), at most this many"))
    policy: PolicyName = Field(
        DEFAULT_POLICY, description="policy of the promotion rounds (kgr ingest --policy; ingest() calls the promote callable)")


    @model_validator(mode="before")
    @classmethod
    def _model_means_llm(cls, data: Any) -> Any:
        """``IngestConfig(model=...)`` without ``extractor`` selects the llm extractor, like ``kgr ingest
        --model`` (so do the other LLM-only options)."""
        if isinstance(data, dict) and "extractor" not in data and any(data.get(k) is not None for k in _LLM_ONLY):
            data = {**data, "extractor": "llm"}
        return data

    @model_validator(mode="after")
    def _llm_options_need_llm(self) -> "IngestConfig":
        if self.extractor == "rules":
            given = [n for n in _LLM_ONLY if getattr(self, n) is not None]
            if given:
                raise ValueError(f"{' and '.join(given)} {'apply' if len(given) > 1 else 'applies'} to the llm "
                                 "extractor only (extractor is 'rules')")
        if (self.input_cost_per_token is None) != (self.output_cost_per_token is None):
            raise ValueError("give both input_cost_per_token and output_cost_per_token, or neither")
        return self


class ChunkFailure(BaseModel):
    """A chunk that was not processed (it stays unmarked: a re-run retries it)."""

    chunk_id: str
    document_id: str
    path: str | None = None
    kind: str = Field(description="timeout, rate_limited, invalid_output, ... (KgrExtractionError.reason) or the error class")
    reason: str


class Rejection(BaseModel):
    """One extracted item that was not staged, and why."""

    chunk_id: str
    kind: Literal["entity", "relation"]
    type: str
    item: str = Field(description="the entity name, or 'subject -> object'")
    reason: str


class ChunkOutcome(BaseModel):
    """What the loop did with one chunk (the report sums these)."""

    chunk_id: str
    rounds: int = 0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_llm_calls: int = 0
    cached_names: int = Field(0, description="entity names resolved from the run's disambiguation cache")
    tool_calls: dict[str, int] = Field(default_factory=dict)
    triples: int = Field(0, description="assertions staged (before vote deduplication)")
    proposals: int = 0
    rejected: int = 0
    rejections: list[Rejection] = Field(default_factory=list)
    failure: ChunkFailure | None = None


class IngestReport(BaseModel):
    """The final report of ``kgr ingest`` (``--json`` prints it)."""

    documents: int = 0
    chunks: int = 0
    chunks_skipped: int = Field(0, description="already processed in an earlier run, or repeated in this one")
    chunks_processed: int = 0
    chunks_failed: list[ChunkFailure] = Field(default_factory=list)
    load_issues: list[str] = Field(default_factory=list)
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = Field(0.0, description="USD as litellm prices the model; unpriced calls count 0.0")
    unpriced_llm_calls: int = Field(0, description="answered LLM calls litellm could not price (cost unknown)")
    tool_calls: dict[str, int] = Field(default_factory=dict, description=(
        "agent tools called, by name. The storage step is not a query_kg_storage call: the pipeline stages "
        "each chunk with kgr.store.staging.write_batch in the transaction that marks it processed"))
    disambiguation_cached: int = Field(0, description=(
        "entity names resolved from this run's cache of unique exact matches instead of a Neo4j lookup"))
    rounds_per_chunk: dict[str, float] = Field(default_factory=dict, description="mean, max, histogram")
    triples_staged: int = 0
    new_votes: int = 0
    repeated_votes: int = 0
    new_edges: int = 0
    new_entities: int = 0
    transactions: int = Field(0, description="write transactions that staged chunks")
    schema_proposals: int = 0
    rejected_items: int = 0
    rejections: list[Rejection] = Field(default_factory=list, description=f"the first {MAX_LISTED}")
    promotion: list[RoundSummary] = Field(default_factory=list)
    seconds: float = 0.0
    chunks_per_second: float = 0.0

    @property
    def failed(self) -> int:
        return len(self.chunks_failed)

    def promotion_totals(self) -> dict[str, int]:
        """Promoted, held, rejected and expired edges over every round of the run."""
        return {k: sum(getattr(p, k) for p in self.promotion) for k in ("promoted", "held", "rejected", "expired")}

    def render(self) -> str:
        lines = [
            f"documents {self.documents}, chunks {self.chunks} ({self.chunks_processed} processed, "
            f"{self.chunks_skipped} already done, {len(self.chunks_failed)} failed) in {self.seconds:.1f} s "
            f"({self.chunks_per_second:.1f} chunks/s)",
            f"triples staged {self.triples_staged}: {self.new_votes} new votes, {self.new_edges} new edges, "
            f"{self.new_entities} new entities; {self.schema_proposals} schema proposals, "
            f"{self.rejected_items} rejected items",
            f"LLM calls {self.llm_calls}, tokens {self.prompt_tokens}+{self.completion_tokens}, cost ${self.cost_usd:.4f}"
            + (f" ({self.unpriced_llm_calls} answered calls not priced: litellm has no price for the model, "
               "cost unknown)" if self.unpriced_llm_calls else ""),
            "tool calls: " + (", ".join(f"{k} {v}" for k, v in sorted(self.tool_calls.items())) or "none")
            + (f"; {self.disambiguation_cached} names resolved from the run's cache" if self.disambiguation_cached else ""),
            f"storage: {self.chunks_processed} chunks staged in {self.transactions} write transactions "
            "(kgr.store.staging, each chunk with its processed mark)",
            "rounds per chunk: " + (", ".join(f"{k} {v:g}" for k, v in self.rounds_per_chunk.items()) or "-"),
        ]
        if not self.promotion:
            lines.append("promotion: not run")
        for p in self.promotion:
            lines.append(f"promotion {p.describe()}")
        for f in self.chunks_failed[:20]:
            lines.append(f"failed chunk {f.chunk_id[:12]} ({f.path or f.document_id[:12]}): [{f.kind}] {f.reason}")
        if len(self.chunks_failed) > 20:
            lines.append(f"... and {len(self.chunks_failed) - 20} more failed chunks (--json lists them)")
        for r in self.rejections[:5]:
            lines.append(f"rejected {r.kind} {r.type} {r.item!r}: {r.reason}")
        for issue in self.load_issues[:10]:
            lines.append(f"skipped input {issue}")
        return "\n".join(lines)


def make_extractor(config: IngestConfig) -> Extractor:
    """The configured extractor, through :func:`kgr.extract.make_extractor`: ``rules`` (offline,
    default) or ``llm`` (litellm, with the config's api_base/api_key/timeout/attempts and
    ``max_concurrency = concurrency``).

    Raises
    ------
    KgrExtractionError
        ``llm`` without a model.
    """
    from kgr.extract import make_extractor as pick

    if config.extractor == "llm":
        from kgr.extract.llm_client import RetryPolicy

        return pick("llm", model=config.model, api_base=config.api_base, api_key=config.api_key,
                    timeout=config.timeout, retry=RetryPolicy(max_attempts=config.max_attempts),
                    max_concurrency=config.concurrency, input_cost_per_token=config.input_cost_per_token,
                    output_cost_per_token=config.output_cost_per_token)
    return pick("rules")


# -- pure helpers -------------------------------------------------------------------------------


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


Resolve = Callable[[str, str], str]


def _resolver(schema: KGSchema) -> Resolve:
    """``schema.resolve_name`` with the alias table built once (it is rebuilt on every call otherwise)."""
    table = schema.alias_map()

    def resolve(etype: str, name: str) -> str:
        return table.get((etype, canonical_name(name)), name)

    return resolve


def _key_or_none(resolve: Resolve, etype: str, name: str) -> str | None:
    try:
        return entity_key(etype, resolve(etype, name))
    except KgrError:
        return None


def _canonical_order(a: TripleAssertion, schema: KGSchema, resolve: Resolve) -> TripleAssertion:
    """A symmetric relation's assertion with the smaller entity key as subject (when that fits)."""
    spec = schema.relation_types.get(a.relation)
    if spec is None or not spec.symmetric:
        return a
    sk, ok = _key_or_none(resolve, a.subject_type, a.subject), _key_or_none(resolve, a.object_type, a.object)
    if sk is None or ok is None or sk <= ok:
        return a
    if (spec.domain and a.object_type not in spec.domain) or (spec.range and a.subject_type not in spec.range):
        return a  # the reversed triple would break the schema: keep the order given
    return a.model_copy(update={"subject": a.object, "subject_type": a.object_type,
                                "object": a.subject, "object_type": a.subject_type})


def _assertions(kg: ExtractedKG, schema: KGSchema, source: str,
                resolve: Resolve | None = None) -> tuple[list[TripleAssertion], list[Rejection]]:
    """The relations of ``kg`` as assertions from ``source`` (endpoint types looked up in entities),
    symmetric ones in canonical order; and what could not be staged, with reasons."""
    resolve = resolve or _resolver(schema)
    out: list[TripleAssertion] = []
    bad: list[Rejection] = []
    for rel, pairs in kg.relations.items():
        spec = schema.relation_types.get(rel)
        for p in pairs:
            st, ot = kg.entity_types_of(p.subject), kg.entity_types_of(p.object)
            if spec is not None:  # prefer the declared domain/range when a name has several types
                st = [t for t in st if not spec.domain or t in spec.domain] or st
                ot = [t for t in ot if not spec.range or t in spec.range] or ot
            item = f"{p.subject} -> {p.object}"
            if not st or not ot:
                missing = p.subject if not st else p.object
                bad.append(Rejection(chunk_id=source, kind="relation", type=rel, item=item,
                                     reason=f"endpoint {missing!r} is not among the extracted entities"))
                continue
            try:
                a = TripleAssertion(subject=p.subject, subject_type=st[0], relation=rel, object=p.object,
                                    object_type=ot[0], source=source)
                check_assertion(a, schema)
                # keys (a name with no letters raises here), then the schema's domain/range and loops
                sk = entity_key(a.subject_type, resolve(a.subject_type, a.subject))
                ok = entity_key(a.object_type, resolve(a.object_type, a.object))
                problems = schema.violations(a.subject_type, rel, a.object_type, self_loop=sk == ok)
                if problems:
                    raise ValueError("; ".join(problems))
            except (KgrError, ValueError) as exc:
                bad.append(Rejection(chunk_id=source, kind="relation", type=rel, item=item,
                                     reason=str(exc).splitlines()[0][:300]))
                continue
            out.append(_canonical_order(a, schema, resolve))
    return out, bad


def _proposals(res: ExtractionResult) -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    for t, names in res.proposed_types.entities.items():
        out.append(("entity", t, names[0] if names else ""))
    for r, rels in res.proposed_types.relations.items():
        out.append(("relation", r, f"{rels[0].subject} -> {rels[0].object}" if rels else ""))
    return out


def _rejections(res: ExtractionResult, chunk_id: str) -> list[Rejection]:
    return [Rejection(chunk_id=chunk_id, kind=r.kind, type=r.type,
                      item=r.name if r.kind == "entity" else f"{r.subject} -> {r.object}",
                      reason=r.reason) for r in res.rejected]


def _unique_exact(result: dict[str, Any], key: str | None) -> bool:
    """Whether a disambiguation result is a unique exact match on the entity keyed ``key``."""
    best = result.get("best_match")
    if key is None or best is None or best["confidence"] < 1.0:
        return False
    if best["candidate"]["properties"].get("key") != key:
        return False
    return sum(1 for c in result["candidates"] if c["confidence"] >= 1.0) == 1


def _failure_kind(exc: BaseException) -> str:
    return str(getattr(exc, "reason", "") or type(exc).__name__)


# -- the per-chunk loop ---------------------------------------------------------------------------


@dataclass
class _Draft:
    """A chunk's merged extraction after the rounds, before disambiguation."""

    kg: ExtractedKG
    calls: Counter[str]
    proposals: list[tuple[str, str, str]]
    rejections: list[Rejection]
    extractor: str
    quality: float | None = None


@dataclass
class _Work:
    """A chunk whose extraction is done, waiting for the writer."""

    chunk: Chunk
    outcome: ChunkOutcome
    assertions: list[TripleAssertion]
    entities: list[tuple[str, str]]
    keys: list[str]
    proposals: list[tuple[str, str, str]]
    extractor: str
    quality: float | None = None
    future: asyncio.Future = field(repr=False, default=None)  # type: ignore[assignment]


class _Pipeline:
    """The extraction loop for every chunk, on one event loop, and the writer(s)."""

    def __init__(self, graph: Graph, schema: KGSchema, extractor: Extractor, config: IngestConfig,
                 paths: dict[str, str | None]):
        self.graph, self.schema, self.extractor, self.config = graph, schema, extractor, config
        self.paths = paths
        # fuzzy matches only to entities that existed when the run began: chunk order (concurrency)
        # cannot change what a name resolves to
        self.ctx = ToolContext(graph=graph, schema=schema, known_before=time.time())
        self.tschema = _tool_schema(schema)
        self.resolve = _resolver(schema)
        # (type, name) -> the store's name of its unique exact match (see _disambiguate); event loop only
        self._matches: OrderedDict[tuple[str, str], str] = OrderedDict()
        self.is_async = isinstance(extractor, AsyncExtractor)
        self.staged = StageReport()
        self.transactions = 0
        self._lock = threading.Lock()
        self._extract_pool = cf.ThreadPoolExecutor(max_workers=min(config.concurrency, 32),
                                                   thread_name_prefix="kgr-extract")
        self._db_pool = cf.ThreadPoolExecutor(max_workers=min(config.concurrency, 16), thread_name_prefix="kgr-lookup")
        self._write_pool = cf.ThreadPoolExecutor(max_workers=config.writers, thread_name_prefix="kgr-writer")
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run_loop, name="kgr-ingest-loop", daemon=True)
        self._sem: asyncio.Semaphore | None = None
        self._queue: asyncio.Queue[_Work] | None = None
        self._writers: list[asyncio.Task] = []

    # -- lifecycle (called from the ingesting thread) ----------------------------------------------
    def _run_loop(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    def start(self) -> "_Pipeline":
        self._thread.start()
        cf_future = asyncio.run_coroutine_threadsafe(self._setup(), self._loop)
        cf_future.result()
        return self

    async def _setup(self) -> None:
        self._sem = asyncio.Semaphore(self.config.concurrency)
        self._queue = asyncio.Queue()
        loop = asyncio.get_running_loop()
        self._writers = [loop.create_task(self._write_forever(), name=f"kgr-writer-{i}")
                         for i in range(self.config.writers)]

    def submit(self, chunk: Chunk) -> cf.Future:
        return asyncio.run_coroutine_threadsafe(self.process(chunk), self._loop)

    def close(self, *, wait: bool = True) -> None:
        """Stop the pipeline. ``wait=False`` (the database went away) does not wait for database calls
        still retrying in the pools: the job stops within the retry bound instead of one more retry
        period per call in flight; those calls end on their own and their results are dropped."""
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(timeout=60)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=60)
        for pool in (self._extract_pool, self._db_pool, self._write_pool):  # before closing the loop: a
            pool.shutdown(wait=wait, cancel_futures=True)  # finishing job still posts its result to it
        if wait:
            self._loop.close()  # (abandoned: a late result may still be posted to the stopped loop)

    async def _shutdown(self) -> None:
        me = asyncio.current_task()
        tasks = [t for t in asyncio.all_tasks() if t is not me]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if "litellm" in sys.modules:  # close the HTTP clients bound to this loop
            closer = getattr(sys.modules["litellm"], "close_litellm_async_clients", None)
            if closer is not None:
                try:
                    await closer()
                except Exception:  # noqa: BLE001 - best effort at shutdown; nothing is lost
                    pass
        await self._loop.shutdown_asyncgens()

    # -- one chunk ------------------------------------------------------------------------------
    async def process(self, chunk: Chunk) -> ChunkOutcome:
        """Extraction rounds under the concurrency limit; then disambiguation (a Neo4j lookup) and the
        writer outside it, so that LLM requests never wait on the database."""
        assert self._sem is not None and self._queue is not None
        out = ChunkOutcome(chunk_id=chunk.id)
        try:
            async with self._sem:
                draft = await self._extract(chunk, out)
            work = await self._finish(chunk, out, draft)
        except KgrNeo4jUnavailable:
            raise
        except KgrError as exc:
            return self._failed(chunk, exc, out)
        work.future = asyncio.get_running_loop().create_future()
        await self._queue.put(work)
        return await work.future

    def _failed(self, chunk: Chunk, exc: BaseException, out: ChunkOutcome | None = None) -> ChunkOutcome:
        """``out`` (the rounds done so far) plus the failed call's own accounting, marked failed."""
        out = out or ChunkOutcome(chunk_id=chunk.id)
        usage = getattr(exc, "usage", None)
        return out.model_copy(update={
            "llm_calls": out.llm_calls + int(getattr(exc, "llm_calls", 0) or 0),
            "prompt_tokens": out.prompt_tokens + int(getattr(usage, "prompt_tokens", 0) or 0),
            "completion_tokens": out.completion_tokens + int(getattr(usage, "completion_tokens", 0) or 0),
            "cost_usd": out.cost_usd + float(getattr(exc, "cost_usd", 0.0) or 0.0),
            "unpriced_llm_calls": out.unpriced_llm_calls + int(getattr(exc, "unpriced_calls", 0) or 0),
            "failure": ChunkFailure(chunk_id=chunk.id, document_id=chunk.document_id,
                                    path=self.paths.get(chunk.document_id), kind=_failure_kind(exc),
                                    reason=(str(exc).splitlines() or [type(exc).__name__])[0][:300]),
        })

    async def _extract_once(self, text: str, guidance: list[str] | None) -> ExtractionResult:
        if self.is_async:
            return await self.extractor.aextract(text, self.schema, guidance=guidance)  # type: ignore[attr-defined]
        call = functools.partial(self.extractor.extract, text, self.schema, guidance=guidance)
        return await asyncio.get_running_loop().run_in_executor(self._extract_pool, call)

    async def _extract(self, chunk: Chunk, out: ChunkOutcome) -> _Draft:
        """Steps 1-3 of the module docstring for one chunk, accounting into ``out`` as it goes."""
        cfg = self.config
        calls: Counter[str] = Counter()
        text = chunk.text
        kg = ExtractedKG()
        history: list[dict] = []
        feedback: list[str] = []
        guidance: list[str] | None = None
        proposals: list[tuple[str, str, str]] = []
        rejections: list[Rejection] = []
        extractor_name = ""
        score: float | None = None

        def tool(name: str, payload: dict[str, Any]) -> dict[str, Any]:
            calls[name] += 1
            return call_tool(name, payload, context=self.ctx)

        while True:
            out.rounds += 1
            res = await self._extract_once(text, guidance)
            out.llm_calls += res.llm_calls
            out.prompt_tokens += res.usage.prompt_tokens
            out.completion_tokens += res.usage.completion_tokens
            out.cost_usd += res.cost_usd
            out.unpriced_llm_calls += res.unpriced_calls
            extractor_name = res.extractor or extractor_name
            rejections.extend(_rejections(res, chunk.id))
            proposals.extend(_proposals(res))
            kg = _merge(kg, res.kg)
            base = {"text": text, "schema": self.tschema, "extracted_kg": kg.model_dump()}
            density = tool("query_extraction_density", base)
            if density["needs_more_extraction"] and out.rounds < cfg.max_rounds:
                guidance = density["recommendations"] or None
                history.append(base["extracted_kg"])
                continue
            coverage = tool("query_coverage_feedback", base)
            quality = tool("query_quality_metrics", base)
            score = quality.get("overall_score")
            fb = tool("query_iterative_feedback", {**base, "extraction_history": [*history, base["extracted_kg"]],
                                                   "feedback_history": feedback[-50:],
                                                   "max_iterations": cfg.max_rounds})
            feedback.extend(quality.get("recommendations", [])[:5])
            history.append(base["extracted_kg"])
            if fb["should_continue_iteration"] and out.rounds < cfg.max_rounds:
                guidance = [*coverage.get("recommendations", []), *fb.get("recommendations", [])][:10] or None
                continue
            break

        out.tool_calls = dict(calls)
        return _Draft(kg=kg, calls=calls, proposals=proposals, rejections=rejections,
                      extractor=extractor_name or self.config.extractor,
                      quality=None if score is None else float(score) / 100.0)

    async def _finish(self, chunk: Chunk, out: ChunkOutcome, draft: _Draft) -> _Work:
        """Steps 4-5 up to the writer: disambiguation, then the rows to stage."""
        kg, rejections = draft.kg, draft.rejections
        calls = draft.calls
        final = await self._disambiguate(chunk, kg, calls, out) if kg.entity_count else kg
        assertions, bad = _assertions(final, self.schema, chunk.id, self.resolve)
        rejections.extend(bad)
        entities: list[tuple[str, str]] = []
        keys: list[str] = []
        for t, names in final.entities.items():
            if not self.schema.has_entity_type(t):
                continue
            for n in names:
                k = _key_or_none(self.resolve, t, n)
                if k is None:
                    rejections.append(Rejection(chunk_id=chunk.id, kind="entity", type=t, item=n,
                                                reason="the name has no letters or digits"))
                    continue
                entities.append((t, n))
                keys.append(k)
        # one vote per chunk and proposed type
        props = list({(k, n): (k, n, ex) for k, n, ex in draft.proposals}.values())
        # the storage step is staging by the writer, in the chunk's own transaction: not a tool call
        out.tool_calls = dict(calls)
        out.triples = len(assertions)
        out.proposals = len(props)
        out.rejected = len(rejections)
        out.rejections = rejections[:MAX_LISTED]
        return _Work(chunk=chunk, outcome=out, assertions=assertions, entities=entities, keys=keys,
                     proposals=props, extractor=draft.extractor, quality=draft.quality)

    def _resolved(self, etype: str, name: str) -> str:
        try:
            return self.resolve(etype, name)
        except KgrError:  # no letters or digits: the tool keeps such a name as it is
            return name

    async def _disambiguate(self, chunk: Chunk, kg: ExtractedKG, calls: Counter[str], out: ChunkOutcome) -> ExtractedKG:
        """Step 4: ``final_kg`` of ``query_entity_disambiguation`` for ``kg``, asking the tool only about
        the names this run has not yet resolved to a unique exact match.

        A name whose best match is an exact match (confidence 1.0) on the entity keyed by the name
        itself (after the schema's aliases), with no other candidate at 1.0, is remembered for the
        rest of the run (``IngestConfig.disambiguation_cache`` names at most, least recently used
        first out). Entities are never deleted, a new entity never has that key, and only
        names resolving to its key add aliases to it, so a later lookup of the name would decide
        the same: the graph is the same with and without the cache (tested), and an interrupted run
        resumed ends as an uninterrupted one. Names left unmatched or matched otherwise are looked
        up every time, so a name first created by this run's own staging is found (and deduplicated)
        by the next chunk that mentions it. Per name the tool decides independently of the other
        names, so asking about the unresolved ones only gives their answers unchanged; the renames
        of both are applied to ``kg`` by the tool's own :func:`~kgr.tools.disambiguation.rewrite_kg`.
        """
        items = list(dict.fromkeys((t, n) for t, names in kg.entities.items() for n in names))
        resolved = [self._resolved(t, n) for t, n in items]
        cache, size = self._matches, self.config.disambiguation_cache
        targets: list[str | None] = []
        for item in items:
            hit = cache.get(item)
            if hit is not None:
                cache.move_to_end(item)
            targets.append(hit)
        todo = [i for i, t in enumerate(targets) if t is None]
        out.cached_names += len(items) - len(todo)
        if todo:
            ask: dict[str, list[str]] = {}
            for i in todo:
                ask.setdefault(items[i][0], []).append(items[i][1])
            payload = {"extracted_kg": {"entities": ask, "relations": {}},
                       "similarity_threshold": self.config.similarity_threshold, "context": chunk.text[:20000]}
            calls["query_entity_disambiguation"] += 1
            dis = await asyncio.get_running_loop().run_in_executor(
                self._db_pool, functools.partial(call_tool, "query_entity_disambiguation", payload, context=self.ctx))
            answers = {(r["original_entity"]["type"], r["original_entity"]["name"]): r
                       for r in dis["disambiguation_results"]}
            for i in todo:
                r = answers.get(items[i])
                best = r["best_match"] if r is not None else None
                if best is None:
                    continue
                targets[i] = best["candidate"]["name"]
                if size and _unique_exact(r, _key_or_none(self.resolve, *items[i])):
                    cache[items[i]] = best["candidate"]["name"]
                    if len(cache) > size:
                        cache.popitem(last=False)
        return rewrite_kg(kg, items, resolved, targets)[0]

    # -- the writer -----------------------------------------------------------------------------
    async def _write_forever(self) -> None:
        assert self._queue is not None
        loop = asyncio.get_running_loop()
        while True:
            group = [await self._queue.get()]
            while len(group) < self.config.commit_chunks and not self._queue.empty():
                group.append(self._queue.get_nowait())
            try:
                results = await loop.run_in_executor(self._write_pool, self._write_group, group)
            except BaseException as exc:  # noqa: BLE001 - handed to every waiting chunk, never lost
                for w in group:
                    if not w.future.done():
                        w.future.set_exception(exc)
                if isinstance(exc, asyncio.CancelledError):
                    raise
                continue
            for w, res in zip(group, results):
                if not w.future.done():
                    w.future.set_result(res)

    def _write_group(self, group: list[_Work]) -> list[ChunkOutcome]:
        """Commit ``group`` in one transaction; on a data error, chunk by chunk (runs in the writer thread)."""
        try:
            self._commit(group)
            return [w.outcome for w in group]
        except KgrCypherBug:
            raise
        except KgrDatabaseError as exc:
            if len(group) == 1:
                w = group[0]
                failed = self._failed(w.chunk, exc)
                return [w.outcome.model_copy(update={"failure": failed.failure})]
        return [self._write_group([w])[0] for w in group]

    def _commit(self, group: list[_Work]) -> None:
        marks = [provenance.ChunkMark(chunk_id=w.chunk.id, entity_keys=sorted(set(w.keys)), extractor=w.extractor,
                                      rounds=w.outcome.rounds, quality=w.quality, proposals=list(w.proposals or []))
                 for w in group]
        rep = provenance.commit_chunks(self.graph, marks, assertions=[a for w in group for a in w.assertions],
                                       entities=[e for w in group for e in w.entities], schema=self.schema)
        with self._lock:
            self.staged = self.staged.merge(rep)
            self.transactions += 1


# -- the driver -------------------------------------------------------------------------------------


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

    ``on_progress(event, n)`` is called from the calling thread with increments of ``documents``,
    ``chunks`` (processed, skipped or failed), ``failed``, ``llm_calls`` and ``triples`` (assertions
    staged). ``promote`` runs one promotion round; it is called every ``config.promote_every``
    chunks and, when ``config.promote``, at the end until a round is ``settled`` (at most
    ``config.final_promotion_rounds``; without ``promote``: no promotion, the caller decides).

    Raises
    ------
    KgrNeo4jUnavailable
        Neo4j went away (a re-run resumes where the job stopped). ``graph`` is then closed, which ends
        the database calls still retrying in the background at once: reconnect to go on.
    KgrValidationError
        A path does not exist.
    """
    cfg = config or IngestConfig()
    ext = extractor or make_extractor(cfg)
    report = IngestReport()
    started = time.perf_counter()
    rounds: list[int] = []
    tick = on_progress or (lambda event, n: None)
    since_promotion = 0
    issues: list[LoadIssue] = []
    paths_by_doc: dict[str, str | None] = {}
    seen: set[str] = set()

    def documents() -> Iterator:
        for doc in iter_documents([str(p) for p in paths], on_error=issues.append):
            report.documents += 1
            paths_by_doc[doc.id] = doc.path
            tick("documents", 1)
            yield doc

    def absorb(fut: cf.Future) -> None:
        nonlocal since_promotion
        out: ChunkOutcome = fut.result()  # KgrNeo4jUnavailable and bugs propagate
        report.llm_calls += out.llm_calls
        report.prompt_tokens += out.prompt_tokens
        report.completion_tokens += out.completion_tokens
        report.cost_usd += out.cost_usd
        report.unpriced_llm_calls += out.unpriced_llm_calls
        if out.llm_calls:
            tick("llm_calls", out.llm_calls)
        if out.failure is not None:
            report.chunks_failed.append(out.failure)
            tick("failed", 1)
            tick("chunks", 1)
            return
        report.chunks_processed += 1
        rounds.append(out.rounds)
        for k, v in out.tool_calls.items():
            report.tool_calls[k] = report.tool_calls.get(k, 0) + v
        report.disambiguation_cached += out.cached_names
        report.triples_staged += out.triples
        report.schema_proposals += out.proposals
        report.rejected_items += out.rejected
        room = MAX_LISTED - len(report.rejections)
        if room > 0:
            report.rejections.extend(out.rejections[:room])
        since_promotion += 1
        tick("triples", out.triples)
        tick("chunks", 1)

    pipe = _Pipeline(graph, schema, ext, cfg, paths_by_doc).start()
    inflight: set[cf.Future] = set()
    window = 2 * cfg.concurrency + cfg.commit_chunks

    def drain(until: int) -> None:
        while len(inflight) > until:
            done, _ = cf.wait(inflight, return_when=cf.FIRST_COMPLETED)
            for f in done:
                inflight.discard(f)
                absorb(f)

    try:
        for batch in _batches(iter_chunks(documents(), config=cfg.chunking), _READ_BATCH):
            report.chunks += len(batch)
            provenance.upsert_chunks(graph, batch, paths=paths_by_doc)
            done_ids = provenance.processed_chunk_ids(graph, [c.id for c in batch])
            for chunk in batch:
                if chunk.id in done_ids or chunk.id in seen:
                    report.chunks_skipped += 1
                    tick("chunks", 1)
                    continue
                seen.add(chunk.id)
                drain(window - 1)
                inflight.add(pipe.submit(chunk))
                if promote is not None and cfg.promote_every and since_promotion >= cfg.promote_every:
                    drain(0)  # a round sees a consistent batch
                    report.promotion.append(promote())
                    since_promotion = 0
        drain(0)
    finally:
        for f in inflight:
            f.cancel()
        gone = isinstance(sys.exc_info()[1], KgrNeo4jUnavailable)
        if gone:  # end the calls still retrying now: the job stops within the retry bound
            graph.close()
        pipe.close(wait=not gone)
    if promote is not None and cfg.promote:  # work through the staged backlog, one version per round
        for _ in range(cfg.final_promotion_rounds):
            summary = promote()
            report.promotion.append(summary)
            if summary.settled and not (summary.reread is not None and summary.reread.claims):
                break  # (a round whose escalated candidates were just re-read has evidence to decide)
    staged = pipe.staged
    report.new_votes, report.repeated_votes = staged.new_votes, staged.repeated_votes
    report.new_edges, report.new_entities = staged.new_edges, staged.new_entities
    report.transactions = pipe.transactions
    report.load_issues = [str(i) for i in issues][:MAX_LISTED]
    if rounds:
        hist = Counter(rounds)
        report.rounds_per_chunk = {"mean": round(statistics.fmean(rounds), 3), "max": float(max(rounds)),
                                   **{f"={k}": float(v) for k, v in sorted(hist.items())}}
    report.seconds = time.perf_counter() - started
    report.chunks_per_second = round(report.chunks_processed / report.seconds, 3) if report.seconds > 0 else 0.0
    return report
