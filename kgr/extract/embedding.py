"""Text embeddings through litellm (``litellm.embedding``), for entity names and slice queries.

:class:`LiteLLMEmbedder` is an :data:`~kgr.tools.EmbedFn`: texts in, one vector per text out, in
input order. It follows the LLM extractor's conventions (:mod:`kgr.extract.llm`): ``api_base``
points at any OpenAI-compatible server (``openai/<model>``), a local server gets a placeholder key
when none is configured, transient failures (timeouts, refused connections, 429, 5xx) are retried
by the :class:`~kgr.extract.llm_client.RetryPolicy` honouring ``Retry-After``, and anything else
fails at once. (For OpenAI-compatible servers the SDK's own two retries come first: litellm's
embedding path reads ``max_retries=0`` as unset, unlike its completion path.) Failures raise :class:`~kgr.errors.KgrExtractionError` naming the reason; a reply
whose vectors are missing, ragged, or not numbers is refused, never stored.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from kgr.errors import KgrExtractionError, KgrValidationError
from kgr.extract.llm_client import (NO_KEY, RetryPolicy, api_base_problem, classify_failure, load_litellm, provider_errors,
                                    retry_after)

__all__ = ["LiteLLMEmbedder", "MAX_EMBED_BATCH", "make_embedder", "MODEL_ENV", "API_BASE_ENV", "API_KEY_ENV"]

#: Texts per embedding request at most (providers cap a request's inputs; 2,048 for OpenAI).
MAX_EMBED_BATCH = 256


class LiteLLMEmbedder:
    """Embeds texts with ``model`` through litellm (see the module docstring).

    Parameters
    ----------
    model:
        A litellm model name, e.g. ``openai/text-embedding-3-small``.
    api_base, api_key:
        An OpenAI-compatible server and its key (optional).
    timeout:
        Seconds per request.
    retry:
        Retries of transient failures.
    batch:
        Texts per request (at most :data:`MAX_EMBED_BATCH`).
    """

    def __init__(self, model: str, *, api_base: str | None = None, api_key: str | None = None,
                 timeout: float = 30.0, retry: RetryPolicy | None = None, batch: int = 64):
        if not model:
            raise KgrValidationError("an embedding model is required", field="embedding_model")
        if problem := api_base_problem(api_base):
            raise KgrValidationError(problem, field="embedding_api_base")
        if not 1 <= batch <= MAX_EMBED_BATCH:
            raise KgrValidationError(f"batch must be between 1 and {MAX_EMBED_BATCH}", field="batch")
        self.model, self.api_base, self.timeout, self.batch = model, api_base, timeout, batch
        self._api_key = api_key
        self.retry = retry or RetryPolicy()
        self.requests = 0
        self.dimensions: int | None = None

    def __repr__(self) -> str:  # never the key
        return f"LiteLLMEmbedder(model={self.model!r}, api_base={self.api_base!r})"

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for i in range(0, len(texts), self.batch):
            out += self._request(list(texts[i:i + self.batch]))
        return out

    def _kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = {"model": self.model, "timeout": self.timeout, "max_retries": 0, "num_retries": 0}
        if self.api_base:
            kw["api_base"] = self.api_base
        if self._api_key:
            kw["api_key"] = self._api_key
        elif self.api_base and self.model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
            kw["api_key"] = NO_KEY
        return kw

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        return self.retry.wait_seconds(state.attempt_number, retry_after(exc) if exc else None)

    def _request(self, texts: list[str]) -> list[list[float]]:
        ll = load_litellm()
        try:
            for attempt in Retrying(stop=stop_after_attempt(self.retry.max_attempts), wait=self._wait,
                                    retry=retry_if_exception(lambda e: classify_failure(e)[1]), reraise=True):
                with attempt:
                    self.requests += 1
                    response = ll.embedding(input=texts, **self._kwargs())
        except provider_errors() as exc:
            reason, _ = classify_failure(exc)
            detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
            raise KgrExtractionError(f"embedding request failed ({reason}): {detail}") from exc
        return self._vectors(response, len(texts))

    def _vectors(self, response: Any, n: int) -> list[list[float]]:
        data = getattr(response, "data", None)
        if not isinstance(data, list) or len(data) != n:
            raise KgrExtractionError(f"embedding reply holds {len(data) if isinstance(data, list) else 'no'} vectors "
                                     f"for {n} texts")
        items = sorted(data, key=lambda d: _field(d, "index") or 0)
        vectors = []
        for d in items:
            v = _field(d, "embedding")
            if not isinstance(v, list) or not v or not all(isinstance(x, (int, float)) and math.isfinite(x) for x in v):
                raise KgrExtractionError("embedding reply holds a vector that is not a list of finite numbers")
            vectors.append([float(x) for x in v])
        dims = {len(v) for v in vectors}
        if len(dims) != 1 or (self.dimensions is not None and dims != {self.dimensions}):
            raise KgrExtractionError(f"embedding reply has vectors of {sorted(dims)} dimensions"
                                     + (f", expected {self.dimensions}" if self.dimensions else ""))
        self.dimensions = dims.pop()
        return vectors


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


#: Environment variables of the embedding configuration (the key is read from the environment only).
MODEL_ENV, API_BASE_ENV, API_KEY_ENV = "KGR_EMBEDDING_MODEL", "KGR_EMBEDDING_API_BASE", "KGR_EMBEDDING_API_KEY"


def make_embedder(model: str | None = None, api_base: str | None = None, *,
                  environ: dict[str, str] | None = None) -> LiteLLMEmbedder | None:
    """The configured embedder: ``model`` / ``api_base`` or, unset, ``KGR_EMBEDDING_MODEL`` /
    ``KGR_EMBEDDING_API_BASE``, with the key from ``KGR_EMBEDDING_API_KEY`` (or the provider's own
    variable, which litellm reads). None when no model is configured."""
    env = os.environ if environ is None else environ
    model = model or env.get(MODEL_ENV) or None
    if model is None:
        return None
    return LiteLLMEmbedder(model, api_base=api_base or env.get(API_BASE_ENV) or None,
                           api_key=env.get(API_KEY_ENV) or None)
