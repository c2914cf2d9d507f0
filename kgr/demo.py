"""``kgr demo``: ingest ``examples/`` with the offline rules extractor on the managed Neo4j (or
``NEO4J_URI``), promote, and print the report with the Neo4j Browser address. Safe to re-run: ingestion is
idempotent, so a second run finds every chunk already processed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel

from kgr.engine import Engine
from kgr.ingest.config import IngestConfig
from kgr.ingest.pipeline import ingest
from kgr.ingest.report import IngestReport
from kgr.store.admin import StoreStatus

__all__ = ["DemoReport", "run_demo", "examples_dir", "browser_url"]


def examples_dir() -> Path:
    here = Path(__file__).resolve().parents[1] / "examples"
    if not (here / "schema.json").is_file():
        from kgr.errors import KgrNotFound

        raise KgrNotFound(f"the demo corpus is not at {here} (run kgr demo from a source checkout: pip install -e .)")
    return here


class DemoReport(BaseModel):
    ingest: IngestReport
    status: StoreStatus
    browser_url: str

    def render(self) -> str:
        s = self.status
        return "\n".join([
            self.ingest.render(),
            f"graph: {s.entities} entities, {s.promoted} promoted edges, pending {s.pending_by_status}, "
            f"{s.votes} votes, version {s.version}, hash {s.hash[:16]}…",
            f"Neo4j Browser: {self.browser_url}",
            f"  (connects to {s.uri}" + (", no authentication)" if "NO_AUTH" in self.browser_url else ")"),
            "try: MATCH (e:Entity)-[r]->(o:Entity) WHERE r.valid_to IS NULL AND r.valid_from IS NOT NULL RETURN e, r, o",
        ])


def run_demo(*, progress: bool = True) -> DemoReport:
    """Ingest ``examples/corpus`` with the rules extractor (schema ``examples/schema.json``) into the
    database ``NEO4J_URI`` names (else the managed local Neo4j), then run promotion rounds with the
    calibrated policy until the backlog is settled, re-reading the corpus (offline rules verifier)
    for the candidates it escalates.

    Idempotent: a second run finds every chunk processed, stages nothing and — with no new vote and
    the store already promoted once — runs no promotion round, so the graph (and its hash) stays
    as it was. ``progress`` shows a spinner on stderr.
    """
    from kgr.store.connection import Neo4jSettings

    ex = examples_dir()
    settings = Neo4jSettings.from_env()
    no_auth = settings.uri is None or settings.password is None
    with Engine.connect(schema=ex / "schema.json") as kg:
        kg.init()
        before = kg.status()
        with _progress(progress) as tick:
            report = ingest(kg.graph, [ex / "corpus"], kg.schema, config=IngestConfig(extractor="rules"),
                            on_progress=tick)
        if report.new_votes or before.version == 0:
            from kgr.extract.verify import RulesVerifier

            report.promotion.extend(kg.promote_until_done(verifier=RulesVerifier()))
        status = kg.status()
    return DemoReport(ingest=report, status=status, browser_url=browser_url(status.uri, no_auth=no_auth))


@contextmanager
def _progress(enabled: bool) -> Iterator[Callable[[str, int], None]]:
    if not enabled:
        yield lambda event, n: None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn

    counts: dict[str, int] = {}
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), console=Console(stderr=True),
                  transient=True) as bar:
        task = bar.add_task("ingesting examples/ ...")

        def tick(event: str, n: int) -> None:
            counts[event] = counts.get(event, 0) + n
            bar.update(task, description="ingesting examples/: " + ", ".join(f"{k} {v}" for k, v in counts.items()))

        yield tick


def browser_url(bolt_uri: str, *, no_auth: bool = True) -> str:
    """The Neo4j Browser address for the database at ``bolt_uri``, preset to connect to it.

    The managed Neo4j's own HTTP port when ``bolt_uri`` is the managed server (loopback and its
    Bolt port), else Neo4j's default HTTP port 7474 on the same host.
    """
    from urllib.parse import quote, urlsplit

    from kgr.runtime import RuntimeConfig

    parts = urlsplit(bolt_uri)
    host = parts.hostname or "127.0.0.1"
    cfg = RuntimeConfig()
    if host in ("127.0.0.1", "localhost", "::1", cfg.host) and (parts.port or 7687) == cfg.bolt_port:
        http = cfg.browser_url
    else:
        http = f"http://{'[' + host + ']' if ':' in host else host}:7474/browser/"
    return f"{http}?dbms={quote(bolt_uri, safe='')}" + ("&preselectAuthMethod=NO_AUTH" if no_auth else "")
