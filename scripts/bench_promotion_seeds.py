#!/usr/bin/env python3
"""Benchmark: the calibrated policy's cut over several stream seeds — its noise, breaches and monotonicity.

Usage::

    python scripts/bench_promotion_seeds.py --seeds 7,8,9,10,11 --streams networkx,wordnet \\
        --policies c10b0,c10b2,c10b5,c10b10,c10b20 --json-out seeds.json

It WIPES the database it is pointed at (``NEO4J_URI``, or the managed Neo4j), like
``bench_promotion.py``, which it runs once per seed (one wave, no speed or CLI sections unless asked).

One run of one policy on one seed is one draw: a new stream (its false triples, sources and waves)
and a new review-queue sample. The certificate promises that the cut's false-promotion rate stays
within the target with probability ``level`` (0.9) *over such draws* — so a single run may
exceed it, and a claim about budgets ("more labels never cost acceptance") is a claim about the
draws' distribution, not about one seed. Per stream and policy this prints, over the seeds:

- the median Acceptance and its range, the median and worst measured FMR;
- **breaches**: runs whose measured FMR exceeds the target (and the target + 0.02 the issue allows);
  a sound 90 % certificate breaches the target in at most about 10 % of the runs;
- per target, the **monotonicity** of the median Acceptance over the label budgets: the largest drop
  from one budget to any larger one (0 % included); and per seed, the largest drop of that run's
  Acceptance from one budget to the next.

``--config KEY=VALUE`` (passed to ``bench_promotion.py``) sets a ``CalibratedConfig`` field for
every calibrated policy, e.g. ``--config calibration_check=true``.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_promotion  # noqa: E402


def _target_budget(policy: str) -> tuple[float, int] | None:
    m = re.fullmatch(r"c(\d\d)b(\d+)", policy)
    return (int(m.group(1)) / 100.0, int(m.group(2))) if m else None


def summarise(runs: dict[int, dict]) -> dict:
    """Per stream and policy, the figures of the module docstring, from ``{seed: bench json}``."""
    by: dict[tuple[str, str], list[dict]] = {}
    for out in runs.values():
        for stream, s in out["streams"].items():
            for r in s["results"]:
                by.setdefault((stream, r["policy"]), []).append(r)
    rows = {}
    for (stream, policy), rs in by.items():
        tb = _target_budget(policy)
        acc = [r["acceptance"] for r in rs]
        fmr = [r["fmr"] for r in rs]
        row = {"stream": stream, "policy": policy, "label": rs[0]["label"], "runs": len(rs),
               "acceptance_median": statistics.median(acc), "acceptance_min": min(acc), "acceptance_max": max(acc),
               "fmr_median": statistics.median(fmr), "fmr_max": max(fmr)}
        if tb:
            row["target"], row["budget"] = tb
            row["breaches"] = sum(f > tb[0] + 1e-9 for f in fmr)
            row["breaches_plus_002"] = sum(f > tb[0] + 0.02 + 1e-9 for f in fmr)
        rows[f"{stream}/{policy}"] = row
    mono = {}
    for stream in {r["stream"] for r in rows.values()}:
        for target in sorted({r["target"] for r in rows.values() if "target" in r}):
            ladder = sorted((r["budget"], r["acceptance_median"]) for r in rows.values()
                            if r["stream"] == stream and r.get("target") == target)
            drops = [(b1, b2, a1 - a2) for i, (b1, a1) in enumerate(ladder) for b2, a2 in ladder[i + 1:]]
            worst = max(drops, key=lambda d: d[2], default=None)
            per_seed = {}
            for seed, out in runs.items():
                results = out["streams"].get(stream, {}).get("results", [])
                acc = {_target_budget(r["policy"]): r["acceptance"] for r in results}
                steps = [(b, a) for (t, b), a in sorted((k, v) for k, v in acc.items() if k and k[0] == target)]
                per_seed[seed] = max(((b1, b2, a1 - a2) for (b1, a1), (b2, a2) in zip(steps, steps[1:])),
                                     key=lambda d: d[2], default=None)
            mono[f"{stream}@{target}"] = {"ladder": ladder, "worst_drop": worst, "per_seed_worst_step": per_seed}
    return {"rows": rows, "monotonicity": mono}


def _print(summary: dict, seeds: list[int]) -> None:
    print(f"\n== over seeds {','.join(map(str, seeds))}")
    head = f"{'stream':<9} {'policy':<31} {'runs':>4} {'Accept med':>10} {'range':>13} {'FMR med':>7} {'worst':>6} {'breach':>6} {'>+0.02':>6}"
    print(head)
    print("-" * len(head))
    for r in sorted(summary["rows"].values(), key=lambda r: (r["stream"], r.get("target", 1), r.get("budget", -1))):
        br = "-" if "breaches" not in r else f"{r['breaches']}/{r['runs']}"
        br2 = "-" if "breaches" not in r else f"{r['breaches_plus_002']}/{r['runs']}"
        print(f"{r['stream']:<9} {r['label']:<31} {r['runs']:>4} {r['acceptance_median']:>10.3f} "
              f"{r['acceptance_min']:>6.3f}-{r['acceptance_max']:.3f} {r['fmr_median']:>7.3f} {r['fmr_max']:>6.3f} "
              f"{br:>6} {br2:>6}")
    for key, m in sorted(summary["monotonicity"].items()):
        w = m["worst_drop"]
        ladder = " → ".join(f"{b}%: {a:.3f}" for b, a in m["ladder"])
        worst = "none" if w is None or w[2] <= 0 else f"{w[2]:.3f} ({w[0]}% → {w[1]}%)"
        print(f"  median Acceptance over budgets, {key}: {ladder}; largest drop with more labels: {worst}")
        steps = ", ".join(f"seed {seed}: " + ("none" if d is None or d[2] <= 0 else f"{d[2]:.3f} ({d[0]}% → {d[1]}%)")
                          for seed, d in sorted(m["per_seed_worst_step"].items()))
        print(f"    per run, the largest drop from one budget to the next: {steps}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="7,8,9")
    ap.add_argument("--json-out")
    args, rest = ap.parse_known_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    passthrough = rest if any(a.startswith("--waves") for a in rest) else [*rest, "--waves", "1"]
    for flag in ("--speed", "--cli"):
        if not any(a in (flag, "--no-" + flag[2:]) for a in rest):
            passthrough.append("--no-" + flag[2:])
    runs: dict[int, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            path = Path(tmp) / f"seed{seed}.json"
            print(f"\n#### seed {seed}", flush=True)
            bench_promotion.main([*passthrough, "--seed", str(seed), "--json-out", str(path)])
            runs[seed] = json.loads(path.read_text(encoding="utf-8"))
    summary = summarise(runs)
    _print(summary, seeds)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"seeds": seeds, "runs": runs, "summary": summary}, indent=2,
                                                  default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
