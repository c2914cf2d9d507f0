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
- ``c10b0`` … ``c10b20`` and ``c05b0`` … ``c05b20``: the calibrated policy (the default) at target
  FMR 0.1 and 0.05 with label budgets of 0, 2, 5, 10 and 20 % of the stream's distinct triples,
  spread over the waves: after each wave's settle, a simulated reviewer answers the top of
  ``kgr review queue`` from the stream's truth (``kgr review label``; a quarter of the queue are
  uniform audit picks), and the store settles again. On the text stream the calibrated policy
  re-reads the corpus for the edges it escalates (the offline rules verifier).

**Figures** per stream and policy: Acceptance (promoted true / all true), FMR (promoted false /
promoted), the policy's expected FMR of its cut (mean of 1 - p_hat) and the 90 % bound the cut was
held to (with the audit labels inside the cut), labels used, settles, candidates decided per
second of settle time, and the share of each false kind promoted. Plus the oracle frontier of each
stream, and the supervised ceiling (5-fold cross-validated logistic regression and gradient boosting
on kgr's own features with *every* label). **CLI cost** per assertion stream: ``kgr stage FILE``
and then ``kgr promote --until-done`` as two processes on an empty store, and their ratio.

**Speed** (``--speed``, on by default): ``kgr promote`` as a new process (cold) with 5,000
candidates on a promoted graph of 100k edges (pinned: promoted by another hand), then a settle
with nothing new; the same in-process; a small dense graph (134 nodes, 1,356 promoted edges, 1,832
candidates); and ``promote --until-done`` on a backlog of 20,000 staged edges.

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
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import networkx as nx

sys.path.insert(0, str(Path(__file__).resolve().parent))

import promotion_streams as ps  # noqa: E402
from kgr.engine import Engine  # noqa: E402
from kgr.extract.verify import RulesVerifier  # noqa: E402
from kgr.promotion.config import CalibratedConfig  # noqa: E402
from kgr.model.decisions import CutReport  # noqa: E402
from kgr.promotion.policies import QuorumConfig, make_policy  # noqa: E402
from kgr.promotion.gedig import PromotionConfig  # noqa: E402
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
from kgr.store.rounds import PROMOTED_CACHE, read_context, read_round, run_round  # noqa: E402
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
    *(Spec(f"c{round(t * 100):02d}b{round(b * 100)}", f"calibrated @{t}, {round(b * 100)}% labels", "calibrated",
           CalibratedConfig(target_fmr=t), labels=b)
      for t in (0.1, 0.05) for b in (0.0, 0.02, 0.05, 0.10, 0.20)),
]


@dataclass
class Result:
    stream: str
    policy: str
    label: str
    acceptance: float
    fmr: float
    predicted_fmr: float | None
    bound: float | None
    audits: int
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


def inputs_evidence(inputs):  # noqa: ANN001, ANN201 - RoundInputs -> Evidence
    from kgr.evidence.graph import Evidence

    return Evidence(rows=inputs.candidates, pinned=inputs.promoted, entity_types=inputs.entity_types,
                    schema=inputs.schema)


class Runner:
    """One policy on one stream, on a wiped store."""

    def __init__(self, graph: Graph, stream: ps.LabelledStream, spec: Spec, log: Log, max_rounds: int):
        self.graph, self.stream, self.spec, self.log, self.max_rounds = graph, stream, spec, log, max_rounds
        self.schema = stream.schema
        self.engine = Engine(graph, schema=None if spec.plain else stream.schema)
        self.verifier = RulesVerifier() if spec.policy == "calibrated" and stream.documents else None
        config = spec.config
        if self.verifier is not None:  # as Engine.promote does with a verifier: unread edges wait for it
            config = config.model_copy(update={"hold_unread": True})  # type: ignore[union-attr]
        self.policy = make_policy(spec.policy, config)  # type: ignore[arg-type]
        self.cut: CutReport | None = None
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
            self.cut = s.cut or self.cut
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
        if self.spec.name == "c10b0":
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
        logistic regression and gradient boosting over the settle's feature matrix of every managed
        edge (the embedding included), the truth as labels (a design bound: no label budget can
        teach more than this from these features)."""
        import numpy as np
        from sklearn.ensemble import HistGradientBoostingClassifier
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import cross_val_predict
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        from kgr.model.promotion import RoundRequest

        ctx, _ = read_context(self.graph, "calibrated", counts=False)
        inputs = read_round(self.graph, RoundRequest(limit=1, settle=True), ctx, schema=self.engine.schema)
        X = self.policy.features.fit_transform(inputs_evidence(inputs), embedding=True)
        hard = (self.policy.features.checks_.r_contr > 0.5) | self.policy.features.checks_.self_loop
        ys = [self.stream.is_true((c.subject_key, c.relation, c.object_key)) for c in inputs.candidates]
        keep = [i for i, y in enumerate(ys) if y is not None and not hard[i]]
        if len(keep) < 50:
            return {}
        X, y = X[keep], np.array([bool(ys[i]) for i in keep])
        n_true = sum(1 for v in self.stream.truth.values() if v)
        out: dict = {"scored": len(keep)}
        for name, est in (("logistic", make_pipeline(StandardScaler(), LogisticRegression(max_iter=3000))),
                          ("boosting", HistGradientBoostingClassifier(random_state=0))):
            p = cross_val_predict(est, X, y, cv=5, method="predict_proba")[:, 1]
            order = np.argsort(-p)
            tp, fp = np.cumsum(y[order]), np.cumsum(~y[order])
            for acc in (0.5, 0.8, 0.9):
                i = np.searchsorted(tp, acc * n_true)
                out[f"{name}_fmr_at_acceptance_{acc}"] = None if i >= len(tp) else float(fp[i] / (tp[i] + fp[i]))
            for t in (0.05, 0.1):
                ok = np.nonzero(fp / (tp + fp) <= t)[0]
                out[f"{name}_acceptance_at_fmr_{t}"] = float(tp[ok[-1]] / n_true) if len(ok) else 0.0
        return out

    def result(self, seconds: float) -> Result:
        final = {(e.subject_key, e.relation, e.object_key) for e in promoted_edges(self.graph)}
        n_true = sum(1 for v in self.stream.truth.values() if v)
        tp = sum(1 for i in final if self.stream.is_true(i))
        kinds = Counter(self.stream.kind.get(i, "unknown") for i in final)
        totals = Counter(self.stream.kind.values())
        cut = self.cut if self.spec.policy == "calibrated" else None
        return Result(stream=self.stream.name, policy=self.spec.name, label=self.spec.label,
                      acceptance=tp / n_true if n_true else 0.0, fmr=(len(final) - tp) / len(final) if final else 0.0,
                      predicted_fmr=cut.expected_fmr if cut else None, bound=cut.bound if cut else None,
                      audits=cut.audit_labels if cut else 0, promoted=len(final),
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


#: With ``--bytecode``: where the CLI processes keep kgr's compiled bytecode (as an installed kgr has it).
BYTECODE: dict[str, str] = {}


def _cli_env(graph: Graph) -> dict[str, str]:
    st = graph.settings
    env = {**os.environ, "NEO4J_URI": graph.uri, "NEO4J_DATABASE": graph.database}
    if BYTECODE:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.update(BYTECODE)
    if st is not None and st.password is not None:
        env.update(NEO4J_USERNAME=st.username, NEO4J_PASSWORD=st.password)
    return env


def _cli(graph: Graph, *args: str) -> tuple[float, dict]:
    """Run ``kgr ARGS --json`` as a new process; its wall time and its JSON report."""
    import subprocess

    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "kgr.cli", *args, "--json"], env=_cli_env(graph),
                          capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"kgr {' '.join(args)} failed: {proc.stderr[-2000:]}")
    if proc.stderr.strip() and args[0] == "promote":  # (stage may log the driver's retried lock waits)
        raise RuntimeError(f"kgr {' '.join(args)} wrote to stderr: {proc.stderr[-2000:]}")
    return wall, json.loads(proc.stdout)


def cli_cost(graph: Graph, stream: ps.LabelledStream, log: Log) -> dict:
    """``kgr stage FILE`` then ``kgr promote --until-done``, two new processes on an empty store."""
    if not stream.assertions:
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        triples = Path(tmp) / "stream.jsonl"
        with open(triples, "w", encoding="utf-8") as fh:
            for a in stream.assertions:
                fh.write(a.model_dump_json() + "\n")
        schema = Path(tmp) / "schema.json"
        schema.write_text(stream.schema.model_dump_json(), encoding="utf-8")
        reset(graph)
        PROMOTED_CACHE.clear()
        init_store(graph, stream.schema)
        t_stage, _ = _cli(graph, "stage", str(triples), "--schema", str(schema))
        t_promote, rep = _cli(graph, "promote", "--until-done", "--schema", str(schema))
        t_noop, noop = _cli(graph, "promote", "--schema", str(schema))
    out = {"assertions": len(stream.assertions), "stage_seconds": t_stage, "promote_seconds": t_promote,
           "ratio": t_promote / t_stage, "promoted": rep["promoted"], "rounds": len(rep["rounds"]),
           "noop_seconds": t_noop, "noop_version": noop.get("version"),
           "noop_settle_seconds": sum(noop.get("timings", {}).values())}
    log(f"  CLI: stage {t_stage:.1f} s, promote --until-done {t_promote:.1f} s ({out['ratio']:.2f}x), "
        f"nothing new {t_noop:.1f} s")
    return out


def speed_large(graph: Graph, n_edges: int, n_cands: int, seed: int, log: Log) -> dict:
    """``kgr promote`` as a new process with ``n_cands`` candidates on ``n_edges`` pinned promoted edges,
    then with nothing new; then the same in this process (a fresh policy object)."""
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
    out: dict = {"edges": len(base)}
    with tempfile.TemporaryDirectory() as tmp:
        schema = Path(tmp) / "schema.json"
        schema.write_text(sch.model_dump_json(), encoding="utf-8")
        stage(graph, [_assert(t, s) for t in fresh[:n_cands] for s in ("s1", "s2")], schema=sch)
        wall, rep = _cli(graph, "promote", "--schema", str(schema))
        out["cold"] = {"candidates": rep["candidates"], "seconds": wall, "per_second": rep["candidates"] / wall,
                       "timings": rep["timings"], "promoted": rep["promoted"]}
        wall, rep = _cli(graph, "promote", "--schema", str(schema))
        out["noop"] = {"seconds": wall, "version": rep["version"], "settle_seconds": sum(rep["timings"].values())}
    stage(graph, [_assert(t, s) for t in fresh[n_cands:2 * n_cands] for s in ("s1", "s2")], schema=sch)
    out["warm"] = _timed_round(graph, make_policy("calibrated"), sch)
    log(f"  cold process: {out['cold']['candidates']} candidates in {out['cold']['seconds']:.1f} s "
        f"({out['cold']['per_second']:.0f}/s) {out['cold']['timings']}; nothing new {out['noop']['seconds']:.1f} s "
        f"(settle {out['noop']['settle_seconds']:.2f} s); in process {out['warm']['per_second']:.0f}/s")
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
    head = (f"{'policy':<31} {'Accept':>7} {'FMR':>7} {'pred.':>6} {'bound':>6} {'audits':>6} {'labels':>6} "
            f"{'promoted':>8} {'rounds':>6} {'cand/s':>7} " + " ".join(f"{k[:9]:>9}" for k in kinds))
    lines = [head, "-" * len(head)]
    for r in results:
        pred = "-" if r.predicted_fmr is None else f"{r.predicted_fmr:.3f}"
        bound = "-" if r.bound is None else f"{r.bound:.3f}"
        aud = "-" if r.predicted_fmr is None else str(r.audits)
        lines.append(f"{r.label:<31} {r.acceptance:>7.3f} {r.fmr:>7.3f} {pred:>6} {bound:>6} {aud:>6} {r.labels:>6} "
                     f"{r.promoted:>8} {r.rounds:>6} {r.per_second:>7.0f} "
                     + " ".join(f"{r.by_kind.get(k, 0.0):>9.3f}" for k in kinds))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streams", default="networkx,text,wordnet")
    ap.add_argument("--policies", default=",".join(s.name for s in SPECS))
    ap.add_argument("--waves", type=int, default=4)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--max-rounds", type=int, default=60, help="rounds per wave at most")
    ap.add_argument("--speed", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--cli", action=argparse.BooleanOptionalAction, default=True,
                    help="time kgr stage and kgr promote --until-done as processes on each assertion stream")
    ap.add_argument("--scale-edges", type=int, default=100_000)
    ap.add_argument("--scale-candidates", type=int, default=5000)
    ap.add_argument("--backlog", type=int, default=20_000)
    ap.add_argument("--bytecode", action=argparse.BooleanOptionalAction, default=False,
                    help="run the kgr processes with compiled bytecode (compileall into a cache first), as an "
                         "installed kgr runs; without it they compile kgr's sources when PYTHONDONTWRITEBYTECODE is set")
    ap.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                    help="a CalibratedConfig setting for every calibrated policy, e.g. calibration_check=true")
    ap.add_argument("--json-out")
    args = ap.parse_args(argv)
    if args.bytecode:
        import subprocess

        import kgr

        BYTECODE["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "kgr-bench-bytecode")
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(kgr.__file__).parent)], check=True,
                       env={**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, **BYTECODE},
                       stdout=subprocess.DEVNULL)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    t_all = time.perf_counter()
    load = os.getloadavg()
    print(f"load average at the start {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} cores; kgr "
          f"processes {'with compiled bytecode' if BYTECODE else 'compile their sources' if os.environ.get('PYTHONDONTWRITEBYTECODE') else 'with bytecode'}")
    builders = {"networkx": lambda: ps.networkx_stream(seed=args.seed, waves=args.waves),
                "text": lambda: ps.text_stream(seed=args.seed, waves=args.waves),
                "wordnet": lambda: ps.public_kg_stream(seed=args.seed, waves=args.waves)}
    wanted = [s for s in SPECS if s.name in set(args.policies.split(","))]
    if args.config:
        update = dict(kv.split("=", 1) for kv in args.config)
        wanted = [replace(s, config=CalibratedConfig.model_validate({**s.config.model_dump(), **update}))
                  if isinstance(s.config, CalibratedConfig) else s for s in wanted]
    graph = connect()
    out: dict = {"args": vars(args), "streams": {}, "speed": {}}
    try:
        for name in [n for n in args.streams.split(",") if n]:  # --streams "" : the speed section only
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
                    for m in ("logistic", "boosting"):
                        print(f"  supervised ceiling ({m}, every label, 5-fold, {c['scored']} edges): FMR at "
                              "Acceptance 0.5 / 0.8 / 0.9 = " + " / ".join(
                                  "-" if c[f"{m}_fmr_at_acceptance_{a}"] is None
                                  else f"{c[f'{m}_fmr_at_acceptance_{a}']:.3f}" for a in (0.5, 0.8, 0.9))
                              + f"; Acceptance at FMR <= 0.05 / 0.1 = {c[f'{m}_acceptance_at_fmr_0.05']:.3f} / "
                                f"{c[f'{m}_acceptance_at_fmr_0.1']:.3f}")
            cost = cli_cost(graph, stream, log) if args.cli else {}
            if cost:
                print(f"  CLI cost: kgr stage {cost['stage_seconds']:.1f} s, kgr promote --until-done "
                      f"{cost['promote_seconds']:.1f} s = {cost['ratio']:.2f}x stage ({cost['promoted']} promoted, "
                      f"{cost['rounds']} rounds); kgr promote with nothing new {cost['noop_seconds']:.1f} s "
                      f"(settle {cost['noop_settle_seconds']:.3f} s, version {cost['noop_version']})")
            out["streams"][name] = {"kinds": stream.kind_counts(), "oracle": oracle, "cli": cost,
                                    "results": [asdict(r) | {"per_second": r.per_second} for r in results]}
        if args.speed:
            log("speed …")
            out["speed"]["large"] = speed_large(graph, args.scale_edges, args.scale_candidates, args.seed, log)
            out["speed"]["dense"] = speed_dense(graph, args.seed, log)
            if args.backlog:
                out["speed"]["backlog"] = backlog(graph, args.backlog, args.seed, log)
            sp = out["speed"]
            print()
            print("Speed, calibrated policy, end to end (read + features + decide + write):")
            lg = sp["large"]
            r = lg["cold"]
            print(f"  kgr promote, a new process, {lg['edges']} pinned promoted edges: {r['candidates']} candidates in "
                  f"{r['seconds']:.2f} s = {r['per_second']:.0f} candidates/s (the settle: {r['timings']})")
            print(f"  kgr promote again, nothing new: {lg['noop']['seconds']:.2f} s (the settle "
                  f"{lg['noop']['settle_seconds']:.3f} s), version {lg['noop']['version']}")
            r = lg["warm"]
            print(f"  in process, {r['candidates']} more candidates: {r['seconds']:.2f} s = {r['per_second']:.0f} "
                  f"candidates/s  {r['timings']}")
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
