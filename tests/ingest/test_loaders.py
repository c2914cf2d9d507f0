"""Document loaders: every format, directories, errors, streaming and bounded memory."""

from __future__ import annotations

import hashlib
import json
import logging
import sys
import tracemalloc
import types

import pytest

from kgr.errors import KgrValidationError
from kgr.ingest.chunking import ChunkingConfig, iter_chunks
from kgr.ingest.loaders import Document, LoadIssue, iter_documents, iter_files, load_file, text_document
from kgr.ingest.titles import document_title
from kgr.ingest.unique_ids import duplicate_ids, require_unique_ids


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _pdf(objs: list[bytes], info_ref: int | None = None) -> bytes:
    """A PDF of the objects ``objs`` (numbered from 1; the first is the catalog), offsets exact."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objs, start=1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{off:010d} 00000 n \n".encode() for off in offsets)
    info = f" /Info {info_ref} 0 R" if info_ref else ""
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R{info} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def make_pdf(pages: list[list[str]], title: str | None = None) -> bytes:
    """A minimal valid PDF (Helvetica text, one content stream per page), offsets computed exactly."""
    n_pages = len(pages)
    objs: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(n_pages))
    objs.append(f"<< /Type /Pages /Kids [{kids}] /Count {n_pages} >>".encode())
    font_ref = 3 + 2 * n_pages
    for i, lines in enumerate(pages):
        ops = " ".join(f"({line}) Tj 0 -16 Td" for line in lines)
        stream = f"BT /F1 12 Tf 72 720 Td {ops} ET".encode()
        objs.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R "
            f"/Resources << /Font << /F1 {font_ref} 0 R >> >> >>".encode()
        )
        objs.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objs.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    info_ref = None
    if title:
        objs.append(f"<< /Title ({title}) >>".encode())
        info_ref = len(objs)
    return _pdf(objs, info_ref)


# -- formats -----------------------------------------------------------------------------------------


def test_txt_and_md(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"\xef\xbb\xbfFirst line.\r\nSecond line.\r\n")
    (tmp_path / "b.md").write_text("# Title\n\nBody text.\n", encoding="utf-8")
    a, b = iter_documents(tmp_path)
    assert a.text == "First line.\nSecond line.\n"  # BOM removed, newlines normalised
    assert a.id == (tmp_path / "a.txt").resolve().as_posix() and a.path == str(tmp_path / "a.txt")
    assert a.metadata == {"format": "txt"}
    assert b.metadata == {"format": "md"} and b.text.startswith("# Title")


HTML_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>Flask — docs</title>
<style>h1 { color: red }</style><script>var x = "<p>not text</p>";</script></head>
<body><nav><a href="/">Home</a></nav><h1>Flask</h1>
<p>Flask depends on <a href="https://werkzeug.palletsprojects.com">Werkzeug</a> &amp; Jinja.
   It is   licensed under the BSD license.</p>
<h2>Install</h2><ul><li>pip install flask<li>done</ul>
<pre>def hello():
    return "hi"</pre><p>Unclosed <b>bold
</body></html>"""


def test_html_is_converted_to_text(tmp_path):
    """An HTML page is read as the text a reader sees: headings as Markdown lines (the first gives the
    title), paragraphs and items on their own lines, scripts, styles and the <title> dropped,
    entities decoded, <pre> kept as written; malformed markup does not stop it."""
    (tmp_path / "flask.html").write_text(HTML_PAGE, encoding="utf-8")
    (doc,) = iter_documents(tmp_path)
    assert doc.metadata == {"format": "html"}
    text = doc.text
    assert text.startswith("Home\n\n# Flask\n\nFlask depends on Werkzeug & Jinja. It is licensed under the BSD license.")
    assert "\n\n## Install\n\n- pip install flask\n- done\n" in text
    assert '    return "hi"' in text and text.rstrip().endswith("Unclosed bold")
    assert "not text" not in text and "color" not in text and "docs" not in text
    assert document_title(doc) == "Flask"
    # streamed: the same text when the page is read in blocks smaller than its tags
    import kgr.ingest.loaders as loaders
    small = loaders._READ_BLOCK
    try:
        loaders._READ_BLOCK = 7
        assert next(iter_documents(tmp_path / "flask.html")).text == text
    finally:
        loaders._READ_BLOCK = small


def test_rst_is_read_as_text(tmp_path):
    """reStructuredText (a Python project's README, its docs) is read as plain text, not skipped."""
    (tmp_path / "README.rst").write_text("Requests\n========\n\n**Requests** is simple.\n", encoding="utf-8")
    (tmp_path / "notes.docx").write_text("x", encoding="utf-8")
    skipped: list[str] = []
    assert [p.name for p in iter_files(tmp_path, on_skip=lambda p: skipped.append(p.name))] == ["README.rst"]
    assert skipped == ["notes.docx"]
    (doc,) = iter_documents(tmp_path)
    assert doc.metadata == {"format": "txt"} and doc.text.startswith("Requests\n====")
    assert document_title(doc) == "Requests"


def test_jsonl_documents_and_bad_lines(tmp_path):
    lines = [
        json.dumps({"id": "doc-1", "text": "Ada wrote notes.", "metadata": {"lang": "en"}, "title": "Ada"}),
        "",
        "{not json",
        json.dumps({"id": "doc-3"}),
        json.dumps(["a", "list"]),
        json.dumps({"text": "No id here."}),
        json.dumps({"text": "   "}),
        json.dumps({"id": 7, "text": "wrong id type"}),
    ]
    path = tmp_path / "docs.jsonl"
    path.write_bytes(("\n".join(lines) + "\n").encode() + b'{"text": "bad \xff byte"}\n')
    issues: list[LoadIssue] = []
    docs = list(iter_documents(path, on_error=issues.append))

    assert [d.id for d in docs] == ["doc-1", sha("No id here.")]
    assert docs[0].metadata == {"lang": "en", "title": "Ada", "format": "jsonl", "line": 1}
    assert docs[1].metadata == {"format": "jsonl", "line": 6}
    by_line = {i.line: i.error for i in issues}
    assert sorted(by_line) == [3, 4, 5, 7, 8, 9]
    assert by_line[3].startswith("malformed JSON")
    assert by_line[4] == "text: Field required"
    assert by_line[5] == "expected a JSON object with a 'text' field"
    assert by_line[7] == "empty text"
    assert by_line[8].startswith("id: Input should be a valid string")
    assert by_line[9].startswith("not valid UTF-8")
    assert str(issues[0]) == f"{path}:3: {by_line[3]}"


def test_hostile_jsonl_lines_fail_alone_and_valid_json_passes(tmp_path, caplog):
    """Issue 31, item 8: one 100,000-deep line ended the file's loading with a RecursionError
    traceback (the lines after it never read); a duplicate key was taken silently; a raw U+2028 in
    a valid line and a byte-order mark at the start of the file are JSON and must load."""
    lines = [
        "\ufeff" + json.dumps({"id": "bom", "text": "after a byte-order mark"}),
        "[" * 100_000 + "]" * 100_000,
        json.dumps({"id": "sep", "text": "one\u2028two\u2029three"}, ensure_ascii=False),
        '{"id": "dup", "text": "a", "text": "b"}',
        json.dumps({"id": "nan", "text": "x", "metadata": {"score": float("nan")}}),
        json.dumps({"id": "last", "text": "the line after them all"}),
    ]
    path = tmp_path / "hostile.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    issues: list[LoadIssue] = []
    with caplog.at_level(logging.WARNING):
        docs = list(iter_documents(path, on_error=issues.append))
    assert [d.id for d in docs] == ["bom", "sep", "last"]
    assert docs[1].text == "one\u2028two\u2029three"
    assert [(i.line, i.error) for i in issues] == [
        (2, "JSON nested deeper than 64 levels"), (4, "duplicate key 'text' in a JSON object"),
        (5, "NaN is not valid JSON")]
    assert "Traceback" not in caplog.text and "RecursionError" not in caplog.text


def test_jsonl_bad_lines_are_logged_without_a_callback(tmp_path, caplog):
    path = tmp_path / "docs.jsonl"
    path.write_text('{"text": "ok"}\n{broken\n', encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="kgr.ingest"):
        docs = list(iter_documents(path))
    assert [d.text for d in docs] == ["ok"]
    assert f"{path}:2: malformed JSON" in caplog.text


def test_pdf_text_pages_and_title(tmp_path):
    path = tmp_path / "paper.pdf"
    pages = [["Charles Babbage designed the", "Difference Engine."], ["Page two text."]]
    path.write_bytes(make_pdf(pages, title="Engines"))
    (doc,) = load_file(path)
    assert "Charles Babbage designed the" in doc.text and "Difference Engine." in doc.text
    assert doc.text.index("Difference Engine.") < doc.text.index("Page two text.")
    assert doc.metadata == {"format": "pdf", "pages": 2, "title": "Engines"}
    assert doc.id == path.resolve().as_posix()


def test_pdf_without_pypdf_names_the_extra(tmp_path, monkeypatch):
    path = tmp_path / "paper.pdf"
    path.write_bytes(make_pdf([["x"]]))
    monkeypatch.setitem(sys.modules, "pypdf", None)  # import pypdf -> ImportError
    with pytest.raises(KgrValidationError, match=r"needs the optional dependency pypdf.*pip install kgr\[pdf\]"):
        list(load_file(path))


def test_broken_pdf(tmp_path):
    path = tmp_path / "broken.pdf"
    path.write_bytes(b"%PDF-1.4\nthis is not really a pdf")
    with pytest.raises(KgrValidationError, match=r"broken\.pdf: not a readable PDF"):
        list(load_file(path))


def test_a_pdf_that_breaks_pypdf_is_one_failed_document_not_a_stopped_job(tmp_path, monkeypatch):
    # issue 13, item 4: pypdf's LimitReachedError (a self-referencing object) escaped the loader and
    # stopped the whole ingest; the documents after it were never read
    import pypdf
    from pypdf.errors import LimitReachedError

    (tmp_path / "a.pdf").write_bytes(make_pdf([["first"]]))
    (tmp_path / "b.txt").write_text("after the bad PDF", encoding="utf-8")

    def explode(self, *args, **kwargs):  # noqa: ANN001
        raise LimitReachedError("limit reached while following a self-referencing object")

    monkeypatch.setattr(pypdf.PdfReader, "__init__", explode)
    issues = []
    docs = list(iter_documents(tmp_path, on_error=issues.append))
    assert [d.text for d in docs] == ["after the bad PDF"]
    assert len(issues) == 1 and issues[0].path.endswith("a.pdf") and "not a readable PDF" in issues[0].error
    monkeypatch.setattr(pypdf.PdfReader, "__init__", lambda self, *a, **k: (_ for _ in ()).throw(RecursionError("deep")))
    issues.clear()
    assert [d.text for d in iter_documents(tmp_path, on_error=issues.append)] == ["after the bad PDF"]
    assert "RecursionError" in issues[0].error


def test_pdf_without_text_yields_nothing(tmp_path, caplog):
    path = tmp_path / "blank.pdf"
    path.write_bytes(make_pdf([[]]))
    with caplog.at_level(logging.WARNING, logger="kgr.ingest"):
        assert list(load_file(path)) == []
    assert "no extractable text" in caplog.text


def _bomb_pdf(megabytes: int) -> bytes:
    """One page whose content stream inflates from a few kilobytes to ``megabytes`` MiB of zeros."""
    import zlib

    z = zlib.compressobj(9)
    data = b"".join(z.compress(bytes(1 << 20)) for _ in range(megabytes)) + z.flush()
    return _pdf([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                 b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
                 b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(data) + data + b"\nendstream"])


def _parent_loop_pdf(kids_loop: bool) -> bytes:
    """A page tree whose /Parent chain loops (the page inherits its resources through it), or whose
    /Kids hold the tree's own root."""
    stream = b"BT /F1 12 Tf (Hello loop) Tj ET"
    content = b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream"
    if kids_loop:
        return _pdf([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R 2 0 R] /Count 2 >>",
                     b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>", content])
    return _pdf([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 /Parent 5 0 R >>",
                 b"<< /Type /Page /Parent 2 0 R /Contents 4 0 R >>", content,
                 b"<< /Type /Pages /Kids [2 0 R] /Count 1 /Parent 2 0 R >>"])


def test_bomb_and_parent_loop_pdfs_are_reported_never_silent(tmp_path):
    """Issue 31, item 8: a decompression-bomb PDF pypdf inflates within its limits yielded no text,
    no document and no report line (only a log warning); each hostile PDF must be one reported
    issue, and the corpus goes on."""
    (tmp_path / "a_bomb.pdf").write_bytes(_bomb_pdf(12))
    (tmp_path / "b_parent_loop.pdf").write_bytes(_parent_loop_pdf(kids_loop=False))
    (tmp_path / "c_kids_loop.pdf").write_bytes(_parent_loop_pdf(kids_loop=True))
    (tmp_path / "d_blank.pdf").write_bytes(make_pdf([[]]))
    (tmp_path / "e_after.txt").write_text("after the hostile PDFs", encoding="utf-8")
    issues: list[LoadIssue] = []
    docs = list(iter_documents(tmp_path, on_error=issues.append))
    assert [d.text for d in docs] == ["after the hostile PDFs"]
    assert [i.path.rsplit("/", 1)[-1] for i in issues] == ["a_bomb.pdf", "b_parent_loop.pdf", "c_kids_loop.pdf",
                                                          "d_blank.pdf"]
    assert issues[0].error.startswith("no extractable text in 1 page(s)")
    assert all(i.error for i in issues) and "no extractable text" in issues[3].error


# -- directories and errors --------------------------------------------------------------------------


def test_directories_are_walked_recursively_in_sorted_order(tmp_path):
    for rel in ["b.txt", "a/z.md", "a/c/d.txt", "a/b.jsonl", ".hidden/x.txt", "a/.secret.txt", "notes.docx", "A.txt"]:
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps({"text": rel}) if rel.endswith(".jsonl") else f"text of {rel}", encoding="utf-8")
    skipped: list[str] = []
    names = [p.relative_to(tmp_path).as_posix() for p in iter_files(tmp_path, on_skip=lambda p: skipped.append(p.name))]
    assert names == ["A.txt", "a/b.jsonl", "a/c/d.txt", "a/z.md", "b.txt"]
    assert skipped == ["notes.docx"]  # the hidden entries are passed over without a word
    texts = [d.text for d in iter_documents([tmp_path / "b.txt", tmp_path / "a"])]
    assert texts == ["text of b.txt", "a/b.jsonl", "text of a/c/d.txt", "text of a/z.md"]


def test_file_ids_are_paths_that_survive_edits(tmp_path):
    (tmp_path / "one.txt").write_text("Same text.", encoding="utf-8")
    (tmp_path / "two.md").write_text("Same text.", encoding="utf-8")
    a, b = iter_documents(tmp_path)
    assert a.id != b.id and a.text == b.text  # two files, two documents
    (tmp_path / "one.txt").write_text("Edited text.", encoding="utf-8")
    (edited,) = iter_documents(tmp_path / "one.txt")
    assert edited.id == a.id == (tmp_path / "one.txt").resolve().as_posix()
    # through a symlink, the same document
    (tmp_path / "link").symlink_to(tmp_path)
    assert [d.id for d in iter_documents(tmp_path / "link" / "one.txt")] == [a.id]


def test_undecodable_file_raises_naming_file_and_byte(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"caf\xe9 au lait")
    expected = r"latin1\.txt: not valid UTF-8 at byte 3 \(invalid continuation byte\)"
    with pytest.raises(KgrValidationError, match=expected):
        list(iter_documents(path))


def test_unreadable_unsupported_and_missing_paths(tmp_path):
    (tmp_path / "dir.txt").mkdir()
    with pytest.raises(KgrValidationError, match=r"cannot read .*dir\.txt: Is a directory"):
        list(load_file(tmp_path / "dir.txt"))
    (tmp_path / "x.docx").write_text("x")
    with pytest.raises(KgrValidationError, match=r"x\.docx: unsupported file type \.docx"):
        list(iter_documents(tmp_path / "x.docx"))
    with pytest.raises(KgrValidationError, match="no such file or directory"):
        list(iter_documents(tmp_path / "missing"))


def test_on_error_reports_bad_files_and_continues(tmp_path):
    (tmp_path / "1.txt").write_text("Good one.", encoding="utf-8")
    (tmp_path / "2.txt").write_bytes(b"\xff\xfe\x00bad")
    (tmp_path / "3.pdf").write_bytes(b"garbage")
    (tmp_path / "4.md").write_text("Good two.", encoding="utf-8")
    issues: list[LoadIssue] = []
    texts = [d.text for d in iter_documents(tmp_path, on_error=issues.append)]
    assert texts == ["Good one.", "Good two."]
    assert [(i.path.rsplit("/", 1)[-1], i.line) for i in issues] == [("2.txt", None), ("3.pdf", None)]
    assert issues[0].error.startswith("not valid UTF-8 at byte 0")
    assert issues[1].error.startswith("not a readable PDF")


def test_empty_files_yield_nothing(tmp_path):
    (tmp_path / "empty.txt").write_text("  \n\n", encoding="utf-8")
    assert list(iter_documents(tmp_path)) == []


# -- streaming ---------------------------------------------------------------------------------------


def test_loading_is_lazy(tmp_path):
    (tmp_path / "a.txt").write_text("First.", encoding="utf-8")
    (tmp_path / "b.txt").write_bytes(b"\xff")
    stream = iter_documents(tmp_path)
    assert isinstance(stream, types.GeneratorType)
    assert next(stream).text == "First."  # b.txt not read yet
    with pytest.raises(KgrValidationError, match="b.txt"):
        next(stream)


def test_huge_text_file_is_split_into_bounded_parts(tmp_path):
    paragraphs = [f"Paragraph {i}. " + "Some words here. " * 30 for i in range(200)]
    text = "\n\n".join(paragraphs)
    (tmp_path / "big.txt").write_text(text, encoding="utf-8")
    parts = list(load_file(tmp_path / "big.txt", max_document_chars=20_000))
    assert len(parts) > 5
    assert all(len(p.text) <= 20_000 for p in parts)
    assert [p.metadata["part"] for p in parts] == list(range(len(parts)))
    assert "".join(p.text for p in parts) == text
    assert all(p.text.startswith("\n\nParagraph") or p.text.startswith("Paragraph") for p in parts)


def test_memory_stays_bounded_over_a_corpus(tmp_path):
    body = ("Charles Babbage designed the Difference Engine in London. " * 400).strip()  # ~23 kB
    for i in range(60):  # ~1.4 MB on disk
        sub = tmp_path / f"d{i // 25}"
        sub.mkdir(exist_ok=True)
        (sub / f"f{i:03}.txt").write_text(f"Document {i}. {body}", encoding="utf-8")
    with (tmp_path / "many.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(60):
            fh.write(json.dumps({"id": f"j{i}", "text": f"Line document {i}. {body}"}) + "\n")
    cfg = ChunkingConfig(size=512, overlap=64)
    tracemalloc.start()
    try:
        n_chunks = 0
        ids = set()
        for chunk in iter_chunks(iter_documents(tmp_path), config=cfg):
            n_chunks += 1
            ids.add(chunk.document_id)
        n_docs = len(ids)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert n_docs == 120 and n_chunks > 1250
    assert peak < 1_000_000, f"peak {peak / 1e6:.1f} MB for a ~2.8 MB corpus"  # measured ~0.2 MB


def test_text_document_helper():
    d = text_document("Hello.", path="x.txt", metadata={"k": 1})
    assert d == Document(id=sha("Hello."), path="x.txt", text="Hello.", metadata={"k": 1})


def test_jsonl_lines_are_bounded_and_long_documents_split(tmp_path, monkeypatch):
    """Issue 13, item 8: a 200 MB single-line JSONL document reached 1.6 GB RSS (text files were
    split, JSONL documents were not). A line over the limit is reported and read through in blocks;
    a long text is split into parts like a long text file."""
    import json as _json
    import tracemalloc

    import kgr.ingest.loaders as loaders

    monkeypatch.setattr(loaders, "MAX_JSONL_LINE_BYTES", 1_000_000)
    path = tmp_path / "docs.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        fh.write(_json.dumps({"id": "huge", "text": "x" * 20_000_000}) + "\n")           # 20 MB: over the limit
        fh.write(_json.dumps({"id": "long", "text": ("para. " * 2000 + "\n\n") * 30}) + "\n")  # 360 kB: split
        fh.write(_json.dumps({"text": "short"}) + "\n")
    issues = []
    tracemalloc.start()
    docs = list(iter_documents(path, on_error=issues.append, max_document_chars=100_000))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 8_000_000  # the 20 MB line was never held whole
    assert [(i.line, i.error.split(":")[0]) for i in issues] == [(1, "line longer than 1000000 bytes")]
    long = [d for d in docs if d.id.startswith("long#")]
    assert len(long) >= 4 and all(len(d.text) <= 100_000 for d in long)
    assert "".join(d.text for d in long) == ("para. " * 2000 + "\n\n") * 30
    assert docs[-1].text == "short"


def test_duplicate_jsonl_ids_are_found_across_files_with_their_lines(tmp_path):
    """Two JSONL lines that give one id (in one file or in two) are listed with their files and
    lines and refused; a file named twice (itself and its directory) is not a duplicate, nor are
    lines without an id (their id is their text's hash) or bad lines."""
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    lines = [json.dumps({"id": "dup", "text": "curl supports LDAP."}), json.dumps({"id": "one", "text": "x"}),
             "{nope", json.dumps({"text": "same"}), json.dumps({"text": "same"}),
             json.dumps({"id": "dup", "text": "git supports IMAP."})]
    a.write_text("\n".join(lines) + "\n")
    b.write_text(json.dumps({"id": "dup", "text": "again"}) + "\n" + json.dumps({"id": "two", "text": "y"}) + "\n")
    assert duplicate_ids([a, tmp_path]) == {"dup": [(str(a), 1), (str(a), 6), (str(b), 1)]}
    with pytest.raises(KgrValidationError) as exc:
        require_unique_ids([a, tmp_path])
    assert str(exc.value) == (f"document id 'dup' appears 3 times ({a} lines 1 and 6, {b} line 1): "
                              "ids must be unique")
    b.unlink()
    with pytest.raises(KgrValidationError, match=r"'dup' appears twice \(.*a.jsonl lines 1 and 6\)"):
        require_unique_ids(tmp_path)
    a.write_text(json.dumps({"id": "dup", "text": "curl supports LDAP."}) + "\n")
    assert duplicate_ids([a, a, tmp_path]) == {}
    require_unique_ids([a, tmp_path])
