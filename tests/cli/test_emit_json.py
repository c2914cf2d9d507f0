"""``--json`` output (:func:`kgr.cli.common.emit`) reads back as :func:`json.dumps` would have written it."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from kgr.cli.common import emit, to_data


class _Inner(BaseModel):
    name: str
    p: float


class _Report(BaseModel):
    items: list[_Inner]
    counts: dict[str, int]


def test_emit_reads_back_like_json_dumps_and_stays_ascii(capsys):
    value = {"report": _Report(items=[_Inner(name="Müller 😀", p=1e-05), _Inner(name="a\tb", p=0.5)],
                               counts={"x": 3}),
             "free": [float("inf"), float("nan"), (1, 2), {1: "one"}], "path": Path("/tmp/x")}
    emit(value, True)
    text = capsys.readouterr().out
    assert text.isascii()  # non-ASCII escaped, as json.dumps does by default
    got = json.loads(text)
    want = json.loads(json.dumps(to_data(value), indent=2, default=str))
    assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)  # NaN != NaN: compare the text
    assert got["report"]["items"][0]["name"] == "Müller 😀" and got["free"][0] == float("inf")
    assert text.startswith("{\n  \"report\": {\n    \"items\": [")  # two-space indent, keys in order
