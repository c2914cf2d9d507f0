"""The per-chunk extraction loop of an ingestion job, up to the rows to stage.

:class:`ChunkDrafter` runs one chunk through the extractor and the agent tools (density, coverage,
quality, feedback; steps 1-3 of :mod:`kgr.ingest.pipeline`), then disambiguation against Neo4j
(step 4), and returns a :class:`Drafted` chunk: the assertions, entities, keys and schema proposals
the writer commits with the chunk's processed mark (step 5). It writes nothing, so it runs where the
job's executor puts it: on the ingesting process's event loop (``executor="inprocess"``), or in a
worker process or a Ray actor (:mod:`kgr.ingest.executors`), whose drafted chunks travel back to the
job's writer by pickle. The tools are called as typed functions (``query_quality_metrics(
QualityMetricsInput.of(...), context=...)``), not by name; ``ChunkOutcome.tool_calls`` counts them
by their registered names.
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import functools
import sys
from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import TypeVar

from kgr.errors import KgrError, KgrNeo4jUnavailable
from kgr.extract.base import AsyncExtractor, ExtractionResult, Extractor, takes_title
from kgr.ingest.chunking import Chunk
from kgr.model.canonical import entity_key
from kgr.model.kg import ExtractedKG
from kgr.model.schema import KGSchema
from kgr.model.tools import (
    CoverageFeedbackInput, EntityDisambiguationInput, ExtractionDensityInput, IterativeFeedbackInput,
    QualityMetricsInput, ToolInput, ToolOutput,
)
from kgr.model.triples import TripleAssertion
from kgr.store.connection import Graph
from kgr.tools.context import ToolContext
from kgr.tools.coverage import query_coverage_feedback
from kgr.tools.density import query_extraction_density
from kgr.tools.disambiguation import endpoint_renamer, query_entity_disambiguation, rewrite_kg
from kgr.tools.feedback import query_iterative_feedback
from kgr.tools.quality import query_quality_metrics
from kgr.tools.registry import ToolFunction

from kgr.ingest.assertions import (
    assertions_of, failure_kind, key_or_none, merge_kg, proposals_of, rejections_of, resolver,
    tool_schema, unique_exact,
)
from kgr.ingest.config import IngestConfig
from kgr.ingest.loop_lane import LoopLane
from kgr.ingest.report import MAX_LISTED, ChunkFailure, ChunkOutcome, Rejection

__all__ = ["ChunkDrafter", "Drafted", "close_llm_clients", "failed_outcome"]

In = TypeVar("In", bound=ToolInput)
Out = TypeVar("Out", bound=ToolOutput)


@dataclass
class _Draft:
    """A chunk's merged extraction after the rounds, before disambiguation."""

    kg: ExtractedKG
    calls: Counter[str]
    proposals: list[tuple[str, str, str]]
    rejections: list[Rejection]
    extractor: str
    quality: float | None = None
    #: (relation, subject, object) -> the span of the sentence it was read from (the first round's)
    spans: dict[tuple[str, str, str], tuple[int, int]] | None = None


@dataclass
class Drafted:
    """A chunk whose extraction is done: what the writer commits with its processed mark."""

    chunk: Chunk
    outcome: ChunkOutcome
    assertions: list[TripleAssertion]
    entities: list[tuple[str, str]]
    keys: list[str]
    proposals: list[tuple[str, str, str]]
    extractor: str
    quality: float | None = None


class ChunkDrafter:
    """Steps 1-4 of the ingestion loop for one chunk at a time, on the running event loop.

    ``known_before`` (epoch seconds): fuzzy disambiguation matches only entities that existed then
    (the job's start), so that chunk order, and so concurrency or the executor, cannot change what a
    name resolves to. With ``config.resolve`` (the default) there is no fuzzy step at all: a name
    links only to the entity it names exactly, and near-namesakes — whether staged by this job or
    an earlier one — are left to the resolution at the job's end, which decides them from the whole
    graph (so what a name links to does not depend on which entities earlier jobs left).
    ``config.concurrency`` chunks are in extraction at once (the rounds; the
    disambiguation lookup runs outside that limit, so LLM requests never wait on the database), or
    twice that with an extractor that bounds its own requests (``max_concurrency``, the LLM
    extractor: ``config.concurrency`` requests in flight): a chunk parsing its reply or running the
    tools then holds no request slot, and the next chunk's request leaves at once.

    A chunk's CPU steps on the loop (after its extraction, each agent tool, building its rows) take
    turns through a :class:`~kgr.ingest.loop_lane.LoopLane`, one step per loop iteration, so LLM
    replies and requests about to leave wait behind one step, not behind every chunk whose reply
    came back at the same moment.
    """

    def __init__(self, graph: Graph, schema: KGSchema, extractor: Extractor, config: IngestConfig,
                 known_before: float, paths: dict[str, str | None] | None = None):
        self.graph, self.schema, self.extractor, self.config = graph, schema, extractor, config
        self.paths = paths if paths is not None else {}
        self.ctx = ToolContext(graph=graph, schema=schema, known_before=known_before)
        self.tschema = tool_schema(schema)
        self.resolve = resolver(schema)
        #: with resolution at the job's end (``config.resolve``) a name links only to an entity it names
        #: exactly (its key or an alias): near-namesakes are the resolution's to decide, over every
        #: entity at once, whatever earlier jobs left; without it, fuzzy links as before
        self.strategy = "exact_match" if config.resolve else "semantic_similarity"
        # (type, name) -> the store's name of its unique exact match (see _disambiguate); event loop only
        self._matches: OrderedDict[tuple[str, str], str] = OrderedDict()
        self.is_async = isinstance(extractor, AsyncExtractor)
        #: the extractor reads a document title (``title=``, e.g. the offline rules extractor)
        self.takes_title = takes_title(extractor, self.is_async)
        #: ... and the headings in force at the chunk's start (``headings=``: the rules extractor skips changelogs)
        self.takes_headings = takes_title(extractor, self.is_async, "headings")
        self._extract_pool = cf.ThreadPoolExecutor(max_workers=min(config.concurrency, 32),
                                                   thread_name_prefix="kgr-extract")
        self._db_pool = cf.ThreadPoolExecutor(max_workers=min(config.concurrency, 16), thread_name_prefix="kgr-lookup")
        self._sem: asyncio.Semaphore | None = None
        self._lane = LoopLane()  # the CPU steps' turns (see the class docstring)
        bounded = bool(getattr(extractor, "max_concurrency", None))
        #: chunks in extraction at once (see the class docstring)
        self.admitted = config.concurrency * (2 if bounded else 1)

    def close(self, *, wait: bool = True) -> None:
        """Stop the thread pools (``wait=False``: do not wait for calls still retrying)."""
        for pool in (self._extract_pool, self._db_pool):
            pool.shutdown(wait=wait, cancel_futures=True)

    async def draft(self, chunk: Chunk) -> Drafted | ChunkOutcome:
        """The chunk drafted, or its outcome marked failed (a :class:`~kgr.errors.KgrError` of the
        extractor or a tool: the chunk stays unprocessed). :class:`~kgr.errors.KgrNeo4jUnavailable`
        and bugs propagate."""
        if self._sem is None:
            self._sem = asyncio.Semaphore(self.admitted)
        out = ChunkOutcome(chunk_id=chunk.id)
        try:
            async with self._sem:
                draft = await self._extract(chunk, out)
            return await self._finish(chunk, out, draft)
        except KgrNeo4jUnavailable:
            raise
        except KgrError as exc:
            return failed_outcome(chunk, exc, out, path=self.paths.get(chunk.document_id))

    async def _extract_once(self, text: str, guidance: list[str] | None, title: str | None,
                            headings: tuple = ()) -> ExtractionResult:
        extra = ({"title": title} if self.takes_title and title else {}) | \
            ({"headings": headings} if self.takes_headings and headings else {})
        if self.is_async:
            return await self.extractor.aextract(text, self.schema, guidance=guidance, **extra)  # type: ignore[attr-defined]
        call = functools.partial(self.extractor.extract, text, self.schema, guidance=guidance, **extra)
        return await asyncio.get_running_loop().run_in_executor(self._extract_pool, call)

    async def _extract(self, chunk: Chunk, out: ChunkOutcome) -> _Draft:
        """Steps 1-3 of the module docstring for one chunk, accounting into ``out`` as it goes."""
        cfg = self.config
        calls: Counter[str] = Counter()
        text = chunk.text
        kg = ExtractedKG()
        history: list[ExtractedKG] = []
        feedback: list[str] = []
        guidance: list[str] | None = None
        proposals: list[tuple[str, str, str]] = []
        rejections: list[Rejection] = []
        extractor_name = ""
        score: float | None = None
        spans: dict[tuple[str, str, str], tuple[int, int]] = {}

        lane = self._lane

        async def tool(fn: ToolFunction[In, Out], params: In) -> Out:
            await lane.turn()
            calls[fn.__name__] += 1  # the tool's name (the registry names a tool after its function)
            return fn(params, context=self.ctx)

        while True:
            out.rounds += 1
            last = out.rounds >= cfg.max_rounds  # no round can follow: nothing left to decide
            res = await self._extract_once(text, guidance, chunk.title, chunk.headings)
            await lane.turn()
            out.llm_calls += res.llm_calls
            out.prompt_tokens += res.usage.prompt_tokens
            out.completion_tokens += res.usage.completion_tokens
            out.cost_usd += res.cost_usd
            out.unpriced_llm_calls += res.unpriced_calls
            extractor_name = res.extractor or extractor_name
            rejections.extend(rejections_of(res, chunk.id))
            proposals.extend(proposals_of(res))
            kg = merge_kg(kg, res.kg)
            for sp in res.spans:
                spans.setdefault((sp.relation, sp.subject, sp.object), (sp.start, sp.end))
            base = {"text": text, "schema": self.tschema, "extracted_kg": kg}
            history.append(kg)
            if not last:
                density = await tool(query_extraction_density, ExtractionDensityInput.of(**base))
                if density.needs_more_extraction:
                    guidance = density.recommendations or None
                    continue
            quality = await tool(query_quality_metrics, QualityMetricsInput.of(**base))
            score = quality.overall_score
            if last:
                break
            fb = await tool(query_iterative_feedback, IterativeFeedbackInput.of(
                **base, extraction_history=history, feedback_history=feedback[-50:], max_iterations=cfg.max_rounds))
            feedback.extend(quality.improvement_suggestions[:5])
            if not fb.should_continue_iteration:
                break
            coverage = await tool(query_coverage_feedback, CoverageFeedbackInput.of(**base))
            guidance = [*coverage.recommendations, *fb.next_steps][:10] or None

        out.tool_calls = dict(calls)
        return _Draft(kg=kg, calls=calls, proposals=proposals, rejections=rejections,
                      extractor=extractor_name or self.config.extractor,
                      quality=None if score is None else float(score) / 100.0, spans=spans)

    async def _finish(self, chunk: Chunk, out: ChunkOutcome, draft: _Draft) -> Drafted:
        """Steps 4-5 up to the writer: disambiguation, then the rows to stage."""
        kg, rejections = draft.kg, draft.rejections
        calls = draft.calls
        final, renames = await self._disambiguate(chunk, kg, calls, out) if kg.entity_count else (kg, {})
        await self._lane.turn()
        rename = endpoint_renamer(renames)
        spans = {(r, rename(s), rename(o)): sp for (r, s, o), sp in (draft.spans or {}).items()}
        assertions, bad = assertions_of(final, self.schema, chunk.id, self.resolve, spans=spans)
        rejections.extend(bad)
        entities: list[tuple[str, str]] = []
        keys: list[str] = []
        for t, names in final.entities.items():
            if not self.schema.has_entity_type(t):
                continue
            for n in names:
                try:  # a name with no letters or digits, or whose canonical form is too long for the key index
                    k = entity_key(t, self.resolve(t, n))
                except KgrError as exc:
                    rejections.append(Rejection(chunk_id=chunk.id, kind="entity", type=t, item=n[:200],
                                                reason=str(exc).splitlines()[0][:300]))
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
        return Drafted(chunk=chunk, outcome=out, assertions=assertions, entities=entities, keys=keys,
                     proposals=props, extractor=draft.extractor, quality=draft.quality)

    def _resolved(self, etype: str, name: str) -> str:
        try:
            return self.resolve(etype, name)
        except KgrError:  # no letters or digits: the tool keeps such a name as it is
            return name

    def forget_names(self) -> None:
        """Drop the disambiguation cache (a forget deleted entities); call with no chunk in flight."""
        self._matches.clear()

    async def _disambiguate(self, chunk: Chunk, kg: ExtractedKG, calls: Counter[str],
                            out: ChunkOutcome) -> tuple[ExtractedKG, dict[tuple[str, str], str]]:
        """Step 4: ``final_kg`` of ``query_entity_disambiguation`` for ``kg``, asking the tool only about
        the names this run has not yet resolved to a unique exact match; and the renames made
        (``(type, name) -> new name``, :func:`~kgr.tools.disambiguation.rewrite_kg`'s).

        A name whose best match is an exact match (confidence 1.0) on the entity keyed by the name
        itself (after the schema's aliases), with no other candidate at 1.0, is remembered for the
        rest of the run (``IngestConfig.disambiguation_cache`` names at most, least recently used
        first out). Entities are not deleted during a run except by a forget, which clears the
        cache (:meth:`forget_names`); a new entity never has that key, and only
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
            params = EntityDisambiguationInput.of(extracted_kg={"entities": ask, "relations": {}},
                                                  disambiguation_strategy=self.strategy,
                                                  similarity_threshold=self.config.similarity_threshold,
                                                  context=chunk.text[:20000])
            calls[query_entity_disambiguation.__name__] += 1
            dis = await asyncio.get_running_loop().run_in_executor(
                self._db_pool, functools.partial(query_entity_disambiguation, params, context=self.ctx))
            answers = {(r.original_entity.type, r.original_entity.name): r for r in dis.disambiguation_results}
            for i in todo:
                r = answers.get(items[i])
                best = r.best_match if r is not None else None
                if best is None:
                    continue
                targets[i] = best.candidate.name
                if size and unique_exact(r, key_or_none(self.resolve, *items[i])):
                    cache[items[i]] = best.candidate.name
                    if len(cache) > size:
                        cache.popitem(last=False)
        return rewrite_kg(kg, items, resolved, targets)


def failed_outcome(chunk: Chunk, exc: BaseException, out: ChunkOutcome | None = None, *,
                   path: str | None = None) -> ChunkOutcome:
    """``out`` (the rounds done so far) plus the failed call's own accounting, marked failed."""
    out = out or ChunkOutcome(chunk_id=chunk.id)
    usage = getattr(exc, "usage", None)
    return out.model_copy(update={
        "llm_calls": out.llm_calls + int(getattr(exc, "llm_calls", 0) or 0),
        "prompt_tokens": out.prompt_tokens + int(getattr(usage, "prompt_tokens", 0) or 0),
        "completion_tokens": out.completion_tokens + int(getattr(usage, "completion_tokens", 0) or 0),
        "cost_usd": out.cost_usd + float(getattr(exc, "cost_usd", 0.0) or 0.0),
        "unpriced_llm_calls": out.unpriced_llm_calls + int(getattr(exc, "unpriced_calls", 0) or 0),
        "failure": ChunkFailure(chunk_id=chunk.id, document_id=chunk.document_id, path=path, kind=failure_kind(exc),
                                reason=(str(exc).splitlines() or [type(exc).__name__])[0][:300],
                                http_status=getattr(exc, "http_status", None)),
    })


async def close_llm_clients() -> None:
    """Close litellm's HTTP clients bound to the running loop (best effort, at shutdown)."""
    if "litellm" in sys.modules:
        closer = getattr(sys.modules["litellm"], "close_litellm_async_clients", None)
        if closer is not None:
            try:
                await closer()
            except Exception:  # noqa: BLE001 - best effort at shutdown; nothing is lost
                pass
