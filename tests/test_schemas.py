"""The committed JSON Schemas in ``schemas/`` match the pydantic models (snapshot test)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgr.model.jsonschema import (
    REFRESH_COMMAND,
    SCHEMA_DIALECT,
    SCHEMA_MODELS,
    build_schema,
    register_schema,
    render_all,
    schema_id,
)

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"
EXPECTED = render_all()


@pytest.mark.parametrize("filename", sorted(EXPECTED))
def test_committed_schema_matches_model(filename: str) -> None:
    path = SCHEMA_DIR / filename
    assert path.exists(), f"schemas/{filename} is missing: run `{REFRESH_COMMAND}`"
    assert path.read_text(encoding="utf-8") == EXPECTED[filename], (
        f"schemas/{filename} drifted from its model: run `{REFRESH_COMMAND}` and commit the result")


def test_no_stale_schema_files() -> None:
    stale = sorted(p.name for p in SCHEMA_DIR.glob("*.schema.json") if p.name not in EXPECTED)
    assert not stale, f"stale schema files {stale}: run `{REFRESH_COMMAND}`"


def test_every_tool_has_an_input_and_output_schema() -> None:
    from kgr.tools.registry import tool_names

    for name in tool_names():
        assert f"{name}_input" in SCHEMA_MODELS and f"{name}_output" in SCHEMA_MODELS


def test_schema_files_are_canonical_json_with_versioned_id() -> None:
    for filename, text in EXPECTED.items():
        data = json.loads(text)
        assert data["$schema"] == SCHEMA_DIALECT
        assert data["$id"] == schema_id(filename.removesuffix(".schema.json"))
        assert data["$id"].startswith("https://kgr.dev/schemas/0.1/")
        assert text == json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def test_tool_input_schema_uses_the_appendix_parameter_names() -> None:
    props = build_schema("query_extraction_density_input")["properties"]
    assert set(props) == {"text", "schema", "extracted_kg", "domain"}
    assert props["text"]["maxLength"] == 1_000_000
    dis = build_schema("query_entity_disambiguation_input")["properties"]
    assert dis["disambiguation_strategy"]["enum"] == ["exact_match", "semantic_similarity"]
    assert dis["similarity_threshold"]["minimum"] == 0 and dis["similarity_threshold"]["maximum"] == 1


def test_register_schema_rejects_conflicting_names() -> None:
    from kgr.model.kg import RelationPair

    with pytest.raises(ValueError, match="already registered"):
        register_schema("extracted_kg", RelationPair)
    with pytest.raises(ValueError, match="lowercase"):
        register_schema("Bad-Name", RelationPair)


def test_gen_schemas_check_mode(tmp_path: Path) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_schemas", SCHEMA_DIR.parent / "scripts" / "gen_schemas.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--check", "--dir", str(tmp_path)]) == 1  # empty dir: everything would be written
    (tmp_path / "old.schema.json").write_text("{}")
    assert mod.main(["--dir", str(tmp_path)]) == 0
    assert not (tmp_path / "old.schema.json").exists()
    assert mod.main(["--check", "--dir", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(EXPECTED)
