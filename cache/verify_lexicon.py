"""Word lists for the candidate verifier: negation cues, antonym axes, number words, filler.

Everything here is lowercase. Antonym poles list base forms; `inflections` expands them, so a
table entry "enable" also matches "enabled", "enables", "enabling".
"""

from __future__ import annotations

import re

NEGATIONS = frozenset(
    # English; "non" comes from "non-refundable" split at the hyphen.
    "not no never none nobody nothing nowhere neither nor without cannot unable lack lacks "
    "lacking non avoid avoids avoided avoiding prevent prevents prevented preventing unless "
    # Spanish, French, German, Italian, Portuguese, Dutch.
    "nunca sin jamás ningún ninguna ninguno nada tampoco "
    "ne pas jamais sans aucun aucune rien "
    "nicht kein keine keinen keiner keinem keines nie niemals ohne nichts "
    "mai senza nessun nessuno nessuna niente "
    "não sem nenhum nenhuma "
    "niet geen nooit zonder".split()
)

# Each axis lists two or more mutually exclusive poles; a pole is a space-separated word list.
ANTONYM_AXES: tuple[tuple[str, ...], ...] = (
    ("enable activate", "disable deactivate off"),
    ("open opened reopen", "close shut"),
    ("ascending ascend asc", "descending descend desc"),
    ("increase raise increment grow rise boost", "decrease reduce decrement shrink decline lower"),
    ("before prior earlier pre", "after later post"),
    ("did was were", "will"),  # "What did the Fed announce?" / "What will the Fed announce?"
    (
        "over above more greater exceed exceeding higher larger bigger longer",
        "under below less fewer lower smaller shorter within",
        "atleast",  # "at least 3" includes 3, "more than 3" does not (phrases below)
        "atmost",
    ),
    (
        "max maximum maximize most highest largest biggest longest",
        "min minimum minimize least lowest smallest shortest fewest",
    ),
    ("love loved", "hate hated dislike"),
    ("add insert append create", "remove delete drop erase deletion removal"),
    (
        "allow permit grant accept approve whitelist allowlist allowed",
        "deny block forbid reject refuse revoke blacklist blocklist disallow ban denied",
    ),
    ("include including inclusive", "exclude excluding exclusive"),
    ("import", "export"),
    ("merge combine concatenate", "split separate divide"),
    ("upload", "download"),
    ("encrypt encryption encrypted", "decrypt decryption decrypted"),
    ("start begin launch", "stop end halt terminate kill"),
    ("keep continue", "stop quit cease"),
    ("because", "although though despite"),  # a reason, or a concession
    ("pause", "resume unpause"),
    ("true", "false"),
    ("first", "last"),
    ("buy purchase bought", "sell sold"),
    ("input inbound incoming ingress", "output outbound outgoing egress"),
    ("public", "private"),
    ("uppercase upper capitalize", "lowercase lower"),
    ("left", "right"),
    ("up upward upwards", "down downward downwards"),  # "round up" / "round down"
    ("north", "south"),
    ("east", "west"),
    ("horizontal horizontally", "vertical vertically"),
    ("sync synchronous synchronously", "async asynchronous asynchronously"),
    ("client", "server"),
    ("frontend", "backend"),
    ("compress zip", "decompress unzip extract"),
    ("encode", "decode"),
    ("serialize", "deserialize"),
    ("push", "pull"),
    ("read", "write"),
    ("lock", "unlock"),
    ("subscribe subscription", "unsubscribe"),
    ("install installation", "uninstall"),
    ("connect connection", "disconnect"),
    ("mount", "unmount"),
    ("upgrade", "downgrade"),
    ("show display unhide", "hide hidden"),
    ("advantage benefit pro pros", "disadvantage drawback con cons downside"),
    ("success succeed successful successfully", "fail failure"),
    ("valid", "invalid"),
    ("correct", "incorrect wrong"),
    ("legal", "illegal"),
    ("safe safely harmless", "unsafe dangerous harmful"),
    ("good", "bad"),  # "Is coffee good for you?" / "... bad for you?"
    ("better", "worse"),
    ("healthy", "unhealthy"),
    ("possible", "impossible"),
    ("available", "unavailable"),
    ("visible", "invisible"),
    ("mutable", "immutable"),
    ("required mandatory", "optional"),
    ("cheap cheapest inexpensive affordable", "expensive pricey costly"),
    ("fast faster fastest quick quickly", "slow slower slowest slowly"),
    ("hot warm heat", "cold cool"),
    ("profit gain", "loss lose"),
    ("long", "short"),
    ("same identical", "different difference differ"),
    ("send", "receive"),
    ("credit", "debit"),
    ("deposit", "withdraw withdrawal"),
    ("arrival arrive", "departure depart"),
    ("today tonight", "tomorrow", "yesterday"),
    ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"),
    (
        "january",
        "february",
        "march",
        "april",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ),
    ("spring", "summer", "autumn", "winter"),
    # Closed classes: two different members in the same place ask different things.
    (
        "red",
        "blue navy",
        "green",
        "black",
        "white",
        "grey gray",
        "yellow",
        "orange",
        "purple",
        "pink",
        "brown beige",
    ),
    ("breakfast", "lunch", "dinner"),
    ("weekday weekdays", "weekend weekends"),
    ("daily", "weekly", "monthly", "quarterly", "yearly annual annually"),
    ("male men man", "female women woman"),
    ("adult adults", "child children kid kids"),
    ("domestic", "international"),
    ("inner", "outer"),
    ("even", "odd"),
    ("positive", "negative"),
    ("absolute", "relative"),
    ("static", "dynamic"),
    ("global", "local"),
    ("internal", "external"),
    ("major", "minor"),
    ("login", "logout", "signup"),
    ("online", "offline"),
    ("checkin", "checkout"),
    ("instock", "outofstock"),
)

# Particle verbs and multi-word comparatives, matched on the space-joined lowercase words only
# when a trigger word is present: (triggers, pattern, axis base word, pole); pole -1 takes the
# phrase's words off the axis.
_GAP = r"(?:(?!off )\S+ ){0,2}?"
_TURN = "turn turns turned turning switch switches switched switching toggle toggled power"
_LOG = "log logs logged logging sign signs signed signing"
PHRASES: tuple[tuple[str, str, str, int], ...] = (
    (_TURN, r"\b(?:turn|switch|toggle|power)(?:s|es|ed|ing)? " + _GAP + r"on\b", "enable", 0),
    (_LOG, r"\b(?:log|sign)(?:s|ged|ging|ed|ing)? (?:in|into|on)\b", "login", 0),
    (_LOG, r"\b(?:log|sign)(?:s|ged|ging|ed|ing)? (?:out|off)\b", "login", 1),
    (_LOG, r"\bsign(?:s|ed|ing)? up\b", "login", 2),
    ("opt opts opted opting", r"\bopt(?:s|ed|ing)? in\b", "subscribe", 0),
    ("opt opts opted opting", r"\bopt(?:s|ed|ing)? out\b", "subscribe", 1),
    ("scale scales scaled scaling", r"\bscal(?:e|es|ed|ing) up\b", "increase", 0),
    ("scale scales scaled scaling", r"\bscal(?:e|es|ed|ing) down\b", "increase", 1),
    ("check checks checked checking", r"\bcheck(?:s|ed|ing)? in\b", "checkin", 0),
    ("check checks checked checking", r"\bcheck(?:s|ed|ing)? out\b", "checkin", 1),
    ("stock", r"\bin stock\b", "instock", 0),
    ("stock", r"\bout of stock\b", "instock", 1),
    ("sold", r"\bsold out\b", "instock", 1),
    ("than", r"\bmore than\b", "over", 0),
    ("than", r"\b(?:less|fewer) than\b", "over", 1),
    ("least", r"\bat least\b", "over", 2),
    ("more", r"\bor more\b", "over", 2),
    ("most", r"\bat most\b", "over", 3),
    ("less fewer", r"\bor (?:less|fewer)\b", "over", 3),
    # Set phrases whose "good" takes no side (pole -1: no pole).
    ("good", r"\bgood (?:morning|afternoon|evening|night|luck)\b", "good", -1),
    ("good", r"\bfor good\b", "good", -1),
)
PHRASE_RES = tuple(
    (frozenset(triggers.split()), re.compile(pattern), base, pole)
    for triggers, pattern, base, pole in PHRASES
)

_VOWELS = frozenset("aeiou")


def inflections(word: str) -> set[str]:
    """`word` and its likely inflections and derivations; over-generation is harmless."""
    out = {word}
    if len(word) < 4:
        return out | {word + "s", word + "ed", word + "ing"}
    out |= {word + s for s in ("s", "es", "ed", "ing", "er", "ers", "est", "ly", "ion", "ions")}
    if word.endswith("e"):
        stem = word[:-1]
        out |= {word + "d", word + "r", word + "rs", stem + "ing", stem + "ion", stem + "ions"}
    if word.endswith("y"):
        stem = word[:-1]
        out |= {stem + "ies", stem + "ied", stem + "ier", stem + "iest", stem + "ily"}
    if word[-1] not in _VOWELS and word[-2] in _VOWELS and word[-3] not in _VOWELS:
        out |= {word + word[-1] + s for s in ("ed", "ing", "er")}
    return out


_NOT_INFLECTIONS = frozenset({"goods"})  # merchandise, not "good" things


def build_pole_index() -> dict[str, frozenset[tuple[int, int]]]:
    """Word -> the (axis, pole) pairs it signals."""
    index: dict[str, set[tuple[int, int]]] = {}
    for axis, poles in enumerate(ANTONYM_AXES):
        for pole, words in enumerate(poles):
            for word in words.split():
                for form in inflections(word) - _NOT_INFLECTIONS:
                    index.setdefault(form, set()).add((axis, pole))
    return {word: frozenset(pairs) for word, pairs in index.items()}


def axis_of(base: str) -> int:
    """The axis whose first pole lists `base` first (used to attach phrases to axes)."""
    for axis, poles in enumerate(ANTONYM_AXES):
        if poles[0].split()[0] == base:
            return axis
    raise KeyError(base)


# A few function words per language; the language with the most hits wins if it wins clearly.
LANGUAGE_STOPWORDS: dict[str, frozenset[str]] = {
    lang: frozenset(words.split())
    for lang, words in {
        "en": "the is are how what do does my your i you to of and for with can it this that "
        "where when why which be have on an was will should would could there their me",
        "es": "el los las que cómo qué mi mis tu tus su sus es por para con una del puedo "
        "dónde cuál cuáles cuándo y en se lo al está están son hay este esta yo usted",
        "fr": "le les est que comment quoi mon ma mes ton ta tes vous votre vos je pour avec "
        "une des du puis où quel quelle quels quelles et dans ce il elle sur au aux par "
        "sont nous est-ce c'est qui",
        "de": "der die das ist wie was mein meine ich sie für mit ein eine einen den dem kann "
        "wo und im zu nicht es auf sind wir ihr ihre mich mir dein deine warum",
        "it": "il gli che come cosa mio mia miei sono per con uno una della dello posso dove "
        "quale quali e nel di è sei siamo perché questo questa",
        "pt": "o os que como meu minha meus você vocês eu para com um uma da posso onde qual "
        "quais e na é em são isso esta este por que",
        "nl": "de het hoe wat mijn ik je jij voor met een kan waar welke en op van niet zijn "
        "wij jullie waarom deze dit",
    }.items()
}

# Function words that carry no content of their own (for the order check and "content words").
STOPWORDS = frozenset(
    "a an the is are was were be been being am do does did doing have has had having i me my "
    "mine we our you your he him his she her it its they them their this that these those "
    "what which who whom whose how why where when there here can could should would will "
    "shall may might must of in on at by for with about as into through during to from up "
    "down out off over under again further then once and but or so if because until while "
    "any some such only own too very just also s t ll ve d re m please "
    "get got way best good use using want need like know tell give make".split()
)

# Words whose swap does not change a question's answer ("How do I" / "How can I"); the slot
# check ignores edits that only touch these.
FILLER = frozenset(
    "a an the my your our their his her its this that these those i you we they me us it "
    "is are was were be been am do does did can could would should will shall may might must "
    "how what which where when why who please some any there here to of in on at for with by "
    "via using s t ll ve d re m way ways step steps best easiest simplest quickest good "
    "command syntax method process explain tell know want need possible able help concept "
    "kind type something anything thing things stuff really actually basically literally quite "
    "whenever allowed okay ok permitted required require requires necessary still already "
    "currently language offer offers offered provide provides provided".split()
)
