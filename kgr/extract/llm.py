"""The LLM extractor: any chat model litellm can reach, prompted with the schema and the tools' guidance.

Conventions
-----------
- **Model** by litellm name (``"openai/gpt-4o-mini"``, ``"anthropic/claude-3-5-haiku-latest"``,
  ``"ollama/llama3"``...). For an OpenAI-compatible server pass ``model="openai/<name>"`` with
  ``api_base`` (and ``api_key`` if the server wants one; without one, and without
  ``OPENAI_API_KEY`` in the environment, the placeholder :data:`NO_KEY` is sent, because the OpenAI
  client refuses to send a request without a key).
- **Output.** The model is asked for the agent tools' extracted-KG JSON
  ``{"entities": {Type: [names]}, "relations": {Type: [{"subject", "object"}]}}``. The reply is parsed
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
  once.
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
  pricing finds the model at once instead of scanning its fallback rules on every request (~1 ms of
  CPU per call); the calls are still counted as ``unpriced_calls``, never as free.
- **Failures** raise :class:`kgr.errors.KgrExtractionError`. Besides its message it carries
  ``reason`` (``"timeout"``, ``"rate_limited"``, ``"server_error"``, ``"connection_error"``,
  ``"request_error"`` or ``"invalid_output"``), ``attempts``, ``llm_calls``, ``usage``,
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
import json
import os
import random
import re
import threading
import weakref
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from tenacity import AsyncRetrying, RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from kgr.errors import KgrExtractionError
from kgr.extract.base import ExtractionResult, TokenUsage
from kgr.extract.validate import sanitize_extraction
from kgr.model.schema import KGSchema

__all__ = ["LLMExtractor", "RetryPolicy", "response_cost", "LLMOutput", "LLMPair", "build_messages", "system_prompt", "parse_reply",
           "NO_KEY"]

#: API key sent to a custom ``api_base`` when none is configured (local servers usually ignore it).
NO_KEY = "kgr-no-key"

_FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)


_LITELLM: Any = None


def _litellm():
    """Import litellm quietly and offline (see the module docstring); once per process."""
    global _LITELLM
    if _LITELLM is not None:
        return _LITELLM
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError as exc:  # pragma: no cover - litellm is a declared extra
        raise KgrExtractionError("the LLM extractor needs litellm; install it with: pip install kgr[llm]") from exc
    litellm.suppress_debug_info = True
    _LITELLM = litellm
    return litellm


#: Models kgr registered with a zero-price placeholder entry (litellm had no price for them).
_PLACEHOLDER_PRICED: set[str] = set()
#: Models whose user-given prices kgr registered, with those prices.
_USER_PRICED: dict[str, tuple[float, float]] = {}
_PRICING_LOCK = threading.Lock()


def _prepare_pricing(model: str, prices: tuple[float, float] | None) -> bool:
    """Make litellm's per-call pricing of ``model`` cheap and say whether it is priced.

    With ``prices`` (USD per input and output token) the model is registered with them. Without,
    a model litellm can price is left alone (``True``); one it cannot is registered once with an
    explicit zero price so that litellm finds it at once on every call (``False``: its calls are
    unpriced, not free). A model whose provider litellm cannot tell is left alone (``False``).
    """
    ll = _litellm()
    with _PRICING_LOCK:
        if prices is not None:
            if _USER_PRICED.get(model) != prices:
                entry: dict[str, Any] = {"input_cost_per_token": prices[0], "output_cost_per_token": prices[1]}
                if not _known_price(ll, model) or model in _PLACEHOLDER_PRICED:
                    # no built-in entry to inherit cache rates from: cached prompt tokens cost input tokens
                    entry.update(cache_read_input_token_cost=prices[0], cache_creation_input_token_cost=prices[0])
                if not _register(ll, model, entry):
                    return False
                _USER_PRICED[model] = prices
                _PLACEHOLDER_PRICED.discard(model)
            return True
        if model in _USER_PRICED:
            return True
        if model in _PLACEHOLDER_PRICED:
            return False
        if _known_price(ll, model):
            return True
        zero = {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0,
                "cache_read_input_token_cost": 0.0, "cache_creation_input_token_cost": 0.0}
        if _register(ll, model, zero):
            _PLACEHOLDER_PRICED.add(model)
        return False


def _known_price(ll: Any, model: str) -> bool:
    try:
        ll.cost_per_token(model=model, prompt_tokens=1, completion_tokens=1)
        return True
    except Exception:  # noqa: BLE001 - litellm raises plain exceptions for unmapped models and providers
        return False


def _register(ll: Any, model: str, entry: dict[str, Any]) -> bool:
    try:
        provider = ll.get_llm_provider(model)[1]
    except Exception:  # noqa: BLE001 - no provider: litellm would not price it anyway
        return False
    ll.register_model({model: {**entry, "litellm_provider": provider, "mode": "chat"}},
                      persist_across_reloads=False)
    return True


class RetryPolicy(BaseModel):
    """How transient LLM failures are retried (defaults suit interactive use; tests shrink them)."""

    model_config = ConfigDict(extra="forbid")

    max_attempts: int = Field(4, ge=1, le=20, description="requests per call, first included")
    initial_backoff: float = Field(0.5, ge=0.0, description="seconds before the first retry")
    max_backoff: float = Field(8.0, ge=0.0, description="cap on one wait, seconds")
    jitter: float = Field(0.1, ge=0.0, description="uniform random seconds added to each wait")

    def wait_seconds(self, attempt: int, retry_after: float | None = None) -> float:
        """Wait after failed attempt number ``attempt`` (1-based).

        >>> RetryPolicy(initial_backoff=0.5, max_backoff=3, jitter=0).wait_seconds(1)
        0.5
        >>> RetryPolicy(initial_backoff=0.5, max_backoff=3, jitter=0).wait_seconds(4)
        3.0
        >>> RetryPolicy(initial_backoff=0.5, max_backoff=3, jitter=0).wait_seconds(1, retry_after=2)
        2.0
        """
        base = min(self.max_backoff, self.initial_backoff * 2 ** (attempt - 1))
        if retry_after is not None:
            base = max(base, min(float(retry_after), self.max_backoff))
        return float(base) + (random.uniform(0, self.jitter) if self.jitter else 0.0)


class LLMPair(BaseModel):
    """A relation instance in the model's reply."""

    model_config = ConfigDict(extra="ignore")

    subject: str
    object: str


class LLMOutput(BaseModel):
    """The JSON the model must return (extra top-level keys such as notes are ignored)."""

    model_config = ConfigDict(extra="ignore")

    entities: dict[str, list[str]] = Field(default_factory=dict)
    relations: dict[str, list[LLMPair]] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _nulls_are_empty(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = {**data}
            for k in ("entities", "relations"):
                if data.get(k) is None:
                    data.pop(k, None)
        return data


class _BadOutput(Exception):
    """The model's reply is not usable; the message is sent back in the repair request."""


def parse_reply(content: str | None) -> LLMOutput:
    """Parse and validate a model reply.

    Raises
    ------
    _BadOutput
        With a short description of what is wrong (sent back to the model).

    >>> parse_reply('```json\\n{"entities": {"Person": ["Ada"]}}\\n```').entities
    {'Person': ['Ada']}
    """
    if content is None or not content.strip():
        raise _BadOutput("the reply was empty")
    text = content.strip()
    m = _FENCE.match(text)
    if m:
        text = m.group(1).strip()
    if not text.startswith("{"):
        a, b = text.find("{"), text.rfind("}")
        if a >= 0 and b > a:
            text = text[a : b + 1]
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _BadOutput(f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from exc
    if not isinstance(data, dict):
        raise _BadOutput(f"expected a JSON object, got {type(data).__name__}")
    try:
        return LLMOutput.model_validate(data)
    except ValidationError as exc:
        errs = exc.errors(include_url=False, include_input=False)
        first = errs[0]
        loc = ".".join(str(p) for p in first.get("loc", ()))
        more = f" (+{len(errs) - 1} more errors)" if len(errs) > 1 else ""
        raise _BadOutput(f"JSON does not match the required format at {loc}: {first['msg']}{more}") from exc


_SYSTEM = """You extract a knowledge graph from text for a typed graph database.

Answer with ONE JSON object and nothing else, in exactly this form:
{"entities": {"<EntityType>": ["<name>", ...], ...},
 "relations": {"<RELATION_TYPE>": [{"subject": "<name>", "object": "<name>"}, ...], ...}}

Rules:
- Use the entity types and relation types of the schema below.
- Every relation's subject and object must also be listed under "entities", spelled identically.
- A relation's subject must have one of the relation's domain types and its object one of its range types.
- Name each entity by its most complete name in the text; do not add facts the text does not state.
- If the text clearly states an important entity or relation that no schema type fits, you may use a
  new descriptive type name (PascalCase for entity types, UPPER_SNAKE_CASE for relation types); it will
  be reviewed as a proposed schema extension.
- No comments, no markdown, JSON only."""


def _schema_text(schema: KGSchema, max_examples: int = 3) -> str:
    lines = ["Schema", "Entity types:"]
    if not schema.entity_types:
        lines.append("- (open: choose descriptive PascalCase types)")
    for name, spec in schema.entity_types.items():
        desc = f": {spec.description}" if spec.description else ""
        examples = (spec.names or list(spec.aliases))[:max_examples]
        ex = f" (e.g. {', '.join(examples)})" if examples else ""
        lines.append(f"- {name}{desc}{ex}")
    lines.append("Relation types:")
    if not schema.relation_types:
        lines.append("- (open: choose descriptive UPPER_SNAKE_CASE types)")
    for name, spec in schema.relation_types.items():
        dom = " | ".join(spec.domain) or "any"
        rng = " | ".join(spec.range) or "any"
        flags = []
        if spec.functional:
            flags.append("functional: at most one object per subject")
        if spec.symmetric:
            flags.append("symmetric")
        flag = f" [{'; '.join(flags)}]" if flags else ""
        desc = f": {spec.description}" if spec.description else ""
        lines.append(f"- {name} ({dom} -> {rng}){flag}{desc}")
    return "\n".join(lines)


def system_prompt(schema: KGSchema) -> str:
    """The system message: the extraction rules and the schema."""
    return f"{_SYSTEM}\n\n{_schema_text(schema)}"


def build_messages(chunk_text: str, schema: KGSchema, guidance: list[str] | None = None,
                   *, system: str | None = None) -> list[dict[str, str]]:
    """The chat messages for one extraction: system rules + schema, guidance, then the text.

    ``system`` is :func:`system_prompt` of ``schema`` when the caller already has it."""
    if system is None:
        system = system_prompt(schema)
    user = []
    if guidance:
        user.append("Recommendations from the assessment of the previous extraction of this text (follow them):")
        user.extend(f"- {g}" for g in guidance)
        user.append("")
    user.append('Text (between the lines """):')
    user.append('"""')
    user.append(chunk_text)
    user.append('"""')
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n".join(user)}]


def _repair_messages(messages: list[dict[str, str]], bad: str | None, problem: str) -> list[dict[str, str]]:
    return [
        *messages,
        {"role": "assistant", "content": bad or ""},
        {
            "role": "user",
            "content": (
                f"Your reply could not be used: {problem}. Reply again with only the corrected JSON object "
                'in the required form {"entities": {...}, "relations": {...}}, nothing else.'
            ),
        },
    ]


def _provider_errors() -> tuple[type[BaseException], ...]:
    """What a completion request raises for provider, network and protocol failures (litellm wraps
    provider errors in subclasses of ``openai.OpenAIError``). Anything else is a bug and propagates."""
    import httpx
    import openai

    return (openai.OpenAIError, httpx.HTTPError, TimeoutError, ConnectionError)


def _causes(exc: BaseException) -> list[BaseException]:
    """The exceptions underneath ``exc`` (``__cause__``/``__context__`` chain), innermost last."""
    out: list[BaseException] = []
    seen = {id(exc)}
    cur = exc.__cause__ or exc.__context__
    while cur is not None and id(cur) not in seen and len(out) < 10:
        out.append(cur)
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return out


def _status(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) else None


def _classify(exc: BaseException) -> tuple[str, bool]:
    """``(reason, transient)`` for an exception raised by a completion request."""
    import httpx
    import openai

    ll = _litellm()
    if isinstance(exc, (ll.Timeout, TimeoutError, asyncio.TimeoutError)):
        return "timeout", True
    # litellm reports a refused connection as InternalServerError("Connection error."): look underneath
    for inner in _causes(exc):
        if isinstance(inner, (openai.APITimeoutError, httpx.TimeoutException)):
            return "timeout", True
        if isinstance(inner, (openai.APIConnectionError, httpx.ConnectError, ConnectionError)):
            return "connection_error", True
    if isinstance(exc, ll.RateLimitError) or _status(exc) == 429:
        return "rate_limited", True
    if isinstance(exc, (ll.InternalServerError, ll.ServiceUnavailableError, ll.BadGatewayError)):
        return "server_error", True
    status = _status(exc)
    if status is not None and (status >= 500 or status in (408, 409, 425)):
        return ("timeout" if status == 408 else "server_error"), True
    if isinstance(exc, (ll.APIConnectionError, ConnectionError)):
        return "connection_error", True
    return "request_error", False


def _retry_after(exc: BaseException) -> float | None:
    for holder in (getattr(exc, "response", None), exc):
        headers = getattr(holder, "headers", None)
        if headers is None:
            headers = getattr(holder, "litellm_response_headers", None)
        try:
            value = headers.get("retry-after") if headers is not None else None
        except Exception:  # noqa: BLE001 - odd header containers
            value = None
        if value is not None:
            try:
                return max(0.0, float(value))
            except (TypeError, ValueError):
                return None
    return None


class _Tally:
    """Accounting across the requests of one extract call."""

    def __init__(self, placeholder: bool = False) -> None:
        self.usage = TokenUsage()
        self.cost = 0.0
        self.calls = 0
        self.attempts = 0
        self.unpriced = 0
        self.placeholder = placeholder  # litellm prices the model at 0.0 only because kgr registered it so

    def add_response(self, resp: Any) -> None:
        """Add an answered request: its tokens, and the cost litellm computed for it.

        litellm prices every response it returns (``_hidden_params["response_cost"]``, ``None`` when
        it has no price for the model); that value is used as is, never recomputed. Only a response
        that did not go through litellm's pricing at all (no such key) is priced here.
        """
        u = getattr(resp, "usage", None)
        if u is not None:
            self.usage = self.usage + TokenUsage(
                prompt_tokens=int(getattr(u, "prompt_tokens", 0) or 0),
                completion_tokens=int(getattr(u, "completion_tokens", 0) or 0),
            )
        cost = response_cost(resp)
        if cost is None or (self.placeholder and not cost):
            self.unpriced += 1  # unknown cost, counted as 0.0
            return
        self.cost += float(cost)


def response_cost(resp: Any) -> float | None:
    """USD cost of one litellm response, or None when unknown.

    litellm prices every response it returns (``_hidden_params["response_cost"]``, ``None`` when it
    has no price for the model); that value is used as is, never recomputed. Only a response that
    did not go through litellm's pricing at all (no such key) is priced here.
    """
    hidden = getattr(resp, "_hidden_params", None)
    if isinstance(hidden, dict) and "response_cost" in hidden:
        cost = hidden["response_cost"]
    else:
        try:
            cost = _litellm().completion_cost(completion_response=resp)
        except Exception:  # noqa: BLE001 - unknown models have no price
            cost = None
    return None if cost is None else float(cost)


def _message_text(resp: Any) -> str | None:
    try:
        return resp.choices[0].message.content
    except (AttributeError, IndexError, KeyError, TypeError):
        return None


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

    # -- request plumbing --------------------------------------------------------------------
    @property
    def priced(self) -> bool:
        """Whether litellm has a price for this model (user-given prices included)."""
        if self._priced is None:
            self._priced = _prepare_pricing(self.model, self.prices)
        return self._priced

    def _tally(self) -> "_Tally":
        # a response priced above 0 is priced whatever this says (e.g. a base_model in completion_kwargs)
        return _Tally(placeholder=not self.priced and self.model in _PLACEHOLDER_PRICED)

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
        elif self.api_base and self.model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
            kw["api_key"] = NO_KEY  # local OpenAI-compatible servers often need none; the client insists
        if self.max_tokens:
            kw["max_tokens"] = self.max_tokens
        if self.json_mode:
            kw["response_format"] = {"type": "json_object"}
        kw.update(self.completion_kwargs)
        return kw

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        return self.retry.wait_seconds(state.attempt_number, _retry_after(exc) if exc else None)

    def _retry_args(self) -> dict[str, Any]:
        return {
            "stop": stop_after_attempt(self.retry.max_attempts),
            "wait": self._wait,
            "retry": retry_if_exception(lambda e: _classify(e)[1]),
            "reraise": True,
        }

    def _failure(self, exc: BaseException, tally: _Tally) -> KgrExtractionError:
        reason, transient = _classify(exc)
        status = _status(exc)
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if len(detail) > 300:
            detail = detail[:297] + "..."
        if reason == "timeout":
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
        return self._error(msg, reason, tally)

    def _error(self, msg: str, reason: str, tally: _Tally) -> KgrExtractionError:
        err = KgrExtractionError(msg)
        err.reason = reason  # type: ignore[attr-defined]
        err.attempts = tally.attempts  # type: ignore[attr-defined]
        err.llm_calls = tally.calls  # type: ignore[attr-defined]
        err.usage = tally.usage  # type: ignore[attr-defined]
        err.cost_usd = tally.cost  # type: ignore[attr-defined]
        err.unpriced_calls = tally.unpriced  # type: ignore[attr-defined]
        return err

    def _complete(self, messages: list[dict[str, str]], tally: _Tally) -> str | None:
        ll = _litellm()
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
        except _provider_errors() as exc:
            raise self._failure(exc, tally) from exc
        tally.add_response(resp)
        return _message_text(resp)

    def _async_sem(self) -> asyncio.Semaphore | None:
        if not self.max_concurrency:
            return None
        loop = asyncio.get_running_loop()
        sem = self._async_sems.get(loop)
        if sem is None:
            sem = self._async_sems[loop] = asyncio.Semaphore(self.max_concurrency)
        return sem

    async def _acomplete(self, messages: list[dict[str, str]], tally: _Tally) -> str | None:
        ll = _litellm()
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
        except _provider_errors() as exc:
            raise self._failure(exc, tally) from exc
        tally.add_response(resp)
        return _message_text(resp)

    def _result(self, out: LLMOutput, schema: KGSchema, tally: _Tally) -> ExtractionResult:
        clean = sanitize_extraction(out.entities, out.relations, schema)
        return ExtractionResult(
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
        tally = self._tally()
        messages = build_messages(chunk_text, schema, guidance, system=self._system(schema))
        content = self._complete(messages, tally)
        try:
            return self._result(parse_reply(content), schema, tally)
        except _BadOutput as first:
            content = self._complete(_repair_messages(messages, content, str(first)), tally)
            try:
                return self._result(parse_reply(content), schema, tally)
            except _BadOutput as second:
                msg = f"LLM reply still invalid after one repair request ({self.model}): {second}"
                raise self._error(msg, "invalid_output", tally) from second

    async def aextract(
        self, chunk_text: str, schema: KGSchema, *, guidance: list[str] | None = None
    ) -> ExtractionResult:
        """Like :meth:`extract`, on the running event loop (``litellm.acompletion``)."""
        tally = self._tally()
        messages = build_messages(chunk_text, schema, guidance, system=self._system(schema))
        content = await self._acomplete(messages, tally)
        try:
            return self._result(parse_reply(content), schema, tally)
        except _BadOutput as first:
            content = await self._acomplete(_repair_messages(messages, content, str(first)), tally)
            try:
                return self._result(parse_reply(content), schema, tally)
            except _BadOutput as second:
                msg = f"LLM reply still invalid after one repair request ({self.model}): {second}"
                raise self._error(msg, "invalid_output", tally) from second
