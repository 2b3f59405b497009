"""Checks of how one text's words stand against the other's, for the candidate verifier: a
slot filled differently, a question narrowed by added words, two words trading places."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from difflib import SequenceMatcher

from cache.verify_features import Features, stem
from cache.verify_frames import framed
from cache.verify_lexicon import FILLER
from cache.verify_numbers import NUMBER_WORDS, counts, one_of
from cache.verify_roles import same_roles
from cache.verify_units import is_quantity
from cache.verify_voice import same_voice
from cache.verify_words import interchangeable, is_content

_MAX_DIFF_WORDS = 400
_RESTRICTORS = frozenset(
    "for from at in on with without by during after before under over per via since until "
    "within if when unless while whether to like as of and or plus also then".split()
)  # a phrase added after one of these restricts the question, or asks one more
_QUANTIFIERS = frozenset("all every each both".split())
_CIRCUMSTANCES = frozenset(
    "today tomorrow tonight yesterday online offline inside outside indoors outdoors abroad "
    "overseas alone together again anymore anywhere everywhere home remote free cheap "
    "fast slow".split()
)
_NOT_ADVERBS = frozenset(
    "family reply supply apply italy july assembly butterfly jelly belly anomaly monopoly rally "
    "ally lily bully tally multiply imply comply rely holy exactly precisely usually generally "
    "typically normally probably possibly honestly seriously really truly simply".split()
)  # end in -ly but say no how: other words, and hedges
_RELATIONS = frozenset(
    "after before above below than onto within between across along around behind beyond "
    "near per since".split()
)  # not nouns a qualifier narrows: "an [item] after 30 days"


def same_roles_in_place(a: Features, b: Features) -> bool:
    """No words moved to other clauses (`same_roles`), no two trading places in a frame
    that stays ("Divide 10 by 2" / "Divide 2 by 10", "substitute butter for oil" / "oil for
    butter"), and no question turned round (`same_voice`: "Who taught Plato?" / "Who did
    Plato teach?")."""
    return same_roles(a, b) and not traded(a.seq, b.seq) and same_voice(a, b)


def traded(a: Sequence[str], b: Sequence[str]) -> bool:
    """Two numbers, or two content words apart in the text, trade places (up to inflection)
    and every other word stays ("Divide 10 by 2" / "Divide 2 by 10", "3^4" / "4^3"); when the
    words around them move too, a phrase moved ("from the airport to the hotel" / "to the
    hotel from the airport"), and neighbouring words trading places reorder a name
    ("Traditional Chinese" / "Chinese Traditional")."""
    if len(a) != len(b):
        return False
    moved = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
    if len(moved) != 2:
        return False
    i, j = moved
    x, y = a[i], a[j]
    if stem(x) == stem(y) or (stem(b[i]), stem(b[j])) != (stem(y), stem(x)):
        return False  # (inflected, "ml in a cup" / "cups in a ml" trade places too)
    if x.isdigit() and y.isdigit():
        return True  # "3^4" / "4^3": numbers side by side keep their order
    return j - i > 1 and is_content(x) and is_content(y)


def _filler(seq: Sequence[str], i: int, frame: frozenset[int]) -> bool:
    # Quantities and their units were compared by the number check already.
    word = seq[i]
    if i in frame or word in FILLER or word.isdigit() or word in NUMBER_WORDS:
        return True
    if i > 0 and (counts(seq[i - 1], word) or one_of(seq, i - 1) is not None):
        return True  # "10 minutes", "an hour"
    return is_quantity(word)


def no_swapped_slot(a: Features, b: Features) -> bool:
    """Not the same template with one slot filled differently ("implement a stack / a queue"),
    nor the same text narrowed ("list the files / the hidden files / the files in /tmp").

    Fires only when the texts are identical apart from one run of at most four words on each
    side, or words on one side that narrow the other (`_narrows`; edits touching only filler
    such as "how do I"/"what's the way to", or a framing "Hi," / "Thanks!", are ignored),
    and the two runs are not synonyms, inflections or the same antonym pole, nor differ in a
    quantifier ("a file" / "all files"); or when several places each swap one content word
    for another the lexicon does not explain ("teaspoons in a tablespoon" / "tablespoons in
    a cup"). Other changes are a rewording, left to the model.
    """
    if max(len(a.seq), len(b.seq)) > _MAX_DIFF_WORDS:
        return _no_swapped_words(a, b)  # diffing is quadratic at worst
    changes = []
    frame_a, frame_b = framed(a.seq), framed(b.seq)
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a.seq, b.seq, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        has_left = not all(_filler(a.seq, i, frame_a) for i in range(i1, i2))
        has_right = not all(_filler(b.seq, j, frame_b) for j in range(j1, j2))
        if has_left or has_right:
            changes.append((i1, i2, j1, j2, has_left and has_right))
    if len(changes) > 1:
        return not all(_swap(a.seq[c[0] : c[1]], b.seq[c[2] : c[3]]) for c in changes)
    if not changes:
        return True
    i1, i2, j1, j2, both = changes[0]
    if not both:
        # "the [hidden] files": one text narrows what the other asks; other additions reword.
        return not (_narrows(a.seq, i1, i2) or _narrows(b.seq, j1, j2))
    left, right = a.seq[i1:i2], b.seq[j1:j2]
    if max(len(left), len(right)) > 4:
        return True
    if _QUANTIFIERS.intersection(left) != _QUANTIFIERS.intersection(right):
        return False  # "delete a file" / "delete all files"
    return interchangeable(left, right)


def _swap(left: Sequence[str], right: Sequence[str]) -> bool:
    """One content word put for another that does not mean the same ("teaspoons" / "cups")."""
    return (
        len(left) == len(right) == 1
        and is_content(left[0])
        and is_content(right[0])
        and not interchangeable(left, right)
    )


def _narrows(seq: Sequence[str], start: int, stop: int) -> bool:
    """Words [start, stop) of `seq`, added to a text otherwise the same, narrow what it asks:
    a phrase that restricts or adds a request ("[for trucks]", "[if I lost my phone]", "[of
    a whole page]", "[and waffles]"), a word of manner, time or place ("[quickly]",
    "[today]"), a stranded preposition ("[used for]"), or one or two words right before the
    content word they qualify ("[nonstop] flights", "my [recurring] order")."""
    for i in range(start, stop):
        if seq[i] in _RESTRICTORS and any(is_content(w) for w in seq[i + 1 : stop]):
            return True
        if _modifies(seq[i]) and is_content(seq[i]):
            return True
    stranded = start < stop == len(seq) and seq[stop - 1] in _RESTRICTORS
    if stranded and any(is_content(w) for w in seq[start : stop - 1]):
        return True  # "What is machine learning [used for]?" (not "... is New York [in]?")
    first = next((i for i in range(start, stop) if is_content(seq[i])), stop)
    if not 0 < stop - first <= 2 or stop >= len(seq):
        return False
    narrowed = seq[stop]
    return is_content(narrowed) and narrowed not in _RELATIONS


def _modifies(word: str) -> bool:
    """A word that says how, when or where ("[quickly]", "[today]", "[offline]"): added to a
    request, it asks for another answer wherever it stands."""
    if word in _CIRCUMSTANCES:
        return True
    return len(word) > 4 and word.endswith("ly") and word not in _NOT_ADVERBS


def _no_swapped_words(a: Features, b: Features) -> bool:
    """The order-free slot check for long prompts: compares word counts instead of a diff."""
    only_a, only_b = Counter(a.seq), Counter(b.seq)
    only_a, only_b = only_a - only_b, only_b - only_a
    left = sorted(w for w in only_a if w not in FILLER and not is_quantity(w))
    right = sorted(w for w in only_b if w not in FILLER and not is_quantity(w))
    if not left or not right or max(len(left), len(right)) > 4:
        return True
    return interchangeable(left, right)
