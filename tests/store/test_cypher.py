"""The template layer (kgr.store.cypher): every template renders, shared fragments are written once,
benchmark templates stay out of the package. No database needed."""

from __future__ import annotations

import itertools
import os
import re
from importlib.resources import files

import jinja2.meta
import pytest

from kgr.store import cypher
from kgr.store.cypher import add_template_dir, render, template_names

PACKAGE = files("kgr.cypher")


#: Context variables that are not flags (lists of identifiers, sizes), with the values to render them with.
IDENTIFIER_LISTS = {"types": [["KNOWS"], ["KNOWS", "WORKS_AT"]], "dimensions": [8, 1536]}


def _flags(name: str) -> list[str]:
    """The context variables a template reads (flags steering its structure, or identifier lists)."""
    env = cypher._env()
    source = env.loader.get_source(env, f"{name}.cypher.j2")[0]
    return sorted(jinja2.meta.find_undeclared_variables(env.parse(source)))


@pytest.mark.parametrize("name", template_names())
def test_every_template_renders_under_every_flag(name: str) -> None:
    flags = _flags(name)
    for combo in itertools.product(*[IDENTIFIER_LISTS.get(f, [False, True]) for f in flags]):
        text = render(name, **dict(zip(flags, combo)))
        code = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("//")]
        assert code, name
        assert "{{" not in text and "{%" not in text, name


def test_the_current_promoted_edge_is_written_once() -> None:
    """`valid_to IS NULL` (the current promoted edge, and its variants) lives in macros.j2 only."""
    spelled = [p.name for p in PACKAGE.iterdir()
               if p.name.endswith(".cypher.j2") and re.search(r"valid_to IS NULL", p.read_text())]
    assert spelled == []
    assert "valid_to IS NULL" in (PACKAGE / "macros.j2").read_text()


def test_benchmark_templates_are_not_in_the_package() -> None:
    assert not [n for n in template_names() if "bench" in n]


def test_an_extra_template_dir_is_searched_after_the_package(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(cypher, "_EXTRA_DIRS", [])
    cypher._env.cache_clear()
    try:
        (tmp_path / "mine.cypher.j2").write_text(
            "{% import 'macros.j2' as m %}\nMATCH ()-[r]->() WHERE {{ m.current('r') }} RETURN count(r)\n")
        (tmp_path / "state_read.cypher.j2").write_text("RETURN 'not the package'\n")
        with pytest.raises(jinja2.TemplateNotFound):
            render("mine")
        add_template_dir(tmp_path)
        add_template_dir(tmp_path)  # idempotent
        assert cypher._EXTRA_DIRS == [os.path.abspath(tmp_path)]
        assert "r.valid_from IS NOT NULL AND r.valid_to IS NULL" in render("mine")
        assert "KgrState" in render("state_read")  # the package's own template wins its name
    finally:
        cypher._env.cache_clear()


def test_rendered_text_is_kept_per_name_and_identifiers(monkeypatch):
    """A statement is rendered once per (name, identifiers); other identifiers render afresh, and a
    refused identifier is refused every time (nothing is kept for it)."""
    import kgr.store.cypher as cypher
    from kgr.errors import KgrIdentifierError

    cypher._rendered.cache_clear()
    first = cypher.render("slice_graph", types=["BORN_IN", "WORKS_AT"])
    calls = []
    real = cypher._env

    def counting():
        calls.append(1)
        return real()

    monkeypatch.setattr(cypher, "_env", counting)
    assert cypher.render("slice_graph", types=("BORN_IN", "WORKS_AT")) == first  # a tuple is the same key
    assert calls == []
    other = cypher.render("slice_graph", types=["BORN_IN"])
    assert other != first and "BORN_IN" in other and calls == [1]
    for _ in range(2):
        with pytest.raises(KgrIdentifierError):
            cypher.render("slice_graph", types=["BORN IN"])
    assert cypher.render("slice_graph", types={"BORN_IN"}) == other  # a set: rendered, not kept
    assert calls == [1, 1]
