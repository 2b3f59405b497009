"""Templated prompts: the word alignment, the changed places, and the slot decisions."""

from __future__ import annotations

import pytest

from cache.keys import EMBED_HEAD_WORDS, EMBED_TAIL_WORDS, embedded_text
from cache.slot import MAX_ALIGN_WORDS, Region, align, slot_range, spans, words_of
from cache.verify import verify
from cache.verify_rewrite import toward
from cache.verify_slot import SWAP_SIMILARITY, judge
from cache.verify_words import interchangeable

TEMPLATE = (
    "You are Nora, the support assistant of Northwind Outfitters, an online store for outdoor "
    "clothing and camping gear. Answer warmly and briefly, never invent order details, and "
    "offer a human agent when the policy does not allow a request. Keep answers short.\n\n"
    "Customer message: {}"
)
RAG = (
    "Answer using only the context.\n\nContext:\n"
    + " ".join(f"Paragraph {i} says that rule number {i} applies to members." for i in range(40))
    + "\n\nQuestion: {}"
)

TRANSLATE = (
    "You are a professional translator for a travel company. Keep the tone, keep names and "
    "numbers as they are, and do not add explanations. Translate the customer's message "
    "below into {}.\n\nMessage: {}"
)


def _t(slot: str, template: str = TEMPLATE) -> str:
    return template.format(slot)


def test_words_spell_out_contractions_and_keep_offsets() -> None:
    """Contractions become two words (so they align with the spelled form), offsets point back."""
    words = words_of("I don't know, let's see what I've got")
    assert words.words == ("i", "do", "not", "know", "let", "us", "see", "what", "i", "have", "got")
    assert words.text[words.starts[2] : words.ends[2]] == "don't"


def test_words_record_initialisms_and_clause_breaks() -> None:
    """Tokens written as initialisms are kept (lowercase); a clause opens after '.', ':', '\\n'."""
    words = words_of("Enable 2FA for the API. Then: log in")
    assert words.initialisms == {"2fa", "api"}
    assert {words.words[i] for i in words.breaks} == {"then", "log"}


def test_align_trims_common_prefix_and_suffix() -> None:
    """A template with one changed slot leaves one region; shared words are counted."""
    a = tuple("the long template asks about a stack today".split())
    b = tuple("the long template asks about a queue today".split())
    found = align(a, b)
    assert found.regions == (Region(6, 7, 6, 7),)
    assert found.shared == 7
    assert found.shared_ratio == pytest.approx(7 / 8)


def test_align_finds_several_regions_and_insertions() -> None:
    """Changes in several places are separate regions; an insertion has an empty side."""
    a = tuple("a b c d e f g".split())
    b = tuple("a x c d e f g h".split())
    assert align(a, b).regions == (Region(1, 2, 1, 2), Region(7, 7, 7, 8))


def test_align_identical_and_huge_middles() -> None:
    """Identical texts have no region; a middle too long to diff is one region."""
    same = tuple("a b c".split())
    assert align(same, same).regions == ()
    a = tuple(f"w{i}" for i in range(MAX_ALIGN_WORDS + 10))
    b = tuple(f"v{i}" for i in range(MAX_ALIGN_WORDS + 10))
    assert len(align(a, b).regions) == 1


def test_spans_widen_changes_within_their_clause() -> None:
    """A changed word is shown with at most three shared words a side, never past a clause."""
    a, b = (
        words_of("Intro text. Please explain how to sort a list quickly"),
        words_of("Intro text. Please explain how to reverse a list quickly"),
    )
    (place,) = spans(a, b, align(a.words, b.words).regions)
    assert place.a == "explain how to sort a list quickly"
    assert place.b == "explain how to reverse a list quickly"
    assert (place.a_words, place.b_words) == (("sort",), ("reverse",))


def test_short_prompts_are_not_templated() -> None:
    """Prompts without a long shared part are left to the whole-text checks."""
    assert judge("How do I reset my password?", "How can I reset my password?") is None


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (
            "Run 7 asks for a short note that mentions bakery river subway mortgage glacier.",
            "Run 7 asks for a short note that mentions museum river glacier desert printer.",
        ),
        (
            "Write a haiku for my sister about autumn leaves, rain and an old bridge.",
            "Write a haiku for my sister about summer beaches, sand and a lighthouse.",
        ),
        (
            "Give me a packing list for a week in Norway with hiking and fishing.",
            "Give me a packing list for a week in Norway with skiing and sauna visits.",
        ),
    ],
)
def test_a_short_frame_with_other_content_is_not_accepted_outright(a: str, b: str) -> None:
    """A frame of 8+ shared words with other content in several places is judged by its
    changed places (rejected, or left to the model), never accepted as a rewording."""
    assert not verify(a, b).ok


def test_another_question_in_one_template_is_not_accepted() -> None:
    """The issue's example: the shared template no longer makes two questions alike; only
    their own clauses, compared by the model, could (they score ~0.4, below the bar)."""
    query, stored = "Do you price match other retailers", "Do you offer a student discount"
    verdict = verify(_t(query + "?"), _t(stored + "?"))
    assert not verdict.ok
    assert verdict.pending == ((query, stored),)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("How do I track my order?", "How do I return my order?"),
        ("How many boards can I create?", "How many members can I create?"),
    ],
)
def test_swapped_words_in_a_shared_clause_reject(a: str, b: str) -> None:
    """A few content words swapped inside a clause that stays are a new slot value."""
    assert verify(_t(a), _t(b)).reason == "slot"


def test_a_swap_inside_a_reworded_clause_needs_the_stricter_similarity() -> None:
    """When the lexicon explains the rest of a change (create / add), the swapped words left
    ("boards" / "members") go to the model, at SWAP_SIMILARITY rather than the usual bar."""
    verdict = verify(_t("How many boards can I create?"), _t("How many members can I add?"))
    assert not verdict.ok
    assert verdict.reason == "meaning"
    assert verdict.words == ((("boards",), ("members",)),)
    assert verdict.min_similarity == SWAP_SIMILARITY


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (
            "The app keeps crashing every time I open my cart.",
            "The app keeps crashing whenever I open my cart.",
        ),
        ("Can I return boots I've worn outside?", "Can I return boots I wore outside?"),
        ("List the updates of each task.", "List the updating of each task."),
    ],
)
def test_phrases_and_irregular_forms_are_the_same_words(a: str, b: str) -> None:
    """Phrase groups ("every time" / "whenever") and irregular or inflected forms (worn / wore,
    updates / updating) account for the words they change."""
    assert verify(_t(a), _t(b)).ok


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Is parental leave fully paid?", "Is parental leave unpaid?"),
        ("I want the blue jacket.", "I want the red jacket."),
        ("Send the report weekly.", "Send the report monthly."),
        (
            "The claim is accepted unless the seal is broken.",
            "The claim is accepted if the seal is broken.",
        ),
    ],
)
def test_prefix_negations_closed_classes_and_unless_reject(a: str, b: str) -> None:
    """un-/in-/dis- forms, two members of a closed class (colours, periods), and "unless" for
    "if" are different asks."""
    assert not verify(_t(a), _t(b)).ok


@pytest.mark.parametrize(("a", "b"), [("pass", "password"), ("free", "freeze"), ("port", "portal")])
def test_a_longer_word_that_starts_alike_is_not_the_same_word(a: str, b: str) -> None:
    """Only a known suffix makes two words one ("containers" / "container")."""
    assert not interchangeable((a,), (b,))


def test_added_condition_rejects() -> None:
    """Content added on one side only ("after it has shipped") changes the question."""
    verdict = verify(_t("Can I cancel my order?"), _t("Can I cancel my order after it shipped?"))
    assert verdict.reason == "slot"


def test_lexical_rewording_is_accepted_without_the_model() -> None:
    """Synonyms, inflections, reordering and filler in the slot: accepted, nothing pending."""
    verdict = verify(_t("Do you have a student discount?"), _t("Is there a discount for students?"))
    assert verdict.ok and not verdict.pending


def test_abbreviation_in_a_slot_is_accepted() -> None:
    """The initialism 2FA and "two-factor authentication" fill a slot alike."""
    assert verify(_t("How do I enable 2FA?"), _t("How do I enable two-factor authentication?")).ok


def test_a_particle_verb_is_the_word_of_its_pole() -> None:
    """ "turn on" and "enable" say the same, with an initialism on one side; the words between
    verb and particle still count, and "turn off" is still the other pole."""
    turned = _t("How do I turn on 2FA for online banking?")
    enabled = _t("How can I enable two-factor authentication for my online banking?")
    assert verify(turned, enabled).ok
    assert not verify(_t("How do I turn the alerts on?"), _t("How do I enable notifications?")).ok
    off = verify(_t("How do I turn on alerts?"), _t("How do I turn off alerts?"))
    assert off.reason == "antonym"


def test_rewritten_slot_is_left_to_the_model() -> None:
    """A rewritten question is rejected until its clauses are compared by meaning."""
    query = "Do you price match other retailers"
    stored = "Will you match a lower price I found at another store"
    verdict = verify(_t(query + "?"), _t(stored + "?"))
    assert not verdict.ok and verdict.reason == "meaning"
    assert verdict.pending == ((query, stored),)


def test_antonym_is_judged_in_the_slot_not_the_template() -> None:
    """A "how long" slot is not opposed to "short" in the template; import/export is."""
    assert verify(_t("How long does expedited shipping take?"), _t("Export my orders")).reason
    assert verify(_t("Can I import my tasks?"), _t("Can I export my tasks?")).reason == "antonym"
    long_vs_template = verify(_t("How long does shipping take?"), _t("How long does it take?"))
    assert long_vs_template.reason != "antonym"


def test_fact_checks_still_apply_to_templated_prompts() -> None:
    """Numbers and entities of the slot are compared as for short prompts."""
    assert verify(_t("Is the Trailblazer 2 waterproof?"), _t("Is the Trailblazer 3 waterproof?"))
    assert verify(_t("Do you ship to Canada?"), _t("Do you ship to Mexico?")).reason == "entity"


def test_moved_passages_are_the_same_context() -> None:
    """Retrieved passages in another order are the same context."""
    one = "Returns are accepted within thirty days when the item is unused."
    two = "Shipping is free on large orders within the continental United States."
    a = f"Context:\n{one}\n{two}\nAlso the staff are friendly.\n\nQuestion: Can I return boots?"
    b = f"Context:\n{two}\n{one}\nAlso the staff are friendly.\n\nQuestion: Can I return boots?"
    assert verify(a, b).ok


def test_slot_after_a_long_context_is_judged() -> None:
    """A question after hundreds of words of context is still compared."""
    query = _t("How do I join the club?", RAG)
    assert verify(query, _t("How do I leave the club?", RAG)).reason == "slot"
    assert verify(query, _t("how do I join the club", RAG)).ok


def test_reworded_template_compares_all_changed_clauses_together() -> None:
    """Changes in several places (a reworded instruction) leave one joined pair to the model."""
    task = "parses a duration such as one hour thirty minutes into a number of seconds"
    a = (
        f"You are a senior Python engineer. Write a function that {task}. "
        "Use type hints everywhere and avoid third-party libraries. Return only code."
    )
    b = (
        f"Act as an experienced Python developer. I need a function that {task}. "
        "Please use type hints throughout and don't rely on third-party packages. "
        "Reply with just the code."
    )
    verdict = verify(a, b)
    assert verdict.reason == "meaning" and len(verdict.pending) == 1
    assert " … " in verdict.pending[0][0]


_RULES = (
    "Handle edge cases such as empty input or a single element explicitly, add a one-line "
    "docstring, keep the function pure, and add three pytest test cases after it."
)


def _coder(task: str, reworded: bool = False) -> str:
    if reworded:
        return (
            f"Act as an experienced Python developer. I need a function that {task}. {_RULES} "
            "Please use type hints throughout and don't rely on third-party packages. "
            "Reply with just the code."
        )
    return (
        f"You are a senior Python engineer. Write a function that {task}. {_RULES} "
        "Use type hints everywhere and avoid third-party libraries. Return only code."
    )


def test_slot_range_is_where_a_sibling_of_the_template_differs() -> None:
    """The slot of a stored prompt is the span another prompt of its template changes."""
    stored = words_of(_coder("flattens a nested list"))
    start, stop = slot_range(stored, [_coder("reverses a linked list")]) or (0, 0)
    assert stored.words[start:stop] == ("flattens", "a", "nested")
    assert slot_range(stored, ["How do I flatten a list?"]) is None
    assert slot_range(stored, []) is None


def test_slot_range_takes_the_narrowest_sibling_that_shows_a_slot() -> None:
    """A sibling in a reworded version of the template widens the span, one that only adds
    words shows none; the closest that changes words wins."""
    stored = words_of(_coder("flattens a nested list"))
    padded = _coder("flattens a nested list").replace(
        "Return only code.", "Return only code, please."
    )
    siblings = [_coder("sorts a list", reworded=True), padded, _coder("sorts a list")]
    start, stop = slot_range(stored, siblings) or (0, 0)
    assert stored.words[start:stop] == ("flattens", "a", "nested")


def test_reworded_template_with_another_slot_value_is_rejected_when_the_slot_is_known() -> None:
    """A new version of the template asking another task embeds like a rewording; a stored
    sibling shows that a change reaches into the slot, so the pair is rejected."""
    query = _coder("computes the maximum depth of a nested list", reworded=True)
    stored = _coder("flattens a nested list of arbitrary depth")
    sibling = _coder("removes duplicates from a list")
    assert verify(query, stored).reason == "meaning"  # alone: left to the model
    assert verify(query, stored, siblings=[sibling]).reason == "slot"


def test_reworded_template_keeping_the_slot_still_goes_to_the_model() -> None:
    """The same task under a reworded instruction touches no slot word: one joined pair."""
    task = "flattens a nested list of arbitrary depth"
    verdict = verify(_coder(task, reworded=True), _coder(task), siblings=[_coder("sorts a list")])
    assert verdict.reason == "meaning" and len(verdict.pending) == 1


def test_long_prompts_are_embedded_as_head_and_tail() -> None:
    """What the model reads of a long prompt keeps its start and its final question."""
    short = _t("How do I join the club?")
    assert embedded_text(short) == short
    long = embedded_text(_t("How do I join the club?", RAG))
    assert long.startswith("Answer using only the context.")
    assert long.endswith("Question: How do I join the club?")
    assert " … " in long and len(long.split()) <= EMBED_HEAD_WORDS + EMBED_TAIL_WORDS + 1


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (
            "The blue one is too small, I need the large size.",
            "The blue one is too large, I need the small size.",
        ),
        (
            "Ship the new version and drop the old tour.",
            "Drop the new version and ship the old tour.",
        ),
    ],
)
def test_two_words_trading_places_reject(a: str, b: str) -> None:
    """The same words with two of them trading roles ask the opposite (an order rejection)."""
    assert verify(_t(a), _t(b)).reason == "order"


def test_neighbours_trading_places_are_a_reordered_name() -> None:
    """ "Traditional Chinese" / "Chinese (Traditional)" name one thing."""
    assert verify(
        _t("Translate it into Traditional Chinese."), _t("Translate it into Chinese (Traditional).")
    ).ok


def test_a_capitalized_word_after_a_template_tag_is_not_a_name() -> None:
    """A slot after "[USER] " starts a sentence: "Do" / "Can" are not entities to match."""
    template = "[SYSTEM] You answer for Fibrelink, a broadband provider, politely and briefly. " * 3
    query = template + "[USER] Do engineers come out on Sundays?\n[ASSISTANT]"
    stored = template + "[USER] Can an engineer come out on a Sunday?\n[ASSISTANT]"
    assert verify(query, stored).reason != "entity"
    other = template + "[USER] Can an engineer come out in Leeds?\n[ASSISTANT]"
    assert verify(query, other).reason == "entity"


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("Do I get a 10% discount?", "Do I get a ten percent discount?", True),
        ("Is the fee $5?", "Is the fee five dollars?", True),
        ("Was I charged twice?", "Was I charged two times?", True),
        ("Is it 3x faster?", "Is it three times faster?", True),
        ("Is the fee $1,200?", "Is the fee 1,200 dollars?", True),
        ("Is the rate 3.5%?", "Is the rate 3.5 percent?", True),
        ("Does it take 1 hr?", "Does it take one hour?", True),
        ("Was I charged twice?", "Was I charged three times?", False),
        ("Is the fee $5?", "Is the fee five euros?", False),
    ],
)
def test_a_number_with_its_unit_spelled_out_is_the_same_quantity(
    a: str, b: str, same: bool
) -> None:
    """A unit word after a number is compared with its number, not as a changed word."""
    assert verify(_t(a), _t(b)).ok is same


def test_twice_is_a_number() -> None:
    """ "Charged twice" is not "charged once": how many times is a quantity."""
    assert (
        verify(_t("I was charged twice this month."), _t("I was charged once this month.")).reason
        == "number"
    )


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (
            "Thanks so much for your help yesterday.",
            "Thank you very much for helping me yesterday.",
        ),
        ("Can you check my booking?", "Could you check my booking?"),
    ],
)
def test_a_reworded_text_to_translate_is_another_translation(a: str, b: str) -> None:
    """A translating template's text slot must stay word for word: its wording is the answer's."""
    assert verify(TRANSLATE.format("French", a), TRANSLATE.format("French", b)).reason == "quoted"


def test_a_translations_target_language_is_judged_as_a_slot() -> None:
    """The place naming the target language follows the usual slot rules; contractions and
    whitespace in the text are no rewording."""
    text = "I can't find my booking."
    assert verify(TRANSLATE.format("Japanese", text), TRANSLATE.format("Japanese", text)).ok
    spelled = TRANSLATE.format("Japanese", "I cannot find my booking.")
    assert verify(TRANSLATE.format("Japanese", text), spelled).ok
    language = TRANSLATE.format("the Japanese language", text)
    assert verify(TRANSLATE.format("Japanese", text), language).ok
    assert not verify(TRANSLATE.format("Japanese", text), TRANSLATE.format("Korean", text)).ok


def test_a_reworded_instruction_of_a_rewriting_template_is_judged_as_a_slot() -> None:
    """A changed clause naming the task is the instruction: the usual rules judge it."""
    template = (
        "You are an editor for a travel company's customer team, and you keep names, dates "
        "and prices exactly as written. {}\n\nMessage: we cant refund the deposit, sorry"
    )
    a = template.format("Rewrite the message below in a formal tone.")
    b = template.format("Please rewrite the message below in a formal tone.")
    assert verify(a, b).ok


def test_a_slot_whose_words_changed_clauses_rejects() -> None:
    """In a template's slot, a reordered clause is the same question, a moved word is not."""
    refund = _t("Can I get a refund if I cancel?")
    assert verify(refund, _t("If I cancel, can I get a refund?")).ok
    assert not verify(refund, _t("Can I cancel if I get a refund?")).ok
    sold = verify(
        _t("Should I sell the car if I buy the tent?"),
        _t("Should I buy the car if I sell the tent?"),
    )
    assert sold.reason in ("roles", "order")


def test_an_initialism_spelled_out_in_a_slot_is_the_same_name() -> None:
    """In a template's slot too, "NYC" is "New York City" and not "New Jersey"."""
    nyc = _t("Do you ship to NYC?")
    assert verify(nyc, _t("Do you ship to New York City?")).ok
    assert verify(nyc, _t("Do you ship to New Jersey?")).reason == "entity"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Can I work remotely on Fridays?", "Am I allowed to work from home on Fridays?"),
        ("How long is the probation period?", "What is the length of the probation period?"),
        ("How do I enroll in the pension plan?", "How do I sign up for the pension plan?"),
    ],
)
def test_common_phrases_are_the_same_words(a: str, b: str) -> None:
    """ "remotely" / "from home", "how long" / "length", "enroll" / "sign up"."""
    assert verify(_t(a), _t(b)).ok


def test_a_place_is_whole_when_its_clause_reaches_a_break_on_both_sides() -> None:
    """A customer's whole question is a whole place; a few words inside a sentence are not."""
    a, b = words_of(_t("How much does shipping cost?")), words_of(_t("What is the shipping fee?"))
    (place,) = spans(a, b, align(a.words, b.words).regions)
    assert place.whole and place.a == "How much does shipping cost"
    inside = "Write a function that {} and add tests for it. Use Python."
    a, b = words_of(inside.format("sorts a big list")), words_of(inside.format("orders a list"))
    (place,) = spans(a, b, align(a.words, b.words).regions)
    assert not place.whole


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("How much does shipping cost?", "What is the shipping fee?"),
        ("Is the Trailblazer tent waterproof?", "Will the Trailblazer tent keep water out?"),
        ("Do you sell gift cards?", "Can I pay with a gift card?"),
    ],
)
def test_a_whole_question_reworded_is_judged_as_a_short_prompt(a: str, b: str) -> None:
    """A rewritten question inside a template passes the short-prompt checks and goes to the
    model on its own, at the bar of a swap (the gift-card questions, which differ, score 0.75
    there, as they would as two short prompts)."""
    verdict = verify(_t(a), _t(b))
    assert verdict.reason == "meaning" and verdict.min_similarity == SWAP_SIMILARITY
    query, candidate = a.rstrip("?"), b.rstrip("?")
    assert verdict.pending == ((toward(query, candidate), candidate),)


@pytest.mark.parametrize(
    ("a", "b", "reason"),
    [
        ("How do I track my order?", "How do I return my order?", "slot"),
        ("Can I return 2 items?", "Can I send back 3 items?", "number"),
        ("Do you ship to Canada?", "Do you ship to Mexico?", "entity"),
    ],
)
def test_a_whole_question_the_short_checks_reject_stays_rejected(
    a: str, b: str, reason: str
) -> None:
    """Another question in the same template is still rejected, by the rule that says so."""
    assert verify(_t(a), _t(b)).reason == reason


def test_a_single_sentence_is_not_judged_again_as_itself() -> None:
    """A prompt that is one sentence has no shorter one: its slot rejection stands."""
    a = "Please write a short and friendly reminder email to the whole team about the party"
    b = "Please write a short and friendly reminder email to the whole team about the offsite"
    assert verify(a, b).reason == "slot"


def test_two_words_trading_places_in_a_slot_swap_roles() -> None:
    """Inside one changed clause, two words trading places while the rest stays swap roles;
    a phrase moved with its preposition does not."""
    swapped = verify(
        _t("Can I swap the tent for a backpack?"), _t("Can I swap the backpack for a tent?")
    )
    assert swapped.reason == "roles"
    moved = (
        "Can I get from Boston to Denver by train?",
        "Can I get to Denver from Boston by train?",
    )
    assert verify(_t(moved[0]), _t(moved[1])).ok


def test_two_words_trading_places_across_two_changes_are_other_roles() -> None:
    """Two words that swap places in two separate changes swap roles, not wording."""
    verdict = judge(
        "Can a parent be claimed as a dependent by their child?",
        "Can a child be claimed as a dependent by their parent?",
    )
    assert verdict is not None and not verdict.ok and verdict.reason == "roles"
