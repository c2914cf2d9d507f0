"""The CoreNLP dependency parse that confirms or vetoes the rules extractor's triples (kgr.extract.parsed),
on a real CoreNLP server (one for the session, the ``corenlp`` fixture)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
import sys
from pathlib import Path

import pytest

from kgr.errors import KgrExtractionError, KgrRuntimeError
from kgr.extract import make_extractor
from kgr.extract.parse_check import veto
from kgr.extract.parsed import ParsedRulesExtractor
from kgr.extract.rules import RulesExtractor
from kgr.model.schema import load_schema
from kgr.runtime.corenlp import CoreNLPConfig, CoreNLPServer, install_corenlp
from kgr.runtime.corenlp_client import ParseClient

DATA = Path(__file__).resolve().parents[1] / "data" / "extract"
SCHEMA = load_schema(DATA / "schema.json")


def _span(sentence: str, word: str) -> tuple[int, int]:
    at = sentence.index(word)
    return at, at + len(word)


def _veto(client: ParseClient, sentence: str, relation: str, subj: str | None, obj: str, trigger: str) -> str | None:
    parse = client.parse([sentence])[0]
    return veto(parse, sentence, relation, _span(sentence, subj) if subj else None, _span(sentence, obj),
                sentence.index(trigger))


@pytest.mark.parametrize("sentence, relation, subj, obj, trigger, reason", [
    ("Flask does not depend on Werkzeug.", "DEPENDS_ON", "Flask", "Werkzeug", "depend", "negation"),
    ("Flask no longer depends on Werkzeug.", "DEPENDS_ON", "Flask", "Werkzeug", "depends", "negation"),
    ("Flask never supported Python 2.", "SUPPORTS", "Flask", "Python", "supported", "negation"),
    ("Flask removed its dependency on Werkzeug.", "DEPENDS_ON", "Flask", "Werkzeug", "dependency", "change"),
    ("The team dropped support for Python 3.8 in Flask.", "SUPPORTS", None, "Python", "support", "change"),
    ("Drop support for Python 3.8.", "SUPPORTS", "Drop", "Python", "support", ""),
    ("Removed support for Volapük.", "SUPPORTS", "Removed", "Volapük", "support", ""),
    ("If Flask depends on Werkzeug, install it first.", "DEPENDS_ON", "Flask", "Werkzeug", "depends", "hypothetical"),
    ("Flask could support Python 4 next year.", "SUPPORTS", "Flask", "Python", "support", "hypothetical"),
    ("Flask will support Python 4.", "SUPPORTS", "Flask", "Python", "support", "hypothetical"),
    ("Does Flask support Python 3?", "SUPPORTS", "Flask", "Python", "support", "question"),
    ("Pallets develops Jinja.", "DEVELOPED_BY", "Pallets", "Jinja", "develops", "wrong role"),
    ("SUSv1 standardized an API based on the System V API.", "DEPENDS_ON", "SUSv1", "System V API", "based", ""),
    ("This module defines utilities for CGI scripts written in Python.", "WRITTEN_IN", None, "Python", "written",
     "subject is scripts"),
])
def test_vetoes(corenlp, sentence, relation, subj, obj, trigger, reason):
    why = _veto(corenlp, sentence, relation, subj, obj, trigger)
    assert why is not None and reason in why, why


@pytest.mark.parametrize("sentence, relation, subj, obj, trigger", [
    ("Flask depends on Werkzeug.", "DEPENDS_ON", "Flask", "Werkzeug", "depends"),
    ("Flask is licensed under the BSD license.", "LICENSED_UNDER", "Flask", "BSD license", "licensed"),
    ("Requests is written in Python.", "WRITTEN_IN", "Requests", "Python", "written"),
    ("Granian is an HTTP server which supports HTTP/2.", "SUPPORTS", "Granian", "HTTP/2", "supports"),
    ("Botocore is maintained and published by Amazon Web Services.", "DEVELOPED_BY", "Botocore",
     "Amazon Web Services", "maintained"),
    ("Jinja is developed by the Pallets organization.", "DEVELOPED_BY", "Jinja", "Pallets", "developed"),
    ("Flask, a framework written in Python, is small.", "WRITTEN_IN", "Flask", "Python", "written"),
    ("Add support for Python 3.12.", "SUPPORTS", None, "Python", "support"),
])
def test_confirmations(corenlp, sentence, relation, subj, obj, trigger):
    assert _veto(corenlp, sentence, relation, subj, obj, trigger) is None


def test_offsets_are_the_sentence_text_even_past_astral_characters(corenlp):
    """CoreNLP counts UTF-16 units; the client maps them back, and a batch comes back one parse a sentence."""
    sentences = ["Flask 😀 depends on Werkzeug 𝔘.", "Removed support for Volapük.", "It\nsupports Python."]
    parses = corenlp.parse(sentences)
    assert len(parses) == 3
    for sentence, parse in zip(sentences, parses):
        assert parse.tokens and all(sentence[t.start:t.end] == t.word for t in parse.tokens), parse
    assert [t.word for t in parses[0].tokens][-3:] == ["Werkzeug", "𝔘", "."]


def test_extractor_keeps_what_the_parse_supports(corenlp):
    """End to end: the parser-checked extractor drops the rules extractor's triple from "SUSv1 standardized
    an API based on …" (read with every path on) and keeps "Flask depends on Werkzeug"."""
    text = "Flask depends on Werkzeug. SUSv1 standardized a pseudoterminal API based on the System V API."
    guidance = ["Extract Software entities: none extracted yet."]
    plain = RulesExtractor(abstain=False).extract(text, SCHEMA, guidance=guidance)
    checked = ParsedRulesExtractor(client=corenlp).extract(text, SCHEMA, guidance=guidance)
    pairs = lambda r: {(k, p.subject, p.object) for k, ps in r.kg.relations.items() for p in ps}  # noqa: E731
    assert ("DEPENDS_ON", "SUSv1", "System V API") in pairs(plain)
    assert pairs(checked) == pairs(plain) - {("DEPENDS_ON", "SUSv1", "System V API")}
    assert ("DEPENDS_ON", "Flask", "Werkzeug") in pairs(checked)
    assert {(s.relation, s.subject, s.object) for s in checked.spans} == pairs(checked)
    assert checked.extractor == "rules+corenlp"


def test_precision_on_the_tuning_samples(corenlp):
    """The parser-checked extractor on the seven committed tuning samples (titles given, as ingestion does):
    pooled precision at least 0.95 and recall at least 0.11 (measured 74/74 = 1.00 and 74/577 = 0.128;
    without the parser 62/68 = 0.91 and 0.107). Runs the bench's own predict and score."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
    import bench_extract as bench

    bench.PARSER["client"] = corenlp
    try:
        correct = predicted = found = gold = 0
        for name in ("first", "context", "third", "fourth", "fifth", "sixth", "seventh"):
            rows = [json.loads(line) for line in (DATA / bench.SAMPLES[name]).read_text(encoding="utf-8").splitlines() if line]
            table = bench.score(rows, asyncio.run(bench.predict(rows, SCHEMA, 3, titles=True)))[0]["all"]
            correct, predicted = correct + table["correct"], predicted + table["predicted"]
            found, gold = found + table["found"], gold + table["gold"]
    finally:
        bench.PARSER["client"] = None
    assert predicted >= 60 and correct / predicted >= 0.95, (correct, predicted)
    assert found / gold >= 0.11, (found, gold)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_find_servers_names_the_session_server(corenlp):
    from kgr.runtime.corenlp import find_servers

    port = int(corenlp.url.rsplit(":", 1)[1])
    assert find_servers(port) and find_servers(_free_port()) == []


def test_clear_error_when_java_is_missing(tmp_path):
    server = CoreNLPServer(CoreNLPConfig(port=_free_port(), java=str(tmp_path / "no-java")))
    with pytest.raises(KgrRuntimeError, match=r"no-java is not an executable: the CoreNLP parser needs Java"):
        server.start()


def test_clear_error_when_the_server_dies(tmp_path, corenlp):
    """A java that reports a version but exits at once: one error naming the exit code and the log."""
    fake = tmp_path / "java"
    fake.write_text('#!/bin/sh\nif [ "$1" = -version ]; then echo \'openjdk version "17.0.1"\' >&2; exit 0; fi\n'
                    'echo "Error: could not reserve enough space for object heap"; exit 3\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    server = CoreNLPServer(CoreNLPConfig(port=_free_port(), java=str(fake)))
    with pytest.raises(KgrRuntimeError, match=r"(?s)exited during startup \(exit code 3\).*object heap"):
        server.start()


def test_clear_error_when_mvn_is_missing(tmp_path):
    with pytest.raises(KgrRuntimeError,
                       match=r"KGR_MVN=.*no-mvn is not executable \(needed once to download the CoreNLP parser's jars"):
        install_corenlp(CoreNLPConfig(cache_dir=tmp_path, mvn=str(tmp_path / "no-mvn")))


def test_a_dead_server_is_one_extraction_error():
    client = ParseClient(f"http://127.0.0.1:{_free_port()}", timeout=5)
    with pytest.raises(KgrExtractionError, match=r"^dependency parser \(CoreNLP\): the CoreNLP server at .* failed"):
        ParsedRulesExtractor(client=client).extract("Flask depends on Werkzeug.", SCHEMA,
                                                    guidance=["Extract Software entities: none extracted yet."])


def test_the_parser_is_off_by_default(monkeypatch):
    monkeypatch.delenv("KGR_EXTRACT_PARSER", raising=False)
    assert type(make_extractor()) is RulesExtractor
    monkeypatch.setenv("KGR_EXTRACT_PARSER", "corenlp")
    assert type(make_extractor()) is ParsedRulesExtractor
    monkeypatch.setenv("KGR_EXTRACT_PARSER", "spacy")
    with pytest.raises(KgrExtractionError, match="KGR_EXTRACT_PARSER='spacy'"):
        make_extractor()
    assert os.environ.get("KGR_EXTRACT_PARSER") == "spacy"


def test_ingest_config_names_the_parser(monkeypatch):
    from kgr.ingest.config import IngestConfig, make_extractor as for_config

    monkeypatch.delenv("KGR_EXTRACT_PARSER", raising=False)
    assert type(for_config(IngestConfig())) is RulesExtractor
    assert type(for_config(IngestConfig(parser="corenlp"))) is ParsedRulesExtractor
    monkeypatch.setenv("KGR_EXTRACT_PARSER", "corenlp")
    assert type(for_config(IngestConfig(parser="none"))) is RulesExtractor  # the setting beats the environment
