"""``kgr reset``: empty the database kgr uses, after a confirmation (``--yes`` for scripts).

One top-level command; the main app merges this module's ``registered_commands``.
"""

from __future__ import annotations

from typing import Annotated

import typer

from kgr.cli.common import JsonOpt, emit, err, errors_to_exit, open_engine, out

app = typer.Typer(rich_markup_mode=None)


@app.command()
@errors_to_exit
def reset(yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation (scripts).")] = False,
          json_: JsonOpt = False) -> None:
    """Delete everything kgr stored in its database: entities, edges, documents, versions, snapshots,
    decisions and the stored KG schema (constraints and indexes stay). Asks first, unless --yes.

    Exit code 1 when not confirmed (nothing is deleted).
    """
    import sys

    with open_engine() as kg:
        before = kg.status()
        where = f"{before.uri} (database {before.database})"
        if not yes:
            question = (f"Delete everything in {where}: {before.entities} entities, {before.documents} documents, "
                        f"{before.promoted} promoted edges, version {before.version}?")
            try:
                confirmed = typer.confirm(question, default=False, err=True)
            except typer.Abort:  # no answer (stdin closed)
                confirmed = False
            if not sys.stdin.isatty():
                err.print("")  # an answer read from a pipe is not echoed: end the question's line
            if not confirmed:
                err.print("Error: not confirmed; nothing was deleted (kgr reset --yes skips the question)",
                          markup=False, soft_wrap=True)
                raise typer.Exit(1)
        kg.reset()
        after = kg.status()
    data = {"uri": before.uri, "database": before.database, "deleted": {
        "entities": before.entities, "documents": before.documents, "chunks": before.chunks,
        "promoted": before.promoted, "versions": before.version}, "version": after.version}
    emit(data, json_, lambda d: out.print(
        f"emptied {where}: {before.entities} entities, {before.documents} documents, {before.chunks} chunks, "
        f"{before.promoted} promoted edges and {before.version} versions deleted", markup=False, soft_wrap=True))
