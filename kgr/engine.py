"""The Python API: one :class:`Engine` mirroring the command line::

    from kgr.engine import Engine
    with Engine.connect(schema="examples/schema.json") as kg:   # NEO4J_URI or the managed Neo4j
        kg.init()
        report = kg.stage_file("examples/triples.jsonl")
        summary = kg.promote()
        kg.snapshot("after-first-round")
        kg.merge_entities("Person:ada", "Person:ada lovelace")     # one version; see kgr.store.merge

Every method returns a pydantic model (the same data ``--json`` prints).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from kgr.errors import KgrValidationError
from kgr.model.decisions import RoundSummary
from kgr.model.embedding import EmbedFn
from kgr.model.schema import KGSchema, load_schema
from kgr.model.triples import LineError, TripleAssertion, parse_triple_lines
from kgr.model.promotion import DEFAULT_POLICY, PolicyName
from kgr.model.review import EdgeLabel, LabelReport, RereadReport, ReviewQueue
from kgr.store import admin, rounds, schema_store, staging, versions
from kgr.model.schema_versions import SchemaChange, StoredSchema
from kgr.connect import connect
from kgr.store.connection import Graph, Neo4jSettings
from kgr.store.group_commit import GroupWriter

if TYPE_CHECKING:
    from kgr.model.inspect import EdgeExplanation, EntityHit, Neighbourhood
    from kgr.model.resolution import PairEvidence, PairLabel, PairLabelReport, ResolveReport, SplitReport
    from kgr.model.slices import ContextSlice, OutcomeReport, SliceVerification
    from kgr.slices.anchors import EmbedReport
    from kgr.slices.outcome import DoctorReport
    from kgr.store.aging import AgingConfig, AgingReport
    from kgr.store.forget import ForgetReport
    from kgr.store.merge import MergeResult
    from kgr.extract.verify import Verifier  # imported where used: the promotion stack (scipy) costs ~2 s at start-up
    from kgr.promotion.policies import Policy
    from kgr.ingest.config import IngestConfig
    from kgr.ingest.report import IngestReport
    from kgr.store.export import ExportedTriple, JsonlExport, LaplacianExport
    from kgr.store.metrics import StoreMetrics

#: The settings and report models the front door takes and returns, and the group-commit writer it hands
#: out (so callers, the server and the tool catalogue among them, need not reach into the layers behind it).
__all__ = ["Engine", "FileStageReport", "promote_by_quorum", "AgingConfig", "AgingReport", "ForgetReport", "GroupWriter", "JsonlExport"]

#: Re-exports imported when first asked for (PEP 562): imports are most of a short command's start-up.
_LAZY = {"AgingConfig": "kgr.store.aging", "AgingReport": "kgr.store.aging", "ForgetReport": "kgr.store.forget",
         "JsonlExport": "kgr.store.export"}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _with_target(policy: object, config: BaseModel | None, target_fmr: float | None) -> BaseModel | None:
    """``config`` with the calibrated policy's ``target_fmr`` replaced (when one is given)."""
    if target_fmr is None:
        return config
    if policy != "calibrated":
        raise KgrValidationError("target_fmr applies to the calibrated policy only", field="target_fmr")
    from kgr.promotion.config import CalibratedConfig
    base = config if isinstance(config, CalibratedConfig) else CalibratedConfig()
    return base.model_copy(update={"target_fmr": target_fmr})


def _with_reader(policy: object, config: BaseModel | None, verifier: Verifier | None) -> BaseModel | None:
    """``config`` with the calibrated policy's ``hold_unread`` on when a verifier will read what it escalates."""
    if verifier is None or policy != "calibrated":
        return config
    from kgr.promotion.config import CalibratedConfig
    base = config if isinstance(config, CalibratedConfig) else CalibratedConfig()
    return base.model_copy(update={"hold_unread": True})


class FileStageReport(staging.StageReport):
    """A :class:`StageReport` plus the lines of the file that were skipped."""

    path: str = ""
    bad_lines: list[LineError] = Field(default_factory=list)


class Engine:
    """A kgr store on one Neo4j database, with an optional KG schema."""

    def __init__(self, graph: Graph, schema: KGSchema | None = None, *, embed: EmbedFn | None = None):
        self.graph = graph
        self.schema = schema
        self.embed = embed  # name embeddings for slice anchors (kgr.slices.anchors); None: fulltext only
        self._policies: dict[tuple, Policy] = {}
        self.schema_from_graph = False  # the schema is the one the graph keeps (connect found none given)
        self.schema_change: SchemaChange | None = None  # what the last init() did with the schema

    @classmethod
    def connect(cls, settings: Neo4jSettings | None = None, *, schema: str | Path | KGSchema | None = None,
                embed: EmbedFn | None = None, migrate: bool = False) -> "Engine":
        """Connect (managed local Neo4j when ``NEO4J_URI`` is unset) and load the schema file.

        Without ``schema`` the graph's own (stored by ``kgr init --schema``,
        :mod:`kgr.store.schema_store`) is used, when it keeps one. A given schema that differs from
        the graph's raises :class:`~kgr.errors.KgrSchemaMismatch`, unless ``migrate`` (then
        :meth:`init` stores it as the graph's next schema version)."""
        sch = load_schema(schema) if isinstance(schema, (str, Path)) else schema
        graph = connect(settings)
        try:
            stored = schema_store.read_schema(graph)
            if sch is not None and not migrate:
                schema_store.check_schema(stored, sch, str(schema) if isinstance(schema, (str, Path)) else
                                          "the given schema")
        except BaseException:
            graph.close()
            raise
        engine = cls(graph, sch if sch is not None else (stored.kg_schema if stored else None), embed=embed)
        engine.schema_from_graph = sch is None and stored is not None
        return engine

    # -- lifecycle -------------------------------------------------------------------------------
    def init(self, *, migrate: bool = False) -> int:
        """Create kgr's constraints and indexes (idempotent) and make the engine's schema the graph's
        (:func:`kgr.store.schema_store.store_schema`: the first is stored, the same one changes
        nothing, another is refused unless ``migrate``; :attr:`schema_change` says which).
        Returns the number of schema statements run."""
        n = admin.init_store(self.graph, self.schema)
        if self.schema is not None and not self.schema_from_graph:
            self.schema_change = schema_store.store_schema(self.graph, self.schema, migrate=migrate)
        return n

    def stored_schema(self) -> StoredSchema | None:
        """The schema the graph keeps (its newest version), or ``None``."""
        return schema_store.read_schema(self.graph)

    def undeclared_types(self) -> dict[str, int]:
        """Entity types in the graph that the engine's schema does not declare, with their counts."""
        return schema_store.undeclared_types(self.graph, self.schema) if self.schema is not None else {}

    def reset(self) -> None:
        """Delete everything kgr stored in the database (entities, edges, documents, versions, the
        stored schema...), keeping the constraints and indexes; the store is initialised again (a
        later :meth:`init` stores the engine's schema anew)."""
        admin.reset(self.graph)
        self.schema_from_graph = False

    def status(self) -> admin.StoreStatus:
        return admin.status(self.graph)

    def create_indexes(self) -> int:
        """Create kgr's constraints and indexes (idempotent), leaving the stored schema as it is (what
        ``kgr serve`` does on each new connection; :meth:`init` also stores the schema). Returns the
        number of schema statements run."""
        return admin.init_store(self.graph, self.schema)

    def group_writer(self) -> GroupWriter:
        """A new group-commit writer on the engine's graph (:class:`kgr.store.group_commit.GroupWriter`):
        one writer thread that writes the units handed to it, concurrent callers' together, in shared
        transactions (the server's storage calls stage through one). Close it when done."""
        return GroupWriter(self.graph)

    def close(self) -> None:
        self.graph.close()

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- staging ---------------------------------------------------------------------------------
    def stage(self, assertions: Iterable[TripleAssertion], *, batch_size: int = 2000, workers: int = 2,
              on_batch: Callable[[staging.StageReport], None] | None = None) -> staging.StageReport:
        return staging.stage(self.graph, assertions, schema=self.schema, batch_size=batch_size, workers=workers,
                             on_batch=on_batch)

    def stage_file(self, path: str | Path, *, batch_size: int = 2000, workers: int = 2,
                   on_batch: Callable[[staging.StageReport], None] | None = None) -> FileStageReport:
        """Stage a triple JSONL file, streaming it; bad lines are reported with their number and skipped."""
        from kgr.ingest.loaders import path_kind
        p = Path(path)
        if path_kind(p) != "file":
            raise KgrValidationError(f"no such file: {p}", field="path")
        bad: list[LineError] = []

        def lines() -> Iterable[str]:
            """The file's lines; an undecodable one is reported (never silently replaced) and yields ''."""
            with p.open("rb") as fh:
                for n, raw in enumerate(fh, start=1):
                    try:
                        yield raw.decode("utf-8")
                    except UnicodeDecodeError as exc:
                        bad.append(LineError(line=n, error=f"not UTF-8 (undecodable byte at column {exc.start + 1})"))
                        yield ""

        def good() -> Iterable[TripleAssertion]:
            for item in parse_triple_lines(lines()):
                if isinstance(item, LineError):
                    bad.append(item)
                else:
                    yield item

        rep = self.stage(good(), batch_size=batch_size, workers=workers, on_batch=on_batch)
        return FileStageReport(**rep.model_dump(), path=str(p), bad_lines=sorted(bad, key=lambda b: b.line))

    # -- promotion -------------------------------------------------------------------------------
    def policy(self, policy: PolicyName | Policy = DEFAULT_POLICY, *, quorum: int | None = None,
               config: BaseModel | None = None) -> Policy:
        """The promotion policy ``policy`` (a registry name or a :class:`~kgr.promotion.policies.Policy`).

        A policy object keeps what it learnt in this process (the calibrated policy's embedding
        models warm-start from it), so the engine reuses one per name.
        """
        if not isinstance(policy, str):
            return policy
        key = (policy, quorum, None if config is None else config.model_dump_json())
        if key not in self._policies:
            from kgr.promotion.policies import make_policy

            self._policies[key] = make_policy(policy, config, quorum=quorum)
        return self._policies[key]

    def promote(self, *, policy: PolicyName | Policy = DEFAULT_POLICY, quorum: int | None = None,
                config: BaseModel | None = None, target_fmr: float | None = None,
                verifier: Verifier | None = None) -> RoundSummary:
        """One promotion round of ``policy`` (default: calibrated, a settle of every staged edge), one version.

        ``target_fmr`` sets the calibrated policy's target (its config otherwise). With a
        ``verifier``, the escalated edges not yet read are then re-read (:meth:`reread`), whatever
        this round decided: their new evidence is weighed by the next round, and ``summary.reread``
        says what was found. The calibrated policy then also holds unread edges above its cut that
        one silent reading would drop below it, until they are read.
        """
        chosen = self.policy(policy, quorum=quorum, config=_with_reader(policy, _with_target(policy, config, target_fmr),
                                                                        verifier))
        summary = rounds.run_round(self.graph, chosen, schema=self.schema)
        if verifier is not None:
            summary.reread = self.reread(verifier)
        return summary

    def reread(self, verifier: Verifier, *, limit: int = 1000, per_edge: int = 3) -> RereadReport:
        """Re-read the chunks that mention both endpoints of escalated candidates (see :mod:`kgr.ingest.reread`)."""
        from kgr.ingest.reread import reread
        if self.schema is None:
            raise KgrValidationError("re-reading needs the KG schema (the verifier reads with it)", field="schema")
        return reread(self.graph, self.schema, verifier, limit=limit, per_edge=per_edge)

    def review_queue(self, *, limit: int = 20, audit_share: float | None = None) -> ReviewQueue:
        """The candidates whose label would teach the scorer most, with their evidence (:mod:`kgr.store.review`)."""
        from kgr.store import review
        share = review.AUDIT_SHARE if audit_share is None else audit_share
        return review.review_queue(self.graph, limit=limit, audit_share=share)

    def label(self, labels: Iterable[EdgeLabel]) -> LabelReport:
        """Record reviewer labels as one version; a promoted edge labelled false is retired."""
        from kgr.store import review
        return review.record_labels(self.graph, list(labels))

    def promote_until_done(self, *, policy: PolicyName | Policy = DEFAULT_POLICY, quorum: int | None = None,
                           config: BaseModel | None = None, target_fmr: float | None = None,
                           verifier: Verifier | None = None, max_rounds: int = 1000,
                           on_round: Callable[[RoundSummary], None] | None = None) -> list[RoundSummary]:
        """Promotion rounds until the staged backlog is worked through; every round is one version.

        The calibrated policy settles everything in one round; with a ``verifier`` the escalated
        edges are re-read after it, and rounds repeat while re-reading finds new answers. The other
        policies decide a bounded number of candidates per round and repeat until one is
        :attr:`~kgr.model.decisions.RoundSummary.settled`. At most ``max_rounds``; ``on_round``
        sees each round's summary.
        """
        if max_rounds < 1:
            raise KgrValidationError("max_rounds must be >= 1", field="max_rounds")
        chosen = self.policy(policy, quorum=quorum, config=_with_reader(policy, _with_target(policy, config, target_fmr),
                                                                        verifier))
        out: list[RoundSummary] = []
        while len(out) < max_rounds:
            summary = self.promote(policy=chosen, verifier=verifier)
            if summary.version is None and not out:
                out.append(summary)  # nothing to decide: report the empty round once
                if not (summary.reread is not None and summary.reread.claims):
                    break
                continue
            if summary.version is not None:
                out.append(summary)
                if on_round is not None:
                    on_round(summary)
            if summary.settled and not (summary.reread is not None and summary.reread.claims):
                break
        return out

    def explain(self, key: str) -> EdgeExplanation:
        """Why edge ``key`` is where it is (:func:`kgr.store.inspect.explain_edge`; a relation the
        engine's schema does not declare is named with a did-you-mean)."""
        from kgr.store import inspect
        relations = list(self.schema.relation_types) if self.schema is not None else None
        return inspect.explain_edge(self.graph, key, relations=relations)

    def search_entities(self, query: str, *, type: str | None = None, limit: int = 10) -> list[EntityHit]:  # noqa: A002
        """Entities whose name or alias matches ``query`` (fulltext, fuzzy), best first, at most ``limit``
        (:func:`kgr.store.inspect.search_entities`)."""
        from kgr.store import inspect
        return inspect.search_entities(self.graph, query, type=type, limit=limit)

    def neighbourhood(self, key: str, *, statuses: Sequence[str] = ("pending", "held"), limit: int = 50) -> Neighbourhood:
        """Entity ``key`` and at most ``limit`` one-hop edges, current promoted ones first, then staged
        ones with one of ``statuses`` (:func:`kgr.store.inspect.entity_neighbourhood`)."""
        from kgr.store import inspect
        return inspect.entity_neighbourhood(self.graph, key, statuses=statuses, limit=limit)

    def age(self, config: AgingConfig | None = None) -> AgingReport:
        from kgr.store import aging
        return aging.age(self.graph, config)

    def forget(self, documents: Sequence[str] = (), sources: Sequence[str] = (), *, quorum: int = 2,
               dry_run: bool = False) -> ForgetReport:
        """Forget documents (by id) and sources as one version (:mod:`kgr.store.forget`); the merges
        that lost evidence are undone (:mod:`kgr.store.unmerge`) and re-decided by a resolution of
        their entities' types, and of any type an earlier interrupted run left due
        (:func:`kgr.store.unmerge.resolution_due`; merges only; ``remerge_versions``)."""
        from kgr.store import forget
        from kgr.store.unmerge import resolution_due
        rep = forget.forget(self.graph, documents=documents, sources=sources, quorum=quorum, dry_run=dry_run)
        due = set() if dry_run else set(resolution_due(self.graph))  # also what an interrupted forget left
        if rep.unmerged or due:
            from kgr.store.resolve import resolve

            for etype in sorted({k.partition(":")[0] for k in rep.unmerged} | due):
                res = resolve(self.graph, self.schema, etype=etype, embed=self.embed, apply_splits=False)
                rep.remerge_versions += [res.version] if res.version is not None else []
        return rep

    # -- context slices for agents ------------------------------------------------------------------
    def schema_version(self) -> str:
        """A short hash of the engine's schema (goes into every slice's provenance), or ``none``."""
        from kgr.slices.build import schema_version
        return schema_version(self.schema)

    def slice(self, anchors: Sequence[str] = (), *, query: str | None = None, policy: str = "default",
              budget_tokens: int | None = None, model: str | None = None) -> ContextSlice:
        """A context slice around ``anchors`` / the entities ``query`` finds (:mod:`kgr.slices`;
        with :attr:`embed`, also by name embeddings)."""
        from kgr import slices
        return slices.build_slice(self.graph, anchors=anchors, query=query, policy=policy, budget_tokens=budget_tokens,
                                  model=model, schema_version=self.schema_version(), embed=self.embed)

    def embed_entities(self, *, batch: int = 64, replace: bool = False,
                       on_batch: Callable[[int, int], None] | None = None) -> EmbedReport:
        """Embed every entity's name with :attr:`embed` (``kgr embed``; :func:`kgr.slices.anchors.embed_entities`)."""
        if self.embed is None:
            raise KgrValidationError("no embedding model is configured (KGR_EMBEDDING_MODEL or --model)",
                                     field="embedding_model")
        from kgr.slices.anchors import embed_entities
        return embed_entities(self.graph, self.embed, batch=batch, replace=replace, on_batch=on_batch)

    def verify_slice(self, s: ContextSlice) -> SliceVerification:
        from kgr import slices
        return slices.verify_slice(self.graph, s)

    def report_outcome(self, slice_id: str, outcome: int, edges: Sequence[str] = ()) -> OutcomeReport:
        from kgr import slices
        return slices.report_outcome(self.graph, slice_id, outcome, edges=edges)

    def doctor(self, *, relax: float = 0.0, half_life_days: float | None = None) -> DoctorReport:
        from kgr import slices
        from kgr.slices.anchors import model_of
        return slices.doctor(self.graph, relax=relax, half_life_days=half_life_days,
                             embedding_model=model_of(self.embed) if self.embed is not None else None)

    def documents_under(self, paths: Sequence[str | Path]) -> list[str]:
        """The ids of the documents read from files at or under ``paths`` (what to forget for them)."""
        from kgr.ingest.loaders import resolved_path
        from kgr.store import provenance
        return [d.id for d in provenance.documents_under(self.graph, [resolved_path(str(p)) for p in paths])]

    # -- versions --------------------------------------------------------------------------------
    def snapshot(self, name: str, note: str = "") -> versions.Snapshot:
        return versions.create_snapshot(self.graph, name, note=note)

    def snapshots(self) -> list[versions.Snapshot]:
        return versions.list_snapshots(self.graph)

    def diff(self, base: str, target: str = "current") -> versions.Diff:
        return versions.diff(self.graph, base, target)

    def rollback(self, ref: str) -> versions.RollbackResult:
        return versions.rollback(self.graph, ref)

    # -- entities --------------------------------------------------------------------------------
    def merge_entities(self, keep: str, drop: str) -> MergeResult:
        """Merge entity ``drop`` into entity ``keep`` (keys ``"Type:name"``) as one version.

        Semantics (edges, votes, hash, what a rollback undoes) in :mod:`kgr.store.merge`. Keys are
        normalised as staging does (``Person:Ada`` is ``Person:ada``); a key that names no entity is
        reported with the closest existing keys."""
        from kgr.store import inspect, merge
        keep, drop = inspect.user_entity_key(keep), inspect.user_entity_key(drop)
        inspect.check_entity_keys(self.graph, [keep, drop], ["keep", "drop"])
        return merge.merge_entities(self.graph, keep, drop)

    # -- entity resolution (kgr.store.resolve) ------------------------------------------------------
    def resolve(self, *, type: str | None = None, dry_run: bool = False, target_fmr: float = 0.02,
                tie_break=None) -> "ResolveReport":  # noqa: ANN001, A002 - a TieBreak; `type` as the CLI spells it
        """Find, score and cluster duplicate entities (of ``type``) and apply merges and splits as one
        version (``dry_run``: propose only). Name embeddings (:attr:`embed`) add a blocking rule;
        ``tie_break`` (e.g. :func:`kgr.extract.match_llm.llm_tie_break`) decides the uncertain band.
        A ``type`` neither the schema declares nor any entity has is refused, with a did-you-mean
        (:func:`kgr.store.schema_store.check_entity_type`)."""
        from kgr.store.resolve import resolve
        if type is not None:
            schema_store.check_entity_type(self.graph, self.schema, type)
        return resolve(self.graph, self.schema, etype=type, dry_run=dry_run, target_fmr=target_fmr,
                       embed=self.embed, tie_break=tie_break)

    def split(self, key: str, *, dry_run: bool = False) -> "SplitReport":
        """Split entity ``key`` where its sources' functional values conflict, as one version."""
        from kgr.store.resolve import split_entity
        return split_entity(self.graph, self.schema, key, dry_run=dry_run)

    def review_pairs(self, *, limit: int = 20) -> "list[PairEvidence]":
        """The entity pairs in resolution's uncertain band, most uncertain first."""
        from kgr.store.resolve import review_pairs
        return review_pairs(self.graph, limit=limit)

    def label_pairs(self, labels: Iterable["PairLabel"]) -> "PairLabelReport":
        """Record merge / no-merge labels on entity pairs (the next resolution uses them)."""
        from kgr.store.resolve import record_pair_labels
        return record_pair_labels(self.graph, list(labels))

    # -- ingestion, export, metrics (kgr.ingest, kgr.store.export, kgr.store.metrics) --------------
    def require_schema(self) -> KGSchema:
        """The engine's schema; :class:`~kgr.errors.KgrSchemaError` naming the fix when there is none."""
        if self.schema is None:
            from kgr.errors import KgrSchemaError

            raise KgrSchemaError("no KG schema: give --schema FILE (the graph keeps it for later commands) or "
                                 "store one with `kgr init --schema FILE`")
        return self.schema

    def check_extractor(self, config: "IngestConfig") -> None:
        """Fail fast when ``config``'s extractor cannot run (an LLM with an unknown model or no key):
        :class:`~kgr.errors.KgrExtractionError` with one line naming the fix, before any document is read."""
        if config.extractor == "llm":
            from kgr.ingest.config import make_extractor
            from kgr.ingest.fail_fast import preflight

            preflight(make_extractor(config))

    def ingest(self, paths: Sequence[str | Path], config: "IngestConfig | None" = None, *,
               on_progress: Callable[[str, float], None] | None = None, on_round: Callable[[], None] | None = None,
               verifier: Verifier | None = None, extractor=None) -> "IngestReport":  # noqa: ANN001 - an Extractor
        """Ingest files and directories with the engine's schema (:func:`kgr.ingest.pipeline.ingest`):
        load, chunk, extract, stage, resolve, then promote with ``config.policy`` (re-reading what it
        escalates with ``verifier``) until settled; ``on_round`` is called before each promotion round."""
        from kgr.ingest.config import IngestConfig
        from kgr.ingest.pipeline import ingest
        schema = self.require_schema()
        cfg = config or IngestConfig()

        def promote() -> RoundSummary:
            if on_round is not None:
                on_round()
            return self.promote(policy=cfg.policy, verifier=verifier)

        return ingest(self.graph, paths, schema, config=cfg, extractor=extractor, on_progress=on_progress,
                      promote=promote, embed=self.embed)

    def export_jsonl(self, *, pending: bool = False, statuses: Sequence[str] | None = None) -> "Iterable[ExportedTriple]":
        """The promoted edges (``pending``: the staged ones, of ``statuses``), one model per edge, streamed."""
        from kgr.store.export import iter_exported
        return iter_exported(self.graph, pending=pending, statuses=statuses)

    def export_laplacian(self, path: str | Path, *, include_pending: bool = False) -> "LaplacianExport":
        """Write the promoted graph's Laplacian (scipy CSR) and its node-id order to ``path`` (.npz)."""
        from kgr.store.export import export_laplacian
        return export_laplacian(self.graph, path, include_pending=include_pending)

    def metrics(self, *, rounds: int = 5) -> "StoreMetrics":
        """Counts, entropy and coverage of the promoted graph, and the recent ``rounds``' rates."""
        from kgr.store.metrics import collect_metrics
        return collect_metrics(self.graph, rounds=rounds)


def promote_by_quorum(graph: Graph, *, quorum: int = 2, now: float | None = None) -> RoundSummary:
    """One round of the plain vote rule on ``graph``: pending edges with ``votes >= quorum`` are promoted.

    The policy (:class:`kgr.promotion.policies.QuorumPolicy`) is built here, above the store, and
    handed to :func:`kgr.store.rounds.run_round`, which writes its decisions as one version (the
    store decides nothing). ``now`` is the round's clock in epoch seconds (default: the time now).
    """
    from kgr.promotion.policies import QuorumConfig, QuorumPolicy
    if quorum < 1:
        raise KgrValidationError("quorum must be >= 1", field="quorum")
    return rounds.run_round(graph, QuorumPolicy(QuorumConfig(quorum=quorum)), now=now)
