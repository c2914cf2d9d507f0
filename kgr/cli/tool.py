"""``kgr tool``: run one agent tool on JSON input, or list the tools.

::

    kgr tool --names [--json]                         # the tools, one line each (or a JSON list)
    kgr tool --list                                   # function definitions (JSON) on stdout
    kgr tool query_extraction_density --input in.json # output JSON on stdout
    cat in.json | kgr tool query_coverage_feedback    # input from stdin

Only data goes to stdout, always JSON but for ``--names`` (``--json`` is accepted everywhere, as on
every kgr command, and makes ``--names`` JSON too). Invalid input (malformed JSON, a wrong field, an unknown tool) prints one
``Error: <field>: <reason>`` line on stderr and exits with code 1. The two store tools connect to
Neo4j from the usual ``NEO4J_*`` variables (or the managed local Neo4j).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer
from typer.core import TyperGroup

from kgr.errors import KgrError, KgrValidationError
from kgr.model.jsontext import loads_strict

if TYPE_CHECKING:
    from kgr.tools.context import ToolContext

__all__ = ["app", "read_json_input"]

class _ToolGroup(TyperGroup):
    """A group whose usage line reads ``tool [OPTIONS] [NAME]`` (it has no subcommands)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["subcommand_metavar"] = ""
        super().__init__(*args, **kwargs)


app = typer.Typer(rich_markup_mode=None, 
    name="tool",
    cls=_ToolGroup,
    help="Run an agent tool on JSON input (file or stdin) and print its JSON output.",
    no_args_is_help=True,
    add_completion=False,
)


def read_json_input(path: Path | None) -> Any:
    """Parse the JSON input from ``path`` or stdin.

    Raises
    ------
    KgrValidationError
        Unreadable file, no input, or malformed JSON (with line and column).
    """
    where = str(path) if path is not None else "stdin"
    try:
        if path is not None:
            raw = path.read_text(encoding="utf-8")
        else:
            if sys.stdin is None or sys.stdin.isatty():
                raise KgrValidationError("no input: pass --input FILE or pipe JSON on stdin", field="input")
            raw = sys.stdin.read()
    except OSError as exc:
        raise KgrValidationError(f"cannot read {where}: {exc.strerror or exc}", field="input") from None
    except UnicodeDecodeError as exc:
        raise KgrValidationError(f"{where} is not UTF-8 text ({exc.reason})", field="input") from None
    if not raw.strip():
        raise KgrValidationError(f"{where} is empty: expected a JSON object", field="input")
    try:
        return loads_strict(raw, where=where)  # duplicate keys, NaN and deep nesting refused
    except KgrValidationError as exc:
        raise KgrValidationError(str(exc), field="input") from None


def _context(name: str, schema_path: Path | None) -> ToolContext:
    from kgr.tools.context import ToolContext
    from kgr.tools.registry import get_tool

    schema = None
    if schema_path is not None:
        from kgr.model.schema import load_schema

        schema = load_schema(schema_path)
    ctx = ToolContext(schema=schema)
    if get_tool(name).needs_graph:
        from kgr.engine import Engine

        # the graph's own schema when none is given; another one is refused (kgr init --migrate)
        kg = Engine.connect(schema=schema_path)
        ctx.graph, ctx.schema = kg.graph, kg.schema
    return ctx


@app.callback(invoke_without_command=True, context_settings={"allow_interspersed_args": True})
def tool(
    name: Optional[str] = typer.Argument(None, metavar="NAME", help="Tool name (see --list)."),
    input_path: Optional[Path] = typer.Option(None, "--input", "-i", help="JSON input file (default: stdin).",
                                              dir_okay=False),
    list_tools: bool = typer.Option(False, "--list", help="Print the tools' function definitions as JSON."),
    names: bool = typer.Option(False, "--names", help="Print the tools' names with their first sentence, one per line."),
    schema_path: Optional[Path] = typer.Option(None, "--schema", help="KG schema file (aliases, closed types) "
                                               "for the store tools.", dir_okay=False),
    json_: bool = typer.Option(False, "--json", help="Print data as JSON on stdout (a tool's output always is; "
                                                      "with --names, a list of {name, description})."),
) -> None:
    """Run an agent tool on JSON input and print its JSON output (or --list the tools)."""
    from kgr.tools.registry import call_tool, function_definitions, get_tool  # the tools' models: ~50 ms, here only

    try:
        if names:
            rows = [{"name": d["function"]["name"], "description": d["function"]["description"].split(". ")[0].rstrip(".")}
                    for d in function_definitions()]
            if json_:
                typer.echo(json.dumps(rows, indent=2, ensure_ascii=False))
                return
            for r in rows:
                first = r["description"]
                typer.echo(f"{r['name']}: {first if len(first) <= 100 else first[:99] + '…'}")
            return
        if list_tools:
            typer.echo(json.dumps(function_definitions(), indent=2, ensure_ascii=False))
            return
        if name is None:
            raise KgrValidationError("missing tool NAME (see `kgr tool --list`)", field="NAME")
        get_tool(name)
        payload = read_json_input(input_path)
        ctx = _context(name, schema_path)
        try:
            out = call_tool(name, payload, context=ctx)
        finally:
            if ctx.graph is not None:
                ctx.graph.close()
    except KgrError as exc:
        typer.echo(f"Error: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(json.dumps(out, indent=2, ensure_ascii=False))
