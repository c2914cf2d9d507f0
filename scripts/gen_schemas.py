#!/usr/bin/env python3
"""Write the JSON Schemas of kgr's wire models into ``schemas/`` (see :mod:`kgr.model.jsonschema`).

Usage::

    python scripts/gen_schemas.py            # rewrite schemas/*.schema.json, remove stale ones
    python scripts/gen_schemas.py --check    # exit 1 listing the files that would change

Only ``*.schema.json`` files are managed; anything else in ``schemas/`` is left alone.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kgr.model.jsonschema import render_all

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_DIR = ROOT / "schemas"


def plan(directory: Path) -> tuple[dict[str, str], list[str]]:
    """Files to (re)write with their text, and stale schema files to remove."""
    wanted = render_all()
    changed = {}
    for name, text in wanted.items():
        path = directory / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            changed[name] = text
    stale = sorted(p.name for p in directory.glob("*.schema.json") if p.name not in wanted) if directory.exists() else []
    return changed, stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report drift without writing")
    parser.add_argument("--dir", type=Path, default=SCHEMA_DIR, help="target directory (default: schemas/)")
    args = parser.parse_args(argv)
    changed, stale = plan(args.dir)
    if args.check:
        for name in changed:
            print(f"would write {name}", file=sys.stderr)
        for name in stale:
            print(f"would remove {name}", file=sys.stderr)
        return 1 if changed or stale else 0
    args.dir.mkdir(parents=True, exist_ok=True)
    for name, text in changed.items():
        (args.dir / name).write_text(text, encoding="utf-8")
        print(f"wrote {name}", file=sys.stderr)
    for name in stale:
        (args.dir / name).unlink()
        print(f"removed {name}", file=sys.stderr)
    print(f"{len(render_all())} schemas in {args.dir} ({len(changed)} written, {len(stale)} removed)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
