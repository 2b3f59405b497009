"""Feature extraction for the verifier: numbers, entities, negations, scripts, languages."""

from __future__ import annotations

import pytest

from cache.verify_features import extract, stem, typed_out


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("orders over 30 days old", (("30", "d"),)),
        ("a $1,299.99 laptop", (("1299.99", "usd"),)),
        ("15% or 15 percent or 15 per cent", (("15", "%"),) * 3),
        ("16GB and 16 GB", (("16", "gb"),) * 2),
        ("a 300-mile drive", (("300", "mi"),)),
        ("at 7pm or 7 p.m. or 19:00", (("19:00", "clock"),) * 3),
        ("on March 3rd or the 3rd of March", (("03-03", "date"),) * 2),
        ("twenty-five minutes", (("25", "min"),)),
        ("two hundred people", (("200", ""),)),
        ("the 1st and 2nd", (("1", "ord"), ("2", "ord"))),
        ("Python 3.10", (("3.10", ""),)),
        ("IP 192.168.0.1", (("192.168.0.1", ""),)),
        ("COVID-19", (("19", ""),)),
        ("-5 degrees", (("-5", "deg"),)),
        ("for twelve (12) months", (("12", "mo"),)),  # legal style: once, with its unit
        ("five 5-dollar bills", (("5", ""), ("5", "usd"))),
    ],
)
def test_numbers(text: str, numbers: tuple[tuple[str, str], ...]) -> None:
    """Quantities are normalized to (value, canonical unit) and kept as a sorted multiset."""
    assert extract(text).numbers == tuple(sorted(numbers))


@pytest.mark.parametrize("text", ["enable 2FA", "an H100 GPU", "mp3 files", "error 0x8007", "v2"])
def test_identifiers_with_digits_are_not_numbers(text: str) -> None:
    """Digits glued to letters form an identifier (an entity), not a quantity."""
    features = extract(text)
    assert features.numbers == ()
    assert features.entities


def test_which_one_is_not_a_number() -> None:
    """The word "one" is too often a pronoun to count as a quantity."""
    assert extract("Which one is better?").numbers == ()


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("I don't know", 1),
        ("can't and won't", 2),
        ("cannot", 1),
        ("without a receipt", 1),
        ("non-refundable", 1),
        ("n'est pas", 2),
        ("keep the cat from going out", 1),
        ("keep the cat inside", 0),
    ],
)
def test_negations(text: str, count: int) -> None:
    """Negation cues are counted, contractions and elisions included."""
    assert extract(text).negations == count


def test_entities() -> None:
    """URLs, emails, acronyms, CamelCase, snake_case, dotted names, calls and versions."""
    text = (
        "Ask Bob at bob@x.io about the AWS bill, useEffect, my_var, os.path, run() and v2.3 "
        "per https://x.io/a."
    )
    assert extract(text).entities >= {
        "bob", "bob@x.io", "aws", "useeffect", "my_var", "os.path", "run", "v2.3", "https://x.io/a",
    }  # fmt: skip


def test_shouting_is_not_acronyms() -> None:
    """An all-caps text does not turn every word into an acronym."""
    assert extract("HOW DO I RESET MY PASSWORD").entities == frozenset()


def test_quoted_spans() -> None:
    """Quotes of every kind are collected as written: a quotation is verbatim, case too."""
    text = "Say \"Hello\" or 'Bye' or “Hi”, run `Foo()` and ```X = 1```"
    assert set(extract(text).quoted) == {"Hello", "Bye", "Hi", "Foo()", "X = 1"}


def test_japanese_is_kana_dominant() -> None:
    """Kanji within kana count as Japanese, not Chinese."""
    assert extract("最寄りの駅はどこですか").script == "kana"
    assert extract("如何更改我的密码").script == "han"


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("How do I reset my password?", "en"),
        ("¿Cómo restablezco mi contraseña?", "es"),
        ("Quels sont vos horaires d'ouverture ?", "fr"),
        ("Wie setze ich mein Passwort zurück?", "de"),
    ],
)
def test_languages(text: str, language: str) -> None:
    """Latin-script languages are told apart by their function words."""
    assert language in extract(text).languages


@pytest.mark.parametrize(
    ("word", "stemmed"),
    [("containers", "container"), ("running", "run"), ("stopped", "stop"), ("policies", "policy"),
     ("boxes", "box"), ("class", "class"), ("bus", "bus"), ("called", "call")],
)  # fmt: skip
def test_stem(word: str, stemmed: str) -> None:
    """The light stemmer strips common English suffixes only."""
    assert stem(word) == stemmed


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    "text",
    ["a" * 50_000 + "@", "a" * 50_000 + "_", "a." * 25_000, "```" + "a" * 50_000, "'a " * 20_000,
     "1," * 25_000, "a" * 50_000 + "()", "don't " * 10_000, "Hello World " * 5_000],
)  # fmt: skip
def test_adversarial_inputs_stay_linear(text: str) -> None:
    """Long hostile inputs finish quickly: no pattern backtracks quadratically."""
    extract.cache_clear()
    assert extract(text).n_words >= 0


@pytest.mark.parametrize(
    ("text", "written_out"),
    [
        ("Cant log in, I dont know why", "Can't log in, I don't know why"),
        ("It ISNT working and WONT start", "It ISN'T working and WON'T start"),
        (
            "mac and cheese w/ breadcrumbs, W/O eggs",
            "mac and cheese with breadcrumbs, without eggs",
        ),
        ("chmod a/w/x or w/x", "chmod a/w/x or w/x"),
        ("I want a can of paint", "I want a can of paint"),
    ],
)
def test_shorthand_is_written_out(text: str, written_out: str) -> None:
    """Contractions typed without an apostrophe and "w/", "w/o"; paths and words stay."""
    assert typed_out(text) == written_out


def test_a_read_only_compound_is_no_only() -> None:
    """ "read-only memory" asks about no exclusive "only"; "only read" does."""
    assert extract("Is the share read-only?").scope == frozenset()
    assert extract("Is the share only read-only?").scope == frozenset({"only"})


def test_a_name_after_a_title_is_a_name() -> None:
    """The period of "Mr." or "Dr." ends no sentence: the name after it is an entity."""
    entities = extract("Write to our client, Mr. Mensah, and copy Dr. Okafor. Thanks.").entities
    assert {"mensah", "okafor"} <= entities
    assert "thanks" not in entities
