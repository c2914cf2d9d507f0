"""``kgr ingest``: the options become one :class:`~kgr.ingest.config.IngestConfig` (its validators
are the only ones; their messages are shown with option names), then the job runs with a progress
display (:mod:`kgr.cli.progress`: totals and ETA on a terminal, periodic lines in logs) and a report."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from kgr.cli.embed import ApiBaseOpt, ModelOpt, embedder
from kgr.cli.common import JsonOpt, emit, err, errors_to_exit, open_engine, out
from kgr.cli.progress import IngestProgress, corpus_size
from kgr.model.promotion import DEFAULT_POLICY, PolicyName

app = typer.Typer(rich_markup_mode=None)

VerifyChoice = Literal["auto", "none", "rules", "llm"]


def as_flags(message: str, options: frozenset[str] | set[str]) -> str:
    """A config message in the CLI's words: a quoted option name ``'input_cost_per_token'`` becomes
    ``--input-cost-per-token``, ``'extractor'='rules'`` becomes ``--extractor rules``; other quoted
    words (values) stay.

    >>> as_flags("'model' applies to the llm extractor only, not to 'extractor'='rules'", {"model", "extractor"})
    '--model applies to the llm extractor only, not to --extractor rules'
    """
    def flag(m: re.Match[str]) -> str:
        if m.group(1) not in options:
            return m.group(0)
        name = "--" + m.group(1).replace("_", "-")
        return name if m.group(2) is None else f"{name} {m.group(2)}"

    return re.sub(r"'([a-z_]+)'(?:='([^']*)')?", flag, message.removeprefix("Value error, "))


#: The options that set a field of a nested config: ``--chunk-size`` is ``chunking.size``.
_NESTED_OPTIONS = {"chunking": {"size": "chunk_size", "overlap": "chunk_overlap"}}


def _option_names(loc: tuple[Any, ...], message: str) -> tuple[str, str | None]:
    """A config error's message and field as options: the quoted field names of a nested config
    (``chunking``'s ``'overlap'``) become the options that set them (``'chunk_overlap'``), and the
    field is the option (None when the error is the nested config's own, about several of its fields)."""
    nested = _NESTED_OPTIONS.get(str(loc[0])) if loc else None
    if nested is None:
        return message, (f"'{loc[0]}'" if loc else None)
    for name, option in nested.items():
        message = message.replace(f"'{name}'", f"'{option}'")
    return message, (f"'{nested[loc[1]]}'" if len(loc) > 1 and loc[1] in nested else None)


def ingest_config(options: dict[str, Any]):  # noqa: ANN201 - IngestConfig (import kept lazy for fast --help)
    """``IngestConfig`` from the options given (None: not given, the config's default applies).

    Raises
    ------
    KgrValidationError
        The config's validators refused the options (message and field in option names).
    """
    from pydantic import ValidationError

    from kgr.errors import KgrValidationError
    from kgr.ingest.config import IngestConfig

    try:
        return IngestConfig.model_validate({k: v for k, v in options.items() if v is not None})
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        names = set(IngestConfig.model_fields) | {o for n in _NESTED_OPTIONS.values() for o in n.values()}
        message, field = _option_names(tuple(first.get("loc") or ()), str(first["msg"]))
        raise KgrValidationError(as_flags(message, names), field=field and as_flags(field, names)) from exc


def default_overlap(chunk_size: int) -> int:
    """``--chunk-overlap`` when not given: 64 tokens, or a quarter of a chunk size of 64 or less (an
    overlap must be smaller than the size; a given one that is not is refused).

    >>> default_overlap(512), default_overlap(64)
    (64, 16)
    """
    return 64 if chunk_size > 64 else chunk_size // 4


def _verifier(verify: VerifyChoice, cfg):  # noqa: ANN001, ANN202 - IngestConfig -> Verifier | None
    """The re-reader for the candidates the calibrated policy escalates (``auto``: the extractor's kind)."""
    kind = cfg.extractor if verify == "auto" else verify
    if kind == "none" or (verify == "auto" and kind == "llm" and not cfg.model):
        return None  # (an llm extractor without --model is reported by the ingestion itself)
    from kgr.extract.verify import make_verifier

    return make_verifier(kind, model=cfg.model, api_base=cfg.api_base) if kind == "llm" else make_verifier(kind)


def _exit_status(report, paths: list[Path]) -> None:  # noqa: ANN001 - an IngestReport
    if report.documents == 0:
        err.print(f"Error: nothing to ingest under {', '.join(str(p) for p in paths)} (kgr reads .txt, .md, .rst, .html, .jsonl "
                  "and .pdf files" + (f"; {len(report.load_issues)} could not be read" if report.load_issues else "")
                  + ")", markup=False, soft_wrap=True)
        raise typer.Exit(2)
    if report.chunks_failed:
        err.print(f"Error: {len(report.chunks_failed)} chunk(s) failed (listed in the report); "
                  "re-run the same command to retry them", markup=False, soft_wrap=True)
        raise typer.Exit(2)


def _run_job(kg, paths: list[Path], cfg, verifier):  # noqa: ANN001, ANN202 - Engine, IngestConfig, Verifier -> IngestReport
    """The job on ``kg``'s graph and schema, with its progress display (one-line errors first)."""
    from kgr.errors import KgrNeo4jUnavailable
    from kgr.litellm_offline import openai_http_route_during

    kg.require_schema()
    kg.init()
    kg.check_extractor(cfg)  # an unknown model or a missing key: one line, before any progress
    files, size = corpus_size(paths)
    with IngestProgress(err, files=files, size=size) as progress:
        rounds = {"n": 0}

        def next_round() -> None:
            rounds["n"] += 1
            progress.set_phase(f"promoting, round {rounds['n']}")

        try:
            with openai_http_route_during(cfg.model, cfg.api_base):  # docs/ingest.md, "The LLM route"
                return kg.ingest(paths, cfg, on_progress=progress, on_round=next_round, verifier=verifier)
        except KgrNeo4jUnavailable as exc:
            # exit now: database calls still retrying in worker threads are abandoned (each chunk's
            # votes commit with its processed mark, so nothing is half-written; a re-run resumes)
            _stop_now(progress, f"Error: {str(exc).splitlines()[0]}", 1)
        except KeyboardInterrupt:  # Ctrl-C: the chunks written stay processed, a re-run resumes
            _stop_now(progress, progress.interrupted(), 130)


def _stop_now(progress: IngestProgress, message: str, code: int) -> None:
    """End the display, print ``message`` and exit with ``code`` at once (threads still at work are
    abandoned: each chunk's votes commit with its processed mark, so nothing is half-written)."""
    progress.stop()
    err.print(message, markup=False, soft_wrap=True)
    sys.stderr.flush()
    sys.stdout.flush()
    os._exit(code)


@app.command()
@errors_to_exit
def ingest(paths: Annotated[list[Path], typer.Argument(metavar="PATH...", help="Files or directories (.txt .md .rst .html .jsonl .pdf).")],
           schema: Annotated[Path | None, typer.Option("--schema", help=(
               "KG schema JSON file (stored in the graph on first use); default: the graph's schema."))] = None,
           extractor: Annotated[str | None, typer.Option(
               help="rules (offline) or llm. Default: llm when --model is given, else rules.")] = None,
           model: Annotated[str | None, typer.Option(
               help="litellm model name (e.g. openai/gpt-4o-mini); implies --extractor llm.")] = None,
           parser: Annotated[str | None, typer.Option(
               help="rules extractor: none, or corenlp to check each triple with a dependency parse (a local "
                    "Stanford CoreNLP server; ~480 MB of jars fetched once). Default: KGR_EXTRACT_PARSER, else none.")] = None,
           api_base: Annotated[str | None, typer.Option(help="OpenAI-compatible base URL (the key comes from the provider's environment variable).")] = None,
           input_cost_per_token: Annotated[float | None, typer.Option(
               help="USD per prompt token, for a model litellm cannot price (with --output-cost-per-token).")] = None,
           output_cost_per_token: Annotated[float | None, typer.Option(
               help="USD per completion token (with --input-cost-per-token).")] = None,
           timeout: Annotated[float | None, typer.Option(help="Seconds per LLM request (default 60).")] = None,
           max_attempts: Annotated[int | None, typer.Option(help="LLM requests per call, retries included (default 4).")] = None,
           concurrency: Annotated[int | None, typer.Option(help="LLM requests (rules: chunks) in flight (default 4).")] = None,
           chunk_size: Annotated[int, typer.Option(min=16, help="Chunk size in tokens (~4 chars).")] = 512,
           chunk_overlap: Annotated[int | None, typer.Option(min=0, help=(
               "Overlap in tokens, smaller than --chunk-size (default 64, or a quarter of a --chunk-size of "
               "64 or less)."))] = None,
           max_rounds: Annotated[int | None, typer.Option(help="Extraction rounds per chunk (default 3).")] = None,
           promote_every: Annotated[int | None, typer.Option(help="Promotion round every N chunks (default 0: at the end).")] = None,
           no_promote: Annotated[bool, typer.Option("--no-promote", help="Stage only.")] = False,
           no_resolve: Annotated[bool, typer.Option("--no-resolve", help="Skip the closing kgr resolve.")] = False,
           policy: Annotated[PolicyName, typer.Option(help="Promotion policy: calibrated, gedig or quorum.")] = DEFAULT_POLICY,
           prune: Annotated[bool, typer.Option("--prune", help=(
               "Also forget the documents ingested earlier from files under PATH... that are gone (deleted files, "
               "vanished JSONL ids); a file that fails to load keeps its documents."))] = False,
           forget_quorum: Annotated[int | None, typer.Option(help=(
               "When an edited or pruned document's votes are forgotten, a promoted edge left with fewer votes is "
               "retired (default 2)."))] = None,
           executor: Annotated[Literal["inprocess", "process", "ray"], typer.Option(
               help="Where chunks are drafted (extraction, tools, disambiguation): in this process, in local worker "
                    "processes, or in Ray actors (pip install 'kgr[ray]'). Writes stay in this process.")] = "inprocess",
           workers: Annotated[int | None, typer.Option(
               help="Worker processes or Ray actors; --concurrency is shared among them (default: the CPUs of the "
                    "machine, as many as its available memory holds at 350 MiB each, or of the Ray cluster).")] = None,
           ray_address: Annotated[str | None, typer.Option(
               help="Ray cluster address: host:port of its GCS, or ray://host:port with ray[client] (default: "
                    "RAY_ADDRESS, else a local Ray started for the job).")] = None,
           verify: Annotated[VerifyChoice, typer.Option(
               help="Re-read the chunks of candidates the calibrated policy escalates: auto = the verifier "
                    "that matches the extractor (rules, or llm with --model).")] = "auto",
           embedding_model: ModelOpt = None, embedding_api_base: ApiBaseOpt = None,
           json_: JsonOpt = False) -> None:
    """Ingest documents: chunk, extract with the tool-driven loop, stage votes, promote (and, with an
    embedding model, embed the new entities' names for slices by meaning).

    Resumable: chunks already processed are skipped, so re-run an interrupted job as it was. A file
    is a document with a stable id (its path): when it changed since the last run, the chunks its new
    text no longer has are forgotten and only the new chunks are extracted. Exit code 0 when every
    chunk was processed, 2 when some failed (they are listed; a re-run retries them) or when the paths
    hold no document kgr can read (then nothing is written: no prune, resolution or promotion round);
    130 when interrupted (Ctrl-C: it says how many chunks are done; re-run the same command to resume).
    """
    cfg = ingest_config(dict(
        extractor=extractor, model=model, parser=parser, api_base=api_base, input_cost_per_token=input_cost_per_token,
        output_cost_per_token=output_cost_per_token, timeout=timeout, max_attempts=max_attempts,
        concurrency=concurrency, max_rounds=max_rounds, promote_every=promote_every, promote=not no_promote, resolve=not no_resolve,
        policy=policy, prune=prune, forget_quorum=forget_quorum,
        executor=executor, workers=workers, ray_address=ray_address,
        chunking={"size": chunk_size,
                  "overlap": default_overlap(chunk_size) if chunk_overlap is None else chunk_overlap}))
    verifier = _verifier(verify, cfg)
    with open_engine(schema, embed=embedder(embedding_model, embedding_api_base)) as kg:
        report = _run_job(kg, paths, cfg, verifier)
    emit(report, json_, lambda r: out.print(r.render(), markup=False, soft_wrap=True))
    if report.files_skipped:
        err.print(report.skipped_files_line(), markup=False, soft_wrap=True)
    _exit_status(report, paths)
