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
