"""``kgr serve`` (the MCP / HTTP tool server) and ``kgr agent`` (an LLM driving the tools).

Both are commands of the module-level ``app``; the main CLI mounts them as top-level commands.
``python -m kgr.cli.serve serve --transport stdio`` runs the server without the main CLI.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from kgr.cli.embed import ApiBaseOpt, ModelOpt
from kgr.cli.common import JsonOpt, SchemaOpt, emit, err, errors_to_exit, out
from kgr.errors import KgrError, KgrValidationError

__all__ = ["app", "serve", "agent"]

app = typer.Typer(rich_markup_mode=None, no_args_is_help=True, help="The tool server and the agent driver.",
                  pretty_exceptions_show_locals=False)

_LEVELS = ("debug", "info", "warning", "error")


def _logging(level: str) -> None:
    if level not in _LEVELS:
        raise KgrValidationError(f"log level must be one of {', '.join(_LEVELS)}", field="log_level")
    logging.basicConfig(stream=sys.stderr, level=getattr(logging, level.upper()),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("neo4j", "httpx", "LiteLLM", "litellm"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, getattr(logging, level.upper())))


@app.command("serve")
@errors_to_exit
def serve(
    transport: Annotated[str, typer.Option(help="stdio (MCP on stdin/stdout) or http (MCP at /mcp plus the JSON API).")] = "http",
    host: Annotated[str, typer.Option(help="Address to listen on (http). Non-loopback addresses need a token.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port (http); 0 picks a free one.")] = 8765,
    token_env: Annotated[str, typer.Option("--token-env", help="Environment variable holding the bearer token.")] = "KGR_SERVER_TOKEN",
    schema: SchemaOpt = None,
    request_timeout: Annotated[float, typer.Option(min=0.001, help="Seconds one tool call may take.")] = 60.0,
    max_body_mb: Annotated[float, typer.Option(min=0.001, help="Largest request body, MiB.")] = 8.0,
    workers: Annotated[int, typer.Option(min=1, max=1024, help="Tool calls running at once.")] = 64,
    writers: Annotated[int, typer.Option(min=1, max=1024, help="Without group commit: calls writing to Neo4j at once.")] = 8,
    group_commit: Annotated[bool, typer.Option("--group-commit/--no-group-commit",
                                               help="Stage concurrent storage calls in shared transactions.")] = True,
    init: Annotated[bool, typer.Option("--init/--no-init", help="Create kgr's constraints and indexes on connect.")] = True,
    cpu_workers: Annotated[int | None, typer.Option(min=0, max=256, help="Processes for the pure tools (0: threads); default: CPUs, at most 4.")] = None,
    header_timeout: Annotated[float, typer.Option(min=0.001, help="Seconds a client has to send a request's headers.")] = 10.0,
    body_timeout: Annotated[float, typer.Option(min=0.001, help="Seconds a client has to send a request's body (408 after).")] = 30.0,
    max_connections: Annotated[int, typer.Option(min=16, help="Open connections at most (kept below the file limit).")] = 1000,
    log_level: Annotated[str, typer.Option(help="debug, info, warning or error (logs go to stderr).")] = "info",
    embedding_model: ModelOpt = None, embedding_api_base: ApiBaseOpt = None,
) -> None:
    """Serve the six agent tools and read-only graph helpers over MCP (stdio or streamable HTTP) and a JSON API."""
    from kgr.server.security import ServerConfig

    _logging(log_level)
    config = ServerConfig.from_env(token_env=token_env, transport=transport, host=host, port=port,  # type: ignore[arg-type]
                                   request_timeout=request_timeout, max_body_bytes=int(max_body_mb * 1024 * 1024),
                                   max_workers=workers, max_writers=writers, schema_path=str(schema) if schema else None,
                                   group_commit=group_commit, init_store=init, embedding_model=embedding_model,
                                   embedding_api_base=embedding_api_base, header_timeout=header_timeout,
                                   body_timeout=body_timeout, max_connections=max_connections,
                                   **({} if cpu_workers is None else {"cpu_workers": cpu_workers})).check()
    served = _served_schema(schema)
    if config.transport == "stdio":
        from kgr.server.app import run_stdio

        run_stdio(config, schema=served)
        return

    from kgr.server.app import run_http

    def ready(url: str) -> None:
        auth = f"bearer token from ${config.token_env} required" if config.token else "no token (loopback only)"
        err.print(f"kgr serve: MCP at {url}/mcp, JSON API at {url}/tools, OpenAPI at {url}/openapi.json; {auth}",
                  markup=False, soft_wrap=True)

    try:
        run_http(config, schema=served, log_level=log_level, on_ready=ready)
    except OSError as exc:
        raise KgrError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def _served_schema(path: Path | None):  # noqa: ANN202 - KGSchema | None (imports kept lazy)
    """The schema the server holds the tools to: ``path``'s, checked against the graph's, or the
    graph's own (``kgr init --schema``). When Neo4j does not answer yet, ``path``'s (or none): the
    server starts anyway and its store tools retry on demand."""
    from kgr.cli.common import open_engine
    from kgr.errors import KgrNeo4jUnavailable, KgrRuntimeError
    from kgr.model.schema import load_schema

    try:
        with open_engine(path) as kg:
            return kg.schema
    except (KgrNeo4jUnavailable, KgrRuntimeError):
        return load_schema(path) if path is not None else None


@app.command("agent")
@errors_to_exit
def agent(
    paths: Annotated[list[Path], typer.Argument(metavar="PATH...", help="Files or directories (.txt, .md, .rst, .html, .jsonl, .pdf).")],
    model: Annotated[str, typer.Option(help="litellm model name, e.g. openai/gpt-4o-mini.")],
    api_base: Annotated[str | None, typer.Option(help="Base URL of an OpenAI-compatible server.")] = None,
    api_key_env: Annotated[str | None, typer.Option(help="Environment variable holding the API key (default: the provider's own).")] = None,
    schema: SchemaOpt = None,
    max_steps: Annotated[int, typer.Option(min=1, max=200, help="Model turns per chunk.")] = 12,
    max_reextractions: Annotated[int, typer.Option(min=0, max=20, help="Re-extractions allowed per chunk.")] = 3,
    chunk_size: Annotated[int, typer.Option(min=16, help="Chunk size in approximate tokens.")] = 512,
    chunk_overlap: Annotated[int, typer.Option(min=0, help="Chunk overlap in approximate tokens.")] = 64,
    timeout: Annotated[float, typer.Option(min=0.001, help="Seconds per LLM request.")] = 120.0,
    redo: Annotated[bool, typer.Option("--redo", help="Also process chunks already marked processed.")] = False,
    strict: Annotated[bool, typer.Option("--strict-protocol/--lax-protocol", help="Refuse out-of-order tool calls.")] = True,
    json_: JsonOpt = False,
) -> None:
    """Let an LLM drive the six tools over documents (density, re-extraction, disambiguation, storage)."""
    from pydantic import SecretStr, ValidationError

    from kgr.agent import AgentConfig, run_agent
    from kgr.cli.common import open_engine
    from kgr.ingest.chunking import ChunkingConfig

    key = None
    if api_key_env:
        value = os.environ.get(api_key_env, "")
        if not value:
            raise KgrValidationError(f"${api_key_env} is not set", field="api_key_env")
        key = SecretStr(value)
    try:
        config = AgentConfig(model=model, api_base=api_base, api_key=key, max_steps=max_steps,
                             max_reextractions=max_reextractions, strict_protocol=strict, timeout=timeout, redo=redo,
                             chunking=ChunkingConfig(size=chunk_size, overlap=chunk_overlap))
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        if first.get("loc") == ("api_base",):  # the one option typer does not check itself
            raise KgrValidationError(str(first["msg"]).removeprefix("Value error, "), field="--api-base") from None
        raise KgrValidationError.from_pydantic(exc) from None

    def progress(run) -> None:  # noqa: ANN001
        if not json_:
            err.print(f"{run.path or run.document_id[:12]}#{run.chunk_index}: {run.stop_reason} "
                      f"[{' → '.join(run.phases)}]", markup=False)

    with open_engine(schema) as kg:
        kg.init()
        report = run_agent(paths, graph=kg.graph, schema=kg.schema, config=config, on_chunk=progress)
    emit(report, json_, lambda r: out.print(r.render(), markup=False))
    if report.failed_chunks:
        err.print(f"Error: {report.failed_chunks} of {report.chunks} chunks did not complete the protocol "
                  "(see stop_reason)", markup=False)
        raise typer.Exit(1)


if __name__ == "__main__":  # pragma: no cover
    app(prog_name="kgr")
