"""A choice's text and logprobs around its end, streamed or whole: as vLLM, the logprobs list
every token up to the one that completed a stop string it trims, but not the stop token it
hides; each is streamed no sooner than its text."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from backends.reasoning.harmony import HarmonyParser as HarmonyReasoningParser
from backends.reasoning.parsed import ReasoningParser
from backends.reasoning.think import ThinkParser
from backends.tool_calls.harmony import HarmonyParser as HarmonyToolParser
from backends.tool_calls.hermes import HermesParser
from backends.tool_calls.parsed import ToolCallParser
from backends.vllm_grpc.decoding import ChoiceDecoder, DecodeOptions
from backends.vllm_grpc.logprobs import TokenTexts, joined_logprobs
from backends.vllm_grpc.tokenizer_store import TokenizerBundle, load_tokenizer_bundle
from core.answers import ChoiceDelta, Endpoint
from standin.vllm.tokenizer_files import tokenizer_dir


@pytest.fixture(scope="module")
def bundle() -> TokenizerBundle:
    return load_tokenizer_bundle(tokenizer_dir())


def _decoder(
    bundle: TokenizerBundle,
    endpoint: Endpoint = "chat",
    stops: list[str] | None = None,
    include_stop_str: bool = False,
    *,
    hidden_ids: frozenset[int] | None = None,
    min_tokens: int = 0,
) -> ChoiceDecoder:
    options = DecodeOptions(
        skip_special_tokens=True,
        spaces_between_special_tokens=True,
        prompt_ids=bundle.tokenizer.encode("Say it:", add_special_tokens=False).ids,
        hidden_ids=frozenset(bundle.eos_token_ids) if hidden_ids is None else hidden_ids,
        min_tokens=min_tokens,
    )
    return ChoiceDecoder(
        0,
        bundle,
        endpoint,
        stops or [],
        include_stop_str,
        options,
        TokenTexts(bundle.tokenizer),
        "",
    )


def _logprobs(ids: list[int]) -> Any:
    return SimpleNamespace(token_ids=ids, token_logprobs=[-0.25] * len(ids), top_logprobs=[])


def _decode(decoder: ChoiceDecoder, ids: list[int], *, streamed: bool) -> list[ChoiceDelta]:
    """The deltas of a choice fed its ids one at a time (streamed) or all at once, then
    finished as the engine stops."""
    groups = [[token_id] for token_id in ids] if streamed else [ids]
    deltas = [decoder.feed(group, _logprobs(group)) for group in groups]
    return [*deltas, decoder.finish("stop")]


def _shown(endpoint: Endpoint, logprobs: Any) -> str:
    """The text the logprobs' tokens add up to."""
    if logprobs is None:
        return ""
    if endpoint == "chat":
        return bytes(b for entry in logprobs["content"] for b in entry["bytes"]).decode()
    return "".join(logprobs["tokens"])


def _ids(bundle: TokenizerBundle, text: str) -> list[int]:
    return list(bundle.tokenizer.encode(text, add_special_tokens=False).ids)


@pytest.mark.parametrize("endpoint", ["chat", "completion"])
@pytest.mark.parametrize("streamed", [False, True])
def test_the_end_of_sequence_token_has_no_logprob(
    bundle: TokenizerBundle, endpoint: Endpoint, streamed: bool
) -> None:
    """The engine's last token on a natural stop is the EOS, which the text does not show
    (<|im_end|>): its logprob is left out too, so the tokens join into the text."""
    ids = [*_ids(bundle, "Hello world"), bundle.eos_token_ids[0]]
    deltas = _decode(_decoder(bundle, endpoint), ids, streamed=streamed)
    logprobs = joined_logprobs([delta.logprobs for delta in deltas])
    assert "".join(delta.text for delta in deltas) == "Hello world"
    assert _shown(endpoint, logprobs) == "Hello world"
    assert sum(delta.token_count for delta in deltas) == len(ids)


@pytest.mark.parametrize("endpoint", ["chat", "completion"])
@pytest.mark.parametrize("streamed", [False, True])
def test_logprobs_run_through_the_token_that_completed_a_stop_string(
    bundle: TokenizerBundle, endpoint: Endpoint, streamed: bool
) -> None:
    """The text is trimmed at the stop string, but the logprobs list the tokens up to the one
    that completed it (vLLM's engine stopped there), none after; streamed, that token's
    logprob comes with the delta the match ends."""
    ids = _ids(bundle, "The quick brown fox")
    deltas = _decode(_decoder(bundle, endpoint, ["quick"]), ids, streamed=streamed)
    assert "".join(delta.text for delta in deltas) == "The "
    assert _shown(endpoint, joined_logprobs([d.logprobs for d in deltas])) == "The quick"
    if streamed:
        assert [_shown(endpoint, d.logprobs) for d in deltas] == ["T", "he", " quick", "", "", ""]


@pytest.mark.parametrize("endpoint", ["chat", "completion"])
@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize(
    ("stop", "include", "text"),
    [("k ", False, "quic"), (" ", True, "quick "), ("ick t", True, "quick t")],
)
def test_a_stop_string_ending_inside_a_token_keeps_that_tokens_logprob(
    bundle: TokenizerBundle,
    endpoint: Endpoint,
    streamed: bool,
    stop: str,
    include: bool,
    text: str,
) -> None:
    """A stop string that ends inside a token's text (shown or trimmed) lists that token too:
    the logprobs are never empty, and their bytes join into the text, then the rest of it."""
    ids = _ids(bundle, "quick third")
    decoder = _decoder(bundle, endpoint, [stop], include_stop_str=include)
    deltas = _decode(decoder, ids, streamed=streamed)
    assert "".join(delta.text for delta in deltas) == text
    assert _shown(endpoint, joined_logprobs([d.logprobs for d in deltas])) == "quick third"


@pytest.mark.parametrize("streamed", [False, True])
def test_text_held_back_as_a_possible_stop_string_holds_its_logprobs(
    bundle: TokenizerBundle, streamed: bool
) -> None:
    """A token whose text may begin a stop string is held back, its logprob with it, until
    the next token decides: the logprobs never run ahead of the text, and with no match
    they cover all of it."""
    ids = _ids(bundle, "The quick brown cat.")
    deltas = _decode(_decoder(bundle, stops=["brown fox"]), ids, streamed=streamed)
    text, shown = "", ""
    for delta in deltas:
        text, shown = text + delta.text, shown + _shown("chat", delta.logprobs)
        assert text.startswith(shown)
    assert shown == text == "The quick brown cat."


def test_a_stop_string_kept_in_the_text_keeps_its_logprobs(bundle: TokenizerBundle) -> None:
    """With include_stop_str_in_output the stop string is text, and its tokens have logprobs."""
    ids = _ids(bundle, "The quick brown fox")
    deltas = _decode(
        _decoder(bundle, stops=["quick"], include_stop_str=True), ids[:3], streamed=True
    )
    assert "".join(delta.text for delta in deltas) == "The quick"
    assert _shown("chat", joined_logprobs([delta.logprobs for delta in deltas])) == "The quick"


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize(
    ("stops", "text"),
    [
        (["quick"], "The quick brown fox"),  # ends in the 3rd token: within min_tokens
        (["quick brown"], "The "),  # starts within min_tokens, ends after: a match
    ],
)
def test_no_stop_string_ends_within_min_tokens(
    bundle: TokenizerBundle, streamed: bool, stops: list[str], text: str
) -> None:
    """Like vLLM, a stop string ending in the text of the first `min_tokens` tokens is no
    match; one that begins there and ends later is."""
    ids = _ids(bundle, "The quick brown fox")
    deltas = _decode(_decoder(bundle, stops=stops, min_tokens=3), ids, streamed=streamed)
    assert "".join(delta.text for delta in deltas) == text


@pytest.mark.parametrize("streamed", [False, True])
def test_a_stop_token_is_left_out_of_the_text(bundle: TokenizerBundle, streamed: bool) -> None:
    """The `stop_token_ids` entry the engine stopped on is not shown (vLLM skips it unless
    `include_stop_str_in_output`), nor its logprob, though it counts in the usage."""
    ids = _ids(bundle, "The quick brown fox")
    decoder = _decoder(bundle, hidden_ids=frozenset({ids[-1]}))
    deltas = _decode(decoder, ids, streamed=streamed)
    assert "".join(delta.text for delta in deltas) == "The quick brown"
    assert sum(delta.token_count for delta in deltas) == len(ids)
    assert _shown("chat", joined_logprobs([d.logprobs for d in deltas])) == "The quick brown"


def test_a_stop_token_within_min_tokens_is_text(bundle: TokenizerBundle) -> None:
    """A stop token among the first `min_tokens` did not stop the engine (vLLM's check), so
    it is text like any other."""
    ids = _ids(bundle, "The quick brown fox")
    decoder = _decoder(bundle, hidden_ids=frozenset({ids[2]}), min_tokens=4)
    deltas = _decode(decoder, ids[:3], streamed=True)
    assert "".join(delta.text for delta in deltas) == "The quick"


def _parsed_decoder(
    bundle: TokenizerBundle,
    stops: list[str],
    tools: ToolCallParser | None,
    reasoning: ReasoningParser | None = None,
) -> ChoiceDecoder:
    options = DecodeOptions(False, True, [], hidden_ids=frozenset(bundle.eos_token_ids))
    return ChoiceDecoder(
        0, bundle, "chat", stops, False, options, TokenTexts(bundle.tokenizer), "", tools, reasoning
    )


@pytest.mark.parametrize("streamed", [False, True])
def test_with_tools_a_stop_string_after_whitespace_keeps_its_tokens_logprob(
    bundle: TokenizerBundle, streamed: bool
) -> None:
    """Whitespace held beside calls, then a stop string: the token holding both is listed,
    as without tools."""
    decoder = _parsed_decoder(bundle, ["quick"], HermesParser(["get_weather"]))
    deltas = _decode(decoder, _ids(bundle, "Hello quick brown"), streamed=streamed)
    assert "".join(delta.text for delta in deltas) == "Hello "
    assert _shown("chat", joined_logprobs([d.logprobs for d in deltas])) == "Hello quick"


_HARMONY_CALL = (
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
    '<|message|>{"city": "Paris"}<|call|>'
)


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize(
    ("output", "stops", "content", "shown"),
    [
        (
            "<|channel|>analysis<|message|>hmm<|end|><|start|>assistant<|channel|>final"
            "<|message|>Hello think more",
            ["think"],
            "Hello ",
            "Hello think",
        ),
        (
            "<|channel|>final<|message|>Hello<|end|><|start|>assistant<|channel|>final"
            "<|message|>world. \n\n<|end|>" + _HARMONY_CALL,
            [],
            "Hello\nworld.",
            "Helloworld.",
        ),
    ],
)
def test_harmony_content_logprobs_with_tools(
    streamed: bool, output: str, stops: list[str], content: str, shown: str
) -> None:
    """Harmony's reasoning and tool parsers: the text the reasoning parser writes (a newline
    joining messages) keeps content positions aligned, and whole and streamed agree."""
    harmony = load_tokenizer_bundle(tokenizer_dir(harmony=True))
    decoder = _parsed_decoder(
        harmony, stops, HarmonyToolParser(["get_weather"]), HarmonyReasoningParser()
    )
    deltas = _decode(decoder, _ids(harmony, output), streamed=streamed)
    assert "".join(delta.text for delta in deltas) == content
    assert _shown("chat", joined_logprobs([d.logprobs for d in deltas])) == shown


@pytest.mark.parametrize("tools", [False, True])
@pytest.mark.parametrize("streamed", [False, True])
def test_a_stop_string_in_the_thinking_lists_no_logprobs(streamed: bool, tools: bool) -> None:
    """A stop string matched inside the thinking ends the answer with no content, and so
    with no logprobs (thinking tokens never are listed)."""
    thinking = load_tokenizer_bundle(tokenizer_dir(thinking=True))
    output = "<think>\nLet me think about the quick brown fox.\n</think>\n\nThe answer."
    decoder = _parsed_decoder(
        thinking,
        ["quick brown"],
        HermesParser(["get_weather"]) if tools else None,
        ThinkParser("qwen3", starts_inside=False),
    )
    deltas = _decode(decoder, _ids(thinking, output), streamed=streamed)
    assert "".join(delta.text for delta in deltas) == ""
    assert joined_logprobs([d.logprobs for d in deltas]) is None


def _bytes(logprobs: Any) -> bytes | None:
    """The bytes a chat answer's logprobs add up to (None: no logprobs)."""
    if logprobs is None:
        return None
    return bytes(b for entry in logprobs["content"] for b in entry["bytes"])


def _finished(
    decoder: ChoiceDecoder, ids: list[int], *, streamed: bool, reason: str
) -> list[ChoiceDelta]:
    """The deltas of a choice fed its ids one at a time (streamed) or all at once, then
    finished for `reason`."""
    groups = [[token_id] for token_id in ids] if streamed else [ids]
    return [*(decoder.feed(group, _logprobs(group)) for group in groups), decoder.finish(reason)]


@pytest.mark.parametrize("endpoint", ["chat", "completion"])
@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("eos", [False, True])
@pytest.mark.parametrize(("text", "cut"), [("延", 2), ("延ok延", 1)])
def test_a_stop_list_keeps_the_logprobs_of_a_cut_characters_bytes(
    bundle: TokenizerBundle, endpoint: Endpoint, streamed: bool, eos: bool, text: str, cut: int
) -> None:
    """An answer that ends inside a character (at `max_tokens`, or before the EOS) lists that
    character's first bytes' tokens, as vLLM lists every token, with a stop list that never
    matches as without one (with it the logprobs wait for their text)."""
    ids = _ids(bundle, text)[:-cut]
    sent = [*ids, bundle.eos_token_ids[0]] if eos else ids
    reason = "stop" if eos else "length"
    listed = []
    for stops in ([], ["zzzz"]):
        decoder = _decoder(bundle, endpoint, stops)
        deltas = _finished(decoder, sent, streamed=streamed, reason=reason)
        listed.append(joined_logprobs([delta.logprobs for delta in deltas]))
    assert listed[0] is not None and listed[1] == listed[0]
    assert len(listed[0]["content" if endpoint == "chat" else "tokens"]) == len(ids)


@pytest.mark.parametrize("streamed", [False, True])
def test_a_stop_string_after_a_characters_first_bytes_lists_them(
    bundle: TokenizerBundle, streamed: bool
) -> None:
    """Bytes of a character no token completed, then a stop string: their tokens are listed
    with those up to the one that completed it."""
    ids = [*_ids(bundle, "延")[:-1], *_ids(bundle, "zzzz and more")]
    deltas = _finished(_decoder(bundle, stops=["zzzz"]), ids, streamed=streamed, reason="stop")
    assert _bytes(joined_logprobs([delta.logprobs for delta in deltas])) == b"\xe5\xbbzzzz"


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize(
    ("output", "starts_inside", "shown"),
    [
        ("<think>\nhm\n</think>\n\nHi.延", False, b"Hi.\xe5\xbb"),
        ("Hi.延", False, b"Hi.\xe5\xbb"),
        ("延", True, None),  # cut inside the thinking
        ("hm.延", True, None),
    ],
)
def test_with_parsers_a_cut_characters_bytes_go_with_the_text_before_them(
    streamed: bool, output: str, starts_inside: bool, shown: bytes | None
) -> None:
    """With the reasoning and tool-call parsers, an answer cut inside a character lists that
    character's first bytes when its content ran up to them, not when it was thinking."""
    thinking = load_tokenizer_bundle(tokenizer_dir(thinking=True))
    reasoning = ThinkParser("qwen3", starts_inside=starts_inside)
    decoder = _parsed_decoder(thinking, [], HermesParser(["get_weather"]), reasoning)
    ids = _ids(thinking, output)[:-1]
    deltas = _finished(decoder, ids, streamed=streamed, reason="length")
    logprobs = joined_logprobs([delta.logprobs for delta in deltas])
    assert _bytes(logprobs) == shown
