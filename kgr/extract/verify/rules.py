"""The rules verifier: re-reads a claim's chunk sentence by sentence with the offline rules
extractor and a negation check (semantics in :mod:`kgr.extract.verify`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass


from kgr.errors import KgrValidationError
from kgr.extract.base import ExtractionResult
from kgr.extract.rules import RulesExtractor
from kgr.text.sentences import sentence_spans
from kgr.model.canonical import canonical_name, entity_key
from kgr.model.schema import KGSchema

from kgr.extract.verify.claims import Answer, Claim, Verdict, VerificationReport, clip_quote

__all__ = ["RulesVerifier"]


# -- the rules verifier --------------------------------------------------------------------------
_NEGATION = re.compile(r"(?<![\w'’])(?:not|never|no\s+longer|cannot)(?!\w)|n['’]t(?!\w)", re.IGNORECASE)
_NEGATION_JUST_BEFORE = re.compile(
    r"(?:(?<![\w'’])(?:not|never|no\s+longer|cannot)|n['’]t)(?:\s+[\w'’-]+)?\s*$", re.IGNORECASE
)

Span = tuple[int, int]


@dataclass(frozen=True)
class _Sentence:
    text: str
    mentions: tuple[tuple[int, int, frozenset[str]], ...]  # (start, end, entity keys) per mention
    triggers: tuple[tuple[str, int, int], ...]  # (relation, start, end) per trigger occurrence


@dataclass(frozen=True)
class _Reading:
    """One chunk as the rules extractor reads it."""

    triples: tuple[tuple[str, str, str], ...]  # (subject key, relation, object key), extraction order
    sentences: tuple[_Sentence, ...]


def _safe_key(entity_type: str, name: str) -> str | None:
    try:
        return entity_key(entity_type, name)
    except KgrValidationError:
        return None


def _typed_triples(result: ExtractionResult, schema: KGSchema) -> tuple[tuple[str, str, str], ...]:
    """The extraction's relations as entity-key triples (endpoint types from its entity lists)."""
    types_of: dict[str, list[str]] = {}
    for etype, names in result.kg.entities.items():
        for name in names:
            canon = canonical_name(name)
            if etype not in types_of.setdefault(canon, []):
                types_of[canon].append(etype)
    out: dict[tuple[str, str, str], None] = {}
    for rel, pairs in result.kg.relations.items():
        spec = schema.relation_types.get(rel)
        for pair in pairs:
            for st in types_of.get(canonical_name(pair.subject), []):
                if spec is not None and spec.domain and st not in spec.domain:
                    continue
                for ot in types_of.get(canonical_name(pair.object), []):
                    if spec is not None and spec.range and ot not in spec.range:
                        continue
                    out[(entity_key(st, pair.subject), rel, entity_key(ot, pair.object))] = None
    return tuple(out)


def _literal(name: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + r"\s+".join(re.escape(w) for w in name.split()) + r"(?!\w)", re.IGNORECASE)


@dataclass(frozen=True)
class _Endpoint:
    """Where one claim endpoint is mentioned in a sentence: the extractor's mentions with its entity
    key, plus literal occurrences of the given names."""

    key: str
    literals: tuple[re.Pattern[str], ...] = ()

    @classmethod
    def of(cls, entity_type: str, name: str, schema: KGSchema) -> "_Endpoint":
        resolved = schema.resolve_name(entity_type, name)
        names = dict.fromkeys(n.strip() for n in (name, resolved) if n.strip())
        return cls(entity_key(entity_type, resolved), tuple(_literal(n) for n in names))

    def spans(self, sentence: _Sentence) -> list[Span]:
        out = [(s, e) for s, e, keys in sentence.mentions if self.key in keys]
        for pat in self.literals:
            for m in pat.finditer(sentence.text):
                if not any(s < m.end() and m.start() < e for s, e in out):
                    out.append(m.span())
        return sorted(out)


def _denies(sentence: _Sentence, relation: str, a: list[Span], b: list[Span]) -> bool:
    """Rule 1 of the module docstring on one sentence (``a``, ``b``: the endpoints' mentions)."""
    for rel, ts, te in sentence.triggers:
        if rel != relation:
            continue
        for left_side, right_side in ((a, b), (b, a)):
            left = [sp for sp in left_side if sp[1] <= ts]
            right = [sp for sp in right_side if sp[0] >= te]
            if left and right and _NEGATION.search(sentence.text[left[-1][1] : right[0][0]]):
                return True
        if all(sp[0] >= te for sp in a + b) and _NEGATION_JUST_BEFORE.search(sentence.text[:ts]):
            return True
    return False


def _first_sentence(sentences: Sequence[_Sentence], relation: str, *ends: _Endpoint) -> str:
    """The first sentence mentioning every end with a trigger of ``relation``, else the first
    mentioning every end, else ``""``."""
    both = [s for s in sentences if all(end.spans(s) for end in ends)]
    with_trigger = [s for s in both if any(rel == relation for rel, _, _ in s.triggers)]
    pick = (with_trigger or both or [None])[0]
    return "" if pick is None else clip_quote(pick.text)


class RulesVerifier:
    """The offline verifier (rules in the module docstring).

    Parameters
    ----------
    extractor:
        The rules extractor that reads the chunks (a fresh :class:`RulesExtractor` by default).

    Examples
    --------
    >>> schema = KGSchema.model_validate({
    ...     "entity_types": {"Person": {"names": ["Charles Babbage"]},
    ...                      "Machine": {"names": ["Z3", "Analytical Engine"]}},
    ...     "relation_types": {"DESIGNED": {"domain": ["Person"], "range": ["Machine"], "triggers": ["designed"]}}})
    >>> text = "Charles Babbage designed the Analytical Engine. Charles Babbage never designed the Z3."
    >>> claims = [Claim(edge_key=k, subject="Charles Babbage", subject_type="Person", relation="DESIGNED",
    ...                 object=o, object_type="Machine", chunk_id="c1", chunk_text=text)
    ...           for k, o in (("e1", "Analytical Engine"), ("e2", "Z3"))]
    >>> for v in RulesVerifier().verify(claims, schema).verdicts:
    ...     print(v.answer, "|", v.quote)
    supports | Charles Babbage designed the Analytical Engine.
    contradicts | Charles Babbage never designed the Z3.
    """

    name = "rules"

    def __init__(self, *, extractor: RulesExtractor | None = None):
        self.extractor = extractor or RulesExtractor()

    def __repr__(self) -> str:
        return "RulesVerifier()"

    def _read(self, text: str, schema: KGSchema) -> _Reading:
        ex = self.extractor
        result = ex.extract(text, schema)
        comp = ex._compiled(schema)  # the extractor's compiled gazetteer and triggers (cached per schema)
        sentences = []
        for s0, e0 in sentence_spans(text):
            sent = text[s0:e0]
            found = ex._mentions(sent, comp)
            mentions = tuple(
                (m.start, m.end, frozenset(k for t in m.types if (k := _safe_key(t, m.names[t])) is not None))
                for m in found
            )
            triggers = tuple((rel, ts, te) for rel, _passive, ts, te in RulesExtractor._triggers(sent, comp, found))
            sentences.append(_Sentence(sent, mentions, triggers))
        return _Reading(_typed_triples(result, schema), tuple(sentences))

    def _judge(self, claim: Claim, reading: _Reading, schema: KGSchema) -> tuple[Answer, str]:
        subj = _Endpoint.of(claim.subject_type, claim.subject, schema)
        obj = _Endpoint.of(claim.object_type, claim.object, schema)
        rel = claim.relation
        spec = schema.relation_types.get(rel)
        # 1. a denial in a sentence mentioning both ends
        for sentence in reading.sentences:
            a, b = subj.spans(sentence), obj.spans(sentence)
            if a and b and _denies(sentence, rel, a, b):
                return "contradicts", clip_quote(sentence.text)
        # 2. the extraction carries the triple
        wanted = {(subj.key, rel, obj.key)}
        if spec is not None and spec.symmetric:
            wanted.add((obj.key, rel, subj.key))
        if wanted & set(reading.triples):
            return "supports", _first_sentence(reading.sentences, rel, subj, obj)
        # 3. a functional relation with another object for the same subject
        if spec is not None and spec.functional:
            for s, r, o in reading.triples:
                if s == subj.key and r == rel and o != obj.key:
                    return "contradicts", _first_sentence(reading.sentences, rel, subj, _Endpoint(o))
        return "silent", ""

    def verify(self, claims: Sequence[Claim], schema: KGSchema) -> VerificationReport:
        """Judge every claim (rules in the module docstring); each chunk is read once per call.

        Raises
        ------
        KgrValidationError
            When a claim's name has no letters or digits, or the schema has an invalid pattern.
        """
        readings: dict[tuple[str, str], _Reading] = {}
        verdicts = []
        for claim in claims:
            key = (claim.chunk_id, claim.chunk_text)
            reading = readings.get(key)
            if reading is None:
                reading = readings[key] = self._read(claim.chunk_text, schema)
            answer, quote = self._judge(claim, reading, schema)
            verdicts.append(Verdict(edge_key=claim.edge_key, chunk_id=claim.chunk_id, answer=answer,
                                    quote=quote, verifier=self.name))
        return VerificationReport(verdicts=verdicts)


# -- the LLM verifier ----------------------------------------------------------------------------
