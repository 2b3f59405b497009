"""The kind of answer a question asks for, from its opening words."""

from __future__ import annotations

import pytest

from cache.verify import verify
from cache.verify_asks import asks, same_kind


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("Can I carry over unused days?", {"yes_no"}),
        ("How many unused days can I carry over?", {"amount"}),
        ("How long does shipping take?", {"duration"}),
        ("When will my order arrive", {"time"}),
        ("Hi! Where is my order?\nThanks.", {"place"}),
        ("Question: Who pays for shipping?\nAnswer:", {"person"}),
        ("What is the capital of France?", set()),
        ("Can you tell me how many ounces are in a pound?", set()),
        ("Do not reply in English. Translate: hello", set()),
        ("Explain photosynthesis.", set()),
    ],
)
def test_the_opening_shows_the_kind_of_answer(text: str, kinds: set[str]) -> None:
    """Auxiliaries ask yes or no, "how many" an amount, "when" a time; requests show none."""
    assert {kind for _, kind in asks(text)} == kinds


def test_kinds_a_paraphrase_may_switch_between_agree() -> None:
    """A duration asked as a time or an amount, a person as a yes or no, are alike."""
    assert same_kind(asks("How long does shipping take?"), asks("When will my order arrive?"))
    assert same_kind(asks("How long does it take?"), asks("How many days does it take?"))
    assert same_kind(asks("Who pays for shipping?"), asks("Do I pay for shipping?"))
    assert not same_kind(asks("Is the store open?"), asks("Where is the store?"))


def test_a_shared_templates_own_questions_are_left_out() -> None:
    """Only the questions one text asks and the other does not are compared."""
    template = "Be brief. Can you help a customer? Customer: {}"
    yes_no = asks(template.format("Can I carry over unused days?"))
    amount = asks(template.format("How many unused days can I carry over?"))
    assert not same_kind(yes_no, amount)


def test_questions_asking_for_other_kinds_of_answer_disagree() -> None:
    """The same words asking yes or no and asking how many are different questions."""
    assert not verify("Can I carry over unused days?", "How many unused days can I carry over?").ok
    alike = verify("How long does delivery take?", "How many days does delivery take?")
    assert alike.reason != "asks"
