"""Interchangeable words and phrases for the candidate verifier's slot checks: synonym
groups, phrase groups ("every time" / "whenever") and irregular verb forms."""

from __future__ import annotations

from pathlib import Path

from cache.verify_forms import AGENT_ENDINGS
from cache.verify_lexicon import inflections

# Groups of interchangeable phrases, for the slot check: the changed words of one phrase are
# covered when the other clause has a phrase of the same group ("every time" / "whenever").
PHRASE_GROUPS: tuple[str, ...] = (
    "every time|each time|whenever|any time",
    "in advance|ahead of time|ahead|beforehand",
    "aimed at|intended for|meant for|for",
    "how long|how much time|length|duration",
    "as well as|and",
    "in order to|to",
    "a lot of|lots of|many|much",
    "right now|at the moment|now|currently",
    "find out|learn|look up|check",
    "set up|configure|setup",
    "remotely|from home|remote",
    "sign up|register|signup|enroll|enrol",
    "get in touch with|reach out to|contact",
    "send back|give back|return",
    "turn into|convert",
    "make sure|ensure",
    "figure out|work out|determine",
    "is it possible to|can i|am i able to",
)
PHRASES_OF: dict[str, tuple[tuple[tuple[str, ...], int], ...]] = {}
"""First word -> (phrase words, group) of every phrase starting with it."""
for _group, _phrases in enumerate(PHRASE_GROUPS):
    for _phrase in _phrases.split("|"):
        _parts = tuple(_phrase.split())
        PHRASES_OF[_parts[0]] = (*PHRASES_OF.get(_parts[0], ()), (_parts, _group))

# Interchangeable words for the slot check (antonym poles and shared stems count as well).
SYNONYM_GROUPS: tuple[str, ...] = (
    "change update modify edit alter switch",
    "fix solve resolve repair troubleshoot",
    "error issue problem",
    "picture photo image pic",
    "phone mobile smartphone cellphone",
    "big large huge",
    "small little tiny",
    "help assist support",
    "show display list view see check",
    "find locate search look see",
    "simple easy basic straightforward",
    "check determine test verify",
    "connect pair link integrate",
    "booking reservation book reserve",
    "current today now",
    "calculate compute formula",
    "write wrote written author",
    "make create build generate set define",
    "get obtain fetch retrieve",
    "cost price fee charge",
    "quit exit leave",
    "app application",
    "car vehicle",
    "movie film",
    "buy purchase order",
    "cancel terminate",
    "email mail e-mail",
    "shop store",
    "trip journey travel",
    "explain describe",
    "write compose draft",
    "use utilize",
    "begin start",
    "good great nice",
    "brief short quick concise",
    "one single",
    "hi hello hey dear",
    "outside outdoors outdoor",
    "inside indoors indoor",
    "mandatory compulsory obligatory required",
    "teammate colleague coworker",
    "delivery shipping shipment",
    "reply respond answer",
    "whole entire full complete",
    "choose pick select",
    "stop halt",
)
WORD_LIST = Path(__file__).with_name("synonyms.txt")
"""More groups of everyday words (British and American spellings among them), one a line."""


def _listed(path: Path) -> tuple[str, ...]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return tuple(line.strip() for line in lines if line.strip() and not line.startswith("#"))


def _forms(word: str) -> set[str]:
    """`word`'s inflections less its agent nouns and comparatives: "charger" is no "fee"."""
    if word.endswith(AGENT_ENDINGS):
        return inflections(word)
    return {form for form in inflections(word) if not form.endswith(AGENT_ENDINGS)}


SYNONYMS: dict[str, frozenset[int]] = {}
for _group, _words in enumerate((*SYNONYM_GROUPS, *_listed(WORD_LIST))):
    for _word in _words.split():
        for _form in _forms(_word):
            SYNONYMS[_form] = SYNONYMS.get(_form, frozenset()) | {_group}


# Irregular English verb forms -> base form ("left", "lay", "saw" are left out: other words).
_IRREGULAR_VERBS = (
    "wear wore worn|send sent|buy bought|pay paid|get got gotten|take took taken|give gave given|"
    "make made|find found|bring brought|break broke broken|choose chose chosen|"
    "forget forgot forgotten|lose lost|begin began begun|write wrote written|go went gone|"
    "come came|see seen|know knew known|run ran|hold held|keep kept|tell told|say said|"
    "think thought|teach taught|catch caught|fly flew flown|drive drove driven|ride rode ridden|"
    "eat ate eaten|drink drank drunk|sell sold|build built|spend spent|lend lent|mean meant|"
    "feel felt|meet met|steal stole stolen|freeze froze frozen|speak spoke spoken|"
    "grow grew grown|throw threw thrown|show shown|draw drew drawn|fall fell fallen|"
    "hide hid hidden|sleep slept|stand stood|understand understood|win won|sit sat|"
    "rise rose risen|shake shook shaken|tear tore torn|do did done|have had|be was were been"
)
IRREGULAR: dict[str, str] = {
    form: forms.split()[0] for forms in _IRREGULAR_VERBS.split("|") for form in forms.split()
}
