"""A pending query clause is written in its candidate's words where the lexicon pairs them."""

from __future__ import annotations

import pytest

from cache.verify import verify
from cache.verify_rewrite import toward


@pytest.mark.parametrize(
    ("query", "candidate", "rewritten"),
    [
        (
            "How many PTO days do I get per year?",
            "What's my annual paid time off allowance?",
            "How many paid time off days do I get per year?",
        ),
        (
            "What's my annual paid time off allowance?",
            "How many PTO days do I get per year?",
            "What's my annual PTO allowance?",
        ),
        ("Can I send back shoes?", "Can I return shoes?", "Can I return shoes?"),
        ("Where can I purchase it?", "Where do I buy it?", "Where can I buy it?"),
    ],
)
def test_words_the_lexicon_pairs_take_the_candidates_form(
    query: str, candidate: str, rewritten: str
) -> None:
    """Initialisms both ways, a phrase of one group and synonyms become the candidate's words."""
    assert toward(query, candidate) == rewritten


@pytest.mark.parametrize(
    ("query", "candidate"),
    [
        ("Do you price match other retailers?", "Do you offer a student discount?"),
        ("counts how many sentences appear in a text", "counts how many times each word appears"),
        ("How do I export my data?", "How do I import my data?"),
    ],
)
def test_words_without_a_counterpart_stay(query: str, candidate: str) -> None:
    """Nothing the lexicon does not pair is touched: the judge still sees the difference."""
    assert toward(query, candidate) == query


def test_pending_clauses_reach_the_model_in_the_candidates_words() -> None:
    """The verifier hands the model the rewritten query clause and the stored clause as is."""
    template = "You are the help desk of Acme HR. Answer from the handbook. Question: {}"
    verdict = verify(
        template.format("How many PTO days do new hires get?"),
        template.format("How much paid time off do new employees receive?"),
    )
    assert verdict.pending
    (query_clause, candidate_clause), *_ = verdict.pending
    assert "paid time off" in query_clause and "PTO" not in query_clause
    assert "How much paid time off do new employees receive" in candidate_clause
