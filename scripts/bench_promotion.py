#!/usr/bin/env python3
"""Benchmark: promotion quality and cost — kgr's policy against vote baselines and its own ablations.

Usage::

    NEO4J_URI=bolt://127.0.0.1:7687 python scripts/bench_promotion.py            # default run
    python scripts/bench_promotion.py --synthetic 3000 --exact-max 20000 --json-out bench.json

It WIPES the database it is pointed at (``NEO4J_URI``, or the managed Neo4j when unset).

What it does, in one run:

1. **Stream.** True triples: the four graphs networkx ships (Davis' southern women, the
   Florentine families, Zachary's karate club, Les Misérables), typed as
   ``(Person)-[ATTENDED]->(Event)``, ``(Family)-[MARRIED_INTO]->(Family)``,
   ``(Member)-[FRIEND_OF]->(Member)``, ``(Member)-[SIDED_WITH]->(Faction)`` (functional: the
   club's split) and ``(Character)-[APPEARS_WITH]->(Character)`` — 475 facts — plus a synthetic
   typed graph for scale (people, organisations, cities, papers, topics; communities, functional
   ``BORN_IN``/``LOCATED_IN``). Domain and range come from the data and are declared in the KG
   schema. Each true triple is asserted by 1–4 distinct sources. False triples, about 30 % as
   many, of four kinds: ``swap`` (a true triple with one endpoint replaced by a random entity of
   the same type; 1–2 sources), ``type`` (an endpoint of the wrong type; 1–3 sources),
   ``neardup`` (a true triple whose subject or object is a typo'd name variant that does not
   canonicalise to the same key, i.e. a new entity; 1–3 sources) and ``repeated`` (a
   type-consistent false triple between known entities — half of them friend-of-a-friend
   closures, half random — asserted by 2–4 sources). The assertions arrive shuffled in
   ``--waves`` waves; after each wave the policy runs rounds until one promotes nothing.
2. **Policies**, each on a wiped store with the same stream: (a) promote everything
   (``promote_by_quorum(quorum=1)``), (b) votes ≥ 2 (``promote_by_quorum(quorum=2)``),
   (c) kgr's policy (:func:`kgr.store.policy_runner.run_round`, default
   :class:`PromotionConfig`), (d) ablations of (c): ``use_epc=False``, ``use_ig=False`` (no
   :math:`\\Delta H` term), ``use_sp=False`` (no :math:`\\Delta SP`), ``single_threshold=True``,
   (e) kgr's policy with quorum 1 (can the gauge and constraints replace the second vote?), and
   (f) the same runner with the gauge switched off (fixed thresholds no candidate misses, no
   audit): votes ≥ 2 plus the schema constraints, which isolates what the gauge itself adds.
   The schema's functional flags make (c) stall (see the notes it prints), so by default (c) runs
   with and without them ("[fn off]") and the other geDIG rows without.
3. **Figures** per policy: Acceptance = promoted true / all true; FMR = promoted false / all
   promoted; P50/P95 decision latency per candidate (the pure decision core on the round's own
   graph, each sampled candidate decided alone — :func:`kgr.store.policy_runner.decision_latencies`
   — for the geDIG rows; the quorum rule per row for (a)/(b)); the end-to-end round time per
   candidate (Neo4j read, prepare, decide, write); rounds; and, per false kind, the share promoted.
4. **Latency at 100k promoted edges**: the pure decision core (local balls on a networkx graph,
   no Neo4j) on the synthetic generator's graph with 100k edges, for held-out true edges and
   random ones; and one real ``run_round`` on Neo4j with 100k promoted edges and 500 fresh
   candidates (``--e2e-edges``; 0 skips it), with its read phase also timed both ways on the same
   state: the candidates' region (bounded queries, the default) vs every promoted edge.
5. **Entropy timings**: exact (dense ``eigvalsh``) vs SLQ on Barabási–Albert graphs (m = 2),
   n = 1k … 100k; exact only up to ``--exact-max`` nodes (default 10k; a dense 100k×100k matrix
   needs 80 GB, more than the 24 GB here).

BLAS runs single-threaded unless ``OPENBLAS_NUM_THREADS`` is set (see below). The default run
takes 5–8 minutes on the shared 2-core machine.
"""

from __future__ import annotations

import os

# One BLAS thread unless told otherwise: on a shared 2-core machine a multi-threaded dense
# eigensolver is up to 8x slower than a single thread (measured: n = 2000, 11.5 s vs 1.4 s under load).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402 - after the thread settings, which must precede numpy
import json
import math
import random
import string
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import networkx as nx
import numpy as np

import kgr.store.policy_runner as policy_runner
from kgr.gauge import Candidate, PromotionConfig, laplacian_from_graph, vn_entropy_exact, vn_entropy_slq
from kgr.model.canonical import entity_key
from kgr.model.decisions import RoundSummary
from kgr.model.schema import KGSchema
from kgr.model.triples import TripleAssertion
from kgr.store.admin import init_store, reset
from kgr.store.connection import Graph, connect
from kgr.store.promotion import candidates as pending_rows
from kgr.store.promotion import apply_decisions, promote_by_quorum, quorum_decisions
from kgr.store.staging import stage
from kgr.store.versions import promoted_edges

# --------------------------------------------------------------------------------------------
# The stream
# --------------------------------------------------------------------------------------------

#: relation -> (domain type, range type, functional)
RELATIONS: dict[str, tuple[str, str, bool]] = {
    "ATTENDED": ("Person", "Event", False),
    "MARRIED_INTO": ("Family", "Family", False),
    "FRIEND_OF": ("Member", "Member", False),
    "SIDED_WITH": ("Member", "Faction", True),
    "APPEARS_WITH": ("Character", "Character", False),
    "WORKS_AT": ("Researcher", "Organization", False),
    "LOCATED_IN": ("Organization", "City", True),
    "BORN_IN": ("Researcher", "City", True),
    "KNOWS": ("Researcher", "Researcher", False),
    "AUTHORED": ("Researcher", "Paper", False),
    "CITES": ("Paper", "Paper", False),
    "ABOUT": ("Paper", "Topic", False),
}

KINDS = ("true", "swap", "type", "neardup", "repeated")
#: votes (distinct sources) per kind: values and weights
VOTES: dict[str, tuple[tuple[int, ...], tuple[float, ...]]] = {
    "true": ((1, 2, 3, 4), (0.1, 0.3, 0.3, 0.3)),
    "swap": ((1, 2), (0.7, 0.3)),
    "type": ((1, 2, 3), (0.5, 0.3, 0.2)),
    "neardup": ((1, 2, 3), (0.4, 0.4, 0.2)),
    "repeated": ((2, 3, 4), (0.5, 0.3, 0.2)),
}
#: false triples of each kind per true triple
FALSE_SHARE = {"swap": 0.10, "type": 0.05, "neardup": 0.075, "repeated": 0.075}


@dataclass(frozen=True)
class Triple:
    s: str
    st: str
    r: str
    o: str
    ot: str

    @property
    def s_key(self) -> str:
        return entity_key(self.st, self.s)

    @property
    def o_key(self) -> str:
        return entity_key(self.ot, self.o)

    @property
    def ident(self) -> tuple[str, str, str]:
        return self.s_key, self.r, self.o_key


def schema(*, functional: bool = True) -> KGSchema:
    """The bench's KG schema: domain and range from the data; ``functional=False`` drops the flags."""
    types = sorted({t for d, r, _ in RELATIONS.values() for t in (d, r)})
    return KGSchema.model_validate({
        "name": "bench-promotion",
        "entity_types": {t: {} for t in types},
        "relation_types": {r: {"domain": [d], "range": [o], "functional": f and functional}
                           for r, (d, o, f) in RELATIONS.items()},
    })


def networkx_kg() -> list[Triple]:
    """The four graphs networkx ships, typed (475 facts)."""
    out: list[Triple] = []
    davis = nx.davis_southern_women_graph()
    for u, v in davis.edges():
        person, event = (u, v) if davis.nodes[u]["bipartite"] == 0 else (v, u)
        out.append(Triple(person, "Person", "ATTENDED", f"Event {event}", "Event"))
    for u, v in nx.florentine_families_graph().edges():
        out.append(Triple(u, "Family", "MARRIED_INTO", v, "Family"))
    karate = nx.karate_club_graph()
    for u, v in karate.edges():
        out.append(Triple(f"Member {u}", "Member", "FRIEND_OF", f"Member {v}", "Member"))
    for u, club in karate.nodes(data="club"):
        out.append(Triple(f"Member {u}", "Member", "SIDED_WITH", club, "Faction"))
    for u, v in nx.les_miserables_graph().edges():
        out.append(Triple(u, "Character", "APPEARS_WITH", v, "Character"))
    return out


_SYL = ["ka", "ro", "lin", "ve", "sto", "mar", "ti", "an", "del", "su", "be", "ra", "no", "qui", "ther", "ul",
        "fen", "da", "gor", "is", "mo", "pel", "za", "wen", "cor", "li", "has", "tu", "bri", "om"]


def _names(n: int, rng: random.Random, parts: int, suffix: str = "") -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < n:
        words = ["".join(rng.choice(_SYL) for _ in range(rng.randint(2, 3))).capitalize() for _ in range(parts)]
        name = " ".join(words) + suffix
        if name.lower() not in seen:
            seen.add(name.lower())
            out.append(name)
    return out


def synthetic_kg(n_triples: int, rng: random.Random) -> list[Triple]:
    """A typed research-world graph with communities, about ``n_triples`` facts (~5.8 per researcher)."""
    if n_triples <= 0:
        return []
    n_people = max(20, round(n_triples / 5.8))
    n_orgs = max(3, n_people // 15)
    people = _names(n_people, rng, 2)
    orgs = _names(n_orgs, rng, 1, " Institute")
    cities = _names(max(3, n_orgs // 4 + 2), rng, 1)
    topics = _names(20, rng, 1, " Theory")
    out: list[Triple] = []
    org_of = {}
    for o in orgs:
        out.append(Triple(o, "Organization", "LOCATED_IN", rng.choice(cities), "City"))
    members: dict[str, list[str]] = defaultdict(list)
    for p in people:
        org = rng.choice(orgs)
        org_of[p] = org
        members[org].append(p)
        out.append(Triple(p, "Researcher", "WORKS_AT", org, "Organization"))
        if rng.random() < 0.5:
            out.append(Triple(p, "Researcher", "BORN_IN", rng.choice(cities), "City"))
    knows: set[tuple[str, str]] = set()
    for p in people:
        for _ in range(2):
            pool = members[org_of[p]] if rng.random() < 0.8 and len(members[org_of[p]]) > 1 else people
            q = rng.choice(pool)
            if q != p and (p, q) not in knows and (q, p) not in knows:
                knows.add((p, q))
                out.append(Triple(p, "Researcher", "KNOWS", q, "Researcher"))
    papers: list[str] = []
    for i in range(n_people // 2):
        title = f"Paper {i} on {rng.choice(topics).split()[0]}"
        org = rng.choice(orgs)
        authors = rng.sample(members[org], min(len(members[org]), rng.randint(1, 3))) or [rng.choice(people)]
        for a in authors:
            out.append(Triple(a, "Researcher", "AUTHORED", title, "Paper"))
        out.append(Triple(title, "Paper", "ABOUT", rng.choice(topics), "Topic"))
        if papers:
            for cited in {papers[int(len(papers) * rng.random() ** 2)] for _ in range(rng.randint(0, 3))}:
                out.append(Triple(title, "Paper", "CITES", cited, "Paper"))
        papers.append(title)
    return out


def _typo(name: str, rng: random.Random, taken: set[str], etype: str) -> str | None:
    """A plausible misspelling whose canonical key differs from every known entity's."""
    letters = [i for i, ch in enumerate(name) if ch.isalpha()]
    for _ in range(20):
        i = rng.choice(letters)
        op = rng.randrange(4)
        if op == 0 and i + 1 < len(name) and name[i + 1].isalpha():  # swap two letters
            cand = name[:i] + name[i + 1] + name[i] + name[i + 2:]
        elif op == 1 and len(letters) > 3:  # drop a letter
            cand = name[:i] + name[i + 1:]
        elif op == 2:  # double a letter
            cand = name[:i] + name[i] + name[i:]
        else:  # a neighbouring letter
            cand = name[:i] + rng.choice(string.ascii_lowercase) + name[i + 1:]
        if entity_key(etype, cand) not in taken:
            return cand
    return None


@dataclass
class Stream:
    assertions: list[TripleAssertion]
    kind: dict[tuple[str, str, str], str]   # triple ident -> kind
    votes: dict[tuple[str, str, str], int]
    schema: KGSchema
    n_real: int
    n_synthetic: int


def build_stream(*, n_synthetic: int, seed: int, waves: int) -> tuple[Stream, list[list[TripleAssertion]]]:
    rng = random.Random(seed)
    real = networkx_kg()
    synth = synthetic_kg(n_synthetic, rng)
    true: dict[tuple[str, str, str], Triple] = {}
    for t in real + synth:
        if t.s_key != t.o_key:
            true.setdefault(t.ident, t)
    entities: dict[str, dict[str, str]] = defaultdict(dict)  # type -> key -> name
    for t in true.values():
        entities[t.st][t.s_key] = t.s
        entities[t.ot][t.o_key] = t.o
    names_by_type = {k: sorted(v.values()) for k, v in entities.items()}
    taken = {k for v in entities.values() for k in v}
    adj: dict[str, set[str]] = defaultdict(set)
    for t in true.values():
        adj[t.s_key].add(t.o_key)
        adj[t.o_key].add(t.s_key)
    true_list = sorted(true.values(), key=lambda t: t.ident)
    false: dict[tuple[str, str, str], tuple[Triple, str]] = {}

    def add_false(t: Triple | None, kind: str) -> bool:
        if t is None or t.ident in true or t.ident in false or t.s_key == t.o_key:
            return False
        false[t.ident] = (t, kind)
        return True

    all_types = sorted(names_by_type)
    for kind, share in FALSE_SHARE.items():
        want, tries = round(share * len(true_list)), 0
        made = 0
        while made < want and tries < 50 * want + 100:
            tries += 1
            t = rng.choice(true_list)
            f: Triple | None = None
            if kind == "swap":
                if rng.random() < 0.5:
                    f = Triple(t.s, t.st, t.r, rng.choice(names_by_type[t.ot]), t.ot)
                else:
                    f = Triple(rng.choice(names_by_type[t.st]), t.st, t.r, t.o, t.ot)
            elif kind == "type":
                bad = [x for x in all_types if x != t.ot]
                ot = rng.choice(bad)
                f = Triple(t.s, t.st, t.r, rng.choice(names_by_type[ot]), ot)
            elif kind == "neardup":
                if rng.random() < 0.5:
                    name = _typo(t.s, rng, taken, t.st)
                    f = Triple(name, t.st, t.r, t.o, t.ot) if name else None
                else:
                    name = _typo(t.o, rng, taken, t.ot)
                    f = Triple(t.s, t.st, t.r, name, t.ot) if name else None
                if f is not None:
                    taken.add(f.s_key if name == f.s else f.o_key)
            else:  # repeated: a type-consistent false fact between known entities
                if rng.random() < 0.5:  # friend of a friend: two hops away, same type as the object
                    two = {z for y in adj[t.s_key] for z in adj[y]} - adj[t.s_key] - {t.s_key}
                    two = sorted(z for z in two if z.split(":", 1)[0] == t.ot)
                    if two:
                        key = rng.choice(two)
                        f = Triple(t.s, t.st, t.r, entities[t.ot][key], t.ot)
                else:
                    f = Triple(t.s, t.st, t.r, rng.choice(names_by_type[t.ot]), t.ot)
            made += add_false(f, kind)

    kind: dict[tuple[str, str, str], str] = {i: "true" for i in true}
    kind.update({i: k for i, (_, k) in false.items()})
    triples = [(t, "true") for t in true_list] + sorted(false.values(), key=lambda x: x[0].ident)
    assertions: list[tuple[float, TripleAssertion]] = []
    votes: dict[tuple[str, str, str], int] = {}
    for t, k in triples:
        values, weights = VOTES[k]
        n = rng.choices(values, weights)[0]
        votes[t.ident] = n
        for src in rng.sample(range(2000), n):
            a = TripleAssertion(subject=t.s, subject_type=t.st, relation=t.r, object=t.o, object_type=t.ot,
                                source=f"doc-{src}", confidence=round(rng.uniform(0.5, 1.0), 3))
            assertions.append((rng.random(), a))
    assertions.sort(key=lambda x: x[0])
    flat = [a for _, a in assertions]
    per = math.ceil(len(flat) / waves)
    chunks = [flat[i:i + per] for i in range(0, len(flat), per)]
    return Stream(flat, kind, votes, schema(), n_real=len(real), n_synthetic=len(synth)), chunks


def oracle_frontier(stream: Stream, *, quorum: int = 2) -> dict:
    """The best (Acceptance, FMR) any policy can reach that decides on what this stream lets it see.

    Features per triple: votes (capped at 4), whether the endpoint types match the declared domain
    and range, how many common neighbours its endpoints have in the **complete true graph** (0, 1,
    2, 3 or more: more than any real policy knows while the graph is still being built), and
    whether it introduces an entity that no true triple mentions. Triples with the same features are indistinguishable to such a
    policy, so it can only promote whole groups or fractions of them; promoting groups in order of
    their true share (Neyman–Pearson) traces the best acceptance for every FMR. Returns the largest
    acceptance with FMR ≤ 0.01, the smallest FMR with acceptance ≥ 0.97 (both with fractional
    groups), and the same two with votes ≥ ``quorum`` required.
    """
    true_adj: dict[str, set[str]] = defaultdict(set)
    known: set[str] = set()
    for (s_key, _, o_key), k in stream.kind.items():
        if k == "true":
            true_adj[s_key].add(o_key)
            true_adj[o_key].add(s_key)
            known.update((s_key, o_key))
    spec = {r: (d, o) for r, (d, o, _) in RELATIONS.items()}
    groups: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])  # features -> [true, false]
    for (s_key, rel, o_key), k in stream.kind.items():
        st, ot = s_key.split(":", 1)[0], o_key.split(":", 1)[0]
        common = len((true_adj[s_key] - {o_key}) & (true_adj[o_key] - {s_key}))
        feats = (min(stream.votes[(s_key, rel, o_key)], 4), (st, ot) == spec[rel], min(common, 3),
                 s_key not in known or o_key not in known)
        groups[feats][0 if k == "true" else 1] += 1
    n_true = sum(t for t, _ in groups.values())

    def frontier(allowed) -> dict:
        ranked = sorted((g for f, g in groups.items() if allowed(f)), key=lambda g: -(g[0] / (g[0] + g[1])))
        levels = (0.5, 0.75, 0.9, 0.97)
        at: dict[float, float | None] = {level: None for level in levels}
        best_acc, tp, fp, full = 0.0, 0.0, 0.0, False
        for t, f in ranked:
            # largest fraction x of this group keeping FMR <= 1%: (fp + x f) <= 0.01 (tp + fp + x (t + f));
            # groups come in decreasing true share, so the first one that only fits in part ends it
            if not full:
                room, slope = 0.01 * (tp + fp) - fp, 0.99 * f - 0.01 * t
                x = 1.0 if slope <= 0 else max(0.0, min(1.0, room / slope))
                full = x < 1.0
                best_acc = (tp + x * t) / n_true
            for level in levels:  # the fraction of this group still needed to reach each acceptance level
                need = level * n_true - tp
                if at[level] is None and t > 0 and need <= t:
                    y = max(0.0, need / t)
                    at[level] = (fp + y * f) / (tp + fp + y * (t + f))
            tp, fp = tp + t, fp + f
        return {"max_acceptance_at_fmr_0.01": best_acc, "min_fmr_at_acceptance_0.97": at[0.97],
                "min_fmr_at_acceptance": {str(k): v for k, v in at.items()}}

    return {"any votes": frontier(lambda f: True), f"votes >= {quorum}": frontier(lambda f: f[0] >= quorum),
            "groups": len(groups)}


# --------------------------------------------------------------------------------------------
# Policies and the measured run
# --------------------------------------------------------------------------------------------

_REAL_DECIDE = policy_runner.decide_round


class CoreTimer:
    """Stands in for ``decide_round`` inside ``run_round``: decides exactly as the real one, then
    times a sample of the round's candidates, each decided alone on the round's own graph with a
    copy of the round's starting state (pure core; the copies are thrown away)."""

    def __init__(self, per_round: int, seed: int):
        self.per_round = per_round
        self.rng = random.Random(seed)
        self.samples: list[float] = []

    def __call__(self, G, cands, cfg, state, *, prefetched=None):  # noqa: ANN001 - same signature as decide_round
        before = state.model_copy(deep=True) if state is not None else None
        out = _REAL_DECIDE(G, cands, cfg, state, prefetched=prefetched)
        pick: Sequence[Candidate] = self.rng.sample(list(cands), min(self.per_round, len(cands)))
        for c in pick:  # each alone, with the thresholds and lambda the round had
            st = before.model_copy(deep=True) if before is not None else None
            t = time.perf_counter()
            _REAL_DECIDE(G, [c], cfg, st, prefetched=prefetched)
            self.samples.append((time.perf_counter() - t) * 1000.0)
        return out


@dataclass
class Variant:
    name: str
    label: str
    config: PromotionConfig | None = None   # None: the quorum rule
    quorum: int = 2
    functional: bool = True                 # the schema declares functional relations

    @property
    def title(self) -> str:
        return self.label if self.config is None or self.functional else f"{self.label} [fn off]"


@dataclass
class Result:
    name: str
    title: str
    acceptance: float
    ceiling: float
    fmr: float
    promoted: int
    promoted_true: int
    promoted_false: int
    by_kind: dict[str, float]
    p50_ms: float
    p95_ms: float
    round_ms_per_cand: float
    rounds: int
    rollbacks: int
    seconds: float
    stopped_early: int = 0
    stalled_waves: int = 0
    extra: dict = field(default_factory=dict)


def _round(graph: Graph, v: Variant, s: KGSchema, timer: CoreTimer, lat: list[float]) -> tuple[RoundSummary, float]:
    """One promotion round of ``v``; returns its summary and wall time (read, decide, write)."""
    t0 = time.perf_counter()
    if v.config is None:
        rows = pending_rows(graph)
        for r in rows:  # the quorum rule, timed per candidate
            t = time.perf_counter()
            quorum_decisions([r], quorum=v.quorum)
            lat.append((time.perf_counter() - t) * 1000.0)
        summary = promote_by_quorum(graph, quorum=v.quorum)
    else:
        policy_runner.decide_round = timer
        try:
            summary = policy_runner.run_round(graph, schema=s, config=v.config)
        finally:
            policy_runner.decide_round = _REAL_DECIDE
    return summary, time.perf_counter() - t0


def run_variant(graph: Graph, stream: Stream, chunks: list[list[TripleAssertion]], v: Variant, *,
                max_rounds: int, sample_per_round: int, seed: int, log: Callable[[str], None]) -> Result:
    """Wipe the store, then per wave: stage it, run rounds until two in a row promote nothing (or two
    in a row are rolled back: the policy would repeat them forever), at most ``max_rounds``."""
    reset(graph)
    sch = schema(functional=v.functional)
    started = time.perf_counter()
    timer = CoreTimer(sample_per_round, seed)
    quorum_lat: list[float] = []
    rounds = rollbacks = stopped = stalled = 0
    round_seconds = 0.0
    round_cands = 0
    for w, chunk in enumerate(chunks):
        stage(graph, chunk, schema=sch, batch_size=5000)
        idle = rolled = 0
        for _ in range(max_rounds):
            summary, secs = _round(graph, v, sch, timer, quorum_lat)
            if summary.version is None:
                break
            rounds += 1
            round_seconds += secs
            round_cands += summary.candidates
            rollbacks += summary.rolled_back
            idle = idle + 1 if summary.promoted == 0 else 0
            rolled = rolled + 1 if summary.rolled_back else 0
            if idle >= 2 or (v.config is None and summary.promoted == 0):
                break
            if rolled >= 2:
                stalled += 1
                break
        else:
            stopped += 1
        log(f"  {v.name}: wave {w + 1}/{len(chunks)} done, {rounds} rounds, {rollbacks} rolled back, "
            f"{time.perf_counter() - started:.0f} s")
    final = {(e.subject_key, e.relation, e.object_key) for e in promoted_edges(graph)}
    kinds = Counter(stream.kind.values())
    got = Counter(stream.kind.get(i, "unknown") for i in final)
    n_true = kinds["true"]
    promotable = sum(1 for i, k in stream.kind.items() if k == "true" and stream.votes[i] >= (v.quorum if v.config is None else v.config.quorum))
    lat = np.array(quorum_lat if v.config is None else timer.samples) if (quorum_lat or timer.samples) else np.zeros(1)
    false_promoted = sum(n for k, n in got.items() if k != "true")
    return Result(
        name=v.name, title=v.title, acceptance=got["true"] / n_true, ceiling=promotable / n_true,
        fmr=false_promoted / len(final) if final else 0.0, promoted=len(final), promoted_true=got["true"],
        promoted_false=false_promoted, by_kind={k: got[k] / kinds[k] for k in KINDS if kinds[k]},
        p50_ms=float(np.percentile(lat, 50)), p95_ms=float(np.percentile(lat, 95)),
        round_ms_per_cand=1000.0 * round_seconds / max(round_cands, 1), rounds=rounds, rollbacks=rollbacks,
        seconds=time.perf_counter() - started, stopped_early=stopped, stalled_waves=stalled,
    )


VARIANTS = [
    Variant("a", "(a) promote everything", None, quorum=1),
    Variant("b", "(b) votes >= 2", None, quorum=2),
    Variant("c", "(c) kgr policy (defaults)", PromotionConfig()),
    Variant("d1", "(d) no EPC term", PromotionConfig(use_epc=False)),
    Variant("d2", "(d) no IG (dH) term", PromotionConfig(use_ig=False)),
    Variant("d3", "(d) no dSP term", PromotionConfig(use_sp=False)),
    Variant("d4", "(d) single threshold", PromotionConfig(single_threshold=True)),
    Variant("e", "(e) kgr policy, quorum 1", PromotionConfig(quorum=1)),
    # the gauge switched off: every candidate past quorum and constraints is accepted (DG always fires)
    Variant("f", "(f) votes >= 2 + constraints", PromotionConfig(
        calibrate_thresholds=False, theta_ag=1e9, theta_dg=1e9, audit=False, max_promotions_per_round=100_000)),
]


# --------------------------------------------------------------------------------------------
# Pure-core latency at scale, entropy timings
# --------------------------------------------------------------------------------------------

def core_latency_at_scale(n_edges: int, n_cands: int, seed: int) -> dict:
    """Decision latency of the pure core on a synthetic typed graph with ``n_edges`` promoted edges."""
    rng = random.Random(seed)
    triples = synthetic_kg(int(n_edges * 1.15) + 2 * n_cands, rng)
    G = nx.Graph()
    held_out = []
    m = 0
    for t in triples:
        if t.s_key == t.o_key or G.has_edge(t.s_key, t.o_key):
            continue
        if len(held_out) < n_cands and rng.random() < 0.05:
            held_out.append(t)
            continue
        G.add_edge(t.s_key, t.o_key)
        m += 1  # networkx counts edges in O(m): keep our own count
        if m >= n_edges:
            break
    nodes = list(G.nodes())
    cands = [Candidate(key=f"t{i}", subject=t.s_key, object=t.o_key, relation=t.r, votes=3)
             for i, t in enumerate(held_out)]
    cands += [Candidate(key=f"f{i}", subject=rng.choice(nodes), object=rng.choice(nodes), relation="KNOWS", votes=3)
              for i in range(n_cands)]
    cands = [c for c in cands if c.subject != c.object]
    lat = policy_runner.decision_latencies(G, cands, PromotionConfig())
    return {"edges": G.number_of_edges(), "nodes": G.number_of_nodes(), "candidates": len(cands),
            "p50_ms": float(np.percentile(lat, 50)), "p95_ms": float(np.percentile(lat, 95)),
            "mean_ms": float(lat.mean())}


def e2e_at_scale(graph: Graph, n_edges: int, n_cands: int, seed: int, log: Callable[[str], None]) -> dict:
    """One real ``run_round`` on Neo4j with ``n_edges`` promoted edges and ``n_cands`` fresh candidates."""
    rng = random.Random(seed)
    sch = schema(functional=False)
    triples = [t for t in synthetic_kg(int(n_edges * 1.15) + 2 * n_cands, rng) if t.s_key != t.o_key]
    seen: set[tuple[str, str, str]] = set()
    base, fresh = [], []
    for t in triples:
        if t.ident in seen:
            continue
        seen.add(t.ident)
        (fresh if len(fresh) < n_cands and rng.random() < 0.05 else base).append(t)
    base = base[:n_edges]

    def assert_(t: Triple, src: str) -> TripleAssertion:
        return TripleAssertion(subject=t.s, subject_type=t.st, relation=t.r, object=t.o, object_type=t.ot, source=src)

    reset(graph)
    t0 = time.perf_counter()
    stage(graph, (assert_(t, "seed") for t in base), schema=sch, batch_size=5000)
    log(f"  e2e: staged {len(base)} edges in {time.perf_counter() - t0:.0f} s")
    # in versions of 10k edges: one 100k-decision round overflows the transaction memory of a 1 GB heap
    rows = pending_rows(graph)
    for i in range(0, len(rows), 10_000):
        apply_decisions(graph, quorum_decisions(rows[i:i + 10_000], quorum=1), note="bench seed")
    log(f"  e2e: promoted them in {time.perf_counter() - t0:.0f} s")
    stage(graph, [assert_(t, src) for t in fresh for src in ("s1", "s2")], schema=sch)
    # the read phase both ways on the same state: the candidates' region vs every promoted edge
    rows = pending_rows(graph)
    cfg = PromotionConfig()
    reads: dict[int, dict] = {}
    for n in sorted({len(rows), min(50, len(rows))}):
        reads[n] = {}
        for fetch in ("full", "local", "full", "local"):  # alternate; keep the second of each (warm caches)
            t0 = time.perf_counter()
            seen = (policy_runner._read_local(graph, rows[:n], cfg, sch) if fetch == "local"
                    else policy_runner._read_full(graph))
            reads[n][fetch] = {"seconds": time.perf_counter() - t0, **seen.read}
    t0 = time.perf_counter()
    summary = policy_runner.run_round(graph, schema=sch)
    wall = time.perf_counter() - t0
    reset(graph)
    return {"edges": len(base), "candidates": summary.candidates, "promoted": summary.promoted,
            "timings_s": summary.timings, "wall_s": wall, "ms_per_candidate": 1000.0 * wall / max(summary.candidates, 1),
            "reads": reads, "graph_read": summary.graph_read}


def backlog_run(graph: Graph, n: int, seed: int, log: Callable[[str], None]) -> dict:
    """``kgr promote --until-done`` on a fresh backlog of ``n`` staged edges (two sources each)."""
    from kgr.engine import Engine

    rng = random.Random(seed)
    sch = schema(functional=False)
    triples, seen = [], set()
    for t in synthetic_kg(int(n * 1.1) + 10, rng):
        if t.s_key != t.o_key and t.ident not in seen:
            seen.add(t.ident)
            triples.append(t)
    triples = triples[:n]
    reset(graph)
    stage(graph, [TripleAssertion(subject=t.s, subject_type=t.st, relation=t.r, object=t.o, object_type=t.ot,
                                  source=src) for t in triples for src in ("s1", "s2")], schema=sch, batch_size=5000)
    per_round: list[float] = []
    last = [time.perf_counter()]

    def tick(summary: RoundSummary) -> None:
        now = time.perf_counter()
        per_round.append(now - last[0])
        last[0] = now
        log(f"  backlog: round {len(per_round)}: {summary.promoted} promoted, {summary.deferred} deferred")

    t0 = time.perf_counter()
    rounds = Engine(graph, schema=sch).promote_until_done(on_round=tick)
    wall = time.perf_counter() - t0
    out = {"edges": len(triples), "rounds": len(rounds), "wall_s": wall, "promoted": sum(r.promoted for r in rounds),
           "held": rounds[-1].held if rounds else 0, "max_round_s": max(per_round, default=0.0),
           "max_candidates": max((r.candidates for r in rounds), default=0)}
    reset(graph)
    return out


def entropy_timings(sizes: list[int], exact_max: int, seed: int, log: Callable[[str], None]) -> list[dict]:
    out = []
    for n in sizes:
        G = nx.barabasi_albert_graph(n, 2, seed=seed)
        L, _ = laplacian_from_graph(G)
        t = time.perf_counter()
        slq = vn_entropy_slq(L, seed=seed)
        t_slq = time.perf_counter() - t
        row = {"n": n, "edges": G.number_of_edges(), "slq_s": t_slq, "slq": slq, "exact_s": None, "exact": None,
               "rel_err": None}
        if n <= exact_max:
            t = time.perf_counter()
            ex = vn_entropy_exact(L)
            row.update(exact_s=time.perf_counter() - t, exact=ex, rel_err=abs(slq - ex) / ex)
        out.append(row)
        log(f"  entropy n={n}: slq {t_slq:.2f} s" + (f", exact {row['exact_s']:.1f} s" if row["exact_s"] else ""))
    return out


# --------------------------------------------------------------------------------------------

def _table(results: list[Result]) -> str:
    head = (f"{'policy':<37} {'Accept':>7} {'ceiling':>7} {'FMR':>7} {'P50 ms':>8} {'P95 ms':>8} {'round ms/c':>10} "
            f"{'promoted':>8} {'rounds':>6} {'rollbk':>6} " + " ".join(f"{k:>8}" for k in KINDS[1:]))
    lines = [head, "-" * len(head)]
    for r in results:
        lines.append(
            f"{r.title:<37} {r.acceptance:>7.3f} {r.ceiling:>7.3f} {r.fmr:>7.3f} {r.p50_ms:>8.3f} {r.p95_ms:>8.3f} "
            f"{r.round_ms_per_cand:>10.2f} {r.promoted:>8} {r.rounds:>6} {r.rollbacks:>6} "
            + " ".join(f"{r.by_kind.get(k, 0.0):>8.3f}" for k in KINDS[1:]))
    return "\n".join(lines)


def _print_results(results: list[Result], chunks: list, max_rounds: int) -> None:
    print()
    print("Promotion quality and cost (Acceptance = promoted true / true; ceiling = true with votes >= quorum;")
    print("FMR = promoted false / promoted; P50/P95 = decision latency per candidate; last columns = share of")
    print("each false kind promoted)")
    print(_table(results))
    for r in results:
        if r.stopped_early:
            print(f"note: {r.title}: {r.stopped_early} waves hit --max-rounds {max_rounds}")
        if r.stalled_waves:
            print(f"note: {r.title}: {r.stalled_waves} of {len(chunks)} waves stalled on repeated rollbacks "
                  "(the grace-period audit undoes the same round again and again)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--synthetic", type=int, default=1000, help="synthetic true triples added to the 475 real ones")
    ap.add_argument("--waves", type=int, default=4, help="the stream arrives in this many waves")
    ap.add_argument("--max-rounds", type=int, default=40, help="promotion rounds per wave at most")
    ap.add_argument("--sample", type=int, default=40, help="candidates timed alone per round (latency)")
    ap.add_argument("--variants", default=",".join(v.name for v in VARIANTS), help="comma-separated: a,b,c,d1..d4,e")
    ap.add_argument("--scale-edges", type=int, default=100_000, help="promoted edges for the pure-core latency")
    ap.add_argument("--scale-candidates", type=int, default=500)
    ap.add_argument("--entropy-sizes", default="1000,2000,5000,10000,100000")
    ap.add_argument("--exact-max", type=int, default=10_000, help="largest n for the exact eigensolver")
    ap.add_argument("--skip-scale", action="store_true")
    ap.add_argument("--e2e-edges", type=int, default=100_000,
                    help="also time one real run_round on Neo4j with this many promoted edges (0: skip)")
    ap.add_argument("--skip-entropy", action="store_true")
    ap.add_argument("--backlog", type=int, default=20_000,
                    help="also time kgr promote --until-done on a fresh backlog of this many staged edges (0: skip)")
    ap.add_argument("--functional", choices=("default", "on", "off"), default="default",
                    help="geDIG rows with the schema's functional flags (on), without them (off), or "
                         "(default) (c) both ways and the other geDIG rows without")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json-out", help="also write every figure to this JSON file")
    args = ap.parse_args(argv)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    t_all = time.perf_counter()
    load = os.getloadavg()
    print(f"load average at the start {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} cores")
    stream, chunks = build_stream(n_synthetic=args.synthetic, seed=args.seed, waves=args.waves)
    kinds = Counter(stream.kind.values())
    votes_true = Counter(stream.votes[i] for i, k in stream.kind.items() if k == "true")
    print(f"stream: {len(stream.assertions)} assertions, {len(stream.kind)} distinct triples "
          f"({stream.n_real} real facts from networkx + {stream.n_synthetic} synthetic); "
          + ", ".join(f"{k} {kinds[k]}" for k in KINDS) + f"; {len(chunks)} waves")
    print("true triples by votes: " + ", ".join(f"{n}: {votes_true[n]}" for n in sorted(votes_true)))
    oracle = oracle_frontier(stream)
    for name, fr in oracle.items():
        if name == "groups":
            continue
        pts = ", ".join(f"{lvl}: {'unreachable' if v is None else f'{v:.3f}'}"
                        for lvl, v in fr["min_fmr_at_acceptance"].items())
        print(f"oracle frontier ({name}; features: votes, declared types, common neighbours in the true graph, "
              f"new entity): max Acceptance at FMR <= 0.01 = {fr['max_acceptance_at_fmr_0.01']:.3f}; "
              f"min FMR at Acceptance >= {pts}")

    names = set(args.variants.split(","))
    wanted: list[Variant] = []
    for v in VARIANTS:
        if v.name not in names:
            continue
        if v.config is None or args.functional == "on" or (args.functional == "default" and v.name == "c"):
            wanted.append(v)
        if v.config is not None and args.functional != "on":
            wanted.append(replace(v, functional=False))
    graph = connect()
    init_store(graph, stream.schema)  # the functional flags do not change the store's schema
    results = []
    try:
        for v in wanted:
            log(f"running {v.title} …")
            results.append(run_variant(graph, stream, chunks, v, max_rounds=args.max_rounds,
                                       sample_per_round=args.sample, seed=args.seed, log=log))
        e2e = None
        if args.e2e_edges:
            log("end-to-end round at scale …")
            e2e = e2e_at_scale(graph, args.e2e_edges, args.scale_candidates, args.seed, log)
        backlog = None
        if args.backlog:
            log("backlog until done …")
            backlog = backlog_run(graph, args.backlog, args.seed, log)
        reset(graph)
    finally:
        graph.close()
    if results:
        _print_results(results, chunks, args.max_rounds)
    if e2e is not None:
        t = e2e["timings_s"]
        print()
        print(f"End to end on Neo4j, one run_round with {e2e['edges']} promoted edges and {e2e['candidates']} "
              f"candidates: {e2e['wall_s']:.1f} s = {e2e['ms_per_candidate']:.1f} ms per candidate (read "
              f"{t.get('read', 0):.2f} s, prepare {t.get('prepare', 0):.2f} s, decide {t.get('decide', 0):.2f} s, "
              f"write {t.get('write', 0):.2f} s)")
        for n, rd in sorted(e2e["reads"].items()):
            rf, rl = rd["full"], rd["local"]
            print(f"  read phase for {n} candidates, same state: their region {rl['seconds']:.2f} s ({rl['edges']} edges, "
                  f"{rl.get('nodes', 0)} nodes, {rl.get('queries', 0)} queries) vs every promoted edge "
                  f"{rf['seconds']:.2f} s ({rf['edges']} edges): {rf['seconds'] / max(rl['seconds'], 1e-9):.1f}x")
    if backlog is not None:
        print()
        print(f"Backlog: kgr promote --until-done on {backlog['edges']} freshly staged edges (2 sources each): "
              f"{backlog['rounds']} rounds (at most {backlog['max_candidates']} candidates each), "
              f"{backlog['wall_s']:.0f} s in all, longest round {backlog['max_round_s']:.1f} s, "
              f"{backlog['promoted']} promoted")
    scale = None
    if not args.skip_scale:
        log("pure-core latency at scale …")
        scale = core_latency_at_scale(args.scale_edges, args.scale_candidates, args.seed)
        print()
        print(f"Decision latency, pure core, at {scale['edges']} promoted edges ({scale['nodes']} nodes, networkx, "
              f"local balls; {scale['candidates']} candidates alone, half held-out true, half random): "
              f"P50 {scale['p50_ms']:.2f} ms, P95 {scale['p95_ms']:.2f} ms, mean {scale['mean_ms']:.2f} ms "
              "(target P50 <= 5 ms)")

    ent = None
    if not args.skip_entropy:
        log("entropy timings …")
        ent = entropy_timings([int(x) for x in args.entropy_sizes.split(",")], args.exact_max, args.seed, log)
        print()
        print(f"von Neumann entropy, Barabasi-Albert m=2 (exact only up to n = {args.exact_max})")
        print(f"{'n':>8} {'edges':>8} {'exact s':>9} {'SLQ s':>8} {'S exact':>9} {'S SLQ':>9} {'rel err':>9}")
        for row in ent:
            ex = "—" if row["exact_s"] is None else f"{row['exact_s']:.2f}"
            se = "—" if row["exact"] is None else f"{row['exact']:.5f}"
            re_ = "—" if row["rel_err"] is None else f"{row['rel_err']:.1e}"
            print(f"{row['n']:>8} {row['edges']:>8} {ex:>9} {row['slq_s']:>8.2f} {se:>9} {row['slq']:>9.5f} {re_:>9}")
    print()
    load = os.getloadavg()
    print(f"total {time.perf_counter() - t_all:.0f} s; load average at the end {load[0]:.1f} / {load[1]:.1f} / "
          f"{load[2]:.1f} on {os.cpu_count()} cores; BLAS threads {os.environ.get('OPENBLAS_NUM_THREADS')}")
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as fh:
            json.dump({"args": vars(args), "stream": {k: kinds[k] for k in KINDS}, "oracle": oracle,
                       "results": [r.__dict__ for r in results], "scale": scale, "e2e": e2e, "backlog": backlog,
                       "entropy": ent}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
