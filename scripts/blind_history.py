"""Rerun each sample's blind measurement: the extractor as it was when that sample was still blind, on that sample.

    python scripts/blind_history.py [--out tests/data/extract/blind_history.json]

Every annotated sample was measured once blind (before any rule was made from its errors), and then
became tuning material; its precision on today's extractor is therefore no honest estimate. This
script takes, for each sample, the commit whose extractor was measured blind on it (docs/extract.md),
unpacks it (``git archive`` into a temporary directory), runs that commit's own
``scripts/bench_extract.py::predict`` on the sample with titles, with and without the word list, in a
subprocess whose ``PYTHONPATH`` is the unpacked tree, and records every prediction with its
correctness (today's matching, :func:`bench_extract.gold_keys`) and its *family*: the relation and
whether its subject was *carried* (the document's title, which the sentence does not spell) or read in
the sentence. Only ``blind`` rows of the second sample count (its tune split was tuning material from
the start). The fourth and sixth samples were blind to today's rules (no rule made from their errors),
so today's extractor stands for them (the commit ``HEAD``; abstention off).

``scripts/calibrate_extract.py`` reads the output as the held-out evidence per family.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_extract import SAMPLES, gold_keys, norm  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
#: sample -> the commit whose extractor was measured blind on it (docs/extract.md: "before"/"after" tables).
BLIND_AT = {"context": "93d4427", "third": "14140d8", "fifth": "6d64f03", "fourth": "HEAD", "sixth": "HEAD"}

_RUNNER = r"""
import asyncio, json, os, sys, importlib.util
spec = importlib.util.spec_from_file_location("old_bench", sys.argv[1])
b = importlib.util.module_from_spec(spec); spec.loader.exec_module(b)
from kgr.extract import lexicon
from kgr.model.schema import load_schema
rows = [json.loads(l) for l in open(sys.argv[2], encoding="utf-8") if l.strip()]
schema = load_schema(sys.argv[3])
out = {}
for mode in ("with", "without"):
    if mode == "without": os.environ["KGR_NO_LEXICON"] = "1"
    else: os.environ.pop("KGR_NO_LEXICON", None)
    lexicon._frequencies.cache_clear()
    kw = {"abstain": False} if "abstain" in b.predict.__code__.co_varnames else {}
    out[mode] = asyncio.run(b.predict(rows, schema, 3, True, **kw))
print(json.dumps(out))
"""


def carried(title: str | None, subject: str, text: str) -> bool:
    """Whether ``subject`` is the document's title and the sentence does not spell it (case and ``-_.`` ignored)."""
    if not title or norm(subject) != norm(title):
        return False
    squash = lambda s: "".join(ch for ch in s.casefold() if ch.isalnum())  # noqa: E731
    return squash(subject) not in squash(text)


def run(sample: str, commit: str, data: Path) -> list[dict]:
    rows = [json.loads(line) for line in (data / SAMPLES[sample]).read_text(encoding="utf-8").splitlines() if line]
    with tempfile.TemporaryDirectory(prefix="kgr-blind-") as tmp:
        if commit == "HEAD":
            tree = ROOT
        else:
            tree = Path(tmp) / commit
            tree.mkdir()
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        env = dict(os.environ, PYTHONPATH=str(tree))
        got = subprocess.run([sys.executable, "-c", _RUNNER, str(tree / "scripts" / "bench_extract.py"),
                              str(data / SAMPLES[sample]), str(data / "schema.json")],
                             cwd=tmp, env=env, check=True, capture_output=True, text=True).stdout
    preds = json.loads(got.strip().splitlines()[-1])
    out = []
    for mode, per_row in preds.items():
        for r, pred in zip(rows, per_row):
            if sample == "context" and r["split"] != "blind":
                continue
            golds = [gold_keys(g) for g in r["triples"]]
            matched: set[int] = set()
            for p in dict.fromkeys(tuple(x) for x in pred):
                key = (norm(p[0]), p[1], p[2], norm(p[3]), p[4])
                hit = next((i for i, keys in enumerate(golds) if key in keys and i not in matched), None)
                if hit is not None:
                    matched.add(hit)
                out.append({"sample": sample, "commit": commit, "install": mode, "id": r["id"], "triple": list(p),
                            "correct": hit is not None, "relation": p[2],
                            "carried": carried(r.get("title"), p[0], r["text"])})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT / "tests" / "data" / "extract")
    ap.add_argument("--out", type=Path, default=ROOT / "tests" / "data" / "extract" / "blind_history.json")
    args = ap.parse_args()
    records = []
    for sample, commit in BLIND_AT.items():
        got = run(sample, commit, args.data)
        right = sum(x["correct"] for x in got)
        print(f"{sample:8} at {commit}: {right}/{len(got)} right (both installs)", file=sys.stderr)
        records += got
    args.out.write_text(json.dumps(records, indent=0) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
