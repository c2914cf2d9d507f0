"""``kgr review queue|label``: the review loop for people."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from kgr.cli.common import JsonOpt, emit, err, errors_to_exit, open_engine, out
from kgr.errors import KgrValidationError
from kgr.model.jsontext import json_lines, loads_strict
from kgr.model.review import EdgeLabel
from kgr.text.controls import escape_unsafe

app = typer.Typer(rich_markup_mode=None, no_args_is_help=True, help="Label the candidates whose answer would teach the scorer most.")

#: Largest label file read (bytes).
MAX_LABEL_FILE = 50 * 1024 * 1024


def read_labels(path: Path, model: type = EdgeLabel) -> list:
    """Every line of a label JSONL file (``model`` lines: edge labels, or pair labels); any bad line
    fails the whole file with its line number."""
    from kgr.ingest.loaders import path_kind

    if path_kind(path) != "file":
        raise KgrValidationError(f"no such file: {path}", field="path")
    if path.stat().st_size > MAX_LABEL_FILE:
        raise KgrValidationError(f"{path} is larger than {MAX_LABEL_FILE} bytes", field="path")
    labels: list = []
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise KgrValidationError(f"{path} is not UTF-8 (byte {exc.start})", field="path") from None
    except OSError as exc:
        raise KgrValidationError(f"cannot read {path}: {exc.strerror or exc}", field="path") from None
    for n, line in json_lines(text):  # split on "\n" only: U+2028 may stand inside a JSON string
        try:
            labels.append(model.model_validate(loads_strict(line)))
        except KgrValidationError as exc:  # duplicate keys, NaN, nesting (kgr.model.jsontext)
            raise KgrValidationError(f"{path}:{n}: {exc} (nothing was recorded)", field="labels") from None
        except ValidationError as exc:
            err = KgrValidationError.from_pydantic(exc)
            raise KgrValidationError(f"{path}:{n}: {err} (nothing was recorded)", field="labels") from None
    return labels


@app.command("queue")
@errors_to_exit
def queue(limit: Annotated[int, typer.Option(min=1, max=1000, help="Items at most.")] = 20,
          audit_share: Annotated[float, typer.Option(
              min=0.0, max=1.0, help="Share of uniform random picks (calibration audits) in the queue.")] = 0.25,
          json_: JsonOpt = False) -> None:
    """The candidates whose label would teach the scorer most (uncertainty about the cut x impact), with evidence.

    Answer them in a JSONL file, one line each: {"key": ..., "label": true|false, "reviewer": ...},
    and record it with `kgr review label FILE`.
    """
    with open_engine() as kg:
        q = kg.review_queue(limit=limit, audit_share=audit_share)

    def say(text: str) -> None:  # stored text (names, quotes): control characters and bidi overrides escaped
        out.print(escape_unsafe(text), markup=False)

    def show(q) -> None:  # noqa: ANN001 - a ReviewQueue
        tau = "none yet" if q.tau is None else f"{q.tau:.4f}"
        say(f"{len(q.items)} candidates to review (promotion cut tau = {tau})")
        for it in q.items:
            say(f"{it.key}  p_hat={it.p_hat:.3f}  {it.why} {it.priority:.3f}  {it.status}")
            say(f"    ({it.subject}) -[{it.relation}]-> ({it.object})  votes {it.votes}, documents {it.documents}")
            for v in it.verdicts:
                say(f"    verifier: {v}")
            for e in it.evidence[:3]:
                where = e.document or e.source
                quote = f': "{e.quote}"' if e.quote else ""
                say(f"    from {where}{quote}")

    emit(q, json_, show)


@app.command("label")
@errors_to_exit
def label(path: Annotated[Path, typer.Argument(metavar="FILE.jsonl", help="Lines {\"key\", \"label\", \"reviewer\"}.")],
          json_: JsonOpt = False) -> None:
    """Record labels as one version: a promoted edge labelled false is retired and a staged one
    rejected at once; the rest (the scorer's refit, edges labelled true) takes effect at the next
    promotion round (`kgr promote`), which this command says."""
    labels = read_labels(path)
    with open_engine() as kg:
        rep = kg.label(labels)
    emit(rep, json_, lambda r: out.print(
        f"version {r.version}: {r.labelled} labels recorded ({r.relabelled} replaced), {r.retired} promoted edges "
        f"retired, {r.rejected} staged edges rejected"
        + (f", {r.reopened} rejected edges labelled true back in play" if r.reopened else ""), markup=False))
    if rep.labelled:
        err.print("note: the labels take effect on promotion at the next round: run `kgr promote` (the scorer refits "
                  "on them; edges labelled true are promoted when the round accepts them)", markup=False,
                  soft_wrap=True)


@app.command("pairs")
@errors_to_exit
def pairs(limit: Annotated[int, typer.Option(min=1, max=1000, help="Pairs at most.")] = 20,
          json_: JsonOpt = False) -> None:
    """The entity pairs the last `kgr resolve` was unsure about, most uncertain first, with their evidence.

    Answer them in a JSONL file, one line each: {"a": KEY, "b": KEY, "label": true|false, "reviewer": ...}
    (true: the same entity), and record it with `kgr review label-pairs FILE`; the next resolution uses them.
    """
    with open_engine() as kg:
        items = kg.review_pairs(limit=limit)

    def show(items) -> None:  # noqa: ANN001 - list[PairEvidence]
        out.print(f"{len(items)} entity pairs to review", markup=False)
        for e in items:
            comps = ", ".join(f"{c.comparison}={c.level}" for c in e.comparisons if c.level >= 0)
            out.print(f"{e.a}  |  {e.b}  p={e.probability:.3f}  {comps}", markup=False)

    emit(items, json_, show)


@app.command("label-pairs")
@errors_to_exit
def label_pairs(path: Annotated[Path, typer.Argument(metavar="FILE.jsonl",
                                                     help="Lines {\"a\", \"b\", \"label\", \"reviewer\"}.")],
                json_: JsonOpt = False) -> None:
    """Record merge (true) / no-merge (false) labels on entity pairs; the next `kgr resolve` fits on them."""
    from kgr.model.resolution import PairLabel

    labels = read_labels(path, PairLabel)
    with open_engine() as kg:
        rep = kg.label_pairs(labels)
    emit(rep, json_, lambda r: out.print(f"{r.labelled} pair labels recorded ({r.relabelled} replaced)", markup=False))


__all__ = ["app", "read_labels"]
