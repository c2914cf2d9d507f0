"""Which path of the rules extractor produced a relation, and whether the extractor abstains from it.

A *path* names how a triple was read, coarse enough that each one fires often on the annotated
samples (``tests/data/extract``) and fine enough to separate what generalises from what does not::

    <producer>/<relation>/<subject end>><object end>

- *producer*: ``trigger`` (a trigger phrase and two ends near it, :mod:`kgr.extract.rules`),
  ``license`` (a "License:" label or heading, :func:`kgr.extract.ends.license_chain`), ``notice``
  (the free-software notice, :mod:`kgr.extract.notices`), ``written`` (a product noun phrase,
  :func:`kgr.extract.phrases.written_in`), ``feature`` ("Added X support",
  :func:`kgr.extract.carried.feature_objects`);
- *end*: ``title`` (the document's title standing for a subject the sentence leaves out: "It
  supports", "Add support for", a "License:" line; :mod:`kgr.extract.carried`), ``named`` (the
  title as the sentence spells it, :func:`kgr.extract.phrases.title_mention`), ``known`` (a
  gazetteer or pattern name of the schema, or a name a notice opens with), ``guess`` (a name no
  schema lists, :mod:`kgr.extract.guesses`), ``word`` (a guess that is a plain lowercase word), and
  ``title-far`` (a carried title more than one word before its trigger: :func:`end_kind`).

The extractor abstains from every path not kept in :data:`kgr.extract.path_table.ENABLED`, a table
that ``scripts/calibrate_extract.py`` derives from the six annotated samples and their blind history
(a path is kept when the posterior mean of its precision, with the blind precision of its kind of
reading as prior, reaches 0.80; the rule and the figures in docs/extract.md, "Abstention by path"). ``KGR_EXTRACT_ALL_PATHS=1`` (or ``RulesExtractor(abstain=False)``) switches
abstention off, to measure every path.
"""

from __future__ import annotations

import os
import re

from kgr.extract.path_table import BASIS, ENABLED, RELATIONS

__all__ = ["end_kind", "path_of", "abstains"]

_WORD = re.compile(r"\w+")
_LOWER_WORD = re.compile(r"[a-z]+")


def end_kind(m, carried: bool, before_trigger: str = "") -> str:
    """The kind of one relation end: ``title`` / ``named`` / ``guess`` / ``known`` (module docstring).

    ``m`` is a :class:`kgr.extract.pairs.Mention` (zero-width or ``None``: the title, not in the text);
    ``carried``: the sentence's own opening stands for the title ("It", "Add support for");
    ``before_trigger``: the text between this end and its trigger, when it is the left one: a carried
    title more than one word before its trigger is ``title-far`` ("This package is part of the
    OpenSSL project's implementation of", "It also provides runtime support for"; "It also
    supports" is ``title``). A guess that is a plain lowercase word ("timestamping") is ``word``.
    """
    if m is None or m.end == m.start:
        return "title"  # a zero-width mention: the title of a "License:" line, a feature, a notice
    if m.own:
        return ("title-far" if len(_WORD.findall(before_trigger)) > 1 else "title") if carried else "named"
    if m.guess:
        return "word" if _LOWER_WORD.fullmatch(next(iter(m.names.values()), "")) else "guess"
    return "known"


def path_of(producer: str, relation: str, subject: str, obj: str) -> str:
    """``<producer>/<relation>/<subject end>><object end>`` (module docstring)."""
    return f"{producer}/{relation}/{subject}>{obj}"


def abstains(path: str) -> bool:
    """Whether the extractor abstains from ``path``: its relation is one the table was calibrated for
    (:data:`kgr.extract.path_table.RELATIONS`; of other relations there is no evidence, and nothing
    abstains), and the path is not kept; a path the samples never produced (not in
    :data:`~kgr.extract.path_table.BASIS`) is judged as the same path with its ``known`` or ``named``
    ends read as ``guess`` ends (a schema's own name, or the title as the sentence spells it, is at
    least as sure an end as a name guessed there), and its ``known`` ends also as ``named`` ones (a
    name the schema declares is as sure an end as the title spelled out: both are names of real
    entities, where a guess may be a wrong word: "Git is written in C" with ``git`` in the schema
    reads as ``named>known``, 8/8, not as ``guess>known``, 0/2); it abstains when none of those is
    kept. ``KGR_EXTRACT_ALL_PATHS=1`` keeps all.

    >>> abstains("trigger/IMPLEMENTS/title-far>known"), abstains("trigger/SUPPORTS/known>known")
    (True, False)
    >>> abstains("trigger/DEVELOPED_BY/guess>known")  # its own record (2 right of 3), not guess>guess's
    True
    >>> abstains("trigger/DESIGNED/guess>guess")
    False
    >>> abstains("trigger/WRITTEN_IN/known>known"), abstains("trigger/WRITTEN_IN/guess>known")
    (False, True)
    """
    if os.environ.get("KGR_EXTRACT_ALL_PATHS", "") not in ("", "0"):
        return False
    producer, relation, ends = path.split("/", 2)
    if relation not in RELATIONS or path in ENABLED:
        return False
    if path in BASIS:  # judged on its own record
        return True
    stand_ins = {"known": {"known", "named", "guess"}, "named": {"named", "guess"}}
    subject, obj = (stand_ins.get(e, {e}) for e in ends.split(">"))
    return not any(path_of(producer, relation, a, b) in ENABLED for a in subject for b in obj)

