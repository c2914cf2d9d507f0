"""CLI plumbing shared by every command: output, errors, progress.

``--json`` prints only data on stdout; progress, warnings and errors go to stderr. A
:class:`~kgr.errors.KgrError` becomes one line ``Error: ...`` and exit code 1; any other exception
is a bug and propagates with its traceback (never with locals or secrets).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import pydantic_core
import typer
from pydantic import BaseModel
from rich.console import Console

from kgr.errors import KgrError
from kgr.gc_freeze import cycle_collector_paused

__all__ = ["err", "out", "errors_to_exit", "emit", "JsonOpt", "SchemaOpt", "open_engine", "existing_path",
           "print_table", "check_output_path", "FMR_MAX", "check_fmr"]

err = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)
F = TypeVar("F", bound=Callable[..., Any])

JsonOpt = Annotated[bool, typer.Option("--json", help="Print data as JSON on stdout (for scripts).")]
SchemaOpt = Annotated[Path | None, typer.Option("--schema", help="KG schema JSON file (see schemas/kg_schema.schema.json).")]


#: The largest target false-match / false-promotion rate a ``--target-fmr`` option takes (the least is above 0).
FMR_MAX = 0.9999


def check_fmr(value: float | None) -> float | None:
    """``value`` of a ``--target-fmr`` option (a typer callback): a number in (0, FMR_MAX], or None
    when not given; else :class:`typer.BadParameter` saying so, NaN and the infinities named as no
    number (a range check alone lets NaN through or names only one end of the range)."""
    if value is None:
        return None
    if not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a number: give a number in (0, {FMR_MAX}]")
    if not 0.0 < value <= FMR_MAX:
        raise typer.BadParameter(f"{value:g} is outside (0, {FMR_MAX}]: give a number in (0, {FMR_MAX}]")
    return value


def errors_to_exit(fn: F) -> F:
    """Decorator: map a KgrError to a one-line ``Error: ...`` on stderr and exit code 1."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except KgrError as exc:
            lines = str(exc).splitlines() or [type(exc).__name__]
            err.print(f"Error: {lines[0]}", markup=False, soft_wrap=True)
            if len(lines) > 1:
                err.print("\n".join(lines[1:]), markup=False, soft_wrap=True, style="dim")
            raise typer.Exit(1) from None

    return wrapper  # type: ignore[return-value]


def existing_path(text: str) -> Path | None:
    """``text`` as a path when it names an existing file or directory, else None, also when it cannot
    be a path at all (a name longer than the system allows, a NUL byte): an argument that may be a
    path or an id (``kgr forget ID``) is then an id, not a traceback."""
    from kgr.ingest.loaders import path_kind  # lazy: fast --help

    return Path(text) if path_kind(text) is not None else None


def to_data(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [to_data(v) for v in value]
    if isinstance(value, dict):
        return {k: to_data(v) for k, v in value.items()}
    return value


def emit(value: Any, as_json: bool, human: Callable[[Any], None] | None = None) -> None:
    """Print ``value`` as JSON on stdout (``--json``), or through ``human`` (default: pretty JSON).

    Written by pydantic's serialiser, as :func:`json.dumps` with ``indent=2`` would (non-ASCII
    escaped, ``Infinity``/``NaN`` for non-finite floats outside models, ``str`` of unknown values)
    and six times faster on a resolution's 2.6 MB report (0.015 s against 0.093 s: ``json`` falls
    back to its pure-Python encoder when indenting). The cycle collector is paused meanwhile: the
    report's ~100,000 new dicts and lists have no cycles, but a full collection falling due among
    them rescanned the whole process (0.1–0.25 s after a resolution; :mod:`kgr.gc_freeze`)."""
    if as_json or human is None:
        with cycle_collector_paused():
            text = pydantic_core.to_json(to_data(value), indent=2, ensure_ascii=True, inf_nan_mode="constants",
                                         fallback=str)
        typer.echo(text.decode())
    else:
        human(value)


def print_table(table: Any) -> None:
    """Print a rich table on stdout at its natural width, whatever the terminal's: a pipe (80
    columns to rich) or a narrow window never cuts a value (``kgr metrics | cat`` shows every column)."""
    from rich.measure import Measurement

    width = Measurement.get(out, out.options.update(max_width=1_000_000), table).maximum
    if width <= out.width:
        out.print(table)
        return
    Console(file=out.file, width=width, highlight=False, soft_wrap=True, force_terminal=out.is_terminal,
            color_system=out.color_system).print(table)


def check_output_path(path: Path) -> Path:
    """``path`` if a file can be written there (its directory exists, it is no directory).

    Raises
    ------
    KgrValidationError
        Not so (one line, before anything is read or connected).
    """
    from kgr.errors import KgrValidationError

    if path.is_dir():
        raise KgrValidationError(f"{path} is a directory; give a file name", field="out")
    if not path.parent.is_dir():
        raise KgrValidationError(f"cannot write {path}: no directory {path.parent}", field="out")
    return path


def open_engine(schema: Path | None = None, *, embed: Any = None, migrate: bool = False):  # noqa: ANN201 - Engine (lazy import: fast --help)
    """The :class:`~kgr.engine.Engine` of a command: ``schema`` given, else the graph's own."""
    with cycle_collector_paused():  # imports: many long-lived objects, next to no garbage
        from kgr.engine import Engine
    return Engine.connect(schema=schema, embed=embed, migrate=migrate)
