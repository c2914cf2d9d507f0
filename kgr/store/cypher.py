"""The Cypher template layer: every statement lives in ``cypher/*.cypher.j2``.

One Jinja2 environment (package loader over ``kgr.cypher``, ``StrictUndefined``) renders templates.
Templates may interpolate **identifiers only** (labels, relationship types, property keys), and
:func:`render` checks every identifier in the context against :data:`IDENTIFIER_RE` (and, when a
schema is given, against the schema's vocabulary) before rendering. Values never enter the text:
they travel as ``$params``. Fragments several statements share ("the current promoted edge", "the
staged edge by its endpoints' keys") are macros in ``cypher/macros.j2``, written once.

Tools outside the package (the benchmarks under ``scripts/``) keep their own templates beside them
and make them findable with :func:`add_template_dir`; the package's templates always win a name.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping

import jinja2

from kgr.errors import KgrIdentifierError
from kgr.model.canonical import validate_identifier
from kgr.model.schema import KGSchema

__all__ = ["render", "validate_identifiers", "template_names", "add_template_dir"]


#: Directories searched after the package's templates (:func:`add_template_dir`), in order added.
_EXTRA_DIRS: list[str] = []


@functools.cache
def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.ChoiceLoader([jinja2.PackageLoader("kgr.cypher", ""), jinja2.FileSystemLoader(_EXTRA_DIRS)]),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def validate_identifiers(values: Iterable[object], *, kind: str, schema: KGSchema | None = None) -> list[str]:
    """Validate many identifiers; with a closed schema, entity labels/relation types must be declared."""
    allowed: Iterable[str] | None = None
    if schema is not None and not schema.is_open:
        if kind == "label":
            allowed = schema.entity_types.keys()
        elif kind == "relationship type":
            allowed = schema.relation_types.keys()
    return [validate_identifier(v, kind=kind, allowed=allowed) for v in values]


def _check_context(context: Mapping[str, object]) -> None:
    for key, value in context.items():
        if isinstance(value, str):
            validate_identifier(value, kind=key)
        elif isinstance(value, (list, tuple, set, frozenset)):
            for v in value:
                validate_identifier(v, kind=key)
        elif isinstance(value, bool) or isinstance(value, int) or value is None:
            continue  # flags and sizes steer template structure, never text
        else:
            raise KgrIdentifierError(f"template context {key!r} must be identifiers, flags or ints", field=key)


def render(name: str, **identifiers: object) -> str:
    """Render ``cypher/<name>.cypher.j2`` with validated identifiers.

    The text of a (name, identifiers) pair is kept once rendered (the last 4,096): the same
    statements are sent thousands of times, and a lookup costs a small fraction of a rendering.

    >>> "MERGE" in render("stage_votes")
    True
    """
    try:
        key = tuple(sorted((k, tuple(v) if isinstance(v, (list, tuple)) else v) for k, v in identifiers.items()))
        hash(key)
    except TypeError:  # a set (rendered as given, not kept), or a dict...: which validation refuses
        _check_context(identifiers)
        return _env().get_template(f"{name}.cypher.j2").render(**identifiers)
    return _rendered(name, key)


@functools.lru_cache(maxsize=4096)
def _rendered(name: str, key: tuple) -> str:
    identifiers = {k: list(v) if isinstance(v, tuple) else v for k, v in key}
    _check_context(identifiers)
    return _env().get_template(f"{name}.cypher.j2").render(**identifiers)


def add_template_dir(path: str | os.PathLike[str]) -> None:
    """Let :func:`render` (and so :class:`~kgr.store.connection.Graph`) also find templates in
    ``path``, after the package's own: for tools that are not part of kgr, such as the benchmarks,
    whose templates stay beside them instead of shipping in the package. Their templates may import
    ``macros.j2``. Idempotent.
    """
    where = os.path.abspath(path)
    if where not in _EXTRA_DIRS:
        _EXTRA_DIRS.append(where)
        _env.cache_clear()
        _rendered.cache_clear()


def template_names() -> list[str]:
    """Names of every template :func:`render` can find (without the ``.cypher.j2`` suffix)."""
    return sorted(t[: -len(".cypher.j2")] for t in _env().list_templates() if t.endswith(".cypher.j2"))
