"""Who a question asks about: the doer or the one done to. "Who taught Plato?" asks for the
teacher, "Who did Plato teach?" for a pupil; "Who was Napoleon defeated by?" for the victor,
"Who did Napoleon defeat?" for the defeated; "Is X owned by Y?" says Y owns, "Does X own Y?"
that X does. The content words and their order stay, so neither an embedding nor the word-order
checks see the turn; the question's frame (a subject question, "do" before the subject, a
passive with "by") does.

Compared only between texts with the same content words (up to inflection), so a real
rewording ("Who wrote Hamlet?" / "Who is the author of Hamlet?") is never judged here.
"""

from __future__ import annotations

import functools
import re

from cache.verify_features import Features, stem
from cache.verify_synonyms import IRREGULAR
from cache.verify_words import is_content

_CLAUSE_CUT = re.compile(r"[,;:.!?()\n]+")
_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_CONTRACTIONS = {"'s": "is", "'re": "are", "'ve": "have", "'ll": "will", "'d": "would"}
_WH = frozenset("who whom what which whose".split())
_DO = frozenset("do does did".split())
_BE = frozenset("is are was were".split())
_MODALS = frozenset("can could will would should shall may might must has have had".split())
_DETERMINERS = frozenset(
    "a an the my your our their his her its this that these those some any".split()
)
_PREPOSITIONS = frozenset(
    "at in on to for from with about during after before since until into onto of over "
    "under near across through against".split()
)
_PASSIVE_INFINITIVE = frozenset("be been being".split())
_MAX_WH_PHRASE = 4
"""Words a wh-phrase may run to before its verb or auxiliary: "What kind of animal did ..."."""

_SYMMETRIC_VERBS = "border marry wed divorce meet date resemble neighbor neighbour face fight"
_SYMMETRIC_WORDS = frozenset("with against versus vs".split())
"""Relations that hold both ways ("What country borders Portugal?" / "What country does
Portugal border?", "Who works with ...?"): turning the question round asks the same."""

DOER = "doer"
DONE_TO = "done-to"


def _tokens(clause: str) -> list[str]:
    out: list[str] = []
    for token in _TOKEN.findall(clause):
        word, apostrophe, rest = token.partition("'")
        out.append(word)
        if apostrophe and ("'" + rest) in _CONTRACTIONS:
            out.append(_CONTRACTIONS["'" + rest])
    return out


def _by_role(words: list[str], start: int) -> str | None:
    """After "is/was" at `start`: a stranded "by" asks for the doer ("Who was Napoleon
    defeated by [at Waterloo]?"), "by" before its noun for the one done to ("Who was defeated
    by Napoleon?"); no "by" is no passive frame ("Who is the author of ...?")."""
    for k in range(start + 1, len(words)):
        if words[k] == "by":
            stranded = k + 1 == len(words) or words[k + 1] in _PREPOSITIONS
            return DOER if stranded else DONE_TO
    return None


def _wh_role(words: list[str]) -> str | None:
    """The role of a clause's opening wh-phrase: the doer (a subject question, or the agent of
    a passive), the one done to ("do" before the subject, or the subject of a passive),
    `after:<word>` for a modal's (the first content word after it: the subject when the wh is
    the object, the verb when it is the subject), or None when the frame does not show it."""
    if words[0] == "by" and len(words) > 1 and words[1] in _WH:
        return DOER  # "By whom was Plato taught?"
    if words[0] not in _WH:
        return None
    for j in range(1, min(len(words), _MAX_WH_PHRASE + 1)):
        word = words[j]
        if word in _DO:
            return DONE_TO
        if word in _BE:
            return _by_role(words, j)
        if word in _MODALS:
            after = next((_base(w) for w in words[j + 1 :] if is_content(w)), None)
            return None if after is None else "after:" + after
        if words[0] in ("who", "whom") or word in _DETERMINERS or word in _PREPOSITIONS:
            break  # the verb came: "Who taught ...", "What eats a ...", "Which animals prey on"
    if len(words) == 1 or not _PASSIVE_INFINITIVE.isdisjoint(words):
        return None  # "What needs to be done ...?" asks for what is done
    return DOER


def _yes_no_role(words: list[str]) -> str | None:
    """The role of a yes-or-no question's subject: "Does X own Y?" the doer, "Is X owned by
    Y?" the one done to ("by" in an active question may say how: "Does it ship by air?")."""
    if words[0] in _DO and "by" not in words:
        return DOER
    if words[0] in _BE and _by_role(words, 0) == DONE_TO:
        return DONE_TO
    return None


def _base(word: str) -> str:
    """`word` uninflected, enough to match a verb's forms: "taught" / "teach", "acquired" /
    "acquire" (both "acquir")."""
    base = IRREGULAR.get(word) or stem(word)
    if len(base) > 3 and base.endswith("e"):
        return base[:-1]
    return base[:-1] + "y" if len(base) > 3 and base.endswith("i") else base  # married


_SYMMETRIC = frozenset(map(_base, _SYMMETRIC_VERBS.split()))


@functools.lru_cache(maxsize=4096)
def _frames(lowered: str) -> tuple[tuple[str, ...], tuple[tuple[str, str | None], ...]]:
    """The text's content words in order (base forms), and each clause's (kind, role): "wh"
    or "yes-no" questions whose frame shows a role."""
    content: list[str] = []
    frames: list[tuple[str, str | None]] = []
    for clause in _CLAUSE_CUT.split(lowered.replace("’", "'")):
        words = _tokens(clause)
        if not words:
            continue
        content += [b for b in map(_base, filter(is_content, words)) if is_content(b)]
        if words[0] in _WH or words[0] == "by":
            frames.append(("wh", _wh_role(words)))
        elif words[0] in _DO or words[0] in _BE:
            frames.append(("yes-no", _yes_no_role(words)))
    return tuple(content), tuple(frames)


def same_voice(a: Features, b: Features) -> bool:
    """No question turned round: with the same content words, each wh-question asks for the
    same role ("Who taught Plato?" / "Who did Plato teach?" differ), and each yes-or-no
    question with its words in the same order gives its subject the same role ("Is X owned
    by Y?" / "Does X own Y?" differ; "Does Y own X?" is the first reworded)."""
    content_a, frames_a = _frames(a.lowered)
    content_b, frames_b = _frames(b.lowered)
    if sorted(content_a) != sorted(content_b) or len(frames_a) != len(frames_b):
        return True
    if not _SYMMETRIC.isdisjoint(content_a) or not _SYMMETRIC_WORDS.isdisjoint(a.words | b.words):
        return True
    for (kind_a, role_a), (kind_b, role_b) in zip(frames_a, frames_b, strict=True):
        if kind_a != kind_b or role_a is None or role_b is None or role_a == role_b:
            continue
        if kind_a == "yes-no" and content_a != content_b:
            continue  # "Is X owned by Y?" / "Does Y own X?": the same fact
        if role_a.startswith("after:") != role_b.startswith("after:"):
            continue
        return False
    return True
