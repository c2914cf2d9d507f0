"""``kgr snapshot create|list|diff|rollback``."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from kgr.cli.common import JsonOpt, emit, errors_to_exit, open_engine, out, print_table

app = typer.Typer(rich_markup_mode=None, no_args_is_help=True, help="Name versions of the promoted graph, diff them, roll back.")


@app.command("create")
@errors_to_exit
def create(name: Annotated[str, typer.Argument(metavar="NAME", help="Snapshot name (unique).")],
           note: Annotated[str, typer.Option(help="Free-text note.")] = "", json_: JsonOpt = False) -> None:
    """Name the current version (with its content hash)."""
    with open_engine() as kg:
        snap = kg.snapshot(name, note)
    emit(snap, json_, lambda s: out.print(f"snapshot {s.name}: version {s.version}, {s.edges} edges, hash {s.hash[:16]}…"))


@app.command("list")
@errors_to_exit
def list_(json_: JsonOpt = False) -> None:
    """List snapshots, oldest first."""
    with open_engine() as kg:
        snaps = kg.snapshots()

    def table(items: list) -> None:
        if not items:
            out.print("no snapshots yet: name the current version with `kgr snapshot create NAME`")
            return
        t = Table("name", "version", "edges", "hash", "note")
        for s in items:
            t.add_row(s.name, str(s.version), str(s.edges), s.hash[:16], s.note)
        print_table(t)

    emit(snaps, json_, table)


@app.command("diff")
@errors_to_exit
def diff(base: Annotated[str, typer.Argument(metavar="BASE", help="Snapshot name or version number.")],
         target: Annotated[str, typer.Argument(metavar="[TARGET]", help="Snapshot, version, or 'current'.")] = "current",
         json_: JsonOpt = False) -> None:
    """List promoted edges added and removed between two snapshots/versions."""
    with open_engine() as kg:
        d = kg.diff(base, target)

    def human(d) -> None:  # noqa: ANN001
        out.print(f"version {d.base} → {d.target}: +{len(d.added)} −{len(d.removed)}")
        for sign, edges in (("+", d.added), ("-", d.removed)):
            for e in edges:
                out.print(f"{sign} ({e.subject}:{e.subject_type}) -[{e.relation}]-> ({e.object}:{e.object_type})  {e.key}",
                          markup=False)

    emit(d, json_, human)


@app.command("rollback")
@errors_to_exit
def rollback(ref: Annotated[str, typer.Argument(metavar="REF", help="Snapshot name or version number.")], json_: JsonOpt = False) -> None:
    """Open a new version whose promoted edges equal those of REF (nothing is deleted), except the
    facts whose every source was forgotten since: they are listed and stay out."""
    with open_engine() as kg:
        res = kg.rollback(ref)
    emit(res, json_, lambda r: out.print(
        f"version {r.version}: rolled back to {r.target_version} (retired {r.retired}, restored {r.restored}"
        + (f"; {len(r.unrestored)} not restored, every source forgotten since: {', '.join(r.unrestored[:10])}"
           + (" ..." if len(r.unrestored) > 10 else "") if r.unrestored else "") + ")", markup=False, soft_wrap=True))
