"""Templates that transform their text (translate, rewrite, proofread, ...): the answer maps
the slot's wording to its own, so a reworded text is another text, and the slot must stay
word for word, up to how it is spelled."""

from __future__ import annotations

from collections.abc import Sequence

from cache.slot import SpanPair, Words, words_of
from cache.verify_numbers import NUMBER_VALUES
from cache.verify_words import american

TRANSFORM_WORDS = frozenset(
    "translate translates translated translating translation translator rewrite rewrites "
    "rewriting rewritten rephrase rephrasing paraphrase paraphrasing reword rewording "
    "proofread proofreading".split()
)
"""A template asking for one of these maps its slot's wording to the answer's wording: the
translation of a reworded text is another translation, so the slot must stay word for word."""
LANGUAGES = frozenset(
    "english french german spanish italian portuguese dutch polish czech swedish norwegian "
    "danish finnish greek turkish russian ukrainian arabic hebrew hindi bengali urdu chinese "
    "mandarin cantonese japanese korean vietnamese thai indonesian malay tagalog filipino "
    "romanian hungarian bulgarian croatian serbian slovak slovenian catalan swahili persian "
    "farsi brazilian castilian language languages".split()
)
"""A changed place naming a language or the task is the instruction, not the text: judged as
any other slot ("into Japanese" / "into the Japanese language", "Rewrite this message
formally" / "Make this message formal")."""


def rewords_text(a: Words, b: Words, places: Sequence[SpanPair]) -> bool:
    """A transforming template (translate, rewrite, ...) whose text slot changed at all."""
    if TRANSFORM_WORDS.isdisjoint(a.words) or TRANSFORM_WORDS.isdisjoint(b.words):
        return False
    return any(
        _spelled(place.a_words) != _spelled(place.b_words)
        and not any(_instructs(words_of(clause).words) for clause in (place.a, place.b))
        for place in places
    )


def _spelled(words: Sequence[str]) -> str:
    """Words as one translation reads them: "can't" is "cannot", "seven-day" is "7-day",
    "personalised" is "personalized"."""
    return "".join(
        str(NUMBER_VALUES[word])
        if word in NUMBER_VALUES
        else american(word)
        if len(word) > 4  # not "hour" / "hor"
        else word
        for word in words
    )


def _instructs(clause: Sequence[str]) -> bool:
    """A clause of the instruction (naming the task or the target language), not the text."""
    return not (TRANSFORM_WORDS.isdisjoint(clause) and LANGUAGES.isdisjoint(clause))
