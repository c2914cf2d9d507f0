"""The agent loop: an LLM drives the six tools over documents through litellm function calling.

For every chunk of every document (:func:`kgr.ingest.loaders.iter_documents`,
:func:`kgr.ingest.chunking.iter_chunks`):

1. the document and chunk are recorded in the store (lexical provenance; ids are content hashes);
2. the model gets the protocol and schema (:func:`kgr.agent.protocol.system_prompt`), the chunk
   text, and the six tools' OpenAI function definitions (:func:`kgr.tools.registry.function_definitions`);
3. each model turn may call tools; every call is checked by the :class:`~kgr.agent.protocol.ProtocolGuard`,
   run through :func:`kgr.tools.registry.call_tool` with a :class:`~kgr.tools.context.ToolContext`
   whose ``source`` is the chunk id (so each chunk casts at most one vote per relation, whatever
   ``source`` the model writes), and answered with the tool's JSON output (lists longer than
   :data:`MAX_LIST_ITEMS` trimmed when the JSON exceeds ``max_result_chars``);
4. the loop ends when storage succeeds (``stored``), when the model stops calling tools
   (``finished``/``no_storage``), or after ``max_steps`` model turns (``step_cap``);
5. a stored chunk is marked processed with its MENTIONS, so a re-run skips it (``redo`` to redo).

Arguments the model leaves out but the driver knows — the chunk ``text`` and the ``schema`` — are
filled in and listed under ``filled`` in the transcript. Tool errors (validation errors naming the
field, protocol violations) go back to the model as the tool's answer, so it can correct itself.

LLM requests are retried on transient failures (HTTP 408/409/429/5xx, timeouts, connection
errors) with :class:`kgr.extract.llm.RetryPolicy`; other failures end the chunk with ``llm_error``.
API keys are passed to litellm only, never logged or reported.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr
from tenacity import Retrying, retry_if_exception, stop_after_attempt

from kgr.agent.protocol import STORAGE, ProtocolGuard, system_prompt, user_prompt
from kgr.agent.report import AgentReport, ChunkRun, TranscriptEntry
from kgr.errors import KgrError, KgrExtractionError, KgrValidationError
from kgr.extract.llm_client import ApiBase, RetryPolicy, load_litellm, response_cost
from kgr.ingest.chunking import Chunk, ChunkingConfig, chunk_document
from kgr.ingest.loaders import Document, iter_documents
from kgr.model.canonical import entity_key
from kgr.model.schema import KGSchema
from kgr.model.tools import ToolSchema
from kgr.store.connection import Graph
from kgr.store.provenance import ChunkMark, commit_chunks, processed_chunk_ids, upsert_chunks
from kgr.tools.context import ToolContext
from kgr.tools.registry import call_tool, function_definitions, tool_names

__all__ = ["AgentConfig", "run_agent", "run_chunk", "MAX_LIST_ITEMS"]

log = logging.getLogger("kgr.agent")

#: Longest list kept in a tool result sent back to the model when the result is too long.
MAX_LIST_ITEMS = 20
#: Tools whose input has the chunk ``text`` and the tool ``schema`` (filled in when the model omits them).
_TAKES_TEXT_AND_SCHEMA = frozenset({"query_extraction_density", "query_coverage_feedback", "query_quality_metrics",
                                    "query_iterative_feedback"})


class AgentConfig(BaseModel):
    """How the agent runs.

    Attributes
    ----------
    model:
        litellm model name (``openai/gpt-4o-mini``; ``openai/<name>`` with ``api_base`` for any
        OpenAI-compatible server).
    api_base, api_key:
        Endpoint and credential (the key is never logged or reported).
    max_steps:
        Model turns per chunk before the loop gives up (``step_cap``).
    max_reextractions:
        Re-extractions the protocol allows before moving on.
    strict_protocol:
        Refuse out-of-order tool calls (see :class:`~kgr.agent.protocol.ProtocolGuard`).
    chunking:
        Chunk size and overlap.
    temperature, timeout:
        Sampling temperature; seconds per LLM request.
    retry:
        Retries of transient LLM failures.
    max_result_chars:
        Tool results longer than this (JSON) are trimmed before they go back to the model.
    redo:
        Process chunks already marked processed.
    """

    model_config = ConfigDict(defer_build=True, extra="forbid")

    model: str = Field(min_length=1)
    api_base: ApiBase = None
    api_key: SecretStr | None = None
    max_steps: int = Field(12, ge=1, le=200)
    max_reextractions: int = Field(3, ge=0, le=20)
    strict_protocol: bool = True
    chunking: ChunkingConfig = Field(default_factory=ChunkingConfig)
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    timeout: float = Field(120.0, gt=0)
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    max_result_chars: int = Field(24_000, ge=1000)
    redo: bool = False


def _litellm() -> Any:
    return load_litellm("the agent")


def _transient(exc: BaseException) -> bool:
    ll = _litellm()
    if isinstance(exc, (ll.Timeout, TimeoutError, ll.RateLimitError, ll.InternalServerError,
                        ll.ServiceUnavailableError, ll.APIConnectionError, ConnectionError)):
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status >= 500 or status in (408, 409, 425, 429))


class _Usage:
    def __init__(self) -> None:
        self.calls = 0
        self.prompt = 0
        self.completion = 0
        self.cost = 0.0

    def add(self, resp: Any) -> None:
        u = getattr(resp, "usage", None)
        if u is not None:
            self.prompt += int(getattr(u, "prompt_tokens", 0) or 0)
            self.completion += int(getattr(u, "completion_tokens", 0) or 0)
        self.cost += response_cost(resp) or 0.0  # litellm's own pricing, never recomputed; unknown: 0


def _complete(config: AgentConfig, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
              usage: _Usage) -> Any:
    ll = _litellm()
    kw: dict[str, Any] = {"model": config.model, "messages": messages, "tools": tools, "tool_choice": "auto",
                          "temperature": config.temperature, "timeout": config.timeout, "num_retries": 0,
                          "max_retries": 0, "drop_params": True}
    if config.api_base:
        kw["api_base"] = config.api_base
    if config.api_key is not None:
        kw["api_key"] = config.api_key.get_secret_value()

    def once() -> Any:
        usage.calls += 1
        return ll.completion(**kw)

    def wait(state: Any) -> float:
        return config.retry.wait_seconds(state.attempt_number)

    try:
        resp = Retrying(stop=stop_after_attempt(config.retry.max_attempts), wait=wait,
                        retry=retry_if_exception(_transient), reraise=True)(once)
    except Exception as exc:  # noqa: BLE001 - every provider error ends the chunk with a reason
        detail = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
        raise KgrExtractionError(f"LLM request failed ({config.model}): {type(exc).__name__}: {detail}") from exc
    usage.add(resp)
    return resp


def _trim(value: Any, max_items: int) -> Any:
    if isinstance(value, dict):
        return {k: _trim(v, max_items) for k, v in value.items()}
    if isinstance(value, list):
        head = [_trim(v, max_items) for v in value[:max_items]]
        return head + ([f"... {len(value) - max_items} more"] if len(value) > max_items else [])
    return value


def _result_text(result: dict[str, Any], limit: int) -> str:
    text = json.dumps(result, ensure_ascii=False)
    if len(text) <= limit:
        return text
    slim = {k: v for k, v in result.items() if k != "relationships_results"}
    text = json.dumps(_trim(slim, MAX_LIST_ITEMS), ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 40] + ' ... (result truncated)"}'


def _summary(tool: str, r: dict[str, Any]) -> dict[str, Any]:
    """Key fields of a tool result, for the transcript."""
    if tool == "query_extraction_density":
        a = r.get("density_assessment", {})
        c = r.get("current_density", {})
        return {"assessment_level": a.get("assessment_level"), "needs_more_extraction": r.get("needs_more_extraction"),
                "entities": c.get("total_entities"), "relations": c.get("total_relations"),
                "recommendations": (r.get("recommendations") or [])[:3]}
    if tool == "query_coverage_feedback":
        return {"coverage_score": r.get("coverage_score"), "missing_types": r.get("missing_types")}
    if tool == "query_quality_metrics":
        return {"overall_score": r.get("overall_score"), "quality_level": r.get("quality_level")}
    if tool == "query_iterative_feedback":
        return {"should_continue_iteration": r.get("should_continue_iteration"),
                "trend": (r.get("progress_analysis") or {}).get("trend")}
    if tool == "query_entity_disambiguation":
        s = r.get("summary", {})
        return {"disambiguated_entities": s.get("disambiguated_entities"), "total_entities": s.get("total_entities"),
                "quality_score": r.get("quality_score")}
    if tool == STORAGE:
        st = r.get("storage_status", {})
        return {"overall_success": st.get("overall_success"),
                "entities": (st.get("entities_storage") or {}).get("stored_count"),
                "relations": (st.get("relations_storage") or {}).get("stored_count"),
                "entity_code": (st.get("entities_storage") or {}).get("code"),
                "relation_code": (st.get("relations_storage") or {}).get("code")}
    return {}


def _assistant_message(msg: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The assistant message as a dict to resend, and its tool calls as ``{id, name, arguments}``."""
    calls = []
    for i, tc in enumerate(getattr(msg, "tool_calls", None) or []):
        fn = getattr(tc, "function", None)
        calls.append({"id": getattr(tc, "id", None) or f"call_{i}", "name": getattr(fn, "name", "") or "",
                      "arguments": getattr(fn, "arguments", "") or ""})
    out: dict[str, Any] = {"role": "assistant", "content": getattr(msg, "content", None)}
    if calls:
        out["tool_calls"] = [{"id": c["id"], "type": "function",
                              "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls]
    return out, calls


def _call_tool(call: dict[str, Any], *, step: int, known: set[str], chunk: Chunk, tool_schema: dict[str, Any],
               guard: ProtocolGuard, context: ToolContext, max_chars: int
               ) -> tuple[TranscriptEntry, str, dict[str, Any] | None]:
    """One tool call the LLM asked for: its transcript entry, the tool message's content, and the
    tool's result (None when the call was refused or failed; the content then says why)."""
    name = call["name"]
    started = time.perf_counter()
    filled: list[str] = []
    args: Any = None
    problem: str | None = None
    result: dict[str, Any] | None = None
    if name not in known:
        problem = f"unknown tool {name[:80]!r}; the tools are: {', '.join(sorted(known))}"
    else:
        try:
            args = json.loads(call["arguments"] or "{}")
        except json.JSONDecodeError as exc:
            problem = f"arguments are not valid JSON ({exc.msg} at column {exc.colno})"
        if problem is None and not isinstance(args, dict):
            problem = "arguments must be a JSON object"
        if problem is None:
            if name in _TAKES_TEXT_AND_SCHEMA:
                for key, value in (("text", chunk.text), ("schema", tool_schema)):
                    if key not in args:
                        args[key] = value
                        filled.append(key)
            problem = guard.check(name)
        if problem is None:
            try:
                result = call_tool(name, args, context=context)
            except KgrValidationError as exc:
                problem = f"invalid arguments: {exc}"
            except KgrError as exc:
                problem = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    ms = round((time.perf_counter() - started) * 1000, 2)
    shown = None
    if isinstance(args, dict):
        shown = {k: (f"<chunk text, {len(v)} characters>" if k == "text" and isinstance(v, str) else v)
                 for k, v in args.items()}
    if result is not None:
        phase = guard.record(name, result)
        entry = TranscriptEntry(kind="tool", step=step, tool=name, phase=phase, ok=True, arguments=shown,
                                filled=filled, summary=_summary(name, result), ms=ms)
        return entry, _result_text(result, max_chars), result
    entry = TranscriptEntry(kind="tool", step=step, tool=name, phase=guard.phase(name) if name in known else "unknown",
                            ok=False, arguments=shown, filled=filled, error=problem, ms=ms)
    return entry, json.dumps({"error": problem}), None


def _mark_processed(graph: Graph, chunk: Chunk, stored_kg: dict[str, Any], *, extractor: str, rounds: int) -> None:
    """The chunk's processed mark with MENTIONS of the entities its storage call stored."""
    keys = []
    for etype, names in (stored_kg.get("entities") or {}).items():
        for n in names:
            try:
                keys.append(entity_key(etype, n))
            except KgrValidationError:
                continue
    commit_chunks(graph, [ChunkMark(chunk_id=chunk.id, entity_keys=keys, extractor=extractor, rounds=rounds)])


def run_chunk(chunk: Chunk, document: Document, *, graph: Graph, schema: KGSchema | None, config: AgentConfig,
              usage: _Usage | None = None, tools: list[dict[str, Any]] | None = None,
              on_entry: Callable[[TranscriptEntry], None] | None = None) -> ChunkRun:
    """Run the protocol on one chunk (see the module docstring)."""
    usage = usage or _Usage()
    tools = tools if tools is not None else function_definitions()
    known = set(tool_names())
    tool_schema = (ToolSchema.from_kg_schema(schema) if schema is not None else ToolSchema()).model_dump(mode="json")
    guard = ProtocolGuard(max_reextractions=config.max_reextractions, strict=config.strict_protocol)
    context = ToolContext(graph=graph, schema=schema, source=chunk.id, source_text=chunk.text)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system_prompt(schema, max_reextractions=config.max_reextractions)},
        {"role": "user", "content": user_prompt(chunk.text, source=chunk.id)},
    ]
    transcript: list[TranscriptEntry] = []
    entities_stored = relations_stored = calls_made = 0
    stored_kg: dict[str, Any] | None = None
    stop: str = "step_cap"
    error: str | None = None
    step = 0

    def add(entry: TranscriptEntry) -> None:
        transcript.append(entry)
        if on_entry is not None:
            on_entry(entry)

    for step in range(1, config.max_steps + 1):
        try:
            resp = _complete(config, messages, tools, usage)
            msg = resp.choices[0].message
        except KgrExtractionError as exc:
            stop, error = "llm_error", str(exc)
            break
        except (AttributeError, IndexError, TypeError) as exc:
            stop, error = "llm_error", f"unusable LLM response: {type(exc).__name__}"
            break
        assistant, calls = _assistant_message(msg)
        messages.append(assistant)
        add(TranscriptEntry(kind="assistant", step=step, content=assistant["content"],
                            tool_calls=[c["name"] for c in calls]))
        if not calls:
            stop = "finished" if guard.stored else "no_storage"
            break
        for call in calls:
            calls_made += 1
            entry, content, result = _call_tool(call, step=step, known=known, chunk=chunk, tool_schema=tool_schema,
                                                guard=guard, context=context, max_chars=config.max_result_chars)
            add(entry)
            if result is not None and entry.tool == STORAGE:
                st = result["storage_status"]
                entities_stored += int(st["entities_storage"]["stored_count"])
                relations_stored += int(st["relations_storage"]["stored_count"])
                stored_kg = result.get("final_kg")
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
        if guard.stored:
            stop = "stored"
            break

    if guard.stored and stored_kg is not None:
        _mark_processed(graph, chunk, stored_kg, extractor=f"agent:{config.model}", rounds=max(1, guard.density_calls))
    return ChunkRun(
        document_id=document.id, path=document.path, chunk_id=chunk.id, chunk_index=chunk.index,
        characters=len(chunk.text), stop_reason=stop, steps=step, tool_calls=calls_made,  # type: ignore[arg-type]
        phases=list(guard.phases), density_rounds=guard.density_calls, last_assessment=guard.last_level,
        entities_stored=entities_stored, relations_stored=relations_stored, error=error, transcript=transcript,
    )


def run_agent(paths: str | Path | Sequence[str | Path], *, graph: Graph, config: AgentConfig,
              schema: KGSchema | None = None,
              on_chunk: Callable[[ChunkRun], None] | None = None,
              on_entry: Callable[[TranscriptEntry], None] | None = None,
              documents: Iterable[Document] | None = None) -> AgentReport:
    """Run the agent over every chunk of the documents under ``paths`` (see the module docstring).

    Raises
    ------
    KgrValidationError
        A missing or unreadable path.
    KgrNeo4jUnavailable
        The store went away (chunks finished before that are stored and marked).
    """
    started = time.perf_counter()
    usage = _Usage()
    tools = function_definitions()
    runs: list[ChunkRun] = []
    n_docs = 0
    docs = documents if documents is not None else iter_documents(paths if not isinstance(paths, (str, Path)) else [paths])
    for doc in docs:
        n_docs += 1
        chunks = list(chunk_document(doc, config=config.chunking))
        upsert_chunks(graph, chunks, paths={doc.id: doc.path})
        done = set() if config.redo else processed_chunk_ids(graph, [c.id for c in chunks])
        for chunk in chunks:
            if chunk.id in done:
                run = ChunkRun(document_id=doc.id, path=doc.path, chunk_id=chunk.id, chunk_index=chunk.index,
                               characters=len(chunk.text), stop_reason="skipped", steps=0, tool_calls=0, phases=[],
                               density_rounds=0)
            else:
                run = run_chunk(chunk, doc, graph=graph, schema=schema, config=config, usage=usage, tools=tools,
                                on_entry=on_entry)
            log.info("chunk %s#%d: %s after %d steps", doc.path or doc.id[:12], chunk.index, run.stop_reason, run.steps)
            runs.append(run)
            if on_chunk is not None:
                on_chunk(run)
    return AgentReport(
        model=config.model, documents=n_docs, chunks=len(runs),
        stored_chunks=sum("storage" in r.phases for r in runs),
        failed_chunks=sum(r.stop_reason in ("llm_error", "step_cap", "no_storage") for r in runs),
        skipped_chunks=sum(r.stop_reason == "skipped" for r in runs),
        llm_calls=usage.calls, prompt_tokens=usage.prompt, completion_tokens=usage.completion,
        cost_usd=round(usage.cost, 6), seconds=round(time.perf_counter() - started, 3), runs=runs,
    )
