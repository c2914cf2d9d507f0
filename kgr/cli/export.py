"""``kgr export jsonl|laplacian``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from kgr.cli.common import JsonOpt, check_output_path, emit, err, errors_to_exit, open_engine, out

app = typer.Typer(rich_markup_mode=None, no_args_is_help=True, help="Export promoted (or pending) edges.")


@app.command("jsonl")
@errors_to_exit
def jsonl(output: Annotated[Path | None, typer.Option("--out", "-o", help="File to write (default: stdout).")] = None,
          pending: Annotated[bool, typer.Option("--pending", help="Export staged edges instead of promoted ones.")] = False,
          status: Annotated[list[str] | None, typer.Option("--status", help="With --pending: only these statuses.")] = None,
          json_: Annotated[bool, typer.Option("--json", help="With --out: print a JSON summary on stdout. "
                                              "Without --out the JSONL lines on stdout are the data.")] = False) -> None:
    """One edge per line: the triple JSONL fields plus votes, confidence and status.

    The lines are machine output already: without --out they go to stdout (with or without --json)
    and the count goes to stderr. With --out and --json, stdout gets a JSON summary (path, edges).
    """
    from kgr.engine import JsonlExport

    if output:
        check_output_path(output)
    with open_engine() as kg:
        fh = output.open("w", encoding="utf-8") if output else sys.stdout
        n = 0
        try:
            for line in kg.export_jsonl(pending=pending, statuses=status):
                fh.write(line.model_dump_json() + "\n")
                n += 1
        finally:
            if output:
                fh.close()
    summary = JsonlExport(path=str(output) if output else None, edges=n, pending=pending, statuses=status)
    if json_ and output:
        emit(summary, True)
    else:
        err.print(f"exported {n} edges" + (f" to {output}" if output else ""), markup=False)


@app.command("laplacian")
@errors_to_exit
def laplacian(output: Annotated[Path, typer.Option("--out", "-o", help="The .npz file to write.")],
              include_pending: Annotated[bool, typer.Option("--include-pending")] = False,
              json_: JsonOpt = False) -> None:
    """Write the promoted graph's Laplacian (scipy CSR) and node-id order to an .npz file."""
    check_output_path(output)
    with open_engine() as kg:
        res = kg.export_laplacian(output, include_pending=include_pending)
    emit(res, json_, lambda r: out.print(f"wrote {r.path}: {r.nodes} nodes, {r.edges} edges"))
