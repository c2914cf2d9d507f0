"""The exception hierarchy of kgr: one root, :class:`KgrError`, and one subclass per kind of failure.

The CLI maps every ``KgrError`` to a one-line ``Error: ...`` message and exit code 1; any other
exception is a bug and propagates with its traceback.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "KgrError",
    "KgrValidationError",
    "KgrIdentifierError",
    "KgrSchemaError",
    "KgrSchemaMismatch",
    "KgrNeo4jUnavailable",
    "KgrRuntimeError",
    "KgrNotFound",
    "KgrExtractionError",
    "KgrConflict",
    "KgrBusy",
]


class KgrError(Exception):
    """Root of every error kgr raises on purpose."""


def _printable(value: Any) -> str:
    """``value`` as text safe for a one-line message: control and other unprintable characters
    (from hostile field names, say) are shown as escapes."""
    text = str(value)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


class KgrValidationError(KgrError, ValueError):
    """Input failed validation.

    Parameters
    ----------
    message:
        One line saying what is wrong.
    field:
        Dotted path of the failing field (``"relations.WORKS_AT.0.subject"``), when known.
    details:
        The pydantic error list (``ValidationError.errors()``), when the failure came from a model.
    """

    def __init__(self, message: str, *, field: str | None = None, details: list[dict[str, Any]] | None = None):
        self.field = field
        self.details = details or []
        super().__init__(f"{field}: {message}" if field else message)

    @classmethod
    def from_pydantic(cls, exc: Any, *, prefix: str = "") -> "KgrValidationError":
        """Build from a :class:`pydantic.ValidationError`, naming the first failing field."""
        errors = exc.errors(include_url=False, include_input=False)
        first = errors[0] if errors else {"loc": (), "msg": str(exc)}
        loc = ".".join(_printable(p) for p in first.get("loc", ()))
        field = f"{prefix}.{loc}" if prefix and loc else (prefix or loc or None)
        others = [".".join(_printable(x) for x in e.get("loc", ())) or "$" for e in errors[1:]]
        shown = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
        extra = f" (+{len(others)} more: {shown})" if others else ""
        return cls(f"{_printable(first.get('msg', 'invalid'))}{extra}", field=field, details=errors)


class KgrIdentifierError(KgrValidationError):
    """A label, relationship type or property key is not a safe identifier or not in the schema."""


class KgrSchemaError(KgrValidationError):
    """A KG schema file is malformed, or an assertion violates the schema."""


class KgrSchemaMismatch(KgrSchemaError):
    """The graph keeps another KG schema than the one given (``kgr init --schema S --migrate`` makes
    the given one the graph's)."""


class KgrNeo4jUnavailable(KgrError):
    """Neo4j cannot be reached, or went away during a unit of work."""


class KgrDatabaseError(KgrError):
    """The database refused a statement for its data (a constraint, a type, a size): the unit of work
    was rolled back. ``code`` is Neo4j's status code (``Neo.ClientError.…``)."""

    def __init__(self, message: str, *, code: str = ""):
        super().__init__(message)
        self.code = code


class KgrCypherBug(KgrDatabaseError):
    """One of kgr's own templates is invalid Cypher (a syntax or semantic error): a bug in kgr, never
    the input's fault; callers let it propagate."""


class KgrRuntimeError(KgrError):
    """The managed local Neo4j could not be installed, started or stopped (names the missing piece)."""


class KgrNotFound(KgrError):
    """A named thing (snapshot, edge key, entity, tool) does not exist."""


class KgrExtractionError(KgrError):
    """An extractor failed for a chunk (LLM error after retries, unrepairable output)."""


class KgrConflict(KgrError):
    """The request contradicts itself or the store's current state (the same edge labelled true and
    false in one call; a promotion round whose store moved on while it was deciding)."""


class KgrBusy(KgrConflict):
    """The store asked a write to wait: a promotion round holds the store's promotion lock
    (:mod:`kgr.store.promotion_lock`). Raised inside a write unit before it has written anything;
    :meth:`kgr.store.connection.Graph.write_unit` runs the unit again after a backoff, and raises
    this only when the store stayed busy past its wait bound. ``retry_after``: seconds until the
    lock's lease ends at the latest."""

    def __init__(self, message: str, *, retry_after: float = 0.0):
        super().__init__(message)
        self.retry_after = retry_after
