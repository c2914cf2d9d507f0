"""The tool server: kgr's served tools over MCP (stdio, streamable HTTP) and a plain JSON API.

The server transports; it defines no tool and never calls the store. The tools it serves, their
models and their one invocation path are the catalogue's (:mod:`kgr.catalog`: the six agent tools,
then the graph, slice and resolution tools over :class:`kgr.engine.Engine`); its connection comes
from :mod:`kgr.connect` and its group-commit writer from the engine
(``tests/test_architecture.py::test_the_server_goes_through_the_engine``).

Modules, from the inside out:

* :mod:`kgr.server.failures` — the error → status mapping;
* :mod:`kgr.server.cpu` — the pure tools in worker processes, stopped at their time limit;
* :mod:`kgr.server.service` — one tool call in a worker process or thread, with a time limit and
  metrics;
* :mod:`kgr.server.locks` — admission of concurrent storage calls (no two on the same entity, first
  come first served), so that they do not deadlock in Neo4j;
* :mod:`kgr.server.mcp_server` — the MCP server (official ``mcp`` SDK, low-level API);
* :mod:`kgr.server.http_api`, :mod:`kgr.server.openapi` — the JSON API and its OpenAPI document;
* :mod:`kgr.server.security` — bind policy, bearer token, body limit, log redaction;
* :mod:`kgr.server.guard` — header and body deadlines, the connection cap, quiet disconnects;
* :mod:`kgr.server.app` — assembling and running it (``kgr serve``).

Nothing here executes caller-supplied Cypher: every statement is a template in ``cypher/``.
Importing this package does not import the MCP SDK or starlette; the submodules do.
"""

__all__: list[str] = []
