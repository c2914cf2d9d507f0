#!/usr/bin/env python3
"""A/B of the cold ``kgr promote`` (bench_promotion's ``--speed`` large case), alternating code trees in one run.

Usage::

    git archive <old commit> | tar -x -C /tmp/old && ln -s /tmp/old/cypher /tmp/old/kgr/cypher
    python scripts/bench_promotion_ab.py --variants old=/tmp/old,new=$PWD --trials 3 [--bytecode] [--fresh-cache new]

Seeds ``--edges`` pinned promoted edges (as ``bench_promotion.py --speed`` does; ``--reuse`` keeps a
seeded store), then per trial and variant (ABBA order): stages the same ``--cands`` candidates (two
sources each), runs ``kgr promote --json`` as a new process with ``PYTHONPATH`` = the variant's tree
(wall time, the settle's timings, the store hash), then ``kgr promote`` again (nothing new), then
forgets the two sources (back to the seeded state). ``--drop-caches`` empties the OS page cache
before each first ``kgr promote`` (its interpreter, libraries and kgr's files then come from disk). ``--fresh-cache NAME`` gives that variant's processes
an empty ``KGR_CACHE_DIR`` (a first process on this promoted graph: nothing kept on disk);
``--earlier-cache NAME`` gives them a ``KGR_CACHE_DIR`` that holds only the disk copy of the promoted
graph as it was before its last change (the seeded graph before its last seeded batch of 10,000
edges: the first process after a change, on a machine that ran ``kgr promote`` before it). Prints
medians and the new/old wall ratio. It WIPES the database it is pointed at (unless ``--reuse``).
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_promotion as bp  # noqa: E402 - after the path
import promotion_streams as ps  # noqa: E402
from kgr.store.admin import init_store, reset  # noqa: E402
from kgr.store.staging import stage  # noqa: E402
from kgr.store.forget import forget  # noqa: E402
from kgr.connect import connect  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--edges", type=int, default=100_000)
ap.add_argument("--cands", type=int, default=5000)
ap.add_argument("--trials", type=int, default=3)
ap.add_argument("--seed", type=int, default=7)
ap.add_argument("--reuse", action="store_true", help="the store already holds the seeded base")
ap.add_argument("--variants", required=True, help="name=tree,name=tree (a tree holds kgr/)")
ap.add_argument("--bytecode", action="store_true", help="kgr processes with compiled bytecode (a cache dir)")
ap.add_argument("--stage", action="store_true", help="stage the candidates and stop")
ap.add_argument("--forget", action="store_true", help="forget s1, s2 and stop")
ap.add_argument("--fresh-cache", default="", help="variants whose kgr processes start with an empty KGR_CACHE_DIR "
                "(no promoted graph kept on disk from an earlier process)")
ap.add_argument("--earlier-cache", default="", help="variants whose kgr processes start with only the disk "
                "copy of the promoted graph before its last change")
ap.add_argument("--drop-caches", action="store_true", help="empty the OS page cache (Linux, as root) before each "
                "first kgr promote: its Python files and libraries are read from disk, as after a reboot")
ap.add_argument("--profile", default="", help="write a cProfile of each first kgr promote to PREFIX.<variant>.<trial>.prof "
                "(the wall times then include the profiler's overhead)")
ap.add_argument("--out")
a = ap.parse_args()
variants = dict(v.split("=") for v in a.variants.split(","))

rng = random.Random(a.seed)
sch = ps.schema(functional=False)
seen, base, fresh = set(), [], []
for t in ps.synthetic_kg(int(a.edges * 1.15) + 4 * a.cands, rng):
    if t.s_key == t.o_key or t.ident in seen:
        continue
    seen.add(t.ident)
    (fresh if len(fresh) < 2 * a.cands and rng.random() < 0.08 else base).append(t)
base = base[:a.edges]
graph = connect()


def log(m: str) -> None:
    print(m, file=sys.stderr, flush=True)


if not a.reuse:
    reset(graph)
    init_store(graph, sch)
    bp._seed_promoted(graph, base, sch, log)
if a.stage:
    stage(graph, [bp._assert(t, s) for t in fresh[:a.cands] for s in ("s1", "s2")], schema=sch)
    sys.exit(0)
if a.forget:
    forget(graph, sources=["s1", "s2"])
    sys.exit(0)
tmp = tempfile.mkdtemp()
schema = Path(tmp) / "schema.json"
schema.write_text(sch.model_dump_json(), encoding="utf-8")
env = bp._cli_env(graph)

if a.bytecode:
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "kgr-bench-bytecode")
    for tree in variants.values():
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(tree) / "kgr")], env=env, check=True,
                       stdout=subprocess.DEVNULL)


fresh_cache = set(filter(None, a.fresh_cache.split(",")))
earlier_cache = set(filter(None, a.earlier_cache.split(",")))


def earlier_copy() -> Path:
    """A cache directory holding only the disk copy (``kgr.store.promoted_disk``) of the promoted graph
    at the newest version whose content hash differs from the current one (the state before the last
    change), read from the store's history (``promoted_edges`` at that version)."""
    from kgr.store import promoted_disk
    from kgr.store.rounds import read_context
    from kgr.store.versions import list_versions, promoted_edges

    ctx, _ = read_context(graph, "calibrated", counts=False)
    before = next(v for v in list_versions(graph, limit=100_000) if v.hash not in (None, ctx.hash))
    rows = promoted_edges(graph, before.version)
    root = Path(tempfile.mkdtemp(prefix="kgr-earlier-")) / "promoted"
    promoted_disk.save(root, graph.uri, graph.database, ctx.created_at, before.hash, [r.key for r in rows],
                       [r.subject_key for r in rows], [r.relation for r in rows], [r.object_key for r in rows],
                       version=before.version)
    if not list(root.glob("*.json")):
        raise RuntimeError(f"no earlier copy written under {root}")
    log(f"earlier copy: version {before.version} of {ctx.version}, {len(rows)} edges")
    return root.parent


earlier_root = earlier_copy() if earlier_cache else None


def drop_page_cache() -> None:
    """Write back dirty pages, then drop the clean ones (``/proc/sys/vm/drop_caches`` = 3)."""
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError as exc:
        sys.exit(f"--drop-caches needs Linux and root: {exc}")


def cli(name, *args, profile: str = "", cold: bool = False):
    e = {**env, "PYTHONPATH": variants[name]}
    if name in fresh_cache:
        e["KGR_CACHE_DIR"] = tempfile.mkdtemp(prefix="kgr-cache-")
    if name in earlier_cache:
        e["KGR_CACHE_DIR"] = tempfile.mkdtemp(prefix="kgr-cache-")
        shutil.copytree(earlier_root, e["KGR_CACHE_DIR"], dirs_exist_ok=True)
    if cold:
        drop_page_cache()
    t0 = time.perf_counter()
    prof = ["-m", "cProfile", "-o", profile] if profile else []
    p = subprocess.run([sys.executable, *prof, "-m", "kgr.cli", *args, "--json"], env=e, capture_output=True, text=True, cwd=tmp)
    wall = time.perf_counter() - t0
    if p.returncode:
        raise RuntimeError(p.stderr[-3000:])
    if p.stderr.strip():
        log("STDERR: " + p.stderr[-500:])
    return wall, json.loads(p.stdout)

res = {k: [] for k in variants}
names = list(variants)
for trial in range(a.trials):
    order = names if trial % 2 == 0 else names[::-1]
    for name in order:
        stage(graph, [bp._assert(t, s) for t in fresh[:a.cands] for s in ("s1", "s2")], schema=sch)
        wall, rep = cli(name, "promote", "--schema", str(schema),
                        profile=f"{a.profile}.{name}.{trial}.prof" if a.profile else "", cold=a.drop_caches)
        wn, noop = cli(name, "promote", "--schema", str(schema))
        r = {"wall": wall, "cands": rep["candidates"], "per_s": rep["candidates"] / wall, "timings": rep["timings"],
             "promoted": rep["promoted"], "held": rep.get("held"), "hash": rep.get("hash"),
             "noop_wall": wn, "noop_settle": sum(noop.get("timings", {}).values()), "noop_version": noop.get("version"),
             "load": os.getloadavg()[0]}
        res[name].append(r)
        log(f"{trial} {name}: {r['cands']} in {wall:.2f}s = {r['per_s']:.0f}/s {r['timings']} promoted {r['promoted']} "
            f"hash {str(r['hash'])[:12]} noop {wn:.2f}s (settle {r['noop_settle']:.3f}) load {r['load']:.1f}")
        forget(graph, sources=["s1", "s2"])
for name in (names if a.trials else []):
    w = [r["wall"] for r in res[name]]
    print(f"{name}: median {statistics.median(w):.2f} s = {statistics.median(r['per_s'] for r in res[name]):.0f} cand/s; "
          f"noop median {statistics.median(r['noop_wall'] for r in res[name]):.2f} s; hashes {set(r['hash'] for r in res[name])}")
if len(names) == 2 and a.trials:
    print("ratio new/old wall (median of per-trial pairs):",
          statistics.median(n["wall"] / o["wall"] for o, n in zip(res[names[0]], res[names[1]])))
if a.out:
    with open(a.out, "w", encoding="utf-8") as fh:
        json.dump(res, fh, indent=1)
graph.close()
