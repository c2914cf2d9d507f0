#!/usr/bin/env python3
"""Latency of the six agent tools: P50/P95 per call on a ~2,000-token text with 50 entities.

Usage::

    python scripts/bench_tools.py                 # pure tools only
    python scripts/bench_tools.py --neo4j         # + disambiguation and storage (NEO4J_* env / managed)
    python scripts/bench_tools.py --neo4j --uri bolt://127.0.0.1:7687 -n 100

Each call goes through :func:`kgr.tools.registry.call_tool` (strict validation, the tool, the JSON
dump). The text analysis is cached per text, so by default every call gets a text with a different
last sentence (``cold``); ``--warm`` reuses one text, as the tools of one agent turn do.

With ``--neo4j`` the script WRITES to the database: entities of the types ``BenchPerson``,
``BenchOrg``, ``BenchPlace`` and pending votes, one new source per storage call. Targets:
P50 ≤ 20 ms for the pure tools, ≤ 100 ms for disambiguation and storage.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from typing import Any

from kgr.tools.context import ToolContext
from kgr.tools.registry import call_tool

FIRST = ["Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "John", "Margaret", "Tim", "Radia",
         "Ken", "Dennis", "Niklaus", "Leslie", "Shafi", "Judea", "Yoshua", "Geoffrey", "Fei"]
LAST = ["Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Knuth", "Allen", "McCarthy", "Hamilton", "Berners",
        "Perlman", "Thompson", "Ritchie", "Wirth", "Lamport", "Goldwasser", "Pearl", "Bengio", "Hinton", "Li"]
ORGS = ["Acme Corp", "Initech", "Globex", "Umbrella Labs", "Stark Industries", "Wayne Enterprises", "Hooli",
        "Cyberdyne Systems", "Soylent Works", "Tyrell Institute", "Aperture Science", "Black Mesa", "Vandelay Industries",
        "Massive Dynamic", "Pied Piper"]
PLACES = ["London", "Paris", "Berlin", "Zurich", "Boston", "Kyoto", "Toronto", "Oslo", "Lisbon", "Prague", "Vienna",
          "Dublin", "Madrid", "Seattle", "Austin"]
FILLER = [
    "The team reviewed the results of the previous quarter and planned the next experiments carefully.",
    "Several prototypes were built, tested in the laboratory, and compared against the earlier designs.",
    "Critics argued that the approach was too expensive, but the early measurements suggested otherwise.",
    "In the following years the method spread to other groups, which adapted it to their own problems.",
    "A later report described the main difficulties, including slow hardware and incomplete documentation.",
]


def build_case(seed: int = 7) -> tuple[str, dict[str, Any], dict[str, list[str]]]:
    """A ~2,000-token text, its extraction (50 entities, 40 relations) and the tool schema."""
    rng = random.Random(seed)
    people = [f"{f} {l}" for f, l in zip(FIRST, LAST)]
    sentences: list[str] = []
    works, located, knows = [], [], []
    for i, p in enumerate(people):
        org, place = ORGS[i % len(ORGS)], PLACES[i % len(PLACES)]
        sentences.append(f"{p} joined {org} in {1950 + i} and worked in {place} for many years.")
        works.append((p, org))
        other = people[(i + 3) % len(people)]
        sentences.append(f"At {org}, {p} collaborated closely with {other} on several projects.")
        knows.append((p, other))
        sentences.extend(rng.sample(FILLER, 2))
        if i % 4 != 3:
            sentences.append(rng.choice(FILLER))
    for i, org in enumerate(ORGS):
        place = PLACES[(i + 5) % len(PLACES)]
        sentences.append(f"{org} is headquartered in {place}, where it employs several hundred engineers.")
        located.append((org, place))
        sentences.append(rng.choice(FILLER))
    text = " ".join(sentences)
    entities = {"BenchPerson": people, "BenchOrg": ORGS, "BenchPlace": PLACES}
    relations = {"WORKS_AT": works, "LOCATED_IN": located[:10], "KNOWS": knows[:10]}
    kg = {"entities": entities,
          "relations": {t: [{"subject": s, "object": o} for s, o in ps] for t, ps in relations.items()}}
    schema = {"entity_schema": list(entities), "relation_schema": list(relations)}
    return text, kg, schema


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def timeit(fn, n: int, warmup: int = 3) -> list[float]:
    for i in range(warmup):
        fn(-1 - i)
    out = []
    for i in range(n):
        t = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - t) * 1000.0)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=200, help="calls per tool (default 200)")
    ap.add_argument("--warm", action="store_true", help="reuse one text (cached text analysis)")
    ap.add_argument("--neo4j", action="store_true", help="also time the two Neo4j tools (writes to the database)")
    ap.add_argument("--uri", default=None, help="Bolt URI (default: NEO4J_URI or the managed Neo4j)")
    args = ap.parse_args(argv)

    text, kg, schema = build_case()
    from kgr.tools._text import analyze_text

    prof = analyze_text(text)
    n_ent = sum(len(v) for v in kg["entities"].values())
    n_rel = sum(len(v) for v in kg["relations"].values())
    print(f"text: {prof.token_count} tokens, {prof.word_count} words, {prof.sentence_count} sentences; "
          f"extraction: {n_ent} entities, {n_rel} relations; {args.n} calls per tool "
          f"({'warm' if args.warm else 'cold'} text cache)")

    def text_for(i: int) -> str:
        return text if args.warm else f"{text} Note {i}."

    history = [{"entities": {"BenchPerson": kg["entities"]["BenchPerson"][:10]}, "relations": {}},
               {"entities": kg["entities"], "relations": {"WORKS_AT": kg["relations"]["WORKS_AT"][:10]}}]
    pure = {
        "query_extraction_density": lambda i: {"text": text_for(i), "schema": schema, "extracted_kg": kg},
        "query_coverage_feedback": lambda i: {"text": text_for(i), "schema": schema, "extracted_kg": kg},
        "query_quality_metrics": lambda i: {"text": text_for(i), "schema": schema, "extracted_kg": kg},
        "query_iterative_feedback": lambda i: {"text": text_for(i), "schema": schema, "extracted_kg": kg,
                                               "extraction_history": history},
    }
    rows: list[tuple[str, list[float], float]] = []
    for name, payload in pure.items():
        rows.append((name, timeit(lambda i, name=name, payload=payload: call_tool(name, payload(i)), args.n), 20.0))

    graph = None
    if args.neo4j:
        from kgr.store.admin import init_store
        from kgr.connect import connect
        from kgr.store.connection import Neo4jSettings

        graph = connect(Neo4jSettings(uri=args.uri) if args.uri else None)
        init_store(graph)
        ctx = ToolContext(graph=graph)
        call_tool("query_kg_storage", {"extracted_kg": kg, "source": "bench-setup"}, context=ctx)
        rows.append(("query_entity_disambiguation", timeit(
            lambda i: call_tool("query_entity_disambiguation", {"extracted_kg": kg, "context": text}, context=ctx),
            args.n), 100.0))
        stamp = time.time_ns()
        rows.append(("query_kg_storage (new source)", timeit(
            lambda i: call_tool("query_kg_storage", {"extracted_kg": kg, "source": f"bench-{stamp}-{i}"}, context=ctx),
            args.n), 100.0))
        rows.append(("query_kg_storage (same source)", timeit(
            lambda i: call_tool("query_kg_storage", {"extracted_kg": kg, "source": "bench-setup"}, context=ctx),
            args.n), 100.0))

    print(f"{'tool':34} {'P50 ms':>8} {'P95 ms':>8} {'max ms':>8} {'target':>8}")
    ok = True
    for name, times, target in rows:
        p50, p95 = statistics.median(times), percentile(times, 0.95)
        flag = "ok" if p50 <= target else "SLOW"
        ok &= p50 <= target
        print(f"{name:34} {p50:8.2f} {p95:8.2f} {max(times):8.2f} {'<=' + format(target, '.0f'):>6} {flag}")
    if graph is not None:
        graph.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
