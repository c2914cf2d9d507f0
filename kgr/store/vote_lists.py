"""A staged edge's votes as records, whatever per-vote fields they carry (pure; no I/O).

A ``PENDING_REL`` keeps its first :data:`~kgr.store.stage_rows.MAX_INLINE_VOTES` votes inline as
**parallel lists**: ``sources`` (one distinct source per vote, in arrival order) and one
``source_<field>`` list per per-vote field (``source_confidence``, ``source_at``, and any field a
later writer adds, e.g. a sentence span). Later votes are ``(:Vote {id, source, <field>...})``
nodes. The naming rule joins the two forms: inline list ``source_<field>`` ↔ vote property
``<field>``, and ``sources`` ↔ ``source``. So code that rewrites votes (forget) carries every
per-vote field without naming it.

A list counts as per-vote when its name starts with ``source_`` and its length equals that of
``sources``. Neo4j cannot store a null inside a list, so a vote moved inline that lacks a field
gets that list's blank value (``0.0``, ``0``, ``""``, ``False``; ``confidence`` 0.0 as staging reads
a missing one).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kgr.store.stage_rows import VOTE_LISTS

__all__ = ["per_vote_lists", "inline_votes", "overflow_votes", "to_lists", "node_fields", "STANDARD_LISTS", "VOTE_NODE_KEYS"]

#: Properties of a (:Vote) node that are bookkeeping, not a field of the vote.
VOTE_NODE_KEYS = frozenset({"id", "created_tx"})


#: The per-vote lists every staged edge has (staging writes them: :data:`~kgr.store.stage_rows.VOTE_LISTS`);
#: others are found by their shape.
STANDARD_LISTS = VOTE_LISTS
#: The value a standard list holds for a vote that lacks the field (an edge staged before sentence
#: spans were kept has no ``source_span``: its votes get ``""``, "no span known").
_STANDARD_BLANKS = {"sources": "", "source_confidence": 0.0, "source_at": 0.0, "source_span": ""}


def _field(list_name: str) -> str:
    return "source" if list_name == "sources" else list_name.removeprefix("source_")


def per_vote_lists(props: Mapping[str, Any]) -> list[str]:
    """The names of ``props``' per-vote lists: staging's own first (:data:`STANDARD_LISTS`), then any other ``source_*``
    list as long as ``sources``, by name."""
    n = len(props.get("sources") or [])
    extra = sorted(k for k, v in props.items() if k.startswith("source_") and k not in STANDARD_LISTS
                   and isinstance(v, (list, tuple)) and len(v) == n)
    return [*STANDARD_LISTS, *extra]


def inline_votes(props: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The inline votes of an edge with properties ``props``, in order: one record per source with
    every per-vote field (``{"source": ..., "confidence": ..., "at": ..., ...}``; a field whose
    list is missing or short is None)."""
    names = per_vote_lists(props)
    n = len(props.get("sources") or [])
    fields = [_field(name) for name in names]
    # each list padded (or cut) to the number of sources, then one record per position
    columns = [[*col[:n], *[None] * (n - len(col))] for col in (list(props.get(name) or []) for name in names)]
    return [dict(zip(fields, row)) for row in zip(*columns)] if n else []


def overflow_votes(nodes: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Overflow (:Vote) nodes' properties as vote records (``vote_id`` = the node's id), in staging's
    order: by time, then source."""
    out = [{**{k: v for k, v in n.items() if k not in VOTE_NODE_KEYS}, "vote_id": n["id"]} for n in nodes]
    return sorted(out, key=lambda v: (v.get("at") or 0.0, v["source"]))


def _blank(values: Sequence[Any]) -> Any:
    sample = next((v for v in values if v is not None), None)
    if isinstance(sample, bool):
        return False
    if isinstance(sample, int):
        return 0
    if isinstance(sample, str):
        return ""
    return 0.0


def to_lists(votes: Sequence[Mapping[str, Any]], names: Sequence[str]) -> dict[str, list[Any]]:
    """The parallel lists ``names`` (from :func:`per_vote_lists`, plus any to create) for ``votes``.

    >>> to_lists([{"source": "a", "confidence": 0.5}, {"source": "b"}], ["sources", "source_confidence"])
    {'sources': ['a', 'b'], 'source_confidence': [0.5, 0.0]}
    """
    out: dict[str, list[Any]] = {}
    for name in names:
        raw = [v.get(_field(name)) for v in votes]
        blank = _STANDARD_BLANKS[name] if name in _STANDARD_BLANKS else _blank(raw)
        out[name] = [blank if x is None else x for x in raw]
    return out


def node_fields(vote: Mapping[str, Any]) -> dict[str, Any]:
    """A vote record's fields as an overflow (:Vote) node stores them: no ``vote_id``, no nulls.

    >>> node_fields({"source": "a", "confidence": 0.5, "span": None, "vote_id": "k|a"})
    {'source': 'a', 'confidence': 0.5}
    """
    return {k: x for k, x in vote.items() if k != "vote_id" and x is not None}
