"""litellm access for kgr's LLM callers: loading litellm offline, prices, a call's cost tally, the
retry policy and how a provider failure is classified (conventions in :mod:`kgr.extract.llm`)."""

from __future__ import annotations

import asyncio
import random
import threading
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from kgr.extract.base import TokenUsage
from kgr.litellm_offline import load_litellm


__all__ = ["NO_KEY", "RetryPolicy", "CallTally", "load_litellm", "prepare_pricing",
           "provider_errors", "classify_failure", "retry_after", "response_cost", "message_text", "http_status",
           "placeholder_priced", "api_base_problem", "ApiBase", "credentials_problem", "sends_placeholder_key"]

#: API key sent to a custom ``api_base`` when none is configured (local servers usually ignore it).
NO_KEY = "kgr-no-key"


#: Models kgr registered with a zero-price placeholder entry (litellm had no price for them).
_PLACEHOLDER_PRICED: set[str] = set()
#: Models whose user-given prices kgr registered, with those prices.
_USER_PRICED: dict[str, tuple[float, float]] = {}
_PRICING_LOCK = threading.Lock()


def prepare_pricing(model: str, prices: tuple[float, float] | None) -> bool:
    """Make litellm's per-call pricing of ``model`` cheap and say whether it is priced.

    With ``prices`` (USD per input and output token) the model is registered with them. Without,
    a model litellm can price is left alone (``True``); one it cannot is registered once with an
    explicit zero price so that litellm finds it at once on every call (``False``: its calls are
    unpriced, not free). A model whose provider litellm cannot tell is left alone (``False``).
    """
    ll = load_litellm()
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

    model_config = ConfigDict(defer_build=True, extra="forbid")

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




def provider_errors() -> tuple[type[BaseException], ...]:
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


def http_status(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) else None


def _client_config_error(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception under it) is the OpenAI SDK refusing to build a request at
    all: a bare ``openai.OpenAIError`` (not an ``APIError``, which a request's answer or its
    transport raises), e.g. "Missing credentials" when no API key is configured. litellm reports it
    as ``InternalServerError`` (HTTP 500), which would otherwise be retried as a server error."""
    import openai

    return any(type(e) is openai.OpenAIError for e in (exc, *_causes(exc)))


def classify_failure(exc: BaseException) -> tuple[str, bool]:
    """``(reason, transient)`` for an exception raised by a completion request.

    ``"credentials"`` (never retried) is a request that never left: the client had no usable key.
    """
    import httpx
    import openai

    ll = load_litellm()
    if _client_config_error(exc):
        return "credentials", False
    if isinstance(exc, (ll.Timeout, TimeoutError, asyncio.TimeoutError)):
        return "timeout", True
    # litellm reports a refused connection as InternalServerError("Connection error."): look underneath
    for inner in _causes(exc):
        if isinstance(inner, (openai.APITimeoutError, httpx.TimeoutException)):
            return "timeout", True
        if isinstance(inner, (openai.APIConnectionError, httpx.ConnectError, ConnectionError)):
            return "connection_error", True
    if isinstance(exc, ll.RateLimitError) or http_status(exc) == 429:
        return "rate_limited", True
    if isinstance(exc, (ll.InternalServerError, ll.ServiceUnavailableError, ll.BadGatewayError)):
        return "server_error", True
    status = http_status(exc)
    if status is not None and (status >= 500 or status in (408, 409, 425)):
        return ("timeout" if status == 408 else "server_error"), True
    if isinstance(exc, (ll.APIConnectionError, ConnectionError)):
        return "connection_error", True
    return "request_error", False


def retry_after(exc: BaseException) -> float | None:
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


class CallTally:
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
            cost = load_litellm().completion_cost(completion_response=resp)
        except Exception:  # noqa: BLE001 - unknown models have no price
            cost = None
    return None if cost is None else float(cost)


def message_text(resp: Any) -> str | None:
    try:
        return resp.choices[0].message.content
    except (AttributeError, IndexError, KeyError, TypeError):
        return None


def placeholder_priced(model: str) -> bool:
    """Whether kgr registered a zero-price placeholder for ``model`` (litellm had no price for it)."""
    return model in _PLACEHOLDER_PRICED


def api_base_problem(api_base: str | None) -> str | None:
    """What is wrong with ``api_base`` as the base URL of an LLM server, or ``None`` when it can be
    one (``None`` or ``""``: the provider's own URL). An ``http://`` or ``https://`` URL with a host is
    asked for: anything else litellm only refuses request by request, each failure retried as a
    server or connection error (a missing scheme became ``/notaurl/chat/completions``, HTTP 500).

    >>> api_base_problem("http://127.0.0.1:8000/v1") is None
    True
    >>> api_base_problem("127.0.0.1:8000/v1")
    "'127.0.0.1:8000/v1' is not an http:// or https:// URL with a host (e.g. http://127.0.0.1:8000/v1)"
    """
    if not api_base:
        return None
    try:
        parts = urlsplit(api_base)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
    except ValueError:  # e.g. a port that is not a number
        ok = False
    if ok and api_base == api_base.strip():
        return None
    return f"{api_base!r} is not an http:// or https:// URL with a host (e.g. http://127.0.0.1:8000/v1)"


def _checked_api_base(api_base: str | None) -> str | None:
    if problem := api_base_problem(api_base):
        raise ValueError(problem)
    return api_base


#: A config model's ``api_base`` field: ``None``, or a URL :func:`api_base_problem` accepts.
ApiBase = Annotated[str | None, AfterValidator(_checked_api_base)]


def sends_placeholder_key(model: str, api_base: str | None, api_key: str | None) -> bool:
    """Whether kgr sends :data:`NO_KEY` for ``model``: an ``openai/`` model on a custom ``api_base``
    with no key given and none in ``OPENAI_API_KEY`` (local OpenAI-compatible servers need none)."""
    import os

    return not api_key and bool(api_base) and model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY")


def credentials_problem(model: str, *, api_base: str | None = None, api_key: str | None = None) -> str | None:
    """What stops every request to ``model`` before it is sent, or ``None``; checked without a request.

    - litellm cannot tell the model's provider (``get_llm_provider`` fails): an unknown model name;
    - no key was given and the provider's key variable (litellm's ``validate_environment``; only
      variables named ``*_API_KEY`` count, so providers with other kinds of credentials, such as
      AWS profiles or a local server's address, are never refused here) is unset. An ``openai/``
      model on a custom ``api_base`` is sent a placeholder key and passes.

    >>> credentials_problem("no-such-model-xyz")  # doctest: +ELLIPSIS
    "unknown model 'no-such-model-xyz': litellm cannot tell its provider; ...
    """
    ll = load_litellm()
    try:
        ll.get_llm_provider(model)
    except Exception:  # noqa: BLE001 - litellm raises BadRequestError (and others) for names it cannot route
        return (f"unknown model {model!r}: litellm cannot tell its provider; name it provider/model "
                "(e.g. openai/gpt-4o-mini, anthropic/claude-3-5-haiku-latest, or hosted_vllm/NAME with --api-base)")
    if api_key or sends_placeholder_key(model, api_base, api_key):
        return None
    try:
        env = ll.validate_environment(model, api_base=api_base) or {}
    except Exception:  # noqa: BLE001 - a provider litellm cannot check: the first request says it
        return None
    missing = [k for k in env.get("missing_keys") or [] if str(k).endswith("_API_KEY")]
    if missing:
        return (f"no API key for {model}: set {missing[0]} in the environment"
                + (" (or give --api-base a server that needs none)" if model.startswith("openai/") else ""))
    return None
