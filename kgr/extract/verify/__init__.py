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
from typing import Any

from kgr.errors import KgrValidationError
from kgr.extract.verify.claims import (
    MAX_QUOTE_CHARS, VERIFIER_KINDS, Answer, Claim, Verdict, VerificationReport, Verifier, VerifierKind,
)
from kgr.extract.verify.llm import LLMVerifier, parse_verdict, verifier_messages
from kgr.extract.verify.rules import RulesVerifier

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
