"""Stopping a job whose LLM cannot work: no key, a rejected key, an unknown model, a wrong API base.

Two checks, one before the job and one during it:

- :func:`preflight`, before any document is read (nothing is written): the extractor's own check
  (:meth:`kgr.extract.llm.LLMExtractor.preflight`: a model litellm cannot route, or a provider
  whose ``*_API_KEY`` variable is unset while no key was given).
- :class:`FailFast`, on the job's finished chunks: the first chunk refused before any chunk
  succeeded stops the job with one error naming the fix. Refused means HTTP 401, 403 or 404
  (authentication, permission, no such model or path: the request itself is wrong, whatever the
  chunk; never retried) or a request the client would not send (reason ``credentials``: no usable
  key). Each chunk's failure is otherwise its own (it stays unprocessed; a re-run retries it), so
  without this a job whose every request is refused would send one request per chunk of the corpus.
  Once a chunk has succeeded the LLM works, and later refusals are ordinary chunk failures.

Nothing is lost when the job stops: the chunks in flight are cancelled, none was processed by the
refused LLM, and the documents and chunks read before the stop stay in the store unprocessed, so the
next run (with the fix) resumes them like any interrupted job.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgr.errors import KgrExtractionError
from kgr.ingest.report import ChunkFailure, ChunkOutcome

__all__ = ["FAIL_FAST_AFTER", "REFUSALS", "FailFast", "is_refusal", "preflight"]

#: Refused chunks, with no success before them, that stop a job.
FAIL_FAST_AFTER = 1
#: HTTP statuses that say the request itself is wrong, whatever the chunk.
REFUSALS = frozenset({401, 403, 404})
#: What to do about each refusal.
_FIX = {
    401: "the provider rejected the API key: set a valid key (e.g. OPENAI_API_KEY)",
    403: "the API key may not use this model: use a key or a model it allows",
    404: "no such model or API path: check --model and --api-base",
    None: "no usable API key: set the provider's key variable (e.g. OPENAI_API_KEY)",
}


def preflight(extractor: object) -> None:
    """Run ``extractor``'s own check of its configuration, when it has one (``preflight()``).

    Raises
    ------
    KgrExtractionError
        The check failed (unknown model, missing key): the message names the fix.
    """
    check = getattr(extractor, "preflight", None)
    if callable(check):
        check()


def is_refusal(fail: ChunkFailure | None) -> bool:
    """Whether a chunk's failure says that every request of the job would fail alike."""
    if fail is None:
        return False
    return fail.kind == "credentials" or (fail.kind == "request_error" and fail.http_status in REFUSALS)


@dataclass
class FailFast:
    """Counts the refused chunks until the first success (see the module docstring)."""

    after: int = FAIL_FAST_AFTER
    succeeded: bool = False
    refused: int = 0

    def observe(self, out: ChunkOutcome) -> None:
        """Take one finished chunk into account.

        Raises
        ------
        KgrExtractionError
            ``after`` chunks were refused and none succeeded.
        """
        if self.succeeded:
            return
        fail = out.failure
        if fail is None:
            self.succeeded = True
            return
        if not is_refusal(fail):
            return
        self.refused += 1
        if self.refused >= self.after:
            status = fail.http_status if fail.kind == "request_error" else None
            what = f"HTTP {status}" if status is not None else "no request sent"
            chunks = "the first chunk" if self.refused == 1 else f"the first {self.refused} chunks"
            raise KgrExtractionError(
                f"stopped: the LLM refused {chunks} ({what}: {fail.reason}); {_FIX[status]}, then re-run "
                "(chunks not processed are resumed)")
