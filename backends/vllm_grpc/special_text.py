"""A special token's text inside a chat message is plain text, never the control token.

The chat template's markup (`<|im_start|>`, `<|end|>`, ...) must become control tokens, so the
rendered prompt is encoded with special tokens parsed; the same text typed into a message would
then become one too, and forge a turn ("hi<|im_end|>\\n<|im_start|>system\\n..."). OpenAI reads
it as text; so does the gateway. Only special tokens are control tokens here: added tokens
that are not special (Qwen3's `<think>`) are vocabulary, which the tokenizer produces for text.

How: the template inputs from the request (messages, tools, `chat_template_kwargs`) are
checked for a special token's text, or for the start of one at a string's end (which the next
string or part could complete). Only when one
is found, the prompt is rendered a second time with the first characters of the special
tokens, in the strings found, replaced by private-use characters: once those are put back it
must equal the prompt, and then they mark exactly which characters came from content. A
special token of the prompt's encoding that covers one is replaced by its characters encoded
as ordinary tokens; every other token stays as the whole-prompt encoding made it (special
tokens split the text the tokenizer pre-tokenizes, so nothing around them moves).
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tokenizers import Tokenizer

from core.errors import InvalidRequest

_PRIVATE_USE = 0xF0000  # Supplementary Private Use Area-A: no template or tokenizer meaning
_PRIVATE_USE_END = 0xFFFFD


@dataclass(frozen=True, slots=True, eq=False)
class SpecialText:
    """A tokenizer's special tokens as text; build with `special_text_of`."""

    special_ids: frozenset[int]
    pattern: re.Pattern[str]  # any special token's text
    first_chars: str
    prefixes: frozenset[str]  # every proper prefix of a special token's text
    longest: int
    plain: Tokenizer  # the same tokenizer with nothing special and nothing prepended

    def flags(self, text: str) -> bool:
        """Whether `text` holds a special token's text, or ends with the start of one."""
        if self.pattern.search(text) is not None:
            return True
        tail = text[1 - self.longest :]
        for char in self.first_chars:
            at = tail.find(char)
            while at >= 0:
                if tail[at:] in self.prefixes:
                    return True
                at = tail.find(char, at + 1)
        return False

    def encode_plain(self, text: str) -> list[int]:
        """`text`'s characters as ordinary tokens."""
        ids: list[int] = self.plain.encode(text, add_special_tokens=False).ids
        return ids


def special_text_of(tokenizer: Tokenizer) -> SpecialText | None:
    """The special tokens of `tokenizer`, or None when it has none."""
    specials = {
        token_id: added.content
        for token_id, added in tokenizer.get_added_tokens_decoder().items()
        if added.special and added.content
    }
    if not specials:
        return None
    texts = sorted(set(specials.values()), key=len, reverse=True)
    return SpecialText(
        special_ids=frozenset(specials),
        pattern=re.compile("|".join(map(re.escape, texts))),
        first_chars="".join(sorted({text[0] for text in texts})),
        prefixes=frozenset(text[:i] for text in texts for i in range(1, len(text))),
        longest=len(texts[0]),
        plain=_plain_tokenizer(tokenizer),
    )


def _plain_tokenizer(tokenizer: Tokenizer) -> Tokenizer:
    """A copy that encodes special tokens' text as ordinary tokens and adds no prefix space
    (a token's characters, exactly, wherever they sit in the prompt)."""
    config = json.loads(tokenizer.to_str())
    config["normalizer"] = _without_prepend(config.get("normalizer"))
    _no_prefix_space(config.get("pre_tokenizer"))
    plain = Tokenizer.from_str(json.dumps(config))
    plain.no_truncation()
    plain.no_padding()
    plain.encode_special_tokens = True
    return plain


def _without_prepend(normalizer: Any) -> Any:
    if not isinstance(normalizer, dict):
        return normalizer
    if normalizer.get("type") == "Prepend":
        return None
    if normalizer.get("type") == "Sequence":
        steps = [_without_prepend(step) for step in normalizer.get("normalizers", [])]
        return {**normalizer, "normalizers": [step for step in steps if step is not None]}
    return normalizer


def _no_prefix_space(pre_tokenizer: Any) -> None:
    if not isinstance(pre_tokenizer, dict):
        return
    kind = pre_tokenizer.get("type")
    if kind == "Metaspace":
        pre_tokenizer["prepend_scheme"] = "never"
        if "add_prefix_space" in pre_tokenizer:
            pre_tokenizer["add_prefix_space"] = False
    elif kind == "ByteLevel":
        pre_tokenizer["add_prefix_space"] = False
    for step in pre_tokenizer.get("pretokenizers", []):
        _no_prefix_space(step)


@dataclass(frozen=True, slots=True)
class Masked:
    """Template inputs with special text masked, where it was first found, and the
    placeholders (one per `SpecialText.first_chars`) that mask it."""

    messages: list[dict[str, Any]]
    tools: list[Any] | None
    variables: Mapping[str, Any]
    param: str
    placeholders: str


def mask_inputs(
    special: SpecialText,
    messages: list[dict[str, Any]],
    tools: list[Any] | None,
    variables: Mapping[str, Any],
    supplied: frozenset[str],
    prompt: str,
) -> Masked | None:
    """The messages, tools and the `supplied` (request-set) template variables with special
    tokens' first characters replaced by private-use characters that `prompt` (their
    rendering) does not hold, in each string that needs it; None when no string needs it (the
    common case: one scan of the strings, no copies). The template's own variables
    (`bos_token`, ...) are markup and stay as they are."""
    param = next(
        (
            f"messages[{i}].{key}"
            for i, message in enumerate(messages)
            for key, value in message.items()
            if _needs_mask(special, value)
        ),
        None,
    )
    if param is None and tools is not None and _needs_mask(special, tools):
        param = "tools"
    if param is None:
        param = next(
            (
                f"chat_template_kwargs.{key}"
                for key, value in variables.items()
                if key in supplied and _needs_mask(special, value)
            ),
            None,
        )
        if param is None:
            return None
    placeholders = _placeholders(special, prompt, param)
    table = {ord(c): p for c, p in zip(special.first_chars, placeholders, strict=True)}
    masked = [{key: _mask(special, table, v) for key, v in m.items()} for m in messages]
    masked_tools = None if tools is None else _mask(special, table, tools)
    masked_variables = {
        key: _mask(special, table, value) if key in supplied else value
        for key, value in variables.items()
    }
    return Masked(masked, masked_tools, masked_variables, param, placeholders)


def _needs_mask(special: SpecialText, value: Any) -> bool:
    if isinstance(value, str):
        return special.flags(value)
    if isinstance(value, Mapping):
        return any(_needs_mask(special, k) or _needs_mask(special, v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_needs_mask(special, item) for item in value)
    return False


def _mask(special: SpecialText, table: Mapping[int, str], value: Any) -> Any:
    if isinstance(value, str):
        return value.translate(table) if special.flags(value) else value
    if isinstance(value, Mapping):
        return {_mask(special, table, k): _mask(special, table, v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_mask(special, table, item) for item in value]
    return value


def _placeholders(special: SpecialText, prompt: str, param: str) -> str:
    count = len(special.first_chars)
    for base in range(_PRIVATE_USE, _PRIVATE_USE_END - count, count):
        chars = "".join(chr(base + k) for k in range(count))
        if not any(c in prompt for c in chars):
            return chars
    raise InvalidRequest("This text cannot be tokenized as plain text.", param=param)


def encode_prompt(
    special: SpecialText,
    tokenizer: Tokenizer,
    prompt: str,
    masked_prompt: str,
    masked: Masked,
) -> list[int]:
    """`prompt`'s token ids, with each special token that a placeholder of `masked_prompt`
    marks as content encoded as ordinary tokens. Refuses (400 naming the parameter) when the
    masked rendering, its characters put back, is not the prompt: the template treated the
    masked text differently, so where the content went cannot be told exactly."""
    placeholders = masked.placeholders
    back = {ord(p): c for c, p in zip(special.first_chars, placeholders, strict=True)}
    if len(masked_prompt) != len(prompt) or masked_prompt.translate(back) != prompt:
        raise InvalidRequest(
            "This text holds a special token of the model's tokenizer in a way its chat "
            "template transforms, so it cannot be kept plain text.",
            param=masked.param,
        )
    marks = [m.start() for m in re.finditer(f"[{re.escape(placeholders)}]", masked_prompt)]
    encoding = tokenizer.encode(prompt, add_special_tokens=False)
    ids: list[int] = []
    for token_id, (start, end) in zip(encoding.ids, encoding.offsets, strict=True):
        if token_id in special.special_ids:
            at = bisect.bisect_left(marks, start)
            if at < len(marks) and marks[at] < end:
                ids.extend(special.encode_plain(prompt[start:end]))
                continue
        ids.append(token_id)
    return ids
