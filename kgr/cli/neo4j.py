"""``kgr neo4j start|stop|status``: manage the local Neo4j that kgr uses when ``NEO4J_URI`` is unset.

Output conventions: with ``--json`` stdout carries only the status object (``Neo4jStatus`` as JSON);
progress and errors always go to stderr. A :class:`~kgr.errors.KgrError` becomes one line
``Error: ...`` on stderr and exit code 1; anything else is a bug and propagates.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from kgr.cli.common import err, errors_to_exit, out

if TYPE_CHECKING:
    from kgr.runtime import ManagedNeo4j, Neo4jStatus, RuntimeConfig

__all__ = ["app"]

app = typer.Typer(rich_markup_mode=None, 
    no_args_is_help=True,
    help=(
        "Manage kgr's local Neo4j 5.26 Community server (no Docker needed): jars from Maven Central, "
        "a persistent home, Bolt and HTTP on 127.0.0.1, authentication off (loopback only)."
    ),
)


F = TypeVar("F", bound=Callable[..., Any])

JsonOpt = Annotated[bool, typer.Option("--json", help="Print the status as JSON on stdout (data only).")]
HomeOpt = Annotated[
    Path | None,
    typer.Option("--home", help="Server home (data, logs, pid file). [env: KGR_NEO4J_HOME]", show_default=False),
]
BoltOpt = Annotated[
    int | None, typer.Option("--bolt-port", help="Bolt port (default 7687). [env: KGR_NEO4J_BOLT_PORT]")
]
HttpOpt = Annotated[
    int | None, typer.Option("--http-port", help="HTTP/Browser port (default 7474). [env: KGR_NEO4J_HTTP_PORT]")
]


def _managed(cfg: RuntimeConfig) -> ManagedNeo4j:
    """The managed Neo4j of ``cfg``, reporting on stderr (:mod:`kgr.runtime` is imported by the commands
    that run it, not by every ``kgr`` command)."""
    from kgr.runtime import ManagedNeo4j

    return ManagedNeo4j(cfg, console=err)


def _config(home: Path | None, bolt_port: int | None, http_port: int | None, **extra: Any) -> RuntimeConfig:
    from kgr.runtime import RuntimeConfig

    overrides: dict[str, Any] = {k: v for k, v in extra.items() if v is not None}
    if home is not None:
        overrides["home"] = home
    if bolt_port is not None:
        overrides["bolt_port"] = bolt_port
    if http_port is not None:
        overrides["http_port"] = http_port
    return RuntimeConfig(**overrides)


def _report(status: Neo4jStatus, as_json: bool) -> None:
    if as_json:
        typer.echo(status.model_dump_json(indent=2))
        return
    state = "running" if status.running else "stopped"
    if status.running and not status.ready:
        state = "running (not answering on Bolt yet)"
    rows = [("state", state), ("version", f"Neo4j {status.version} Community")]
    if status.pid is not None:
        rows.append(("pid", str(status.pid)))
    rows += [
        ("bolt", status.bolt_uri),
        ("browser", status.browser_url),
        ("home", status.home),
        ("log", status.log_path),
    ]
    if not status.installed:
        rows.append(("jars", "not downloaded yet (`kgr neo4j start` fetches them once with Maven)"))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        out.print(f"{key.ljust(width)}  {value}", markup=False, soft_wrap=True)


@app.command()
@errors_to_exit
def start(
    json_: JsonOpt = False,
    home: HomeOpt = None,
    bolt_port: BoltOpt = None,
    http_port: HttpOpt = None,
    heap: Annotated[str | None, typer.Option(help="JVM heap, e.g. 512m or 1g. [env: KGR_NEO4J_HEAP]")] = None,
    pagecache: Annotated[
        str | None, typer.Option(help="Page cache size, e.g. 256m. [env: KGR_NEO4J_PAGECACHE]")
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait until Bolt answers.", min=1)] = 120.0,
) -> None:
    """Start the managed Neo4j (downloading the jars once) and wait until Bolt answers. Idempotent."""
    cfg = _config(home, bolt_port, http_port, heap=heap, pagecache=pagecache)
    status = _managed(cfg).start(timeout=timeout)
    _report(status, json_)


@app.command()
@errors_to_exit
def stop(
    json_: JsonOpt = False,
    home: HomeOpt = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for a clean shutdown before SIGKILL.", min=1)] = 60.0,
) -> None:
    """Stop the managed Neo4j (clean shutdown, SIGKILL after --timeout). Stopping a stopped server is fine."""
    status = _managed(_config(home, None, None)).stop(timeout=timeout)
    _report(status, json_)


@app.command()
@errors_to_exit
def status(
    json_: JsonOpt = False,
    home: HomeOpt = None,
    bolt_port: BoltOpt = None,
    http_port: HttpOpt = None,
) -> None:
    """Show whether the managed Neo4j runs, its pid, Bolt and Browser addresses, home and log.

    Exits 0 in both states; scripts read ``running`` and ``ready`` from ``--json``.
    """
    _report(_managed(_config(home, bolt_port, http_port)).status(), json_)
