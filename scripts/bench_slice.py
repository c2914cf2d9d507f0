"""Benchmark context slices: latency at 100k promoted edges, and evidence recall on multi-hop questions.

The promoted graph is synthetic and written directly by benchmark templates (``scripts/cypher/
bench_slice_*``): ``--entities`` entities (default 20,000) and ``--edges`` current promoted edges
(default 100,000) between them, endpoints drawn with a heavy-tailed (Zipf-like) degree, each edge
with its staged twin and vote sources so that slices read provenance as on a real store. A third of
the edges are **well supported** (3 to 8 votes, confidence 0.85 to 0.99), the rest are single-source
facts that passed a quorum of two (2 votes, confidence 0.5 to 0.85). One chunk per four facts holds
their sentences, for the chunk-retrieval baseline.

1. **Latency**: ``build_slice`` (reads, expansion, packing, token, the slice's record) from random
   anchors with policies of radius 2 and at most 64, 256 and 1,024 entities (token budget high
   enough that the entity cap binds), and with the default policy (2,000 tokens); P50 / P99 over
   ``--queries`` anchors each. Each capped policy cuts every anchor three ways, the order rotating
   from anchor to anchor: hops and quotes from the slicer's in-memory graph and the sources read
   with it (read once first, timed apart; :mod:`kgr.slices.adjacency`), the record written behind
   the answer (the default); the same with the record written before the answer
   (``KGR_SLICE_RECORD=sync``); and hops and quotes from Neo4j (``KGR_SLICE_CACHE=0``). Then: the
   capped policies with hops from memory but quotes read from Neo4j (a copy whose sources are not
   read yet); and the 256 policy in a process that also imported the tool server, before and after
   freezing the objects alive so far out of the cycle collector's scans (``gc.freeze``, what ``kgr
   serve`` does once started).
2. **Evidence recall**: a question is a 2-hop path ``a → b → c`` along well-supported edges (a QA
   set built from a KG samples its facts from the supported part); the question names ``a``; the
   context must hold both facts of the path. Under one token budget (``--recall-budgets``, default
   600 and 2000), the share of questions whose context holds the path, for: the **slice** (default
   policy: one provenance quote per edge, which costs tokens) and the slice without quotes;
   the **k-hop neighbourhood** of ``a`` (radius 2, edges in key order, no priority) truncated to the
   same budget; and **fulltext chunk retrieval** with ``a``'s name as the query, best chunks first,
   truncated to the same budget. Token counts use the same estimate (characters / 4) for all three.

The benchmark WIPES the database ``NEO4J_URI`` points at; it refuses to run without ``NEO4J_URI``::

    NEO4J_URI=bolt://127.0.0.1:7687 python scripts/bench_slice.py [--edges 100000] [--queries 200]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kgr.connect import connect  # noqa: E402
from kgr.model.slices import SlicePolicy  # noqa: E402
from kgr.slices import build_slice  # noqa: E402
from kgr.slices.adjacency import warm_adjacency  # noqa: E402
from kgr.store.admin import reset  # noqa: E402
from kgr.store.cypher import add_template_dir  # noqa: E402
from kgr.store.slice_records import flush_slice_records  # noqa: E402

add_template_dir(ROOT / "scripts" / "cypher")
RELS = ("KNOWS", "WORKS_AT", "FUNDED_BY", "LOCATED_IN", "PART_OF_ORG", "COLLABORATES_WITH")


def rss_mb() -> float:
    """This process's resident memory, MB (Linux)."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))]


def build_graph(graph, n_entities: int, n_edges: int, rng: random.Random) -> tuple[dict, dict]:
    """Write the synthetic graph; returns (entity key -> name, edge key -> (s, rel, o, strong))."""
    names = {f"Node:e{i:06d}": f"E{i:06d} {rng.choice(['Alpha', 'Beta', 'Gamma', 'Delta'])}" for i in range(n_entities)}
    keys = list(names)
    graph.write("bench_slice_entities", {"rows": [{"key": k, "name": names[k], "type": "Node"} for k in keys]})
    weights = [1.0 / (i + 1) ** 0.8 for i in range(n_entities)]  # heavy-tailed degrees
    edges: dict[str, tuple[str, str, str, bool]] = {}
    batch = []
    facts = []
    while len(edges) < n_edges:
        s, o = rng.choices(keys, weights, k=2)
        rel = rng.choice(RELS)
        key = f"{s}|{rel}|{o}"
        if s == o or key in edges:
            continue
        strong = rng.random() < 1 / 3
        votes = rng.randint(3, 8) if strong else 2
        conf = rng.uniform(0.85, 0.99) if strong else rng.uniform(0.5, 0.85)
        edges[key] = (s, rel, o, strong)
        chunk = f"c{len(facts) // 4:06d}"
        facts.append((chunk, f"{names[s]} {rel.replace('_', ' ').lower()} {names[o]}."))
        batch.append({"key": key, "s": s, "o": o, "rel": rel, "votes": votes, "confidence": round(conf, 4),
                      "sources": [chunk] + [f"src{j}" for j in range(votes - 1)]})
        if len(batch) >= 5000:
            graph.write("bench_slice_edges", {"rows": batch})
            batch = []
    if batch:
        graph.write("bench_slice_edges", {"rows": batch})
    chunks: dict[str, list[str]] = {}
    for cid, text in facts:
        chunks.setdefault(cid, []).append(text)
    rows = [{"id": cid, "text": " ".join(t)} for cid, t in chunks.items()]
    for i in range(0, len(rows), 5000):
        graph.write("bench_slice_chunks", {"rows": rows[i:i + 5000]})
    graph.run_script("bench_slice_index")
    return names, edges


def questions(edges: dict, n: int, rng: random.Random) -> list[tuple[str, str, str]]:
    """2-hop paths a -> b -> c along well-supported edges: (a, edge ab, edge bc)."""
    out_strong: dict[str, list[str]] = {}
    for k, (s, _, _, strong) in edges.items():
        if strong:
            out_strong.setdefault(s, []).append(k)
    starts = sorted(out_strong)
    qs: list[tuple[str, str, str]] = []
    while len(qs) < n:
        a = rng.choice(starts)
        ab = rng.choice(out_strong[a])
        b = edges[ab][2]
        if b in out_strong:
            bc = rng.choice(out_strong[b])
            if edges[bc][2] != a:
                qs.append((a, ab, bc))
    return qs


def _tokens(text: str) -> int:
    return -(-len(text) // 4)


def khop_context(graph, a: str, names: dict, budget: int) -> set[str]:
    """Edges of the radius-2 neighbourhood in key order (no priority), up to the token budget."""
    seen, frontier, order = {a}, [a], []
    for _ in range(2):
        rows = graph.read("bench_slice_khop", {"keys": frontier, "limit": 64})
        nxt = []
        for r in sorted(rows, key=lambda r: r["key"]):
            order.append(r)
            for end in (r["s"], r["o"]):
                if end not in seen:
                    seen.add(end)
                    nxt.append(end)
        frontier = nxt
    used, kept = _tokens(f"Facts about {names[a]}:\n"), set()
    for r in order:
        cost = _tokens(f"- {r['s_name']} {r['rel']} {r['o_name']} (confidence {r['confidence']:.2f}, {r['votes']} votes)\n")
        if used + cost > budget:
            break
        used += cost
        kept.add(r["key"])
    return kept


def chunk_context(graph, a: str, names: dict, edges: dict, budget: int, fact_text: dict) -> set[str]:
    """Facts whose sentence is in the chunks fulltext search returns for a's name, up to the budget."""
    rows = graph.read("bench_slice_search", {"q": f'"{names[a]}"', "limit": 50})
    used, text = 0, ""
    for r in rows:
        cost = _tokens(r["text"] + "\n")
        if used + cost > budget:
            break
        used += cost
        text += r["text"] + "\n"
    return {k for k in fact_text if fact_text[k] in text}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--entities", type=int, default=20_000)
    ap.add_argument("--edges", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--recall-budgets", default="600,2000", help="token budgets of the recall comparison")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if not os.environ.get("NEO4J_URI"):
        print("refusing to run: set NEO4J_URI to a database this benchmark may wipe", file=sys.stderr)
        return 2
    os.environ.setdefault("KGR_SLICE_KEY", "bench-slice-key-0123456789abcdef")
    rng = random.Random(args.seed)
    result: dict = {"entities": args.entities, "edges": args.edges}
    with connect() as graph:
        reset(graph)
        t = time.perf_counter()
        names, edges = build_graph(graph, args.entities, args.edges, rng)
        result["setup_s"] = round(time.perf_counter() - t, 1)
        anchors = rng.sample(sorted(names), args.queries)
        t, rss = time.perf_counter(), rss_mb()
        adj = warm_adjacency(graph)  # the slicer's in-memory graph (kgr.slices.adjacency)
        result["memory_graph"] = {"seconds": round(time.perf_counter() - t, 2), "edges": adj.edges if adj else 0,
                                  "quoted_edges": adj.quoted_edges if adj else 0, "rss_mb": round(rss_mb() - rss, 1)}
        print(f"in-memory graph: {result['memory_graph']['edges']} edges and the first sources of "
              f"{result['memory_graph']['quoted_edges']} read in {result['memory_graph']['seconds']} s, "
              f"+{result['memory_graph']['rss_mb']} MB resident", flush=True)
        latency = {}

        modes = {"memory": {"KGR_SLICE_CACHE": "1", "KGR_SLICE_RECORD": "behind"},
                 "memory, record sync": {"KGR_SLICE_CACHE": "1", "KGR_SLICE_RECORD": "sync"},
                 "neo4j": {"KGR_SLICE_CACHE": "0", "KGR_SLICE_RECORD": "behind"}}

        def timed(label: str, pol: SlicePolicy | None, names: list[str]) -> None:
            """Each anchor cut once in each mode of ``names``, the modes' order rotating from anchor
            to anchor (a noisy second on a shared machine hits every mode alike)."""
            kw = {} if pol is None else {"policy": pol}
            times: dict[str, list[float]] = {m: [] for m in names}
            sizes: dict[str, list[int]] = {m: [] for m in names}
            for i, a in enumerate([anchors[0]] + anchors):  # the first: warm-up, not timed
                for m in names[i % len(names):] + names[:i % len(names)]:
                    os.environ.update(modes[m])
                    t = time.perf_counter()
                    s = build_slice(graph, anchors=[a], **kw)
                    if i:
                        times[m].append((time.perf_counter() - t) * 1000)
                        sizes[m].append(len(s.nodes))
            flush_slice_records(graph)
            os.environ.update(modes["memory"])
            for m in names:
                row = {"p50_ms": round(percentile(times[m], 50), 2), "p99_ms": round(percentile(times[m], 99), 2),
                       "mean_nodes": round(statistics.fmean(sizes[m]), 1)}
                latency[f"{label}, {m}"] = row
                print(f"slice, {label}, {m}: P50 {row['p50_ms']} ms, P99 {row['p99_ms']} ms "
                      f"({row['mean_nodes']} entities on average)", flush=True)

        policies = {n: SlicePolicy(name=f"bench{n}", max_nodes=n, budget_tokens=1_000_000, fanout=64)
                    for n in (64, 256, 1024)}
        for max_nodes, pol in policies.items():
            timed(f"at most {max_nodes}", pol, list(modes))
        timed("default policy", None, ["memory"])
        if adj is not None:  # as just after a new version, before the copy's quotes are read: quotes live
            for max_nodes, pol in policies.items():
                adj.forget_quotes(preloaded=True)
                timed(f"at most {max_nodes}, quotes read live", pol, ["memory"])
            adj = warm_adjacency(graph)  # the quotes again
        # a process that also imported the tool server (mcp, starlette, uvicorn: three times the
        # objects the collector scans in each full pass), then froze them as kgr serve does
        from kgr.server.app import freeze_startup_objects

        gc.collect()
        print(f"objects the collector tracks, with the server's imports: {len(gc.get_objects())}", flush=True)
        timed("at most 256, with kgr serve's imports", policies[256], ["memory"])
        freeze_startup_objects()
        timed("at most 256, with kgr serve's imports frozen (as kgr serve does)", policies[256], ["memory"])
        gc.unfreeze()
        result["latency"] = latency
        fact_text = {k: f"{names[s]} {rel.replace('_', ' ').lower()} {names[o]}." for k, (s, rel, o, _) in edges.items()}
        qs = questions(edges, args.queries, rng)
        result["recall"] = {}
        for budget in (int(b) for b in args.recall_budgets.split(",")):
            hits = {"slice": 0, "slice_no_quotes": 0, "khop": 0, "chunks": 0}
            bare = SlicePolicy(name="bare", quotes_per_edge=0)
            for a, ab, bc in qs:
                s = build_slice(graph, anchors=[a], budget_tokens=budget)
                hits["slice"] += {ab, bc} <= {e.key for e in s.edges}
                s = build_slice(graph, anchors=[a], budget_tokens=budget, policy=bare)
                hits["slice_no_quotes"] += {ab, bc} <= {e.key for e in s.edges}
                hits["khop"] += {ab, bc} <= khop_context(graph, a, names, budget)
                hits["chunks"] += {ab, bc} <= chunk_context(graph, a, names, edges, budget, fact_text)
            result["recall"][budget] = {k: round(v / len(qs), 3) for k, v in hits.items()}
            r = result["recall"][budget]
            print(f"evidence recall at {budget} tokens over {len(qs)} 2-hop questions: slice {r['slice']:.3f} "
                  f"(without quotes {r['slice_no_quotes']:.3f}), k-hop truncated {r['khop']:.3f}, "
                  f"fulltext chunks {r['chunks']:.3f}", flush=True)
        graph.run_script("bench_slice_drop")
        reset(graph)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
