"""The verifier's word lists are consistent."""

from __future__ import annotations

from cache.verify_lexicon import ANTONYM_AXES, PHRASES, axis_of, build_pole_index, inflections


def test_no_word_sits_on_two_poles_of_one_axis() -> None:
    """No word or inflection signals two poles of one axis (a text would contradict itself)."""
    for word, pairs in build_pole_index().items():
        axes = [axis for axis, _ in pairs]
        assert len(axes) == len(set(axes)), (word, pairs)


def test_phrases_point_at_existing_axes_and_poles() -> None:
    """Every particle-verb phrase names an axis and a pole that exist."""
    for _, _, base, pole in PHRASES:
        assert pole < len(ANTONYM_AXES[axis_of(base)])


def test_inflections() -> None:
    """Inflections cover -s, -ed, -ing, e-drop, y->ies and consonant doubling."""
    assert {"enables", "enabled", "enabling"} <= inflections("enable")
    assert {"stops", "stopped", "stopping"} <= inflections("stop")
    assert {"denies", "denied"} <= inflections("deny")
    assert {"activation"} <= inflections("activate")
