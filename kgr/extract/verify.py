"""Verifiers: re-reading one chunk to judge one staged triple (corpus re-reading for the policy).

When the promotion policy cannot decide on a pending edge it re-reads the chunks that mention both
endpoints and asks a *verifier*, for the triple and each chunk, one question: does this text
support the triple, contradict it, or say nothing about it? Each answer is one recorded piece of
evidence. This module holds the verifiers; finding the chunks and recording the answers is the
store's and the policy's job (nothing here talks to Neo4j).

Answers
-------
A :class:`Verdict` answers one :class:`Claim` (a triple plus one chunk) with exactly one of:

- ``"supports"``: the chunk states the triple;
- ``"contradicts"``: the chunk states the opposite (a negated statement of the relation) or an
  incompatible fact (for a ``functional`` relation of the schema: the same subject with another
  object);
- ``"silent"``: anything else, including "the chunk mentions both entities but not this relation".

``quote`` is the sentence that decided (runs of whitespace collapsed, at most
:data:`MAX_QUOTE_CHARS` characters, cut with "…" when longer), ``""`` when silent. ``error`` is set
when the verifier could not answer (the answer is then ``"silent"``: no evidence either way) and
counted in :attr:`VerificationReport.failures`.
Verdicts come back in the order of the claims.

The verifiers
-------------
:class:`RulesVerifier` (``"rules"``; offline, the default wherever the rules extractor is used)
    Reads the chunk with :class:`~kgr.extract.rules.RulesExtractor` under the schema, once per chunk
    within one :meth:`~RulesVerifier.verify` call (claims sharing a ``chunk_id`` share the reading).
    Entities are compared by :func:`~kgr.model.canonical.entity_key` after the schema's aliases
    apply. Rules, in this order (the first that fires decides):

    1. **contradicts (negation)**: a sentence mentions both endpoints and a trigger of the relation,
       and a negation cue (``not``, ``never``, ``no longer``, ``cannot``, ``n't``) stands
       *between the two endpoint mentions that enclose the trigger* ("Babbage never designed the
       Z3", "the Z3 was not built by Babbage", "Babbage designed not the Z3"), or, when the
       trigger comes before both endpoints, *just before the trigger* (at most one word between:
       "Never built by Babbage, the Z3 ..."). A denial outweighs an assertion in the same chunk.
    2. **supports**: the extraction of the chunk contains the triple (both endpoint keys and the
       relation; either direction for a ``symmetric`` relation). The quote is the first sentence
       mentioning both endpoints with a trigger of the relation.
    3. **contradicts (functional)**: the relation is ``functional`` and the extraction contains the
       same subject and relation with another object.
    4. **silent** otherwise.

    An endpoint is mentioned in a sentence when the rules extractor finds it there (gazetteer,
    aliases, patterns) or when the claim's name occurs there literally (case and runs of
    whitespace ignored). The rules are deliberately simple: a negation elsewhere between the
    endpoints ("Babbage, who was not rich, designed the Z3") reads as a denial, and a denial
    phrased without a trigger ("Babbage had nothing to do with the Z3") is silent.
    Deterministic: same claims + same schema → same report. No tokens, no cost (``cost_usd=0.0``).

:class:`LLMVerifier` (``"llm"``; any chat model litellm reaches)
    **One completion request per claim** (no batching: one claim's bad answer never spoils
    another's, and each request stays small). The system message states the triple with its types,
    the relation's description, domain, range and functional flag, and the rule "answer supports
    only if the text states it; contradicts only if the text states the opposite or an incompatible
    fact"; the user message is the chunk text (:func:`verifier_messages`). The model must answer
    ``{"answer": "supports|contradicts|silent", "quote": "..."}`` (``response_format`` JSON mode
    where the provider has it). Replies are read leniently (:func:`parse_verdict`: code fences,
    text around the first JSON object, case and synonyms such as ``"SUPPORTED"``/``"yes"``,
    ``"refutes"``/``"no"``, ``"unknown"``/``"not mentioned"``). An unusable reply gets **one** repair
    request (the conversation, the bad reply and what is wrong with it); if that reply is unusable
    too the verdict is ``silent`` with ``error`` set. Requests go through the same plumbing as
    :class:`~kgr.extract.llm.LLMExtractor`: transient failures (429, 5xx, timeouts, connection
    errors) are retried per :class:`~kgr.extract.llm.RetryPolicy`; when they persist after the last
    attempt that claim is ``silent`` with ``error`` set. Authentication, bad-request and other
    non-transient errors raise :class:`~kgr.errors.KgrExtractionError` (every claim would fail the
    same way). Claims run on a thread pool of ``concurrency`` workers. Not deterministic unless
    the model is (temperature 0 helps, it does not promise).

Costs
-----
:class:`VerificationReport` sums, over every request sent: ``usage`` (provider-reported tokens of
answered requests), ``calls`` (requests sent: attempts, retries and repairs included),
``cost_usd`` (litellm's own per-response cost, :func:`kgr.extract.llm.response_cost`; never priced a
second time) and ``unpriced_calls`` (answered requests litellm could not price). ``cost_usd`` is
``None`` when any answered request was unpriced (the total is then unknown, not free); give
``prices`` to price a model litellm does not know. The rules verifier reports zeros.

Choosing one
------------
:func:`make_verifier` is the one place that maps a kind name (:data:`VERIFIER_KINDS`) to a class.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal, Protocol, get_args, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from kgr.errors import KgrExtractionError, KgrValidationError
from kgr.extract.base import ExtractionResult, TokenUsage
from kgr.extract.llm import LLMExtractor
from kgr.extract.llm_client import CallTally, RetryPolicy
from kgr.extract.llm_prompt import FENCE, BadOutput, repair_messages
from kgr.extract.rules import RulesExtractor
from kgr.ingest.chunking import sentence_spans
from kgr.model.canonical import canonical_name, entity_key
from kgr.model.schema import Identifier, KGSchema

__all__ = [
    "Answer",
    "Claim",
    "Verdict",
    "VerificationReport",
    "Verifier",
    "RulesVerifier",
    "LLMVerifier",
    "VerifierKind",
    "VERIFIER_KINDS",
    "MAX_QUOTE_CHARS",
    "make_verifier",
    "parse_verdict",
    "verifier_messages",
]

#: A verifier's answer for one triple and one chunk (semantics in the module docstring).
Answer = Literal["supports", "contradicts", "silent"]
#: The verifier kinds :func:`make_verifier` builds.
VerifierKind = Literal["rules", "llm"]
#: The same kinds as a tuple, in documentation order.
VERIFIER_KINDS: tuple[str, ...] = get_args(VerifierKind)
#: Longest quote kept in a :class:`Verdict` (characters).
MAX_QUOTE_CHARS = 300


# -- the data ------------------------------------------------------------------------------------
class Claim(BaseModel):
    """One staged triple and one chunk to re-read for it."""

    model_config = ConfigDict(extra="forbid")

    edge_key: str = Field(min_length=1, description="key of the pending edge the claim is about")
    subject: str = Field(min_length=1)
    subject_type: Identifier
    relation: Identifier
    object: str = Field(min_length=1)
    object_type: Identifier
    chunk_id: str = Field(min_length=1, description="id of the chunk to re-read")
    chunk_text: str


class Verdict(BaseModel):
    """A verifier's answer for one claim (semantics in the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    edge_key: str
    chunk_id: str
    answer: Answer
    quote: str = Field("", max_length=MAX_QUOTE_CHARS, description="the sentence that decided, or ''")
    verifier: str = Field(description="the verifier's name ('rules', 'llm:<model>')")
    error: str | None = Field(None, description="why the verifier could not answer (the answer is then 'silent')")


class VerificationReport(BaseModel):
    """The verdicts of one :meth:`Verifier.verify` call (in claim order) and what they cost."""

    model_config = ConfigDict(extra="forbid")

    verdicts: list[Verdict] = Field(default_factory=list)
    usage: TokenUsage = Field(default_factory=TokenUsage)
    cost_usd: float | None = Field(0.0, ge=0.0, description="USD as litellm prices it; None when unknown")
    calls: int = Field(0, ge=0, description="completion requests sent, retries and repairs included")
    failures: int = Field(0, ge=0, description="claims the verifier could not answer (verdicts with an error)")
    unpriced_calls: int = Field(0, ge=0, description="answered requests litellm could not price")


@runtime_checkable
class Verifier(Protocol):
    """Anything that judges claims against their chunks (answer semantics in the module docstring)."""

    name: str

    def verify(self, claims: Sequence[Claim], schema: KGSchema) -> VerificationReport:
        """One :class:`Verdict` per claim, in the order of ``claims``.

        Raises
        ------
        kgr.errors.KgrExtractionError
            When the verifier cannot work at all (e.g. the model rejects the credentials); a claim
            it merely cannot answer becomes a ``silent`` verdict with ``error`` set.
        """
        ...


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_QUOTE_CHARS else text[: MAX_QUOTE_CHARS - 1] + "…"


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
    return "" if pick is None else _clip(pick.text)


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
                return "contradicts", _clip(sentence.text)
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
_SYSTEM = """You check one claimed fact against a text, for a knowledge graph.

Claim: {claim}
{relation}

Answer with ONE JSON object and nothing else, in exactly this form:
{{"answer": "supports" | "contradicts" | "silent",
 "quote": "<the sentence of the text that decided, copied exactly; empty when silent>"}}

Rules:
- Answer "supports" only if the text states the claim (in any wording).
- Answer "contradicts" only if the text states the opposite or an incompatible fact.
- Otherwise answer "silent" (the text does not say, or only hints).
- Judge by the text alone, not by what you know.
- No comments, no markdown, JSON only."""

_FORM = '{"answer": "supports" | "contradicts" | "silent", "quote": "..."}'


def _entity_text(entity_type: str, name: str, schema: KGSchema) -> str:
    resolved = schema.resolve_name(entity_type, name)
    spec = schema.entity_types.get(entity_type)
    forms = [f for f in (name, resolved, *(spec.aliases.get(resolved, []) if spec else [])) if f.strip()]
    forms = list(dict.fromkeys(forms))
    also = f"; also written: {', '.join(json.dumps(f) for f in forms[1:])}" if len(forms) > 1 else ""
    return f"{json.dumps(name)} (a {entity_type}{also})"


def verifier_messages(claim: Claim, schema: KGSchema) -> list[dict[str, str]]:
    """The chat messages asking for one verdict: the claim and the rules, then the chunk text.

    >>> schema = KGSchema.model_validate({"entity_types": {"Person": {}, "Place": {}},
    ...     "relation_types": {"BORN_IN": {"domain": ["Person"], "range": ["Place"], "functional": True}}})
    >>> c = Claim(edge_key="e", subject="Ada", subject_type="Person", relation="BORN_IN", object="London",
    ...           object_type="Place", chunk_id="c", chunk_text="Ada was born in London.")
    >>> system, user = verifier_messages(c, schema)
    >>> print(system["content"].splitlines()[2])
    Claim: "Ada" (a Person) -[BORN_IN]-> "London" (a Place)
    >>> print(system["content"].splitlines()[3])
    BORN_IN connects Person to Place; functional: a subject has at most one object.
    """
    claim_text = (f"{_entity_text(claim.subject_type, claim.subject, schema)} -[{claim.relation}]-> "
                  f"{_entity_text(claim.object_type, claim.object, schema)}")
    spec = schema.relation_types.get(claim.relation)
    if spec is None:
        relation = f"{claim.relation} is a relation type of the graph."
    else:
        parts = [f"{claim.relation} connects {' or '.join(spec.domain) or 'anything'} to "
                 f"{' or '.join(spec.range) or 'anything'}"]
        if spec.functional:
            parts.append("functional: a subject has at most one object")
        if spec.symmetric:
            parts.append("symmetric")
        if spec.description:
            parts.append(f"meaning: {spec.description}")
        relation = "; ".join(parts) + "."
    user = f'Text (between the lines """):\n"""\n{claim.chunk_text}\n"""'
    return [
        {"role": "system", "content": _SYSTEM.format(claim=claim_text, relation=relation)},
        {"role": "user", "content": user},
    ]


_ANSWERS: dict[str, Answer] = {
    **dict.fromkeys(
        "supports support supported supporting yes y true entails entailed entailment confirms confirmed "
        "affirms affirmed consistent".split(), "supports"),
    **dict.fromkeys(
        "contradicts contradict contradicted contradicting contradiction contradictory refutes refute refuted "
        "refuting no n false denies denied incompatible inconsistent".split(), "contradicts"),
    **dict.fromkeys(
        "silent unknown neutral none unclear undetermined uncertain irrelevant unrelated insufficient na nei "
        "unverifiable".split(), "silent"),
    **dict.fromkeys(
        ["not mentioned", "not stated", "no mention", "not enough information", "not enough info",
         "insufficient information", "insufficient evidence", "cannot tell", "can t tell", "cannot determine",
         "can t determine", "not found", "n a", "not in text", "not in the text", "does not say",
         "doesn t say"], "silent"),
}
#: Unambiguous first words ("supports, see the second sentence").
_LEADS: dict[str, Answer] = {w: a for w, a in _ANSWERS.items()
                              if " " not in w and len(w) > 4 and w not in ("true", "false", "none")}
_ANSWER_KEYS = ("answer", "verdict", "label", "result", "judgement", "judgment")
_QUOTE_KEYS = ("quote", "evidence", "sentence")


def _answer_of(value: Any) -> Answer | None:
    if isinstance(value, bool):
        return "supports" if value else "contradicts"
    if not isinstance(value, str):
        return None
    words = re.sub(r"[^a-z]+", " ", value.casefold()).strip()
    if words in _ANSWERS:
        return _ANSWERS[words]
    first = words.split(" ", 1)[0]
    return _LEADS.get(first)


def _first_object(text: str) -> dict[str, Any] | None:
    decoder = json.JSONDecoder()
    at = text.find("{")
    while at >= 0:
        try:
            obj, _ = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            pass
        else:
            if isinstance(obj, dict):
                return obj
        at = text.find("{", at + 1)
    return None


def parse_verdict(content: str | None) -> tuple[Answer, str]:
    """Read a verifier reply as ``(answer, quote)``, leniently (see the module docstring).

    Code fences and text around the first JSON object are tolerated; the answer is read under
    ``answer`` (or ``verdict``/``label``/``result``), case-insensitively, with synonyms; a reply
    that is only an answer word (``"SUPPORTED"``) counts, with an empty quote. The quote is clipped
    to :data:`MAX_QUOTE_CHARS` characters.

    Raises
    ------
    kgr.extract.llm_prompt.BadOutput
        With a short description of what is wrong (sent back to the model in the repair request).

    >>> parse_verdict('```json\\n{"answer": "SUPPORTED", "quote": "Ada was born in London."}\\n```')
    ('supports', 'Ada was born in London.')
    >>> parse_verdict('Sure: {"answer": "refutes", "quote": ""} (hope that helps)')
    ('contradicts', '')
    >>> parse_verdict('{"answer": "not mentioned"}'), parse_verdict("No.")
    (('silent', ''), ('contradicts', ''))
    """
    if content is None or not content.strip():
        raise BadOutput("the reply was empty")
    text = content.strip()
    fenced = FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    data = _first_object(text)
    if data is None:
        bare = _answer_of(text) if len(text) <= 40 else None
        if bare is not None:
            return bare, ""
        raise BadOutput("no JSON object in the reply")
    fields = {str(k).casefold(): v for k, v in data.items()}
    key = next((k for k in _ANSWER_KEYS if k in fields), None)
    if key is None:
        raise BadOutput('the JSON object has no "answer"')
    answer = _answer_of(fields[key])
    if answer is None:
        raise BadOutput(f'"answer" must be "supports", "contradicts" or "silent", got {json.dumps(fields[key])[:60]}')
    quote = next((fields[k] for k in _QUOTE_KEYS if isinstance(fields.get(k), str)), "")
    return answer, _clip(quote)


class LLMVerifier:
    """Judge claims with a chat model through litellm (behaviour in the module docstring).

    Parameters
    ----------
    model:
        litellm model name, e.g. ``"openai/gpt-4o-mini"`` (``"openai/<name>"`` with ``api_base`` for
        an OpenAI-compatible server).
    api_base, api_key:
        For OpenAI-compatible servers and explicit credentials (never logged).
    temperature, max_tokens, timeout:
        Sampling settings and seconds per request (each attempt).
    retry:
        The :class:`~kgr.extract.llm.RetryPolicy` for transient failures.
    concurrency:
        Claims in flight at once (worker threads); verdicts keep the claims' order.
    prices:
        ``(USD per prompt token, USD per completion token)`` for a model litellm cannot price (or to
        override its price); registered with litellm for the whole process, as
        :class:`~kgr.extract.llm.LLMExtractor` does.
    json_mode, completion_kwargs:
        As for :class:`~kgr.extract.llm.LLMExtractor`.

    Raises
    ------
    KgrValidationError
        ``concurrency < 1`` or ``prices`` not a pair.
    KgrExtractionError
        An empty model name, a non-positive timeout or negative prices.
    """

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        concurrency: int = 4,
        prices: tuple[float, float] | None = None,
        json_mode: bool = True,
        completion_kwargs: dict[str, Any] | None = None,
    ):
        if concurrency < 1:
            raise KgrValidationError(f"concurrency must be at least 1, got {concurrency}", field="concurrency")
        if prices is not None and len(prices) != 2:
            raise KgrValidationError("prices is (USD per prompt token, USD per completion token)", field="prices")
        # The request plumbing (retries, error classification, pricing, accounting) is the extractor's.
        self._llm = LLMExtractor(
            model,
            api_base=api_base,
            api_key=api_key,
            timeout=timeout,
            temperature=temperature,
            max_tokens=max_tokens,
            json_mode=json_mode,
            retry=retry,
            completion_kwargs=completion_kwargs,
            input_cost_per_token=None if prices is None else prices[0],
            output_cost_per_token=None if prices is None else prices[1],
        )
        self.model = model
        self.concurrency = concurrency
        self.name = f"llm:{model}"

    def __repr__(self) -> str:
        return f"LLMVerifier(model={self.model!r}, api_base={self._llm.api_base!r}, concurrency={self.concurrency})"

    def _verdict(self, claim: Claim, answer: Answer, quote: str = "", error: str | None = None) -> Verdict:
        return Verdict(edge_key=claim.edge_key, chunk_id=claim.chunk_id, answer=answer, quote=quote,
                       verifier=self.name, error=error)

    def _one(self, claim: Claim, schema: KGSchema) -> tuple[Verdict, CallTally]:
        tally = self._llm.new_tally()
        messages = verifier_messages(claim, schema)
        try:
            content = self._llm.complete(messages, tally)
            try:
                answer, quote = parse_verdict(content)
            except BadOutput as first:
                content = self._llm.complete(repair_messages(messages, content, str(first), form=_FORM), tally)
                try:
                    answer, quote = parse_verdict(content)
                except BadOutput as second:
                    msg = f"verifier reply still invalid after one repair request ({self.model}): {second}"
                    return self._verdict(claim, "silent", error=msg), tally
        except KgrExtractionError as exc:
            if getattr(exc, "reason", "request_error") == "request_error":
                raise  # authentication, bad request, unknown model: every claim would fail the same way
            return self._verdict(claim, "silent", error=str(exc)), tally
        return self._verdict(claim, answer, quote), tally

    def verify(self, claims: Sequence[Claim], schema: KGSchema) -> VerificationReport:
        """Judge every claim with one request each (plus retries and at most one repair).

        Raises
        ------
        KgrExtractionError
            On a non-transient provider error (authentication, bad request, unknown model), with a
            one-line message; the claims still pending are not sent.
        """
        claims = list(claims)
        if not claims:
            return VerificationReport()
        _ = self._llm.priced  # settle litellm's pricing of the model once, before the workers start
        if self.concurrency == 1 or len(claims) == 1:
            outcomes = [self._one(c, schema) for c in claims]
        else:
            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(claims)),
                                    thread_name_prefix="kgr-verify") as pool:
                futures = [pool.submit(self._one, c, schema) for c in claims]
                try:
                    outcomes = [f.result() for f in futures]
                except BaseException:
                    for f in futures:
                        f.cancel()
                    raise
        usage, cost, calls, unpriced = TokenUsage(), 0.0, 0, 0
        for _, tally in outcomes:
            usage = usage + tally.usage
            cost += tally.cost
            calls += tally.calls
            unpriced += tally.unpriced
        verdicts = [v for v, _ in outcomes]
        return VerificationReport(
            verdicts=verdicts,
            usage=usage,
            cost_usd=None if unpriced else cost,
            calls=calls,
            failures=sum(v.error is not None for v in verdicts),
            unpriced_calls=unpriced,
        )


# -- the registry --------------------------------------------------------------------------------
#: kind -> class; the keys are exactly :data:`VERIFIER_KINDS` (a test checks it).
_VERIFIERS: dict[str, type] = {"rules": RulesVerifier, "llm": LLMVerifier}


def make_verifier(kind: VerifierKind | None = None, **options: Any) -> Verifier:
    """The verifier of ``kind`` (:data:`VERIFIER_KINDS`), built with ``options``.

    With ``kind=None``: ``"llm"`` when a ``model`` option is given, else ``"rules"`` (as
    :func:`kgr.extract.make_extractor` chooses extractors). ``options`` are the keyword arguments of
    :class:`RulesVerifier` (``extractor``) or :class:`LLMVerifier` (``model``, ``api_base``,
    ``api_key``, ``retry``, ``concurrency``, ``prices``...).

    Raises
    ------
    KgrValidationError
        An unknown kind, an option the kind does not take, or ``"llm"`` without a model.

    >>> make_verifier().name, make_verifier("llm", model="openai/gpt-4o-mini").name
    ('rules', 'llm:openai/gpt-4o-mini')
    >>> make_verifier("oracle")
    Traceback (most recent call last):
    ...
    kgr.errors.KgrValidationError: verifier: unknown verifier kind 'oracle'; choose one of: rules, llm
    """
    if kind is None:
        kind = "llm" if options.get("model") else "rules"
    cls = _VERIFIERS.get(kind)
    if cls is None:
        raise KgrValidationError(f"unknown verifier kind {kind!r}; choose one of: {', '.join(VERIFIER_KINDS)}",
                                 field="verifier")
    accepted = set(inspect.signature(cls).parameters)
    unknown = sorted(set(options) - accepted)
    if unknown:
        raise KgrValidationError(f"the {kind} verifier takes no option {', '.join(unknown)} "
                                 f"(it takes: {', '.join(sorted(accepted))})", field="verifier")
    if cls is LLMVerifier and not options.get("model"):
        raise KgrValidationError("the llm verifier needs a model (a litellm model name, e.g. openai/gpt-4o-mini)",
                                 field="verifier")
    return cls(**options)
