"""``load_schema`` error paths: every bad schema file is a one-line KgrSchemaError naming the file and the
failing field, and ``kgr ingest --schema bad.json`` exits 1 with that line as ``Error: ...``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgr.cli.main import app
from kgr.errors import KgrSchemaError
from kgr.model.schema import KGSchema, load_schema

IDENT = "is not an identifier (letters, digits and _, not starting with a digit)"

# name -> (file content, expected field, expected text after "<path>: ")
CASES: dict[str, tuple[str, str | None, str]] = {
    "malformed_json": ('{"entity_types": {"Person": {}},\n "relation_types": {', None,
                       "malformed JSON at line 2 column 21: Expecting property name enclosed in double quotes"),
    "not_an_object": ("[1, 2]", None, "a KG schema must be a JSON object, got list"),
    "unknown_top_level_key": (json.dumps({"entity_types": {"Person": {}}, "relation_typez": {}}), "relation_typez",
                              "relation_typez: unknown key (did you mean 'relation_types'?); expected one of: "
                              "name, entity_types, relation_types, allow_self_loops"),
    "unknown_entity_key": (json.dumps({"entity_types": {"Person": {"descripton": "x"}}}),
                           "entity_types.Person.descripton",
                           "entity_types.Person.descripton: unknown key (did you mean 'description'?); "
                           "expected one of: description, aliases, patterns, names"),
    "unknown_relation_key": (json.dumps({"entity_types": {"Person": {}},
                                         "relation_types": {"KNOWS": {"domain": ["Person"], "inverse": "x"}}}),
                             "relation_types.KNOWS.inverse",
                             "relation_types.KNOWS.inverse: unknown key; expected one of: description, domain, "
                             "range, functional, symmetric, triggers"),
    "bad_entity_type_name": (json.dumps({"entity_types": {"Bad Type": {}}}), "entity_types.Bad Type",
                             f"entity_types.Bad Type: type name 'Bad Type' {IDENT}"),
    "bad_relation_type_name": (json.dumps({"entity_types": {"Person": {}}, "relation_types": {"works-at": {}}}),
                               "relation_types.works-at", f"relation_types.works-at: type name 'works-at' {IDENT}"),
    "bad_domain_identifier": (json.dumps({"entity_types": {"Person": {}},
                                          "relation_types": {"KNOWS": {"domain": ["Person", "1x"]}}}),
                              "relation_types.KNOWS.domain.1",
                              f"relation_types.KNOWS.domain.1: entity type '1x' {IDENT}"),
    "undeclared_domain": (json.dumps({"entity_types": {"Person": {}, "Place": {}},
                                      "relation_types": {"BORN_IN": {"domain": ["Persn"], "range": ["Place"]}}}),
                          "relation_types.BORN_IN.domain.0",
                          "relation_types.BORN_IN.domain.0: entity type 'Persn' is not declared in entity_types "
                          "(declared: Person, Place)"),
    "undeclared_range": (json.dumps({"entity_types": {"Person": {}},
                                     "relation_types": {"WORKS_AT": {"domain": ["Person"],
                                                                     "range": ["Person", "Organization"]}}}),
                         "relation_types.WORKS_AT.range.1",
                         "relation_types.WORKS_AT.range.1: entity type 'Organization' is not declared in "
                         "entity_types (declared: Person)"),
    "wrong_value_type": (json.dumps({"entity_types": {"Person": {"aliases": {"Ada Lovelace": "Ada"}}}}),
                         "entity_types.Person.aliases.Ada Lovelace",
                         "entity_types.Person.aliases.Ada Lovelace: Input should be a valid list"),
}


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_schema_file_is_one_clear_line_naming_the_field(tmp_path, case):
    text, field, expected = CASES[case]
    path = _write(tmp_path, case, text)
    with pytest.raises(KgrSchemaError) as info:
        load_schema(path)
    err = info.value
    assert str(err) == f"{path}: {expected}"
    assert "\n" not in str(err)
    assert err.field == field


def test_several_errors_are_counted_and_the_first_is_named(tmp_path):
    path = _write(tmp_path, "many", json.dumps({"entity_types": {"Bad Type": {}, "Person": {"x": 1}}, "y": 2}))
    with pytest.raises(KgrSchemaError, match=r"\(\+2 more errors\)$") as info:
        load_schema(path)
    assert info.value.field == "entity_types.Bad Type" and len(info.value.details) == 3


def test_unreadable_schema_file(tmp_path):
    with pytest.raises(KgrSchemaError, match=r"cannot read schema file .*nope\.json"):
        load_schema(tmp_path / "nope.json")


def test_a_valid_schema_and_an_open_one_still_load(tmp_path):
    ok = _write(tmp_path, "ok", json.dumps({"entity_types": {"Person": {}},
                                            "relation_types": {"KNOWS": {"domain": ["Person"], "range": ["Person"]}}}))
    assert load_schema(ok).relation_types["KNOWS"].range == ["Person"]
    # without entity types, domain and range are not checked against them (an open schema)
    open_ = _write(tmp_path, "open", json.dumps({"relation_types": {"KNOWS": {"domain": ["Anything"]}}}))
    assert isinstance(load_schema(open_), KGSchema)


@pytest.mark.parametrize("case", ["malformed_json", "unknown_top_level_key", "bad_entity_type_name",
                                  "undeclared_range"])
def test_cli_ingest_with_a_bad_schema_exits_1_with_one_line(tmp_path, monkeypatch, case):
    text, _, expected = CASES[case]
    path = _write(tmp_path, case, text)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Grace Hopper worked at Harvard University.", encoding="utf-8")
    # the schema is read before any connection: an unreachable database is never tried
    monkeypatch.setenv("NEO4J_URI", "bolt://127.0.0.1:9")
    result = CliRunner().invoke(app, ["ingest", str(corpus), "--schema", str(path)])
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines() == [f"Error: {path}: {expected}"]
    assert result.stdout == ""
