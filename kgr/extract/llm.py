"""The LLM extractor: any chat model litellm can reach, prompted with the schema and the tools' guidance.

Conventions
-----------
- **Model** by litellm name (``"openai/gpt-4o-mini"``, ``"anthropic/claude-3-5-haiku-latest"``,
  ``"ollama/llama3"``...). For an OpenAI-compatible server pass ``model="openai/<name>"`` with
  ``api_base`` (and ``api_key`` if the server wants one; without one, and without
  ``OPENAI_API_KEY`` in the environment, the placeholder :data:`NO_KEY` is sent, because the OpenAI
  client refuses to send a request without a key), or ``model="hosted_vllm/<name>"``: litellm's
  own HTTP client instead of the OpenAI SDK: the same requests for less CPU per call
  (``docs/benchmarks.md``), which counts when one process keeps dozens of requests in flight.
- **Output.** The model is asked for the agent tools' extracted-KG JSON
  ``{"entities": {Type: [names]}, "relations": {Type: [{"subject", "object", "quote"}]}}`` (``quote``:
  the sentence stating the relation, copied from the text; :func:`kgr.text.spans.locate` turns it,
  or when it is missing or not found the first sentence naming both ends, into the relation's
  span in ``result.spans``). The reply is parsed
  (code fences and text around the outermost ``{...}`` are tolerated) and validated by
  :class:`LLMOutput`. On invalid output, **one** repair request is sent: the conversation plus the
  bad reply and the error, asking for corrected JSON. If that fails too, the chunk fails.
- **Schema.** The validated output goes through :func:`kgr.extract.validate.sanitize_extraction`:
  types outside the schema land in ``proposed_types``, domain/range violations and other bad items
  in ``rejected`` with a reason.
- **Retries.** Transient failures (HTTP 408/409/429/5xx, timeouts, connection errors) are retried
  with exponential backoff (:class:`RetryPolicy`: ``max_attempts`` requests per call, the wait
  doubling from ``initial_backoff`` up to ``max_backoff`` seconds, at least a server's
  ``Retry-After`` within that cap). litellm's and the OpenAI client's own retries are switched off so
  that the policy is the only one. Other errors (authentication, bad request, unknown model) fail at
  once, and so does a request the client refuses to send (no API key: litellm reports it as HTTP
  500, kgr as reason ``"credentials"``). :meth:`LLMExtractor.preflight` finds an unknown model or a
  missing key before any request.
- **Timeout.** ``timeout`` seconds per request (each attempt).
- **Accounting.** ``usage`` sums the provider-reported tokens of every answered request;
  ``cost_usd`` sums the cost litellm already computed for each answered request
  (``response._hidden_params["response_cost"]``; it is never priced a second time);
  ``unpriced_calls`` counts the answered requests litellm could not price (no price for the model):
  their cost is unknown and counted as 0.0, so a report can say so instead of showing "free".
  ``llm_calls`` counts requests sent (attempts and the repair included).
- **Prices.** ``input_cost_per_token``/``output_cost_per_token`` (USD per token, both or neither)
  price a model litellm does not know, or override its price: they are registered once per process
  with ``litellm.register_model`` (what litellm itself does, on every request, for the per-request
  pricing keyword arguments). For a model litellm cannot price and no prices given, kgr registers an
  explicit zero-price entry once (``persist_across_reloads=False``), so that litellm's own per-call
  pricing finds the model at once instead of scanning its fallback rules on every request; the calls are still counted as ``unpriced_calls``, never as free.
- **Failures** raise :class:`kgr.errors.KgrExtractionError`. Besides its message it carries
  ``reason`` (``"timeout"``, ``"rate_limited"``, ``"server_error"``, ``"connection_error"``,
  ``"credentials"``, ``"request_error"`` or ``"invalid_output"``), ``attempts``, ``llm_calls``, ``usage``,
  ``cost_usd`` and ``unpriced_calls`` so a batch report can account for failed chunks too.
- **Offline price map.** Importing litellm normally downloads its model price map; kgr sets
  ``LITELLM_LOCAL_MODEL_COST_MAP=True`` (unless already set) so the bundled map is used and no
  request leaves the machine except to the model. (litellm has no usage telemetry to switch off any
  more; kgr only sets ``suppress_debug_info``.)
- **Concurrency.** :meth:`LLMExtractor.aextract` uses ``litellm.acompletion``; ``max_concurrency``
  bounds requests in flight per extractor (sync and async calls each); see also
  :func:`kgr.extract.base.extract_concurrently`.
"""


from __future__ import annotations

import asyncio
import threading
import weakref
from typing import Any

from tenacity import AsyncRetrying, RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from kgr.errors import KgrExtractionError, KgrValidationError
from kgr.extract.base import ExtractionResult, RelationSpan
from kgr.text.spans import locate
from kgr.text.sentences import sentence_spans
from kgr.extract.validate import sanitize_extraction
from kgr.model.schema import KGSchema

from kgr.extract.llm_client import (
    NO_KEY, CallTally, RetryPolicy, api_base_problem, classify_failure, credentials_problem, http_status,
    load_litellm, message_text, placeholder_priced, prepare_pricing, provider_errors, retry_after,
    sends_placeholder_key,
)
from kgr.extract.llm_prompt import BadOutput, LLMOutput, build_messages, parse_reply, repair_messages, system_prompt

__all__ = ["LLMExtractor"]


class LLMExtractor:
    """Extract with a chat model through litellm (conventions in the module docstring).

    Parameters
    ----------
    model:
        litellm model name, e.g. ``"openai/gpt-4o-mini"``.
    api_base, api_key:
        For OpenAI-compatible servers and explicit credentials (never logged).
    timeout:
        Seconds per request.
    temperature, max_tokens:
        Sampling settings passed to the model.
    json_mode:
        Ask for ``response_format={"type": "json_object"}`` (dropped for providers without it).
    retry:
        The :class:`RetryPolicy`.
    max_concurrency:
        Requests in flight at once through this extractor; None = unbounded.
    completion_kwargs:
        Extra keyword arguments for ``litellm.completion`` (e.g. ``{"seed": 7}``).
    input_cost_per_token, output_cost_per_token:
        USD per prompt and completion token, both or neither: the model's price when litellm has
        none (or to override litellm's). Registered with ``litellm.register_model`` on the first
        request, for the whole process.
    """

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        json_mode: bool = True,
        retry: RetryPolicy | None = None,
        max_concurrency: int | None = None,
        completion_kwargs: dict[str, Any] | None = None,
        input_cost_per_token: float | None = None,
        output_cost_per_token: float | None = None,
    ):
        if not model or not model.strip():
            raise KgrExtractionError("the LLM extractor needs a model name (e.g. openai/gpt-4o-mini)")
        if problem := api_base_problem(api_base):
            raise KgrValidationError(problem, field="api_base")
        if timeout <= 0:
            raise KgrExtractionError(f"timeout must be positive, got {timeout}")
        if max_concurrency is not None and max_concurrency < 1:
            raise KgrExtractionError(f"max_concurrency must be at least 1, got {max_concurrency}")
        if (input_cost_per_token is None) != (output_cost_per_token is None):
            raise KgrExtractionError("give both input_cost_per_token and output_cost_per_token, or neither")
        if input_cost_per_token is not None and (input_cost_per_token < 0 or output_cost_per_token < 0):  # type: ignore[operator]
            raise KgrExtractionError("token prices cannot be negative")
        self.model = model
        self.api_base = api_base
        self._api_key = api_key
        self.timeout = timeout
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.json_mode = json_mode
        self.retry = retry or RetryPolicy()
        self.max_concurrency = max_concurrency
        self.completion_kwargs = dict(completion_kwargs or {})
        self.prices: tuple[float, float] | None = (
            None if input_cost_per_token is None else (float(input_cost_per_token), float(output_cost_per_token))  # type: ignore[arg-type]
        )
        self._priced: bool | None = None  # decided on the first request (litellm is imported lazily)
        self._system_cache: tuple[KGSchema, str] | None = None
        self._sync_sem = threading.BoundedSemaphore(max_concurrency) if max_concurrency else None
        self._async_sems: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )
        self.name = f"llm:{model}"

    def __repr__(self) -> str:
        return f"LLMExtractor(model={self.model!r}, api_base={self.api_base!r}, timeout={self.timeout})"

    def preflight(self) -> None:
        """Check, without a request, what would make every request fail: an unknown model name or a
        missing API key (:func:`~kgr.extract.llm_client.credentials_problem`). A job calls it before
        it reads any document.

        Raises
        ------
        KgrExtractionError
            The model cannot be routed or its key is missing (the message names the fix).
        """
        if problem := credentials_problem(self.model, api_base=self.api_base, api_key=self._api_key):
            raise KgrExtractionError(problem)

    # -- request plumbing --------------------------------------------------------------------
    @property
    def priced(self) -> bool:
        """Whether litellm has a price for this model (user-given prices included)."""
        if self._priced is None:
            self._priced = prepare_pricing(self.model, self.prices)
        return self._priced

    def new_tally(self) -> "CallTally":
        # a response priced above 0 is priced whatever this says (e.g. a base_model in completion_kwargs)
        return CallTally(placeholder=not self.priced and placeholder_priced(self.model))

    def _system(self, schema: KGSchema) -> str:
        """:func:`system_prompt`, built once per schema object (a batch uses one schema)."""
        cached = self._system_cache
        if cached is not None and cached[0] is schema:
            return cached[1]
        text = system_prompt(schema)
        self._system_cache = (schema, text)
        return text

    def _kwargs(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        kw: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "timeout": self.timeout,
            "max_retries": 0,  # the OpenAI client's own retries: off, RetryPolicy decides
            "num_retries": 0,  # litellm's retries: off
            "drop_params": True,
        }
        if self.api_base:
            kw["api_base"] = self.api_base
        if self._api_key:
            kw["api_key"] = self._api_key
        elif sends_placeholder_key(self.model, self.api_base, self._api_key):
            kw["api_key"] = NO_KEY  # local OpenAI-compatible servers often need none; the client insists
        if self.max_tokens:
            kw["max_tokens"] = self.max_tokens
        if self.json_mode:
            kw["response_format"] = {"type": "json_object"}
        kw.update(self.completion_kwargs)
        return kw

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        return self.retry.wait_seconds(state.attempt_number, retry_after(exc) if exc else None)

    def _retry_args(self) -> dict[str, Any]:
        return {
            "stop": stop_after_attempt(self.retry.max_attempts),
            "wait": self._wait,
            "retry": retry_if_exception(lambda e: classify_failure(e)[1]),
            "reraise": True,
        }

    def _failure(self, exc: BaseException, tally: CallTally) -> KgrExtractionError:
        reason, transient = classify_failure(exc)
        status = http_status(exc)
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if len(detail) > 300:
            detail = detail[:297] + "..."
        if reason == "credentials":  # the client refused to send anything: no HTTP status
            status = None
            msg = (f"LLM request not sent: no usable API key for {self.model} ({detail}); set the provider's "
                   "key variable (e.g. OPENAI_API_KEY) and re-run")
        elif reason == "timeout":
            msg = (
                f"LLM request timed out after {self.timeout:g} s on each of {tally.attempts} attempt(s) "
                f"({self.model})"
            )
        elif transient:
            what = {"rate_limited": "rate limited (HTTP 429)", "server_error": f"server error (HTTP {status})",
                    "connection_error": "connection failed"}[reason]
            msg = f"LLM request {what} on each of {tally.attempts} attempt(s) ({self.model}): {detail}"
        else:
            code = f" (HTTP {status})" if status else ""
            msg = f"LLM request failed{code} ({self.model}): {detail}"
        return self._error(msg, reason, tally, status)

    def _error(self, msg: str, reason: str, tally: CallTally, status: int | None = None) -> KgrExtractionError:
        err = KgrExtractionError(msg)
        err.reason = reason  # type: ignore[attr-defined]
        err.http_status = status  # type: ignore[attr-defined]
        err.attempts = tally.attempts  # type: ignore[attr-defined]
        err.llm_calls = tally.calls  # type: ignore[attr-defined]
        err.usage = tally.usage  # type: ignore[attr-defined]
        err.cost_usd = tally.cost  # type: ignore[attr-defined]
        err.unpriced_calls = tally.unpriced  # type: ignore[attr-defined]
        return err

    def complete(self, messages: list[dict[str, str]], tally: CallTally) -> str | None:
        ll = load_litellm()
        tally.attempts = 0

        def once() -> Any:
            tally.calls += 1
            tally.attempts += 1
            if self._sync_sem is None:
                return ll.completion(**self._kwargs(messages))
            with self._sync_sem:
                return ll.completion(**self._kwargs(messages))

        try:
            resp = Retrying(**self._retry_args())(once)
        except provider_errors() as exc:
            raise self._failure(exc, tally) from exc
        tally.add_response(resp)
        return message_text(resp)

    def _async_sem(self) -> asyncio.Semaphore | None:
        if not self.max_concurrency:
            return None
        loop = asyncio.get_running_loop()
        sem = self._async_sems.get(loop)
        if sem is None:
            sem = self._async_sems[loop] = asyncio.Semaphore(self.max_concurrency)
        return sem

    async def _acomplete(self, messages: list[dict[str, str]], tally: CallTally) -> str | None:
        ll = load_litellm()
        sem = self._async_sem()
        attempts = 0

        async def once() -> Any:
            nonlocal attempts
            tally.calls += 1
            attempts += 1
            tally.attempts = attempts
            if sem is None:
                return await ll.acompletion(**self._kwargs(messages))
            async with sem:
                return await ll.acompletion(**self._kwargs(messages))

        try:
            resp = await AsyncRetrying(**self._retry_args())(once)
        except provider_errors() as exc:
            raise self._failure(exc, tally) from exc
        tally.add_response(resp)
        return message_text(resp)

    def _result(self, out: LLMOutput, schema: KGSchema, tally: CallTally, text: str = "") -> ExtractionResult:
        clean = sanitize_extraction(out.entities, out.relations, schema)
        quotes = {(r, p.subject.strip(), p.object.strip()): p.quote for r, ps in out.relations.items() for p in ps}
        sents = sentence_spans(text)
        spans = []
        for r, ps in clean.kg.relations.items():
            for p in ps:
                at = locate(text, p.subject, p.object, quotes.get((r, p.subject.strip(), p.object.strip())), sents)
                if at is not None:
                    spans.append(RelationSpan(relation=r, subject=p.subject, object=p.object, start=at[0], end=at[1]))
        return ExtractionResult(
            spans=spans,
            kg=clean.kg,
            proposed_types=clean.proposed,
            rejected=clean.rejected,
            usage=tally.usage,
            cost_usd=tally.cost,
            unpriced_calls=tally.unpriced,
            llm_calls=tally.calls,
            extractor=self.name,
        )

    # -- the interface -----------------------------------------------------------------------
    def extract(self, chunk_text: str, schema: KGSchema, *, guidance: list[str] | None = None) -> ExtractionResult:
        """Extract from one chunk (blocking).

        Raises
        ------
        KgrExtractionError
            After the retries are spent, on a non-transient provider error, or when the reply is
            still invalid after the one repair request (``reason`` says which).
        """
        tally = self.new_tally()
        messages = build_messages(chunk_text, schema, guidance, system=self._system(schema))
        content = self.complete(messages, tally)
        try:
            return self._result(parse_reply(content), schema, tally, chunk_text)
        except BadOutput as first:
            content = self.complete(repair_messages(messages, content, str(first)), tally)
            try:
                return self._result(parse_reply(content), schema, tally, chunk_text)
            except BadOutput as second:
                msg = f"LLM reply still invalid after one repair request ({self.model}): {second}"
                raise self._error(msg, "invalid_output", tally) from second

    async def aextract(
        self, chunk_text: str, schema: KGSchema, *, guidance: list[str] | None = None
    ) -> ExtractionResult:
        """Like :meth:`extract`, on the running event loop (``litellm.acompletion``)."""
        tally = self.new_tally()
        messages = build_messages(chunk_text, schema, guidance, system=self._system(schema))
        content = await self._acomplete(messages, tally)
        try:
            return self._result(parse_reply(content), schema, tally, chunk_text)
        except BadOutput as first:
            content = await self._acomplete(repair_messages(messages, content, str(first)), tally)
            try:
                return self._result(parse_reply(content), schema, tally, chunk_text)
            except BadOutput as second:
                msg = f"LLM reply still invalid after one repair request ({self.model}): {second}"
                raise self._error(msg, "invalid_output", tally) from second
