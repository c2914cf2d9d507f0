"""``kgr resolve`` and ``kgr split``: entity resolution from the graph (see :mod:`kgr.store.resolve`)."""

from __future__ import annotations

import gc
from typing import Annotated

import typer

from kgr.cli.common import JsonOpt, SchemaOpt, check_fmr, emit, errors_to_exit, open_engine, out
from kgr.cli.embed import ApiBaseOpt, ModelOpt, embedder

app = typer.Typer(rich_markup_mode=None, no_args_is_help=True)

#: Proposals printed per kind without ``--json`` (the JSON lists them all, up to the report's bound).
SHOWN = 20


def _pair_line(e) -> str:  # noqa: ANN001 - a PairEvidence
    comps = ", ".join(f"{c.comparison}={c.level} ({c.bits:+.1f})" for c in e.comparisons if c.level >= 0)
    rules = "+".join(e.rules)
    return f"p={e.probability:.4f} w={e.weight:+.1f} bits [{rules}] {comps}" + (f"; {e.reason}" if e.reason else "")


def _show(r) -> None:  # noqa: ANN001 - a ResolveReport
    head = "would apply" if r.dry_run else (f"version {r.version}:" if r.version is not None else "nothing to apply:")
    out.print(f"{head} {len(r.merges)} merges, {len(r.splits)} splits; {r.accepted_pairs} pairs accepted "
              f"(expected wrong {r.expected_wrong_merges:.2f}, target FMR {r.target_fmr}), {len(r.review)} to review, "
              f"{len(r.blocked)} blocked by cannot-links, {r.llm_decisions} LLM decisions ({r.seconds:.2f} s)",
              markup=False)
    for t in r.types:
        cut = "none" if t.cut is None else f"{t.cut:.4f}"
        out.print(f"  {t.type}: {t.units} units, {t.candidate_pairs} candidate pairs, cut {cut}, "
                  f"lambda {t.lambda_:.4g}, EM {t.em_iterations} iterations, {t.labelled_pairs} labelled",
                  markup=False)
    for s in r.splits[:SHOWN]:
        out.print(f"split {s.entity} -> {s.into}{' (new)' if s.new_entity else ''}: {len(s.sources)} sources"
                  + (f"; {s.reason}" if s.reason else ""), markup=False)
    for m in r.merges[:SHOWN]:
        out.print(f"merge {m.drop} -> {m.keep}", markup=False)
        if m.evidence is not None:
            out.print(f"    {_pair_line(m.evidence)}", markup=False)
    for b in r.blocked[:SHOWN]:
        out.print(f"blocked {b.a} / {b.b}: {_pair_line(b)}", markup=False)
    more = max(0, len(r.merges) - SHOWN) + max(0, len(r.splits) - SHOWN)
    if more:
        out.print(f"... {more} more (--json lists them all)", markup=False)


@app.command()
@errors_to_exit
def resolve(schema: SchemaOpt = None,
            type_: Annotated[str | None, typer.Option("--type", help="Only entities of this type.")] = None,
            dry_run: Annotated[bool, typer.Option("--dry-run", help="List the proposals with their evidence; "
                                                                    "change nothing.")] = False,
            target_fmr: Annotated[float, typer.Option(
                callback=check_fmr, help="The share of wrong merges to hold the accepted pairs to, in (0, 0.9999].")] = 0.02,
            llm_model: Annotated[str | None, typer.Option(
                "--llm-model", envvar="KGR_RESOLVE_LLM_MODEL",
                help="litellm chat model that decides the uncertain band (else: the review queue).")] = None,
            llm_api_base: Annotated[str | None, typer.Option("--llm-api-base", envvar="KGR_RESOLVE_LLM_API_BASE",
                                                             help="OpenAI-compatible server of --llm-model.")] = None,
            embedding_model: ModelOpt = None, embedding_api_base: ApiBaseOpt = None,
            json_: JsonOpt = False) -> None:
    """Find duplicate entities, score them from their names and graph context, and apply merges and
    splits as one version (reversible by `kgr snapshot rollback`).

    Blocking (phonetic keys, word sets, sorted neighbourhoods, shared neighbours, name embeddings),
    a Fellegi-Sunter model fitted by EM with term-frequency adjustment, a cut held to --target-fmr,
    and clustering that never joins clusters a functional relation or a declared name separates.
    """
    tie_break = None
    if llm_model:
        from kgr.extract.match_llm import LLMTieBreak

        gc.enable()  # calls out to an LLM: its client's cycles are collected as usual (the command runs with it off)
        tie_break = LLMTieBreak(llm_model, api_base=llm_api_base)
    with open_engine(schema, embed=embedder(embedding_model, embedding_api_base)) as kg:
        rep = kg.resolve(type=type_, dry_run=dry_run, target_fmr=target_fmr, tie_break=tie_break)
    emit(rep, json_, _show)


@app.command()
@errors_to_exit
def split(key: Annotated[str, typer.Argument(metavar="KEY", help="Entity key TYPE:NAME.")], schema: SchemaOpt = None,
          dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would move; change nothing.")] = False,
          json_: JsonOpt = False) -> None:
    """Split entity KEY where its sources assert clearly different values of a functional relation
    (two people named alike with different birth dates): each group moves, with its votes, to a new
    entity KEY#<hash>, as one version. Needs --schema (its functional flags)."""
    with open_engine(schema) as kg:
        rep = kg.split(key, dry_run=dry_run)

    def human(r) -> None:  # noqa: ANN001 - a SplitReport
        head = "would split" if r.version is None else f"version {r.version}: split"
        out.print(f"{head} {r.entity} into {len(r.splits) + 1} entities" if r.splits
                  else f"{r.entity}: no conflicting source groups, nothing to split", markup=False)
        for s in r.splits:
            out.print(f"  {len(s.sources)} sources -> {s.into}" + (f" ({s.reason})" if s.reason else ""),
                      markup=False)

    emit(rep, json_, human)


__all__ = ["app"]
