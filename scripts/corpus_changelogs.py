"""A corpus of real changelogs: the Debian changelogs installed on this machine, one file per package.

    python scripts/corpus_changelogs.py OUT_DIR [--count 300] [--seed 1128] [--max-chars 20000]
    kgr ingest OUT_DIR --schema tests/data/extract/schema.json

Every installed package ships ``/usr/share/doc/<package>/changelog.Debian.gz``: its packagers'
entries, newest first, each a header line (``zstd (1.5.4+dfsg2-5) unstable; urgency=medium``),
starred items written by people (``* New upstream release.``, ``* Drop patch fixing …
(Closes: #1012345)``) and a signature line (``-- Name <address>  date``). This script shuffles the
packages with ``--seed`` and reads the first ``--count`` changelogs of at least 1,000 characters,
one per *source* package (the binary packages of one source ship the same changelog; the source's
name opens its first line) and none of a source package that a committed sample of
``tests/data/extract/`` quoted. Each keeps its newest ``--max-chars`` characters (whole entries) in
``OUT_DIR/<source package>.txt`` (the file name is the document's title, as for any file
``kgr ingest`` reads: the changelog's subject is its source package).

Used for the thirteenth blind census of the offline extractor (docs/extract.md). The texts stay on
the machine that runs this, not in the repository.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import random
import re
import sys
from pathlib import Path

CHANGELOGS = "/usr/share/doc/*/changelog.Debian.gz"
ENTRY_END = re.compile(r"^ -- .*$", re.MULTILINE)
SOURCE = re.compile(r"^([a-z0-9][a-z0-9+.-]+) \(")
SAMPLES = Path(__file__).resolve().parent.parent / "tests" / "data" / "extract"
DOC_DIR = re.compile(r"/usr/share/doc/([^/\s]+)/")


def read_changelog(path: str) -> str:
    return gzip.decompress(Path(path).read_bytes()).decode("utf-8", errors="replace")


def source_package(text: str) -> str | None:
    """The source package a changelog belongs to (its first line: ``name (version) suite; …``)."""
    m = SOURCE.match(text)
    return m.group(1) if m else None


def quoted_sources() -> set[str]:
    """Source packages whose changelog (under any binary package's directory) a committed sample quoted."""
    dirs = {m.group(1) for f in SAMPLES.glob("sample*.jsonl") for line in f.open(encoding="utf-8")
            for m in [DOC_DIR.search(json.loads(line).get("source") or "")] if m}
    out = set(dirs)
    for d in dirs:
        for path in glob.glob(f"/usr/share/doc/{d}/changelog.Debian.gz"):
            out.add(source_package(read_changelog(path)) or d)
    return out


def newest_entries(text: str, max_chars: int) -> str:
    """The changelog's newest entries whose text fits in ``max_chars`` (at least the first one)."""
    cut = 0
    for m in ENTRY_END.finditer(text):
        if cut and m.end() > max_chars:
            break
        cut = m.end()
    return (text[:cut] if cut else text[:max_chars]).strip() + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1128)
    ap.add_argument("--max-chars", type=int, default=20_000)
    a = ap.parse_args()
    paths = sorted(glob.glob(CHANGELOGS))
    if not paths:
        print(f"no changelog matches {CHANGELOGS}", file=sys.stderr)
        return 1
    random.Random(a.seed).shuffle(paths)
    a.out.mkdir(parents=True, exist_ok=True)
    taken = quoted_sources()
    left_out = len(taken)
    written = 0
    for path in paths:
        if written >= a.count:
            break
        text = read_changelog(path)
        source = source_package(text)
        if len(text) < 1_000 or source is None or source in taken:
            continue
        taken.add(source)
        (a.out / f"{source}.txt").write_text(newest_entries(text, a.max_chars), encoding="utf-8")
        written += 1
    print(f"{written} changelogs in {a.out} ({left_out} packages or doc directories quoted by the samples left out)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
