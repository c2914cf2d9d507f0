"""The Browser guide (``kgr-guide.html.j2``, queries and style inlined) and the files ``kgr browser
setup`` writes: guide, style, saved queries and the Favorites zip."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

import jinja2

from kgr.browser.queries import saved_queries, saved_queries_zip
from kgr.browser.style import GRASS_FILE, grass, style_command, styled_entity_types
from kgr.errors import KgrValidationError

__all__ = ["render_guide", "bundle", "write_bundle", "GUIDE_FILE", "ZIP_FILE", "QUERIES_DIR"]

GUIDE_FILE = "kgr-guide.html"
ZIP_FILE = "kgr-saved-queries.zip"
QUERIES_DIR = "queries"


@functools.cache
def _html_env() -> jinja2.Environment:
    # HTML, not Cypher: a separate environment with autoescaping (kgr.store.cypher renders Cypher).
    return jinja2.Environment(
        loader=jinja2.PackageLoader("kgr.cypher", "browser"),
        undefined=jinja2.StrictUndefined,
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render_guide(entity_types: Sequence[str] = ()) -> str:
    """The Browser guide as HTML (queries and style inlined; no server address inside)."""
    style = grass(entity_types)
    return _html_env().get_template("kgr-guide.html.j2").render(
        queries=saved_queries(), style_exec=style_command(style).removeprefix(":"),
        entity_types=styled_entity_types(style),
    )


def bundle(entity_types: Sequence[str] = ()) -> dict[str, bytes]:
    """Every file ``kgr browser setup`` writes, relative path -> content."""
    files = {GUIDE_FILE: render_guide(entity_types).encode(), GRASS_FILE: grass(entity_types).encode(),
             ZIP_FILE: saved_queries_zip()}
    for q in saved_queries():
        files[f"{QUERIES_DIR}/{q.filename}"] = q.text.encode()
    return files


def write_bundle(directory: Path, *, entity_types: Sequence[str] = (), overwrite: bool = False) -> list[Path]:
    """Write the guide, the style, the queries and the Favorites zip into ``directory``.

    Files that exist with the same content are left alone; files that differ are only replaced
    with ``overwrite`` (they may hold the user's edits).

    Raises
    ------
    KgrValidationError
        ``directory`` is a file, or a file differs and ``overwrite`` is false.
    """
    directory = Path(directory).expanduser()
    if directory.exists() and not directory.is_dir():
        raise KgrValidationError(f"{directory} is not a directory", field="directory")
    files = bundle(entity_types)
    changed = [rel for rel, data in files.items()
               if (directory / rel).exists() and (directory / rel).read_bytes() != data]
    if changed and not overwrite:
        raise KgrValidationError(f"{directory / changed[0]} exists with other content "
                                 f"({len(changed)} such file{'s' if len(changed) > 1 else ''}); "
                                 f"use --force to replace", field="directory")
    written = []
    for rel, data in files.items():
        path = directory / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)
        written.append(path)
    return written
