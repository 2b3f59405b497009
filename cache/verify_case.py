"""Letter case for the candidate verifier: where writing a word another way names another thing.

The word features fold case, so "ls -A" and "ls -a", "5 mA" and "5 MA", Go's "MyFunc" and
"myFunc", or JSON's "true" and Python's "True" compare equal. Case differences count here
unless one text does not use case at all (all lowercase or shouting, apart from sentence
starts and "I"), and only in the forms that carry meaning:

- a letter after "-" or "\\" (a command's flag, a regex escape) or a one-letter word other
  than "a" and "I" (a key, a variable): any difference, even from a text that does not use
  case;
- a word with capitals inside it whose first letter changes case ("MyFunc" / "myFunc"), and
  a unit after a number ("500 MB" / "500 Mb", "5 mA" / "5 MA", but not "9 AM" / "9 am"): a
  difference;
- otherwise the same: people write names in lowercase ("french", "github"), drop inner
  capitals ("Github") and write acronyms either way ("HTTP" / "http"). This leaves code's
  "True" / "true" and "Object" / "object" alike, which only the words around them could
  tell apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_INTERESTING = re.compile(
    r"(?:(?<=[-\\\d])|(?<=\d ))[^\W\d_]+"  # after a mark or a number: "-R", "\\s", "5 mA"
    r"|(?<![^\W\d_])(?=[^\W\d_]*[^\W\d_a-z])[^\W\d_]+"  # a letter besides a-z: "MyFunc"
    r"|(?<![^\W\d_])[a-z](?![^\W\d_])"  # a one-letter word: "g"
)
"""The words whose case can matter; plain lowercase words, most of a text, are skipped."""
_LOWER = re.compile(r"[a-z]")
_SENTENCE_START = frozenset(".!?:;\n\"'“‘«([-*•#>")
_MARKS = frozenset("-\\")
_PRONOUN = "I"
_ARTICLES = frozenset({"a", "i"})


@dataclass(frozen=True, slots=True)
class CaseForms:
    """How a text writes its words: `forms` holds (folded word, how written, where) for the
    words whose case can matter; `cased` says whether the text uses case at all."""

    cased: bool
    forms: frozenset[tuple[str, str, str]]


NO_CASE = CaseForms(cased=False, forms=frozenset())


def case_forms(text: str) -> CaseForms:
    """The case forms of `text` (see the module's rules)."""
    forms = set()
    cased = False
    for match in _INTERESTING.finditer(text):
        word, start = match.group(), match.start()
        before = text[start - 1] if start else " "
        if before in "'’" or (
            word.islower()
            and len(word) > 1
            and before not in _MARKS
            and not _after_number(text, start)
        ):
            continue  # "I'm"; a plain lowercase word differs from no form of itself
        if before in _MARKS and (start < 2 or not text[start - 2].isalnum()):
            where = "mark"
        elif (
            len(word) == 1
            and word.casefold() not in _ARTICLES
            and text[match.end() : match.end() + 1] not in ("+", "#")  # "C++", "c#"
            and not _opens_sentence(text, start)
        ):
            where = "mark"  # a key or a variable: "G" in vim, "x"
        elif _after_number(text, start):
            where = "unit"
        else:
            where = "word"
        title = word[0].isupper() and word[1:].islower()
        if where != "mark" and title and _opens_sentence(text, start):
            word = word.lower()
        if word != word.lower() and word != _PRONOUN:
            cased = True
        forms.add((word.casefold(), word, where))
    if not forms:
        return NO_CASE
    if not cased or _LOWER.search(text) is None:  # no case used, or all of it shouted
        return CaseForms(cased=False, forms=frozenset(f for f in forms if f[2] == "mark"))
    return CaseForms(cased=True, forms=frozenset(forms))


def _after_number(text: str, start: int) -> bool:
    i = start - 1
    if i >= 0 and text[i] == " ":
        i -= 1  # "500 MB" or "500MB"
    return i >= 0 and text[i].isdigit()


def _opens_sentence(text: str, start: int) -> bool:
    i = start - 1
    while i >= 0 and text[i] in " \t":
        i -= 1
    return i < 0 or text[i] in _SENTENCE_START


def same_case(a: CaseForms, b: CaseForms) -> bool:
    """No word is written in `a` and `b` in forms whose difference carries meaning."""
    if not a.forms or not b.forms or a.forms == b.forms:
        return True
    differing = {folded for folded, _, _ in a.forms ^ b.forms}  # a template's words drop out
    written_a = _by_word(a, differing)
    written_b = _by_word(b, differing)
    for folded in written_a.keys() & written_b.keys():
        forms_a, forms_b = written_a[folded], written_b[folded]
        for word_a, where_a in forms_a:
            for word_b, where_b in forms_b:
                if word_a != word_b and _differs(folded, word_a, word_b, where_a, where_b, a, b):
                    return False
    return True


def _by_word(forms: CaseForms, only: set[str]) -> dict[str, set[tuple[str, str]]]:
    found: dict[str, set[tuple[str, str]]] = {}
    for folded, word, where in forms.forms:
        if folded in only:
            found.setdefault(folded, set()).add((word, where))
    return found


def _differs(
    folded: str, a: str, b: str, where_a: str, where_b: str, in_a: CaseForms, in_b: CaseForms
) -> bool:
    if "mark" in (where_a, where_b):
        return where_a == where_b
    if not (in_a.cased and in_b.cased):
        return False
    kinds = {_kind(a), _kind(b)}
    if where_a == where_b == "unit" and len(folded) <= 3:
        return kinds != {"upper", "lower"}  # "MB" / "Mb", "mA" / "MA"; but "AM" / "am"
    # "MyFunc" / "myFunc" (exported or not in Go); but "GitHub" / "Github" / "github" alike.
    return "mixed" in kinds and "lower" not in kinds and a[0].isupper() != b[0].isupper()


def _kind(word: str) -> str:
    if word.islower():
        return "lower"
    if word.isupper():
        return "upper"
    if word[0].isupper() and word[1:].islower():
        return "title"
    return "mixed"
