"""Benchmark: kgr staging vs a raw ``UNWIND … MERGE`` baseline, same rows, same database, one run.

    python scripts/bench_stage.py [--n 100000] [--batch 2000]

Generates N triple assertions over a few thousand entities, with repeats (each edge asserted by
1–4 sources, some sources repeating themselves) so that votes matter, then:

1. kgr: ``kgr.store.staging.stage`` (entity upsert with labels and aliases, vote dedup per
   source, endpoint locks, noisy-or confidence) on a wiped store;
2. raw: the same rows through ``cypher/bench_raw_merge.cypher.j2`` (MERGE s, o, edge; votes += 1),

and prints rows/s for both and the ratio. Uses ``NEO4J_URI`` or the managed Neo4j — it WIPES the
database, so never point it at data you care about.
"""

from __future__ import annotations

import argparse
import random
import time

from kgr.model.canonical import edge_key, entity_key
from kgr.model.triples import TripleAssertion
from kgr.store.admin import init_store, reset, status
from kgr.store.connection import connect
from kgr.store.staging import stage


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
    args = ap.parse_args()
    rows = assertions(args.n)
    graph = connect()
    init_store(graph)
    reset(graph)

    t0 = time.perf_counter()
    rep = stage(graph, rows, batch_size=args.batch)
    kgr_s = time.perf_counter() - t0
    st = status(graph)

    graph.run_script("bench_raw_setup")
    raw = [{"s_key": entity_key("Person", a.subject), "o_key": entity_key("Organization", a.object),
            "key": edge_key(entity_key("Person", a.subject), a.relation, entity_key("Organization", a.object))}
           for a in rows]
    t0 = time.perf_counter()
    for i in range(0, len(raw), args.batch):
        graph.write("bench_raw_merge", {"rows": raw[i:i + args.batch]})
    raw_s = time.perf_counter() - t0
    graph.run_script("bench_raw_setup")

    print(f"rows: {len(rows)}  distinct votes: {rep.new_votes}  repeated: {rep.repeated_votes}  "
          f"edges: {rep.new_edges}  entities: {st.entities}")
    print(f"kgr stage : {len(rows) / kgr_s:10.0f} rows/s  ({kgr_s:.2f} s)")
    print(f"raw MERGE : {len(rows) / raw_s:10.0f} rows/s  ({raw_s:.2f} s)")
    print(f"ratio kgr/raw: {raw_s / kgr_s:.2f}x  (target >= 0.5x)")
    reset(graph)
    graph.close()


if __name__ == "__main__":
    main()
