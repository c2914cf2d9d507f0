"""``kgr feedback`` (outcome feedback on a slice) and ``kgr doctor`` (health of the outcome weights)."""

from __future__ import annotations

from typing import Annotated

import typer

from kgr.cli.common import JsonOpt, emit, errors_to_exit, open_engine, out
from kgr.cli.embed import ApiBaseOpt, ModelOpt, embedder

app = typer.Typer(rich_markup_mode=None)


@app.command()
@errors_to_exit
def feedback(slice_id: Annotated[str, typer.Argument(help="The slice's id (kgr slice printed it).")],
             outcome: Annotated[int, typer.Option(help="1: the slice helped; -1: it misled.")],
             edges: Annotated[list[str] | None, typer.Option("--edges", help="Only these edge keys of the slice.")] = None,
             json_: JsonOpt = False) -> None:
    """Report an outcome for a slice: its edges' outcome weights move by ±0.1 (reflex ≥ 0.6,
    inhibitory ≤ -0.01 and vetoed from slices); repeated negatives put an edge up for review."""
    with open_engine() as kg:
        rep = kg.report_outcome(slice_id, outcome, edges or [])
    emit(rep, json_, lambda r: out.print("\n".join(f"{k}  {w:+.2f}  {r.tiers[k]}" for k, w in r.weights.items())
                                         + "".join(f"\nput up for review: {k}" for k in r.review_flagged), markup=False))


@app.command()
@errors_to_exit
def doctor(relax: Annotated[float, typer.Option(
               help="Maintenance first: move every rated edge's outcome weight this share of the way back to "
                    "neutral (0: none; 1: forget all feedback).")] = 0.0,
           half_life_days: Annotated[float | None, typer.Option(
               help="Maintenance first: decay every rated edge's outcome weight toward neutral by the time since "
                    "its last outcome, halving its distance every this many days (run it on a schedule).")] = None,
           embedding_model: ModelOpt = None, embedding_api_base: ApiBaseOpt = None,
           json_: JsonOpt = False) -> None:
    """Health of the outcome weights: tier shares, dormant mass, edges awaiting review (and, with an
    embedding model, entities not embedded yet); exit 1 on a problem."""
    with open_engine(embed=embedder(embedding_model, embedding_api_base)) as kg:
        rep = kg.doctor(relax=relax, half_life_days=half_life_days)

    def human(r) -> None:  # noqa: ANN001 - a DoctorReport
        h = r.health
        if r.decayed:
            out.print(f"decayed {r.decayed} outcome weights toward neutral by their age", markup=False)
        if r.relaxed:
            out.print(f"relaxed {r.relaxed} outcome weights toward neutral", markup=False)
        out.print(f"{h.edges} promoted edges ({h.rated} rated by {h.outcomes} outcomes): "
                  + ", ".join(f"{t} {v:.0%}" for t, v in r.shares.items()), markup=False)
        for f in r.findings:
            out.print(f"- {f}", markup=False)
        out.print("ok" if r.ok else "problems found", markup=False)

    emit(rep, json_, human)
    if not rep.ok:
        raise typer.Exit(1)
