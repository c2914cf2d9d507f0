"""End to end in headless Chromium: Neo4j Browser loads from the test Neo4j, connects, plays kgr's
guide, applies kgr's style from it, runs the saved query "The graph" from the guide on a graph the
test staged, and shows the expected nodes and relationship types. A screenshot of the result is
written to ``test-artifacts/browser.png``.

Needs Debian's Chromium (``apt-get install -y chromium``; ``KGR_CHROMIUM`` names another binary) and Playwright for Python
(``pip install playwright``; never ``playwright install``: the system Chromium is used). Without
them the test skips, and under ``KGR_REQUIRE_NEO4J=1`` (CI) it fails.

The Browser is the one the test Neo4j serves: ``http://127.0.0.1:$KGR_TEST_HTTP_PORT`` (17474) for
the managed test instance, or ``KGR_TEST_BROWSER_URL`` when ``NEO4J_URI`` points elsewhere. The
server must run without authentication (the managed instance does).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import kgr.browser as kb

pytestmark = [pytest.mark.browser, pytest.mark.neo4j, pytest.mark.slow, pytest.mark.timeout(180)]

REQUIRE = os.environ.get("KGR_REQUIRE_NEO4J") == "1"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WAIT_MS = 30_000


def _unavailable(message: str) -> None:
    if REQUIRE:
        pytest.fail(message + " (KGR_REQUIRE_NEO4J=1)")
    pytest.skip(message + " — the Browser test needs a Chromium: `bash .ci/run` installs Debian's; "
                "KGR_REQUIRE_NEO4J=1 (which requires the Neo4j and this Chromium) makes this a failure")  # KGR_REQUIRE_NEO4J


@pytest.fixture
def chromium_context(tmp_path):
    """A Playwright persistent context on Debian's Chromium with a fresh profile."""
    exe = os.environ.get("KGR_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe or not os.access(exe, os.X_OK):
        _unavailable(f"chromium not found ({exe or 'not on PATH'}; apt-get install -y chromium, or set KGR_CHROMIUM)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install playwright; the system chromium is used)")
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"), executable_path=exe, args=CHROMIUM_ARGS, headless=True,
            viewport={"width": 1400, "height": 1000})
        ctx.set_default_timeout(WAIT_MS)
        yield ctx
        ctx.close()


def _browser_page(neo4j_settings) -> str:  # noqa: ANN001
    if os.environ.get("KGR_TEST_BROWSER_URL"):
        return os.environ["KGR_TEST_BROWSER_URL"].rstrip("/") + "/"
    port = urlsplit(neo4j_settings.uri).port
    if port == int(os.environ.get("KGR_TEST_BOLT_PORT", "17687")):  # the managed test instance
        return f"http://127.0.0.1:{int(os.environ.get('KGR_TEST_HTTP_PORT', '17474'))}/browser/"
    return kb.browser_target(neo4j_settings).browser


def _grass_rules() -> dict[str, dict[str, str]]:
    rules = {}
    for sel, body in re.findall(r"^(\S+) \{\n(.*?)^\}", kb.grass(), re.MULTILINE | re.DOTALL):
        rules[sel] = dict(re.findall(r"^\s*([a-z-]+): (.*);$", body, re.MULTILINE))
    return rules


def _text_view_rows(text: str) -> list[str]:
    """Rows of Browser's Text (ASCII table) view, with wrapped lines joined."""
    rows, current = [], []
    for line in text.splitlines():
        if line.startswith("│"):
            current.append(line[1:-1] if line.endswith("│") else line[1:])
        elif line.startswith(("╞", "├", "└")) and current:
            rows.append("".join(current).rstrip())
            current = []
    return rows[1:]  # the first "row" is the column header


_PATH_RE = re.compile(r'^\(:Entity:(\w+) \{.*?name: "([^"]*)".*?\}\)-\[:(\w+) \{(.*?)\}\]->'
                      r'\(:Entity:(\w+) \{.*?name: "([^"]*)"')

GRAPH_JS = """(frame) => {
  const texts = g => [...g.querySelectorAll('text')].map(t => t.textContent.trim()).join(' ');
  return {
    nodes: [...frame.querySelectorAll('svg g.node')].map(g => ({
      caption: texts(g), fill: g.querySelector('circle.b-outline')?.getAttribute('fill')})),
    rels: [...frame.querySelectorAll('svg g.relationship')].map(g => ({
      caption: texts(g), fill: g.querySelector('path.b-outline')?.getAttribute('fill')})),
  };
}"""


def _page(chromium_context, neo4j_settings):  # noqa: ANN001, ANN202
    if neo4j_settings.password is not None:
        _unavailable("the Browser test drives a Neo4j without authentication (the managed test instance)")
    ARTIFACTS.mkdir(exist_ok=True)
    return chromium_context.pages[0] if chromium_context.pages else chromium_context.new_page()


def test_browser_shows_kgr_graph_with_guide_and_style(graph, history, neo4j_settings, chromium_context):
    page = _page(chromium_context, neo4j_settings)
    with kb.GuideServer(port=0) as guide_server:
        url = kb.browser_url(_browser_page(neo4j_settings), bolt_uri=neo4j_settings.uri,
                             database=neo4j_settings.database, play=guide_server.guide_url)
        try:
            page.goto(url)
            # connected (auth off: Browser connects by itself to the dbms given in the URL)
            page.get_by_text("You have a working connection").wait_for()
            # the guide, fetched from kgr's guide server, plays in a frame
            guide = page.locator("[data-testid='frame']").filter(has_text="kgr-guide.html")
            guide.get_by_text("kgr: inspecting the knowledge graph").first.wait_for()
            # slide 2: apply kgr's style; show only what queries return
            guide.locator("[data-testid='carousel'] li[aria-label='2']").click()
            guide.locator("a[data-exec^='style node']").click()
            page.locator("[data-testid='frame']").filter(has_text=":style node").first.wait_for()
            guide.locator("a[data-exec='config autoComplete: false']").click()
            page.locator("[data-testid='frame']").filter(has_text=":config autoComplete").first.wait_for()
            # slide 5: saved query 3, "The graph": click its code into the editor, run it
            guide.locator("[data-testid='carousel'] li[aria-label='5']").click()
            assert guide.locator("h3").first.inner_text().startswith("3. " + kb.saved_query("graph").title)
            guide.locator("pre.runnable").first.click()
            page.locator("[data-testid='editor-Run']").click()
            result = page.locator("[data-testid='frame']").filter(has_text="Displaying 5 nodes, 3 relationships")
            result.locator("svg g.node").nth(4).wait_for()
            page.wait_for_timeout(1500)  # let the force layout settle for the picture

            # the graph view: captions (names, relationship types) and kgr's colours
            seen = result.locator("[data-testid='frameContents']").evaluate(GRAPH_JS)
            rules = _grass_rules()
            colour = {t: rules[f"node.{t}"]["color"] for t in ("Person", "Organization", "Place")}
            assert sorted((n["caption"], n["fill"]) for n in seen["nodes"]) == [
                ("Ada", colour["Person"]), ("Grace", colour["Person"]), ("IBM", colour["Organization"]),
                ("London", colour["Place"]), ("US Navy", colour["Organization"])]
            promoted, pending = rules["relationship"]["color"], rules["relationship.PENDING_REL"]["color"]
            assert sorted((r["caption"], r["fill"]) for r in seen["rels"]) == [
                ("BORN_IN? (held)", pending), ("WORKS_AT", promoted), ("WORKS_AT? (held)", pending)]
            overview = result.locator("[data-testid='vizInspector']").inner_text()
            for item in ("Person (2)", "Organization (2)", "Place (1)", "WORKS_AT (1)", "PENDING_REL (2)"):
                assert item in overview

            # the Text view holds the rows themselves: (subject)-[:TYPE {...}]->(object)
            result.locator("[data-testid='cypherFrameSidebarAscii']").click()
            text = result.locator("[data-testid='frameContents'] pre").first.inner_text()
            rows = []
            for row in _text_view_rows(text):
                m = _PATH_RE.match(row)
                assert m, row[:200]
                status = re.search(r'status: "(\w+)"', m.group(4))
                rows.append((m.group(2), m.group(1), m.group(3), status.group(1) if status else None,
                             m.group(6), m.group(5)))
            assert sorted(rows) == [
                ("Ada", "Person", "PENDING_REL", "held", "London", "Place"),
                ("Ada", "Person", "WORKS_AT", None, "IBM", "Organization"),
                ("Grace", "Person", "PENDING_REL", "held", "US Navy", "Organization"),
            ]
            result.locator("[data-testid='cypherFrameSidebarVisualization']").click()
            result.locator("svg g.node").nth(4).wait_for()
            page.wait_for_timeout(500)
            page.screenshot(path=str(ARTIFACTS / "browser.png"))
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "browser-failure.png"))
            raise
    assert (ARTIFACTS / "browser.png").stat().st_size > 10_000


DROP_JS = """async ([name, b64]) => {
  const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
  const dt = new DataTransfer();
  dt.items.add(new File([bytes], name));
  const target = document.querySelector('.filedrop');  // Browser's drop zone around the whole app
  for (const type of ['dragenter', 'dragover', 'drop'])
    target.dispatchEvent(new DragEvent(type, {dataTransfer: dt, bubbles: true, cancelable: true}));
}"""


def test_setup_files_dropped_on_browser(graph, history, neo4j_settings, chromium_context, tmp_path):
    """What `kgr browser setup DIR` writes works in the Browser: the zip becomes a Favorites folder,
    the .grass file becomes the style, and a favorite runs (the entity-type overview)."""
    import base64

    page = _page(chromium_context, neo4j_settings)
    out = tmp_path / "kgr-browser"
    kb.write_bundle(out)
    url = kb.browser_url(_browser_page(neo4j_settings), bolt_uri=neo4j_settings.uri,
                         database=neo4j_settings.database)
    try:
        page.goto(url)
        page.get_by_text("You have a working connection").wait_for()
        for name in (kb.ZIP_FILE, kb.GRASS_FILE):
            page.evaluate(DROP_JS, [name, base64.b64encode((out / name).read_bytes()).decode()])
        # the dropped style is applied: Browser shows it in a :style frame
        style_frame = page.locator("[data-testid='frame']").filter(has_text="relationship.PENDING_REL")
        style_frame.first.wait_for()
        assert "'{type}? ({status})'".replace("'", '"') in style_frame.first.inner_text()
        # the queries are favorites in folder kgr, in file order
        page.locator("[data-testid='navigationFavorites']").click()
        page.locator("[data-testid='savedScriptsFolder-kgr']").get_by_text("kgr", exact=True).click()
        titles = page.locator("[data-testid='savedScriptsFolder-kgr'] [data-testid^='scriptTitle-']").all_inner_texts()
        assert [t.strip() for t in titles] == [
            f"{q.filename[:2]} {q.title}" for q in kb.saved_queries()]
        # run the first one from Favorites
        item = page.locator("[data-testid='savedScriptListItem']").filter(has_text="01 Entity types")
        item.hover()
        item.locator("[data-testid='savedScriptsButton-Run']").click()
        result = page.locator("[data-testid='frame']").filter(has_text="01 Entity types").first
        result.locator("[data-testid='cypherFrameSidebarAscii']").click()
        text = result.locator("[data-testid='frameContents'] pre").first.inner_text()
        cells = [[c.strip() for c in line.strip("│").split("│")] for line in text.splitlines() if line.startswith("│")]
        assert cells == [
            ["type", "entities", "examples", "mentions"],
            ['"Person"', "3", '["Ada", "Babbage", "Grace"]', "4"],
            ['"Organization"', "2", '["IBM", "US Navy"]', "3"],
            ['"Machine"', "1", '["Difference Engine"]', "1"],
            ['"Place"', "1", '["London"]', "1"],
        ]
        page.screenshot(path=str(ARTIFACTS / "browser-favorites.png"))
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "browser-favorites-failure.png"))
        raise
