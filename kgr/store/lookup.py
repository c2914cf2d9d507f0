"""Entity lookup for disambiguation: candidates for many extracted names in one query per batch.

For each ``(type, name)`` the store returns (template ``find_entity_candidates``):

* the entity whose key is ``entity_key(type, name)`` (exact canonical match, any alias table
  already applied by the caller), flagged ``exact_key``;
* the best hits of the ``entity_names`` fulltext index over ``Entity(name, aliases)`` (created by
  ``kgr init``), at most ``hits_per_name`` before filtering; of the name's type, the exact-key
  entity and the best-scoring hits are kept (``per_name`` in all); hits of other types are kept
  too, so that the caller can spot type conflicts;
* for the kept candidates of the name's type, up to ``max_rels`` current relationships to other
  entities (a bounded sample: no ordering, so a hub's expansion stops at the limit).

The Lucene query is built from the name here (:func:`lucene_query`): every Lucene special character
is escaped, the canonical phrase is boosted, and longer tokens are fuzzy (``~1``). It reaches Neo4j
as a parameter. Names are sent ``batch_size`` at a time (``UNWIND $rows``): one bounded query per
batch, however many names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from typing import TYPE_CHECKING

from kgr.errors import KgrDatabaseError, KgrNotFound, KgrValidationError
from kgr.model.canonical import canonical_name, entity_key

if TYPE_CHECKING:  # the driver is imported only when a query runs
    from kgr.store.connection import Graph

__all__ = [
    "EntityRecord",
    "RelatedEdge",
    "CandidateHit",
    "lucene_escape",
    "lucene_query",
    "find_entity_candidates",
    "INTERNAL_PROPERTIES",
]

#: Bookkeeping properties never shown to callers.
INTERNAL_PROPERTIES = frozenset({"created_tx", "_kgr_lock"})
_LUCENE_SPECIAL = re.compile(r'([+\-&|!(){}\[\]^"~*?:\\/])')
_MAX_QUERY_TOKENS = 8


class EntityRecord(BaseModel):
    """An entity node as the tools see it."""

    key: str | None = None
    name: str
    type: str | None = None
    aliases: list[str] = Field(default_factory=list)
    properties: dict[str, Any] = Field(default_factory=dict)


class RelatedEdge(BaseModel):
    """A relationship between a candidate and another entity."""

    type: str
    direction: str  # "out" when the candidate is the start node
    properties: dict[str, Any]
    target: EntityRecord


class CandidateHit(BaseModel):
    """One candidate entity for one extracted name."""

    entity: EntityRecord
    exact_key: bool
    score: float | None = Field(None, description="fulltext score (None for key-only hits)")
    relationships: list[RelatedEdge] = Field(default_factory=list)


def lucene_escape(text: str) -> str:
    r"""Escape Lucene query syntax characters.

    >>> lucene_escape('AT&T (US) "x" a/b')
    'AT\\&T \\(US\\) \\"x\\" a\\/b'
    """
    return _LUCENE_SPECIAL.sub(r"\\\1", text)


def lucene_query(name: str) -> str:
    """The fulltext query for an extracted name (empty when the name has no letters or digits).

    >>> lucene_query("I.B.M.")
    '"ibm"^4 ibm "I.B.M."^2'
    >>> lucene_query("International Business Machines")
    '"international business machines"^4 international~1 business~1 machines~1'
    """
    try:
        canon = canonical_name(name)
    except KgrValidationError:
        return ""
    toks = canon.split(" ")[:_MAX_QUERY_TOKENS]
    parts = [f'"{lucene_escape(" ".join(toks))}"^4']
    parts += [lucene_escape(t) + ("~1" if len(t) >= 5 else "") for t in toks]
    raw = " ".join(name.split())
    if raw.casefold() != canon:
        parts.append(f'"{lucene_escape(raw)}"^2')
    return " ".join(parts)


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    iso = getattr(value, "iso_format", None) or getattr(value, "isoformat", None)
    return iso() if callable(iso) else str(value)


def _props(raw: dict[str, Any] | None) -> dict[str, Any]:
    return {k: _plain(v) for k, v in sorted((raw or {}).items()) if k not in INTERNAL_PROPERTIES}


def _record(name: str | None, raw: dict[str, Any] | None) -> EntityRecord:
    props = _props(raw)
    aliases = props.get("aliases") if isinstance(props.get("aliases"), list) else []
    return EntityRecord(key=props.get("key"), name=name or str(props.get("name", "")), type=props.get("type"),
                        aliases=[str(a) for a in aliases], properties=props)


def find_entity_candidates(
    graph: "Graph",
    names: Sequence[tuple[str, str]],
    *,
    per_name: int = 5,
    hits_per_name: int = 20,
    max_rels: int = 10,
    batch_size: int = 500,
    known_before: float | None = None,
) -> list[list[CandidateHit]]:
    """Candidates for each ``(type, name)``, in input order (one list per name).

    Parameters
    ----------
    graph:
        The store.
    names:
        ``(entity type, name)`` pairs; names without letters or digits get no candidates.
    per_name:
        Candidates of the name's type kept per name (the exact-key entity first, then by score).
    hits_per_name:
        Fulltext hits fetched per name (all types) before the type filter.
    max_rels:
        Relationships fetched per same-type candidate.
    batch_size:
        Names per query.
    known_before:
        When set, fulltext (fuzzy) hits must have been created before this Unix time; the exact-key
        entity is always returned.

    Raises
    ------
    KgrNeo4jUnavailable
        The database is unreachable.
    KgrNotFound
        The ``entity_names`` fulltext index is missing (run ``kgr init``).
    """
    out: list[list[CandidateHit]] = [[] for _ in names]
    rows: list[dict[str, Any]] = []
    for i, (etype, name) in enumerate(names):
        query = lucene_query(name)
        if not query:
            continue
        rows.append({"i": i, "type": etype, "key": entity_key(etype, name), "query": query})
    for start in range(0, len(rows), max(1, batch_size)):
        batch = rows[start : start + batch_size]
        try:
            result = graph.read("find_entity_candidates",
                                {"rows": batch, "per_name": per_name, "hits_per_name": max(hits_per_name, per_name),
                                 "max_rels": max_rels, "before": known_before})
        except KgrDatabaseError as exc:
            if "entity_names" in str(exc):
                raise KgrNotFound("the fulltext index entity_names is missing: run `kgr init` first") from exc
            raise
        for r in result:
            rels = [
                RelatedEdge(
                    type=str(e["props"].get("type") or e["rel_type"]) if e["rel_type"] == "PENDING_REL" else e["rel_type"],
                    direction="out" if e["outgoing"] else "in",
                    properties=_props({**e["props"], **({"relationship": e["rel_type"]} if e["rel_type"] == "PENDING_REL" else {})}),
                    target=_record(e["target"]["name"], e["target"]["props"]),
                )
                for e in (r["rels"] or [])
            ]
            out[r["i"]].append(CandidateHit(entity=_record(r["name"], r["props"]), exact_key=bool(r["exact_key"]),
                                            score=r["score"], relationships=rels))
    return out
