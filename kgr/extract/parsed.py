"""The rules extractor with a dependency parse that confirms or vetoes each triple (optional: CoreNLP).

:class:`ParsedRulesExtractor` runs :class:`kgr.extract.rules.RulesExtractor`, parses every sentence a
triple was read from (one request per chunk to a local Stanford CoreNLP server,
:mod:`kgr.runtime.corenlp`; parses cached by sentence text) and keeps a triple only when
:func:`kgr.extract.parse_check.veto` finds the parse supports it. Turned on by ``kgr ingest --parser
corenlp``, ``IngestConfig(parser="corenlp")`` or ``KGR_EXTRACT_PARSER=corenlp``; off by default (the
parser's jars are about 480 MB, fetched on first use). Measured figures: docs/extract.md, "A
dependency parse".
"""

from __future__ import annotations

import os
import threading

from kgr.errors import KgrExtractionError, KgrRuntimeError
from kgr.extract.base import ExtractionResult
from kgr.extract.cues import mask_markup
from kgr.extract.guesses import schema_roles
from kgr.extract.parse_check import veto
from kgr.extract.rules import RulesExtractor
from kgr.model.kg import ExtractedKG
from kgr.model.schema import KGSchema
from kgr.runtime.corenlp import CoreNLPConfig, CoreNLPServer
from kgr.runtime.corenlp_client import ParseClient

__all__ = ["PARSERS", "ParsedRulesExtractor", "parser_from_env", "shared_server", "untyped_guess"]

PARSERS = ("none", "corenlp")
_SERVERS: dict[int, CoreNLPServer] = {}
_LOCK = threading.Lock()


def parser_from_env() -> str:
    """``KGR_EXTRACT_PARSER`` (``none`` or ``corenlp``; unset: ``none``)."""
    value = os.environ.get("KGR_EXTRACT_PARSER", "").strip().lower() or "none"
    if value not in PARSERS:
        raise KgrExtractionError(f"KGR_EXTRACT_PARSER={value!r}: choose one of {', '.join(PARSERS)}")
    return value


def shared_server(config: CoreNLPConfig | None = None) -> CoreNLPServer:
    """This process's CoreNLP server for ``config``'s port, started on first call (stopped at exit)."""
    config = config or CoreNLPConfig()
    with _LOCK:
        server = _SERVERS.get(config.port)
        if server is None or not server.alive():
            server = _SERVERS[config.port] = CoreNLPServer(config)
            server.start()
    return server


def untyped_guess(path: str, relation: str, schema: KGSchema) -> str | None:
    """A guessed object (``…>guess``, ``…>word``) where the relation's range holds a closed type (one with a
    gazetteer, never guessed) beside the open type a guess gets, persons and organizations aside (their
    shape tells them): the guess may be of the closed type, and no parse tells ("Added support for
    ReadableStream": a Standard, typed Software; the path table's ``trigger/SUPPORTS/title>guess``: 2 of 6)."""
    spec = schema.relation_types.get(relation)
    if spec is None or not path.endswith((">guess", ">word")):
        return None
    roles = schema_roles(schema)
    kinds = [t for t in spec.range if t not in (roles.person, roles.organization)]
    if len(kinds) < 2 or not any(t in roles.closed for t in kinds):
        return None
    return "guessed object of a several-typed range"


class ParsedRulesExtractor(RulesExtractor):
    """:class:`RulesExtractor` whose triples a dependency parse must confirm (module docstring).

    ``client`` parses sentences (default: a :class:`ParseClient` on :func:`shared_server`, started
    on the first chunk with a triple). ``vetoed`` counts the triples dropped, by reason.
    """

    name = "rules+corenlp"

    def __init__(self, *, client: ParseClient | None = None, config: CoreNLPConfig | None = None,
                 abstain: bool = False, **kwargs):
        super().__init__(abstain=abstain, **kwargs)
        self._client, self._config = client, config
        self._owns_client = client is None
        self.vetoed: dict[str, int] = {}
        self.last_vetoes: list[tuple[str, str, str, str]] = []  # of the last chunk: (relation, subject, object, why)

    @property
    def client(self) -> ParseClient:
        if self._client is None:
            self._client = ParseClient(shared_server(self._config).config.url)
        return self._client

    def extract(self, chunk_text: str, schema: KGSchema, *, guidance: list[str] | None = None,
                title: str | None = None, headings: tuple = ()) -> ExtractionResult:
        """The rules extractor's result with the triples the parse does not support removed.

        Raises
        ------
        KgrExtractionError
            The CoreNLP server cannot be installed, started or asked (its one-line reason).
        """
        res = super().extract(chunk_text, schema, guidance=guidance, title=title, headings=headings)
        if not res.spans:
            return res
        sentences = list(dict.fromkeys((sp.start, sp.end) for sp in res.spans))
        texts = [mask_markup(chunk_text[a:b]) for a, b in sentences]
        try:
            try:
                got = self.client.parse(texts)
            except KgrRuntimeError:
                if not self._owns_client:
                    raise
                self._client = None  # the server died: start it again once (shared_server sees it gone)
                got = self.client.parse(texts)
        except KgrRuntimeError as exc:
            raise KgrExtractionError(f"dependency parser (CoreNLP): {exc}") from None
        parses = dict(zip(sentences, got))
        drop: set[tuple[str, str, str]] = set()
        self.last_vetoes = []
        for sp in res.spans:
            why = untyped_guess(sp.path, sp.relation, schema) or self._veto(chunk_text, sp, parses.get((sp.start, sp.end)))
            if why is not None:
                drop.add((sp.relation, sp.subject, sp.object))
                self.last_vetoes.append((sp.relation, sp.subject, sp.object, why))
                key = why.split(" (")[0] if "(" in why else why
                self.vetoed[key] = self.vetoed.get(key, 0) + 1
        if not drop:
            return res
        rels = {r: [p for p in ps if (r, p.subject, p.object) not in drop] for r, ps in res.kg.relations.items()}
        kg = ExtractedKG(entities=res.kg.entities, relations={r: ps for r, ps in rels.items() if ps})
        spans = [sp for sp in res.spans if (sp.relation, sp.subject, sp.object) not in drop]
        return res.model_copy(update={"kg": kg, "spans": spans, "extractor": self.name})

    @staticmethod
    def _veto(text: str, sp, parse) -> str | None:
        if parse is None:
            return "no parse"
        if len(sp.anchors) != 5 or sp.path.startswith(("license/", "notice/")):
            return None  # licence lines and free-software notices: their own precise readers
        a = sp.start
        s0, s1, o0, o1, t0 = sp.anchors
        carried = sp.path.split("/")[2].split(">")[0].startswith("title")  # the title, not spelled in the sentence
        subj = None if carried or s1 <= s0 else (s0 - a, s1 - a)
        return veto(parse, mask_markup(text[a:sp.end]), sp.relation, subj, (o0 - a, o1 - a), t0 - a if t0 >= 0 else None,
                    carried=(s0 - a, s1 - a) if carried else (0, 0))
