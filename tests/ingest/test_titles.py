"""Documents' titles (kgr.ingest.titles) reach the offline extractor through kgr ingest (issue 32)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgr.ingest.chunking import ChunkingConfig, chunk_document
from kgr.ingest.config import IngestConfig
from kgr.ingest.loaders import Document
from kgr.ingest.pipeline import ingest
from kgr.ingest.titles import HEAD_CHARS, MAX_TITLE, document_title
from kgr.model.schema import load_schema

SCHEMA = load_schema(Path(__file__).resolve().parents[1] / "data" / "extract" / "schema.json")


def doc(text: str, path: str | None = "/x/README.md", **meta) -> Document:
    return Document(id="d", path=path, text=text, metadata=meta)


@pytest.mark.parametrize(("text", "path", "meta", "want"), [
    ("# Flask\n\nIt depends on Werkzeug.", "/x/README.md", {}, "Flask"),
    ("<h1 align=\"center\"><img src=\"logo.png\"> HTTPX</h1>\n\nA client.", "/x/README.md", {}, "HTTPX"),
    ("Requests\n========\n\n**Requests** is simple.", "/x/README.rst", {}, "Requests"),
    ("# [**rich**](https://github.com/x/rich)\n", "/x/README.md", {}, "rich"),
    ("Metadata-Version: 2.1\nName: attrs\nVersion: 23.1\n\n# Not this", "/x/METADATA", {}, "attrs"),
    ("# From the heading", "/x/README.md", {"title": "From metadata"}, "From metadata"),
    # a heading of badges only names nothing; "<A>: <file's name>" gives the file's name (npm READMEs)
    ("Embedded JavaScript templates<br/>\n[![Known Vulnerabilities](https://snyk.io/x/badge.svg)](https://snyk.io/x)"
     "\n=====\n\n## Security", "/x/ejs.md", {}, "ejs"),
    ("Node.js: fs-extra\n=================\n\n`fs-extra` adds methods.", "/x/fs-extra.md", {}, "fs-extra"),
    ("# Flask: web development", "/x/flask.md", {}, "Flask"),
    ("# Alertmanager [![CircleCI](https://circleci.com/x.svg)][circleci]\n", "/x/README.md", {}, "Alertmanager"),
    ("# ![jsii](https://github.com/aws/jsii/raw/main/logo/png/128.png)\n", "/x/README.md", {}, "jsii"),  # a logo
    ("Intro.\n\n```sh\n# install it\npip install x\n```\n", "/x/README.md", {}, None),  # a shell comment
    ("Intro.\n\n```sh\n# install it\n```\n", "/x/httpx.md", {}, "httpx"),  # then the file's name
    ("## Only a second-level heading", "/x/README.md", {}, None),
    ("# " + "long " * (MAX_TITLE // 4), "/x/index.md", {}, None),  # a sentence, not a title
    ("no heading", None, {}, None),  # a JSONL line without a title
    ("no heading", "/x/CHANGELOG.md", {}, None),  # a file name that says what kind of file, not whose
    # ... and such words around the subject's name (Debian copyright files, man pages, pydoc output)
    ("Files: *\nLicense: curl", "/x/copyright-curl.txt", {}, "curl"),
    ("TAR(1) User Commands", "/x/man-tar.txt", {}, "tar"),
    ("Help on module json:", "/x/pydoc_json.txt", {}, "json"),
    ("no heading", "/x/readme-bash-readme.txt", {}, "bash"),
    ("no heading", "/x/copyright-man.txt", {}, None),
])
def test_document_title(text, path, meta, want):
    assert document_title(doc(text, path, **meta)) == want


def test_every_chunk_carries_its_documents_title_outside_its_id():
    text = "# Flask\n\n" + "It depends on Werkzeug. " * 40
    titled = list(chunk_document(doc(text), config=ChunkingConfig(size=200, unit="chars", overlap=0)))
    plain = list(chunk_document(doc(text, path="/x/README.md").model_copy(update={"text": text.replace("# Flask", "Flask  ")}),
                                config=ChunkingConfig(size=200, unit="chars", overlap=0)))
    assert len(titled) > 2 and {c.title for c in titled} == {"Flask"}
    assert {c.title for c in plain} == {None}
    untitled = [c.model_copy(update={"title": None}) for c in titled]
    assert [c.id for c in untitled] == [c.id for c in titled]  # the title is not part of a chunk's identity


@pytest.mark.neo4j
def test_ingest_gives_the_offline_extractor_each_documents_title(graph, tmp_path):
    (tmp_path / "flask").mkdir()
    (tmp_path / "flask" / "README.md").write_text(
        "# Flask\n\nFlask is a lightweight web application framework.\n\n"
        "It supports Python 3.\n\nLicense: BSD-3-Clause\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("It supports Python 3.\n", encoding="utf-8")  # no title: no subject
    rep = ingest(graph, [tmp_path], SCHEMA, config=IngestConfig(max_rounds=1, concurrency=1))
    assert rep.chunks_processed == 2
    rows = graph.driver.execute_query(
        "MATCH (s:Entity)-[p:PENDING_REL]->(o:Entity) RETURN s.key AS s, p.type AS r, o.key AS o, p.sources AS src")
    staged = {(r["s"], r["r"], r["o"]) for r in rows.records}
    # ("It is written in Python." was the sentence until the extractor abstained from a carried WRITTEN_IN
    # read by a trigger: docs/extract.md, "Abstention by path"; "It supports" is a path it keeps)
    assert staged == {("Software:flask", "SUPPORTS", "Language:python"),
                      ("Software:flask", "LICENSED_UNDER", "License:bsd 3 clause")}
    # nothing came from the untitled note: every vote's source is a chunk of the README
    readme_chunks = {r["id"] for r in graph.driver.execute_query(
        "MATCH (c:Chunk)-[:PART_OF]->(d:Document) WHERE d.path ENDS WITH 'README.md' RETURN c.id AS id").records}
    assert readme_chunks and all(set(r["src"]) <= readme_chunks for r in rows.records)


def test_a_paragraph_long_line_is_read_in_linear_time():
    """A setext heading is looked for in one pass over a line: the pattern used to try every split
    of a line that is no heading (quadratic in its length; bench_promotion's text stream, whose
    paragraphs are single lines of ~1,900 characters, spent ~5 s of a 120-document wave there).
    Compared within one run: a 4,000-character line against the same text in 100 short lines."""
    import timeit

    one_line = "word " * 800
    short_lines = ("word " * 7 + "word\n") * 100
    assert len(one_line) == len(short_lines) == HEAD_CHARS

    def best(text: str) -> float:
        d = doc(text, path=None)
        return min(timeit.repeat(lambda: document_title(d), number=3, repeat=5)) / 3

    assert document_title(doc(one_line, path=None)) is None
    assert best(one_line) < 10 * best(short_lines) + 0.002


@pytest.mark.parametrize("path,title", [
    ("/x/pydoc-http.client.txt", "http.client"),         # a dotted module name (was "http", the protocol's name)
    ("/x/news-libpango-1.0-0.txt", "libpango-1.0-0"),    # a package name with its version (was "libpango-1")
    ("/x/changelog-python3.11.txt", "python3.11"),
    ("/x/readme-git-README.md.txt", "git"),              # every file-type suffix goes, then the generic words
    ("/x/find.info-2", "find"),
])
def test_a_file_name_loses_its_type_suffixes_not_the_dots_of_a_name(path, title):
    assert document_title(Document(id="d", path=path, text="Some text here.\n")) == title


def test_a_javadoc_page_is_titled_by_its_element(tmp_path):
    """The JDK's ``javadoc`` writes "Class X" / "Enum Class X" / "Package p" as a page's H1: the title is
    the element the file is named after, type parameters dropped; a README's "Module Federation" stays."""
    from kgr.ingest.loaders import load_file

    page = tmp_path / "org.example.Pair.html"
    page.write_text('<html><body><h1 title="Class Pair" class="title">Class Pair&lt;L,R&gt;</h1>'
                    "<p>A pair of two elements.</p></body></html>", encoding="utf-8")
    summary = tmp_path / "org.example.package-summary.html"
    summary.write_text('<h1 class="title">Package org.example</h1><p>Tuples.</p>', encoding="utf-8")
    readme = tmp_path / "README.md"
    readme.write_text("# Module Federation\n\nShares modules.\n", encoding="utf-8")
    titles = [document_title(d) for f in (page, summary, readme) for d in load_file(f)]
    assert titles == ["Pair", "org.example", "Module Federation"]
