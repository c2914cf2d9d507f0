"""The LLM verifier: asks a chat model whether a chunk supports, contradicts or is silent on a claim,
and parses its verdict (semantics in :mod:`kgr.extract.verify`)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any


from kgr.errors import KgrExtractionError, KgrValidationError
from kgr.extract.base import TokenUsage
from kgr.extract.llm import LLMExtractor
from kgr.extract.llm_client import CallTally, RetryPolicy
from kgr.extract.llm_prompt import FENCE, BadOutput, repair_messages
from kgr.model.schema import KGSchema

from kgr.extract.verify.claims import Answer, Claim, Verdict, VerificationReport, clip_quote

__all__ = ["LLMVerifier", "parse_verdict", "verifier_messages"]


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
    return answer, clip_quote(quote)


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
