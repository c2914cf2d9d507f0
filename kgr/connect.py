"""The connection factory: a :class:`~kgr.store.connection.Graph` on the configured Neo4j.

``NEO4J_URI`` (with ``NEO4J_USERNAME``, ``NEO4J_PASSWORD``, ``NEO4J_DATABASE``) names a server; when it
is unset, kgr's managed local Neo4j (:mod:`kgr.runtime`) is started, or reused when it runs. This is
the one place that knows both the store and the runtime, which do not import each other (it also
gives the Graph kgr's cache directory, for the promoted graph kept between processes).
"""

from __future__ import annotations

from kgr.errors import KgrNeo4jUnavailable
from kgr.runtime import ManagedNeo4j, ensure_running
from kgr.runtime.config import default_cache_dir
from kgr.store.connection import Graph, Neo4jSettings, open_graph

#: ``Graph`` and ``Neo4jSettings`` are re-exported: the types a caller above the engine (the server) passes around.
__all__ = ["connect", "Graph", "Neo4jSettings"]


def connect(settings: Neo4jSettings | None = None, *, start_managed: bool = True) -> Graph:
    """Open a :class:`Graph` from ``settings`` (default: the environment).

    With no URI, the managed local Neo4j is started (installed on first use) unless
    ``start_managed`` is false, in which case its status decides.

    Raises
    ------
    KgrNeo4jUnavailable
        The database does not answer, or (``start_managed=False``) the managed one is not running.
    KgrRuntimeError
        The managed Neo4j could not be installed or started (names the missing piece).
    """
    settings = settings or Neo4jSettings.from_env()
    if settings.uri is None:
        status = ensure_running() if start_managed else ManagedNeo4j().status()
        if not status.running:
            raise KgrNeo4jUnavailable("the managed Neo4j is not running (start it with `kgr neo4j start`)")
        settings = settings.model_copy(update={"uri": status.bolt_uri, "password": None})
    graph = open_graph(settings)
    graph.cache_dir = default_cache_dir() / "promoted"
    return graph
