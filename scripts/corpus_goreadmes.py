"""A corpus of real READMEs: the top-level README of third-party Go modules, one file per module.

    python scripts/corpus_goreadmes.py OUT_DIR [--count 300] [--seed 1129] [--modules FILE]

The module list is ``--modules`` (default ``/work/.library/env/packages/go-partial.tsv``): a
tab-separated file whose first line is a header, column 1 a module path and column 2 the newest
version known to be served; rows whose column 2 is not a version (``not-served``, ``all-failed``,
``untested``, ...) are skipped. The modules are shuffled with ``--seed`` and downloaded, four at a
time, with ``go mod download -json MODULE@VERSION`` (``/usr/local/go/bin/go``, the Go module proxy)
into a throw-away module cache under ``OUT_DIR/.cache``; a download that fails or takes more than
60 s is skipped. From each module's root the first of README.md, README.markdown, README.rst,
README.txt, README (case-insensitive) is read; one under 400 characters is skipped, a longer one
is cut to its first 40,000 characters at a line boundary and written to
``OUT_DIR/<module path, '/' -> '__'>.md`` (``.rst`` / ``.txt`` for those READMEs; a bare README
gives ``.txt``) until ``--count`` READMEs are kept. ``OUT_DIR/SOURCES.txt`` lists, per README, the
module, version, file name, size in characters and the module's licence file name (``-`` if none).

Licences: each README stays under its module's own licence (named in SOURCES.txt; licence texts
are not copied). The texts stay on the machine that runs this, not in the repository. The module
cache is removed at the end, so OUT_DIR holds only the READMEs and SOURCES.txt.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

GO = "/usr/local/go/bin/go"
MODULES = "/work/.library/env/packages/go-partial.tsv"
README_NAMES = ["readme.md", "readme.markdown", "readme.rst", "readme.txt", "readme"]
EXTENSIONS = {"readme.md": ".md", "readme.markdown": ".md", "readme.rst": ".rst",
              "readme.txt": ".txt", "readme": ".txt"}
LICENCE_PREFIXES = ("license", "licence", "copying", "unlicense")
MIN_CHARS, MAX_CHARS, TIMEOUT, WORKERS = 400, 40_000, 60, 4


def read_modules(path: str) -> list[tuple[str, str]]:
    rows = Path(path).read_text(encoding="utf-8").splitlines()[1:]
    mods = []
    for row in rows:
        cols = row.split("\t")
        if len(cols) >= 2 and cols[0].strip() and cols[1].strip().startswith("v"):
            mods.append((cols[0].strip(), cols[1].strip().split()[0]))
    return mods


def remove_tree(path: Path) -> None:
    """Module cache files are read-only: make them writable, then delete."""
    if not path.exists():
        return
    subprocess.run(["chmod", "-R", "u+w", str(path)], check=False)
    shutil.rmtree(path, ignore_errors=True)


def fetch(module: str, version: str, env: dict, cwd: Path) -> dict:
    """Download one module; return its README text and licence name, or why it was skipped."""
    result = {"module": module, "version": version}
    try:
        proc = subprocess.run([GO, "mod", "download", "-json", f"{module}@{version}"], cwd=cwd,
                              env=env, capture_output=True, text=True, timeout=TIMEOUT)
        info = json.loads(proc.stdout or "{}")
    except (subprocess.TimeoutExpired, ValueError) as exc:
        return {**result, "status": "failed", "why": type(exc).__name__}
    if proc.returncode != 0 or not info.get("Dir"):
        why = info.get("Error") or proc.stderr.strip()[-200:] or f"exit {proc.returncode}"
        return {**result, "status": "failed", "why": why}
    root = Path(info["Dir"])
    try:
        names = {p.name.lower(): p.name for p in root.iterdir() if p.is_file()}
    except OSError as exc:
        return {**result, "status": "failed", "why": str(exc)}
    result["licence"] = next((names[k] for k in sorted(names) if k.startswith(LICENCE_PREFIXES)), "-")
    key = next((k for k in README_NAMES if k in names), None)
    if key is None:
        result.update(status="no-readme")
    else:
        text = (root / names[key]).read_text(encoding="utf-8", errors="replace")
        if len(text) < MIN_CHARS:
            result.update(status="short")
        else:
            if len(text) > MAX_CHARS:
                text = text[:MAX_CHARS].rsplit("\n", 1)[0] + "\n"
            result.update(status="kept", text=text, ext=EXTENSIONS[key])
    remove_tree(root)  # keep the cache small while the run goes on
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1129)
    parser.add_argument("--modules", default=MODULES)
    args = parser.parse_args(argv)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cache = out / ".cache"
    cache.mkdir(exist_ok=True)
    env = {**os.environ, "GOMODCACHE": str(cache / "mod"), "GOPATH": str(cache / "gopath"),
           "GOCACHE": str(cache / "build"), "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"}
    modules = read_modules(args.modules)
    random.Random(args.seed).shuffle(modules)
    kept: list[dict] = []
    counts = {"tried": 0, "failed": 0, "no-readme": 0, "short": 0, "kept": 0}
    try:
        with ThreadPoolExecutor(WORKERS) as pool:
            # Batches keep the choice deterministic: results are taken in shuffled order.
            for start in range(0, len(modules), WORKERS * 2):
                if len(kept) >= args.count:
                    break
                batch = modules[start:start + WORKERS * 2]
                for res in pool.map(lambda m: fetch(m[0], m[1], env, cache), batch):
                    if len(kept) >= args.count:
                        break
                    counts["tried"] += 1
                    counts[res["status"]] += 1
                    if res["status"] == "failed":
                        print(f"failed: {res['module']}@{res['version']}: {res['why']}", file=sys.stderr)
                    elif res["status"] == "kept":
                        res["file"] = res["module"].replace("/", "__") + res["ext"]
                        (out / res["file"]).write_text(res["text"], encoding="utf-8")
                        kept.append(res)
    finally:
        remove_tree(cache)
    with open(out / "SOURCES.txt", "w", encoding="utf-8") as fh:
        fh.write("module\tversion\tfile\tchars\tlicence_file\n")
        for res in kept:
            fh.write(f"{res['module']}\t{res['version']}\t{res['file']}\t{len(res['text'])}\t{res['licence']}\n")
    print(" ".join(f"{k}={v}" for k, v in counts.items()), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
