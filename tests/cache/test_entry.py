"""Cached answers: storage format, replay, and recording streams."""

from __future__ import annotations

from dataclasses import replace

from cache.entry import CachedAnswer, StreamRecorder
from core.answers import Choice, ChoiceDelta, Completion, StreamChunk, Usage


def _answer() -> CachedAnswer:
    completion = Completion([Choice(0, "Hello 🙂 world", "stop")], Usage(5, 3, 1), "fp_x")
    return CachedAnswer(completion, created_at=1000.0)


def test_round_trip() -> None:
    """An entry decodes to exactly what was stored."""
    answer = _answer()
    assert CachedAnswer.from_bytes(answer.to_bytes()) == answer


def test_a_semantic_entry_keeps_the_exact_key_it_answered() -> None:
    """The exact key travels with a semantic entry; an entry without one (an exact entry, or
    a semantic one stored before keys were kept) decodes with none."""
    keyed = replace(_answer(), key="k" * 40)
    assert CachedAnswer.from_bytes(keyed.to_bytes()) == keyed
    assert b'"k"' not in _answer().to_bytes()
    unkeyed = CachedAnswer.from_bytes(_answer().to_bytes())
    assert unkeyed is not None and unkeyed.key is None


def test_malformed_entries_are_misses() -> None:
    """Garbage or another format version decodes to None, never raises."""
    for raw in (b"", b"{", b"[]", b'{"v": 99}', b'{"v": 1}'):
        assert CachedAnswer.from_bytes(raw) is None


def test_age() -> None:
    """Age is whole seconds since the answer was produced, never negative."""
    answer = _answer()
    assert answer.age(1010.7) == 10 and answer.age(900.0) == 0


def test_replay_then_record_is_identity() -> None:
    """Replaying an entry as chunks and recording them yields the same completion, its
    upstream's fingerprint included."""
    recorder = StreamRecorder()
    for chunk in _answer().replay():
        recorder.add(chunk)
    assert recorder.completion() == Completion(
        [Choice(0, "Hello 🙂 world", "stop")], Usage(5, 3, 1), "fp_x"
    )


def test_recorder_refuses_incomplete_or_failed_streams() -> None:
    """Only streams whose choices all ended with stop or length are cacheable."""
    unfinished = StreamRecorder()
    unfinished.add(StreamChunk([ChoiceDelta(0, "partial")]))
    assert unfinished.completion() is None
    aborted = StreamRecorder()
    aborted.add(StreamChunk([ChoiceDelta(0, "x", "abort")], Usage(1, 1)))
    assert aborted.completion() is None


def test_recorder_merges_chat_logprobs() -> None:
    """Per-delta chat logprobs are concatenated in order."""
    recorder = StreamRecorder()
    recorder.add(StreamChunk([ChoiceDelta(0, "a", None, {"content": [{"token": "a"}]})]))
    recorder.add(
        StreamChunk([ChoiceDelta(0, "b", "stop", {"content": [{"token": "b"}]})], Usage(1, 2))
    )
    completion = recorder.completion()
    assert completion is not None
    assert completion.choices[0].logprobs == {"content": [{"token": "a"}, {"token": "b"}]}


def test_reasoning_and_calls_round_trip_and_replay() -> None:
    """Reasoning, reasoning tokens and calls survive storage; replaying and recording them
    gives the same answer back."""
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    completion = Completion(
        [Choice(0, "", "tool_calls", None, [call], "thinking")], Usage(5, 9, 0, 4)
    )
    answer = CachedAnswer(completion, created_at=1.0)
    decoded = CachedAnswer.from_bytes(answer.to_bytes())
    assert decoded is not None and _without_ids(decoded.completion) == _without_ids(completion)
    recorder = StreamRecorder()
    for chunk in answer.replay():
        recorder.add(chunk)
    assert recorder.completion() == completion


def _call_ids(completion: Completion) -> list[str]:
    return [call["id"] for choice in completion.choices for call in choice.tool_calls or ()]


def _without_ids(completion: Completion) -> Completion:
    """The answer with its calls' ids blanked, to compare the rest."""
    choices = [
        Choice(
            c.index,
            c.text,
            c.finish_reason,
            c.logprobs,
            [{**call, "id": ""} for call in c.tool_calls] if c.tool_calls else c.tool_calls,
            c.reasoning,
        )
        for c in completion.choices
    ]
    return Completion(choices, completion.usage, completion.system_fingerprint)


def test_each_decoded_answer_gets_fresh_call_ids() -> None:
    """Every read of an entry answers another request: its calls get new ids of their own,
    OpenAI's shape, distinct per call and per read; its replay carries the same ids."""
    calls = [
        {"id": f"call_{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        for i in range(2)
    ]
    completion = Completion([Choice(0, "", "tool_calls", None, calls)], Usage(5, 9))
    raw = CachedAnswer(completion, created_at=1.0).to_bytes()
    reads = [CachedAnswer.from_bytes(raw) for _ in range(3)]
    ids = [_call_ids(read.completion) for read in reads if read is not None]
    every = [call_id for read_ids in ids for call_id in read_ids]
    assert len(every) == 6 and len(set(every)) == 6
    assert all(call_id.startswith("call_") and len(call_id) == 29 for call_id in every)
    assert _call_ids(completion) == ["call_0", "call_1"]
    read = reads[0]
    assert read is not None
    replayed = [
        c["id"] for chunk in read.replay() for d in chunk.deltas for c in d.tool_calls or ()
    ]
    assert replayed == _call_ids(read.completion)


def test_recorder_joins_pass_through_call_fragments() -> None:
    """A pass-through stream's call fragments become one whole call."""
    recorder = StreamRecorder()
    head = {
        "index": 0,
        "id": "call_a",
        "type": "function",
        "function": {"name": "f", "arguments": ""},
    }
    recorder.add(StreamChunk([ChoiceDelta(0, tool_calls=[head])]))
    recorder.add(
        StreamChunk([ChoiceDelta(0, tool_calls=[{"index": 0, "function": {"arguments": '{"x":'}}])])
    )
    recorder.add(
        StreamChunk([ChoiceDelta(0, tool_calls=[{"index": 0, "function": {"arguments": "1}"}}])])
    )
    recorder.add(StreamChunk([ChoiceDelta(0, "", "tool_calls")], Usage(1, 3)))
    completion = recorder.completion()
    assert completion is not None
    assert completion.choices[0].tool_calls == [
        {"id": "call_a", "type": "function", "function": {"name": "f", "arguments": '{"x":1}'}}
    ]


def test_thinking_that_said_nothing_is_kept_as_empty_reasoning() -> None:
    """A stream cut right after `<think>` records reasoning "" (not none), and replays with
    its last delta saying it thought, so a hit's content is null as the miss's was."""
    recorder = StreamRecorder()
    recorder.add(StreamChunk([ChoiceDelta(0)]))
    recorder.add(StreamChunk([ChoiceDelta(0, "", "length", thought=True)], Usage(3, 2, 0, 1)))
    completion = recorder.completion()
    assert completion is not None and completion.choices[0].reasoning == ""
    answer = CachedAnswer.from_bytes(CachedAnswer(completion, 1.0).to_bytes())
    assert answer is not None and answer.completion.choices[0].reasoning == ""
    assert answer.replay()[-1].deltas[0].thought
