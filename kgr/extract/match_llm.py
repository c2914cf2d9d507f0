"""An LLM tie-break for entity resolution's uncertain band (:mod:`kgr.resolution.plan`).

For a pair whose match probability falls between the review floor and the merge cut, the chat
model reads both sides' context slices (name, functional values, neighbours by relation, how many
sources) and answers ``{"same": true|false, "why": "..."}``. Its answer decides the pair and is
recorded as the pair's evidence (``decision`` ``llm_merge`` / ``llm_reject``, ``reason`` = the model
and its why); a failed call or an unreadable answer leaves the pair to the review queue. The model
is reached through litellm like the extractor (:mod:`kgr.extract.llm`), one request per pair, no
retries beyond litellm's defaults switched off.
"""

from __future__ import annotations

import json
from typing import Any

from kgr.extract.llm_client import NO_KEY, load_litellm, message_text, provider_errors
from kgr.resolution.units import Unit, key_name

__all__ = ["LLMTieBreak", "context_slice"]

_SYSTEM = ("You decide whether two records in a knowledge graph name the same real-world entity. "
           'Answer with JSON only: {"same": true or false, "why": "<one short sentence>"}.')
#: Neighbours listed per relation in a context slice.
_PER_RELATION = 8


def context_slice(u: Unit) -> str:
    """The text a tie-break reads for one unit: key, functional values, neighbours, sources."""
    lines = [f"entity {u.entity} (type {u.type}), name: {u.name}"]
    for rel, vals in sorted(u.functional.items()):
        lines.append(f"  {rel}: {', '.join(sorted(vals))}")
    for rel, others in sorted(u.neighbours.items()):
        arrow = "->" if rel.endswith(">") else "<-"
        names = sorted(key_name(o) for o in others)[:_PER_RELATION]
        lines.append(f"  {arrow} {rel[:-1]}: {', '.join(names)}")
    lines.append(f"  sources: {len(u.sources)}")
    return "\n".join(lines)


class LLMTieBreak:
    """Callable ``(unit_a, unit_b) -> (verdict, note)`` backed by a litellm chat model."""

    def __init__(self, model: str, *, api_base: str | None = None, api_key: str | None = None,
                 timeout: float = 30.0, completion_kwargs: dict[str, Any] | None = None):
        self.model, self.api_base, self.timeout = model, api_base, timeout
        self.api_key = api_key or (NO_KEY if api_base else None)
        self.completion_kwargs = dict(completion_kwargs or {})
        self.calls = 0

    def __call__(self, a: Unit, b: Unit) -> tuple[bool | None, str]:
        ll = load_litellm()
        messages = [{"role": "system", "content": _SYSTEM},
                    {"role": "user", "content": f"Record A:\n{context_slice(a)}\n\nRecord B:\n{context_slice(b)}"}]
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages, "timeout": self.timeout,
                                  "num_retries": 0, "temperature": 0, **self.completion_kwargs}
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key:
            kwargs["api_key"] = self.api_key
        self.calls += 1
        try:
            text = message_text(ll.completion(**kwargs)) or ""
        except provider_errors() as exc:
            return None, f"llm {self.model} failed: {type(exc).__name__}"
        try:
            start, end = text.index("{"), text.rindex("}") + 1
            answer = json.loads(text[start:end])
            same = answer["same"]
        except (ValueError, KeyError, TypeError):
            return None, f"llm {self.model}: unreadable answer"
        if not isinstance(same, bool):
            return None, f"llm {self.model}: unreadable answer"
        return same, f"llm {self.model}: {str(answer.get('why', ''))[:300]}"
