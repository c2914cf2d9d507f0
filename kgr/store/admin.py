"""Store administration: ``kgr init``, status counts, fingerprints and reset."""

from __future__ import annotations

import hashlib
import time

from pydantic import BaseModel, Field

from kgr.model.schema import KGSchema
from kgr.store.connection import Graph
from kgr.store.cypher import validate_identifiers
from kgr.store.versions import ZERO_HASH, current_state

__all__ = ["init_store", "StoreStatus", "status", "fingerprint", "reset"]


def init_store(graph: Graph, schema: KGSchema | None = None) -> int:
    """Create constraints, indexes (incl. the ``entity_names`` fulltext index) and the state node.

    Idempotent; the schema's relation types are validated as identifiers.
    Returns the number of statements run.
    """
    validate_identifiers(schema.relation_types if schema else [], kind="relationship type")
    return graph.run_script("init_schema", {"zero_hash": ZERO_HASH, "now": time.time()})


class StoreStatus(BaseModel):
    uri: str
    database: str
    version: int
    hash: str
    entities: int
    documents: int
    chunks: int
    votes: int
    decisions: int
    promoted: int
    pending_by_status: dict[str, int] = Field(default_factory=dict)


def status(graph: Graph) -> StoreStatus:
    """Counts and the current version/hash."""
    row = graph.read("graph_counts")[0]
    version, h = current_state(graph)
    return StoreStatus(
        uri=graph.uri, database=graph.database, version=version, hash=h,
        entities=row["entities"], documents=row["documents"], chunks=row["chunks"], votes=row["votes"],
        decisions=row["decisions"], promoted=row["promoted"],
        pending_by_status={s: n for s, n in row["pending_by_status"]},
    )


def fingerprint(graph: Graph) -> str:
    """SHA-256 over the sorted content of the store (entities with aliases, pending edges with
    votes/status/confidence, votes, chunks, promoted edge instances). Equal fingerprints mean
    equal staged graphs, whatever the order things were written in."""
    lines = sorted(
        f"{r['kind']}\x1f{r['key']}\x1f" + "\x1e".join(sorted(str(x) for x in (r["detail"] or [])))
        for r in graph.read("graph_fingerprint")
    )
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def reset(graph: Graph) -> None:
    """Delete all data (not the schema), then recreate the state node."""
    graph.run_script("wipe_database")
    graph.run_script("init_schema", {"zero_hash": ZERO_HASH, "now": time.time()})
