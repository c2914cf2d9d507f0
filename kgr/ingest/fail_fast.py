"""Stopping a job whose LLM refuses every request: a wrong key, model name or API base.

Each chunk's failure is its own (it stays unprocessed; a re-run retries it), so a job whose every
request is refused would otherwise send one request per chunk of the whole corpus and list each
failure. :class:`FailFast` watches the job's finished chunks: when the first
:data:`FAIL_FAST_AFTER` of them were refused with HTTP 401, 403 or 404 (authentication,
permission, no such model or path; never retried) before any chunk succeeded, it stops the job with
one error saying so. Nothing is lost: no chunk was processed, and a re-run resumes. Once a chunk has
succeeded the LLM works, and later refusals are ordinary chunk failures.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgr.errors import KgrExtractionError
from kgr.ingest.report import ChunkOutcome

__all__ = ["FAIL_FAST_AFTER", "REFUSALS", "FailFast"]

#: Refused chunks, with no success before them, that stop a job.
FAIL_FAST_AFTER = 8
#: HTTP statuses that say the request itself is wrong, whatever the chunk.
REFUSALS = frozenset({401, 403, 404})


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
        if fail.kind != "request_error" or fail.http_status not in REFUSALS:
            return
        self.refused += 1
        if self.refused >= self.after:
            raise KgrExtractionError(
                f"stopped: the LLM refused the first {self.refused} chunks with HTTP {fail.http_status} "
                f"({fail.reason}); no chunk was processed: fix the model, its key or the API base and re-run")
