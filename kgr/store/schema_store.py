"""The KG schema stored in the graph: read it, store it, migrate it (conventions in
:mod:`kgr.model.schema_versions`).

Each version is a ``(:KgrSchema {version, hash, json, at, graph_version, diff})`` node; the newest is
the graph's schema. :func:`store_schema` runs under the write lock of ``(:KgrState)``, so two
concurrent ``kgr init --schema`` store one version each, in turn. ``kgr reset`` deletes the nodes
with the rest of the data.
"""

from __future__ import annotations

import difflib
import time
from typing import Any

from kgr.errors import KgrNotFound, KgrSchemaMismatch
from kgr.model.schema import KGSchema
from kgr.model.schema_versions import SchemaChange, SchemaDiff, StoredSchema, schema_diff, schema_hash
from kgr.store.connection import Graph, Tx

__all__ = ["read_schema", "schema_history", "store_schema", "check_schema", "mismatch_message", "undeclared_types",
           "known_entity_types", "check_entity_type"]


def _stored(row: dict[str, Any]) -> StoredSchema:
    diff = row.get("diff")
    return StoredSchema(version=int(row["version"]), hash=str(row["hash"]),
                        kg_schema=KGSchema.model_validate_json(row["json"]), at=float(row["at"]),
                        graph_version=int(row.get("graph_version") or row.get("stored_at_version") or 0),
                        diff=SchemaDiff.model_validate_json(diff) if diff else None)


def schema_history(graph: Graph, *, limit: int = 100) -> list[StoredSchema]:
    """The schema versions the graph keeps, newest first."""
    return [_stored(r) for r in graph.read("schema_read", {"limit": limit})]


def read_schema(graph: Graph) -> StoredSchema | None:
    """The graph's schema (its newest stored version), or ``None`` when none was stored."""
    rows = graph.read("schema_read", {"limit": 1})
    return _stored(rows[0]) if rows else None


def mismatch_message(stored: StoredSchema, given: KGSchema, source: str = "the given schema") -> str:
    """One line: which schema the graph keeps, how ``given`` differs, and the two ways on."""
    diff = schema_diff(stored.kg_schema, given)
    return (f"{source} differs from the graph's schema {stored.kg_schema.name!r} (version {stored.version}, "
            f"{stored.hash[:19]}): {diff.describe()}; leave out --schema to use the graph's, or make it the "
            f"graph's schema with `kgr init --schema FILE --migrate`")


def check_schema(stored: StoredSchema | None, given: KGSchema, source: str = "the given schema") -> None:
    """Raise :class:`KgrSchemaMismatch` when the graph keeps a schema other than ``given``."""
    if stored is not None and stored.hash != schema_hash(given):
        raise KgrSchemaMismatch(mismatch_message(stored, given, source))


def store_schema(graph: Graph, schema: KGSchema, *, migrate: bool = False, source: str = "the given schema",
                 now: float | None = None) -> SchemaChange:
    """Make ``schema`` the graph's schema.

    The first schema is stored as version 1; the same schema again changes nothing; a different one
    is refused unless ``migrate``, which stores it as the next version with the diff of its types
    (the data stays as it is: entities and edges of removed types are neither deleted nor retyped).

    Raises
    ------
    KgrSchemaMismatch
        The graph keeps another schema and ``migrate`` is false (nothing is written).
    KgrNotFound
        The store is not initialised (``kgr init``).
    """
    ts = time.time() if now is None else now
    h = schema_hash(schema)
    text = schema.model_dump_json()

    def unit(tx: Tx) -> SchemaChange:
        rows = tx.run("schema_lock")
        if not rows:
            raise KgrNotFound("the store is not initialised: run `kgr init`")
        row = rows[0]
        current = _stored(row) if row["version"] is not None else None
        if current is not None and current.hash == h:
            return SchemaChange(action="unchanged", current=current)
        if current is not None and not migrate:
            raise KgrSchemaMismatch(mismatch_message(current, schema, source))
        version = 1 if current is None else current.version + 1
        diff = None if current is None else schema_diff(current.kg_schema, schema)
        tx.run("schema_write", {"version": version, "hash": h, "json": text, "now": ts,
                                "graph_version": int(row["graph_version"] or 0),
                                "diff": None if diff is None else diff.model_dump_json()})
        new = StoredSchema(version=version, hash=h, kg_schema=schema, at=ts, graph_version=int(row["graph_version"] or 0),
                           diff=diff)
        return SchemaChange(action="stored" if current is None else "migrated", current=new,
                            previous_version=None if current is None else current.version)

    return graph.write_unit(unit)


def undeclared_types(graph: Graph, schema: KGSchema) -> dict[str, int]:
    """Entity types present in the graph (entities not merged away, per type) that ``schema`` does
    not declare: what a schema stored on a graph built without it, or a migration that removed
    types, leaves outside the vocabulary (the data is kept; nothing is retyped). Empty for an open
    schema (no entity types: any type is accepted)."""
    if not schema.entity_types:
        return {}
    return {str(r["type"]): int(r["n"]) for r in graph.read("entity_type_counts")
            if r["type"] is not None and r["type"] not in schema.entity_types}


#: Known types an unknown-type error lists at most.
SHOWN_TYPES = 30


def known_entity_types(graph: Graph, schema: KGSchema | None) -> list[str]:
    """The entity types a command may name, sorted: those ``schema`` declares and those of the
    graph's entities (not merged away)."""
    declared = set(schema.entity_types) if schema is not None else set()
    present = {str(r["type"]) for r in graph.read("entity_type_counts") if r["type"] is not None}
    return sorted(declared | present)


def check_entity_type(graph: Graph, schema: KGSchema | None, etype: str, *, field: str = "type") -> None:
    """Raise :class:`KgrNotFound` (HTTP 404: a well-formed name of nothing, like an unknown entity key)
    when ``etype`` is no known entity type (neither declared by
    ``schema`` nor the type of any entity: :func:`known_entity_types`), naming the closest known
    type (difflib, as the schema's unknown keys are) and the known types: ``kgr resolve --type
    Softwre`` says "type: unknown entity type 'Softwre'; did you mean 'Software'? (known types:
    Person, Software)"."""
    known = known_entity_types(graph, schema)
    if etype in known:
        return
    close = difflib.get_close_matches(etype, known, n=1)
    listed = ", ".join(known[:SHOWN_TYPES]) + (f", ... ({len(known)} in all)" if len(known) > SHOWN_TYPES else "")
    raise KgrNotFound(
        f"{field}: unknown entity type {etype[:120]!r}" + (f"; did you mean {close[0]!r}?" if close else "")
        + (f" (known types: {listed})" if known else " (the schema declares no entity type and the graph has no entity)"))
