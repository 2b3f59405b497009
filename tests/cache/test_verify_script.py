"""The coarse writing system of letters and texts."""

from __future__ import annotations

import pytest

from cache.verify_script import dominant_script, script_of


@pytest.mark.parametrize(
    ("char", "script"),
    [("a", "latin"), ("é", "latin"), ("ж", "cyrillic"), ("汉", "han"), ("か", "kana"),
     ("한", "hangul"), ("ع", "arabic"), ("α", "greek")],
)  # fmt: skip
def test_script_of(char: str, script: str) -> None:
    """Letters map to coarse writing systems."""
    assert script_of(char) == script


def test_dominant_script_counts_letters_and_reads_kanji_with_kana_as_japanese() -> None:
    """The most frequent script wins; kanji among kana are Japanese; no letters is latin."""
    assert dominant_script("Привет, how are you, друг мой") == "cyrillic"
    assert dominant_script("最寄りの駅はどこですか") == "kana"
    assert dominant_script("如何更改我的密码") == "han"
    assert dominant_script("1234 ...") == "latin"
