"""The candidate verifier: each check, tricky inputs, and the counters."""

from __future__ import annotations

import pytest

from cache.verify import ACCEPT, DEFAULT_CHECKS, REASONS, Check, Verdict, Verifier, verify
from cache.verify_features import extract


def _reason(a: str, b: str) -> str | None:
    return verify(a, b).reason


def test_identical_texts_pass() -> None:
    """A stored prompt equal to the query up to the width of a gap is accepted (chat text is
    trimmed before; a raw prompt's trailing space is another prompt, see below)."""
    assert verify("How do I reset my password?", "How do I  reset my password?") == ACCEPT


def test_every_check_has_a_known_reason() -> None:
    """Each default check names a reason the metrics know in advance ("meaning" is the model's
    verdict on rewritten slots, see test_verify_slot; "layout" the same words laid out
    otherwise)."""
    assert [c.name for c in DEFAULT_CHECKS] == [
        r for r in REASONS if r not in ("meaning", "layout")
    ]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("How do I reset my password?", "I forgot my password, how can I reset it?"),
        ("How do I enable 2FA?", "How do I turn on 2FA?"),
        ("How do I turn off notifications?", "How can I disable notifications?"),
        ("What's 15% of 80?", "How much is 15 percent of 80?"),
        ("Is 16GB of RAM enough for video editing?", "Is 16 GB RAM sufficient for editing videos?"),
        ("How do I book a table for two?", "Can I make a reservation for 2 people?"),
        (
            "How do I enable two-factor authentication on my account?",
            "How can I turn on 2FA for my account?",
        ),
        ("Thanks, I can't log in", "Thanks, I cannot log in"),
        ("What's the best laptop under $1000?", "Which laptop is best for less than 1000 dollars?"),
        ("Why can't I log in?", "I'm unable to log in, why?"),
        ("How do I install Docker on Ubuntu?", "how do i install docker on ubuntu"),
        ("Translate 'thank you' into Spanish.", "How do you say 'thank you' in Spanish?"),
        ("What time does the store open on Sundays?", "When does the store open on Sunday?"),
        (
            "How do I get from the airport to the hotel?",
            "How do I get to the hotel from the airport?",
        ),
        (
            "How do I stop my laptop from going to sleep?",
            "How can I prevent my laptop from sleeping?",
        ),
        ("Is there a good way to learn Go?", "Is there a way to learn Go?"),
        ("Good afternoon! Is soda bad for kids?", "Is soda bad for kids?"),
        ("How do I fill in a visa form?", "How do I fill out a visa form?"),
    ],
)
def test_paraphrases_pass(a: str, b: str) -> None:
    """Rewordings that keep numbers, polarity, entities and direction are accepted."""
    assert verify(a, b) == ACCEPT
    assert verify(b, a) == ACCEPT


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("What is 15% of 200?", "What is 25% of 200?"),
        ("How do I install Python 3.11?", "How do I install Python 3.12?"),
        ("Book a table for 2 at 7pm.", "Book a table for 4 at 7pm."),
        ("Give me three ideas.", "Give me five ideas."),
        ("Can I get a refund within 30 days?", "Can I get a refund within thirty-one days?"),
        ("Is 8GB enough?", "Is 8TB enough?"),
        ("Set an alarm for 6:30 am.", "Set an alarm for 7:30 am."),
        ("Convert $50 to yen.", "Convert €50 to yen."),
        ("Is 38.5°C a fever?", "Is 37.5°C a fever?"),
        ("What is 2 + 2?", "What is 2 + 3?"),
        ("How long is half an hour in seconds?", "How long is an hour in seconds?"),
        ("How many calories in half a cup of rice?", "How many calories in a quarter cup?"),
        ("What is double 35?", "What is 35?"),
        ("How do I triple a recipe?", "How do I double a recipe?"),
        ("Can I cancel within a week?", "Can I cancel within a month?"),
        ("Can I bring a 2nd bag on the plane?", "Can I bring a 3rd bag on the plane?"),
    ],
)
def test_numbers_must_match(a: str, b: str) -> None:
    """Different quantities, units or currencies reject the candidate."""
    assert _reason(a, b) == "number"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("The version is 3.10.", "The version is 3.1."),
        ("Is 1,000 a lot?", "Is 1000 a lot?"),
        ("Wait 30 days.", "Wait thirty days."),
        ("Is 05 the same?", "Is 5 the same?"),
        ("Can I return it after a fortnight?", "Can I return it after two weeks?"),
        ("Can I cancel within an hour?", "Can I cancel within 60 minutes?"),
        ("Does the 1st floor have a bathroom?", "Does the first floor have a bathroom?"),
        ("Can I bring a 2nd bag on the plane?", "Can I bring a second bag on the plane?"),
        ("How much is 1 bitcoin worth?", "How much is one bitcoin worth?"),
    ],
)
def test_number_normalization(a: str, b: str) -> None:
    """Thousands separators, spelled numbers, leading zeros, "a" unit, a fortnight and the
    ordinals and "one" written in words compare equal; 3.10 != 3.1."""
    expected = "number" if "3.1" in a else None
    assert _reason(a, b) == expected


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Why is my code working?", "Why is my code not working?"),
        ("Which browsers support WebGPU?", "Which browsers don't support WebGPU?"),
        ("Can I fly with an ID?", "Can I fly without an ID?"),
        ("My order arrived.", "My order never arrived."),
        ("Which medicines can be taken with alcohol?", "Which cannot be taken with alcohol?"),
        ("Is this refundable?", "Is this non-refundable?"),
        ("How do I keep my cat indoors?", "How do I keep my cat from going indoors?"),
        ("¿Puedo pagar con tarjeta?", "¿No puedo pagar con tarjeta?"),
        ("Kann ich mit Karte zahlen?", "Kann ich nicht mit Karte zahlen?"),
    ],
)
def test_negation_polarity_must_match(a: str, b: str) -> None:
    """A negation on one side only rejects the candidate, in several languages."""
    assert _reason(a, b) == "negation"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("How do I enable 2FA?", "How do I disable 2FA?"),
        ("How do I turn on location?", "How do I turn off location?"),
        ("How do I turn the lights on?", "How do I turn the lights off?"),
        ("Sort in ascending order.", "Sort in descending order."),
        ("Orders over 30 days old", "Orders under 30 days old"),
        ("Find items costing more than $5.", "Find items costing less than $5."),
        ("Should I eat before training?", "Should I eat after training?"),
        ("How do I open the port?", "How do I close the port?"),
        ("Opened files", "Closed files"),
        ("How do I upload files?", "How do I download files?"),
        ("Encrypting a disk", "Decrypting a disk"),
        ("Get the first element.", "Get the last element."),
        ("How do I log in?", "How do I log out?"),
        ("Why does it return true?", "Why does it return false?"),
        ("Is now the time to buy?", "Is now the time to sell?"),
        ("Open on Mondays?", "Open on Tuesdays?"),
        ("How do I merge two PDFs?", "How do I split a PDF into two?"),
        ("Is red wine good for your liver?", "Is red wine bad for your liver?"),
        ("Is walking barefoot healthy?", "Is walking barefoot unhealthy?"),
        ("Is vaping harmless?", "Is vaping harmful?"),
        ("Is rowing better than swimming?", "Is rowing worse than swimming?"),
        ("How do I zoom in on a photo?", "How do I zoom out on a photo?"),
        ("How do I climb in to the loft?", "How do I climb out of the loft?"),
    ],
)
def test_antonyms_reject(a: str, b: str) -> None:
    """Opposite poles of a curated axis reject, matched across inflections."""
    assert _reason(a, b) == "antonym"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("How do I install Docker on Ubuntu?", "How do I install Docker on Windows?"),
        ("How do I use useEffect?", "How do I use useState?"),
        ("What is a KeyError?", "What is a TypeError?"),
        ("Mail alice@example.com", "Mail bob@example.com"),
        ("Summarize https://a.example/foo", "Summarize https://a.example/bar"),
        ("What changed in Django v4.2?", "What changed in Django v5.0?"),
        ("How do I set up 2FA?", "How do I set up MFA?"),
        ("Call os.path.join", "Call os.path.split"),
        ("Why does my_func fail?", "Why does my_other_func fail?"),
        ("How do I say 谢谢 in English?", "How do I say 你好 in English?"),
        ("Is C++ hard to learn?", "Is C hard to learn?"),
        ("What is Next.js used for?", "What is Nuxt.js used for?"),
        ("Why is my Wi-Fi so slow?", "Why is my Bluetooth so slow?"),
    ],
)
def test_entities_must_agree(a: str, b: str) -> None:
    """Names, acronyms, identifiers, URLs, emails, versions and foreign words must agree."""
    assert _reason(a, b) == "entity"


def test_entity_case_and_plural_are_tolerated() -> None:
    """An entity matches its lowercase or plural form in the other text."""
    assert verify("Why is my Docker container slow?", "why is my docker container slow") == ACCEPT
    assert verify("How do I version REST APIs?", "How do I version a REST API?") == ACCEPT


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("How do I install NodeJS on Ubuntu?", "How do I install Node.js on Ubuntu?"),
        ("Why is my Wi-Fi so slow?", "Why is my WiFi so slow?"),
        ("What's new in macOS Sonoma?", "What is new in Mac OS Sonoma?"),
        ("Is Pay Pal safe for shopping?", "Is PayPal safe for shopping?"),
    ],
)
def test_a_name_written_with_other_separators_is_the_same_name(a: str, b: str) -> None:
    """Dots, hyphens and spaces inside a name may come and go ("Node.js" / "NodeJS")."""
    assert _reason(a, b) != "entity"
    assert _reason(b, a) != "entity"


def test_sentence_start_and_title_case_are_not_entities() -> None:
    """A capital opening a sentence, or a Title Case text, does not make an entity."""
    assert verify("Docker keeps restarting. Why?", "Why does docker keep restarting?").ok
    assert verify("How To Reset My Password", "how to reset my password").ok


def test_units_after_numbers_are_not_acronyms() -> None:
    """The GB of "16 GB" is a unit, not an entity; "2FA" is an entity, not the number 2."""
    assert verify("Is 16 GB enough?", "Is 16GB enough?").ok
    assert _reason("Enable 2FA now", "Enable 2 factors now") == "number"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ('What does "foo bar" mean?', 'What does "foo baz" mean?'),
        ("Explain `map`", "Explain `filter`"),
        ("Fix ```x = 1```", "Fix ```x = 2```"),
    ],
)
def test_quoted_text_must_match(a: str, b: str) -> None:
    """Quoted strings and code spans must be identical."""
    assert _reason(a, b) == "quoted"


def test_apostrophes_are_not_quotes() -> None:
    """Contractions and possessives do not open a quoted span."""
    assert verify("I don't know the users' names", "I don't know the users' names!").ok


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Flights from London to Paris", "Flights from Paris to London"),
        ("Is Python faster than Go?", "Is Go faster than Python?"),
        ("Convert a list to a string.", "Convert a string to a list."),
        ("Should I stretch before running?", "Should I run before stretching?"),
    ],
)
def test_swapped_direction_rejects(a: str, b: str) -> None:
    """The same words in reversed roles around to/from/than/before reject."""
    assert _reason(a, b) == "order"


def test_a_pair_held_both_ways_is_no_reversal() -> None:
    """A relation one text holds in both directions does not make a reversal of the other."""
    both = "Convert a list to a string, or a string to a list."
    assert _reason(both, "Convert a string to a list, or a list to a string!") != "order"
    assert _reason(both, "Convert a string to a list.") != "order"
    assert _reason("Convert a list to a string.", "Convert a string to a list.") == "order"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("How do I reset my password?", "¿Cómo restablezco mi contraseña?"),
        ("What time is it?", "Quelle heure est-il ?"),
        ("How do I change my password?", "如何更改我的密码？"),
        ("How do I delete my account?", "Как удалить мой аккаунт?"),
    ],
)
def test_other_language_rejects(a: str, b: str) -> None:
    """A different script or a different Latin-script language rejects."""
    assert _reason(a, b) == "language"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("How do I implement a stack in Python?", "How do I implement a queue in Python?"),
        ("What are the symptoms of the flu?", "What are the symptoms of a cold?"),
        ("Classify the sentiment: great phone", "Classify the sentiment: awful phone"),
    ],
)
def test_swapped_slot_rejects(a: str, b: str) -> None:
    """One template with one slot filled differently rejects."""
    assert _reason(a, b) == "slot"


def test_synonym_slot_passes() -> None:
    """A slot filled with a synonym or an inflection is a rewording, not a new question."""
    assert verify("How do I delete my account?", "How do I remove my account?").ok
    assert verify("How do I change my email?", "How do I update my email?").ok
    assert verify("How do I sort a dict?", "How do I sort a dictionary?").ok


def test_long_additions_reject() -> None:
    """A candidate that adds many requirements to a short query is not the same question."""
    long = "Write a poem about the sea in the voice of an old sailor who misses his home, "
    long += "his family and the smell of salt, with a rhyme scheme and a sad ending"
    assert _reason("Write a poem about the sea", long) == "slot"  # narrowed, first
    length = next(check for check in DEFAULT_CHECKS if check.name == "length")
    assert not length.agrees(extract("Write a poem about the sea"), extract(long))


def test_custom_checks_run_in_order() -> None:
    """A verifier runs the checks it is given, and the first failure names the verdict."""
    checks = [Check("first", lambda a, b: True), Check("second", lambda a, b: False)]
    assert verify("a b", "a c", checks) == Verdict(ok=False, reason="second")


def test_stats_count_checked_passed_and_reasons() -> None:
    """VerifierStats counts every verdict, and exposes every known reason as a flat counter."""
    verifier = Verifier()
    verifier.verify("How do I enable 2FA?", "How do I disable 2FA?")
    verifier.verify("What is 15% of 200?", "What is 25% of 200?")
    verifier.verify("How do I reset my password?", "How can I reset my password?")
    snapshot = verifier.stats.snapshot()
    assert snapshot["checked"] == 3
    assert snapshot["passed"] == 1
    assert snapshot["rejected_antonym"] == 1
    assert snapshot["rejected_number"] == 1
    assert snapshot["rejected_entity"] == 0
    assert {f"rejected_{r}" for r in REASONS} <= set(snapshot)


def test_empty_and_punctuation_only_texts() -> None:
    """Degenerate inputs do not raise."""
    assert verify("", "").ok
    assert verify("?!", "...").ok
    assert isinstance(verify("", "How do I reset my password?"), Verdict)


@pytest.mark.timeout(20)
def test_long_prompts_verify_quickly() -> None:
    """Long, nearly identical prompts are compared quickly, and one swapped word still shows."""
    body = " ".join(f"item{i % 97} and some filler text" for i in range(5_000))
    assert verify(body + " alpha", body + " beta").reason == "slot"
    assert verify(body + " delete", body + " remove").ok


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Can I cancel if I get a refund?", "Can I get a refund if I cancel?"),
        ("Should I sell the car if I buy the house?", "Should I buy the house if I sell the car?"),
        ("Ship the order and drop the invoice.", "Drop the order and ship the invoice."),
    ],
)
def test_words_moved_to_other_clauses_reject(a: str, b: str) -> None:
    """The same words paired differently across clauses changed roles: rejected as roles."""
    assert _reason(a, b) == "roles"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Can I get a refund if I cancel?", "If I cancel, can I get a refund?"),
        ("Ship the order and drop the invoice.", "Drop the invoice and ship the order."),
        ("There's a fee of 49.99 on my bill.", "There is a 49.99 fee on my bill."),
        ("Post it as a tweet-length note.", "Post it in the length of a tweet, as a note."),
    ],
)
def test_clauses_in_another_order_or_split_are_no_move(a: str, b: str) -> None:
    """Whole clauses reordered, a clause split off, or a decimal point: the same roles."""
    assert _reason(a, b) != "roles"


def test_a_name_spelled_out_is_its_initialism() -> None:
    """ "New York City" is "NYC" and "pull request" is "PR"; another name is still another."""
    nyc = "What's the weather in NYC tomorrow?"
    assert verify(nyc, "What's the weather in New York City tomorrow?").ok
    assert _reason(nyc, "What's the weather in New Jersey tomorrow?") == "entity"
    assert verify("Open a PR on GitHub.", "Open a pull request on GitHub.").ok
    assert _reason("Open a PR on GitHub.", "Open a pull request on GitLab.") == "entity"


def test_offering_is_filler() -> None:
    """ "Do you offer X" asks whether there is X: "offer" adds nothing; X still decides."""
    assert verify("Do you ship internationally?", "Do you offer international shipping?").ok
    assert not verify("Do you offer gift cards?", "Do you offer gift wrapping?").ok


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("Is the budget 10k?", "Is the budget 10,000?", True),
        ("Does it take 1 hr?", "Does it take one hour?", True),
        ("Is it in the 3rd week?", "Is it in the third week?", True),
        ("Is it on the twenty fifth?", "Is it on the 25th?", True),
        ("Do I get twenty one days?", "Do I get 21 days?", True),
        ("Is it in the 3rd week?", "Is it in the fourth week?", False),
        ("Does it take one hour?", "Does it take two hours?", False),
        ("Can I get 10k miles?", "Can I get 100,000 miles?", False),
    ],
)
def test_numbers_written_other_ways_are_the_same_quantity(a: str, b: str, same: bool) -> None:
    """Thousands as "k", "one" before a unit, spelled-out ordinals and compounds."""
    assert (verify(a, b).reason != "number") is same


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("Book a table for 7pm tonight", "Book a table for 19:00 tonight", True),
        ("The meeting is at 9:00 am", "The meeting is at 9am", True),
        ("The meeting is at 9.30 a.m.", "The meeting is at 9:30", True),
        ("Set an alarm for noon", "Set an alarm for 12pm", True),
        ("Is it open at midnight?", "Is it open at 12am?", True),
        ("The appointment is on March 3rd", "The appointment is on 3 March", True),
        ("Meet me on the 3rd of March", "Meet me on March 3", True),
        ("Book a table for 7pm tonight", "Book a table for 8pm tonight", False),
        ("The meeting is at 9am", "The meeting is at 9pm", False),
        ("Dinner at 7:30", "Dinner at 7:30pm", False),
        ("Set an alarm for noon", "Set an alarm for midnight", False),
        ("The appointment is on March 3rd", "The appointment is on March 4th", False),
        ("The appointment is on 3 March", "The appointment is on 3 April", False),
        ("Report for 2024-03-01", "Report for 2023-03-01", False),
        ("I need 3 tickets for May 5", "I need 5 tickets for May 3", False),
    ],
)
def test_clock_times_and_dates_are_compared_as_such(a: str, b: str, same: bool) -> None:
    """A time of day is the same in 12- and 24-hour writing; a day of a month in either order."""
    assert verify(a, b).ok is same


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("The app fails to start", "The app doesn't start", True),
        ("I forgot to pay the invoice", "I did not pay the invoice", True),
        ("The app starts", "The app fails to start", False),
        ("The backup ran", "The backup failed to run", False),
        ("I paid the invoice", "I forgot to pay the invoice", False),
    ],
)
def test_failing_or_forgetting_to_do_is_not_doing(a: str, b: str, same: bool) -> None:
    """ "fails to X" and "forgot to X" negate X, like "does not X"."""
    assert (verify(a, b).reason != "negation") is same


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("List the files", "List the hidden files", False),
        ("How do I cancel my order?", "How do I cancel my recurring order?", False),
        ("Find the max of an array", "Find the max of a sorted array", False),
        ("Can I bring my dog?", "Can I bring my big dog?", False),
        ("Show me trains to Lyon", "Show me direct trains to Lyon", False),
        ("How long do I steam rice?", "How long do I steam rice in a pressure cooker?", False),
        ("Can I get a refund?", "Can I get a refund if I opened the box?", False),
        ("What is the toll on bridges?", "What is the toll on bridges for motorbikes?", False),
        ("Is there a free trial?", "Do you offer a free trial period?", True),
        (
            "Can I return an item after 30 days?",
            "Is it possible to return something after 30 days?",
            True,
        ),
        ("How do I reverse a list in Python?", "What's the way to reverse a Python list?", True),
    ],
)
def test_words_added_to_narrow_the_question_reject(a: str, b: str, same: bool) -> None:
    """A qualifier before a noun ("my [recurring] order") or a restricting phrase ("[if I
    opened the box]") added to a text otherwise the same asks about less; other additions,
    or additions among other changes, reword."""
    assert (verify(a, b).reason != "slot") is same


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("How do I check in online?", "How do I check out online?"),
        ("Is the product in stock?", "Is the product out of stock?"),
        ("Is it in stock?", "Is it sold out?"),
    ],
)
def test_check_in_out_and_stock_are_opposite_poles(a: str, b: str) -> None:
    """Checking in is not checking out; in stock is not out of stock (or sold out)."""
    assert verify(a, b).reason == "antonym"


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("Can I substitute butter for oil?", "Can I substitute oil for butter?", False),
        ("Divide 10 by 2", "Divide 2 by 10", False),
        (
            "Does coffee have more caffeine than tea?",
            "Does tea have more caffeine than coffee?",
            False,
        ),
        ("Translate to Traditional Chinese", "Translate to Chinese Traditional", True),
        (
            "How do I get from the airport to the hotel?",
            "How do I get to the hotel from the airport?",
            True,
        ),
    ],
)
def test_two_words_trading_places_in_a_frame_swap_roles(a: str, b: str, same: bool) -> None:
    """Two words apart trading places while every other word stays swap their roles; a moved
    phrase or a reordered name does not."""
    assert (verify(a, b).reason != "roles") is same


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("Orders with more than 3 items", "Orders with at least 3 items", False),
        ("Orders with at most 3 items", "Orders with less than 3 items", False),
        ("Orders with more than 3 items", "Orders with 3 or more items", False),
        ("Orders with at least 3 items", "Orders with 3 or more items", True),
        ("Orders with at most 3 items", "Orders with 3 or fewer items", True),
        ("Is it more than 5 km?", "Is it over 5 km?", True),
    ],
)
def test_bounds_that_include_their_number_differ_from_those_that_do_not(
    a: str, b: str, same: bool
) -> None:
    """ "at least 3" (3 or more) includes 3, "more than 3" does not."""
    assert (verify(a, b).reason != "antonym") is same


def test_a_pound_of_weight_is_a_pound() -> None:
    """ "5 lb" and "5 pound" weigh the same; "5 lb" and "5 kg" do not."""
    assert verify(
        "How long should I cook a 5 lb roast?", "How long should I cook a 5 pound roast?"
    ).ok
    assert not verify(
        "How long should I cook a 5 lb roast?", "How long should I cook a 5 kg roast?"
    ).ok


def test_past_and_future_are_other_questions() -> None:
    """ "What did X announce" asks about the past, "what will X announce" about the future."""
    assert not verify("What did the Fed announce?", "What will the Fed announce?").ok
    assert verify("What did the Fed announce?", "What was announced by the Fed?").ok


def test_languages_named_with_symbols_are_not_their_letter() -> None:
    """ "C++" and "C#" are words of their own, not "C"."""
    assert not verify("How do I compile C code?", "How do I compile C++ code?").ok
    assert not verify("Is C# faster than Java?", "Is C faster than Java?").ok
    assert verify("Write hello world in C++", "Write hello world in c++").ok


def test_lengths_of_time_distance_and_mass_compare_in_one_unit() -> None:
    """ "a 5-second timeout" is "a 5000 ms timeout"; 500 ms is not, a month is not 30 days,
    and a version "1.10" is not "1.1"."""
    assert verify("Fetch JSON with a 5-second timeout", "Fetch JSON with a 5000 ms timeout").ok
    assert verify("Book a 90 minute meeting", "Book a 1.5 hour meeting").ok
    assert verify("Set a 5 second timeout", "Set a 500 ms timeout").reason == "number"
    assert verify("Plan a 2 months trip", "Plan a 60 days trip").reason == "number"
    assert verify("What changed in version 1.10?", "What changed in version 1.1?").reason == (
        "number"
    )
    swapped = (
        "Set the timeout to 5 min and the delay to 60 s",
        "Set the timeout to 1 min and the delay to 300 s",
    )
    assert verify(*swapped).reason == "number"  # the same values in other roles


def test_a_number_restated_in_digits_counts_once_but_a_count_of_quantities_stays() -> None:
    """ "twelve (12) months" is twelve months; "five 5-dollar bills" are five bills."""
    assert verify("Summarize: fees for twelve (12) months", "Summarize: fees for 12 months").ok
    assert verify("I need five 5-dollar bills", "I need a 5-dollar bill").reason == "number"


def test_a_reason_is_not_a_concession() -> None:
    """ "because" / "although" are opposite poles; "keep returning" is still "constantly
    return" (keep is not an opposite of return)."""
    a = "Reply to a customer who is unhappy because the rug is not the shade shown"
    b = "Reply to a customer who is unhappy although the rug is not the shade shown"
    assert verify(a, b).reason == "antonym"
    assert (
        verify(
            "Why does my API keep returning 500 errors?",
            "Why does my API constantly return 500 errors?",
        ).reason
        != "antonym"
    )


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Write a birthday poem for Julian", "Write a birthday poem for Julia"),
        ("Draft an email to Terry about the meeting", "Write an email to Terri about the meeting"),
        ("Do Nigerian citizens need a visa to visit France?", "Do citizens of Niger need a visa?"),
        ("How large was the Roman army?", "How large was the Romanian army?"),
        ("Select the firstName column", "Select the first name and last name columns"),
        ("Sort the users by lastName", "Sort the users by last name then first name"),
        ("Yes or no: more than 5 people attended?", "True or false: at most 5 people attended?"),
        (
            "Recommend a laptop with at least 16 GB of RAM for at most $1000.",
            "Recommend a laptop with no more than 16 GB of RAM for no less than $1000.",
        ),
        ("How many mm is 5/16 inch?", "How many mm is 5/16 cm?"),
        ("Give the child 5/15 mg per kg", "Give the child 5/15 g per kg"),
        ("Set the timer for 5/16 hours", "Set the timer for 5/16 minutes"),
        (
            "Children: 1. Adults: 2. How much are the tickets?",
            "Adults: 1. Children: 2. How much are the tickets?",
        ),
    ],
)
def test_different_requests_a_review_found_stay_rejected(a: str, b: str) -> None:
    """Different requests that looser rules (demonyms, joined identifiers, negated bounds, any
    slashed pair as a date, any marker as a list) once served: each is refused both ways, by
    the rules, with nothing left to the model."""
    for query, candidate in ((a, b), (b, a)):
        verdict = verify(query, candidate)
        assert not verdict.ok and not verdict.pending, verdict
