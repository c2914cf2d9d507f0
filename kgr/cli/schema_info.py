"""What ``kgr init`` reports about the KG schema the graph keeps (:mod:`kgr.store.schema_store`)."""

from __future__ import annotations

from typing import Any

__all__ = ["init_summary"]


def init_summary(statements: int, st: Any, change: Any, stored: Any,
                 undeclared: dict[str, int] | None = None) -> dict[str, Any]:
    """``kgr init``'s data: the connection, the version, and the stored schema (what this run did to it).

    ``st`` is a :class:`~kgr.store.admin.StoreStatus`, ``change`` a
    :class:`~kgr.model.schema_versions.SchemaChange` or ``None`` (no schema given), ``stored`` the
    graph's :class:`~kgr.model.schema_versions.StoredSchema` or ``None``, ``undeclared`` the
    entity types of the graph the stored schema does not declare, with their counts.
    """
    schema = None
    if stored is not None:
        schema = {"name": stored.kg_schema.name, "version": stored.version, "hash": stored.hash,
                  "action": change.action if change is not None else "kept",
                  "diff": stored.diff.model_dump() if change is not None and change.action == "migrated"
                  and stored.diff is not None else None}
    if change is not None:
        about = change.describe()
    elif stored is not None:
        about = f"the graph's schema is {stored.kg_schema.name!r} version {stored.version} ({stored.hash[:19]})"
    else:
        about = "no KG schema stored (kgr init --schema FILE stores one)"
    if undeclared:
        about += ("; the graph holds entities of types it does not declare (kept as they are): "
                  + ", ".join(f"{t} ({n})" for t, n in sorted(undeclared.items())))
    summary = f"initialised {st.uri} ({statements} schema statements, version {st.version}); {about}"
    return {"statements": statements, "uri": st.uri, "version": st.version, "schema": schema,
            "undeclared_types": undeclared or {}, "summary": summary}
