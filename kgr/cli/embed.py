"""``kgr embed``: embed every entity's name, so that ``kgr slice --query`` also finds anchors by meaning."""

from __future__ import annotations

from typing import Annotated

import typer

from kgr.cli.common import JsonOpt, emit, errors_to_exit, open_engine, out

app = typer.Typer(rich_markup_mode=None)

#: ``--embedding-model`` / ``--embedding-api-base`` as ``kgr slice`` and ``kgr embed`` take them.
ModelOpt = Annotated[str | None, typer.Option(
    "--embedding-model", envvar="KGR_EMBEDDING_MODEL",
    help="litellm embedding model (e.g. openai/text-embedding-3-small); key from KGR_EMBEDDING_API_KEY.")]
ApiBaseOpt = Annotated[str | None, typer.Option(
    "--embedding-api-base", envvar="KGR_EMBEDDING_API_BASE", help="OpenAI-compatible server of the embedding model.")]


def embedder(model: str | None, api_base: str | None):  # noqa: ANN201 - LiteLLMEmbedder | None (lazy import)
    """The embedder of ``--embedding-model`` (typer has read ``KGR_EMBEDDING_MODEL`` into it already);
    None without one, before importing the embedding client (~0.04 s of ``kgr resolve``'s start-up)."""
    if not model:
        return None
    from kgr.extract.embedding import make_embedder

    return make_embedder(model, api_base)


@app.command()
@errors_to_exit
def embed(model: ModelOpt = None, api_base: ApiBaseOpt = None,
          batch: Annotated[int, typer.Option(min=1, max=256, help="Names per embedding request.")] = 64,
          replace: Annotated[bool, typer.Option(
              "--replace", help="The model's vectors have another dimension than the index: replace the index.")] = False,
          json_: JsonOpt = False) -> None:
    """Embed the name of every entity that has no embedding from the model yet (resumable; a new model re-embeds all)."""
    from kgr.errors import KgrValidationError

    emb = embedder(model, api_base)
    if emb is None:
        raise KgrValidationError("give --embedding-model (or set KGR_EMBEDDING_MODEL)", field="embedding_model")

    def progress(done: int, total: int) -> None:
        if not json_:
            out.print(f"embedded {done}/{total}", markup=False)

    with open_engine(embed=emb) as kg:
        rep = kg.embed_entities(batch=batch, replace=replace, on_batch=progress)
    emit(rep, json_, lambda r: out.print(
        f"{r.embedded} entities embedded with {r.model} ({r.dimensions} dimensions) in {r.seconds:.1f} s; "
        f"{r.already} had one already, {r.entities} in the store", markup=False))
