"""The same words laid out otherwise: refused by the verifier, except a wider gap in a line."""

from __future__ import annotations

import pytest

from cache.verify import verify
from cache.verify_layout import same_layout


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("The capital of France is", "The capital of France is "),
        ("Q: Name a primary color.\nA:", "Q: Name a primary color.\nA: "),
        ("for i in range(3):\n    pass\nprint(i)", "for i in range(3):\n    pass\n    print(i)"),
        ("server:\n  port: 80\nhost: x", "server:\n  port: 80\n  host: x"),
        ("def f():\n    return 1", "def f(): return 1"),
        ("a\n\tb", "a\n    b"),
    ],
)
def test_the_same_words_laid_out_otherwise_are_refused(a: str, b: str) -> None:
    """Indentation, line breaks and a prompt's trailing space change what code, a document or
    a raw prompt is: refused as "layout", either way round."""
    assert verify(a, b).reason == "layout" and verify(b, a).reason == "layout"


def test_a_wider_gap_inside_a_line_is_the_same_text() -> None:
    """Only the width of a gap between words may differ."""
    assert verify("What is  the capital\nof France?", "What is the capital\nof  France?").ok


def test_same_layout_reads_lines_and_their_edges() -> None:
    """Line count, indentation and trailing whitespace decide; gaps inside a line do not."""
    assert same_layout("a  b\n  c", "a b\n  c")
    assert not same_layout("a b\n  c", "a b\n c")
    assert not same_layout("a b", "a b\n")
