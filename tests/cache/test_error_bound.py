"""The learned error bound: Wilson bound, scores certified per entry and per tenant, audits."""

from __future__ import annotations

import random

import pytest

from cache.error_bound import NEVER, ErrorBound, wilson_upper
from cache.semantic_factory import error_bound_for
from cache.settings import CacheSettings
from core.env import SettingsError


def test_wilson_upper_without_data_is_one() -> None:
    """No observations bound nothing: the upper bound is 1."""
    assert wilson_upper(0, 0) == 1.0


def test_wilson_upper_shrinks_with_evidence() -> None:
    """More clean observations give a tighter bound, always above the observed rate."""
    bounds = [wilson_upper(0, n) for n in (10, 100, 1000)]
    assert bounds == sorted(bounds, reverse=True)
    assert 0.003 < bounds[-1] < 0.004
    assert wilson_upper(5, 100) > 0.05


def test_no_evidence_serves_nothing() -> None:
    """With a bound and no judgement anywhere, nothing is served: no score is certified."""
    bound = ErrorBound(0.01)
    assert bound.threshold("t", "s", "entry") == NEVER
    assert not bound.allows("t", "s", "entry", 1.0)


def test_little_evidence_certifies_nothing() -> None:
    """A few correct judgements cannot certify 1%: still nothing served."""
    bound = ErrorBound(0.01)
    for _ in range(20):
        bound.observe("t", "s", "entry", 0.8, True)
    assert bound.threshold("t", "s", "entry") == NEVER


def test_enough_clean_evidence_certifies_the_entry() -> None:
    """Hundreds of correct judgements at 0.85 certify serving the entry from 0.85."""
    bound = ErrorBound(0.01)
    for _ in range(400):
        bound.observe("t", "s", "entry", 0.85, True)
    assert bound.threshold("t", "s", "entry") == 0.85


def test_neighbourhood_evidence_certifies_unjudged_entries() -> None:
    """Judgements of many entries certify a score for their segment's other entries, and for
    no other tenant or scope."""
    bound = ErrorBound(0.01)
    for i in range(400):
        bound.observe("t", "s", f"e{i}", 0.9 + (i % 10) / 100, True)
    assert bound.threshold("t", "s", "never judged") == 0.9
    assert bound.threshold("other", "s", "never judged") == NEVER
    assert bound.threshold("t", "other scope", "never judged") == NEVER
    assert bound.threshold("t", "other scope", "e1") == NEVER


def test_an_entrys_evidence_stays_in_its_scope() -> None:
    """The same text stored in two scopes is two entries: one's certification or wrong
    judgement says nothing of the other."""
    bound = ErrorBound(0.01)
    for _ in range(400):
        bound.observe("t", "json", "entry", 0.85, True)
    for i in range(400):
        bound.observe("t", "free", f"e{i}", 0.8, True)
    bound.observe("t", "free", "entry", 0.95, False)
    assert bound.threshold("t", "json", "entry") == 0.85
    assert bound.threshold("t", "free", "entry") > 0.95


def test_segments_are_bounded_lru() -> None:
    """Past max_segments the least recently used segment forgets its evidence; a segment
    whose threshold was asked for is recently used."""
    bound = ErrorBound(0.05, max_segments=2)
    for scope in ("a", "b"):
        for i in range(100):
            bound.observe("t", scope, f"e{i}", 0.9, True)
    assert bound.threshold("t", "a", "new") == 0.9  # "a" is now the most recently used
    bound.observe("t", "c", "x", 0.9, True)
    assert bound.segments == 2
    assert bound.threshold("t", "a", "new") == 0.9
    assert bound.threshold("t", "b", "new") == NEVER


def test_a_flood_of_scopes_holds_a_bounded_number_of_judgements() -> None:
    """Judgements held over all segments stay under max_pooled_observations: distinct
    scopes by the thousand cannot grow memory without limit."""
    bound = ErrorBound(0.05, max_pool_observations=100, max_pooled_observations=150)
    for i in range(200):
        bound.observe("t", "busy", f"e{i}", 0.9, True)
    for i in range(5_000):
        bound.observe("t", f"scope {i}", "x", 0.9, True)
        bound.threshold("t", "busy", "new")  # in use: kept
    assert bound.segments == 51  # the busy one's 100 judgements and 50 of one each
    assert bound.threshold("t", "busy", "new") == 0.9


def test_wrong_judgements_raise_the_neighbourhood_score() -> None:
    """Wrong judgements at low scores move the tenant's certified score above them."""
    bound = ErrorBound(0.01)
    for i in range(600):
        bound.observe("t", "s", f"e{i}", 0.95, True)
    for i in range(20):
        bound.observe("t", "s", f"w{i}", 0.85, False)
    assert bound.threshold("t", "s", "new") == 0.95


def test_wrong_judgement_of_an_entry_raises_its_own_floor() -> None:
    """Without its own certification, an entry is never served at or below a score at which
    it was judged wrong, whatever the neighbourhood certifies."""
    bound = ErrorBound(0.01)
    for i in range(800):
        bound.observe("t", "s", f"e{i}", 0.9, True)
    bound.observe("t", "s", "entry", 0.95, False)
    assert bound.threshold("t", "s", "entry") > 0.95
    assert not bound.allows("t", "s", "entry", 0.95)
    assert bound.threshold("t", "s", "other") == 0.9


def test_entries_are_bounded_lru() -> None:
    """Past max_entries the least recently used entry forgets its evidence."""
    bound = ErrorBound(0.05, max_entries=2)
    for i in range(800):
        bound.observe("t", "s", "x", 0.5 + i / 10_000, True)
    for entry in ("a", "b", "c"):
        bound.observe("t", "s", entry, 0.99, False)
    assert bound.threshold("t", "s", "a") < 0.99  # forgotten: the neighbourhood's score
    assert bound.threshold("t", "s", "c") > 0.99


def test_pool_keeps_only_recent_judgements() -> None:
    """Old judgements leave the neighbourhood: a wrong one falls out after the window."""
    bound = ErrorBound(0.05, max_pool_observations=200)
    bound.observe("t", "s", "old", 0.99, False)
    assert bound.threshold("t", "s", "x") == NEVER
    for i in range(400):
        bound.observe("t", "s", f"e{i}", 0.9, True)
    assert bound.threshold("t", "s", "x") == 0.9


def test_audit_samples_the_configured_share() -> None:
    """`audit` says yes for about `audit_rate` of calls; never with a rate of 0."""
    rng = random.Random(3)
    bound = ErrorBound(0.01, audit_rate=0.1, random_source=rng.random)
    share = sum(bound.audit() for _ in range(10_000)) / 10_000
    assert 0.08 < share < 0.12
    assert not any(ErrorBound(0.01).audit() for _ in range(1000))


def test_invalid_rate_is_refused() -> None:
    """A bound of 0 or 1 is meaningless and refused."""
    with pytest.raises(ValueError, match="max_error_rate"):
        ErrorBound(0.0)
    with pytest.raises(ValueError, match="audit_rate"):
        ErrorBound(0.01, audit_rate=1.0)


def test_replayed_stream_keeps_served_wrong_rate_under_bound() -> None:
    """Replaying judged matches (withheld ones and a 5% audit teach it), hits served under the
    learned scores stay under the bound."""
    rng = random.Random(12)
    bound = ErrorBound(0.02, audit_rate=0.05, random_source=rng.random)
    served = wrong_served = 0
    for step in range(8_000):
        entry = f"e{step % 20}"
        score = rng.uniform(0.5, 1.0)
        # Each entry is wrong below its own (unknown) cut-off, right above it.
        cutoff = 0.6 + 0.015 * (step % 20)
        correct = score >= cutoff or rng.random() < 0.5
        if bound.allows("t", "s", entry, score) and not bound.audit():
            served += 1
            wrong_served += 0 if correct else 1
        else:
            bound.observe("t", "s", entry, score, correct)
    assert served > 1_500
    assert wrong_served / served <= 0.02
    estimate = bound.estimate()
    assert estimate.correct + estimate.wrong == 8_000 - served
    assert estimate.rate <= estimate.upper


def test_setting_is_read_and_builds_a_bound() -> None:
    """GATEWAY_SEMANTIC_MAX_ERROR_RATE sets the bound, GATEWAY_SEMANTIC_AUDIT_RATE its
    audited share (5% by default); a rate of 0 is off."""
    settings = CacheSettings.from_env({"GATEWAY_SEMANTIC_MAX_ERROR_RATE": "0.01"})
    bound = error_bound_for(settings)
    assert bound is not None
    assert (bound.max_error_rate, bound.audit_rate) == (0.01, 0.05)
    settings = CacheSettings.from_env(
        {"GATEWAY_SEMANTIC_MAX_ERROR_RATE": "0.02", "GATEWAY_SEMANTIC_AUDIT_RATE": "0"}
    )
    bound = error_bound_for(settings)
    assert bound is not None and bound.audit_rate == 0
    assert error_bound_for(CacheSettings.from_env({})) is None


@pytest.mark.parametrize(
    "variable", ["GATEWAY_SEMANTIC_MAX_ERROR_RATE", "GATEWAY_SEMANTIC_AUDIT_RATE"]
)
@pytest.mark.parametrize("value", ["-0.1", "0.9", "often"])
def test_bad_setting_names_its_variable(variable: str, value: str) -> None:
    """A bad rate fails at startup with the variable's name in the message."""
    with pytest.raises(SettingsError, match=variable):
        CacheSettings.from_env({variable: value})
