"""One promotion round with the full policy: votes → gauge and gates → greedy R_env selection.

Reads the candidates (undecided PENDING_REL edges) and what the decision core needs of the
promoted graph around them — each candidate's capped ball and endpoint degrees, its subject's
functional objects, the holders of its facts (:mod:`kgr.store.neighbourhood`; bounded queries, the
same decisions as on the whole graph) — plus the endpoint-type counts per relation aggregated in
the database, derives each candidate's constraint values, calls the pure decision core
(:func:`kgr.gauge.policy.decide_round`), and writes the round as one version with every decision
and all its inputs (:func:`kgr.store.promotion.apply_decisions`). An edge held again on the same
votes as its last decision is counted but not recorded again, so rounds over a standing backlog
do not pile up identical decisions.

**Constraints** (``R_contr`` inputs), per candidate ``(s:T_s) -[r]-> (o:T_o)``:

- declared: ``T_s`` outside the schema's domain of ``r`` → ``domain_violation = 1``; likewise range;
- learned from the promoted graph when the schema is silent: if ``r`` already has at least
  ``learn_min`` promoted edges and the share of them whose endpoint types match ``(T_s, T_o)`` is
  ``p``, the violation is ``1 − p`` — a relation that always joined people to organisations makes a
  person→city edge suspicious, however many sources repeat it;
- functional relations: how many different objects the subject already has for ``r``;
- self loops;
- near-duplicate entities: an endpoint that is new to the promoted graph and whose canonical
  name is at least ``PromotionConfig.duplicate_similarity`` similar to an entity of the same type
  that already holds ``r`` with the other endpoint (``Rowen Mogropel WORKS_AT X`` when ``Rowen
  Mogorpel WORKS_AT X`` is promoted) → ``duplicate_entity = 1``, with the twin named in the
  reason. The twin may also be an established entity (one with promoted edges) for which this
  round has a candidate with the same relation and endpoint. Names whose digit runs differ (``Member 1`` / ``Member 11``, ``Paper 12`` / ``Paper 13``)
  are numbered items, never twins.

**No structure yet.** A candidate whose h-ball holds no promoted edge has nothing for the gauge to
judge (its hop-0 cost is (2·c_node + c_edge)/(c_node + c_edge) = 1.5 > θ_AG whatever happens), so
the decision core accepts it on votes and constraints alone and says so in the reason
(``PromotionConfig.bootstrap_context_edges``); every later edge that touches it is gauged as usual.

**Functional relations.** Within a round, at most one promotion per (subject, functional relation)
survives: the best-supported one, and none when the subject already has an object; the others are
held with that reason (so two conflicting candidates cannot bounce forever between promotion and
rollback).

**Grace-period audit.** After a round is written, its promotions are checked on the new graph:
no two current edges of a functional relation may leave the same subject. A round that breaks this
anyway is rolled back at once (a new version restoring the
previous edge set) and reported with ``rolled_back = true``.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from typing import Literal

import networkx as nx
import numpy as np

from kgr.errors import KgrValidationError
from kgr.gauge.policy import Candidate, PolicyState, Prefetched, PromotionConfig, decide_round
from kgr.gauge.reward import ConstraintInputs
from kgr.model.canonical import name_similarity
from kgr.model.decisions import EdgeDecision, RoundSummary
from kgr.model.schema import KGSchema
from kgr.store.connection import Graph
from kgr.store import neighbourhood as nbhd
from kgr.store.promotion import apply_decisions, round_candidates
from kgr.store.versions import promoted_edges, rollback

__all__ = ["run_round", "constraint_inputs", "FactHolders", "load_state", "LEARN_MIN"]

#: Promoted edges of a relation needed before its endpoint types are learned.
LEARN_MIN = 5


def load_state(graph: Graph, config: PromotionConfig) -> PolicyState:
    rows = graph.read("policy_state_read")
    raw = rows[0]["state"] if rows else None
    if raw:
        try:
            state = PolicyState.model_validate_json(raw)
            state.sync(config)
            return state
        except ValueError:
            pass  # an incompatible older state: start fresh
    return PolicyState.initial(config)


_DIGITS = re.compile(r"\d+")


class FactHolders:
    """Who already holds a relation with a given entity in the promoted graph (near-duplicate check).

    ``holders(r, y, "subject")`` are the subjects ``x`` of promoted ``(x)-[r]->(y)``;
    ``holders(r, y, "object")`` the objects of ``(y)-[r]->(x)``. ``known`` is every entity with a
    promoted edge.
    """

    def __init__(self) -> None:
        self._by: dict[tuple[str, str, str], list[str]] = defaultdict(list)
        self.known: set[str] = set()

    def add(self, subject_key: str, relation: str, object_key: str) -> None:
        """Index one promoted edge (its endpoints become known)."""
        self._by[(relation, object_key, "subject")].append(subject_key)
        self._by[(relation, subject_key, "object")].append(object_key)
        self.known.update((subject_key, object_key))

    def add_holders(self, relation: str, other: str, side: str, holders: Iterable[str]) -> None:
        """Index fetched holders of ``relation`` with ``other`` (see :func:`kgr.store.neighbourhood.fact_holders`)."""
        self._by[(relation, other, side)].extend(holders)

    def twin(self, cand: dict, threshold: float, *, known: set[str] | None = None) -> tuple[str, str, float] | None:
        """(new endpoint, its likely twin, similarity) for the first endpoint that has one, or None.

        ``known`` (default: this index's own) decides which endpoints are established: only an
        endpoint outside it is checked. When given, a twin must be in it too (used for the
        round's other candidates: a new entity is a duplicate of an *established* one, never of
        another newcomer).
        """
        established = self.known if known is None else known
        for side, other in (("subject", "object_key"), ("object", "subject_key")):
            key = cand[f"{side}_key"]
            if key in established:
                continue
            etype, _, name = key.partition(":")
            digits = _DIGITS.findall(name)
            best: tuple[float, str] | None = None
            for holder in self._by.get((cand["relation"], cand[other], side), ()):
                htype, _, hname = holder.partition(":")
                if htype != etype or holder == key or _DIGITS.findall(hname) != digits:
                    continue
                if known is not None and holder not in known:
                    continue
                sim = name_similarity(name, hname)
                if sim >= threshold and (best is None or (sim, holder) > best):
                    best = (sim, holder)
            if best is not None:
                return key, best[1], best[0]
        return None


def constraint_inputs(cand: dict, schema: KGSchema | None, signatures: dict[str, Counter],
                      functional_objects: dict[tuple[str, str], set[str]], holders: FactHolders | None = None,
                      duplicate_similarity: float | None = None, peers: FactHolders | None = None) -> ConstraintInputs:
    """Constraint values g_j for one candidate row (see the module docstring)."""
    rel, st, ot = cand["relation"], cand["subject_type"], cand["object_type"]
    dom = rng = 0.0
    spec = schema.relation_types.get(rel) if schema is not None else None
    if spec is not None and spec.domain:
        dom = 0.0 if st in spec.domain else 1.0
    if spec is not None and spec.range:
        rng = 0.0 if ot in spec.range else 1.0
    sig = signatures.get(rel)
    if sig is not None and (spec is None or (not spec.domain and not spec.range)):
        total = sum(sig.values())
        if total >= LEARN_MIN:
            share = sig.get((st, ot), 0) / total
            dom = max(dom, 1.0 - share)
    functional = 0.0
    if spec is not None and spec.functional:
        others = functional_objects.get((cand["subject_key"], rel), set()) - {cand["object_key"]}
        functional = float(len(others))
    loop = 1.0 if cand["subject_key"] == cand["object_key"] else 0.0
    duplicate, notes = 0.0, ()
    twin, where = None, ""
    if holders is not None and duplicate_similarity:
        twin, where = holders.twin(cand, duplicate_similarity), "already has"
        if twin is None and peers is not None:
            twin, where = peers.twin(cand, duplicate_similarity, known=holders.known), "is a candidate for"
    if twin is not None:
        new, old, sim = twin
        duplicate = 1.0
        notes = (f"new entity {new} looks like {old} (name similarity {sim:.2f}), which {where} "
                 f"{cand['relation']} with the other endpoint; if they are one entity: kgr merge '{old}' '{new}'",)
    return ConstraintInputs(domain_violation=dom, range_violation=rng, functional_conflict=functional, self_loop=loop,
                            duplicate_entity=duplicate, notes=notes)


def _functional_conflicts(graph: Graph, schema: KGSchema | None, promoted: list[tuple[str, str]]) -> list[str]:
    """Subjects of this round's ``(subject, relation)`` promotions on functional relations that now
    have more than one current object (the only places a round can create a conflict)."""
    if schema is None:
        return []
    functional = {r for r, s in schema.relation_types.items() if s.functional}
    found = nbhd.functional_objects(graph, [(s, r) for s, r in promoted if r in functional], min_objects=2)
    return [f"{s} {r}: {len(objects)} objects" for (s, r), objects in sorted(found.items())]


@dataclass
class _Seen:
    """What a round knows of the promoted graph."""

    G: nx.Graph
    prefetched: Prefetched | None
    signatures: dict[str, Counter]
    functional_objects: dict[tuple[str, str], set[str]]
    holders: FactHolders
    read: dict[str, int | str]


def _read_full(graph: Graph) -> _Seen:
    """Every current promoted edge."""
    seen = _Seen(nx.Graph(), None, defaultdict(Counter), defaultdict(set), FactHolders(), {})
    edges = promoted_edges(graph)
    for e in edges:
        if e.subject_key != e.object_key:
            seen.G.add_edge(e.subject_key, e.object_key)
        seen.signatures[e.relation][(e.subject_type, e.object_type)] += 1
        seen.functional_objects[(e.subject_key, e.relation)].add(e.object_key)
        seen.holders.add(e.subject_key, e.relation, e.object_key)
    seen.read = {"fetch": "full", "edges": len(edges), "queries": 1}
    return seen


def _read_local(graph: Graph, rows: list[dict], cfg: PromotionConfig, schema: KGSchema | None) -> _Seen:
    """The candidates' balls and degrees, their subjects' functional objects, their facts' holders."""
    prefetched, edges, queries = nbhd.fetch_balls(graph, [(r["key"], r["subject_key"], r["object_key"]) for r in rows],
                                                  hops=cfg.hops, k_max=cfg.k_max)
    G = nx.Graph()
    G.add_edges_from(edges)
    signatures: dict[str, Counter] = defaultdict(Counter)
    for r in graph.read("policy_signatures"):
        signatures[r["relation"]][(r["subject_type"], r["object_type"])] += r["edges"]
    functional = {name for name, spec in schema.relation_types.items() if spec.functional} if schema else set()
    fobjects = nbhd.functional_objects(graph, [(r["subject_key"], r["relation"]) for r in rows
                                               if r["relation"] in functional])
    holders = FactHolders()
    holders.known = {k for k, d in prefetched.degrees.items() if d > 0}
    asks = []
    if cfg.duplicate_similarity:
        for r in rows:
            for side, other in (("subject", "object_key"), ("object", "subject_key")):
                key = r[f"{side}_key"]
                if key not in holders.known:
                    asks.append((r["relation"], r[other], side, key.partition(":")[0]))
    for (relation, other, side), keys in nbhd.fact_holders(graph, asks).items():
        holders.add_holders(relation, other, side, keys)
    read = {"fetch": "local", "edges": G.number_of_edges(), "nodes": G.number_of_nodes(),
            "queries": queries + 1 + bool(functional) + bool(asks)}
    return _Seen(G, prefetched, signatures, defaultdict(set, fobjects), holders, read)


def _functional_losers(decisions, by_key: dict[str, dict], schema: KGSchema | None,
                       functional_objects: dict[tuple[str, str], set[str]]) -> dict[str, str]:
    """Promotions that would give a subject a second object on a functional relation this round.

    Per (subject, relation) the candidate with the most votes (then confidence, then key) keeps its
    promotion unless the subject already has a current object; the others are held with a reason.
    """
    if schema is None:
        return {}
    functional = {r for r, s in schema.relation_types.items() if s.functional}
    groups: dict[tuple[str, str], list] = defaultdict(list)
    for d in decisions:
        if d.action == "promote" and d.relation in functional:
            groups[(d.subject, d.relation)].append(d)
    out: dict[str, str] = {}
    for (subject, rel), ds in groups.items():
        existing = functional_objects.get((subject, rel), set())
        ranked = sorted(ds, key=lambda d: (-by_key[d.key]["votes"], -by_key[d.key]["confidence"], d.key))
        keep = None if existing else ranked[0]
        for d in ranked:
            if d is not keep:
                out[d.key] = (f"functional relation {rel}: {subject} already has an object"
                              + (" promoted" if existing else f" with more support this round ({keep.object})"))
    return out


def run_round(graph: Graph, *, schema: KGSchema | None = None, config: PromotionConfig | None = None,
              quorum: int | None = None, fetch: Literal["local", "full"] = "local") -> RoundSummary:
    """Run one promotion round with the geDIG policy and write it as one version.

    ``fetch="local"`` (the default) reads only what the decisions need near the candidates
    (:mod:`kgr.store.neighbourhood`); ``"full"`` reads every promoted edge (also used when
    ``coverage_hops > 1``, whose coverage gains need more than the balls). Both decide
    identically. ``summary.timings`` has the seconds per phase, ``summary.graph_read`` what was read.
    """
    if fetch not in ("local", "full"):
        raise KgrValidationError(f"fetch must be 'local' or 'full', got {fetch!r}", field="fetch")
    cfg = config or PromotionConfig()
    if quorum is not None:
        cfg = cfg.model_copy(update={"quorum": quorum})
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    rows, deferred = round_candidates(graph, cfg.max_candidates_per_round)
    if fetch == "local" and cfg.coverage_hops == 1:
        seen = _read_local(graph, rows, cfg, schema)
    else:
        seen = _read_full(graph)
    signatures, functional_objects, holders = seen.signatures, seen.functional_objects, seen.holders
    timings["read"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    peers = FactHolders()  # this round's candidates with a quorum: twins among them count too
    for r in rows:
        if r["votes"] >= cfg.quorum:
            peers.add(r["subject_key"], r["relation"], r["object_key"])
    cands = [Candidate(key=r["key"], subject=r["subject_key"], object=r["object_key"], relation=r["relation"],
                       votes=r["votes"], confidence=min(1.0, max(0.0, r["confidence"])),
                       constraints=constraint_inputs(r, schema, signatures, functional_objects, holders,
                                                     cfg.duplicate_similarity, peers)) for r in rows]
    state = load_state(graph, cfg)
    timings["prepare"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    round_ = decide_round(seen.G, cands, cfg, state, prefetched=seen.prefetched)
    timings["decide"] = time.perf_counter() - t0
    per_candidate_ms = (timings["decide"] / len(cands) * 1000.0) if cands else 0.0

    by_key = {r["key"]: r for r in rows}
    demoted = _functional_losers(round_.decisions, by_key, schema, functional_objects)
    decisions = []
    unchanged = 0
    for d in round_.decisions:
        r = by_key[d.key]
        if d.key in demoted:
            d = d.model_copy(update={"action": "hold", "reason": demoted[d.key]})
        if d.action == "hold" and r["status"] == "held" and r.get("decided_votes") == r["votes"]:
            unchanged += 1  # held again on the same votes: nothing new to record
            continue
        inputs = json.loads(d.model_dump_json())
        inputs.pop("key", None)
        decisions.append(EdgeDecision(key=d.key, subject_key=r["subject_key"], object_key=r["object_key"],
                                      action=d.action, reason=d.reason, inputs=inputs))
    t0 = time.perf_counter()
    summary = apply_decisions(graph, decisions, note="gedig policy", decide_ms=timings["decide"] * 1000.0)
    graph.write("policy_state_write", {"state": state.model_dump_json()})
    timings["write"] = time.perf_counter() - t0

    summary.held += unchanged
    summary.candidates = len(rows)
    summary.deferred = deferred
    summary.graph_read = seen.read
    promoted_pairs = [(by_key[d.key]["subject_key"], by_key[d.key]["relation"]) for d in decisions if d.action == "promote"]
    conflicts = _functional_conflicts(graph, schema, promoted_pairs) if summary.promoted else []
    if conflicts:
        rollback(graph, summary.version - 1, reason="grace-period audit failed: " + "; ".join(conflicts[:3]))
        summary.rolled_back = True
    summary.timings = {k: round(v, 4) for k, v in timings.items()}
    summary.decision_latency_ms = {"mean": round(per_candidate_ms, 3)}
    return summary


def decision_latencies(graph_nx: nx.Graph, cands: list[Candidate], cfg: PromotionConfig) -> np.ndarray:
    """Per-candidate decision latency (ms) of the pure core, each candidate alone (benchmarks)."""
    out = []
    state = PolicyState.initial(cfg)
    for c in cands:
        t = time.perf_counter()
        decide_round(graph_nx, [c], cfg, state)
        out.append((time.perf_counter() - t) * 1000.0)
    return np.array(out)
