"""Importing litellm offline, once per process: kgr's only ``import litellm``.

litellm downloads its model price map when it is imported, unless
``LITELLM_LOCAL_MODEL_COST_MAP`` is set; with no network it retries for seconds. kgr sets that
switch (unless the environment already has it) and then imports litellm, here and nowhere else, so
no request leaves the machine except to the model, whichever kgr module needs litellm first (the
LLM extractor, the agent, an ingestion worker's warm start, the slices' token counter). A test
checks that no other module imports litellm.

It also holds the process-wide litellm switch that the processes kgr owns (an ingestion worker,
``kgr ingest``'s) set for an OpenAI-compatible server (:func:`openai_http_route`).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from kgr.errors import KgrExtractionError

__all__ = ["load_litellm", "warm_up_litellm", "OPENAI_HTTP_SWITCH", "openai_http_route", "set_openai_http_route",
           "openai_http_route_during"]

#: litellm's switch (an environment variable, read on every call; only ``true`` turns it on) that
#: sends ``openai/`` chat requests through litellm's own HTTP handler, the one ``hosted_vllm/`` uses,
#: instead of the OpenAI SDK's client.
OPENAI_HTTP_SWITCH = "EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER"

_LITELLM: Any = None


def load_litellm(needed_by: str = "the LLM extractor") -> Any:
    """The litellm module, imported quietly (``suppress_debug_info``) and offline; once per process.

    Raises
    ------
    KgrExtractionError
        litellm is not installed (``needed_by`` names what needed it).
    """
    global _LITELLM
    if _LITELLM is not None:
        return _LITELLM
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError as exc:  # pragma: no cover - litellm is a declared extra
        raise KgrExtractionError(f"{needed_by} needs litellm; install it with: pip install kgr[llm]") from exc
    litellm.suppress_debug_info = True
    _LITELLM = litellm
    return litellm


def warm_up_litellm(model: str | None = None, api_base: str | None = None) -> None:
    """Do at a worker's start what the first request would otherwise do in the middle of the run.

    - import litellm (offline) and the OpenAI SDK's resource modules;
    - load litellm's default tokenizer, which the ``hosted_vllm/`` route loads on its first request;
    - with ``model``: one **mock** completion through litellm (``mock_response``: litellm answers it
      itself, no request leaves the machine), which imports and builds the route's provider
      configuration, so that the first real request does not (its CPU before and after:
      ``docs/benchmarks.md``).

    With four workers starting together, that work otherwise landed in the run's first second,
    beside the first requests. Best effort: a failure here is left to the real request to report.
    """
    ll = load_litellm()
    try:
        import openai.resources  # noqa: F401
    except ImportError:  # pragma: no cover - a dependency of litellm
        pass
    try:
        getattr(importlib.import_module("litellm.main"), "encoding", None)
    except Exception:  # noqa: BLE001 - a litellm without that lazy attribute: nothing to warm
        pass
    if model:
        try:
            ll.completion(model=model, messages=[{"role": "user", "content": "warm-up"}], api_base=api_base,
                          api_key="warm-up", mock_response="{}")
        except Exception:  # noqa: BLE001 - e.g. a model litellm cannot route: the first real request says so
            pass


def openai_http_route(model: object, api_base: object, environ: Mapping[str, str] = os.environ) -> bool | None:
    """Whether an ingestion worker sends ``model``'s requests through litellm's HTTP handler.

    Only an ``openai/`` model with an ``api_base`` (a self-hosted OpenAI-compatible server) is
    concerned; for any other model the answer is ``None`` (the worker leaves litellm's switch alone).
    For those, the job's own ``EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER`` decides when it is set
    (``true`` on, anything else off, as litellm reads it); unset, the answer is ``True``.

    Why: the SDK's client costs CPU per request that the handler does not, which counts when a
    worker keeps dozens of requests in flight (the figures, from ``scripts/bench_ingest.py``:
    ``docs/benchmarks.md``). The requests are the same chat
    completions; what the handler does not send is the SDK's ``OpenAI-Organization`` header, which a
    self-hosted server does not read. OpenAI's own API (no ``api_base``) keeps the SDK.
    """
    if not (isinstance(model, str) and model.startswith("openai/") and isinstance(api_base, str) and api_base):
        return None  # (a custom extractor's ``model`` may be anything: a loaded model object, say)
    value = environ.get(OPENAI_HTTP_SWITCH)
    return True if value is None else value.strip().lower() == "true"


def set_openai_http_route(on: bool | None) -> None:
    """Set litellm's switch in this process (a worker's, at its start): ``None`` leaves it alone."""
    if on is not None:
        os.environ[OPENAI_HTTP_SWITCH] = "true" if on else "false"


@contextmanager
def openai_http_route_during(model: str | None, api_base: str | None) -> Iterator[bool | None]:
    """litellm's switch set as :func:`openai_http_route` says for the length of a block, then put
    back as it was (``kgr ingest``'s process: its extractor and verifier share the model and
    ``api_base``). Yields the decision."""
    on = openai_http_route(model, api_base)
    before = os.environ.get(OPENAI_HTTP_SWITCH)
    set_openai_http_route(on)
    try:
        yield on
    finally:
        if before is None:
            os.environ.pop(OPENAI_HTTP_SWITCH, None)
        else:
            os.environ[OPENAI_HTTP_SWITCH] = before
