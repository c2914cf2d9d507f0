"""``kgr slice``: context slices for agents (cut one, verify one, list the policies)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from kgr.cli.common import JsonOpt, emit, errors_to_exit, open_engine, out
from kgr.cli.embed import ApiBaseOpt, ModelOpt, embedder

#: Largest slice file read (bytes): a slice of the largest budget (1,000,000 tokens) is far smaller.
MAX_SLICE_FILE = 64 * 1024 * 1024

app = typer.Typer(rich_markup_mode=None, invoke_without_command=True,
                  help="Context slices: the promoted graph around anchors, with provenance and an admissibility token.")


@app.callback()
@errors_to_exit
def slice_(ctx: typer.Context,
           anchor: Annotated[list[str] | None, typer.Option("--anchor", help="Entity key (TYPE:name), repeatable.")] = None,
           query: Annotated[str | None, typer.Option(
               help="Text whose best fulltext matches (and, with an embedding model, nearest names) are the anchors.")] = None,
           policy: Annotated[str, typer.Option(help="Slice policy (see --list-policies).")] = "default",
           budget_tokens: Annotated[int | None, typer.Option(help="Token budget (default: the policy's).")] = None,
           model: Annotated[str | None, typer.Option(help="Count tokens with this model's tokenizer (litellm).")] = None,
           list_policies: Annotated[bool, typer.Option("--list-policies", help="List the slice policies.")] = False,
           embedding_model: ModelOpt = None, embedding_api_base: ApiBaseOpt = None,
           json_: JsonOpt = False) -> None:
    """Cut a slice: `kgr slice --anchor Person:ada --json > slice.json`; the text is prompt-ready."""
    if ctx.invoked_subcommand is not None:
        return
    if list_policies:
        from kgr.slices import list_policies as policies

        rows = [{"policy_id": p.policy_id, "params_hash": p.params_hash(), **p.model_dump()} for p in policies()]
        emit(rows, json_, lambda rs: [out.print(f"{r['policy_id']:<14} {r['params_hash'][:12]}  radius {r['radius']}, "
                                                f"{r['max_nodes']} nodes, {r['budget_tokens']} tokens: "
                                                f"{r['description']}", markup=False) for r in rs])
        return
    with open_engine(embed=embedder(embedding_model, embedding_api_base) if query else None) as kg:
        s = kg.slice(anchor or [], query=query, policy=policy, budget_tokens=budget_tokens, model=model)
    emit(s, json_, lambda r: out.print(f"{r.text}\n-- slice {r.slice_id}, {r.tokens}/{r.budget_tokens} tokens "
                                       f"({r.token_counter}){', truncated' if r.truncated else ''}, token "
                                       f"{r.admissibility_token[:16]}...", markup=False, soft_wrap=True))


@app.command("verify")
@errors_to_exit
def verify(path: Annotated[Path, typer.Argument(help="A slice as kgr slice --json printed it ('-': stdin).")],
           json_: JsonOpt = False) -> None:
    """Check a slice's admissibility token: valid (issued here, unaltered) and current (graph unchanged).
    Exit code 0 when valid and current, 3 when valid but stale, 1 when invalid."""
    from pydantic import ValidationError

    from kgr.errors import KgrValidationError
    from kgr.model.jsontext import loads_strict
    from kgr.model.slices import ContextSlice

    where = "stdin" if str(path) == "-" else str(path)
    try:
        if str(path) == "-":
            raw = sys.stdin.buffer.read(MAX_SLICE_FILE + 1)
        else:
            with path.open("rb") as fh:
                raw = fh.read(MAX_SLICE_FILE + 1)
    except OSError as exc:  # missing, a directory, unreadable, a name too long
        raise KgrValidationError(f"cannot read {where}: {exc.strerror or exc}", field="slice") from None
    if len(raw) > MAX_SLICE_FILE:
        raise KgrValidationError(f"{where}: larger than {MAX_SLICE_FILE} bytes, not a slice", field="slice")
    try:
        s = ContextSlice.model_validate(loads_strict(raw))  # strict JSON: kgr.model.jsontext
    except KgrValidationError as exc:
        raise KgrValidationError(f"{where}: not a slice ({exc})", field="slice") from None
    except ValidationError as exc:
        raise KgrValidationError(f"{where}: not a slice ({KgrValidationError.from_pydantic(exc)})", field="slice") from None
    with open_engine() as kg:
        v = kg.verify_slice(s)
    emit(v, json_, lambda r: out.print(r.reason, markup=False))
    if not v.valid:
        raise typer.Exit(1)
    if not v.current:
        raise typer.Exit(3)
