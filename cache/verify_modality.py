"""Modality for the candidate verifier: whether a question asks what may, should or must be
done, and whether it asks about the past ("should I have said").

"Can I withdraw early?" asks what is allowed, "Should I withdraw early?" for advice and "Must
I ...?" / "Do I need to ...?" what is required: three answers over the same words. Modals
right after "how" or "where" only frame a how-to ("How can I ..." is "How do I ..."), so they
do not count, nor does a text without any modal: only two texts that both use modals are
compared.
"""

from __future__ import annotations

import re

_CLASSES = {
    "can": "may",
    "could": "may",
    "may": "may",
    "might": "may",
    "allowed to": "may",
    "able to": "may",
    "permitted to": "may",
    "possible to": "may",
    "should": "should",
    "ought to": "should",
    "must": "must",
    "need to": "need",
    "needs to": "need",
    "have to": "must",
    "has to": "must",
    "required to": "must",
    "obliged to": "must",
    "mandatory to": "must",
}
_MODAL = re.compile(
    r"\b(?P<wh>(?:how|what|where|which|who|when|why)\b(?:\s+\w+){0,2}?\s+)?"
    r"(?P<modal>" + "|".join(sorted(_CLASSES, key=len, reverse=True)) + r")\b"
    r"(?P<perfect>(?:\s+\w+){0,2}?\s+have\s+(?:not\s+|already\s+|really\s+)?"
    r"(?!(?:a|an|the|my|your|our|their|his|her|its|some|any|to|no|enough|more|this|that)\b)"
    r"[a-z]+\b)?",
    re.IGNORECASE,
)


def modality(text: str) -> frozenset[str]:
    """The kinds of modal `text` uses ("may", "should", "must", "need"), each with "+past" when
    it asks about what was or would have been ("could I have gotten")."""
    if not _has_modal(text):
        return frozenset()
    found = set()
    for match in _MODAL.finditer(text):
        if _frames(match.group("wh")) and match.group("perfect") is None:
            continue  # "How can I ...": a frame
        kind = _CLASSES[" ".join(match.group("modal").casefold().split())]
        found.add(kind + "+past" if match.group("perfect") else kind)
    return frozenset(found)


_FRAMING = frozenset({"how", "where"})


def _frames(wh: str | None) -> bool:
    """A modal right after "how" or "where" frames a how-to; after any other question word,
    or a word between, it asks what is allowed or required ("Which employees must be paid
    overtime?" / "... may be paid ...", "How much can I withdraw?" / "How much must I ...")."""
    return wh is not None and wh.split()[0].casefold() in _FRAMING and len(wh.split()) == 1


_QUICK = re.compile(
    r"\b(?:can|could|may|might|should|ought|must|need|needs|have|has|allowed|able|permitted|"
    r"possible|required|obliged|mandatory)\b",
    re.IGNORECASE,
)


def _has_modal(text: str) -> bool:
    return _QUICK.search(text) is not None


_NEED_IS = frozenset({"should", "must"})
"""What "do I need to" may mean: advice ("Do I need to book ahead?" / "Should I book ahead?")
or a requirement, never a permission."""


def same_modality(a: frozenset[str], b: frozenset[str]) -> bool:
    """Both texts ask with the same kinds of modal, or one uses none; and both ask about the
    past ("What should I have said?") or neither does ("What should I say?")."""
    if _past(a) != _past(b):
        return False
    if not a or not b or a == b:
        return True
    return all(any(_alike(x, y) for y in b) for x in a) and all(
        any(_alike(x, y) for x in a) for y in b
    )


def _past(kinds: frozenset[str]) -> bool:
    return any(kind.endswith("+past") for kind in kinds)


def _alike(x: str, y: str) -> bool:
    kind_x, _, past_x = x.partition("+")
    kind_y, _, past_y = y.partition("+")
    if past_x != past_y:
        return False
    return kind_x == kind_y or {kind_x, kind_y} in ({"need", "should"}, {"need", "must"})
