"""A corpus of real software descriptions: Debian's AppStream metadata, one text file per package.

    python scripts/corpus_appstream.py OUT_DIR [--count 200] [--seed 1128] [--min-chars 400]
    kgr ingest OUT_DIR --schema tests/data/extract/schema.json

Debian's package lists ship the AppStream catalogue of the archive's applications
(``/var/lib/apt/lists/*_dep11_Components-*.yml.gz``, refreshed by ``apt-get update``): per component
its name, a one-line summary and a description written by the upstream project, in HTML paragraphs
and lists. This script reads the English (``C``) texts, turns the markup into plain text (a paragraph
per ``<p>``, ``- `` per list item), shuffles the components with ``--seed`` and writes the first
``--count`` packages whose description has at least ``--min-chars`` characters as
``OUT_DIR/<package>.txt``: the name, the summary and the description, blank lines between them (the
file name is the document's title, as for any file `kgr ingest` reads).

Used for the eleventh blind census of the offline extractor (docs/extract.md). The texts are the
upstream projects' own descriptions as the Debian archive distributes them; they stay on the machine
that runs this, not in the repository.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import html
import random
import re
import sys
from pathlib import Path

import yaml

LISTS = "/var/lib/apt/lists/*_dep11_Components-*.yml.gz"


def plain(markup: str) -> str:
    """AppStream description markup (``<p>``, ``<ul><li>``, ``<em>`` …) as plain text."""
    text = re.sub(r"<li>", "\n- ", markup)
    text = re.sub(r"</p>", "\n\n", text)
    text = html.unescape(re.sub(r"<[^>]+>", "", text))
    text = "\n".join(line.strip() for line in text.splitlines())
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def components(paths: list[str]) -> list[tuple[str, str, str, str]]:
    """``(package, name, summary, description)`` of every component with an English name and description."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    out = []
    for path in paths:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for i, doc in enumerate(yaml.load_all(fh, Loader=loader)):
                if i == 0 or not doc:  # the first document is the file's header
                    continue
                desc, name = (doc.get("Description") or {}).get("C"), (doc.get("Name") or {}).get("C")
                if desc and name and doc.get("Package"):
                    out.append((doc["Package"], name, (doc.get("Summary") or {}).get("C", ""), desc))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1128)
    ap.add_argument("--min-chars", type=int, default=400)
    ap.add_argument("--lists", default=LISTS, help="glob of the DEP-11 component files")
    args = ap.parse_args()
    paths = sorted(glob.glob(args.lists))
    if not paths:
        print(f"no AppStream metadata at {args.lists} (run `apt-get update`)", file=sys.stderr)
        return 2
    comps = components(paths)
    random.Random(args.seed).shuffle(comps)
    args.out.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    for package, name, summary, desc in comps:
        text = plain(desc)
        if package in seen or len(text) < args.min_chars:
            continue
        seen.add(package)
        (args.out / f"{package}.txt").write_text(f"{name}\n\n{summary}\n\n{text}\n", encoding="utf-8")
        if len(seen) == args.count:
            break
    print(f"{len(seen)} documents from {len(comps)} components in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
