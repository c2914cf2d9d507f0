#!/usr/bin/env python3
"""Benchmark: promotion quality and cost — kgr's policies against vote rules, on three streams.

Usage::

    python scripts/bench_promotion.py --json-out bench.json          # NEO4J_URI, or the managed Neo4j
    python scripts/bench_promotion.py --streams text --policies votes2,cal0,cal5

It WIPES the database it is pointed at.

**Streams** (:mod:`promotion_streams`): ``networkx`` (the graphs networkx ships plus a synthetic
research world, as assertions with four kinds of false triple), ``text`` (a synthetic corpus
ingested through kgr's real pipeline with an extractor that also hallucinates; the corpus can be
re-read), ``wordnet`` (a typed subset of WordNet 3.0 with five kinds of false triple). Each
arrives in waves; after each wave a policy runs rounds until one is settled.

**Policies**, each on a wiped store with the same stream:

- ``votes1``, ``votes2``, ``votes3``: the plain vote rule (distinct sources >= n), no schema;
- ``votes2c``: votes >= 2 plus the schema's constraints (declared domain/range, functional
  relations, near-duplicate entities): the geDIG runner with its gates switched off;
- ``gedig``: the previous default (votes, constraints, the geDIG gauge and gates);
- ``cal0``, ``cal2``, ``cal5``, ``cal10``: the calibrated policy (the new default, target FMR
  0.1) with label budgets of 0 %, 2 %, 5 % and 10 % of the stream's distinct triples, spread over the waves:
  after each wave's rounds, a simulated reviewer answers the top of ``kgr review queue`` from the
  stream's truth (``kgr review label``), and rounds run again. On the text stream the calibrated
  policy re-reads the corpus for the candidates it escalates (the offline rules verifier).
- ``t05cal0``, ``t05cal5``: the same with ``--target-fmr 0.05``, without labels and with 5 %.

**Figures** per stream and policy: Acceptance (promoted true / all true), FMR (promoted false /
promoted), the FMR the policy predicted for its promoted graph (mean of 1 - p_hat over promoted
edges; the calibrated policy only), labels used, rounds, candidates decided per second of round
time (read + decide + write), and the share of each false kind promoted. Plus the oracle frontier
of each stream (the best Acceptance/FMR any policy deciding on votes, declared types,
common neighbours in the complete true graph and novelty can reach).

**Speed** (``--speed``, on by default): end to end ``run_round`` of the calibrated policy with
5,000 candidates on a promoted graph of 100k edges (cold: first round of a process, which reads
the graph, mines rules and fits the embeddings; warm: the next round with 5,000 new candidates),
and on a small dense graph (134 nodes, 1,356 promoted edges, 1,832 candidates); and
``promote --until-done`` on a backlog of 20,000 staged edges.

BLAS runs single-threaded unless ``OPENBLAS_NUM_THREADS`` is set.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402 - after the thread settings, which must precede numpy
import json
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import networkx as nx

sys.path.insert(0, str(Path(__file__).resolve().parent))

import promotion_streams as ps  # noqa: E402
from kgr.engine import Engine  # noqa: E402
from kgr.extract.verify import RulesVerifier  # noqa: E402
from kgr.promotion.config import CalibratedConfig  # noqa: E402
from kgr.gauge.policies import QuorumConfig, make_policy  # noqa: E402
from kgr.gauge.policy import PromotionConfig  # noqa: E402
from kgr.ingest.config import IngestConfig  # noqa: E402
from kgr.ingest.pipeline import ingest  # noqa: E402
from kgr.model.decisions import EdgeDecision, RoundSummary  # noqa: E402
from kgr.model.review import EdgeLabel  # noqa: E402
from kgr.model.schema import KGSchema  # noqa: E402
from kgr.model.triples import TripleAssertion  # noqa: E402
from kgr.store.admin import init_store, reset  # noqa: E402
from kgr.connect import connect  # noqa: E402
from kgr.store.connection import Graph  # noqa: E402
from kgr.store.promotion import apply_decisions, candidates  # noqa: E402
from kgr.store.rounds import PROMOTED_CACHE, read_context, run_round  # noqa: E402
from kgr.store.staging import stage  # noqa: E402
from kgr.store.versions import promoted_edges  # noqa: E402

Log = Callable[[str], None]


@dataclass(frozen=True)
class Spec:
    name: str
    label: str
    policy: str
    config: object
    labels: float = 0.0
    plain: bool = False   # no schema: the plain vote rule


GATES_OFF = PromotionConfig(calibrate_thresholds=False, theta_ag=1e9, theta_dg=1e9, audit=False,
                            max_promotions_per_round=100_000)
SPECS = [
    Spec("votes1", "votes >= 1", "quorum", QuorumConfig(quorum=1), plain=True),
    Spec("votes2", "votes >= 2", "quorum", QuorumConfig(quorum=2), plain=True),
    Spec("votes3", "votes >= 3", "quorum", QuorumConfig(quorum=3), plain=True),
    Spec("votes2c", "votes >= 2 + constraints", "gedig", GATES_OFF),
    Spec("gedig", "geDIG (previous default)", "gedig", PromotionConfig()),
    Spec("cal0", "calibrated (default), no labels", "calibrated", CalibratedConfig()),
    Spec("cal2", "calibrated, 2% labels", "calibrated", CalibratedConfig(), labels=0.02),
    Spec("cal5", "calibrated, 5% labels", "calibrated", CalibratedConfig(), labels=0.05),
    Spec("cal10", "calibrated, 10% labels", "calibrated", CalibratedConfig(), labels=0.10),
    Spec("t05cal0", "calibrated @0.05, no labels", "calibrated", CalibratedConfig(target_fmr=0.05)),
    Spec("t05cal5", "calibrated @0.05, 5% labels", "calibrated", CalibratedConfig(target_fmr=0.05), labels=0.05),
]


@dataclass
class Result:
    stream: str
    policy: str
    label: str
    acceptance: float
    fmr: float
    predicted_fmr: float | None
    promoted: int
    labels: int
    rounds: int
    candidates: int
    round_seconds: float
    seconds: float
    by_kind: dict[str, float] = field(default_factory=dict)
    reread: dict[str, int] = field(default_factory=dict)
    ceiling: dict[str, float] = field(default_factory=dict)

    @property
    def per_second(self) -> float:
        return self.candidates / self.round_seconds if self.round_seconds else 0.0


def _ident(s_key: str, rel: str, o_key: str) -> tuple[str, str, str]:
    return (s_key, rel, o_key)


class Runner:
    """One policy on one stream, on a wiped store."""

    def __init__(self, graph: Graph, stream: ps.LabelledStream, spec: Spec, log: Log, max_rounds: int):
        self.graph, self.stream, self.spec, self.log, self.max_rounds = graph, stream, spec, log, max_rounds
        self.schema = stream.schema
        self.engine = Engine(graph, schema=None if spec.plain else stream.schema)
        self.policy = make_policy(spec.policy, spec.config)  # type: ignore[arg-type]
        self.verifier = RulesVerifier() if spec.policy == "calibrated" and stream.documents else None
        self.rounds = self.cands = self.labels = 0
        self.round_seconds = 0.0
        self.reread: Counter[str] = Counter()

    def promote(self) -> None:
        for _ in range(self.max_rounds):
            t0 = time.perf_counter()
            s: RoundSummary = self.engine.promote(policy=self.policy, verifier=self.verifier)
            self.round_seconds += time.perf_counter() - t0
            self.cands += s.candidates
            self.rounds += s.version is not None
            if s.reread is not None:
                self.reread.update({k: getattr(s.reread, k) for k in ("claims", "supports", "contradicts", "silent")})
            if s.settled and not (s.reread is not None and s.reread.claims):
                return
        self.log(f"    note: hit --max-rounds {self.max_rounds}")

    def review(self, budget: int) -> None:
        """A simulated reviewer answers the top ``budget`` items of the review queue from the truth."""
        left = budget
        while left > 0:
            q = self.engine.review_queue(limit=min(left, 1000))
            answers = []
            for it in q.items:
                truth = self.stream.is_true(_ident(it.subject_key, it.relation, it.object_key))
                answers.append(EdgeLabel(key=it.key, label=bool(truth), reviewer="simulated"))
            if not answers:
                return
            self.engine.label(answers)
            self.labels += len(answers)
            left -= len(answers)

    def run(self) -> Result:
        reset(self.graph)
        PROMOTED_CACHE.clear()
        init_store(self.graph, self.schema)
        started = time.perf_counter()
        total = len(self.stream.kind)
        per_wave = round(self.spec.labels * total / max(1, len(self.stream.waves)))
        for w, wave in enumerate(self.stream.waves):
            if wave.assertions:
                stage(self.graph, wave.assertions, schema=self.engine.schema, batch_size=5000)
            if wave.documents:
                self.ingest_documents(wave.documents, w)
            self.promote()
            if per_wave:
                self.review(per_wave)
                self.promote()
            self.log(f"    wave {w + 1}/{len(self.stream.waves)}: {self.rounds} rounds, {self.labels} labels, "
                     f"{time.perf_counter() - started:.0f} s")
        res = self.result(time.perf_counter() - started)
        if self.spec.name == "cal0":
            res.ceiling = self.ceiling()
        return res

    def ingest_documents(self, documents: list[tuple[str, str]], wave: int) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = ps.write_documents(documents, Path(tmp) / f"wave{wave}.jsonl")
            cfg = IngestConfig(extractor="rules", chunking=self.stream.chunking or IngestConfig().chunking,
                               promote=False)
            ingest(self.graph, [path], self.schema, config=cfg, extractor=self.stream.extractor, promote=None)

    def ceiling(self) -> dict:
        """What a model on kgr's own features could do with *every* label: 5-fold cross-validated
        logistic regression over the feature vectors recorded on the scored edges (a design bound:
        no label budget can teach more than this from these features)."""
        import numpy as np
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import cross_val_predict

        rows = self.graph.driver.execute_query(
            "MATCH (s:Entity)-[p:PENDING_REL]->(o:Entity) WHERE p.features IS NOT NULL "
            "RETURN s.key AS s, p.type AS r, o.key AS o, p.features AS f").records
        ys = [self.stream.is_true((r["s"], r["r"], r["o"])) for r in rows]
        keep = [i for i, y in enumerate(ys) if y is not None]
        if len(keep) < 50:
            return {}
        X = np.nan_to_num(np.array([rows[i]["f"] for i in keep], dtype=float))
        y = np.array([bool(ys[i]) for i in keep])
        X = (X - X.mean(0)) / (X.std(0) + 1e-9)
        p = cross_val_predict(LogisticRegression(max_iter=3000), X, y, cv=5, method="predict_proba")[:, 1]
        order = np.argsort(-p)
        tp, fp = np.cumsum(y[order]), np.cumsum(~y[order])
        n_true = sum(1 for v in self.stream.truth.values() if v)
        out = {"scored": len(keep)}
        for acc in (0.5, 0.8, 0.9):
            i = np.searchsorted(tp, acc * n_true)
            out[f"fmr_at_acceptance_{acc}"] = None if i >= len(tp) else float(fp[i] / (tp[i] + fp[i]))
        ok = np.nonzero(fp / (tp + fp) <= 0.05)[0]
        out["acceptance_at_fmr_0.05"] = float(tp[ok[-1]] / n_true) if len(ok) else 0.0
        return out

    def result(self, seconds: float) -> Result:
        final = {(e.subject_key, e.relation, e.object_key) for e in promoted_edges(self.graph)}
        n_true = sum(1 for v in self.stream.truth.values() if v)
        tp = sum(1 for i in final if self.stream.is_true(i))
        kinds = Counter(self.stream.kind.get(i, "unknown") for i in final)
        totals = Counter(self.stream.kind.values())
        ctx, _ = read_context(self.graph, "calibrated")
        predicted = (ctx.promoted_expected_false / ctx.promoted_scored) if ctx.promoted_scored else None
        return Result(stream=self.stream.name, policy=self.spec.name, label=self.spec.label,
                      acceptance=tp / n_true if n_true else 0.0, fmr=(len(final) - tp) / len(final) if final else 0.0,
                      predicted_fmr=predicted if self.spec.policy == "calibrated" else None, promoted=len(final),
                      labels=self.labels, rounds=self.rounds, candidates=self.cands, round_seconds=self.round_seconds,
                      seconds=seconds, by_kind={k: kinds[k] / totals[k] for k in totals if k != "true" and totals[k]},
                      reread=dict(self.reread))


# --------------------------------------------------------------------------------------------
# Speed
# --------------------------------------------------------------------------------------------

def _assert(t: ps.Triple, src: str) -> TripleAssertion:
    return TripleAssertion(subject=t.s, subject_type=t.st, relation=t.r, object=t.o, object_type=t.ot, source=src)


def _seed_promoted(graph: Graph, triples: list[ps.Triple], sch: KGSchema, log: Log) -> None:
    """Stage ``triples`` (one source each) and promote them all, in versions of 10k edges."""
    t0 = time.perf_counter()
    stage(graph, (_assert(t, "seed") for t in triples), schema=sch, batch_size=5000)
    rows = candidates(graph)
    for i in range(0, len(rows), 10_000):
        apply_decisions(graph, [EdgeDecision(key=r.key, subject_key=r.subject_key, object_key=r.object_key,
                                             action="promote", reason="bench seed") for r in rows[i:i + 10_000]],
                        note="bench seed")
    log(f"  seeded {len(triples)} promoted edges in {time.perf_counter() - t0:.0f} s")


def _timed_round(graph: Graph, policy, sch: KGSchema) -> dict:  # noqa: ANN001 - a Policy
    t0 = time.perf_counter()
    s = run_round(graph, policy, schema=sch)
    wall = time.perf_counter() - t0
    return {"candidates": s.candidates, "promoted": s.promoted, "seconds": wall,
            "per_second": s.candidates / wall if wall else 0.0, "timings": s.timings}


def speed_large(graph: Graph, n_edges: int, n_cands: int, seed: int, log: Log) -> dict:
    """Cold and warm rounds of the calibrated policy on ``n_edges`` promoted edges."""
    rng = random.Random(seed)
    sch = ps.schema(functional=False)
    seen: set = set()
    base, fresh = [], []
    for t in ps.synthetic_kg(int(n_edges * 1.15) + 4 * n_cands, rng):
        if t.s_key == t.o_key or t.ident in seen:
            continue
        seen.add(t.ident)
        (fresh if len(fresh) < 2 * n_cands and rng.random() < 0.08 else base).append(t)
    base = base[:n_edges]
    reset(graph)
    PROMOTED_CACHE.clear()
    init_store(graph, sch)
    _seed_promoted(graph, base, sch, log)
    policy = make_policy("calibrated")
    out = {"edges": len(base)}
    for phase, batch in (("cold", fresh[:n_cands]), ("warm", fresh[n_cands:2 * n_cands])):
        stage(graph, [_assert(t, s) for t in batch for s in ("s1", "s2")], schema=sch)
        out[phase] = _timed_round(graph, policy, sch)
        log(f"  {phase} round: {out[phase]['candidates']} candidates in {out[phase]['seconds']:.1f} s "
            f"({out[phase]['per_second']:.0f}/s) {out[phase]['timings']}")
    return out


def speed_dense(graph: Graph, seed: int, log: Log) -> dict:
    """The calibrated policy on a small dense graph: 134 nodes, 1,356 promoted edges, 1,832 candidates."""
    rng = random.Random(seed)
    G = nx.gnm_random_graph(134, 1356 + 1832, seed=seed)
    edges = sorted(G.edges())
    rng.shuffle(edges)
    sch = KGSchema.model_validate({"entity_types": {"Node": {}}, "relation_types": {"LINKS": {}}})
    tri = [ps.Triple(f"N{a}", "Node", "LINKS", f"N{b}", "Node") for a, b in edges]
    reset(graph)
    PROMOTED_CACHE.clear()
    init_store(graph, sch)
    _seed_promoted(graph, tri[:1356], sch, log)
    stage(graph, [_assert(t, s) for t in tri[1356:] for s in ("s1", "s2")], schema=sch)
    policy = make_policy("calibrated")
    out = {"nodes": 134, "promoted_edges": 1356, "cold": _timed_round(graph, policy, sch)}
    log(f"  dense graph: {out['cold']['candidates']} candidates in {out['cold']['seconds']:.1f} s "
        f"({out['cold']['per_second']:.0f}/s) {out['cold']['timings']}")
    return out


def backlog(graph: Graph, n: int, seed: int, log: Log) -> dict:
    """``kgr promote --until-done`` (calibrated) on ``n`` freshly staged edges, two sources each."""
    rng = random.Random(seed)
    sch = ps.schema(functional=False)
    seen: set = set()
    tri = []
    for t in ps.synthetic_kg(int(n * 1.1) + 10, rng):
        if t.s_key != t.o_key and t.ident not in seen:
            seen.add(t.ident)
            tri.append(t)
    tri = tri[:n]
    reset(graph)
    PROMOTED_CACHE.clear()
    init_store(graph, sch)
    stage(graph, [_assert(t, s) for t in tri for s in ("s1", "s2")], schema=sch, batch_size=5000)
    t0 = time.perf_counter()
    rounds = Engine(graph, schema=sch).promote_until_done()
    wall = time.perf_counter() - t0
    out = {"edges": len(tri), "rounds": len(rounds), "seconds": wall, "promoted": sum(r.promoted for r in rounds),
           "candidates": sum(r.candidates for r in rounds)}
    out["per_second"] = out["candidates"] / wall if wall else 0.0
    log(f"  backlog: {out['rounds']} rounds, {out['candidates']} decisions in {wall:.0f} s")
    return out


# --------------------------------------------------------------------------------------------

def _table(results: list[Result], kinds: list[str]) -> str:
    head = (f"{'policy':<33} {'Accept':>7} {'FMR':>7} {'pred.':>7} {'labels':>6} {'promoted':>8} {'rounds':>6} "
            f"{'cand/s':>7} " + " ".join(f"{k[:9]:>9}" for k in kinds))
    lines = [head, "-" * len(head)]
    for r in results:
        pred = "-" if r.predicted_fmr is None else f"{r.predicted_fmr:.3f}"
        lines.append(f"{r.label:<33} {r.acceptance:>7.3f} {r.fmr:>7.3f} {pred:>7} {r.labels:>6} {r.promoted:>8} "
                     f"{r.rounds:>6} {r.per_second:>7.0f} " + " ".join(f"{r.by_kind.get(k, 0.0):>9.3f}" for k in kinds))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streams", default="networkx,text,wordnet")
    ap.add_argument("--policies", default=",".join(s.name for s in SPECS))
    ap.add_argument("--waves", type=int, default=4)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--max-rounds", type=int, default=60, help="rounds per wave at most")
    ap.add_argument("--speed", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--scale-edges", type=int, default=100_000)
    ap.add_argument("--scale-candidates", type=int, default=5000)
    ap.add_argument("--backlog", type=int, default=20_000)
    ap.add_argument("--json-out")
    args = ap.parse_args(argv)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    t_all = time.perf_counter()
    load = os.getloadavg()
    print(f"load average at the start {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} cores")
    builders = {"networkx": lambda: ps.networkx_stream(seed=args.seed, waves=args.waves),
                "text": lambda: ps.text_stream(seed=args.seed, waves=args.waves),
                "wordnet": lambda: ps.public_kg_stream(seed=args.seed, waves=args.waves)}
    wanted = [s for s in SPECS if s.name in set(args.policies.split(","))]
    graph = connect()
    out: dict = {"args": vars(args), "streams": {}, "speed": {}}
    try:
        for name in args.streams.split(","):
            stream = builders[name]()
            kinds = [k for k in stream.kind_counts() if k != "true"]
            oracle = ps.oracle_frontier(stream, by="documents")
            log(f"stream {name}: {stream.kind_counts()}")
            results = []
            for spec in wanted:
                log(f"  {spec.label} …")
                results.append(Runner(graph, stream, spec, log, args.max_rounds).run())
            print()
            print(f"== stream {name}: {stream.kind_counts()}")
            for oname, fr in oracle.items():
                if isinstance(fr, dict) and "min_fmr_at_acceptance" in fr:
                    pts = ", ".join(f"{lvl}: {'unreachable' if v is None else f'{v:.3f}'}"
                                    for lvl, v in fr["min_fmr_at_acceptance"].items())
                    print(f"oracle frontier ({oname}): max Acceptance at FMR <= 0.01 = "
                          f"{fr['max_acceptance_at_fmr_0.01']:.3f}; min FMR at Acceptance >= {pts}")
            print(_table(results, kinds))
            for r in results:
                if r.reread:
                    print(f"  {r.label}: re-read {r.reread}")
                if r.ceiling:
                    c = r.ceiling
                    print(f"  supervised ceiling on kgr's features (every label, 5-fold logistic regression, "
                          f"{c['scored']} scored edges): FMR at Acceptance 0.5 / 0.8 / 0.9 = "
                          + " / ".join("-" if c[f"fmr_at_acceptance_{a}"] is None else f"{c[f'fmr_at_acceptance_{a}']:.3f}"
                                       for a in (0.5, 0.8, 0.9))
                          + f"; Acceptance at FMR <= 0.05 = {c['acceptance_at_fmr_0.05']:.3f}")
            out["streams"][name] = {"kinds": stream.kind_counts(), "oracle": oracle,
                                    "results": [asdict(r) | {"per_second": r.per_second} for r in results]}
        if args.speed:
            log("speed …")
            out["speed"]["large"] = speed_large(graph, args.scale_edges, args.scale_candidates, args.seed, log)
            out["speed"]["dense"] = speed_dense(graph, args.seed, log)
            if args.backlog:
                out["speed"]["backlog"] = backlog(graph, args.backlog, args.seed, log)
            sp = out["speed"]
            print()
            print("Speed, calibrated policy, end to end (read + features + decide + write), one run_round each:")
            for phase in ("cold", "warm"):
                r = sp["large"][phase]
                print(f"  {sp['large']['edges']} promoted edges, {phase}: {r['candidates']} candidates in "
                      f"{r['seconds']:.2f} s = {r['per_second']:.0f} candidates/s  {r['timings']}")
            r = sp["dense"]["cold"]
            print(f"  small dense graph (134 nodes, 1,356 promoted edges): {r['candidates']} candidates in "
                  f"{r['seconds']:.2f} s = {r['per_second']:.0f} candidates/s  {r['timings']}")
            if "backlog" in sp:
                b = sp["backlog"]
                print(f"  backlog: promote --until-done on {b['edges']} staged edges: {b['rounds']} rounds, "
                      f"{b['candidates']} decisions in {b['seconds']:.1f} s = {b['per_second']:.0f}/s, "
                      f"{b['promoted']} promoted")
        reset(graph)
    finally:
        graph.close()
    load = os.getloadavg()
    print(f"\ntotal {time.perf_counter() - t_all:.0f} s; load average at the end {load[0]:.1f} / {load[1]:.1f} / "
          f"{load[2]:.1f}; BLAS threads {os.environ.get('OPENBLAS_NUM_THREADS')}")
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=2, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
