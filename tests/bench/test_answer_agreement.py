"""The answer-pair set, and the gateway's judge on it (no model needed)."""

from __future__ import annotations

from collections import Counter

from bench.answer_agreement import Judged, choose_threshold, facts_agree, load_answer_pairs
from cache.answer_agreement import same_text


def test_answer_pairs_are_many_balanced_and_split() -> None:
    """250+ pairs over 12 domains, both labels in each half of every domain, the misleading
    pairs of every kind of fact."""
    pairs = load_answer_pairs()
    assert len(pairs) >= 250
    groups = Counter((p.domain, p.agree, p.split) for p in pairs)
    domains = {p.domain for p in pairs}
    assert len(domains) == 12
    assert all(groups[(d, agree, half)] >= 3 for d in domains for agree in (True, False)
               for half in ("train", "test"))  # fmt: skip
    kinds = {p.kind for p in pairs if not p.agree}
    assert {"number", "negation", "entity", "code_bug", "other_question"} <= kinds
    assert len({(p.a, p.b) for p in pairs}) == len(pairs)


def test_the_gateways_judge_never_agrees_with_a_misleading_answer() -> None:
    """Same text up to whitespace and case: no pair that differs in a fact agrees."""
    assert not any(same_text([p.a], [p.b]) for p in load_answer_pairs() if not p.agree)


def test_fact_checks_alone_let_misleading_answers_through() -> None:
    """Why the judge is not by meaning: the fact checks miss some changed facts (another name,
    a code bug), so even a perfect similarity threshold would agree with them."""
    misleading = [p for p in load_answer_pairs() if not p.agree]
    passed = [p for p in misleading if facts_agree(p.a, p.b)]
    assert len(passed) / len(misleading) > 0.01
    judged = [Judged(p, False, True, 1.0) for p in passed]
    assert choose_threshold(judged, max_false_agree=0.01) is None
