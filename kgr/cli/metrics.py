"""``kgr metrics``: counts, S_VN and Cov_κ of the promoted graph, and the figures of recent rounds.

One top-level command; the main app merges this module's ``registered_commands``.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich import box
from rich.table import Table

from kgr.cli.common import JsonOpt, emit, errors_to_exit, open_engine, out, print_table

app = typer.Typer(rich_markup_mode=None)


#: How the human output names a staged edge's status where the bare word would mislead: ``pending``
#: is the status of the staged edges no round has decided (yet or again), not every staged edge.
STATUS_LABELS = {"pending": "pending (undecided)"}


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}"


def _num(x: float | None, fmt: str = ".4f") -> str:
    return "—" if x is None else format(x, fmt)


def _human(m) -> None:  # noqa: ANN001 - StoreMetrics (import kept lazy for fast --help)
    s, e, c = m.status, m.entropy, m.coverage
    lines = [
        f"version {m.version}, hash {m.hash[:16]}…",
        f"nodes {m.nodes}, promoted edges {m.edges}, staged edges {m.pending_edges} (any status)",
        "  staged edges by status: " + ", ".join(f"{STATUS_LABELS.get(k, k)} {v}" for k, v in s.items()),
        f"S_VN {_num(e.value)} nats ({e.method or 'no edges'}; {e.nodes} nodes, {e.edges} edges, mu={e.mu:g})",
        f"Cov_kappa {c.value:.4f} (kappa={c.kappa:g}, h={c.h})",
    ]
    for line in lines:
        out.print(line, markup=False, soft_wrap=True)
    if not m.rounds:
        out.print("no promotion rounds yet", markup=False)
        return
    latency = any(r.mean_decision_latency_ms is not None for r in m.rounds)
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True,
              title=f"last {len(m.rounds)} promotion rounds (rates in %)")
    for name in ("round", "policy", "cand", "prom", "held", "rej", "exp", "prom/cand", "AG", "DG", "retr"):
        t.add_column(name, justify="left" if name == "policy" else "right", no_wrap=True)
    if latency:
        t.add_column("ms/cand", justify="right", no_wrap=True)
    for r in [*m.rounds, m.totals]:
        row = ["all" if r.version is None else str(r.version), r.note.replace(" policy", ""), str(r.candidates),
               str(r.promoted), str(r.held), str(r.rejected), str(r.expired), _pct(r.acceptance), _pct(r.ag_rate),
               _pct(r.dg_rate), str(r.retracted)]
        if latency:
            row.append(_num(r.mean_decision_latency_ms, ".3f"))
        t.add_row(*row)
    print_table(t)
    z = m.psz
    out.print(f"PSZ (targets Acc >= 0.95, FMR <= 0.02, P50 <= 200 ms), without labels: corroborated acceptance "
              f"{_pct(z.acceptance)} %, FMR lower bound (retracted) {_pct(z.fmr)} %, "
              f"P50 {_num(z.p50_latency_ms, '.3f')} ms/candidate, "
              f"shortfall {_num(z.shortfall)}" + ("" if z.in_zone is None else (" (in zone)" if z.in_zone else "")),
              markup=False, soft_wrap=True)
    out.print("corroborated acceptance = promoted / (promoted + held with votes >= quorum); FMR lower bound = "
              "retracted / promoted. The benchmark's Acceptance and FMR (scripts/bench_promotion.py) are "
              "measured against labels instead.", markup=False, soft_wrap=True, style="dim")


@app.command()
@errors_to_exit
def metrics(rounds: Annotated[int, typer.Option("--rounds", "-n", min=1, max=1000,
                                                help="How many recent promotion rounds to report.")] = 5,
            json_: JsonOpt = False) -> None:
    """Counts, entropy and coverage of the promoted graph, and AG/DG rates and acceptance of recent rounds."""
    with open_engine() as kg:
        m = kg.metrics(rounds=rounds)
    emit(m, json_, _human)
