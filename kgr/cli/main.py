"""The ``kgr`` command line: one sub-app per noun, thin commands over :class:`kgr.engine.Engine`."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from kgr.cli.common import (JsonOpt, SchemaOpt, check_fmr, emit, err, errors_to_exit, existing_path, open_engine,
                            out, print_table)
from kgr.cli.progress import spinner
from kgr.gc_freeze import collector_off_to_exit, freeze_at_exit
from kgr.model.promotion import DEFAULT_POLICY, PolicyName

if TYPE_CHECKING:
    from kgr.model.inspect import EdgeExplanation

#: Commands that make many long-lived objects and end: run as the program, the cycle collector stays
#: off from their start to the exit (:func:`kgr.gc_freeze.collector_off_to_exit`).
BULK_COMMANDS = frozenset({"stage", "resolve"})


class _Root(typer.Typer):
    """The root app. Run from the command line for one top-level command or sub-app (``kgr stage
    FILE``), it builds that one only: typer otherwise builds every command's parameters on each run
    (their annotations evaluated, ~0.1 s of a short command's start-up). Help, usage and errors of
    the command are the same; anything else (no or an unknown command, test runners) builds all."""

    def __call__(self, *args: object, **kwargs: object) -> object:
        freeze_at_exit()  # the program's entry (`kgr`, `python -m kgr.cli`): the process ends with the command
        name = sys.argv[1] if len(sys.argv) > 1 and not args and "args" not in kwargs else None
        if name in BULK_COMMANDS:
            collector_off_to_exit()
        cmds = [c for c in self.registered_commands
                if name is not None and (c.name or typer.main.get_command_name(c.callback.__name__)) == name]
        groups = [g for g in self.registered_groups if name is not None and g.name == name]
        if not cmds and not groups:
            return super().__call__(*args, **kwargs)
        one = _Root(rich_markup_mode=None, pretty_exceptions_show_locals=False)
        one.info, one._add_completion = self.info, self._add_completion
        one.registered_commands, one.registered_groups = cmds, groups
        # a lone command would become the whole app (no command name); a callback keeps it a group
        one.registered_callback = typer.models.TyperInfo(callback=_group)
        return typer.Typer.__call__(one, *args, **kwargs)


def _group() -> None:
    """The root group's (empty) callback when one command is built."""


app = _Root(rich_markup_mode=None, 
    no_args_is_help=True,
    help="kgr: staged, voted, gauge-gated knowledge-graph construction on Neo4j.",
    pretty_exceptions_show_locals=False,
)

for _noun, _module in (("neo4j", "kgr.cli.neo4j"), ("snapshot", "kgr.cli.snapshot"), ("export", "kgr.cli.export"),
                       ("review", "kgr.cli.review"), ("tool", "kgr.cli.tool"), ("slice", "kgr.cli.slice"),
                       ("corenlp", "kgr.cli.corenlp")):
    try:
        _sub = importlib.import_module(_module)
    except ImportError:  # an optional sub-app whose extra is missing
        if not _module.endswith("tool"):
            raise
        continue
    app.add_typer(_sub.app, name=_noun)

# modules whose commands sit at the top level (kgr serve, kgr agent, kgr browse ...)
for _module in ("kgr.cli.ingest", "kgr.cli.outcome", "kgr.cli.embed", "kgr.cli.serve", "kgr.cli.metrics",
                "kgr.cli.reset", "kgr.cli.resolve"):
    try:
        _sub = importlib.import_module(_module)
    except ImportError:  # the server extra is not installed
        continue
    app.registered_commands.extend(_sub.app.registered_commands)
    app.registered_groups.extend(_sub.app.registered_groups)

from kgr.cli import browser as _browser  # noqa: E402

app.add_typer(_browser.app, name="browser")
app.command("browse")(_browser.browse)


@app.command()
@errors_to_exit
def init(schema: SchemaOpt = None,
         migrate: Annotated[bool, typer.Option("--migrate", help=(
             "Make --schema the graph's schema although the graph keeps another (recorded as the next schema "
             "version, with the diff of its types; the data stays as it is)."))] = False,
         json_: JsonOpt = False) -> None:
    """Create constraints and indexes (idempotent); with --schema, store the KG schema in the graph.

    Later commands use the stored schema when given none, and refuse a different one unless it is
    migrated to with --migrate.
    """
    from kgr.cli.schema_info import init_summary

    if migrate and schema is None:
        from kgr.errors import KgrValidationError

        raise KgrValidationError("--migrate needs --schema FILE (the schema to migrate to)", field="migrate")
    with open_engine(schema, migrate=migrate) as kg:
        n = kg.init(migrate=migrate)
        stored = kg.stored_schema()
        data = init_summary(n, kg.status(), kg.schema_change, stored,
                            kg.undeclared_types() if kg.schema_change is not None else None)
    emit(data, json_, lambda d: out.print(d["summary"], markup=False, soft_wrap=True))


@app.command()
@errors_to_exit
def stage(path: Annotated[Path, typer.Argument(metavar="FILE.jsonl", help="Triple JSONL file.")], schema: SchemaOpt = None,
          batch_size: Annotated[int, typer.Option(min=1, max=50_000)] = 2000,
          workers: Annotated[int, typer.Option(min=1, max=16, help="Concurrent writer lanes (by edge key).")] = 2,
          json_: JsonOpt = False) -> None:
    """Stage a triple JSONL file as PENDING_REL votes (bad lines are reported and skipped).

    Exit code 2 when no line could be staged (every one bad or rejected).
    """
    with open_engine(schema) as kg, spinner(err) as bar:
        task = bar.add_task("staging…")
        rep = kg.stage_file(path, batch_size=batch_size, workers=workers,
                            on_batch=lambda r: bar.update(task, description=f"staging… {r.rows} rows, {r.new_votes} new votes"))
    for b in rep.bad_lines:
        err.print(f"{path}:{b.line}: skipped: {b.error}", markup=False)
    for r in rep.rejected:
        err.print(f"{path}: assertion #{r.index + 1} rejected: {r.reason}", markup=False)
    emit(rep, json_, lambda r: out.print(
        f"staged {r.rows} rows: {r.new_votes} new votes, {r.repeated_votes} repeated, {r.new_edges} new edges, "
        f"{r.new_entities} new entities, {len(r.bad_lines)} bad lines, {len(r.rejected)} rejected ({r.seconds:.2f} s)"))
    skipped = len(rep.bad_lines) + len(rep.rejected)
    if skipped and rep.new_votes + rep.repeated_votes == 0:
        err.print(f"Error: no line of {path} could be staged ({len(rep.bad_lines)} bad, {len(rep.rejected)} rejected)",
                  markup=False)
        raise typer.Exit(2)


@app.command()
@errors_to_exit
def promote(schema: SchemaOpt = None,
            policy: Annotated[PolicyName, typer.Option(
                help="calibrated (P(true | evidence) held to a target FMR), gedig (votes + gauge + rewards) or "
                     "quorum (votes only).")] = DEFAULT_POLICY,
            quorum: Annotated[int | None, typer.Option(min=1, help="Minimum distinct sources.")] = None,
            target_fmr: Annotated[float | None, typer.Option(
                callback=check_fmr,
                help="Calibrated policy: the expected false-promotion rate to hold the promoted graph to "
                     "in (0, 0.9999] (default 0.1).")] = None,
            verify: Annotated[VerifierChoice, typer.Option(
                help="Re-read the chunks of escalated edges with this verifier after each round (rules: offline; "
                     "llm: needs --model; auto: llm when --model is given, else none); none: leave them to "
                     "`kgr review`.")] = "auto",
            model: Annotated[str | None, typer.Option(help="litellm model of the llm verifier.")] = None,
            until_done: Annotated[bool, typer.Option(
                "--until-done", help="Repeat rounds (one version each) until the staged backlog is worked through.")] = False,
            max_rounds: Annotated[int, typer.Option(min=1, help="With --until-done: rounds at most.")] = 1000,
            explain: Annotated[str | None, typer.Option("--explain", help="Print why edge KEY was promoted, held or rejected.")] = None,
            json_: JsonOpt = False) -> None:
    """Run one promotion round (or rounds until done, or explain a past decision).

    The calibrated policy (the default) settles every staged edge at once: one model, one cut, the
    largest set whose 90 % bound on the false-promotion rate is within the target; it reports the
    target, the expected FMR and the bound, and when nothing is promoted, why and what to do. A
    round with nothing new writes nothing. The other policies decide at most 5,000 candidates per
    round (the summary says how many it left for later).
    """
    with open_engine(schema) as kg:
        if explain:
            emit(kg.explain(explain), json_, _print_explanation)
            return
        verifier = _verifier(verify, model)
        if not until_done:
            summary = kg.promote(policy=policy, quorum=quorum, target_fmr=target_fmr, verifier=verifier)
            emit(summary, json_, lambda s: out.print(_round_line(s), markup=False))
            return
        with spinner(err) as bar:
            task = bar.add_task("promoting…")
            totals = {"promoted": 0, "rounds": 0}

            def seen(s) -> None:  # noqa: ANN001 - a RoundSummary
                totals["promoted"] += s.promoted
                totals["rounds"] += 1
                bar.update(task, description=f"promoting… round {totals['rounds']}: {totals['promoted']} promoted, "
                                             f"{s.deferred} deferred")

            rounds = kg.promote_until_done(policy=policy, quorum=quorum, target_fmr=target_fmr, verifier=verifier,
                                           max_rounds=max_rounds, on_round=seen)
    result = {"rounds": [r.model_dump() for r in rounds],
              **{k: sum(getattr(r, k) for r in rounds) for k in ("promoted", "retired", "rejected", "expired")},
              "held": rounds[-1].held if rounds else 0,
              "deferred": rounds[-1].deferred if rounds else 0,
              "cut": next((r.cut.model_dump() for r in reversed(rounds) if r.cut is not None), None)}

    def show(res: dict) -> None:
        for r in rounds:
            out.print(_round_line(r), markup=False)
        out.print(f"{len(rounds)} rounds: {res['promoted']} promoted, {res['retired']} retired, {res['held']} held, "
                  f"{res['rejected']} rejected, {res['deferred']} left undecided", markup=False)

    emit(result, json_, show)


VerifierChoice = Literal["auto", "none", "rules", "llm"]


def _verifier(kind: str, model: str | None):  # noqa: ANN202 - a Verifier or None (import kept lazy)
    from kgr.errors import KgrValidationError

    if kind == "auto":  # with an extraction model configured, the LLM verifier re-reads by default
        kind = "llm" if model else "none"
    if kind == "none":
        if model:
            raise KgrValidationError("--model applies to --verify llm", field="model")
        return None
    from kgr.extract.verify import make_verifier

    return make_verifier(kind, model=model) if kind == "llm" else make_verifier(kind)  # type: ignore[arg-type]


def _round_line(s) -> str:  # noqa: ANN001 - a RoundSummary
    return s.describe()


def _print_explanation(why: EdgeExplanation) -> None:
    """The explanation as lines; every stored text (names, reasons, reviewers in the inputs) is
    printed with its control characters and bidi overrides escaped (:func:`kgr.text.controls.escape_unsafe`)."""
    from kgr.text.controls import escape_unsafe as esc

    docs = f" from {why.documents} document{'s' if why.documents != 1 else ''}" if why.documents else ""
    out.print(esc(f"({why.subject}) -[{why.relation}]-> ({why.object}): {why.status}, "
                  f"{why.votes} votes{docs}, confidence {why.confidence:.3f}"), markup=False)
    if why.features:
        from kgr.evidence.features import FEATURE_SET, FEATURES

        names = FEATURES if why.feature_set == FEATURE_SET else [f"f{i}" for i in range(len(why.features))]
        out.print(f"  p_hat {why.p_hat:.4f} from the features of its last scored decision: "
                  + ", ".join(f"{n}={v:.4g}" for n, v in zip(names, why.features)), markup=False)
    for ev in why.evidence:
        where = ev.document or ev.chunk_id or ev.source
        out.print(f"  said in {where}" + (f': "{" ".join(ev.quote.split())}"' if ev.quote else ""), markup=False)
    for d in why.decisions:
        out.print(esc(f"  v{d.version} {d.action}: {d.reason}"), markup=False)
        inputs = d.inputs
        if "p_hat" in inputs and "gate" in inputs:  # the calibrated policy: p_hat, the gate, what moved it
            tau = inputs.get("tau")
            out.print(esc(f"      p_hat = {inputs['p_hat']:.4f}, gate {inputs['gate']}, cut tau = "
                          f"{'none' if tau is None else f'{tau:.4f}'} (target FMR {inputs.get('target_fmr')})"),
                      markup=False)
            moved = ", ".join(f"{name} {value:+.2f}" for name, value in inputs.get("evidence", []))
            out.print(esc(f"      moved most (log-odds): {moved or 'nothing'}"), markup=False)
            continue
        for k, v in sorted(inputs.items()):
            out.print(esc(f"      {k} = {v}"), markup=False)


@app.command()
@errors_to_exit
def forget(ids: Annotated[list[str], typer.Argument(metavar="ID...", help=(
               "Document ids (a file's absolute path, a JSONL line's id), files or directories (every document read "
               "from them), or, with --sources, vote sources."))],
           sources: Annotated[bool, typer.Option("--sources", help="The ids are vote sources (e.g. chunk ids, the "
                                                                    "source field of staged JSONL), not documents.")] = False,
           quorum: Annotated[int, typer.Option(min=1, help="A promoted edge left with fewer votes is retired.")] = 2,
           dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would change; change nothing.")] = False,
           json_: JsonOpt = False) -> None:
    """Forget documents or sources: their votes, chunks and what only they supported, as one version.

    An existing file or directory stands for the documents ingested from it (a long file's parts, a
    JSONL file's lines); the rest are document ids as stored.
    """
    with open_engine() as kg:
        documents: list[str] = []
        if not sources:
            for i in ids:
                under = kg.documents_under([i]) if existing_path(i) is not None else []
                documents.extend(under or [i])
        rep = kg.forget(documents=documents, sources=ids if sources else [], quorum=quorum, dry_run=dry_run)

    def human(r) -> None:  # noqa: ANN001 - a ForgetReport
        head = "would forget" if r.dry_run else f"version {r.version}: forgot"
        out.print(f"{head} {r.sources} source(s) of {len(r.documents)} document(s): {r.votes_removed} votes, "
                  f"{r.chunks_removed} chunks; {r.edges_changed} edges changed, {r.edges_removed} removed, "
                  f"{r.promoted_retired} promoted retired, {len(r.entities_removed)} entities removed", markup=False)
        if r.merges_touched:
            out.print(f"{len(r.merges_touched)} merge(s) lost evidence: " + (
                "would be re-decided" if r.dry_run else f"version {r.unmerge_version} unmerged {len(r.unmerged)}, "
                f"re-decided by resolution version(s) {r.remerge_versions or 'none (no merge made again)'}"),
                markup=False)

    emit(rep, json_, human)


@app.command()
@errors_to_exit
def merge(keep: Annotated[str, typer.Argument(metavar="KEEP_KEY", help="Key of the entity that stays, TYPE:NAME (e.g. Person:ada lovelace).")],
          drop: Annotated[str, typer.Argument(metavar="DROP_KEY", help="Key of the entity merged into KEEP (kept, marked merged_into).")],
          json_: JsonOpt = False) -> None:
    """Merge entity DROP into entity KEEP (same type) as one version.

    DROP's pending edges and votes move to KEEP (votes united by source), its promoted edges are
    re-created on KEEP, its name becomes an alias of KEEP and later staging of it lands on KEEP.
    A rollback to an earlier snapshot restores the promoted edges only.
    """
    with open_engine() as kg:
        res = kg.merge_entities(keep, drop)
    emit(res, json_, lambda r: out.print(
        f"version {r.version}: merged {r.drop} into {r.keep}: {r.pending_moved} pending edges moved, "
        f"{r.pending_united} united ({r.votes_added} votes added), {r.self_loops} self-loops rejected, "
        f"{r.promoted_created} promoted edges re-created, {r.promoted_retired} retired, "
        f"{r.mentions_moved} mentions moved", markup=False))


@app.command()
@errors_to_exit
def age(xi: Annotated[float, typer.Option(min=0, help="Decay rate of pending edges, 1/day.")] = 0.1,
        ttl_days: Annotated[float, typer.Option(min=1e-9, help="Days without a new vote before a pending edge expires.")] = 30.0,
        xi_promoted: Annotated[float, typer.Option(min=0, help="Decay rate of promoted edges past the soft window, 1/day.")] = 0.01,
        soft_days: Annotated[float, typer.Option(min=0, help="Days a promoted edge keeps its full weight.")] = 7.0,
        hard_days: Annotated[float, typer.Option(min=1e-9, help="Days without a new vote before a promoted edge may retire.")] = 45.0,
        floor: Annotated[float, typer.Option(min=0, max=1, help="Retire promoted edges past the hard window whose weight "
                                                                "fell below this (0: never).")] = 0.0,
        json_: JsonOpt = False) -> None:
    """Decay edges not re-observed, expire stale pending ones and (with --floor) retire stale promoted ones as a version."""
    from pydantic import ValidationError

    from kgr.errors import KgrValidationError
    from kgr.engine import AgingConfig

    try:
        cfg = AgingConfig(xi=xi, ttl_days=ttl_days, xi_promoted=xi_promoted, soft_window_days=soft_days,
                          hard_window_days=hard_days, floor=floor)
    except ValidationError as exc:
        raise KgrValidationError.from_pydantic(exc) from exc
    with open_engine() as kg:
        rep = kg.age(cfg)
    emit(rep, json_, lambda r: out.print(f"aged {r.aged} edges, expired {r.expired} pending, retired {r.retired} "
                                         f"promoted" + (f" (version {r.version})" if r.version is not None else "")))


@app.command()
@errors_to_exit
def status(json_: JsonOpt = False) -> None:
    """Counts, current version and content hash."""
    with open_engine() as kg:
        st = kg.status()

    def human(s) -> None:  # noqa: ANN001
        from rich.table import Table

        t = Table(show_header=False)
        for k, v in s.model_dump().items():
            t.add_row(k, str(v))
        print_table(t)

    emit(st, json_, human)


@app.command()
@errors_to_exit
def demo(json_: JsonOpt = False) -> None:
    """Ingest examples/ with the offline rules extractor, promote, and print the report and the Browser URL.

    Uses NEO4J_URI when set, else the managed local Neo4j (started on first use). Safe to re-run:
    a second run finds every chunk already processed and stages nothing new.
    """
    from kgr.demo import run_demo

    report = run_demo(progress=not json_)
    emit(report, json_, lambda r: out.print(r.render(), markup=False, soft_wrap=True))


def main() -> None:  # pragma: no cover
    app()
