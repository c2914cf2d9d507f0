"""Entity resolution benchmark: real person records with known duplicates, staged as KG triples with
``kgr stage`` and resolved with ``kgr resolve``, against a standard record-linkage pipeline on the
same records in the same run.

Data: ``scripts/data/historical_people_26k.csv.gz``, whole clusters of splink's ``historical_50k``
(Wikidata people with corrupted duplicates, a cluster id per person; licence and selection in
``scripts/data/README.md``): ``dev`` and ``dev2`` sets (1,015 and 5,002 records, used while
choosing the model's settings), a ``test`` set (10,002 records; its errors were read for the fix of
29 Nov 2026, so it is no longer blind to that fix) and a ``holdout`` set (10,006 records, added
before that fix and measured after it), and ``--set fake_1000``: splink's synthetic ``fake_1000``
(``scripts/data/fake_1000.csv.gz``; ``BORN_ON``, ``LIVES_IN`` City, ``HAS_EMAIL``). Each record is one source; its
person (``first_and_surname``) gets ``BORN_ON`` (Date, functional), ``BORN_IN`` (Place),
``LIVES_IN`` (Postcode) and ``WORKS_AS`` (Occupation) where the record has them.

Methods, all on the same records:

- ``kgr keys``: canonical keys only (what staging alone gives: one entity per spelling);
- ``kgr resolve``: ``kgr stage`` then ``kgr resolve`` (real CLI processes on the Neo4j at
  ``NEO4J_URI``, wiped first), clusters read back from the graph;
- ``recordlinkage``: blocking (surname, date of birth, sorted neighbourhood on the name), Jaro-Winkler
  and exact comparisons, the unsupervised ECM classifier, connected components;
- ``splink`` (``--splink``): splink's DuckDB linker with its comparison library, u by random
  sampling, m by EM, clusters at p >= 0.95 (for the library choice in docs/resolve.md).

Reported: pairwise precision, recall and F1 (pairs of records put in one entity vs pairs of one
person), wrong merges of distinct people with the same name (pairs of such records put together /
all such pairs), and records per second (``kgr stage`` + ``kgr resolve`` wall time, CLI start-up
included, and the time the two commands report themselves).

Usage::

    NEO4J_URI=bolt://127.0.0.1:17705 python scripts/bench_resolve.py --set test --records 5000 [--splink]
"""

from __future__ import annotations

import argparse
import csv
import gzip
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "historical_people_26k.csv.gz"
RELATIONS = (("BORN_ON", "Date", "dob"), ("BORN_IN", "Place", "birth_place"), ("LIVES_IN", "Postcode", "postcode_fake"),
             ("WORKS_AS", "Occupation", "occupation"))
SCHEMA = {
    "name": "historical-people",
    "entity_types": {t: {} for t in ("Person", "Date", "Place", "Postcode", "Occupation", "Dataset")},
    "relation_types": {
        "BORN_ON": {"domain": ["Person"], "range": ["Date"], "functional": True},
        # a birth place is given at county or town level ("devon" / "drewsteignton"): not exclusive
        "BORN_IN": {"domain": ["Person"], "range": ["Place"]},
        "LIVES_IN": {"domain": ["Person"], "range": ["Postcode"]},
        "WORKS_AS": {"domain": ["Person"], "range": ["Occupation"]},
        "LISTED_IN": {"domain": ["Person"], "range": ["Dataset"]},
    },
}


#: A second data set, of another shape: splink's ``fake_1000`` (scripts/data/README.md): first name,
#: surname, date of birth, city, e-mail, each record's person id.
FAKE_DATA = Path(__file__).resolve().parent / "data" / "fake_1000.csv.gz"
FAKE_RELATIONS = (("BORN_ON", "Date", "dob"), ("LIVES_IN", "City", "city"), ("HAS_EMAIL", "Email", "email"))
FAKE_SCHEMA = {
    "name": "fake-people",
    "entity_types": {t: {} for t in ("Person", "Date", "City", "Email", "Dataset")},
    "relation_types": {
        "BORN_ON": {"domain": ["Person"], "range": ["Date"], "functional": True},
        "LIVES_IN": {"domain": ["Person"], "range": ["City"]},
        "HAS_EMAIL": {"domain": ["Person"], "range": ["Email"]},
        "LISTED_IN": {"domain": ["Person"], "range": ["Dataset"]},
    },
}


def _fake_rows() -> list[dict]:
    """``fake_1000`` as rows of the shape :func:`load` returns (the name is first name and surname)."""
    with gzip.open(FAKE_DATA, "rt", encoding="utf-8") as fh:
        rows = [{**r, "first_and_surname": " ".join(x for x in (r["first_name"].strip(), r["surname"].strip()) if x)}
                for r in csv.DictReader(fh)]
    return sorted((r for r in rows if r["first_and_surname"]), key=lambda r: (int(r["cluster"]), int(r["unique_id"])))


def load(which: str, records: int) -> list[dict]:
    """Whole clusters of set ``which``, in file order, until ``records`` records (0: all)."""
    if which == "fake_1000":
        rows = _fake_rows()
    else:
        with gzip.open(DATA, "rt", encoding="utf-8") as fh:
            rows = [r for r in csv.DictReader(fh) if r["set"] == which and r["first_and_surname"]]
    out: list[dict] = []
    for _, group in itertools.groupby(rows, key=lambda r: r["cluster"]):
        if records and len(out) >= records:
            break
        out.extend(group)
    return out


#: How a record's birth date is written (``--dates``): the data's ISO form, or as other sources write it.
DATE_FORMATS = {"iso": "{y}-{m}-{d}", "compact": "{y}{m}{d}", "dmy": "{d}/{m}/{y}"}


def rewrite_dates(rows: list[dict], form: str) -> list[dict]:
    """``rows`` with each ISO birth date (``dob``, "1786-05-11") written in ``form`` of :data:`DATE_FORMATS`
    (``compact`` "17860511", ``dmy`` "11/05/1786"); other values unchanged."""
    def one(v: str) -> str:
        parts = v.split("-")
        return DATE_FORMATS[form].format(y=parts[0], m=parts[1], d=parts[2]) if len(parts) == 3 else v
    return [{**r, "dob": one(r["dob"])} for r in rows]


def triples(rows: list[dict], relations: tuple = RELATIONS) -> list[dict]:
    """Each record's triples (source = the record id)."""
    out = []
    for r in rows:
        facts = [(rel, otype, r[col]) for rel, otype, col in relations if r[col]]
        for rel, otype, value in facts or [("LISTED_IN", "Dataset", "historical people")]:
            out.append({"subject": r["first_and_surname"], "subject_type": "Person", "relation": rel,
                        "object": value, "object_type": otype, "source": r["unique_id"], "confidence": 0.9})
    return out


def pair_metrics(truth: dict[str, str], pred: dict[str, object], names: dict[str, str]) -> dict:
    """Pairwise precision/recall/F1 and wrong merges of same-name different people."""
    def pairs(assign: dict) -> set[tuple[str, str]]:
        groups: dict[object, list[str]] = defaultdict(list)
        for k, v in assign.items():
            groups[v].append(k)
        return {p for m in groups.values() for p in itertools.combinations(sorted(m), 2)}

    t, p = pairs(truth), pairs(pred)
    tp = len(t & p)
    prec, rec = tp / max(1, len(p)), tp / max(1, len(t))
    same_name = {(a, b) for a, b in pairs(names) if truth[a] != truth[b]}
    return {"precision": round(prec, 4), "recall": round(rec, 4),
            "f1": round(2 * prec * rec / (prec + rec), 4) if prec + rec else 0.0,
            "same_name_pairs": len(same_name), "same_name_merged": len(same_name & p)}


def _kgr(args: list[str], env: dict) -> tuple[dict, float]:
    """The command's ``--json`` report, and its wall time (the process's run, not the report's parse here)."""
    t = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "kgr.cli", *args, "--json"], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    if res.returncode != 0:
        raise SystemExit(f"kgr {' '.join(args)} failed: {res.stderr[-2000:]}")
    return json.loads(res.stdout), wall


def run_kgr(rows: list[dict], tmp: Path, target_fmr: float | None, schema: dict = SCHEMA,
            relations: tuple = RELATIONS) -> tuple[dict, dict]:
    """Stage and resolve through the CLI; the source -> entity assignment and the timings."""
    from kgr.connect import connect
    from kgr.store.admin import init_store, reset
    from kgr.store.resolve import read_entities

    (tmp / "triples.jsonl").write_text("".join(json.dumps(t) + "\n" for t in triples(rows, relations)),
                                      encoding="utf-8")
    (tmp / "schema.json").write_text(json.dumps(schema), encoding="utf-8")
    g = connect()
    reset(g)
    init_store(g)
    env = {**os.environ}
    staged, stage_s = _kgr(["stage", str(tmp / "triples.jsonl"), "--schema", str(tmp / "schema.json")], env)
    extra = ["--target-fmr", str(target_fmr)] if target_fmr else []
    resolved, resolve_s = _kgr(["resolve", "--type", "Person", "--schema", str(tmp / "schema.json"), *extra], env)
    where = {s: v.key for v in read_entities(g, "Person") for e in v.edges for s in e.sources}
    g.close()
    times = {"stage_s": round(stage_s, 3), "resolve_s": round(resolve_s, 3), "stage_inside_s": round(staged["seconds"], 3),
             "resolve_inside_s": resolved["seconds"], "merges": len(resolved["merges"]),
             "splits": len(resolved["splits"]), "records_per_s": round(len(rows) / (stage_s + resolve_s), 1),
             "records_per_s_inside": round(len(rows) / (staged["seconds"] + resolved["seconds"]), 1)}
    return where, times


#: The baseline's context comparisons per data set: (method, column); the names are compared as below.
BASELINE_FIELDS = {"historical": (("string", "birth_place"), ("exact", "postcode_fake"), ("exact", "occupation")),
                   "fake_1000": (("string", "city"), ("exact", "email"))}


def run_recordlinkage(rows: list[dict], fields: tuple = BASELINE_FIELDS["historical"]) -> tuple[dict, float]:
    """The standard pipeline: blocking, Jaro-Winkler, unsupervised ECM, connected components."""
    import numpy as np
    import pandas as pd
    import recordlinkage as rl
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    df = pd.DataFrame(rows).replace({"": None})
    parts = df["first_and_surname"].str.split(" ")
    df["first_name"], df["surname"] = parts.str[0], parts.str[-1]
    t = time.perf_counter()
    ix = rl.Index()
    ix.block("surname")
    ix.block("dob")
    ix.sortedneighbourhood("first_and_surname", window=7)
    cand = ix.index(df)
    c = rl.Compare()
    c.string("first_name", "first_name", method="jarowinkler", threshold=0.85, label="first_name")
    c.string("surname", "surname", method="jarowinkler", threshold=0.85, label="surname")
    c.exact("dob", "dob", label="dob")
    for method, col in fields:
        if method == "string":
            c.string(col, col, method="jarowinkler", threshold=0.85, label=col)
        else:
            c.exact(col, col, label=col)
    links = rl.ECMClassifier(binarize=None).fit_predict(c.compute(cand, df))
    i, j = links.get_level_values(0).to_numpy(), links.get_level_values(1).to_numpy()
    _, labels = connected_components(coo_matrix((np.ones(len(i)), (i, j)), shape=(len(df), len(df))), directed=False)
    return dict(zip(df["unique_id"], labels.tolist())), time.perf_counter() - t


def run_splink(rows: list[dict]) -> tuple[dict, float]:
    """splink 5 on DuckDB, set up as its tutorial sets up historical_50k."""
    import pandas as pd
    import splink.comparison_library as cl
    from splink import Linker, SettingsCreator, block_on
    from splink.internals.duckdb.database_api import DuckDBAPI

    df = pd.DataFrame(rows).replace({"": None})
    parts = df["first_and_surname"].str.split(" ")
    df["first_name"], df["surname"] = parts.str[0], parts.str[-1]
    df = df[["unique_id", "first_name", "surname", "dob", "birth_place", "postcode_fake", "occupation"]]
    t = time.perf_counter()
    db = DuckDBAPI()
    settings = SettingsCreator(
        link_type="dedupe_only",
        blocking_rules_to_generate_predictions=[block_on("first_name", "surname"), block_on("surname", "dob"),
                                                block_on("first_name", "dob"), block_on("postcode_fake", "first_name")],
        comparisons=[cl.NameComparison("first_name"), cl.NameComparison("surname"),
                     cl.DateOfBirthComparison("dob", input_is_string=True), cl.ExactMatch("birth_place"),
                     cl.PostcodeComparison("postcode_fake"), cl.ExactMatch("occupation")],
        retain_intermediate_calculation_columns=False)
    linker = Linker(db.register(df), settings, log_level=40)
    linker.training.estimate_probability_two_random_records_match([block_on("first_name", "surname", "dob")],
                                                                 recall=0.6)
    linker.training.estimate_u_using_random_sampling(max_pairs=1e6, seed=1)
    linker.training.estimate_parameters_using_expectation_maximisation(block_on("first_name", "surname"))
    linker.training.estimate_parameters_using_expectation_maximisation(block_on("dob"))
    pred = linker.inference.predict(threshold_match_probability=0.5)
    clusters = linker.clustering.cluster_pairwise_predictions_at_threshold(pred, 0.95).as_pandas_dataframe()
    return dict(zip(clusters["unique_id"], clusters["cluster_id"])), time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", default="test", choices=["dev", "dev2", "test", "holdout", "fake_1000"])
    ap.add_argument("--records", type=int, default=5000, help="records (whole clusters); 0: the whole set")
    ap.add_argument("--target-fmr", type=float, default=None, help="kgr resolve --target-fmr (default: its own)")
    ap.add_argument("--splink", action="store_true", help="also run splink (DuckDB)")
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--json", type=Path, default=None, help="write the results here")
    ap.add_argument("--dates", default="iso", choices=sorted(DATE_FORMATS),
                    help="write birth dates as iso 1786-05-11, compact 17860511 or dmy 11/05/1786 (kgr and baseline)")
    args = ap.parse_args()
    rows = rewrite_dates(load(args.set, args.records), args.dates)
    from kgr.model.canonical import canonical_name

    truth = {r["unique_id"]: r["cluster"] for r in rows}
    names = {r["unique_id"]: canonical_name(r["first_and_surname"]) for r in rows}
    results: dict[str, dict] = {"kgr keys": pair_metrics(truth, names, names)}
    fake = args.set == "fake_1000"
    with tempfile.TemporaryDirectory() as tmp:
        where, times = run_kgr(rows, Path(tmp), args.target_fmr, FAKE_SCHEMA if fake else SCHEMA,
                               FAKE_RELATIONS if fake else RELATIONS)
    results["kgr resolve"] = {**pair_metrics(truth, where, names), **times}
    if not args.no_baseline:
        labels, secs = run_recordlinkage(rows, BASELINE_FIELDS["fake_1000" if fake else "historical"])
        results["recordlinkage"] = {**pair_metrics(truth, labels, names), "seconds": round(secs, 3)}
    if args.splink and not fake:
        labels, secs = run_splink(rows)
        results["splink"] = {**pair_metrics(truth, labels, names), "seconds": round(secs, 3)}
    print(f"{args.set} set, {len(rows)} records, {len(set(truth.values()))} people")
    for name, r in results.items():
        extra = ", ".join(f"{k} {v}" for k, v in r.items() if k not in ("precision", "recall", "f1"))
        print(f"{name:14s} F1 {r['f1']:.4f}  P {r['precision']:.4f}  R {r['recall']:.4f}  {extra}")
    if args.json:
        args.json.write_text(json.dumps({"set": args.set, "records": len(rows), "results": results}, indent=2))


if __name__ == "__main__":
    main()
