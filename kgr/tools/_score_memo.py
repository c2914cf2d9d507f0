"""The latest full quality evaluations, by content: (overall score, issue codes).

The feedback tool scores the extraction the quality tool has usually just scored (the ingestion loop
and an agent call them one after the other, each with its own validated copy of the input), so
:func:`kgr.tools.feedback.score_and_codes` looks here first; :func:`kgr.tools.quality.evaluate`
remembers each full evaluation. This module imports neither tool. The key is the content itself: the text,
the schema's type names and the extraction's entities and relations, in order. 256 entries, the
oldest out first; safe across threads (the tool server runs tools in a pool).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from kgr.model.kg import ExtractedKG
from kgr.model.tools import ToolSchema

__all__ = ["remember", "recall", "KEPT"]

#: evaluations kept
KEPT = 256

_SCORES: OrderedDict[tuple, tuple[float, tuple[str, ...]]] = OrderedDict()
_LOCK = threading.Lock()


def _key(kg: ExtractedKG, schema: ToolSchema, text: str) -> tuple:
    return (text, tuple(schema.entity_schema), tuple(schema.relation_schema),
            tuple((t, tuple(names)) for t, names in kg.entities.items()),
            tuple((t, tuple((p.subject, p.object) for p in pairs)) for t, pairs in kg.relations.items()))


def remember(kg: ExtractedKG, schema: ToolSchema, text: str, score: float, codes: list[str]) -> None:
    """Keep a full evaluation's overall score and issue codes."""
    key = _key(kg, schema, text)
    with _LOCK:
        _SCORES[key] = (score, tuple(codes))
        _SCORES.move_to_end(key)
        while len(_SCORES) > KEPT:
            _SCORES.popitem(last=False)


def recall(kg: ExtractedKG, schema: ToolSchema, text: str) -> tuple[float, tuple[str, ...]] | None:
    """The kept (score, codes) of this content, or None."""
    with _LOCK:
        return _SCORES.get(_key(kg, schema, text))

