"""Roles across clauses: the same content words paired differently is another question
("Can I cancel if I get a refund?" / "Can I get a refund if I cancel?"), whole clauses in
another order are not ("If I cancel, can I get a refund?"). An embedding, a bag of words,
sees neither."""

from __future__ import annotations

import functools
import re
from collections import Counter

from cache.slot import words_of
from cache.verify_features import Features, stem
from cache.verify_words import is_content

MAX_ROLE_WORDS = 120
"""Longer texts are not compared clause by clause (pairs of words grow with the square of a
clause); prompts sharing a template are judged per changed place, which stays short."""
_SUBORDINATORS = frozenset(
    "if when whenever because before after unless while since although though once until".split()
)
_CLAUSE_CUT = re.compile(
    r"[,;:.!?]+(?=\s|$)|\n|\b(?=(?:and|but|or|then|" + "|".join(sorted(_SUBORDINATORS)) + r")\b)",
    re.IGNORECASE,
)


def _clauses(text: str) -> list[set[str]]:
    """The text's clauses, each as its content stems and its subordinator ("if", "when")."""
    clauses = []
    for piece in _CLAUSE_CUT.split(text):
        words = words_of(piece).words
        clause = {stem(w) for w in words if is_content(w)}
        if clause:
            clauses.append(clause | ({words[0]} if words[0] in _SUBORDINATORS else set()))
    return clauses


def _together(clauses: list[set[str]]) -> set[frozenset[str]]:
    return {frozenset((x, y)) for clause in clauses for x in clause for y in clause if x != y}


@functools.lru_cache(maxsize=4096)
def _content(text: str) -> frozenset[tuple[str, int]]:
    """The text's content stems with their counts (cached: stored prompts recur)."""
    return frozenset(Counter(stem(w) for w in words_of(text).words if is_content(w)).items())


def same_clauses(a: str, b: str) -> bool:
    """No word left its clause for another: "Can I get a refund if I cancel?" / "If I cancel,
    can I get a refund?" (a clause split off or merged is no move)."""
    pairs_a, pairs_b = _together(_clauses(a)), _together(_clauses(b))
    return not (pairs_a - pairs_b and pairs_b - pairs_a)


def rearranged(a: str, b: str) -> bool:
    """The same content words in other clauses, each text pairing words the other keeps apart:
    "Can I cancel if I get a refund?" / "Can I get a refund if I cancel?", "ship X and drop Y"
    / "drop X and ship Y" (their roles changed, which a bag of words, or an embedding, does
    not see)."""
    content = _content(a)
    if content != _content(b) or sum(n for _, n in content) > MAX_ROLE_WORDS:
        return False
    return not same_clauses(a, b)


def same_roles(a: Features, b: Features) -> bool:
    """No content words moved to other clauses ("Can I cancel if I get a refund?" / "Can I
    get a refund if I cancel?"); prompts sharing a template are judged per changed place."""
    return not rearranged(a.lowered, b.lowered)
