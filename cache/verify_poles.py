"""Antonym poles in a text: which side of an axis (on/off, before/after, more/less, ...) its
words and phrases take, for the verifier's antonym checks. Pure Python over lowercase words."""

from __future__ import annotations

from collections.abc import Sequence

from cache.verify_lexicon import PHRASE_RES, axis_of, build_pole_index

_POLES = build_pole_index()
_PHRASES = tuple((trig, pattern, axis_of(base), pole) for trig, pattern, base, pole in PHRASE_RES)
_PHRASE_TRIGGERS = frozenset().union(*(triggers for triggers, *_ in _PHRASES))


def poles_of(words: Sequence[str], word_set: frozenset[str]) -> frozenset[tuple[int, int]]:
    """The (antonym axis, pole) pairs that lowercase `words` signal, phrases included; a word
    of a phrase signals only the phrase's pole on its axis ("3 or more" is "at least 3", not
    "more than 3")."""
    if _PHRASE_TRIGGERS.isdisjoint(word_set):
        return frozenset(pair for word in words for pair in _POLES.get(word, ()))
    phrases = pole_phrases(words)
    taken = {(axis, i) for (axis, _), places in phrases.items() for i in places}
    poles = {
        pair
        for i, word in enumerate(words)
        for pair in _POLES.get(word, ())
        if (pair[0], i) not in taken
    }
    return frozenset(poles | {pair for pair in phrases if pair[1] >= 0})


def pole_phrases(words: Sequence[str]) -> dict[tuple[int, int], set[int]]:
    """(antonym axis, pole) -> the indexes of the words of `words` that make a phrase
    signalling it: "turn the alerts on" gives turn and on (not the words between); pole -1
    marks a set phrase whose words take no side ("good morning")."""
    found: dict[tuple[int, int], set[int]] = {}
    if _PHRASE_TRIGGERS.isdisjoint(words):
        return found
    joined = " ".join(words)
    for triggers, pattern, axis, pole in _PHRASES:
        if triggers.isdisjoint(words):
            continue
        for match in pattern.finditer(joined):
            first = joined.count(" ", 0, match.start())
            last = first + match.group().count(" ")
            found.setdefault((axis, pole), set()).update((first, last))
    return found
