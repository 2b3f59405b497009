"""Pleasantries and generic frames at a request's edges are filler; inside it they are not."""

from __future__ import annotations

from cache.verify import verify
from cache.verify_frames import framed


def test_leading_and_trailing_pleasantries_are_framing() -> None:
    """Greetings and hedges before, thanks after: their positions, and nothing between."""
    seq = "hi i was wondering how do i reset my router thanks in advance".split()
    assert framed(seq) == frozenset({0, 1, 2, 3, 10, 11, 12})


def test_a_generic_one_and_go_about_are_framing() -> None:
    """ "how should one clean" and "go about filing" frame the verb that follows."""
    assert framed("how should one clean a skillet".split()) == frozenset({2})
    assert framed("how do i go about filing taxes".split()) == frozenset({3, 4})
    assert framed("how do i go about it".split()) == frozenset()


def test_a_request_with_pleasantries_is_the_same_request() -> None:
    """A greeting, a hedge or thanks added to a short question does not change it."""
    for a, b in (
        (
            "I was wondering, what causes the northern lights in the sky?",
            "What causes the northern lights in the sky?",
        ),
        (
            "How do I change a bike's inner tube? Any help appreciated.",
            "How do I change a bike's inner tube?",
        ),
        ("Kindly list the main causes of World War I.", "List the main causes of World War I."),
        ("How should one clean a cast iron skillet?", "How do I clean a cast iron skillet?"),
    ):
        assert verify(a, b).ok, (a, b)


def test_the_same_words_inside_the_request_are_the_task() -> None:
    """ "thank you" inside "write a thank you note" is what the note is: not filler."""
    for a, b in (
        ("Write a thank you note to my boss", "Write a note to my boss"),
        ("Write a thank-you email to the team", "Write an email to the team"),
    ):
        assert not verify(a, b).ok, (a, b)
