"""Whether a word is common English: what tells "Drop", "Currently" or "Values" at the start of a
line from a name such as "Werkzeug" or "hyperframe" that happens to open a sentence.

With the optional extra ``kgr[nlp]`` installed, the answer comes from the English word-frequency
list of `pyspellchecker <https://pypi.org/project/pyspellchecker/>`_ (word counts from a large
English corpus; a word counted at least :data:`COMMON_COUNT` times is common: "drop" 236,371,
"currently" 30,015, "flask" 1,507, "linux" 50, "werkzeug" 0). Without it, a built-in list of about
400 English function words, changelog verbs and frequent sentence openers answers, and plain
lowercase words are never taken for names (:func:`has_lexicon` tells which one is in use). The list
is loaded once per process (about 1 s), on first use.
"""

from __future__ import annotations

import functools
import os

__all__ = ["COMMON_COUNT", "has_lexicon", "is_common_word", "is_known_word", "BUILTIN_COMMON"]

#: A word counted at least this often in pyspellchecker's English list is a common word.
COMMON_COUNT = 2000

#: The fallback list (lowercase): function words, pronouns, changelog verbs, frequent sentence openers.
BUILTIN_COMMON = frozenset("""
a about above across add added adding adds after again against all allow allowed allows almost also although
always among an and another any anything anyway are around as at available avoid back based be because become
been before being below better between both bring bug bugs build builds built bump bumped but by call calls
can cannot change changed changes check clarify clean cleanup code come compile configure convert could
currently declare default deprecate deprecated deprecation did disable disabled do document documentation
does doing don done down drop dropped during each early either enable enabled ensure even every example
examples except explicit explicitly extend extra feature features few file files first fix fixed fixes fixing
follow following for former formerly from full further get gets give given go going good had handle has have
having he her here his how however if implement implemented import improve improved in include included
includes including initial install installed instead into introduce is it its just keep last later latest
less let like likely list lot lots make makes many mark may maybe merge merged might minor more most move moved
much must my native need needed needs never new newer next no non none nor not note now of off often old older
on once one only optional or other others otherwise our out over own patch patches per please port ported
prefer prevent previously provide provided provides quite rather re really rebuild recent refresh release
released releases remove removed removes removing rename renamed replace replaced require required requires
restore return run running runs same see set should simple simply since so some something sometimes split
start still stop such suggest support supported supports switch take than thank thanks that the their them
then there these they this those though through thus to together too try turn two under unless until up
update updated updates upgrade upload use used useful user users uses using usually value values various very
via want was way we well were what when where whether which while who why will with within without would yet
you your
january february march april june july august september october november december
monday tuesday wednesday thursday friday saturday sunday
""".split())


@functools.lru_cache(maxsize=1)
def _frequencies():  # the pyspellchecker word list, or None without the extra
    if os.environ.get("KGR_NO_LEXICON"):  # benchmarks compare the two answers in one environment
        return None
    try:
        from spellchecker import SpellChecker
    except ImportError:
        return None
    return SpellChecker(language="en", distance=1).word_frequency


def has_lexicon() -> bool:
    """Whether the word-frequency list of the ``nlp`` extra answers :func:`is_common_word`."""
    return _frequencies() is not None


def is_known_word(word: str) -> bool:
    """Whether ``word`` may be English: any count in the word list, or, without the extra, any word
    not shaped like a name (without a list, an English-looking capitalised word is not told apart).

    >>> is_known_word("the")
    True
    """
    freq = _frequencies()
    w = word.casefold()
    if freq is None or w in BUILTIN_COMMON:
        return True
    return w.isalpha() and freq[w] > 0


def is_common_word(word: str) -> bool:
    """Whether ``word`` (any case) is a common English word (rules in the module docstring).

    >>> is_common_word("Drop"), is_common_word("the")
    (True, True)
    """
    w = word.casefold()
    if w in BUILTIN_COMMON:
        return True
    freq = _frequencies()
    return freq is not None and w.isalpha() and freq[w] >= COMMON_COUNT
