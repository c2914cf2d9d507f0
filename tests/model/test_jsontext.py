"""Strict JSON (kgr.model.jsontext): one reading for labels, triples, corpus lines, tool input,
slice files, schema files and HTTP bodies (issue 31, item 8)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgr.errors import KgrValidationError
from kgr.model.jsontext import MAX_DEPTH, json_lines, loads_strict

# JSON values (no NaN/Infinity: they are not JSON), keys and strings including U+2028/U+2029 and
# the other characters str.splitlines splits on
_TEXT = st.text(alphabet=st.characters(exclude_categories=("Cs",)) | st.sampled_from(
    "\u2028\u2029\x85\x0b\x0c\x1c\x1d\x1e\ufeff\r"), max_size=12)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_every_json_value_reads_back(value) -> None:
    """What json.dumps writes (raw U+2028 and friends inside strings included) reads back the same."""
    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False)):
        assert loads_strict(text) == value
        assert loads_strict("\ufeff" + text) == value  # a byte-order mark at the start is ignored


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(_TEXT, JSON, min_size=1, max_size=4), st.data())
def test_a_duplicate_key_at_any_depth_is_refused(obj, data) -> None:
    key = data.draw(st.sampled_from(sorted(obj)))
    dup = json.dumps(obj)[:-1] + ", " + json.dumps(key) + ": " + json.dumps(data.draw(JSON)) + "}"
    wrapped = data.draw(st.sampled_from(["{}", '[{}]', '{{"outer": {}}}', '[1, {{"a": [{}]}}]']))
    with pytest.raises(KgrValidationError, match="duplicate key"):
        loads_strict(wrapped.format(dup))
    assert json.loads(wrapped.format(dup)) is not None  # the standard library keeps the last silently


def test_the_label_line_of_the_issue() -> None:
    line = '{"key": "3f2a9c0e1b7d4a5f6c8e9d01", "label": true, "reviewer": "ada", "label": false}'
    with pytest.raises(KgrValidationError, match="duplicate key 'label' in a JSON object"):
        loads_strict(line)


@pytest.mark.parametrize("text, message", [
    ("[" * 100_000 + "]" * 100_000, "nested deeper than 64 levels"),  # a RecursionError before
    ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "nested deeper than 64 levels"),
    ('{"a": NaN}', "NaN is not valid JSON"),
    ('[-Infinity]', "-Infinity is not valid JSON"),
    ("1" * 5000, "not valid JSON here"),  # past Python's int conversion limit: a ValueError before
    ('{"a": 1,}', "malformed JSON at line 1 column 9"),
    (b"\xff\xfe{}", "not UTF-8"),
])
def test_refusals_are_one_line_errors(text, message) -> None:
    with pytest.raises(KgrValidationError, match=message) as info:
        loads_strict(text)
    assert "\n" not in str(info.value)


def test_depth_limit_is_exact() -> None:
    deep = loads_strict("[" * MAX_DEPTH + "]" * MAX_DEPTH)
    for _ in range(MAX_DEPTH - 1):
        deep = deep[0]
    assert deep == []
    value = loads_strict('{"a": ' * (MAX_DEPTH - 1) + "[]" + "}" * (MAX_DEPTH - 1))
    for _ in range(MAX_DEPTH - 1):
        value = value["a"]
    assert value == []


@settings(max_examples=200, deadline=None)
@given(st.lists(JSON, max_size=6), st.sampled_from(["\n", "\r\n"]), st.booleans())
def test_json_lines_split_on_newline_only(values, eol, bom) -> None:
    """A JSONL text of any values splits into exactly its lines (U+2028 inside a line stays), numbered
    from 1, blank lines skipped; the same from an iterable of raw lines."""
    text = ("\ufeff" if bom else "") + eol.join([json.dumps(v, ensure_ascii=False) for v in values] + [""])
    got = [(n, loads_strict(line)) for n, line in json_lines(text)]
    assert got == [(i + 1, v) for i, v in enumerate(values)]
    raw_lines = [line + "\n" for line in text.split("\n")]  # as a file read line by line gives them
    assert [(n, loads_strict(line)) for n, line in json_lines(raw_lines)] == got


def test_a_raw_line_separator_inside_a_string_is_one_line() -> None:
    line = json.dumps({"text": "first\u2028second\u2029third"}, ensure_ascii=False)
    assert len(line.splitlines()) == 3  # what the label reader did: three broken lines
    assert [loads_strict(x) for _, x in json_lines(line + "\n")] == [{"text": "first\u2028second\u2029third"}]


@pytest.mark.parametrize("text", ["\ufeff\ufeff{}", "{", '{"a": }', "[1,]", "", "  ", '{"a": 1} x', '"\\x"', "tru",
                                  '{"a" 1}', "\ufeff"])
def test_a_malformed_text_is_reported_as_json_loads_reports_it(text) -> None:
    """The shared decoder (one for every call) says what ``json.loads`` says, a second byte-order
    mark included."""
    with pytest.raises(json.JSONDecodeError) as plain:
        json.loads(text.removeprefix("\ufeff"))
    with pytest.raises(KgrValidationError) as strict:
        loads_strict(text)
    e = plain.value
    assert str(strict.value) == f"malformed JSON at line {e.lineno} column {e.colno}: {e.msg}"


def test_the_decoder_is_built_once(monkeypatch) -> None:
    built = []
    real = json.JSONDecoder.__init__

    def counting(self, *args, **kwargs):
        built.append(1)
        real(self, *args, **kwargs)

    monkeypatch.setattr(json.JSONDecoder, "__init__", counting)
    assert [loads_strict('{"a": [1, 2]}') for _ in range(3)] == [{"a": [1, 2]}] * 3
    assert built == []
