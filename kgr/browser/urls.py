"""Where Neo4j Browser is and the URL that connects it to kgr's database (never with a password)."""

from __future__ import annotations

import re
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field

from kgr.errors import KgrValidationError
from kgr.store.connection import Neo4jSettings

__all__ = ["BrowserTarget", "browser_url", "browser_target"]


class BrowserTarget(BaseModel):
    """Where Neo4j Browser is and what it should connect to (never a password)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

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
