"""The CoreNLP server's HTTP client: many sentences in one request, parses cached by sentence text.

:meth:`ParseClient.parse` sends the sentences it has not parsed yet as one document, one sentence a
line (``ssplit.eolonly``: CoreNLP splits where kgr split, newlines inside a sentence become spaces,
offsets unchanged), and reads each sentence's :class:`kgr.text.parse.Parse`. Standard library only
(``urllib``): the default install gains no dependency.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import OrderedDict

from kgr.errors import KgrRuntimeError
from kgr.runtime.corenlp import ANNOTATORS
from kgr.text.parse import Parse

__all__ = ["MAX_SENTENCE_CHARS", "ParseClient"]

#: Longer "sentences" (tables, run-on lists) are not sent: no parse, so nothing of them is confirmed.
MAX_SENTENCE_CHARS = 1000
_PROPS = {"annotators": ANNOTATORS, "outputFormat": "json", "ssplit.eolonly": "true", "tokenize.language": "en"}


def _utf16_map(text: str) -> list[int] | None:
    """Python offset of each UTF-16 offset of ``text`` (None when they coincide: no astral characters)."""
    if all(ord(c) < 0x10000 for c in text):
        return None
    out = []
    for i, c in enumerate(text):
        out.extend([i, i] if ord(c) >= 0x10000 else [i])
    out.append(len(text))
    return out


class ParseClient:
    """Parses sentences with the server at ``url``; remembers up to ``cache_size`` sentences' parses.

    ``seconds`` and ``sentences_sent`` add up the time spent in requests and the sentences parsed.
    """

    def __init__(self, url: str, *, timeout: float = 120.0, cache_size: int = 50_000):
        self.url, self.timeout, self.cache_size = url, timeout, cache_size
        self._cache: OrderedDict[str, Parse | None] = OrderedDict()
        self.seconds, self.sentences_sent, self.requests = 0.0, 0, 0

    def parse(self, sentences: list[str]) -> list[Parse | None]:
        """Each sentence's parse (None for an empty or over-long one), in order.

        Raises
        ------
        KgrRuntimeError
            The server did not answer, or answered with an error or the wrong number of sentences.
        """
        todo = list(dict.fromkeys(s for s in sentences if s not in self._cache))
        send = [s for s in todo if s.strip() and len(s) <= MAX_SENTENCE_CHARS]
        for s in todo:
            self._cache[s] = None
        if send:
            for s, p in zip(send, self._request(send)):
                self._cache[s] = p
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return [self._cache.get(s) for s in sentences]

    def _request(self, sentences: list[str]) -> list[Parse]:
        lines = [" ".join(s.splitlines()) if "\n" in s or "\r" in s else s for s in sentences]
        lines = [s.replace("\u2028", " ").replace("\u2029", " ").replace("\x85", " ") for s in lines]
        text = "\n".join(lines)
        query = urllib.parse.urlencode({"properties": json.dumps(_PROPS)})
        req = urllib.request.Request(f"{self.url}/?{query}", data=text.encode("utf-8"), method="POST",
                                     headers={"Content-Type": "text/plain; charset=utf-8"})
        t0 = time.perf_counter()
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                doc = json.loads(resp.read().decode("utf-8"))
        except (OSError, urllib.error.URLError, ValueError) as exc:
            raise KgrRuntimeError(f"the CoreNLP server at {self.url} failed to parse {len(sentences)} sentence(s): {exc}") from None
        self.seconds += time.perf_counter() - t0
        self.requests += 1
        self.sentences_sent += len(sentences)
        to_py = _utf16_map(text)
        got = doc.get("sentences", [])
        starts, at = [], 0
        for s in lines:
            starts.append(at)
            at += len(s) + 1
        parses = []
        by_start = {}
        for sent in got:
            if not sent.get("tokens"):
                continue
            first = sent["tokens"][0]["characterOffsetBegin"]
            first = to_py[first] if to_py is not None else first
            by_start[max((b for b in starts if b <= first), default=0)] = sent
        for b in starts:
            sent = by_start.get(b)
            parses.append(Parse.from_corenlp(sent, b, to_py) if sent is not None else Parse(()))
        return parses
