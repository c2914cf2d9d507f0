"""A corpus of real READMEs: the top-level README of Rust crates from crates.io, one file per crate.

    python scripts/corpus_cratereadmes.py OUT_DIR [--count 300] [--seed 1129]

Only crates.io's static hosts are used (not its API). Names come from a breadth-first walk of the
sparse index (https://index.crates.io) from 20 well-known seeds, following the normal and build
dependencies (``package`` for renamed ones; other registries skipped) of each crate's newest
non-yanked version (semver order; a pre-release only if there is no release) until the queue is
empty or 3,000 names are collected. The non-seed names are sorted, shuffled with ``--seed`` and
tried in order: static.crates.io/crates/NAME/NAME-VERSION.crate of the newest version is fetched
and its README read (Cargo.toml's ``readme`` path if set, else the first top-level README.md,
.markdown, .rst, .txt or bare README, case-insensitive). READMEs under 400 characters are skipped,
longer ones cut to 40,000 characters at a line boundary and written to ``OUT_DIR/NAME.md`` (.rst /
.txt kept) until ``--count`` are kept. ``OUT_DIR/SOURCES.txt`` lists (tab-separated) per README the
crate, version, file, size in characters and Cargo.toml's ``license`` (``-`` if none). At most 4
requests at a time, 30 s timeout, a "kgr-corpus-script" User-Agent; failures are counted, skipped.

Licences: each README stays under its crate's own licence (the SPDX expression in SOURCES.txt;
licence texts are not copied). The texts stay on the machine that runs this, not in the repository.
"""

import argparse
import io
import json
import posixpath
import random
import sys
import tarfile
import tomllib
import urllib.request
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

INDEX = "https://index.crates.io/"
STATIC = "https://static.crates.io/crates/"
UA = "kgr-corpus-script (research census)"
SEEDS = ("serde tokio clap rand regex reqwest hyper anyhow thiserror log syn chrono itertools "
         "rayon image sqlx axum tracing bytes url").split()
MAX_NAMES = 3000
README_NAMES = ["readme.md", "readme.markdown", "readme.rst", "readme.txt", "readme"]
MIN_CHARS, MAX_CHARS = 400, 40_000


def get(url: str) -> bytes:
    req = urllib.request.Request(url, headers={"User-Agent": UA})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.read()


def index_path(name: str) -> str:
    n = name.lower()
    return (f"{len(n)}/{n}" if len(n) <= 2 else f"3/{n[0]}/{n}" if len(n) == 3
            else f"{n[:2]}/{n[2:4]}/{n}")


def semver_key(vers: str) -> tuple | None:
    """Sort key in semver order (releases above their pre-releases), None if unparsable."""
    core, _, pre = vers.split("+")[0].partition("-")
    if not all(x.isdigit() for x in core.split(".")):
        return None
    pre_key = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split("."))
    return tuple(int(x) for x in core.split(".")) + (not pre, pre_key if pre else ())


def newest(name: str) -> dict | None:
    """Index entry of the newest non-yanked version (a release if any), or None on failure."""
    try:
        lines = get(INDEX + index_path(name)).decode("utf-8").splitlines()
        keyed = [(k, e) for e in (json.loads(x) for x in lines if x.strip())
                 if not e.get("yanked") and (k := semver_key(e["vers"])) is not None]
    except Exception:
        return None
    pool = [ke for ke in keyed if ke[0][-2]] or keyed
    return max(pool, key=lambda ke: ke[0])[1] if pool else None


def walk() -> tuple[list[str], dict[str, dict | None], int]:
    """Breadth-first walk of the index from SEEDS; returns names, their cached entries, failures."""
    names, queue, cache, failed = dict.fromkeys(SEEDS), deque(SEEDS), {}, 0
    with ThreadPoolExecutor(4) as pool:
        while queue and len(names) < MAX_NAMES:
            batch = [queue.popleft() for _ in range(min(16, len(queue)))]
            for name, entry in zip(batch, pool.map(newest, batch)):
                cache[name] = entry
                if entry is None:
                    failed += 1
                    continue
                for dep in entry.get("deps", []):
                    if dep.get("kind") not in (None, "normal", "build") or dep.get("registry"):
                        continue
                    dname = (dep.get("package") or dep["name"]).lower()
                    if dname not in names and len(names) < MAX_NAMES:
                        names[dname] = None
                        queue.append(dname)
    return list(names), cache, failed


def readme_of(entry: dict) -> tuple[str, str, str] | None:
    """(README file name, text, licence) from the crate archive, or None."""
    real, vers = entry["name"], entry["vers"]
    data = get(f"{STATIC}{real}/{real}-{vers}.crate")
    top = f"{real}-{vers}/"
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        files = {m.name: m for m in tar.getmembers() if m.isfile()}
        pkg, wanted = {}, None
        if top + "Cargo.toml" in files:
            cargo = tar.extractfile(files[top + "Cargo.toml"]).read().decode("utf-8")
            pkg = tomllib.loads(cargo).get("package", {})
            if isinstance(pkg.get("readme"), str):
                wanted = posixpath.normpath(top + pkg["readme"])
        licence = pkg["license"] if isinstance(pkg.get("license"), str) else "-"
        if wanted not in files:
            lower = {k[len(top):].lower(): k for k in files
                     if k.startswith(top) and "/" not in k[len(top):]}
            wanted = next((lower[r] for r in README_NAMES if r in lower), None)
        if wanted is None:
            return None
        text = tar.extractfile(files[wanted]).read().decode("utf-8", errors="replace")
        return posixpath.basename(wanted), text, licence


def fetch(name: str, cache: dict) -> tuple[str, object]:
    """("kept", (file name, text, SOURCES row)) or (reason, error message or None)."""
    try:
        entry = cache[name] if name in cache else newest(name)
        found = readme_of(entry) if entry else None
    except Exception as exc:
        return "failed", f"{type(exc).__name__}: {exc}"
    if entry is None:
        return "failed", "no usable index entry"
    if found is None or len(found[1]) < MIN_CHARS:
        return ("noreadme" if found is None else "short"), None
    fname, text, licence = found
    if len(text) > MAX_CHARS:
        cut = text.rfind("\n", 0, MAX_CHARS)
        text = text[:cut + 1] if cut > 0 else text[:MAX_CHARS]
    ext = posixpath.splitext(fname.lower())[1]
    out = f"{name}{ext if ext in ('.rst', '.txt') else '.md'}"
    return "kept", (out, text, f"{entry['name']}\t{entry['vers']}\t{out}\t{len(text)}\t{licence}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1129)
    args = ap.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    names, cache, walk_failed = walk()
    print(f"walk: {len(names)} names, {walk_failed} index reads failed", file=sys.stderr)
    order = sorted(set(names) - set(SEEDS))
    random.Random(args.seed).shuffle(order)
    stats, rows = {"tried": 0, "failed": 0, "noreadme": 0, "short": 0, "kept": 0}, []
    with ThreadPoolExecutor(4) as pool:
        for start in range(0, len(order), 8):
            batch = order[start:start + 8]
            for name, (status, result) in zip(batch, pool.map(lambda n: fetch(n, cache), batch)):
                if stats["kept"] >= args.count:
                    break
                stats["tried"] += 1
                stats[status] += 1
                if status == "kept":
                    (args.out_dir / result[0]).write_text(result[1], encoding="utf-8")
                    rows.append(result[2] + "\n")
                elif result:
                    print(f"  {name}: {result}", file=sys.stderr)
            if stats["kept"] >= args.count:
                break
    (args.out_dir / "SOURCES.txt").write_text(
        "crate\tversion\tfile\tchars\tlicense\n" + "".join(rows), encoding="utf-8")
    print(" ".join(f"{k}={v}" for k, v in stats.items()), file=sys.stderr)


if __name__ == "__main__":
    main()
