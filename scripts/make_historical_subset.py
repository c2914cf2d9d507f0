"""Regenerate ``scripts/data/historical_people_26k.csv.gz`` (the entity resolution benchmark's data)
from splink's ``historical_50k`` parquet file.

Selection: whole clusters (people) in the order of ``sha256(cluster id)``; the first clusters up to
1,000 records are the ``dev`` set, the next ones up to 10,000 records the ``test`` set, the next ones
up to 5,000 records the ``dev2`` set (a second development set, disjoint from ``test``), the next
ones up to 10,000 records the ``holdout`` set (kept blind: measured once per fix, never read for
one). Rows are sorted by set, cluster and record id; columns ``set, unique_id, cluster,
first_and_surname, dob, birth_place, postcode_fake, occupation``. Deterministic: the same input gives the same bytes.

Usage::

    python scripts/make_historical_subset.py --parquet historical_figures_with_errors_50k.parquet \
        --out scripts/data/historical_people_26k.csv.gz
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import io
from pathlib import Path

#: (set, records it takes at most before the next set starts), in selection order.
SETS = (("dev", 1000), ("test", 10000), ("dev2", 5000), ("holdout", 10000))
COLUMNS = ("unique_id", "cluster", "first_and_surname", "dob", "birth_place", "postcode_fake", "occupation")


def select(rows: list[dict]) -> list[dict]:
    """The benchmark rows of ``rows`` (records of ``historical_50k``), each with its ``set``."""
    by_cluster: dict[str, list[dict]] = {}
    for r in rows:
        by_cluster.setdefault(str(r["cluster"]), []).append(r)
    order = sorted(by_cluster, key=lambda c: hashlib.sha256(c.encode()).hexdigest())
    out: list[dict] = []
    sets = iter(SETS)
    name, limit = next(sets)
    taken = 0
    for c in order:
        if taken >= limit:
            nxt = next(sets, None)
            if nxt is None:
                break
            (name, limit), taken = nxt, 0
        out.extend({"set": name, **{k: "" if r[k] is None else str(r[k]) for k in COLUMNS}} for r in by_cluster[c])
        taken += len(by_cluster[c])
    return sorted(out, key=lambda r: (r["set"], r["cluster"], r["unique_id"]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parquet", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    import pandas as pd

    rows = pd.read_parquet(args.parquet).astype(object).where(lambda d: d.notna(), None).to_dict("records")
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=["set", *COLUMNS], lineterminator="\n")
    w.writeheader()
    w.writerows(select(rows))
    with open(args.out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", filename="", mtime=0) as fh:
        fh.write(buf.getvalue().encode("utf-8"))


if __name__ == "__main__":
    main()
