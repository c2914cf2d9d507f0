"""How an ingestion job runs: :class:`IngestConfig` (validated once, by the API and the CLI alike)
and the extractor it names (options in ``docs/ingest.md``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kgr.extract.base import Extractor
from kgr.extract.llm_client import ApiBase
from kgr.ingest.chunking import ChunkingConfig
from kgr.model.promotion import DEFAULT_POLICY, PolicyName

__all__ = ["IngestConfig", "commit_linger", "make_extractor"]

_LLM_ONLY = ("model", "api_base", "input_cost_per_token", "output_cost_per_token")


class IngestConfig(BaseModel):
    """Every ingestion option, with its default."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    extractor: Literal["rules", "llm"] = Field(
        "rules", description="rules (offline) or llm; a model given without an extractor means llm")
    model: str | None = Field(None, description="litellm model name (llm extractor)")
    parser: Literal["none", "corenlp"] | None = Field(None, description=(
        "rules extractor: check each triple with a dependency parse (corenlp: a local Stanford CoreNLP server, "
        "jars fetched on first use; docs/extract.md); default: KGR_EXTRACT_PARSER, else none"))
    input_cost_per_token: float | None = Field(
        None, ge=0, description="USD per prompt token, with output_cost_per_token: the model's price when litellm "
                                "has none (llm extractor)")
    output_cost_per_token: float | None = Field(None, ge=0, description="USD per completion token (llm extractor)")
    api_base: ApiBase = Field(None, description="OpenAI-compatible base URL (llm extractor)")
    api_key: str | None = Field(None, repr=False, exclude=True,
                                description="API key (llm extractor); default: the provider's environment variable")
    timeout: float = Field(60.0, gt=0, le=3600, description="seconds per LLM request (each attempt)")
    max_attempts: int = Field(4, ge=1, le=20, description="LLM requests per call, retries of transient errors included")
    concurrency: int = Field(4, ge=1, le=256, description=(
        "LLM requests in flight at once (the llm extractor admits twice as many chunks to extraction); chunks "
        "in extraction at once with the rules extractor"))
    commit_chunks: int = Field(32, ge=1, le=1000, description="most chunks committed together in one write transaction")
    commit_linger: float | None = Field(None, ge=0, le=5, description=(
        "seconds the writer waits for more drafted chunks when fewer than commit_chunks are ready (fewer, larger "
        "transactions; adds at most this to a chunk's latency); default: 0 in process, 0.05 with workers, whose "
        "drafted chunks arrive one by one"))
    writers: int = Field(1, ge=1, le=16, description="write transactions in flight at once")
    chunking: ChunkingConfig = Field(default_factory=ChunkingConfig)
    max_rounds: int = Field(3, ge=1, le=20, description="extraction rounds per chunk (density/feedback loop)")
    similarity_threshold: float = Field(0.8, ge=0, le=1, description=(
        "the disambiguation step's fuzzy threshold; used only with resolve off (with resolve on a name links "
        "only to an entity it names exactly, and the job's resolution decides near-namesakes)"))
    disambiguation_cache: int = Field(
        65_536, ge=0, le=10_000_000,
        description="most entity names whose unique exact match in the store is remembered for the rest of the run "
                    "(they are not looked up again); 0: look every name up")
    promote_every: int = Field(0, ge=0, description="run a promotion round every N chunks (0 = only at the end)")
    promote: bool = True
    resolve: bool = Field(True, description=(
        "at the end of the job, before the final promotion, resolve entities (kgr resolve: blocking, a "
        "Fellegi-Sunter model, constrained clustering; merges and splits as one version), so that the job's own "
        "documents are matched with each other"))
    resolve_target_fmr: float = Field(0.02, gt=0, lt=1, description="the share of wrong merges that step holds to")
    resolve_splits: bool = Field(False, description=(
        "that step also applies the splits it finds; off by default: inside one job a conflicting functional "
        "value (one chunk's wrong birthplace) is as likely extraction noise as a second person, and promotion "
        "already holds the conflicting fact; the splits are listed in the report and `kgr resolve` applies them"))
    final_promotion_rounds: int = Field(1000, ge=1, description=(
        "at the end, promotion rounds until the backlog is worked through (a round decides at most "
        "5,000 candidates and promotes at most 1,000), at most this many"))
    prune: bool = Field(False, description=(
        "after the run, forget the documents read earlier from files at or under the given paths that this run "
        "did not read (deleted files); a file that failed to load is never pruned"))
    forget_quorum: int = Field(2, ge=1, le=1000, description=(
        "when an edited or pruned document's votes are forgotten, a promoted edge left with fewer votes is retired"))
    executor: Literal["inprocess", "process", "ray"] = Field("inprocess", description=(
        "where chunks are drafted (extraction, the tool loop, disambiguation): in this process, in local worker "
        "processes, or in Ray actors (the kgr[ray] extra); writes are this process's in every case"))
    workers: int | None = Field(None, ge=1, le=1024, description=(
        "worker processes or Ray actors (process and ray executors; concurrency is shared among them); "
        "default: the machine's CPUs, as many as its available memory holds at 350 MiB each (process), "
        "the Ray cluster's CPUs (ray)"))
    ray_address: str | None = Field(None, description=(
        "the Ray cluster to run on (ray executor): host:port of its GCS, or ray://host:port (Ray Client, "
        "needs ray[client]); default: RAY_ADDRESS, else a local Ray started for the job"))
    policy: PolicyName = Field(
        DEFAULT_POLICY, description="policy of the promotion rounds (kgr ingest --policy; ingest() calls the promote callable)")


    @model_validator(mode="before")
    @classmethod
    def _model_means_llm(cls, data: Any) -> Any:
        """``IngestConfig(model=...)`` without ``extractor`` selects the llm extractor, like ``kgr ingest
        --model`` (so do the other LLM-only options)."""
        if isinstance(data, dict) and "extractor" not in data and any(data.get(k) is not None for k in _LLM_ONLY):
            data = {**data, "extractor": "llm"}
        return data

    @model_validator(mode="after")
    def _llm_options_need_llm(self) -> "IngestConfig":
        if self.extractor == "rules":
            given = [n for n in _LLM_ONLY if getattr(self, n) is not None]
            if given:
                raise ValueError(f"{' and '.join(repr(n) for n in given)} {'apply' if len(given) > 1 else 'applies'} "
                                 "to the llm extractor only, not to 'extractor'='rules'")
        if self.executor == "inprocess" and self.workers is not None:
            raise ValueError("'workers' applies to the process and ray executors, not to 'executor'='inprocess'")
        if self.executor != "ray" and self.ray_address is not None:
            raise ValueError(f"'ray_address' applies to the ray executor only, not to 'executor'='{self.executor}'")
        if (self.input_cost_per_token is None) != (self.output_cost_per_token is None):
            raise ValueError("give both 'input_cost_per_token' and 'output_cost_per_token', or neither")
        return self


def commit_linger(config: IngestConfig) -> float:
    """``config.commit_linger``, or its default for the executor."""
    if config.commit_linger is not None:
        return config.commit_linger
    return 0.0 if config.executor == "inprocess" else 0.05


def make_extractor(config: IngestConfig) -> Extractor:
    """The configured extractor, through :func:`kgr.extract.make_extractor`: ``rules`` (offline,
    default) or ``llm`` (litellm, with the config's api_base/api_key/timeout/attempts and
    ``max_concurrency = concurrency``).

    Raises
    ------
    KgrExtractionError
        ``llm`` without a model.
    """
    from kgr.extract import make_extractor as pick

    if config.extractor == "llm":
        from kgr.extract.llm_client import RetryPolicy

        return pick("llm", model=config.model, api_base=config.api_base, api_key=config.api_key,
                    timeout=config.timeout, retry=RetryPolicy(max_attempts=config.max_attempts),
                    max_concurrency=config.concurrency, input_cost_per_token=config.input_cost_per_token,
                    output_cost_per_token=config.output_cost_per_token)
    return pick("rules", parser=config.parser)
