"""What the candidate verifier compares, extracted once per text: numbers, negations, antonym
poles, entities, quoted spans, script, language and directed word pairs. Pure Python, no model.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from cache.verify_asks import asks
from cache.verify_case import NO_CASE, CaseForms, case_forms
from cache.verify_digits import has_digits
from cache.verify_lexicon import LANGUAGE_STOPWORDS, NEGATIONS, STOPWORDS
from cache.verify_lists import without_list_markers
from cache.verify_modality import modality
from cache.verify_numbers import (
    NUMBER_WORDS,
    canonical_numbers,
    number_words,
    spelled,
    without_restatements,
)
from cache.verify_poles import poles_of
from cache.verify_scope import scope
from cache.verify_script import dominant_script, script_of
from cache.verify_symbols import symbols
from cache.verify_units import UNITS, is_quantity

_WORD = re.compile(r"[A-Za-z](?:\+\+|#)(?![\w#+])|[^\W_]+(?:['’][^\W_]+)*")  # C++, C#
_URL = re.compile(r"(?:https?://|www\.)[^\s<>\"'`]+")
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")  # anchored: linear time
_QUOTED = re.compile(
    r"```(?P<block>[\s\S]*?)```|`(?P<code>[^`\n]+)`|\"(?P<dq>[^\"\n]{1,300})\""
    r"|“(?P<cq>[^”\n]{1,300})”|«(?P<gq>[^»\n]{1,300})»|‘(?P<sq>[^’\n]{1,300})’"
    r"|(?<!\w)'(?P<aq>[^'\n]{1,300}?)'(?!\w)"
)
_DOTTED = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b")
_SNAKE = re.compile(r"\b\w*_\w+\b")
_CALL = re.compile(r"\b\w+(?=\(\))")
_VERSION = re.compile(r"\bv\d+(?:\.\d+)*\b", re.IGNORECASE)
_KEEP_FROM = re.compile(r"\b(?:stop|keep|kept)(?:s|ped|ping|ing)?(?: \S+){0,3} from \S+ing\b")
_FAIL_TO = re.compile(r"\b(?:fail(?:s|ed|ing)?|forg[eo]t(?:s|ting)?|neglect(?:s|ed)?) to \w")
_FAIL_WORDS = frozenset({"fail", "fails", "failed", "failing", "forget", "forgets", "forgot"})
_FAIL_WORDS |= {"forgetting", "neglect", "neglects", "neglected"}
_ONE_WORDS = frozenset({"one", "a", "an"})
_CAMEL = re.compile(r"[a-z][A-Z]")
_DIGIT = re.compile(r"\d")
_QUOTE_CHARS = frozenset("`\"“«‘'")
_SENTENCE_START = frozenset(".!?:;\n\"'“‘«([-*•#>")
_NOT_ENTITIES = frozenset({"i", "ok", "okay", "hi", "id", "e.g", "i.e", "a.m", "p.m", "etc"})
_ELISIONS = frozenset({"l", "d", "qu", "n", "j", "m", "t", "s", "c", "all", "dell", "nell"})
_DIRECTED = {"to": ("to", False), "into": ("to", False), "from": ("to", True)}
_DIRECTED |= {"than": ("than", False), "before": ("before", False), "after": ("before", True)}


@dataclass(frozen=True, slots=True)
class Features:
    """The comparable facts of one text."""

    lowered: str
    seq: tuple[str, ...]
    words: frozenset[str]
    stems: frozenset[str]
    n_words: int
    numbers: tuple[tuple[str, str], ...]
    negations: int
    poles: frozenset[tuple[int, int]]
    entities: frozenset[str]
    quoted: tuple[str, ...]
    script: str
    languages: frozenset[str]
    directed: frozenset[tuple[str, str, str]]
    asks: frozenset[tuple[str, str]] = frozenset()
    """Its questions that show the kind of answer they ask for (`cache.verify_asks`)."""
    symbols: tuple[str, ...] = ()
    """Its operators and symbols, sorted (`cache.verify_symbols`)."""
    case: CaseForms = NO_CASE
    """How it writes the words whose case can matter (`cache.verify_case`)."""
    modality: frozenset[str] = frozenset()
    """The kinds of modal it asks with (`cache.verify_modality`)."""
    scope: frozenset[str] = frozenset()
    """The kinds of quantifier it uses (`cache.verify_scope`)."""


def stem(word: str) -> str:
    """A light suffix stripper: enough to equate "containers"/"container", "running"/"run"."""
    last = word[-1:]
    if last == "s":
        if word.endswith("ies") and len(word) > 4:
            return word[:-3] + "y"
        if word.endswith(("xes", "ches", "shes", "sses")):
            return word[:-2]
        if len(word) > 3 and not word.endswith(("ss", "us", "is")):
            return word[:-1]
    elif last in ("d", "g"):
        for suffix in ("ing", "ed"):
            if word.endswith(suffix) and len(word) - len(suffix) >= 3:
                word = word[: -len(suffix)]
                return word[:-1] if len(word) > 3 and word[-1] == word[-2] != "l" else word
    return word


_BARE_NEGATION = re.compile(
    r"\b(do|does|did|is|are|was|were|has|have|had|would|should|could|must|ca|wo|ai)(n)(t)\b",
    re.IGNORECASE,
)
"""A contraction typed without its apostrophe ("dont", "isnt", "cant"): none is another
common word ("cant" and "wont" as nouns are rare in requests)."""


_WITH = re.compile(r"(?<![\w/])[wW]/(?:(?P<o>[oO])(?![\w/])|(?=\s))")


def typed_out(text: str) -> str:
    """`text` with shorthand written out: contractions typed without their apostrophe ("Cant
    log in" is "Can't log in"), "w/" and "w/o" ("mac and cheese w/ breadcrumbs")."""
    if _BARE_NEGATION.search(text):
        text = _BARE_NEGATION.sub(r"\1\2'\3", text)
    if "/" in text:
        text = _WITH.sub(lambda m: "without" if m["o"] else "with", text)
    return text


def _split_word(token: str) -> tuple[str, bool]:
    """The base of a token with an apostrophe, and whether it carried a negation."""
    left, _, right = token.replace("’", "'").partition("'")
    if right == "t" and left.endswith("n"):
        irregular = {"can": "can", "won": "will", "shan": "shall"}
        return irregular.get(left.casefold(), left[:-1]), True  # don't, can't, isn't
    if left in _ELISIONS and len(right) > 1:
        return right, left == "n"  # l'assistenza, n'est
    return left, False


def _quoted(text: str) -> list[str]:
    spans = []
    for match in _QUOTED.finditer(text):
        kind = match.lastgroup or ""
        value = " ".join((match[kind] or "").split())
        spans.append(value)
    return spans


def _patterns(text: str) -> set[str]:
    """URLs, emails, dotted names, snake_case, calls() and versions (each behind a cheap test)."""
    found: set[str] = set()
    if "://" in text or "www." in text:
        found |= {m.group().rstrip(".,;:!?)]").casefold() for m in _URL.finditer(text)}
    if "@" in text:
        found |= {m.group().casefold() for m in _EMAIL.finditer(text)}
    if "." in text:
        found |= {m.group().casefold() for m in _DOTTED.finditer(text)}
    if "_" in text:
        found |= {m.group().casefold() for m in _SNAKE.finditer(text)}
    if "()" in text:
        found |= {m.group().casefold() for m in _CALL.finditer(text)}
    if _DIGIT.search(text):
        found |= {m.group().casefold() for m in _VERSION.finditer(text)}
    return found


def _sentence_start(text: str, start: int) -> bool:
    i = start - 1
    while i >= 0 and text[i].isspace():
        if text[i] == "\n":
            return True  # a line opens a sentence, whatever ended the line before
        i -= 1
    if i >= 0 and text[i] == "." and _abbreviation_before(text, i):
        return False  # "Mr. Mensah": a title's period ends no sentence
    return i < 0 or text[i] in _SENTENCE_START


_TITLES = frozenset("mr mrs ms mx dr prof st mt sr jr rev hon gen col capt lt sgt vs".split())


def _abbreviation_before(text: str, period: int) -> bool:
    """The word right before the period at `period` is a title or an abbreviation."""
    start = period
    while start > 0 and text[start - 1].isalpha():
        start -= 1
    return text[start:period].casefold() in _TITLES


def _names(text: str, tokens: list[tuple[int, str]], script: str) -> set[str]:
    """Capitalized words not opening a sentence, acronyms, CamelCase, letters mixed with digits,
    and words in another script than the text's."""
    alpha = [tok for _, tok in tokens if tok.isalpha() and len(tok) > 1]
    upper = sum(tok.isupper() for tok in alpha)
    title = sum(tok[0].isupper() and tok[1:].islower() for tok in alpha[1:] if len(tok) > 3)
    shouting = upper >= 3 and upper * 2 >= len(alpha)
    title_case = title >= 3 and title * 2 > len(alpha[1:])
    found: set[str] = set()
    previous = ""
    for start, base in tokens:
        after_number, previous = previous.isdigit(), base
        if base.islower() and base.isalpha() and base.isascii():
            continue  # the common case: a plain lowercase word
        lower = base.casefold()
        if lower in _NOT_ENTITIES or not base:
            continue
        if not (script == "latin" and base.isascii()) and any(
            script_of(ch) != script for ch in base if ch.isalpha()
        ):
            found.add(lower)  # a foreign-script word, e.g. a term to translate
        elif base.isalpha():
            if _CAMEL.search(base):
                found.add(lower)  # iPhone, PayPal, useEffect
            elif base.isupper() and len(base) > 1:
                if not shouting and not (after_number and lower in UNITS):
                    found.add(lower)  # API, AWS (but not the GB of "16 GB")
            elif len(base) > 2 and base[-1] == "s" and base[:-1].isupper():
                found.add(lower[:-1])  # APIs
            elif (
                len(base) > 1
                and base[0].isupper()
                and base[1:].islower()
                and not title_case
                and not _sentence_start(text, start)
            ):
                found.add(lower)
        elif any(ch.isalpha() for ch in base) and not is_quantity(lower):
            found.add(lower)  # 2FA, H100, mp3 (but not 16GB, 7pm)
    return found


def _directed(words: list[str]) -> set[tuple[str, str, str]]:
    """(earlier, later, relation) for content words near to/from/than/before/after."""
    content: list[str | None] = []  # None marks a relation word
    relations: list[tuple[int, str, bool]] = []
    for word in words:
        if word in _DIRECTED:
            name, reverse = _DIRECTED[word]
            relations.append((len(content), name, reverse))
            content.append(None)
        elif word not in STOPWORDS:
            content.append(stem(word))
    pairs = set()
    for index, name, reverse in relations:
        before = [w for w in content[max(0, index - 2) : index] if w is not None]
        after = [w for w in content[index + 1 : index + 3] if w is not None]
        for x in before:
            for y in after:
                if x != y:
                    pairs.add((y, x, name) if reverse else (x, y, name))
    return pairs


def _languages(words: frozenset[str]) -> frozenset[str]:
    """The languages whose function words are most frequent (ties kept), if any appear."""
    scores = {lang: len(stop & words) for lang, stop in LANGUAGE_STOPWORDS.items()}
    best = max(scores.values())
    return frozenset(lang for lang, n in scores.items() if n == best) if best else frozenset()


@functools.lru_cache(maxsize=2048)
def extract(text: str) -> Features:
    """The features of `text` (cached: candidates recur across lookups)."""
    text = without_list_markers(without_restatements(text))
    tokens: list[tuple[int, str]] = []
    negations = 0
    for match in _WORD.finditer(text):
        token = match.group()
        if "'" in token or "’" in token:
            token, negated = _split_word(token)
            negations += negated
        tokens.append((match.start(), token))
    raw_words = [base.casefold() for _, base in tokens]
    words = [spelled(w, text, start) for (start, _), w in zip(tokens, raw_words, strict=True)]
    negations += sum(word in NEGATIONS for word in words)
    if "from" in words and _KEEP_FROM.search(" ".join(words)):
        negations += 1  # "stop/keep X from doing" says "prevent"
    if "to" in words and not _FAIL_WORDS.isdisjoint(words):
        negations += len(_FAIL_TO.findall(" ".join(words)))  # "fails to start": does not
    word_set = frozenset(words)
    poles = poles_of(words, word_set)
    lowered = text.casefold()
    has_words = not NUMBER_WORDS.isdisjoint(word_set) or not _ONE_WORDS.isdisjoint(word_set)
    numbers = number_words(raw_words) if has_words else []
    if has_digits(text):
        normalized = lowered.replace("a.m.", "am").replace("p.m.", "pm")
        numbers += canonical_numbers(normalized.replace("per cent", "percent"))
    script = dominant_script(text)
    return Features(
        lowered=lowered,
        seq=tuple(words),
        words=word_set,
        stems=frozenset(stem(w) for w in word_set),
        n_words=len(words),
        numbers=tuple(sorted(numbers)),
        negations=negations,
        poles=poles,
        entities=frozenset((_patterns(text) | _names(text, tokens, script)) - _NOT_ENTITIES),
        quoted=tuple(sorted(_quoted(text))) if _QUOTE_CHARS.intersection(text) else (),
        script=script,
        languages=_languages(word_set) if script == "latin" else frozenset(),
        directed=frozenset(_directed(words)) if not word_set.isdisjoint(_DIRECTED) else frozenset(),
        asks=asks(text),
        symbols=symbols(text),
        case=case_forms(text),
        modality=modality(text),
        scope=scope(word_set, tuple(words)) if "-only" not in lowered else _scope(words, lowered),
    )


def _scope(words: list[str], lowered: str) -> frozenset[str]:
    """The quantifiers of a text holding a compound such as "read-only" (not an "only")."""
    if words.count("only") > lowered.count("-only"):
        return scope(frozenset(words), tuple(words))
    kept = [w for w in words if w != "only"]
    return scope(frozenset(kept), tuple(kept))
