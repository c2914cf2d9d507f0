"""Document loaders: .txt, .md, .rst, .html, .jsonl and .pdf files and directories, streamed one document at a time.

Conventions
-----------
- **Streaming.** :func:`iter_documents` is a generator: it opens one file at a time and yields one
  :class:`Document` at a time (a JSONL file is read line by line). Memory is bounded by the largest
  single document, never by the corpus. A text file longer than ``max_document_chars`` is yielded
  as several documents (parts), cut at paragraph boundaries, so one huge file stays bounded too.
- **Directories** are walked recursively in sorted order (by name, directories and files together),
  skipping hidden entries (names starting with ``.``) and files whose extension no loader handles
  (those are passed to ``on_skip``, which ``kgr ingest`` counts and reports by extension). A file
  named explicitly must have a supported extension.
- **Encoding.** Text is UTF-8 (a byte-order mark is removed); ``\\r\\n`` and ``\\r`` become ``\\n``.
- **Ids are stable, not content hashes.** A text, Markdown or PDF file's document id is its absolute
  path (symlinks resolved; ``#<part>`` appended for the parts of a long file): an edited file keeps
  its id, so re-ingestion replaces what it said (see :mod:`kgr.ingest.pipeline`). A JSONL line's id
  is the ``id`` it gives, else the SHA-256 (hex) of its text; two lines that give one id, in one
  file or in two, are refused by :func:`kgr.ingest.unique_ids.require_unique_ids` (the ingestion
  checks before it reads).
  Two identical files are two documents.
  ``Document.path`` is the file as named; re-loading is idempotent.
- **JSONL** documents are objects ``{"id"?: str, "text": str, "metadata"?: object}``; any other keys
  are folded into ``metadata``. Lines are strict JSON (:mod:`kgr.model.jsontext`: duplicate keys,
  NaN, nesting deeper than 64 refused). A bad line (malformed JSON, no ``text``, wrong types) is
  skipped and reported with its 1-based line number; the lines after it are read as usual.
- **PDF** needs the optional dependency ``pypdf`` (``pip install kgr[pdf]``). Pages are joined with
  a blank line; ``metadata["pages"]`` holds the page count. A PDF without extractable text
  (scanned pages, or a stream or page tree pypdf gives up on quietly) is reported like a bad
  line, never dropped in silence.
- **Errors.** A file that cannot be read, is not UTF-8, or is not a valid PDF raises
  :class:`kgr.errors.KgrValidationError` naming the file and the reason, unless ``on_error`` is given,
  in which case a :class:`LoadIssue` is passed to it and loading continues with the next file.
  Skipped JSONL lines always go to ``on_error`` when given, else to the ``kgr.ingest`` logger.
"""

from __future__ import annotations

import codecs
import functools
import hashlib
import logging
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kgr.errors import KgrValidationError
from kgr.ingest.html_text import HtmlText
from kgr.model.jsontext import loads_strict

__all__ = [
    "Document",
    "LoadIssue",
    "SUPPORTED_SUFFIXES",
    "bounded_lines",
    "iter_documents",
    "load_file",
    "iter_files",
    "path_kind",
    "text_document",
    "file_document_id",
    "resolved_path",
    "text_sha256",
]

log = logging.getLogger("kgr.ingest")

#: File extensions the loaders handle (lowercase, with the dot).
SUPPORTED_SUFFIXES = (".txt", ".md", ".markdown", ".rst", ".html", ".htm", ".jsonl", ".pdf")
#: Default longest document (characters) before a text file is split into parts.
DEFAULT_MAX_DOCUMENT_CHARS = 8_000_000
#: A JSONL line longer than this (bytes) is reported and skipped without being held in memory.
MAX_JSONL_LINE_BYTES = 32 * 1024 * 1024
_READ_BLOCK = 1 << 16


class Document(BaseModel):
    """One document: its text, where it came from and free-form metadata."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    id: str = Field(min_length=1, max_length=512,
                    description="stable id: a file's absolute path, a JSONL line's id, else the sha256 of the text (hex)")
    path: str | None = Field(None, description="the file it was read from")
    text: str
    metadata: dict[str, Any] = Field(default_factory=dict)


class LoadIssue(BaseModel):
    """A file or JSONL line that was skipped, and why."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    path: str
    line: int | None = Field(None, description="1-based line number for JSONL lines")
    error: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.error}"


def text_sha256(text: str) -> str:
    """SHA-256 (hex) of ``text`` in UTF-8 (lone surrogates kept): content ids and change checks."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def text_document(text: str, *, path: str | None = None, metadata: dict[str, Any] | None = None) -> Document:
    """A :class:`Document` for ``text`` with its content-hash id."""
    return Document(id=text_sha256(text), path=path, text=text, metadata=metadata or {})


#: Longest document id; a file path longer than this is identified by ``path-sha256:<hash of the path>``.
MAX_DOCUMENT_ID = 512


@functools.lru_cache(maxsize=4096)
def resolved_path(path: str) -> str:
    """``path`` absolute, symlinks resolved, in POSIX form (cached: a JSONL file's lines, a long
    file's parts and the pipeline ask for the same file's path many times)."""
    return Path(path).resolve().as_posix()


def file_document_id(path: Path, part: int | None = None) -> str:
    """The stable id of (a part of) a file: its absolute path, symlinks resolved, ``#part`` appended.

    >>> file_document_id(Path("/data/a.txt"), 2)
    '/data/a.txt#2'
    """
    doc_id = resolved_path(str(path)) + ("" if part is None else f"#{part}")
    return doc_id if len(doc_id) <= MAX_DOCUMENT_ID else "path-sha256:" + text_sha256(doc_id)


def file_document(text: str, path: Path, metadata: dict[str, Any], part: int | None = None) -> Document:
    """A :class:`Document` read from ``path`` (its stable id from :func:`file_document_id`)."""
    meta = metadata if part is None else {**metadata, "part": part}
    return Document(id=file_document_id(path, part), path=str(path), text=text, metadata=meta)


def _normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _decode_error(path: Path, exc: UnicodeDecodeError, offset: int) -> KgrValidationError:
    return KgrValidationError(
        f"{path}: not valid UTF-8 at byte {offset + exc.start} ({exc.reason}); convert the file to UTF-8"
    )


def _read_error(path: Path, exc: OSError) -> KgrValidationError:
    return KgrValidationError(f"cannot read {path}: {exc.strerror or exc}")


def _iter_text_parts(path: Path, max_chars: int, html: bool = False) -> Iterator[str]:
    """Decode ``path`` incrementally (with ``html``, converted to text as it is read:
    :class:`~kgr.ingest.html_text.HtmlText`); yield its text whole, or in parts of at most ``max_chars``
    cut at blank lines."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")("strict")
    converter = HtmlText() if html else None
    buf: list[str] = []
    size = 0
    offset = 0
    try:
        with path.open("rb") as fh:
            while True:
                block = fh.read(_READ_BLOCK)
                try:
                    piece = decoder.decode(block, final=not block)
                except UnicodeDecodeError as exc:
                    raise _decode_error(path, exc, offset) from exc
                offset += len(block)
                if converter is not None:
                    converter.feed(piece)
                    piece = converter.take() if block else converter.finish()  # finish: close, then take
                if piece:
                    buf.append(piece)
                    size += len(piece)
                while size > max_chars:
                    text = "".join(buf)
                    cut = text.rfind("\n\n", 0, max_chars)
                    if cut <= 0:
                        cut = text.rfind("\n", 0, max_chars)
                    if cut <= 0:
                        cut = max_chars
                    yield _normalise_newlines(text[:cut])
                    rest = text[cut:]
                    buf, size = [rest], len(rest)
                if not block:
                    break
    except OSError as exc:
        raise _read_error(path, exc) from exc
    yield _normalise_newlines("".join(buf))


def _load_text(path: Path, fmt: str, max_chars: int) -> Iterator[Document]:
    parts = (p for p in _iter_text_parts(path, max_chars, html=fmt == "html") if p.strip())
    first = next(parts, None)
    if first is None:
        log.info("%s: empty file, nothing to load", path)
        return
    second = next(parts, None)
    if second is None:
        yield file_document(first, path, {"format": fmt})
        return
    yield file_document(first, path, {"format": fmt}, 0)
    yield file_document(second, path, {"format": fmt}, 1)
    for i, part in enumerate(parts, start=2):
        yield file_document(part, path, {"format": fmt}, i)


class _JsonlDoc(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="allow")

    id: str | None = Field(None, min_length=1, max_length=512)
    text: str
    metadata: dict[str, Any] = Field(default_factory=dict)


def bounded_lines(fh: Any, limit: int) -> Iterator[bytes | None]:
    """The lines of a binary file, each at most ``limit`` bytes; None for a longer line (which is
    read through in blocks and dropped, never held whole)."""
    while True:
        raw = fh.readline(limit + 1)
        if not raw:
            return
        if len(raw) <= limit or raw.endswith(b"\n"):
            yield raw
            continue
        while raw and not raw.endswith(b"\n"):
            raw = fh.readline(_READ_BLOCK)
        yield None


def _split_parts(text: str, max_chars: int) -> list[str]:
    """``text`` whole, or in parts of at most ``max_chars`` cut at blank lines (then lines)."""
    parts = []
    while len(text) > max_chars:
        cut = text.rfind("\n\n", 0, max_chars)
        if cut <= 0:
            cut = text.rfind("\n", 0, max_chars)
        if cut <= 0:
            cut = max_chars
        parts.append(text[:cut])
        text = text[cut:]
    parts.append(text)
    return [p for p in parts if p.strip()]


def _load_jsonl(path: Path, report: Callable[[LoadIssue], None],
                max_chars: int = DEFAULT_MAX_DOCUMENT_CHARS) -> Iterator[Document]:
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise _read_error(path, exc) from exc
    with fh:
        for n, raw in enumerate(bounded_lines(fh, MAX_JSONL_LINE_BYTES), start=1):
            if raw is None:
                report(LoadIssue(path=str(path), line=n, error=f"line longer than {MAX_JSONL_LINE_BYTES} bytes: split "
                                                               "the document, or give it as a .txt file"))
                continue
            try:
                line = raw.decode("utf-8-sig" if n == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                report(LoadIssue(path=str(path), line=n, error=f"not valid UTF-8 ({exc.reason})"))
                continue
            if not line.strip():
                continue
            try:
                data = loads_strict(line)  # duplicate keys, NaN and deep nesting refused: one failed line
            except KgrValidationError as exc:
                report(LoadIssue(path=str(path), line=n, error=str(exc)))
                continue
            if not isinstance(data, dict):
                report(LoadIssue(path=str(path), line=n, error="expected a JSON object with a 'text' field"))
                continue
            try:
                rec = _JsonlDoc.model_validate(data)
            except ValueError as exc:
                err = KgrValidationError.from_pydantic(exc)
                report(LoadIssue(path=str(path), line=n, error=str(err)))
                continue
            text = _normalise_newlines(rec.text)
            if not text.strip():
                report(LoadIssue(path=str(path), line=n, error="empty text"))
                continue
            metadata = {**(rec.model_extra or {}), **rec.metadata, "format": "jsonl", "line": n}
            parts = _split_parts(text, max_chars)
            if len(parts) == 1:
                yield Document(id=rec.id or text_sha256(text), path=str(path), text=text, metadata=metadata)
                continue
            for i, part in enumerate(parts):  # a long document is chunked as a long text file is
                yield Document(id=f"{rec.id}#{i}" if rec.id else text_sha256(part), path=str(path), text=part,
                               metadata={**metadata, "part": i})


def _load_pdf(path: Path, report: Callable[[LoadIssue], None]) -> Iterator[Document]:
    try:
        import pypdf
        from pypdf.errors import PyPdfError
    except ImportError as exc:
        raise KgrValidationError(
            f"{path}: reading PDF files needs the optional dependency pypdf; install it with: pip install kgr[pdf]"
        ) from exc
    try:
        reader = pypdf.PdfReader(str(path))
        if reader.is_encrypted:
            try:
                ok = reader.decrypt("")
            except Exception:  # noqa: BLE001 - pypdf raises several types for unsupported crypto
                ok = 0
            if not ok:
                raise KgrValidationError(f"{path}: the PDF is encrypted and needs a password")
        pages = [(page.extract_text() or "") for page in reader.pages]
        title = None
        try:
            if reader.metadata is not None and reader.metadata.title:
                title = str(reader.metadata.title)
        except Exception:  # noqa: BLE001 - broken info dictionaries must not lose the text
            title = None
    except OSError as exc:
        raise _read_error(path, exc) from exc
    except KgrValidationError:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError,
            AssertionError, ZeroDivisionError) as exc:  # what a malformed PDF makes pypdf raise
        raise KgrValidationError(f"{path}: not a readable PDF ({type(exc).__name__}: {exc})") from exc
    text = _normalise_newlines("\n\n".join(p.strip() for p in pages)).strip()
    if not text:  # scanned pages, or what pypdf gave up on quietly (a stream past its limits, a broken page tree)
        report(LoadIssue(path=str(path), error=f"no extractable text in {len(pages)} page(s) (scanned images "
                                               "need OCR first; a damaged or oversized stream yields none)"))
        return
    meta: dict[str, Any] = {"format": "pdf", "pages": len(pages)}
    if title:
        meta["title"] = title
    yield file_document(text, path, meta)


def load_file(
    path: str | os.PathLike[str],
    *,
    on_error: Callable[[LoadIssue], None] | None = None,
    max_document_chars: int = DEFAULT_MAX_DOCUMENT_CHARS,
) -> Iterator[Document]:
    """Yield the documents of one file (one for .txt/.md/.rst/.html/.pdf, one per line for .jsonl; .rst is
    read as text, .html converted to text: :mod:`kgr.ingest.html_text`).

    Raises
    ------
    KgrValidationError
        Unsupported extension, unreadable file, invalid UTF-8 or an unreadable PDF (when ``on_error`` is None).
    """
    p = Path(path)
    report = on_error or _log_issue
    suffix = p.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        supported = ", ".join(SUPPORTED_SUFFIXES)
        raise KgrValidationError(f"{p}: unsupported file type {suffix or '(none)'}; supported: {supported}")
    if suffix == ".jsonl":
        yield from _load_jsonl(p, report, max_document_chars)
    elif suffix == ".pdf":
        yield from _load_pdf(p, report)
    else:
        fmt = "md" if suffix in (".md", ".markdown") else "html" if suffix in (".html", ".htm") else "txt"
        yield from _load_text(p, fmt, max_document_chars)


def _log_issue(issue: LoadIssue) -> None:
    log.warning("skipped %s", issue)


def path_kind(path: str | os.PathLike[str]) -> str | None:
    """``"file"``, ``"dir"`` or ``"other"`` for an existing path; None when nothing is there, also when
    the name cannot be a path (longer than the system allows, a NUL byte): such an argument is then
    reported as missing in one line instead of raising ``OSError: File name too long``."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return "file" if stat.S_ISREG(st.st_mode) else "dir" if stat.S_ISDIR(st.st_mode) else "other"


def iter_files(path: str | os.PathLike[str], *, on_skip: Callable[[Path], None] | None = None) -> Iterator[Path]:
    """The files under ``path`` that a loader handles, recursively, in sorted order (``path`` itself if a file).
    ``on_skip`` is called with each file under a directory passed over because no loader handles its
    extension (hidden entries are passed over without a call).

    Raises
    ------
    KgrValidationError
        If ``path`` does not exist.
    """
    p = Path(path)
    kind = path_kind(p)
    if kind == "file":
        yield p
        return
    if kind is None:
        raise KgrValidationError(f"{p}: no such file or directory")
    try:
        entries = sorted(os.scandir(p), key=lambda e: e.name)
    except OSError as exc:
        raise _read_error(p, exc) from exc
    for entry in entries:
        if entry.name.startswith("."):
            continue
        child = Path(entry.path)
        if entry.is_dir():
            yield from iter_files(child, on_skip=on_skip)
        elif entry.is_file() and child.suffix.lower() in SUPPORTED_SUFFIXES:
            yield child
        elif entry.is_file() and on_skip is not None:
            on_skip(child)


def iter_documents(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    on_error: Callable[[LoadIssue], None] | None = None,
    on_skip: Callable[[Path], None] | None = None,
    max_document_chars: int = DEFAULT_MAX_DOCUMENT_CHARS,
) -> Iterator[Document]:
    """Stream the documents of files and directories (conventions in the module docstring).

    Parameters
    ----------
    paths:
        One path or several; directories are walked recursively in sorted order.
    on_error:
        Called with a :class:`LoadIssue` for every skipped file or JSONL line. When None, file
        errors raise and skipped lines are logged to the ``kgr.ingest`` logger.
    on_skip:
        Called with each file under a directory that no loader handles (see :func:`iter_files`).
    max_document_chars:
        A text file longer than this is yielded in parts.

    Raises
    ------
    KgrValidationError
        A missing path; with ``on_error=None``, also an unreadable, undecodable or unsupported file.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    for root in paths:
        for f in iter_files(root, on_skip=on_skip):
            try:
                yield from load_file(f, on_error=on_error, max_document_chars=max_document_chars)
            except KgrValidationError as exc:
                if on_error is None:
                    raise
                on_error(LoadIssue(path=str(f), error=str(exc).removeprefix(f"{f}: ")))
            except Exception as exc:  # noqa: BLE001 - a file a parser chokes on fails alone, never the job
                if on_error is None:
                    raise
                log.warning("%s: unexpected %s while loading", f, type(exc).__name__, exc_info=True)
                on_error(LoadIssue(path=str(f), error=f"could not be read ({type(exc).__name__}: {str(exc)[:200]})"))
