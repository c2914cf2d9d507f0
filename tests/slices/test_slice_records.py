"""Slice records written behind the answer (kgr.store.slice_records), against the real Neo4j: the
answer does not wait for its record, feedback in the same process always finds it, feedback from
another connection finds it once written (and waits for it a while), closing a connection and
wiping the store write what is queued first, a record the database refuses is logged and dropped,
and KGR_SLICE_RECORD=sync writes it before the answer."""

from __future__ import annotations

import logging
import threading
import time

import pytest
from neo4j import GraphDatabase

from kgr.connect import connect
from kgr.errors import KgrValidationError
from kgr.model.triples import TripleAssertion
from kgr.slices import build_slice, report_outcome
from kgr.store.admin import reset
from kgr.store.connection import Graph
from kgr.engine import promote_by_quorum
from kgr.store.slice_records import SliceRecorder, _recorder, flush_slice_records, record_slice, slice_edges
from kgr.store.staging import stage

pytestmark = pytest.mark.neo4j


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("KGR_SLICE_KEY", "records-slice-key-0123456789")
    monkeypatch.delenv("KGR_SLICE_RECORD", raising=False)


@pytest.fixture
def gate(monkeypatch):
    """Holds every slice record write until ``gate.set()`` (released at the test's end at the latest);
    ``gate.writers`` names the threads that wrote records."""
    event = threading.Event()
    event.writers = []
    real = Graph.write

    def write(self, template, params=None, **identifiers):
        if template == "slice_record":
            event.writers.append(threading.current_thread().name)
            event.wait(20)
        return real(self, template, params, **identifiers)

    monkeypatch.setattr(Graph, "write", write)
    event.held = lambda: _until(lambda: event.writers)
    yield event
    event.set()


def _until(cond, seconds: float = 10.0) -> bool:
    end = time.monotonic() + seconds
    while not cond() and time.monotonic() < end:
        time.sleep(0.01)
    return bool(cond())


def built(graph) -> None:
    stage(graph, [TripleAssertion(subject=s, subject_type="Person", relation="KNOWS", object=o, object_type="Person",
                                  source=src) for s, o in [("Ada", "Bob"), ("Bob", "Cy")] for src in ("s1", "s2")])
    promote_by_quorum(graph, quorum=2)


def test_the_answer_does_not_wait_and_feedback_here_finds_the_record(graph, neo4j_settings, gate):
    built(graph)
    s = build_slice(graph, anchors=["Person:ada"])  # returns while its record's write is held
    assert len(s.edges) == 2 and gate.held() and gate.writers == ["kgr-slice-records"]
    other = connect(neo4j_settings)  # another connection: as another process sees the store
    try:
        assert slice_edges(other, s.slice_id) is None  # not written yet
        threading.Timer(0.2, gate.set).start()
        assert report_outcome(graph, s.slice_id, 1).edges == 2  # this process: waits for its own queue
        assert len(slice_edges(other, s.slice_id)) == 2
    finally:
        other.close()


def test_feedback_from_another_connection_waits_for_a_record_on_its_way(graph, neo4j_settings, gate):
    built(graph)
    s = build_slice(graph, anchors=["Person:ada"])
    other = connect(neo4j_settings)
    try:
        threading.Timer(0.2, gate.set).start()  # written 0.2 s later: feedback waits up to 0.5 s
        assert report_outcome(other, s.slice_id, -1).edges == 2
    finally:
        other.close()


def test_closing_a_connection_writes_its_queued_records(graph, neo4j_settings, gate):
    built(graph)
    mine = connect(neo4j_settings)
    s = build_slice(mine, anchors=["Person:bob"])
    assert _recorder(mine).pending() == 1
    threading.Timer(0.2, gate.set).start()
    mine.close()  # waits for the record, then closes the driver
    assert mine.closed and len(slice_edges(graph, s.slice_id)) == 2


def test_wiping_the_store_writes_the_queued_records_first(graph, gate):
    built(graph)
    s = build_slice(graph, anchors=["Person:ada"])
    threading.Timer(0.2, gate.set).start()
    reset(graph)  # the record lands before the wipe, not in the wiped store
    assert slice_edges(graph, s.slice_id) is None


def test_sync_mode_writes_before_the_answer_and_a_bad_mode_is_refused(graph, gate, monkeypatch):
    built(graph)
    gate.set()
    monkeypatch.setenv("KGR_SLICE_RECORD", "sync")
    s = build_slice(graph, anchors=["Person:ada"])
    assert gate.writers == [threading.current_thread().name]  # written by the caller
    assert len(slice_edges(graph, s.slice_id)) == 2
    monkeypatch.setenv("KGR_SLICE_RECORD", "later")
    with pytest.raises(KgrValidationError, match="KGR_SLICE_RECORD"):
        build_slice(graph, anchors=["Person:ada"])


def test_many_records_are_written_in_few_transactions(graph, gate):
    built(graph)
    record_slice(graph, "first", "p", "h", [("k", "s", "o")])  # held: the rest queue behind it
    for i in range(300):
        record_slice(graph, f"id-{i}", "p", "h", [("k", "s", "o")])
    gate.set()
    assert flush_slice_records(graph, timeout=30)
    assert len(gate.writers) <= 3  # 1 + 300 records: at most 256 a transaction
    assert all(slice_edges(graph, f"id-{i}") == [("k", "s", "o")] for i in (0, 150, 299))


def test_a_record_the_database_refuses_is_logged_and_dropped(caplog):
    driver = GraphDatabase.driver("bolt://127.0.0.1:9", max_transaction_retry_time=0.2, connection_timeout=0.5)
    gone = Graph(driver, uri="bolt://127.0.0.1:9")
    try:
        with caplog.at_level(logging.WARNING, logger="kgr.store.slice_records"):
            record_slice(gone, "lost-slice-id", "p", "h", [("k", "s", "o")])
            rec = _recorder(gone, create=False)
            assert isinstance(rec, SliceRecorder) and rec.flush(timeout=30)
        assert rec.dropped == 1 and rec.written == 0
        assert "lost-slice-id" in caplog.text and "unavailable" in caplog.text
    finally:
        gone.close()


def test_a_process_that_never_closes_its_connection_still_writes_its_records(graph, neo4j_settings):
    """The writer threads are daemons; an exit hook writes what is queued before they stop."""
    import os
    import subprocess
    import sys

    built(graph)
    code = ("from kgr.connect import connect\n"
            "from kgr.slices import build_slice\n"
            "g = connect()\n"
            "print(build_slice(g, anchors=['Person:ada']).slice_id)\n")  # no close: the process just ends
    env = {**os.environ, "NEO4J_URI": neo4j_settings.uri, "NEO4J_DATABASE": neo4j_settings.database,
           "KGR_SLICE_KEY": "records-slice-key-0123456789"}
    if neo4j_settings.password is not None:
        env.update(NEO4J_USERNAME=neo4j_settings.username, NEO4J_PASSWORD=neo4j_settings.password)
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert len(slice_edges(graph, proc.stdout.strip())) == 2


def test_a_flush_waits_for_the_records_before_it_not_for_a_queue_that_keeps_filling(graph):
    stop = threading.Event()

    def issue() -> None:  # a busy server: records keep coming
        i = 0
        while not stop.is_set():
            record_slice(graph, f"busy-{i}", "p", "h", [("k", "s", "o")])
            i += 1

    before = [f"before-{i}" for i in range(50)]
    for sid in before:
        record_slice(graph, sid, "p", "h", [("k", "s", "o")])
    t = threading.Thread(target=issue)
    t.start()
    try:
        time.sleep(0.3)
        started = time.monotonic()
        assert flush_slice_records(graph, timeout=20)
        waited = time.monotonic() - started
        assert t.is_alive() and waited < 10  # returned while records were still arriving
        assert all(slice_edges(graph, sid) == [("k", "s", "o")] for sid in before[::10])
    finally:
        stop.set()
        t.join()
        flush_slice_records(graph, timeout=60)
