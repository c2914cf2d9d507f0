"""The graph tools the server offers next to the six agent tools: look at the graph, label, forget, age.

An agent driving the six tools also needs to look at the graph: how big it is, whether an entity
exists, what it is connected to, why an edge was promoted or held, which snapshots exist. These
tools answer that, each as a plain function ``fn(params, *, context) -> OutputModel`` over one
:class:`~kgr.engine.Engine` call (:mod:`kgr.catalog.spec`), with strict pydantic input and output
models. They are deliberately **not** in the agent tools' registry (:mod:`kgr.tools.registry`), which
holds the six Agentic-KGR tools that the agent driver offers to an LLM; these are for interactive clients.

Every tool here but ``label_edges``, ``forget_document`` and ``age_edges`` is read-only, and all are
bounded: fixed templates behind the engine, values as parameters, result sizes capped by validated
``limit`` arguments. None executes caller-supplied Cypher.

=======================  =======================================================================
``graph_status``         counts (entities, chunks, votes, pending edges by status, promoted
                         edges, decisions), the current version and content hash
``search_entities``      entities whose name or alias matches a query (fulltext, fuzzy), best first
``entity_neighbourhood`` an entity and at most ``limit`` of its current edges (promoted and pending)
``explain_edge``         an edge's pending state and every decision recorded about it, with inputs
``list_snapshots``       named versions of the promoted graph, oldest first
``review_queue``         the edges whose label would teach the promotion scorer most, with evidence
``label_edges``          record people's labels (writes: one version)
``forget_document``      forget documents or sources: their votes, chunks and what only they
                         supported (writes: one version; ``dry_run`` says what would change)
``age_edges``            one aging run: decay, expire stale pending edges, retire stale promoted
                         ones below a floor (writes: a version when it retires)
=======================  =======================================================================
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from kgr.catalog.spec import Output, StrictInput, engine_of, spec_of
from kgr.engine import AgingConfig, AgingReport, ForgetReport
from kgr.model.canonical import IDENTIFIER_RE
from kgr.model.inspect import DecisionRecord, EdgeExplanation, EntityHit, EntityRef, NeighbourEdge, Neighbourhood
from kgr.model.review import EdgeLabel, LabelReport, ReviewQueue
from kgr.tools.context import ToolContext
from kgr.tools.registry import ToolSpec

__all__ = [
    "GRAPH_TOOLS",
    "GraphStatusInput",
    "GraphStatusOutput",
    "SearchEntitiesInput",
    "SearchEntitiesOutput",
    "EntityHit",
    "EntityNeighbourhoodInput",
    "EntityNeighbourhoodOutput",
    "NeighbourEdge",
    "EntityRef",
    "ExplainEdgeInput",
    "ExplainEdgeOutput",
    "DecisionRecord",
    "ListSnapshotsInput",
    "ListSnapshotsOutput",
    "SnapshotInfo",
    "PENDING_STATUSES",
    "ReviewQueueInput",
    "LabelEdgesInput",
    "ForgetDocumentInput",
    "AgeEdgesInput",
]

#: Statuses a PENDING_REL edge can have.
PendingStatus = Literal["pending", "held", "promoted", "rejected", "expired"]
PENDING_STATUSES: tuple[str, ...] = ("pending", "held", "promoted", "rejected", "expired")
EntityKey = Annotated[str, Field(min_length=3, max_length=1200, pattern=r"^[A-Za-z_][A-Za-z0-9_]*:\S.*$",
                                 description="entity key '<Type>:<canonical name>', as search_entities returns it")]
EdgeKey = Annotated[str, Field(pattern=r"^[0-9a-f]{24}$", description="24 hex digits, as entity_neighbourhood returns it")]


# -- graph_status -----------------------------------------------------------------------------------


class GraphStatusInput(StrictInput):
    """No arguments."""


class GraphStatusOutput(Output):
    database: str
    version: int = Field(description="current version of the promoted graph")
    hash: str = Field(description="content hash of the promoted graph at that version")
    entities: int
    documents: int
    chunks: int
    votes: int
    decisions: int
    promoted: int = Field(description="current promoted edges")
    pending_by_status: dict[str, int] = Field(description="PENDING_REL edges per status")


def graph_status(params: GraphStatusInput, *, context: ToolContext) -> GraphStatusOutput:
    """Counts of the knowledge graph (entities, documents, chunks, votes, pending edges by status, promoted edges, decisions) with the current version and content hash. Read-only."""
    st = engine_of(context, "graph_status").status()
    return GraphStatusOutput(database=st.database, version=st.version, hash=st.hash, entities=st.entities,
                             documents=st.documents, chunks=st.chunks, votes=st.votes, decisions=st.decisions,
                             promoted=st.promoted, pending_by_status=st.pending_by_status)


# -- search_entities --------------------------------------------------------------------------------


class SearchEntitiesInput(StrictInput):
    query: Annotated[str, Field(min_length=1, max_length=200, description="a name or part of one; fuzzy")]
    type: Annotated[str, Field(pattern=IDENTIFIER_RE.pattern, max_length=64)] | None = Field(
        None, description="only entities of this type")
    limit: Annotated[int, Field(ge=1, le=50)] = Field(10, description="most results (1-50)")


class SearchEntitiesOutput(Output):
    query: str
    results: list[EntityHit]


def search_entities(params: SearchEntitiesInput, *, context: ToolContext) -> SearchEntitiesOutput:
    """Find entities whose name or alias matches a query (case-insensitive, punctuation-insensitive, fuzzy), best match first, optionally of one type. Returns keys to pass to entity_neighbourhood. Read-only."""
    hits = engine_of(context, "search_entities").search_entities(params.query, type=params.type, limit=params.limit)
    return SearchEntitiesOutput(query=params.query, results=hits)


# -- entity_neighbourhood ---------------------------------------------------------------------------


class EntityNeighbourhoodInput(StrictInput):
    key: EntityKey
    limit: Annotated[int, Field(ge=1, le=200)] = Field(50, description="most edges returned (1-200)")
    statuses: list[PendingStatus] = Field(
        default_factory=lambda: ["pending", "held"], max_length=5,
        description="which staged (PENDING_REL) edges to include besides the promoted ones")


class EntityNeighbourhoodOutput(Neighbourhood):
    """entity_neighbourhood's output: the store's :class:`~kgr.model.inspect.Neighbourhood`."""


def entity_neighbourhood(params: EntityNeighbourhoodInput, *, context: ToolContext) -> EntityNeighbourhoodOutput:
    """An entity (by key) and its one-hop neighbourhood: current promoted edges first, then staged edges, at most limit of them, each with direction, status, votes, confidence and the edge key. Read-only."""
    hood = engine_of(context, "entity_neighbourhood").neighbourhood(params.key, statuses=params.statuses,
                                                                  limit=params.limit)
    return EntityNeighbourhoodOutput.model_validate(hood.model_dump())


# -- explain_edge ------------------------------------------------------------------------------------


class ExplainEdgeInput(StrictInput):
    key: EdgeKey


class ExplainEdgeOutput(EdgeExplanation):
    """explain_edge's output: the store's :class:`~kgr.model.inspect.EdgeExplanation`."""


def explain_edge(params: ExplainEdgeInput, *, context: ToolContext) -> ExplainEdgeOutput:
    """Why an edge is (or is not) in the graph: its staged state (status, votes, confidence) and every promote/hold/reject/expire/retire/restore decision recorded about it, with the inputs the policy used. Read-only."""
    why = engine_of(context, "explain_edge").explain(params.key)
    return ExplainEdgeOutput.model_validate(why.model_dump())


# -- list_snapshots ----------------------------------------------------------------------------------


class ListSnapshotsInput(StrictInput):
    """No arguments."""


class SnapshotInfo(Output):
    name: str
    version: int
    hash: str
    created_at: float
    edges: int
    note: str


class ListSnapshotsOutput(Output):
    snapshots: list[SnapshotInfo]


def list_snapshots(params: ListSnapshotsInput, *, context: ToolContext) -> ListSnapshotsOutput:
    """The named snapshots of the promoted graph (name, version, content hash, edge count, note), oldest first. Read-only."""
    snaps = engine_of(context, "list_snapshots").snapshots()
    return ListSnapshotsOutput(snapshots=[SnapshotInfo(**s.model_dump()) for s in snaps])


# -- review_queue and label_edges ----------------------------------------------------------------------


class ReviewQueueInput(StrictInput):
    limit: Annotated[int, Field(ge=1, le=200, description="items at most")] = 20


def review_queue(params: ReviewQueueInput, *, context: ToolContext) -> ReviewQueue:
    """The staged or promoted edges whose label would teach the promotion scorer most (uncertainty about the promotion cut x impact), best first, each with key, subject, relation, object, p_hat and its evidence chain (sources, chunks, documents, quotes, verifier answers). Answer them with label_edges. Read-only."""
    return engine_of(context, "review_queue").review_queue(limit=params.limit)


class LabelEdgesInput(StrictInput):
    labels: Annotated[list[EdgeLabel], Field(min_length=1, max_length=1000,
                                             description="one {key, label, reviewer} per edge")]


def label_edges(params: LabelEdgesInput, *, context: ToolContext) -> LabelReport:
    """Record people's answers about edges as one version: true (a fact) or false (not one). The scorer refits on them; a promoted edge labelled false is retired, a staged one rejected. Unknown keys fail the whole call. Writes."""
    return engine_of(context, "label_edges").label(params.labels)


# -- forget_document and age_edges ---------------------------------------------------------------------

_Id = Annotated[str, Field(min_length=1, max_length=512)]


class ForgetDocumentInput(StrictInput):
    # "give documents or sources" in the JSON Schema too, so that clients (and fuzzers) see it
    model_config = ConfigDict(defer_build=True, json_schema_extra={"anyOf": [
        {"required": ["documents"], "properties": {"documents": {"minItems": 1}}},
        {"required": ["sources"], "properties": {"sources": {"minItems": 1}}}]})

    documents: Annotated[list[_Id], Field(max_length=1000, description=(
        "document ids: a file's absolute path as ingested, a JSONL line's id"))] = []
    sources: Annotated[list[_Id], Field(max_length=1000, description="vote sources (chunk ids, a triple file's "
                                                                      "source field)")] = []
    quorum: Annotated[int, Field(ge=1, le=1000, description="a promoted edge left with fewer votes is retired")] = 2
    dry_run: Annotated[bool, Field(description="say what would change and change nothing")] = False


def forget_document(params: ForgetDocumentInput, *, context: ToolContext) -> ForgetReport:
    """Forget documents (by id) or vote sources as one version: their votes leave every staged edge, edges left without votes are removed, promoted edges left below the quorum are retired with a recorded retract decision, and their chunks and the entities nothing else needs are deleted. dry_run reports the same without changing anything. Unknown document ids fail the whole call. Writes."""
    return engine_of(context, "forget_document").forget(documents=params.documents, sources=params.sources,
                                                      quorum=params.quorum, dry_run=params.dry_run)


class AgeEdgesInput(StrictInput):
    xi: Annotated[float, Field(ge=0, le=100, description="decay rate of pending edges, 1/day")] = 0.1
    xi_promoted: Annotated[float, Field(ge=0, le=100, description="decay rate of promoted edges past the soft "
                                                                   "window, 1/day")] = 0.01
    ttl_days: Annotated[float, Field(gt=0, le=36_500, description="days without a new vote before a pending edge "
                                                                  "expires")] = 30.0
    soft_window_days: Annotated[float, Field(ge=0, le=36_500, description="days a promoted edge keeps its full "
                                                                           "weight")] = 7.0
    retire_after_days: Annotated[float, Field(gt=0, le=36_500, description=(
        "days past the soft window before a promoted edge may be retired: the hard window is "
        "soft_window_days + retire_after_days"))] = 38.0
    floor: Annotated[float, Field(ge=0, le=1, description="promoted edges past the hard window with a weight below "
                                                          "this are retired; 0 (default) retires nothing")] = 0.0


def age_edges(params: AgeEdgesInput, *, context: ToolContext) -> AgingReport:
    """One aging run: decay the weight of pending edges (xi per day) and of promoted edges past the soft window (xi_promoted), expire pending edges without a new vote for ttl_days, and retire, as one version with recorded decisions, promoted edges past the hard window (soft_window_days + retire_after_days) whose weight fell below floor (default 0: retires nothing). Running it twice at one time changes nothing. Writes."""
    cfg = AgingConfig(xi=params.xi, xi_promoted=params.xi_promoted, ttl_days=params.ttl_days,
                            soft_window_days=params.soft_window_days,
                            hard_window_days=params.soft_window_days + params.retire_after_days, floor=params.floor)
    return engine_of(context, "age_edges").age(cfg)


# -- the specs ----------------------------------------------------------------------------------------


#: The graph tools, in the order they are listed (after the six agent tools).
GRAPH_TOOLS: tuple[ToolSpec, ...] = (
    spec_of(graph_status, GraphStatusInput, GraphStatusOutput),
    spec_of(search_entities, SearchEntitiesInput, SearchEntitiesOutput),
    spec_of(entity_neighbourhood, EntityNeighbourhoodInput, EntityNeighbourhoodOutput),
    spec_of(explain_edge, ExplainEdgeInput, ExplainEdgeOutput),
    spec_of(list_snapshots, ListSnapshotsInput, ListSnapshotsOutput),
    spec_of(review_queue, ReviewQueueInput, ReviewQueue),
    spec_of(label_edges, LabelEdgesInput, LabelReport, read_only=False, idempotent=False),
    spec_of(forget_document, ForgetDocumentInput, ForgetReport, read_only=False, idempotent=False,
          destructive=True),
    spec_of(age_edges, AgeEdgesInput, AgingReport, read_only=False),
)

