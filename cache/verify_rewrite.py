"""A pending clause pair brought to one wording before the clause judge compares them.

Where the lexicon already pairs two words ("retailers" / "stores", "PTO" / "paid time off",
"every time" / "whenever"), the judge need not decide it again: the query's clause is rewritten
in the candidate's words, so its similarity measures what the lexicon could not explain. Only
the query side changes, so a stored prompt's clause keeps its cached embedding.
"""

from __future__ import annotations

import functools

from cache.slot import Words, words_of
from cache.verify_abbrev import expands_to
from cache.verify_features import stem
from cache.verify_words import interchangeable, is_content, phrase_ranges

_Replacements = dict[int, tuple[int, str]]
"""First word index -> (stop index, the words written there instead)."""


def toward(query: str, candidate: str) -> str:
    """`query` (a clause) with the words the lexicon pairs with `candidate`'s written as
    `candidate` writes them."""
    q, c = words_of(query), words_of(candidate)
    replaced = _abbreviations(q, c)
    _phrases(q, c, replaced)
    _words(q, c, replaced)
    if not replaced:
        return query
    parts: list[str] = []
    last = 0
    for start in sorted(replaced):
        stop, text = replaced[start]
        parts += (query[last : q.starts[start]], text)
        last = q.ends[stop - 1]
    parts.append(query[last:])
    return "".join(parts)


def _free(replaced: _Replacements, start: int, stop: int) -> bool:
    return not any(start < end and begin < stop for begin, (end, _) in replaced.items())


def _abbreviations(q: Words, c: Words) -> _Replacements:
    """The candidate's initialisms where the query spells them out, and the other way round."""
    replaced: _Replacements = {}
    for short in sorted(c.initialisms):
        span = expands_to(short, q.words)
        if span is not None and _free(replaced, *span):
            replaced[span[0]] = (span[1], short.upper())
    for i, word in enumerate(q.words):
        if word in q.initialisms and _free(replaced, i, i + 1):
            span = expands_to(word, c.words)
            if span is not None:
                replaced[i] = (i + 1, " ".join(c.words[span[0] : span[1]]))
    return replaced


def _phrases(q: Words, c: Words, replaced: _Replacements) -> None:
    """A phrase of a group the candidate also has ("every time" / "whenever")."""
    theirs = phrase_ranges(c.words)
    for group, ranges in phrase_ranges(q.words).items():
        if group not in theirs:
            continue
        (start, stop), (their_start, their_stop) = ranges[0], theirs[group][0]
        if q.words[start:stop] != c.words[their_start:their_stop] and _free(replaced, start, stop):
            replaced[start] = (stop, " ".join(c.words[their_start:their_stop]))


def _words(q: Words, c: Words, replaced: _Replacements) -> None:
    """A content word the candidate lacks, where the lexicon pairs it with one the query lacks
    (synonyms, forms of one root, units, clipped words)."""
    their_stems = {stem(w) for w in c.words}
    our_stems = {stem(w) for w in q.words}
    theirs = [w for w in dict.fromkeys(c.words) if is_content(w) and stem(w) not in our_stems]
    if not theirs:
        return
    for i, word in enumerate(q.words):
        if not is_content(word) or stem(word) in their_stems or not _free(replaced, i, i + 1):
            continue
        match = next((w for w in theirs if _paired(word, w)), None)
        if match is not None:
            replaced[i] = (i + 1, match)


@functools.lru_cache(maxsize=65_536)
def _paired(ours: str, theirs: str) -> bool:
    """Cached: a hot template's slot words recur across lookups."""
    return interchangeable((ours,), (theirs,))
