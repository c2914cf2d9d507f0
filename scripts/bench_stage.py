"""Benchmark: kgr staging vs a raw ``UNWIND … MERGE`` baseline, same rows, same database, one run.

    python scripts/bench_stage.py [--n 100000] [--batch 2000] [--workers 2] [--repeats 5] [--warmup 1]

Generates N triple assertions over a few thousand entities, with repeats (each edge asserted by
1–4 sources, some sources repeating themselves) so that votes matter, then:

1. kgr: ``kgr.store.staging.stage`` (entity upsert with labels and aliases, vote dedup per
   source, endpoint locks, noisy-or confidence) on a wiped store;
2. raw: the same rows through ``scripts/cypher/bench_raw_merge.cypher.j2`` (MERGE s, o, edge; votes += 1),

and prints rows/s for both and the ratio. The first ``--warmup`` pairs of runs are not counted: a
freshly started Neo4j runs its first 100k rows two to three times slower while the JIT warms up. Uses ``NEO4J_URI`` or the managed Neo4j — it WIPES the
database, so never point it at data you care about.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

from kgr.model.canonical import edge_key, entity_key
from kgr.model.triples import TripleAssertion
from kgr.store.admin import init_store, reset, status
from kgr.connect import connect
from kgr.store.cypher import add_template_dir
from kgr.store.staging import stage

add_template_dir(Path(__file__).resolve().parent / "cypher")  # the raw baseline's templates


def assertions(n: int, seed: int = 7) -> list[TripleAssertion]:
    rng = random.Random(seed)
    people, orgs = [f"Person {i}" for i in range(4000)], [f"Org {i}" for i in range(800)]
    out: list[TripleAssertion] = []
    while len(out) < n:
        s, o = rng.choice(people), rng.choice(orgs)
        for k in range(rng.randint(1, 4)):
            src = f"doc-{rng.randint(0, 5000)}"
            for _ in range(2 if rng.random() < 0.15 else 1):  # a source repeating itself
                out.append(TripleAssertion(subject=s, subject_type="Person", relation="WORKS_AT", object=o,
                                           object_type="Organization", source=src, confidence=0.8))
    return out[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=2, help="kgr writer lanes (the raw baseline runs one)")
    ap.add_argument("--repeats", type=int, default=5, help="alternating kgr/raw runs; the median ratio is reported")
    ap.add_argument("--warmup", type=int, default=1, help="uncounted kgr/raw runs first (JIT warm-up)")
    args = ap.parse_args()
    rows = assertions(args.n)
    graph = connect()
    init_store(graph)
    raw = [{"s_key": entity_key("Person", a.subject), "o_key": entity_key("Organization", a.object),
            "key": edge_key(entity_key("Person", a.subject), a.relation, entity_key("Organization", a.object))}
           for a in rows]
    ratios, kgr_rates, raw_rates = [], [], []
    for rep_no in range(-args.warmup, args.repeats):
        reset(graph)
        t0 = time.perf_counter()
        rep = stage(graph, rows, batch_size=args.batch, workers=args.workers)
        kgr_s = time.perf_counter() - t0
        st = status(graph)
        reset(graph)
        graph.run_script("bench_raw_setup")
        t0 = time.perf_counter()
        for i in range(0, len(raw), args.batch):
            graph.write("bench_raw_merge", {"rows": raw[i:i + args.batch]})
        raw_s = time.perf_counter() - t0
        graph.run_script("bench_raw_setup")
        if rep_no < 0:
            print(f"warm-up: kgr {len(rows) / kgr_s:8.0f} rows/s   raw {len(rows) / raw_s:8.0f} rows/s   (not counted)")
            continue
        kgr_rates.append(len(rows) / kgr_s)
        raw_rates.append(len(rows) / raw_s)
        ratios.append(raw_s / kgr_s)
        print(f"run {rep_no + 1}: kgr {kgr_rates[-1]:8.0f} rows/s   raw {raw_rates[-1]:8.0f} rows/s   "
              f"ratio {ratios[-1]:.2f}x")
    print(f"rows: {len(rows)}  distinct votes: {rep.new_votes}  repeated: {rep.repeated_votes}  "
          f"edges: {rep.new_edges}  entities: {st.entities}  (kgr lanes: {args.workers}, batch {args.batch})")
    print(f"kgr stage : {statistics.median(kgr_rates):10.0f} rows/s (median)")
    print(f"raw MERGE : {statistics.median(raw_rates):10.0f} rows/s (median)")
    print(f"ratio kgr/raw: {statistics.median(ratios):.2f}x median of {args.repeats}  (target >= 0.5x)")
    reset(graph)
    graph.close()


if __name__ == "__main__":
    main()
