#!/usr/bin/env python3
"""How often does a re-ingest with entity resolution on end as a fresh ingest? (issue 30)

Random histories over a small population (10 people x 3 records: the name as written, with a typo, in
reverse word order; ``tests/support/people.py``), each record a document saying its whole record,
only the name and the home, or the record with another birth date; two or three corpora of 20-30 of
the 30 documents per history, each re-ingested with ``prune``, resolution on and the quorum-2 policy
after each job. Then a fresh ingest of the last corpus, and the two stores compared part by part
(entities with aliases, merges, staged edges, votes, promoted set, hash: ``tests/ingest/test_reingest._state``).
Prints one line per history and the count that differ. It WIPES the database it is pointed at::

    NEO4J_URI=bolt://127.0.0.1:7687 python scripts/reingest_histories.py --histories 20 --seed 2
"""
import argparse
import random
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kgr.connect import connect  # noqa: E402
from tests.ingest.test_reingest_resolved import replay  # noqa: E402
from tests.support.people import RECORDS  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--histories", type=int, default=20)
    ap.add_argument("--seed", type=int, default=2)
    ap.add_argument("--only", type=int, help="run only this history (the others are drawn, not run)")
    ap.add_argument("--show", type=int, default=0, help="print up to N differing items per part")
    a = ap.parse_args()
    rng, graph, ids = random.Random(a.seed), connect(), sorted(RECORDS)
    differ = 0
    for h in range(a.histories):
        history = [{k: rng.randint(0, 2) for k in rng.sample(ids, rng.randint(20, 30))}
                   for _ in range(rng.randint(2, 3))]
        if a.only is not None and h != a.only:
            continue
        root = Path(tempfile.mkdtemp(prefix="kgr-history-"))
        (incremental, merges), (scratch, fresh) = replay(graph, root, history)
        parts = [k for k in sorted(set(incremental) | set(scratch)) if incremental.get(k) != scratch.get(k)]
        differ += bool(parts) or merges != fresh
        print(f"history {h}: {len(history)} corpora, merges {len(merges)} incremental / {len(fresh)} fresh; "
              + ("equal" if not parts and merges == fresh else "DIFFER in " + ", ".join(parts)), flush=True)
        for k in parts[:] if a.show else []:
            for side, x, y in (("incremental only", incremental, scratch), ("fresh only", scratch, incremental)):
                if k != "hash":
                    print(f"  {k}, {side}: {sorted(x.get(k, set()) - y.get(k, set()))[:a.show]}")
        if a.show and merges != fresh:
            print(f"  merges, incremental only: {sorted(merges - fresh)}; fresh only: {sorted(fresh - merges)}")
        shutil.rmtree(root, ignore_errors=True)
    print(f"{differ} of {1 if a.only is not None else a.histories} histories differ from a fresh ingest of their last corpus")
    graph.close()


if __name__ == "__main__":
    main()
