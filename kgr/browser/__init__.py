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

The package, by job: :mod:`~kgr.browser.queries` (the saved queries: parse, look up, run through
:func:`kgr.store.inspect.run_saved_query`, pack as Favorites), :mod:`~kgr.browser.style` (GraSS),
:mod:`~kgr.browser.guide` (the guide and the files ``kgr browser setup`` writes),
:mod:`~kgr.browser.server` (:class:`GuideServer`) and :mod:`~kgr.browser.urls` (the Browser URL).
It sits beside the CLI; Neo4j is reached only through :mod:`kgr.store`.
"""

from __future__ import annotations

from kgr.browser.guide import GUIDE_FILE, QUERIES_DIR, ZIP_FILE, bundle, render_guide, write_bundle
from kgr.browser.queries import (FAVORITES_FOLDER, SavedQuery, entity_types_in, favorite_text, run_query,
                                 saved_queries, saved_queries_zip, saved_query)
from kgr.browser.server import DEFAULT_GUIDE_PORT, GuideServer
from kgr.browser.style import GRASS_FILE, grass, style_command
from kgr.browser.urls import BrowserTarget, browser_target, browser_url

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
    "QUERIES_DIR",
    "FAVORITES_FOLDER",
    "DEFAULT_GUIDE_PORT",
]
