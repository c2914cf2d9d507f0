"""The saved queries (``cypher/browser/NN_<name>.cypher``): parsed, looked up, run, and packed as
Browser Favorites. File format in :mod:`kgr.browser`."""

from __future__ import annotations

import functools
import importlib.resources
import io
import re
import zipfile
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kgr.errors import KgrNotFound, KgrValidationError
from kgr.model.canonical import IDENTIFIER_RE
from kgr.store.connection import Graph
from kgr.store.inspect import run_saved_query

__all__ = ["SavedQuery", "saved_queries", "saved_query", "run_query", "entity_types_in", "favorite_text",
           "saved_queries_zip", "browser_dir", "FAVORITES_FOLDER"]

#: Favorites folder the zip's queries land in.
FAVORITES_FOLDER = "kgr"

_PARAM_RE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def browser_dir() -> Any:
    return importlib.resources.files("kgr.cypher") / "browser"


class SavedQuery(BaseModel):
    """One saved query, ``cypher/browser/NN_<name>.cypher``."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    name: str = Field(description="file name without the number prefix and suffix: 'edge_provenance'")
    filename: str = Field(description="'04_edge_provenance.cypher'")
    title: str
    about: str = ""
    text: str = Field(description="the whole file: header comments and the statement (pasteable)")
    body: str = Field(description="the statement without the header comments")
    params: list[str] = Field(default_factory=list, description="$parameters the statement uses, in order")
    param_commands: list[str] = Field(default_factory=list, description="':param name => example' lines")


def _parse_query(filename: str, text: str) -> SavedQuery:
    lines = text.splitlines()
    header: list[str] = []
    for line in lines:
        if not line.startswith("//"):
            break
        header.append(line[2:].strip())
    body = "\n".join(lines[len(header):]).strip()
    fields: dict[str, str] = {}
    commands: list[str] = []
    for item in header:
        if item.startswith(":param"):
            commands.append(item)
        else:
            key, sep, value = item.partition(":")
            if sep and key.strip() in ("title", "about"):
                fields[key.strip()] = value.strip()
    if "title" not in fields or not body:
        raise KgrValidationError(f"{filename} must open with '// title: ...' and hold a statement", field="browser")
    params = list(dict.fromkeys(_PARAM_RE.findall(body)))
    stem = filename.removesuffix(".cypher")
    return SavedQuery(name=re.sub(r"^[0-9]+_", "", stem), filename=filename, title=fields["title"],
                      about=fields.get("about", ""), text=text if text.endswith("\n") else text + "\n",
                      body=body, params=params, param_commands=commands)


@functools.cache
def saved_queries() -> tuple[SavedQuery, ...]:
    """The shipped saved queries, in file order.

    >>> [q.name for q in saved_queries()][:2]
    ['entity_types', 'pending_vs_promoted']
    """
    folder = browser_dir()
    files = sorted(p.name for p in folder.iterdir() if p.name.endswith(".cypher"))
    return tuple(_parse_query(f, (folder / f).read_text(encoding="utf-8")) for f in files)


def saved_query(name: str) -> SavedQuery:
    """A saved query by name (``edge_provenance``), file stem (``04_edge_provenance``) or number (``4``).

    Raises
    ------
    KgrNotFound
        Naming the queries that exist.
    """
    for q in saved_queries():
        stem = q.filename.removesuffix(".cypher")
        if name in (q.name, stem, q.filename) or (name.isdigit() and int(stem.split("_", 1)[0]) == int(name)):
            return q
    known = ", ".join(q.name for q in saved_queries())
    raise KgrNotFound(f"no saved query named {name!r} (known: {known})")


def run_query(graph: Graph, name: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Run a saved query (read routing, values as parameters) and return its rows as dicts.

    Raises
    ------
    KgrValidationError
        A parameter the query uses is missing.
    """
    q = saved_query(name)
    given = dict(params or {})
    missing = [p for p in q.params if p not in given]
    if missing:
        raise KgrValidationError(f"saved query {q.name} needs ${', $'.join(missing)}", field="params")
    return run_saved_query(graph, q.text, given)


def favorite_text(query: SavedQuery) -> str:
    """The query as a Browser favorite: Favorites are named by their first line and sorted by name,
    so ``// title: X`` becomes ``// 01 X`` (the rest of the file is unchanged).

    >>> favorite_text(saved_query("1")).splitlines()[0]
    '// 01 Entity types: how many entities of each type'
    """
    number = query.filename.split("_", 1)[0]
    return f"// {number} {query.title}\n" + query.text.split("\n", 1)[1]


def saved_queries_zip() -> bytes:
    """A zip of the saved queries under ``kgr/``: dropped on Neo4j Browser, it adds them to Favorites
    (folder ``kgr``, in file order; see :func:`favorite_text`)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for q in saved_queries():
            info = zipfile.ZipInfo(f"{FAVORITES_FOLDER}/{q.filename}", date_time=(2024, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, favorite_text(q))
    return buf.getvalue()


def entity_types_in(graph: Graph) -> list[str]:
    """Entity types present in the graph (from the ``entity_types`` saved query), most frequent first."""
    return [r["type"] for r in run_query(graph, "entity_types") if r["type"] and IDENTIFIER_RE.fullmatch(r["type"])]
