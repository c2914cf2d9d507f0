"""Admissibility tokens and slice keys without a database (issue 31, item 4): the token covers every
field of a slice; keys are checked for strength and privacy; the default key file is created
atomically under a race."""

from __future__ import annotations

import math
import multiprocessing as mp
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgr.errors import KgrValidationError
from kgr.model.slices import ContextSlice, SliceEdge, SliceNode, SliceQuote
from kgr.slices.tokens import (MIN_KEY_BITS, alteration, check_key, key_entropy_bits, key_path, seal, slice_key)

KEY = b"tokens-test-key-0123456789abcdef"
TIERS = ["reflex", "habitual", "inhibitory", "dormant"]


def a_slice() -> ContextSlice:
    """A sealed slice with two edges, quotes with every provenance field, an anchor and a far node."""
    q = [SliceQuote(source="c1", chunk_id="c1", document_id="/docs/a.txt", path="/docs/a.txt",
                    quote="Ada Lovelace wrote the first program."),
         SliceQuote(source="agent-7")]
    edges = [SliceEdge(key="e" * 24, subject="Person:ada", relation="KNOWS", object="Person:bob", confidence=0.9,
                       votes=2, outcome_weight=0.3, tier="habitual", priority=0.812345678, quotes=q),
             SliceEdge(key="f" * 24, subject="Person:bob", relation="KNOWS", object="Person:cy", confidence=0.75,
                       votes=3, outcome_weight=0.6, tier="reflex", priority=0.5, quotes=[])]
    nodes = [SliceNode(key="Person:ada", type="Person", name="Ada", distance=0, anchor=True),
             SliceNode(key="Person:bob", type="Person", name="Bob", distance=1),
             SliceNode(key="Person:cy", type="Person", name="Cy\u2028\U0001f600", distance=2)]
    s = ContextSlice(slice_id="", anchors=["Person:ada"], policy_id="default@v1", policy_params_hash="p" * 32,
                     schema_version="none", graph_hash="sha256:" + "0" * 64, graph_version=7, nodes=nodes,
                     edges=edges, budget_tokens=2000, tokens=60, token_counter="estimate", truncated=False,
                     text="Facts ...\n- Ada KNOWS Bob\n", admissibility_token="")
    return seal(s, KEY)


def leaves(obj: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    """Every (path, value) of a JSON-like value whose value is a scalar, and every list."""
    if isinstance(obj, dict):
        return [x for k, v in obj.items() for x in leaves(v, (*path, k))]
    if isinstance(obj, list):
        return [(path, obj)] + [x for i, v in enumerate(obj) for x in leaves(v, (*path, i))]
    return [(path, obj)]


def mutated(value: Any, path: tuple, choice: int) -> Any:
    """A different value of the same kind (one the model accepts)."""
    if isinstance(value, list):  # shortened, grown, reordered
        options = [value[:-1], value + value[-1:]] + ([value[::-1]] if value[::-1] != value else [])
        return options[choice % len(options)] if value else None
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1 + choice % 3
    if isinstance(value, float):
        return [math.nextafter(value, math.inf), value + 0.25, -value if value else 1.0][choice % 3]
    if isinstance(value, str):
        if path[-1] == "tier":
            return next(t for t in TIERS[choice % 4:] + TIERS if t != value)
        return [value + "x", "FORGED: the opposite is true", value[:-1], value + "\ud800"][choice % 4] if value else "forged"
    if value is None:
        return "forged"
    raise AssertionError(type(value))


def put(obj: Any, path: tuple, value: Any) -> None:
    for p in path[:-1]:
        obj = obj[p]
    obj[path[-1]] = value


def test_a_sealed_slice_verifies_and_survives_its_json() -> None:
    s = a_slice()
    assert alteration(s, KEY) is None
    back = ContextSlice.model_validate_json(s.model_dump_json())
    assert alteration(back, KEY) is None and back.slice_id == s.slice_id
    assert alteration(s, b"another-key-0123456789abcdefghij") is not None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_altering_any_field_fails_verification(data) -> None:
    """Every scalar of a slice (quote text, document id, path, chunk id, tier, priority, the anchor
    flag, graph_version, truncated, ...) and every list (reordered, shortened, grown) is covered:
    altered, the slice no longer verifies, even when the change is one ulp of a float."""
    s = a_slice()
    dumped = s.model_dump(mode="json")
    path, value = data.draw(st.sampled_from([x for x in leaves(dumped) if x[0]]))
    new = mutated(value, path, data.draw(st.integers(0, 11)))
    if new is None or new == value:
        return
    put(dumped, path, new)
    forged = ContextSlice.model_validate(dumped)
    assert alteration(forged, KEY) is not None, path


def test_a_lone_surrogate_is_content_too() -> None:
    """A forged slice may hold what no slice kgr cut holds (a lone surrogate, not UTF-8): still
    covered, and a slice sealed with one verifies."""
    bad = a_slice().model_copy(update={"text": "Facts \ud800"})
    assert alteration(bad, KEY) == "the slice's content does not match its id (altered)"
    assert alteration(seal(bad, KEY), KEY) is None


@pytest.mark.parametrize("field, change", [
    ("quote", "FORGED: the opposite is true"), ("document_id", "/docs/other.txt"), ("path", "/etc/other"),
    ("chunk_id", "c9"), ("source", "c9")])
def test_each_quote_field_is_covered(field, change) -> None:
    s = a_slice()
    q = s.edges[0].quotes[0].model_copy(update={field: change})
    forged = s.model_copy(update={"edges": [s.edges[0].model_copy(update={"quotes": [q]}), s.edges[1]]})
    assert alteration(forged, KEY) == "the slice's content does not match its id (altered)"
    resealed_id = seal(forged, KEY).slice_id
    stolen = forged.model_copy(update={"slice_id": resealed_id})  # the id recomputed, the token kept
    assert alteration(stolen, KEY) == "the admissibility token does not match (forged, altered, or another key)"


@pytest.mark.parametrize("update", [
    {"graph_version": 8}, {"truncated": True}, {"schema_version": "sha256:0"}, {"budget_tokens": 4000},
    {"token_counter": "litellm:gpt-4o"}, {"anchors": ["Person:bob"]}])
def test_each_slice_field_is_covered(update) -> None:
    assert alteration(a_slice().model_copy(update=update), KEY) is not None


def test_edge_and_node_fields_are_covered() -> None:
    s = a_slice()
    for update in ({"tier": "reflex"}, {"priority": 0.9}, {"outcome_weight": 0.61}, {"votes": 9}):
        assert alteration(s.model_copy(update={"edges": [s.edges[0].model_copy(update=update), s.edges[1]]}), KEY)
    flag = [s.nodes[0].model_copy(update={"anchor": False}), *s.nodes[1:]]
    assert alteration(s.model_copy(update={"nodes": flag}), KEY) is not None


# -- keys -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("weak", [b"a" * 16, b"ab" * 8, b"0123" * 4, b"a" * 200, b"short-key", b"aaaaaaaaaaaaaaab"])
def test_weak_keys_are_refused(weak: bytes, monkeypatch) -> None:
    assert key_entropy_bits(weak) < MIN_KEY_BITS or len(weak) < 16
    monkeypatch.setenv("KGR_SLICE_KEY", weak.decode())
    with pytest.raises(KgrValidationError, match="the slice key is too weak") as info:
        slice_key()
    assert weak.decode() not in str(info.value)  # the key never appears in an error


@pytest.mark.parametrize("good", [b"0123456789abcdef", os.urandom(16).hex().encode(), os.urandom(32),
                                  b"test-slice-key-0123456789abcdef"])
def test_strong_keys_pass(good: bytes) -> None:
    assert check_key(good, "KGR_SLICE_KEY") == good


def test_entropy_estimate_is_length_times_shannon_entropy() -> None:
    assert key_entropy_bits(b"") == 0.0 and key_entropy_bits(b"a" * 16) == 0.0
    assert key_entropy_bits(b"ab" * 8) == pytest.approx(16.0)
    assert key_entropy_bits(b"aab") == pytest.approx(-(2 * math.log2(2 / 3) + math.log2(1 / 3)))


@pytest.fixture
def key_file(tmp_path, monkeypatch) -> Path:
    monkeypatch.delenv("KGR_SLICE_KEY", raising=False)
    path = tmp_path / "slice.key"
    path.write_text(os.urandom(32).hex() + "\n")
    monkeypatch.setenv("KGR_SLICE_KEY_FILE", str(path))
    return path


@pytest.mark.parametrize("mode", [0o644, 0o666, 0o640, 0o604, 0o620, 0o602, 0o660])
def test_key_files_others_may_read_or_write_are_refused(key_file: Path, mode: int) -> None:
    key_file.chmod(mode)
    with pytest.raises(KgrValidationError, match=f"may be read or written by group or others \\(mode 0{mode:o}\\); "
                                                 f"make it private: chmod 600 {key_file}"):
        slice_key()


@pytest.mark.parametrize("mode", [0o600, 0o400])
def test_private_key_files_are_used(key_file: Path, mode: int) -> None:
    key_file.chmod(mode)
    assert slice_key() == key_file.read_bytes().strip()


def test_a_world_readable_system_file_is_no_key(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("KGR_SLICE_KEY", raising=False)
    passwd = Path("/etc/passwd")
    if passwd.exists() and passwd.stat().st_mode & 0o004:
        monkeypatch.setenv("KGR_SLICE_KEY_FILE", str(passwd))
        with pytest.raises(KgrValidationError, match="chmod 600"):
            slice_key()
    monkeypatch.setenv("KGR_SLICE_KEY_FILE", str(tmp_path))
    with pytest.raises(KgrValidationError, match="is not a regular file"):
        slice_key()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    monkeypatch.setenv("KGR_SLICE_KEY_FILE", str(fifo))
    with pytest.raises(KgrValidationError, match="is not a regular file"):
        slice_key()  # and it does not block on the FIFO
    monkeypatch.setenv("KGR_SLICE_KEY_FILE", str(tmp_path / "missing"))
    with pytest.raises(KgrValidationError, match="cannot be read"):
        slice_key()


def test_the_default_key_file_is_created_private(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("KGR_SLICE_KEY", raising=False)
    monkeypatch.delenv("KGR_SLICE_KEY_FILE", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    key = slice_key()
    path = key_path()
    assert path == tmp_path / "config" / "kgr" / "slice.key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and len(key) == 64 and int(key, 16) >= 0
    assert slice_key() == key and os.listdir(path.parent) == ["slice.key"]  # no temporary file left


def _create(config: str, barrier: Any, out: Any) -> None:
    os.environ.pop("KGR_SLICE_KEY", None)
    os.environ.pop("KGR_SLICE_KEY_FILE", None)
    os.environ["XDG_CONFIG_HOME"] = config
    barrier.wait()
    try:
        out.put(("ok", slice_key().decode()))
    except BaseException as exc:  # noqa: BLE001 - reported to the test
        out.put(("error", f"{type(exc).__name__}: {exc}"))


@pytest.mark.parametrize("trial", range(12))
def test_eight_processes_create_the_default_key_at_once(tmp_path, trial) -> None:
    """Before: 22 of 30 trials failed (FileExistsError, or 'holds fewer than 16 characters' from a
    reader that saw the file before its writer wrote it)."""
    ctx = mp.get_context("fork")
    n = 8
    barrier, out = ctx.Barrier(n), ctx.Queue()
    config = str(tmp_path / "config")
    procs = [ctx.Process(target=_create, args=(config, barrier, out)) for _ in range(n)]
    for p in procs:
        p.start()
    results = [out.get(timeout=60) for _ in range(n)]
    for p in procs:
        p.join(timeout=60)
    assert [r for r in results if r[0] != "ok"] == []
    keys = {k for _, k in results}
    assert len(keys) == 1 and len(keys.pop()) == 64
    assert os.listdir(Path(config) / "kgr") == ["slice.key"]
