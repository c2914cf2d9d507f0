"""``kgr browse`` and ``kgr browser setup|serve|queries|style|url``: look at the graph in Neo4j Browser.

Mounting (in ``kgr/cli/main.py``)::

    from kgr.cli import browser as _browser
    app.add_typer(_browser.app, name="browser")   # kgr browser setup|serve|queries|style|url
    app.command("browse")(_browser.browse)        # kgr browse

Output conventions as everywhere in kgr: ``--json`` prints only data on stdout; notes and warnings
go to stderr; a :class:`~kgr.errors.KgrError` is one line ``Error: ...`` and exit code 1.
"""

from __future__ import annotations

import webbrowser
from pathlib import Path
from typing import Annotated

import typer

from kgr.cli.common import JsonOpt, SchemaOpt, emit, err, errors_to_exit, out, print_table

__all__ = ["app", "browse"]

app = typer.Typer(rich_markup_mode=None, 
    no_args_is_help=True,
    help="Neo4j Browser: kgr's saved queries, guide and style, and the URL that connects to kgr's database.",
)

PortOpt = Annotated[int, typer.Option("--port", min=0, max=65535,
                                      help="Port of the guide server on localhost (0 = any free port).")]
HttpUrlOpt = Annotated[str | None, typer.Option(
    "--http-url", help="Where Neo4j Browser is (http://host:7474), when NEO4J_URI points at another server.")]


def _entity_types(schema: Path | None, *, from_db: bool) -> list[str]:
    """Entity types to colour: the schema's, then those in the graph (when it answers quickly)."""
    types: list[str] = []
    if schema is not None:
        from kgr.model.schema import load_schema

        types += list(load_schema(schema).entity_types)
    if from_db:
        from kgr.browser import entity_types_in
        from kgr.errors import KgrError
        from kgr.connect import connect

        try:
            with connect(start_managed=False) as graph:
                types += entity_types_in(graph)
        except KgrError as exc:
            err.print(f"note: entity types not read from the database ({str(exc).splitlines()[0]})", markup=False)
    return list(dict.fromkeys(types))


def _print_browse(data: dict) -> None:
    target = data["target"]
    how = "no authentication" if not target["auth"] else f"log in as {target['username']}; kgr never puts a password in a URL"
    out.print(f"Neo4j Browser for {target['bolt_uri']} (database {target['database']}, {how}):", markup=False)
    out.print(f"  {target['url']}", markup=False, soft_wrap=True)
    if data.get("guide_url"):
        out.print(f"\nGuide: served on {data['server']}; the URL above plays it. Or run in the Browser editor:", markup=False)
        out.print(f"  :play {data['guide_url']}", markup=False)
    else:
        out.print("\nGuide: `kgr browse --serve` serves kgr's guide on http://localhost and plays it; with a guide "
                  "server running, run in the Browser editor:", markup=False)
        out.print(f"  :play http://localhost:{data['port']}/kgr-guide.html", markup=False)
    out.print("\nStyle: paste this line into the Browser editor and run it (or drag kgr.grass from "
              "`kgr browser setup DIR` onto the Browser window):", markup=False)
    out.print(f"  {data['style_command']}", markup=False, soft_wrap=True)
    out.print("\nSaved queries: `kgr browser queries` lists them; `kgr browser setup DIR` writes them, with "
              "kgr-saved-queries.zip to drag onto the Browser (adds them to Favorites).", markup=False)


@errors_to_exit
def browse(
    serve: Annotated[bool, typer.Option("--serve", help="Serve the guide and style on localhost and play the guide "
                                                         "on opening (runs until Ctrl-C).")] = False,
    port: PortOpt = 7478,
    open_: Annotated[bool, typer.Option("--open", help="Open the URL in this machine's web browser.")] = False,
    http_url: HttpUrlOpt = None,
    schema: SchemaOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Print the Neo4j Browser URL for kgr's database, the style command and the guide's entry."""
    from kgr.browser import GuideServer, browser_target, grass, style_command

    target = browser_target(http_url=http_url)
    stopped = target.managed and target.running is False
    if stopped:
        err.print("warning: the managed Neo4j is not running; start it with `kgr neo4j start`", markup=False)
    if target.guessed:
        err.print(f"note: assuming Neo4j Browser at {target.browser} (say where with --http-url)", markup=False)
    types = _entity_types(schema, from_db=not stopped)
    server = GuideServer(port=port, entity_types=types) if serve else None
    try:
        if server is not None:
            target = browser_target(http_url=http_url, play=server.guide_url)
        data = {
            "target": target.model_dump(mode="json"),
            "style_command": f":style {server.grass_url}" if server else style_command(grass(types)),
            "guide_url": server.guide_url if server else None,
            "server": server.url if server else None,
            "port": server.port if server else port,
            "entity_types": types,
        }
        emit(data, json_, _print_browse)
        if open_ and not webbrowser.open(target.url):
            err.print("note: no web browser to open here; copy the URL above", markup=False)
        if server is not None:
            err.print(f"serving kgr's guide on {server.url} (Ctrl-C stops)", markup=False)
            try:
                server.serve_forever()
            except KeyboardInterrupt:
                pass
    finally:
        if server is not None:
            server.stop()


app.command("url", help="Same as `kgr browse`.")(browse)


@app.command("setup")
@errors_to_exit
def setup(
    directory: Annotated[Path | None, typer.Argument(metavar="[DIR]", 
        help="Where to write the guide, kgr.grass, queries/*.cypher and kgr-saved-queries.zip. "
             "Without it, the queries and the style are printed.", show_default=False)] = None,
    schema: SchemaOpt = None,
    force: Annotated[bool, typer.Option("--force", help="Replace files that differ (they may hold your edits).")] = False,
    json_: JsonOpt = False,
) -> None:
    """Write kgr's Browser files into DIRECTORY (or print the saved queries and the style)."""
    from kgr.browser import grass, saved_queries, write_bundle

    types = _entity_types(schema, from_db=False)
    if directory is None:
        if json_:
            emit({"queries": [q.model_dump() for q in saved_queries()], "grass": grass(types)}, True)
            return
        for q in saved_queries():
            typer.echo(q.text)
        typer.echo("// kgr.grass: drag the file onto Neo4j Browser, or run `:style` followed by this text")
        typer.echo(grass(types), nl=False)
        return
    paths = write_bundle(directory, entity_types=types, overwrite=force)
    data = {"directory": str(Path(directory).expanduser().absolute()), "files": [str(p) for p in paths]}

    def human(d: dict) -> None:
        out.print(f"wrote {len(d['files'])} files to {d['directory']}:", markup=False)
        for p in d["files"]:
            out.print(f"  {p}", markup=False)
        out.print("In Neo4j Browser (`kgr browse` prints its URL): drag kgr.grass onto the window to apply the "
                  "style, drag kgr-saved-queries.zip to add the queries to Favorites (folder kgr). "
                  "The guide needs an HTTP server: `kgr browser serve`.", markup=False)

    emit(data, json_, human)


@app.command("serve")
@errors_to_exit
def serve(port: PortOpt = 7478, schema: SchemaOpt = None) -> None:
    """Serve the guide, kgr.grass and the queries on http://localhost:PORT for Neo4j Browser (Ctrl-C stops)."""
    from kgr.browser import GuideServer

    server = GuideServer(port=port, entity_types=_entity_types(schema, from_db=True))
    out.print(f"serving kgr's Browser files on {server.url} (Ctrl-C stops). In the Browser editor run:", markup=False)
    out.print(f"  :play {server.guide_url}", markup=False)
    out.print(f"  :style {server.grass_url}", markup=False)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


@app.command("queries")
@errors_to_exit
def queries(
    name: Annotated[str | None, typer.Argument(metavar="[NAME]", help="Print this query (name, file stem or number).",
                                               show_default=False)] = None,
    json_: JsonOpt = False,
) -> None:
    """List the saved queries, or print one (ready to paste into the Browser editor)."""
    from kgr.browser import saved_queries, saved_query

    if name is not None:
        q = saved_query(name)
        emit(q, json_, lambda q: typer.echo(q.text, nl=False))
        return

    def table(items: list) -> None:
        from rich.table import Table

        t = Table("#", "name", "title", "parameters")
        for q in items:
            t.add_row(q.filename.split("_", 1)[0], q.name, q.title, ", ".join(f"${p}" for p in q.params))
        print_table(t)

    emit(list(saved_queries()), json_, table)


@app.command("style")
@errors_to_exit
def style(
    schema: SchemaOpt = None,
    command: Annotated[bool, typer.Option("--command", help="Print the one-line `:style ...` Browser command.")] = False,
) -> None:
    """Print kgr's GraSS style (with colours for the schema's entity types)."""
    from kgr.browser import grass, style_command

    text = grass(_entity_types(schema, from_db=False))
    typer.echo(style_command(text) if command else text, nl=command)
