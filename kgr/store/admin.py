"""Store administration: ``kgr init``, status counts, fingerprints and reset."""

from __future__ import annotations

import hashlib
import time

from pydantic import BaseModel, Field

from kgr.model.schema import KGSchema
from kgr.store.connection import Graph
from kgr.store.cypher import validate_identifiers
from kgr.store.slice_records import flush_slice_records
from kgr.store.versions import ZERO_HASH, current_state

__all__ = ["init_store", "StoreStatus", "status", "fingerprint", "reset", "SchemaObject", "schema_objects"]


def init_store(graph: Graph, schema: KGSchema | None = None) -> int:
    """Create constraints, indexes (incl. the ``entity_names`` fulltext index) and the state node.

    Idempotent; the schema's relation types are validated as identifiers.
    Returns the number of statements run.
    """
    validate_identifiers(schema.relation_types if schema else [], kind="relationship type")
    return graph.run_script("init_schema", {"zero_hash": ZERO_HASH, "now": time.time()})


class SchemaObject(BaseModel):
    """A constraint or an index of the database, as ``SHOW CONSTRAINTS`` / ``SHOW INDEXES`` list it."""

    kind: str = Field(description="constraint or index")
    name: str
    type: str = Field(description="e.g. UNIQUENESS, RANGE, FULLTEXT, LOOKUP")
    entity_type: str = Field(description="NODE or RELATIONSHIP")
    labels: list[str] = Field(default_factory=list, description="labels or relationship types")
    properties: list[str] = Field(default_factory=list)
    id: int | None = Field(None, description="index id (changes when an index is recreated)")
    state: str | None = Field(None, description="index state: ONLINE, POPULATING, FAILED")
    owning_constraint: str | None = None


def schema_objects(graph: Graph) -> list[SchemaObject]:
    """The database's constraints and indexes, by kind and name (what ``kgr init`` creates, and more)."""
    def obj(kind: str, r: dict) -> SchemaObject:  # LOOKUP indexes have null labels and properties
        return SchemaObject(kind=kind, **{**r, "labels": r["labels"] or [], "properties": r["properties"] or []})

    out = [obj("constraint", r) for r in graph.read("schema_constraints")]
    out += [obj("index", r) for r in graph.read("schema_indexes")]
    return out


class StoreStatus(BaseModel):
    uri: str
    database: str
    version: int
    hash: str
    entities: int = Field(description="live entities (an entity merged into another is not counted)")
    merged_entities: int = Field(0, description=(
        "entities merged into another (kgr merge, kgr resolve): kept as the merge's record, reversible by rollback"))
    documents: int
    chunks: int
    votes: int
    decisions: int
    promoted: int = Field(description="current promoted edges: always pending_by_status['promoted'] + promoted_on_merged")
    pending_by_status: dict[str, int] = Field(default_factory=dict)
    promoted_on_merged: int = Field(0, description=(
        "current promoted edges whose staged edge is an entity merge's tombstone (status 'merged'): restored by "
        "a rollback across the merge, which restores promoted edges only"))
    schema_version: int | None = Field(None, description="version of the KG schema the graph keeps (kgr init --schema)")
    schema_hash: str | None = None
    resolve_due: list[str] = Field(default_factory=list, description=(
        "entity types whose merges a forget undid and no resolution has re-decided yet (a run stopped "
        "between the two): the next kgr ingest, kgr resolve or forget resolves them"))


def status(graph: Graph) -> StoreStatus:
    """Counts and the current version/hash."""
    from kgr.store.unmerge import resolution_due  # merges' bookkeeping: imported by the commands that report it

    row = graph.read("graph_counts")[0]
    version, h = current_state(graph)
    return StoreStatus(
        uri=graph.uri, database=graph.database, version=version, hash=h,
        entities=row["entities"], merged_entities=row["merged_entities"], documents=row["documents"], chunks=row["chunks"], votes=row["votes"],
        decisions=row["decisions"], promoted=row["promoted"], promoted_on_merged=row["promoted_on_merged"],
        pending_by_status={s: n for s, n in row["pending_by_status"]},
        schema_version=row["schema_version"], schema_hash=row["schema_hash"], resolve_due=resolution_due(graph),
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
    """Delete all data (every node and relationship, the stored KG schema included; not the
    constraints and indexes), then recreate the state node (after this process's slice
    records still queued are written: none lands in the wiped store)."""
    flush_slice_records(graph)
    graph.run_script("wipe_database")
    graph.run_script("init_schema", {"zero_hash": ZERO_HASH, "now": time.time()})
