"""Importing litellm offline, once per process: kgr's only ``import litellm``.

litellm downloads its model price map when it is imported, unless
``LITELLM_LOCAL_MODEL_COST_MAP`` is set; with no network it retries for seconds. kgr sets that
switch (unless the environment already has it) and then imports litellm, here and nowhere else, so
no request leaves the machine except to the model, whichever kgr module needs litellm first (the
LLM extractor, the agent, an ingestion worker's warm start, the slices' token counter). A test
checks that no other module imports litellm.
"""

from __future__ import annotations

import os
from typing import Any

from kgr.errors import KgrExtractionError

__all__ = ["load_litellm", "warm_up_litellm"]

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


def warm_up_litellm() -> None:
    """Import litellm and the OpenAI SDK's resource modules, which the first request through an
    OpenAI-SDK provider would otherwise import (~0.3 s of CPU): a worker pays them in its start."""
    load_litellm()
    try:
        import openai.resources  # noqa: F401
    except ImportError:  # pragma: no cover - a dependency of litellm
        pass
