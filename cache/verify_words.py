"""Word-level equivalence for the slot judgement: when two changed words (or runs) say the
same thing, and when they say the opposite.

Same: shared stems, synonyms, a known suffix ("containers" / "container"), irregular verb forms
("worn" / "wore"), one word written as two ("backup" / "back up"), British and American
spellings, clipped forms and initialisms ("pwd", "2FA"), phrase groups ("every time" /
"whenever"). Opposite: antonym poles ("import" / "export") and negating prefixes ("paid" /
"unpaid"). Pure Python over lowercase words.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from cache.slot import Words
from cache.verify_abbrev import clipped_of, expands_to, numeronym_of
from cache.verify_features import stem
from cache.verify_forms import AGENT_ENDINGS, is_form, unspaced
from cache.verify_lexicon import FILLER, NEGATIONS, STOPWORDS
from cache.verify_numbers import NUMBER_WORDS
from cache.verify_poles import pole_phrases, poles_of
from cache.verify_synonyms import IRREGULAR, PHRASES_OF, SYNONYMS
from cache.verify_units import UNITS, is_quantity
from cache.verify_vocab import is_known

_NONE: frozenset[int] = frozenset()


def interchangeable(left: Sequence[str], right: Sequence[str]) -> bool:
    """Whether two short word runs plausibly say the same (synonyms, shared stem or pole,
    abbreviations)."""
    if not {stem(w) for w in left}.isdisjoint(stem(w) for w in right):
        return True
    for x in left:
        for y in right:
            if not SYNONYMS.get(x, _NONE).isdisjoint(SYNONYMS.get(y, _NONE)):
                return True
            if unspaced(x) or unspaced(y):
                continue  # a clause of Chinese or Thai: a shared start is no shared root
            if _compound_of(x, y):
                continue  # butter/buttermilk: another thing, however long the shared start
            if min(len(x), len(y)) > 3 and _suffixed(x, y):
                return True  # container/containers, compute/computation
            if x + "s" == y or y + "s" == x:
                return True  # api/apis
            if UNITS.get(x, x) == UNITS.get(y, y):
                return True  # kg/kilograms
            if clipped_of(x) == y or clipped_of(y) == x:
                return True  # pwd/password
            if numeronym_of(x, y) or numeronym_of(y, x):
                return True  # k8s/kubernetes
            if _same_root(x, y):
                return True  # summary/summarize, colour/color
            if _base(x) == _base(y):
                return True  # worn/wore, owners/owns
    if _compounded(left, right) or _compounded(right, left):
        return True  # back up / backup
    if len(left) == 1 and expands_to(left[0], right) == (0, len(right)):
        return True  # 2fa / two factor authentication
    if len(right) == 1 and expands_to(right[0], left) == (0, len(left)):
        return True
    return not poles_of(left, frozenset(left)).isdisjoint(poles_of(right, frozenset(right)))


def is_content(word: str) -> bool:
    """A word that carries meaning of its own (numbers and negations are compared elsewhere)."""
    if word in STOPWORDS or word in FILLER or word in NUMBER_WORDS or word in NEGATIONS:
        return False
    return not (word.isdigit() or is_quantity(word))


_INFLECTIONS = ("ing", "ies", "ed", "es", "s")


def _base(word: str) -> str:
    """`word` without an inflection, irregular verbs to their base form (worn -> wear), a
    plural in "-ies" to its "-y"."""
    if word in IRREGULAR:
        return IRREGULAR[word]
    for suffix in _INFLECTIONS:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            # "bakeries" is "bakery", not "baker" (nor "batteries" "batter")
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def _suffixed(x: str, y: str) -> bool:
    """One word is a form of the other (`cache.verify_forms`): "containers" / "container",
    "intro" / "introductory"; not "pass" / "password", "print" / "printer", "brand" /
    "brandy"."""
    short, long = sorted((x, y), key=len)
    return is_form(short, long)


_SUFFIX_WORDS = frozenset("proof like wise ward wards ship hood".split())
"""Words that end a compound as a suffix would ("waterproof", "childlike"): it stays about
its first word. ("-free" and "-less" negate it, so "sugar-free" is another thing.)"""


def _compound_of(x: str, y: str) -> bool:
    """One word is the other with a whole word of three letters or more joined on
    ("butter" / "buttermilk", "book" / "notebook"): a compound names another thing."""
    short, long = sorted((x, y), key=len)
    if len(long) - len(short) < 3:
        return False
    if long.startswith(short):
        rest = long[len(short) :]
        return is_known(rest) and rest not in _SUFFIX_WORDS
    return long.endswith(short) and is_known(long[: -len(short)])


def _compounded(split: Sequence[str], joined: Sequence[str]) -> bool:
    """Two adjacent words of `split` are written as one word in `joined` ("back up" /
    "backup", "log in" / "login")."""
    whole = set(joined)
    return any(a + b in whole for a, b in pairwise(split))


def _same_root(x: str, y: str) -> bool:
    """A long shared beginning (summary/summarize) or a British/American spelling pair; not
    when one word is the start of the other (that is `_suffixed`'s call: "batter" /
    "battery") or only one ends as an agent ("painted" / "painter")."""
    shorter = min(len(x), len(y))
    common = 0
    while common < shorter and x[common] == y[common]:
        common += 1
    agents = [word[common - 1 :].endswith(AGENT_ENDINGS) for word in (x, y)]
    if common < shorter and agents[0] == agents[1] and common >= 6 and common >= 0.8 * shorter:
        return True
    return shorter > 4 and american(x) == american(y)


def american(word: str) -> str:
    """`word` with British spellings made American (colour -> color, organise -> organize)."""
    for british, us in (("ise", "ize"), ("our", "or"), ("tre", "ter"), ("ogue", "og")):
        word = word.replace(british, us)
    return word


def phrase_ranges(words: Sequence[str]) -> dict[int, list[tuple[int, int]]]:
    """Phrase group -> the word ranges [start, stop) of `words` where one of its phrases is."""
    found: dict[int, list[tuple[int, int]]] = {}
    for i, word in enumerate(words):
        for phrase, group in PHRASES_OF.get(word, ()):
            if tuple(words[i : i + len(phrase)]) == phrase:
                found.setdefault(group, []).append((i, i + len(phrase)))
    return found


def phrase_covered(own: Words, other: Words) -> set[str]:
    """Words of `own` inside a phrase whose group ("every time" / "whenever") or antonym pole
    ("turn 2FA on" / "enable") `other` also has, or written as one word there ("back up" /
    "backup"), and words of `own` that `other` writes as two."""
    theirs = phrase_ranges(other.words)
    covered = {
        word for pair in pairwise(own.words) if _compounded(pair, other.words) for word in pair
    }
    covered |= {
        word
        for word in own.words
        if any(_compounded(pair, (word,)) for pair in pairwise(other.words))
    }
    other_poles = poles_of(other.words, frozenset(other.words))
    covered |= {
        own.words[i]
        for pole, indexes in pole_phrases(own.words).items()
        if pole in other_poles
        for i in indexes
    }
    return covered | {
        own.words[i]
        for group, ranges in phrase_ranges(own.words).items()
        if group in theirs
        for start, stop in ranges
        for i in range(start, stop)
    }


_NEGATING_PREFIXES = ("un", "in", "im", "il", "ir", "dis", "non")


def _negated_form(a: Sequence[str], b: Sequence[str]) -> bool:
    """A word of one side is a word of the other with a negating prefix ("paid" /
    "unpaid", "available" / "unavailable")."""
    left, right = set(a) - set(b), set(b) - set(a)
    for ours, theirs in ((left, set(b)), (right, set(a))):
        for word in ours:
            for prefix in _NEGATING_PREFIXES:
                rest = word[len(prefix) :].lstrip("-")
                if word.startswith(prefix) and len(rest) >= 4 and rest in theirs:
                    return True
    return False


def opposite(a: Sequence[str], b: Sequence[str]) -> bool:
    """The two word runs pick different poles of an antonym axis, or one negates the other's
    word with a prefix."""
    if _negated_form(a, b):
        return True
    poles_a, poles_b = poles_of(a, frozenset(a)), poles_of(b, frozenset(b))
    shared = {axis for axis, _ in poles_a} & {axis for axis, _ in poles_b}
    return any(
        {p for x, p in poles_a if x == axis} != {p for x, p in poles_b if x == axis}
        for axis in shared
    )
