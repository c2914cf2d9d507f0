"""Benchmark the document lifecycle: forgetting 1 % of a corpus's documents and re-ingesting it after
editing 1 % of them, each as a ratio to a fresh full ingest of the same corpus in the same run.

The corpus (default 2,400 text files of 5 paragraphs, about 10,000 chunks) states facts built from the example
schema's names and triggers, four sentences per paragraph, one paragraph per chunk (``--chunk-size``
64 tokens). Each cycle:

1. wipe, **fresh ingest** of the corpus (rules extractor, no promotion: promotion has its own
   benchmark, ``scripts/bench_promotion.py``);
2. **forget** 1 % of the documents (``kgr.store.forget.forget``, one version), and delete their files;
3. edit one paragraph in each of another 1 % of the files, then **re-ingest** the whole corpus
   (``ingest``: every document is read and chunked, the stored chunks compared, the vanished chunks
   forgotten, only the new ones extracted and staged);
4. check: wipe, fresh ingest of the final corpus; its fingerprint (entities, staged edges, votes,
   chunks) must equal the one after step 3.

Reported per cycle and as medians over ``--repeat`` cycles: seconds of each step and the ratios
forget / fresh and re-ingest / fresh (target: at most 0.05, re-work proportional to the change).

The benchmark WIPES the database ``NEO4J_URI`` points at; it refuses to run without ``NEO4J_URI``::

    NEO4J_URI=bolt://127.0.0.1:7687 python scripts/bench_lifecycle.py [--documents 2000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kgr.connect import connect  # noqa: E402
from kgr.ingest.chunking import ChunkingConfig  # noqa: E402
from kgr.ingest.config import IngestConfig  # noqa: E402
from kgr.ingest.pipeline import ingest  # noqa: E402
from kgr.model.schema import KGSchema, load_schema  # noqa: E402
from kgr.store.admin import fingerprint, reset  # noqa: E402
from kgr.store.forget import forget  # noqa: E402
from kgr.store.provenance import documents_under  # noqa: E402

SCHEMA_PATH = ROOT / "examples" / "schema.json"


def _sentences(schema: KGSchema, rng: random.Random) -> list[str]:
    """Every "<subject> <trigger> <object>." the example schema's gazetteer and triggers allow."""
    out = []
    for rel, spec in sorted(schema.relation_types.items()):
        triggers = [t for t in spec.triggers if not t.endswith(" by")]
        if not (spec.domain and spec.range and triggers):
            continue
        for st in spec.domain:
            for ot in spec.range:
                for s in schema.entity_types[st].names:
                    for o in schema.entity_types[ot].names:
                        if s != o:
                            out.append(f"{s} {triggers[0]} {o}.")
    rng.shuffle(out)
    return out


def _paragraph(pool: list[str], rng: random.Random) -> str:
    return " ".join(rng.sample(pool, 4))


def write_corpus(root: Path, n_docs: int, paragraphs: int, pool: list[str], seed: int) -> None:
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n_docs):
        text = "\n\n".join(_paragraph(pool, rng) for _ in range(paragraphs))
        (root / f"doc{i:05d}.txt").write_text(text + "\n", encoding="utf-8")


def edit_paragraph(path: Path, pool: list[str], rng: random.Random) -> None:
    paras = path.read_text(encoding="utf-8").strip().split("\n\n")
    paras[rng.randrange(len(paras))] = _paragraph(pool, rng)
    path.write_text("\n\n".join(paras) + "\n", encoding="utf-8")


def cycle(graph, schema: KGSchema, work: Path, args, pool: list[str], seed: int) -> dict:
    rng = random.Random(seed)
    corpus = work / f"corpus-{seed}"
    write_corpus(corpus, args.documents, args.paragraphs, pool, seed)
    cfg = IngestConfig(promote=False, concurrency=args.concurrency,
                       chunking=ChunkingConfig(size=args.chunk_size, overlap=0))
    files = sorted(corpus.glob("*.txt"))
    share = max(1, round(len(files) * args.share))
    gone, edited = files[:share], files[share:2 * share]

    reset(graph)
    t = time.perf_counter()
    full = ingest(graph, [corpus], schema, config=cfg)
    fresh_s = time.perf_counter() - t

    ids = [d.id for d in documents_under(graph, [p.resolve().as_posix() for p in gone])]
    t = time.perf_counter()
    forgot = forget(graph, documents=ids)
    forget_s = time.perf_counter() - t
    for p in gone:
        p.unlink()

    for p in edited:
        edit_paragraph(p, pool, rng)
    t = time.perf_counter()
    again = ingest(graph, [corpus], schema, config=cfg)
    reingest_s = time.perf_counter() - t
    after = fingerprint(graph)

    reset(graph)
    ingest(graph, [corpus], schema, config=cfg)
    equal = fingerprint(graph) == after
    shutil.rmtree(corpus)
    return {"chunks": full.chunks, "documents": full.documents, "fresh_s": round(fresh_s, 3),
            "forget_documents": len(ids), "forget_votes": forgot.votes_removed, "forget_s": round(forget_s, 3),
            "edited_documents": len(edited), "reingest_new_chunks": again.chunks_processed,
            "reingest_forgotten_chunks": again.chunks_forgotten, "reingest_s": round(reingest_s, 3),
            "forget_ratio": round(forget_s / fresh_s, 4), "reingest_ratio": round(reingest_s / fresh_s, 4),
            "equal_to_fresh": equal}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--documents", type=int, default=2400, help="about 10,000 chunks")
    ap.add_argument("--paragraphs", type=int, default=5, help="paragraphs (= chunks) per document")
    ap.add_argument("--chunk-size", type=int, default=64, help="tokens; a paragraph of four sentences fits")
    ap.add_argument("--share", type=float, default=0.01, help="share of documents forgotten, and edited")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args()
    if not os.environ.get("NEO4J_URI"):
        print("refusing to run: set NEO4J_URI to a database this benchmark may wipe", file=sys.stderr)
        return 2
    schema = load_schema(SCHEMA_PATH)
    pool = _sentences(schema, random.Random(0))
    runs = []
    with connect() as graph, tempfile.TemporaryDirectory(prefix="kgr-lifecycle-") as tmp:
        for i in range(args.repeat):
            r = cycle(graph, schema, Path(tmp), args, pool, seed=i + 1)
            runs.append(r)
            print(json.dumps(r), flush=True)
    med = {k: statistics.median(r[k] for r in runs) for k in ("fresh_s", "forget_s", "reingest_s", "forget_ratio",
                                                              "reingest_ratio")}
    summary = {"runs": runs, "median": med, "all_equal_to_fresh": all(r["equal_to_fresh"] for r in runs)}
    print(f"{runs[0]['chunks']} chunks in {runs[0]['documents']} documents, {len(runs)} cycle(s), medians: "
          f"fresh ingest {med['fresh_s']:.1f} s; forget {args.share:.0%} of the documents {med['forget_s']:.2f} s "
          f"= {med['forget_ratio']:.4f}x; re-ingest after editing {args.share:.0%} {med['reingest_s']:.2f} s "
          f"= {med['reingest_ratio']:.4f}x; re-ingested graph equals a fresh ingest: {summary['all_equal_to_fresh']}")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    return 0 if summary["all_equal_to_fresh"] else 1


if __name__ == "__main__":
    sys.exit(main())
