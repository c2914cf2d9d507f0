"""Inspecting kgr's graph in Neo4j Browser: saved queries, a guide, a GraSS style and the Browser URL.

Everything a person needs to look at the graph in Neo4j Browser (5.x, as bundled with the managed
Neo4j) ships in ``cypher/browser/`` (the package ``kgr.cypher``):

- **Saved queries** ``NN_<name>.cypher``: plain Cypher a user can paste into the Browser editor. Each
  opens with a header of ``//`` comments: ``// title: ...``, ``// about: ...`` and, for every
  ``$param`` it uses, a ``// :param name => <example>`` line (the Browser command that sets it).
  Browser names a favorite by its first line and sorts by name, so the Favorites zip rewrites that
  line to ``// 01 <title>`` (:func:`favorite_text`).
- **The style** ``kgr.grass``: entity types coloured, captions = ``name``, promoted relationships
  labelled by type, ``PENDING_REL`` thin and light grey with the proposed type and a question mark.
  GraSS (as Browser parses it) has no comments and no dashed lines, and a value may not contain ``:``.
- **The guide** ``kgr-guide.html.j2``: a Browser guide (one ``<slide>`` per page) rendered with the
  queries and the style inlined, so one click applies the style and one click runs a query.

How the pieces reach the Browser (what Neo4j Browser 5.24 supports, read from its source):

- URL parameters: ``dbms`` (or ``connectURL``) is the Bolt URL to connect to (a ``user@`` part
  pre-fills the user name; the password never goes into a URL), ``db`` the database,
  ``preselectAuthMethod`` (``NO_AUTH``, ``NATIVE``, ``SSO``) the login form's choice, and
  ``cmd=play&arg=<url>`` plays a guide once the page has loaded.
- ``:style <GraSS text>`` applies a style; ``:style <url>`` fetches one; dropping a ``.grass`` file
  on the window applies it; dropping a ``.zip`` adds the ``.cypher`` files in it to Favorites
  (folder = directory inside the zip).
- ``:play <url>`` / ``:guide <url>`` fetch a guide **from the web page**, so the guide must be served
  over HTTP with CORS headers from a host on the server's ``browser.remote_content_hostname_whitelist``
  (default ``guides.neo4j.com,localhost``). The Browser bundled in the Neo4j server cannot serve
  extra files, so :class:`GuideServer` (``kgr browser serve``) serves them on
  ``http://localhost:<port>``, which the default allowlist already accepts (Browser sends
  ``pragma``, ``cache-control`` and tracing headers, so the CORS preflight must allow them).
- Browser's setting *Connect result nodes* (``autoComplete``, on by default) also draws every other
  relationship between returned nodes, retired promoted edges included; the guide offers
  ``:config autoComplete: false``.

Layering: this module sits beside the CLI; it reads package files, builds URLs and runs saved
queries through :class:`~kgr.store.connection.Graph`'s driver (read routing, values as parameters).
"""

from __future__ import annotations

import functools
import importlib.resources
import io
import re
import threading
import zipfile
from collections.abc import Iterable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

import jinja2
from pydantic import BaseModel, ConfigDict, Field

from kgr.errors import KgrNotFound, KgrValidationError
from kgr.model.canonical import IDENTIFIER_RE, validate_identifier
from kgr.store.connection import Graph, Neo4jSettings
from kgr.store.inspect import run_saved_query

__all__ = [
    "SavedQuery",
    "saved_queries",
    "saved_query",
    "run_query",
    "grass",
    "style_command",
    "render_guide",
    "saved_queries_zip",
    "favorite_text",
    "bundle",
    "entity_types_in",
    "BrowserTarget",
    "browser_url",
    "browser_target",
    "write_bundle",
    "GuideServer",
    "GUIDE_FILE",
    "GRASS_FILE",
    "ZIP_FILE",
    "DEFAULT_GUIDE_PORT",
]

GUIDE_FILE = "kgr-guide.html"
GRASS_FILE = "kgr.grass"
ZIP_FILE = "kgr-saved-queries.zip"
QUERIES_DIR = "queries"
#: Default port of ``kgr browser serve`` (next to Neo4j's 7473/7474).
DEFAULT_GUIDE_PORT = 7478
#: Favorites folder the zip's queries land in.
FAVORITES_FOLDER = "kgr"

_PARAM_RE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_PARAM_CMD_RE = re.compile(r"^:param\s+([A-Za-z_][A-Za-z0-9_]*)\s*=>\s*\S")
_SELECTOR_RE = re.compile(r"^node\.([A-Za-z_][A-Za-z0-9_]*)\s*\{", re.MULTILINE)
#: Labels of kgr's own bookkeeping nodes (styled too, but not entity types).
_NON_ENTITY_LABELS = frozenset({"Entity", "Document", "Chunk", "Vote", "Decision", "Version", "Snapshot", "KgrState",
                                "SchemaProposal"})
#: Colours for entity types the shipped style does not name (Browser's own palette, in order).
_PALETTE = (
    ("#F16667", "#EB2728", "#FFFFFF"), ("#FFC454", "#D7A013", "#2A2C34"), ("#8DCC93", "#5DB665", "#2A2C34"),
    ("#C990C0", "#B261A5", "#FFFFFF"), ("#F79767", "#F36924", "#FFFFFF"), ("#57C7E3", "#23B3D7", "#2A2C34"),
    ("#D9C8AE", "#C0A378", "#2A2C34"), ("#ECB5C9", "#DA7298", "#2A2C34"), ("#4C8EDA", "#2870C2", "#FFFFFF"),
    ("#6DCE9E", "#3FBB7E", "#2A2C34"), ("#DA7194", "#CC3C6C", "#FFFFFF"), ("#604A0E", "#423204", "#FFFFFF"),
)


# --------------------------------------------------------------------------------------------------
# package files


def _browser_dir() -> Any:
    return importlib.resources.files("kgr.cypher") / "browser"


class SavedQuery(BaseModel):
    """One saved query, ``cypher/browser/NN_<name>.cypher``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

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
    folder = _browser_dir()
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


# --------------------------------------------------------------------------------------------------
# style


@functools.cache
def _shipped_grass() -> str:
    return (_browser_dir() / GRASS_FILE).read_text(encoding="utf-8")


def grass(entity_types: Iterable[str] = ()) -> str:
    """kgr's GraSS style, plus a coloured rule for every entity type in ``entity_types`` it lacks.

    Types the shipped ``kgr.grass`` names keep their colours; others get colours from Browser's
    palette, in the order given (so the same schema always gives the same colours).

    >>> "node.Gene {" in grass(["Gene"]) and "node.Gene {" not in grass()
    True

    Raises
    ------
    KgrIdentifierError
        An entity type is not an identifier (it would break the style).
    """
    text = _shipped_grass()
    styled = set(_SELECTOR_RE.findall(text))
    extra = [validate_identifier(t, kind="label") for t in dict.fromkeys(entity_types) if t not in styled]
    rules = []
    for i, etype in enumerate(extra):
        color, border, caption = _PALETTE[i % len(_PALETTE)]
        rules.append(f"node.{etype} {{\n  color: {color};\n  border-color: {border};\n"
                     f"  text-color-internal: {caption};\n}}\n")
    return text if not rules else text.rstrip("\n") + "\n\n" + "\n".join(rules)


def style_command(grass_text: str | None = None) -> str:
    """The one-line Browser command that applies a style: ``:style node { ... } ...``.

    >>> style_command("node {\\n  color: #FFF;\\n}\\n")
    ':style node { color: #FFF; }'
    """
    return ":style " + " ".join((grass_text if grass_text is not None else grass()).split())


# --------------------------------------------------------------------------------------------------
# guide and files


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
        entity_types=sorted(set(_SELECTOR_RE.findall(style)) - _NON_ENTITY_LABELS),
    )


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


# --------------------------------------------------------------------------------------------------
# where the Browser is


class BrowserTarget(BaseModel):
    """Where Neo4j Browser is and what it should connect to (never a password)."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(description="the Browser URL with the connection filled in")
    browser: str = Field(description="the Browser page without parameters")
    bolt_uri: str
    database: str
    username: str | None = None
    auth: bool = Field(description="whether the server wants credentials")
    managed: bool = Field(description="kgr's managed local Neo4j (NEO4J_URI unset)")
    running: bool | None = Field(None, description="managed server running (None: not known)")
    guessed: bool = Field(False, description="the Browser address was derived from the Bolt URI")


def browser_url(browser: str, *, bolt_uri: str, database: str = "neo4j", username: str | None = None,
                auth: bool = False, play: str | None = None) -> str:
    """The Browser URL that connects to ``bolt_uri``/``database`` and optionally plays a guide.

    >>> browser_url("http://127.0.0.1:7474/browser/", bolt_uri="bolt://127.0.0.1:7687")
    'http://127.0.0.1:7474/browser/?dbms=bolt%3A%2F%2F127.0.0.1%3A7687&db=neo4j&preselectAuthMethod=NO_AUTH'
    """
    dbms = bolt_uri
    if auth and username:
        parts = urlsplit(bolt_uri)
        host = parts.netloc.rsplit("@", 1)[-1]
        dbms = urlunsplit((parts.scheme, f"{quote(username, safe='')}@{host}", parts.path, "", ""))
    query = {"dbms": dbms, "db": database, "preselectAuthMethod": "NATIVE" if auth else "NO_AUTH"}
    url = f"{browser}?{urlencode(query, quote_via=quote, safe='')}"
    if play:
        if "&" in play or "#" in play:  # Browser cuts cmd/arg values at & and # (after decoding)
            raise KgrValidationError(f"guide URL {play!r} may not contain '&' or '#'", field="play")
        url += f"&cmd=play&arg={quote(play, safe='')}"
    return url


def _guess_browser(bolt_uri: str) -> str:
    parts = urlsplit(bolt_uri)
    host = parts.hostname or "localhost"
    if host.endswith(".neo4j.io"):  # Aura serves no Browser itself; Neo4j hosts one
        return "https://browser.neo4j.io/"
    secure = parts.scheme.endswith("+s") or parts.scheme.endswith("+ssc")
    netloc = f"[{host}]" if ":" in host else host
    return f"{'https' if secure else 'http'}://{netloc}:{7473 if secure else 7474}/browser/"


def browser_target(settings: Neo4jSettings | None = None, *, http_url: str | None = None,
                   play: str | None = None) -> BrowserTarget:
    """Work out the Browser URL for the configured database (the environment by default).

    With ``NEO4J_URI`` unset this is kgr's managed Neo4j (auth off; its status says where it runs,
    nothing is started). Otherwise the Browser is assumed on the Bolt host at port 7474 (7473 for
    ``+s`` schemes) unless ``http_url`` (``http://host:port``) says where it is.
    """
    settings = settings or Neo4jSettings.from_env()
    base = None
    if http_url:
        if not re.match(r"^https?://[^/\s]+", http_url):
            raise KgrValidationError(f"must be an http(s) URL, got {http_url!r}", field="http_url")
        base = http_url.rstrip("/")
        base = base if base.endswith("/browser") else base + "/browser"
        base += "/"
    if settings.uri is None:
        from kgr.runtime import ManagedNeo4j

        status = ManagedNeo4j(quiet=True).status()
        browser = base or status.browser_url
        return BrowserTarget(url=browser_url(browser, bolt_uri=status.bolt_uri, database=settings.database,
                                             play=play),
                             browser=browser, bolt_uri=status.bolt_uri, database=settings.database,
                             auth=False, managed=True, running=status.running)
    auth = settings.password is not None
    browser = base or _guess_browser(settings.uri)
    return BrowserTarget(
        url=browser_url(browser, bolt_uri=settings.uri, database=settings.database,
                        username=settings.username if auth else None, auth=auth, play=play),
        browser=browser, bolt_uri=settings.uri, database=settings.database,
        username=settings.username if auth else None, auth=auth, managed=False, guessed=base is None,
    )


# --------------------------------------------------------------------------------------------------
# serving the guide


class GuideServer:
    """Serves the guide, the style and the queries to Neo4j Browser on ``http://localhost:<port>``.

    Browser fetches guides and styles from the web page with ``XMLHttpRequest``, so the files are
    served with CORS headers (any origin may read them; they hold nothing secret) and the server
    listens on 127.0.0.1 only. ``localhost`` is on Browser's default remote-content allowlist.

    Paths: ``/kgr-guide.html``, ``/kgr.grass``, ``/kgr-saved-queries.zip``, ``/queries/<file>``, ``/``.

    Examples
    --------
    >>> with GuideServer(port=0) as srv:  # doctest: +SKIP
    ...     print(srv.guide_url)
    http://localhost:41234/kgr-guide.html
    """

    def __init__(self, *, port: int = DEFAULT_GUIDE_PORT, entity_types: Sequence[str] = ()):
        if not 0 <= port <= 65535:
            raise KgrValidationError(f"must be a TCP port (0 = any free one), got {port}", field="port")
        self._files = bundle(entity_types)
        self._files["index.html"] = self._index().encode()
        try:
            self._httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        except OSError as exc:
            raise KgrValidationError(f"cannot serve the guide on 127.0.0.1:{port} ({exc.strerror or exc}); "
                                     f"choose another port with --port", field="port") from None
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://localhost:{self.port}"

    @property
    def guide_url(self) -> str:
        return f"{self.url}/{GUIDE_FILE}"

    @property
    def grass_url(self) -> str:
        return f"{self.url}/{GRASS_FILE}"

    def _index(self) -> str:
        links = "".join(f'<li><a href="{name}">{name}</a></li>' for name in sorted(self._files))
        return f"<!DOCTYPE html><html><head><title>kgr for Neo4j Browser</title></head><body><ul>{links}</ul></body></html>"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        files = self._files
        types = {".html": "text/html; charset=utf-8", ".grass": "text/plain; charset=utf-8",
                 ".cypher": "text/plain; charset=utf-8", ".zip": "application/zip"}

        class Handler(BaseHTTPRequestHandler):
            def _cors(self) -> None:
                self.send_header("Access-Control-Allow-Origin", "*")
                self.send_header("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
                # Browser adds pragma, cache-control and tracing headers (sentry-trace, baggage):
                # allow whatever the preflight asks for; the files are public and read-only.
                asked = self.headers.get("Access-Control-Request-Headers", "")
                allowed = ", ".join(h.strip() for h in asked.split(",") if re.fullmatch(r"[A-Za-z0-9-]+", h.strip()))
                self.send_header("Access-Control-Allow-Headers", allowed or "pragma, cache-control")
                self.send_header("Access-Control-Allow-Private-Network", "true")

            def do_OPTIONS(self) -> None:  # noqa: N802 - CORS preflight (Browser sends no-cache headers)
                self.send_response(204)
                self._cors()
                self.send_header("Content-Length", "0")
                self.end_headers()

            def _send(self, head_only: bool) -> None:
                path = urlsplit(self.path).path.lstrip("/") or "index.html"
                data = files.get(path)
                if data is None:
                    self.send_error(404, "not one of kgr's Browser files")
                    return
                self.send_response(200)
                self._cors()
                self.send_header("Content-Type", types.get(Path(path).suffix, "application/octet-stream"))
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                if not head_only:
                    self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                self._send(False)

            def do_HEAD(self) -> None:  # noqa: N802
                self._send(True)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
                return

        return Handler

    def start(self) -> "GuideServer":
        """Serve in a background thread (returns at once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._httpd.serve_forever, name="kgr-guide-server", daemon=True)
            self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted."""
        try:
            self._httpd.serve_forever()
        finally:
            self._httpd.server_close()

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> "GuideServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def entity_types_in(graph: Graph) -> list[str]:
    """Entity types present in the graph (from the ``entity_types`` saved query), most frequent first."""
    return [r["type"] for r in run_query(graph, "entity_types") if r["type"] and IDENTIFIER_RE.fullmatch(r["type"])]
