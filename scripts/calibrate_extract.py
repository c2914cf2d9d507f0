"""Calibrate the rules extractor's abstention: precision per path on every annotated sample, and the table of paths it abstains from.

    python scripts/calibrate_extract.py [--data tests/data/extract] [--z 1.2816] [--target 0.80] [--write] [--json]

Runs the six samples of :data:`CALIBRATION` (``scripts/bench_extract.py``'s, the fourth included: its
per-path counts, never its errors) with abstention off
(``RulesExtractor(abstain=False)``), with titles (as ``kgr ingest`` gives them), once with the ``nlp``
extra's word list and once without (``KGR_NO_LEXICON``), and counts, for each path
(:mod:`kgr.extract.paths`) and sample, the predictions and the correct ones (bench_extract's
matching). The two installs' counts are added (a triple both find counts twice: the bound below is
then computed on ``n`` halved, i.e. per install on average).

The rule: a path is **kept** when the posterior mean of its precision reaches ``target`` (0.80):
``(k + m·p0) / (n + m)`` with ``k`` right of ``n`` predictions (per install: the two installs' counts
halved) and a Beta prior of mean ``p0`` worth ``m`` (2) triples. ``p0`` is the blind precision of its
kind of reading — carried (an end is the title) or in-sentence — on the samples' blind history
(``tests/data/extract/blind_history.json``, ``scripts/blind_history.py``: each sample read by the
extractor as it was while that sample was blind): the tuning samples' counts are fitted, the blind
history says how such readings fare on unseen text. A path with a ``named`` end (the title as the
sentence spells it) takes its guess-ended twin's estimate as prior where that is higher. Every other path, and one never seen, abstains
(:func:`kgr.extract.paths.abstains`). The Wilson lower bound (``--z``) is printed for reference. *Leave-one-sample-out*: for each sample, the table is derived from the other samples
only and applied to that sample's predictions: the precision and recall that gives is the honest
estimate of the rule on a sample it was not fitted to (printed per sample and pooled).

``--write`` rewrites ``kgr/extract/path_table.py`` with the derived table and its basis.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_extract import SAMPLES, gold_keys, norm, predict  # noqa: E402

from kgr.extract import lexicon  # noqa: E402
from kgr.model.schema import load_schema  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
#: The samples the table is derived from. A new blind sample (the seventh) joins only after it was measured.
CALIBRATION = ("first", "context", "third", "fourth", "fifth", "sixth")


def wilson_lower(correct: float, n: float, z: float) -> float:
    """Wilson score lower bound of a proportion ``correct / n`` at normal quantile ``z`` (reported
    beside the posterior estimate; not the rule: see docs/extract.md).

    ``(p + z²/2n − z·sqrt(p(1−p)/n + z²/4n²)) / (1 + z²/n)``, ``p = correct / n``; 0 when ``n`` is 0.

    >>> round(wilson_lower(10, 10, 1.2816), 3)
    0.859
    """
    if n == 0:
        return 0.0
    p = correct / n
    centre = p + z * z / (2 * n)
    margin = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - margin) / (1 + z * z / n)


def judged(rows: list[dict], preds: list[list[tuple]], paths: list[list[str]]) -> list[tuple[str, bool, str]]:
    """``(path, correct, sentence id)`` per distinct prediction (bench_extract's matching, one gold once)."""
    out = []
    for r, pred, pth in zip(rows, preds, paths):
        golds = [gold_keys(g) for g in r["triples"]]
        matched: set[int] = set()
        for p, path in dict(zip(pred, pth)).items():
            key = (norm(p[0]), p[1], p[2], norm(p[3]), p[4])
            hit = next((i for i, keys in enumerate(golds) if key in keys and i not in matched), None)
            if hit is not None:
                matched.add(hit)
            out.append((path, hit is not None, r["id"]))
    return out


def carried(path: str) -> bool:
    """Whether an end of ``path`` is the document's title standing for a subject the sentence leaves out."""
    return "title" in path.rsplit("/", 1)[-1]


def priors(history: list[dict], leave_out: str | None = None) -> dict[bool, float]:
    """Blind precision of carried and of in-sentence readings (``blind_history.json``, without ``leave_out``)."""
    c: dict[bool, Counter] = defaultdict(Counter)
    for x in history:
        if x["sample"] != leave_out:
            c[x["carried"]]["n"] += 1
            c[x["carried"]]["k"] += x["correct"]
    return {g: c[g]["k"] / c[g]["n"] if c[g]["n"] else 0.0 for g in (True, False)}


def estimate(k: float, n: float, prior: float, m: float) -> float:
    """Posterior mean of a path's precision: Beta prior of mean ``prior`` and weight ``m`` triples, ``k`` right of ``n``.

    ``(k + m·prior) / (n + m)``.
    """
    return (k + m * prior) / (n + m)


def twin(path: str) -> str | None:
    """``path`` with its ``named`` end read as a ``guess`` end (``None`` if it has none): the same name read
    without knowing it is the title."""
    producer, relation, ends = path.split("/", 2)
    other = "/".join([producer, relation, ">".join("guess" if e == "named" else e for e in ends.split(">"))])
    return None if other == path else other


def estimates(counts: dict[str, Counter], prior: dict[bool, float], m: float) -> dict[str, float]:
    """Each path's :func:`estimate`; its prior is the blind precision of its kind of reading (carried or
    in-sentence), or its :func:`twin`'s estimate when the twin has a record and that is higher (the title
    as the sentence spells it is a name read in the sentence, at least as sure as a guessed one)."""
    est = {p: estimate(c["correct"] / 2, c["predicted"] / 2, prior[carried(p)], m) for p, c in counts.items()}
    for p, c in counts.items():
        t = twin(p)
        if t in est:
            est[p] = estimate(c["correct"] / 2, c["predicted"] / 2, max(est[t], prior[carried(p)]), m)
    return est


def enabled(counts: dict[str, Counter], prior: dict[bool, float], m: float, target: float) -> set[str]:
    """The paths the rule (module docstring) keeps, given ``{path: Counter(predicted, correct)}`` (both installs added)."""
    return {p for p, e in estimates(counts, prior, m).items() if e >= target}


def collect(data: Path) -> dict[str, list[tuple[str, bool, str]]]:
    """Per tuning sample, every judged prediction of both installs, abstention off, titles on."""
    schema = load_schema(data / "schema.json")
    got: dict[str, list] = {}
    for name in CALIBRATION:
        fname = SAMPLES[name]
        if not (data / fname).exists():
            continue
        rows = [json.loads(line) for line in (data / fname).read_text(encoding="utf-8").splitlines() if line]
        got[name] = []
        for mode in ("with", "without"):
            if mode == "without":
                os.environ["KGR_NO_LEXICON"] = "1"
            else:
                os.environ.pop("KGR_NO_LEXICON", None)
            lexicon._frequencies.cache_clear()  # noqa: SLF001 - the word list is read once per process
            paths: list[list[str]] = []
            preds = asyncio.run(predict(rows, schema, 3, True, abstain=False, paths=paths))
            got[name] += [(p, ok, f"{mode}:{sid}") for p, ok, sid in judged(rows, preds, paths)]
        gold = sum(len(r["triples"]) for r in rows)
        got[name].append(("#gold", False, str(gold)))
    os.environ.pop("KGR_NO_LEXICON", None)
    return got


def tally(items) -> dict[str, Counter]:
    counts: dict[str, Counter] = defaultdict(Counter)
    for path, ok, _ in items:
        if path != "#gold":
            counts[path]["predicted"] += 1
            counts[path]["correct"] += ok
    return counts


def report(got: dict[str, list], history: list[dict], m: float, target: float, z: float) -> dict:
    """Per path: per-sample and pooled counts, estimate, Wilson bound, leave-one-sample-out precision; and the
    leave-one-sample-out bench of the rule (the table from the other samples and their blind history)."""
    pooled = tally(x for items in got.values() for x in items)
    prior = priors(history)
    on = enabled(pooled, prior, m, target)
    est = estimates(pooled, prior, m)
    paths = {}
    for path, c in sorted(pooled.items(), key=lambda kv: (-kv[1]["predicted"], kv[0])):
        per = {s: [sum(ok for p, ok, _ in items if p == path), sum(p == path for p, _, _ in items)] for s, items in got.items()}
        loso = {s: None if c["predicted"] == per[s][1] else round((c["correct"] - per[s][0]) / (c["predicted"] - per[s][1]), 2)
                for s in got}
        paths[path] = {"correct": c["correct"], "predicted": c["predicted"], "precision": round(c["correct"] / c["predicted"], 2),
                       "estimate": round(est[path], 2),
                       "wilson_lower": round(wilson_lower(c["correct"] / 2, c["predicted"] / 2, z), 2),
                       "per_sample": {s: f"{k}/{n}" for s, (k, n) in per.items() if n},
                       "loso_precision": loso, "enabled": path in on}
    cv = {}
    for s, items in got.items():
        rule = enabled(tally(x for t, xs in got.items() if t != s for x in xs), priors(history, s), m, target)
        gold = 2 * int(next(sid for p, _, sid in items if p == "#gold"))
        allp = [(p, ok) for p, ok, _ in items if p != "#gold"]
        kept = [(p, ok) for p, ok in allp if p in rule]
        cv[s] = {"before": [sum(ok for _, ok in allp), len(allp)], "after": [sum(ok for _, ok in kept), len(kept)], "gold": gold}
    return {"m": m, "target": target, "z": z, "prior": {"carried": round(prior[True], 2), "sentence": round(prior[False], 2)},
            "paths": paths, "enabled": sorted(on), "leave_one_sample_out": cv}


def write_table(rep: dict, out: Path, relations: list[str]) -> None:
    basis = {p: f"{v['correct']}/{v['predicted']}" for p, v in rep["paths"].items()}
    text = ('"""Generated by ``scripts/calibrate_extract.py --write``: the rules extractor\'s paths it keeps; it abstains\n'
            'from every other (:mod:`kgr.extract.paths`; the rule and the figures in docs/extract.md, "Abstention by path").\n'
            f'Kept: posterior mean precision >= {rep["target"]} (prior: blind precision of carried {rep["prior"]["carried"]} /\n'
            f'in-sentence {rep["prior"]["sentence"]} readings, weight {rep["m"]} triples). Do not edit by hand: rerun the script."""\n\n'
            "#: The relations the samples' schema (tests/data/extract/schema.json) has: the table speaks of these only.\n"
            f"RELATIONS: frozenset[str] = frozenset({sorted(relations)!r})\n\n"
            "ENABLED: frozenset[str] = frozenset({\n" + "".join(f"    {p!r},\n" for p in rep["enabled"]) + "})\n\n"
            "#: correct / predicted per path on the six samples (both installs added, titles on): the basis of ENABLED.\n"
            "BASIS: dict[str, str] = {\n" + "".join(f"    {p!r}: {b!r},\n" for p, b in basis.items()) + "}\n")
    out.write_text(text, encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT / "tests" / "data" / "extract")
    ap.add_argument("--m", type=float, default=2.0, help="weight of the blind prior, in triples (default 2)")
    ap.add_argument("--target", type=float, default=0.80)
    ap.add_argument("--z", type=float, default=1.0, help="normal quantile of the Wilson bound shown (1.0: one-sided 84 %%)")
    ap.add_argument("--cache", type=Path, help="read/write the judged predictions here (skips the runs when it exists)")
    ap.add_argument("--write", action="store_true", help="rewrite kgr/extract/path_table.py")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.cache and args.cache.exists():
        got = {s: [tuple(x) for x in v] for s, v in json.loads(args.cache.read_text()).items()}
    else:
        got = collect(args.data)
        if args.cache:
            args.cache.write_text(json.dumps(got))
    history = json.loads((args.data / "blind_history.json").read_text(encoding="utf-8"))
    rep = report(got, history, args.m, args.target, args.z)
    if args.write:
        relations = list(load_schema(args.data / "schema.json").relation_types)
        write_table(rep, ROOT / "kgr" / "extract" / "path_table.py", relations)
    if args.json:
        print(json.dumps(rep, indent=2))
        return
    samples = list(got)
    print(f"prior (blind history): carried {rep['prior']['carried']}, in-sentence {rep['prior']['sentence']}; m = {args.m}")
    print(f"{'path':40} {'pooled':>8} {'P':>5} {'est':>5} {'Wlow':>5} on  " + " ".join(f"{s[:7]:>7}" for s in samples)
          + "  | leave-one-out P: " + " ".join(f"{s[:5]:>5}" for s in samples))
    for path, v in rep["paths"].items():
        print(f"{path:40} {v['correct']:>3}/{v['predicted']:<4} {v['precision']:5.2f} {v['estimate']:5.2f} {v['wilson_lower']:5.2f} "
              f"{'yes' if v['enabled'] else 'NO ':3} " + " ".join(f"{v['per_sample'].get(s, ''):>7}" for s in samples)
              + "  |                  " + " ".join(f"{'-' if v['loso_precision'][s] is None else v['loso_precision'][s]:>5}" for s in samples))
    print("\nleave one sample out (table from the other samples and their blind history, applied to this one; both installs added):")
    tot = Counter()
    for s, c in rep["leave_one_sample_out"].items():
        (kb, nb), (ka, na), g = c["before"], c["after"], c["gold"]
        tot.update({"kb": kb, "nb": nb, "ka": ka, "na": na, "g": g})
        print(f"  {s:8} all paths P {kb}/{nb} = {kb / max(nb, 1):.2f} R {kb / g:.2f}   with abstention P {ka}/{na} = "
              f"{ka / max(na, 1):.2f} R {ka / g:.2f}")
    print(f"  {'pooled':8} all paths P {tot['kb']}/{tot['nb']} = {tot['kb'] / max(tot['nb'], 1):.2f} R {tot['kb'] / tot['g']:.2f}"
          f"   with abstention P {tot['ka']}/{tot['na']} = {tot['ka'] / max(tot['na'], 1):.2f} R {tot['ka'] / tot['g']:.2f}")


if __name__ == "__main__":
    main()
