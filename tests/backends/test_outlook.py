"""A request's goal on one replica: which deadline, which output length, what it takes."""

from __future__ import annotations

import time

import orjson
import pytest

from backends.outlook import Demand, Outlook, first_chunk_tokens
from budgets.output_lengths import OutputLengths
from budgets.request_budget import ClassBudgets, RequestBudget
from budgets.service_estimate import ServiceEstimate
from core.answers import ChoiceDelta, StreamChunk, Usage
from core.protocol import ChatCompletionRequest, CompletionRequest
from core.request_parsing import parse_request

BUDGETS = ClassBudgets(total_s=5.0, ttft_s=1.0, admission_s=0.5, stall_s=1.0)


def _demand(**fields: object) -> Demand:
    raw = orjson.dumps(
        {"model": "m", "messages": [{"role": "user", "content": "x" * 400}], **fields}
    )
    return Demand.of(parse_request(raw, ChatCompletionRequest))


def _estimate() -> ServiceEstimate:
    """0.1 s to the first token, 10 ms per token after it, for any prompt."""
    estimate = ServiceEstimate()
    for tokens in (1, 11, 21):
        estimate.observe(100, tokens, 0.1 + 0.01 * (tokens - 1))
    return estimate


def _budget() -> RequestBudget:
    return RequestBudget.start("interactive", BUDGETS, time.monotonic, time.monotonic())


def test_demand_reads_the_request() -> None:
    """Prompt size is the gateway's estimate; the cap is max_completion_tokens or max_tokens,
    and the demand names the field that set it."""
    demand = _demand(max_completion_tokens=30, n=2, stream=True)
    assert demand == Demand(104, 30, 2, True, cap_param="max_completion_tokens")
    assert _demand(max_tokens=30).cap_param == "max_tokens"
    assert demand.output_tokens(Usage(5, 61)) == 31


def test_the_uncached_part_of_the_prompt_is_scaled_from_the_backends_count() -> None:
    """The backend's share of uncached prompt tokens scales the gateway's own prompt count."""
    demand = Demand(prompt_tokens=100, max_tokens=None, choices=1, stream=False)
    assert demand.uncached_tokens(Usage(prompt_tokens=80, cached_tokens=60)) == 25
    assert demand.uncached_tokens(Usage(prompt_tokens=80)) == 100
    assert demand.uncached_tokens(Usage()) == 100


def test_a_batch_demands_every_prompt_and_choice() -> None:
    """A batch of prompts is all its prompts' tokens and n choices for each, decoded side by
    side."""
    raw = orjson.dumps({"model": "m", "prompt": ["x" * 40, "y" * 80], "n": 2, "max_tokens": 8})
    demand = Demand.of(parse_request(raw, CompletionRequest))
    assert demand == Demand(prompt_tokens=30, max_tokens=8, choices=4, stream=False)


def test_a_stream_must_reach_its_first_token_in_time() -> None:
    """Without a known length, a stream is judged by its first token against the first-token
    deadline."""
    estimate = _estimate()
    outlook = Outlook(estimate, OutputLengths(0.9), _demand(stream=True), _budget())
    target = outlook.binding()
    assert target is not None and target.what == "first token"
    assert target.left_s == pytest.approx(BUDGETS.ttft_s, abs=0.05)
    assert target.predicted_s == estimate.upper(104, 1)
    assert outlook.slack_s() == pytest.approx(target.slack_s, abs=0.01)  # a moment later


def test_a_stream_must_also_finish_within_the_total() -> None:
    """A stream whose whole answer cannot fit the total is out of reach, though its first
    token would come in time: it would be cut off at the total."""
    outlook = Outlook(
        _estimate(), OutputLengths(0.9), _demand(stream=True, max_tokens=600), _budget()
    )
    target = outlook.binding()
    assert target is not None and target.what == "answer" and target.slack_s < 0


def test_a_whole_answer_must_arrive_within_the_total() -> None:
    """A non-streaming request is judged by its last token, at its cap, against the total."""
    estimate = _estimate()
    outlook = Outlook(estimate, OutputLengths(0.9), _demand(max_tokens=41), _budget())
    target = outlook.binding()
    assert target is not None and target.what == "answer"
    assert target.left_s == pytest.approx(BUDGETS.total_s, abs=0.05)
    assert target.predicted_s == estimate.upper(104, 41)
    assert outlook.hold_s() == pytest.approx(0.5)  # the expected time, without the margin


def test_without_a_cap_recent_output_lengths_stand_in() -> None:
    """No max_tokens: the model's recent 90th percentile of output lengths, else unknown."""
    lengths, estimate = OutputLengths(0.9), _estimate()
    outlook = Outlook(estimate, lengths, _demand(), _budget())
    assert outlook.output_tokens() is None and outlook.binding() is None
    assert outlook.slack_s() is None and outlook.hold_s() is None
    for tokens in range(1, 11):
        lengths.add(tokens * 10)
    assert outlook.output_tokens() == 90
    target = outlook.binding()
    assert target is not None and target.predicted_s == estimate.upper(104, 90)
    assert outlook.hold_s() == pytest.approx(0.1 + 0.01 * 89)


def test_one_request_a_second_out_of_reach_goes_through_as_a_probe() -> None:
    """With nothing heard for a second, one request the estimate would refuse is not judged
    (it refreshes the estimate), and it stays unjudged; the next one is judged again."""
    now = [100.0]
    estimate = ServiceEstimate(lambda: now[0])
    for tokens in (1, 11, 21):
        estimate.observe(100, tokens, 0.1 + 0.01 * (tokens - 1))
    doomed = _demand(max_tokens=600)  # 6 s against a 5 s total

    def outlook() -> Outlook:
        return Outlook(estimate, OutputLengths(0.9), doomed, _budget())

    refused = outlook().slack_s()
    assert refused is not None and refused < 0  # heard from just now
    now[0] += 1.0
    probe = outlook()
    assert probe.slack_s() is None and probe.slack_s() is None  # at its arrival and its head
    refused = outlook().slack_s()
    assert refused is not None and refused < 0


def test_uncapped_requests_refused_by_stale_lengths_probe_them() -> None:
    """An uncapped request out of reach by the recent output lengths goes through once a second
    while no uncapped answer is heard, even as capped answers keep the estimate fresh; a capped
    one, or one whose first token is out of reach, is no probe of the lengths."""
    now = [100.0]
    estimate = ServiceEstimate(lambda: now[0])
    for tokens in (1, 11, 21):
        estimate.observe(100, tokens, 0.1 + 0.01 * (tokens - 1))
    lengths = OutputLengths(0.9, lambda: now[0])
    for _ in range(10):
        lengths.add(600)  # 6 s against a 5 s total

    def slack(demand: Demand) -> float | None:
        estimate.observe(100, 21, 0.3)  # a capped answer heard just now
        return Outlook(estimate, lengths, demand, _budget()).slack_s()

    refused = slack(_demand())
    assert refused is not None and refused < 0
    now[0] += 1.0
    capped = slack(_demand(max_tokens=600))
    assert capped is not None and capped < 0
    assert slack(_demand()) is None  # the probe
    refused = slack(_demand())
    assert refused is not None and refused < 0
    now[0] += 1.0
    tight_first = ClassBudgets(total_s=5.0, ttft_s=0.05, admission_s=0.5, stall_s=1.0)
    budget = RequestBudget.start("interactive", tight_first, time.monotonic, time.monotonic())
    estimate.observe(100, 1, 0.1)
    first = Outlook(estimate, lengths, _demand(stream=True), budget).slack_s()
    assert first is not None and first < 0  # its first token: the lengths cannot help
    lengths.add(600)  # the probe's answer
    now[0] += 0.5
    refused = slack(_demand())
    assert refused is not None and refused < 0


def test_first_chunk_tokens() -> None:
    """A first chunk that brought several tokens counts them all; none counted means one."""
    assert first_chunk_tokens(StreamChunk([ChoiceDelta(0, "ab", token_count=4)])) == 4
    assert first_chunk_tokens(StreamChunk([ChoiceDelta(0, "ab")])) == 1
