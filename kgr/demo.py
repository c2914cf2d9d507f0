"""``kgr demo``: ingest ``examples/`` with the offline rules extractor on the managed Neo4j, promote,
snapshot, and print the report with the Neo4j Browser address. Safe to re-run: ingestion is
idempotent, so a second run finds every chunk already processed."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from kgr.engine import Engine
from kgr.ingest.pipeline import IngestConfig, IngestReport, ingest
from kgr.store.admin import StoreStatus

__all__ = ["DemoReport", "run_demo", "examples_dir"]


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
            f"Neo4j Browser: {self.browser_url}  (connect to {s.uri}, no authentication)",
            "try: MATCH (e:Entity)-[r]->(o:Entity) WHERE r.valid_to IS NULL AND r.valid_from IS NOT NULL RETURN e, r, o",
        ])


def run_demo(*, progress: bool = True) -> DemoReport:
    ex = examples_dir()
    with Engine.connect(schema=ex / "schema.json") as kg:
        kg.init()
        report = ingest(kg.graph, [ex / "corpus"], kg.schema, config=IngestConfig(extractor="rules"),
                        promote=lambda: kg.promote())
        status = kg.status()
    return DemoReport(ingest=report, status=status, browser_url=_browser_url(status.uri))


def _browser_url(bolt_uri: str) -> str:
    from urllib.parse import quote

    from kgr.store.runtime import RuntimeConfig

    http = RuntimeConfig().browser_url
    return f"{http}?dbms={quote(bolt_uri, safe='')}&preselectAuthMethod=NO_AUTH"
