"""A question turned round: the same words asking for the doer or for the one done to."""

from __future__ import annotations

import pytest

from cache.verify import verify
from cache.verify_features import extract
from cache.verify_voice import same_voice


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Who trained Aristotle?", "Who did Aristotle train?"),
        ("What does a hawk hunt?", "What hunts a hawk?"),
        ("Which firm bought LinkedIn?", "Which firm did LinkedIn buy?"),
        ("Who was Caesar betrayed by in 44 BC?", "Who did Caesar betray in 44 BC?"),
        ("Who does the CFO answer to?", "Who answers to the CFO?"),
        ("What did the Mongols invade?", "What invaded the Mongols?"),
        ("What is produced by the pancreas?", "What produces the pancreas?"),
        ("By whom was Aristotle trained?", "Who did Aristotle train?"),
        ("Who can Aristotle train?", "Who can train Aristotle?"),
        ("Is YouTube owned by Google?", "Does YouTube own Google?"),
    ],
)
def test_a_question_turned_round_disagrees(a: str, b: str) -> None:
    """Asking for the doer against the one done to, by frame or by voice, disagrees."""
    assert not same_voice(extract(a), extract(b))
    assert verify(a, b).reason == "roles"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("What does a hawk eat?", "What do hawks eat?"),
        ("Who was Caesar betrayed by?", "Who betrayed Caesar?"),
        ("Who was betrayed by Caesar?", "Who did Caesar betray?"),
        ("What is produced by the pancreas?", "What does the pancreas produce?"),
        ("Is YouTube owned by Google?", "Does Google own YouTube?"),
        ("Does my parcel ship by air?", "Is my parcel shipped by air?"),
        ("Who composed Carmen?", "Who is the composer of Carmen?"),
        ("What can a hawk eat?", "What can hawks eat?"),
        ("What has to be done to renew a visa?", "What do I have to do to renew a visa?"),
        ("Which country does Chile border?", "Which country borders Chile?"),
        ("Who does a copywriter work with?", "Who works with a copywriter?"),
        ("Whom did Josephine marry?", "Who married Josephine?"),
    ],
)
def test_a_question_asking_for_the_same_role_agrees(a: str, b: str) -> None:
    """A rewording that keeps the role asked for, another verb, or a relation that holds both
    ways, agrees."""
    assert same_voice(extract(a), extract(b))
