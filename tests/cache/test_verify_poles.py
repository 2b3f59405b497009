"""Antonym poles signalled by words and by phrases."""

from __future__ import annotations

from cache.verify_poles import pole_phrases, poles_of


def _poles(text: str) -> frozenset[tuple[int, int]]:
    words = text.split()
    return poles_of(words, frozenset(words))


def test_opposite_words_take_opposite_poles_of_one_axis() -> None:
    """Import and export sit on one axis, at different poles."""
    (axis_a, pole_a), (axis_b, pole_b) = *_poles("import contacts"), *_poles("export contacts")
    assert axis_a == axis_b and pole_a != pole_b
    assert _poles("list contacts") == frozenset()


def test_a_phrase_marks_its_words_and_speaks_for_them() -> None:
    """Turning alerts on is one phrase: its pole, marked on "turn" and "on" only."""
    words = "turn the alerts on".split()
    found = pole_phrases(words)
    assert len(found) == 1 and next(iter(found.values())) == {0, 3}
    assert _poles("turn the alerts on") == frozenset(found)


def test_good_and_bad_are_opposite_poles_but_a_greeting_takes_no_side() -> None:
    """ "good" / "bad" sit on one axis; "good morning" and "for good" signal neither pole."""
    assert len(_poles("is tea good for sleep") | _poles("is tea bad for sleep")) == 2
    assert _poles("good morning is tea bad for sleep") == _poles("is tea bad for sleep")
    assert _poles("move abroad for good") == frozenset()
    assert _poles("ship baked goods") == frozenset()
    # a good day to do something is a judgement, not a greeting
    assert _poles("is it a good day to buy") != _poles("is it a day to buy")
