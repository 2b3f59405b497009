"""Tests for cache.verify_forms: which endings leave a word itself, and unspaced scripts."""

from __future__ import annotations

import pytest

from cache.verify import verify
from cache.verify_forms import is_form, unspaced


@pytest.mark.parametrize(
    ("short", "long"),
    [
        ("bottle", "bottles"),
        ("delete", "deleted"),
        ("stream", "streaming"),
        ("weekend", "weekends"),
        ("smooth", "smoothly"),
        ("quarter", "quarterly"),
        ("stable", "stableness"),
        ("connect", "connection"),
        ("abbrev", "abbreviation"),
        ("pentagon", "pentagone"),
    ],
)
def test_inflections_and_derivations_that_keep_the_topic_are_forms(short: str, long: str) -> None:
    """Number and tense, an adverb, a noun of the act, a spelling with an "e", a clipping."""
    assert is_form(short, long)


@pytest.mark.parametrize(
    ("short", "long"),
    [
        ("scan", "scanner"),
        ("garden", "gardeners"),
        ("compute", "computer"),
        ("invest", "investor"),
        ("mast", "mastery"),
        ("pant", "panty"),
        ("govern", "government"),
        ("apart", "apartments"),
        ("mill", "million"),
        ("found", "foundation"),
        ("near", "nearly"),
        ("plan", "plane"),
        ("stand", "standard"),
        ("piano", "pianist"),
    ],
)
def test_endings_that_make_another_word_are_not_forms(short: str, long: str) -> None:
    """An agent or a tool, "-y", "-ment", "-ist", and derivations on words too short to
    carry them safely name another thing."""
    assert not is_form(short, long)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("How much does a scanner cost?", "How much does a scan cost?"),
        ("How many gardeners work in the park?", "How many gardens are in the park?"),
        ("Where can I buy a good mixer?", "Where can I buy a good mix?"),
        ("What's the best paint for a bathroom?", "What's the best painter for a bathroom?"),
    ],
)
def test_an_agent_noun_is_another_question(a: str, b: str) -> None:
    """The word for what does a thing ("scanner") is not the thing ("scan")."""
    assert not verify(a, b).ok


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("How do I delete my account?", "How do I delete my accounts?"),
        ("Why was my order cancelled?", "Why did my order cancel?"),
    ],
)
def test_inflected_forms_still_pass(a: str, b: str) -> None:
    """A plural or a tense is the same question."""
    assert verify(a, b).ok


def test_unspaced_scripts() -> None:
    """Chinese, Japanese and Thai runs are unspaced; Latin, Cyrillic and Korean are not."""
    assert unspaced("我想退货")
    assert unspaced("ありがとう")
    assert unspaced("สวัสดี")
    assert not unspaced("colour")
    assert not unspaced("привет")
    assert not unspaced("안녕하세요")


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("请问这个快递什么时候能到北京", "请问这个快递什么时候能到上海"),
        ("帮我把这封邮件翻译成德文", "帮我把这封邮件翻译成俄文"),
        ("这件衣服可以退吗", "这件衣服可以换吗"),
    ],
)
def test_a_change_at_the_end_of_chinese_text_is_a_change(a: str, b: str) -> None:
    """A long shared start is no shared root when the whole sentence is one "word"."""
    assert not verify(a, b).ok
