"""The model's tokenizer, loaded: `load_tokenizer_bundle` reads a directory fetched from the
server (see `tokenizer_fetch`), or any HF model directory with a `tokenizer.json`, into a
`TokenizerBundle`; it is blocking file work that callers run in a thread.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
from tokenizers import Tokenizer

from backends.vllm_grpc import prompt_bound
from backends.vllm_grpc.chat_template import CompiledChatTemplate, compile_chat_template
from backends.vllm_grpc.sampling_defaults import NO_DEFAULTS, SamplingDefaults, sampling_defaults
from backends.vllm_grpc.special_text import SpecialText, special_text_of
from core.backend_errors import BackendError
from core.errors import InvalidRequest


class TokenizerFetchError(BackendError):
    """The server's tokenizer could not be downloaded, verified, unpacked or loaded."""


@dataclass(frozen=True, slots=True, eq=False)
class TokenizerBundle:
    """Everything the gateway needs to tokenize prompts and detokenize answers for one model.

    `special_tokens` are the template variables Hugging Face exposes (`bos_token`, ...);
    `eos_token_ids` joins the tokenizer's EOS with `generation_config.json`'s, in that order;
    `added_tokens` maps the ids of added tokens to their text (the detokenizer needs it for
    `spaces_between_special_tokens=False`); `chat_templates` are compiled once, by name
    ("default" for a model with a single template).
    """

    directory: Path
    tokenizer: Tokenizer
    special_tokens: Mapping[str, str]
    add_bos_token: bool
    add_eos_token: bool
    eos_token_ids: tuple[int, ...]
    added_tokens: Mapping[int, str]
    chat_templates: Mapping[str, CompiledChatTemplate]
    model_max_length: int | None
    # The most characters one token covers (`prompt_bound`); None: no bound holds.
    max_chars_per_token: int | None = None
    # Special tokens' text in messages is encoded as plain text (`special_text`); None: it
    # becomes the control token, as vLLM does (or the tokenizer has no special tokens).
    special_text: SpecialText | None = None
    # The model's sampling defaults (generation_config.json) for fields a request omits.
    sampling_defaults: SamplingDefaults = NO_DEFAULTS

    @property
    def bos_token(self) -> str | None:
        return self.special_tokens.get("bos_token")

    @property
    def eos_token(self) -> str | None:
        return self.special_tokens.get("eos_token")

    @property
    def pad_token(self) -> str | None:
        return self.special_tokens.get("pad_token")

    @property
    def unk_token(self) -> str | None:
        return self.special_tokens.get("unk_token")

    def encode(self, text: str, add_special_tokens: bool) -> list[int]:
        """Token ids of `text`; chat prompts use add_special_tokens=False like HF."""
        # The batch call skips offsets (~1.5x faster than `encode`) and releases the GIL.
        [encoding] = self.tokenizer.encode_batch_fast([text], add_special_tokens=add_special_tokens)
        ids: list[int] = encoding.ids
        return ids

    def cannot_fit(self, text: str, limit: int) -> int:
        """The fewest tokens `text` can have when that is `limit` or more (it cannot fit a
        context of `limit` tokens whatever its tokens are), else 0: told from its length
        alone, without the tokenizing that costs memory in proportion to the text."""
        per_token = self.max_chars_per_token
        if per_token is None or len(text) < limit * per_token:
            return 0
        return -(-len(text) // per_token)

    def encode_many(self, texts: list[str], add_special_tokens: bool) -> list[list[int]]:
        """Token ids of each text, in one call (the tokenizer's threads share the work)."""
        if not texts:
            return []
        encodings = self.tokenizer.encode_batch_fast(texts, add_special_tokens=add_special_tokens)
        return [encoding.ids for encoding in encodings]

    def chat_template(self, *, tools: bool) -> CompiledChatTemplate:
        """The template HF would pick: "tool_use" when tools are given and it exists."""
        templates = self.chat_templates
        if not templates:
            raise InvalidRequest(
                "This model has no chat template; use /v1/completions instead.", param="messages"
            )
        if tools and "tool_use" in templates:
            return templates["tool_use"]
        if "default" in templates:
            return templates["default"]
        raise InvalidRequest(
            f"This model has several chat templates and none is the default: {sorted(templates)}.",
            param="messages",
        )


def load_tokenizer_bundle(
    directory: Path, *, split_special_tokens: bool = True, generation_config: bool = True
) -> TokenizerBundle:
    """Load a tokenizer directory the way HF's `AutoTokenizer` reads it (fast tokenizers only).
    `split_special_tokens`: messages' special-token text stays plain text; `generation_config`:
    generation_config.json's sampling values are the defaults (vLLM's `--generation-config`
    `auto`, else `vllm`)."""
    tokenizer_file = directory / "tokenizer.json"
    if not tokenizer_file.is_file():
        raise TokenizerFetchError(
            f"{directory} has no tokenizer.json (slow-only tokenizers are not supported)."
        )
    try:
        tokenizer = Tokenizer.from_file(str(tokenizer_file))
    except Exception as exc:
        raise TokenizerFetchError(f"Cannot load {tokenizer_file}: {exc}") from exc
    # HF encodes without the truncation/padding a tokenizer.json may carry.
    tokenizer.no_truncation()
    tokenizer.no_padding()
    config = _read_json(directory / "tokenizer_config.json")
    if "added_tokens_decoder" not in config:
        # Legacy layout: HF lets special_tokens_map.json override the config's tokens.
        config = {**config, **_read_json(directory / "special_tokens_map.json")}
    special_tokens = _special_tokens(config)
    generation = _read_json(directory / "generation_config.json")
    eos_ids = _eos_token_ids(tokenizer, special_tokens.get("eos_token"), generation)
    max_length = config.get("model_max_length")
    if not isinstance(max_length, int) or max_length >= 10**12:  # HF's "no limit" is 1e30
        max_length = None
    return TokenizerBundle(
        directory=directory,
        tokenizer=tokenizer,
        special_tokens=special_tokens,
        add_bos_token=bool(config.get("add_bos_token", False)),
        add_eos_token=bool(config.get("add_eos_token", False)),
        eos_token_ids=eos_ids,
        added_tokens={i: t.content for i, t in tokenizer.get_added_tokens_decoder().items()},
        chat_templates=_compile_templates(directory, config, special_tokens),
        model_max_length=max_length,
        max_chars_per_token=prompt_bound.max_chars_per_token(tokenizer),
        special_text=special_text_of(tokenizer) if split_special_tokens else None,
        sampling_defaults=sampling_defaults(generation if generation_config else {}),
    )


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TokenizerFetchError(f"Cannot read {path}: {exc}") from exc
    return value if isinstance(value, dict) else {}


def _token_text(value: Any) -> str | None:
    """A special token given as a string or as an AddedToken dict {"content": ...}."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("content"), str):
        return str(value["content"])
    return None


def _special_tokens(config: Mapping[str, Any]) -> dict[str, str]:
    """HF's `special_tokens_map`: every `*_token` string (bos, eos, ...), named extras too."""
    tokens: dict[str, str] = {}
    extra = config.get("extra_special_tokens")
    candidates = {**config, **(extra if isinstance(extra, Mapping) else {})}
    for key, value in candidates.items():
        if key.endswith("_token"):
            text = _token_text(value)
            if text is not None:
                tokens[key] = text
    return tokens


def _eos_token_ids(
    tokenizer: Tokenizer, eos_token: str | None, generation_config: Mapping[str, Any]
) -> tuple[int, ...]:
    ids: list[int] = []
    if eos_token is not None and (eos_id := tokenizer.token_to_id(eos_token)) is not None:
        ids.append(eos_id)
    generation = generation_config.get("eos_token_id")
    for value in generation if isinstance(generation, list) else [generation]:
        if isinstance(value, int) and not isinstance(value, bool) and value not in ids:
            ids.append(value)
    return tuple(ids)


def _compile_templates(
    directory: Path, config: Mapping[str, Any], special_tokens: Mapping[str, str]
) -> dict[str, CompiledChatTemplate]:
    try:
        return {
            name: compile_chat_template(source, special_tokens)
            for name, source in _chat_template_sources(directory, config).items()
        }
    except jinja2.TemplateError as exc:
        raise TokenizerFetchError(f"The chat template of {directory} is invalid: {exc}") from exc


def _chat_template_sources(directory: Path, config: Mapping[str, Any]) -> dict[str, str]:
    """HF precedence: chat_template.jinja (+ additional_chat_templates/*.jinja), then
    tokenizer_config.json's `chat_template` (a string or a list of {name, template}), then
    the legacy processor file chat_template.json."""
    sources: dict[str, str] = {}
    jinja = directory / "chat_template.jinja"
    if jinja.is_file():
        sources["default"] = jinja.read_text(encoding="utf-8")
    extra_dir = directory / "additional_chat_templates"
    if extra_dir.is_dir():
        for path in sorted(extra_dir.glob("*.jinja")):
            sources[path.name.removesuffix(".jinja")] = path.read_text(encoding="utf-8")
    if sources:
        return sources
    value = config.get("chat_template")
    if value is None:
        value = _read_json(directory / "chat_template.json").get("chat_template")
    if isinstance(value, str):
        return {"default": value}
    if isinstance(value, list):
        return {
            str(item["name"]): str(item["template"])
            for item in value
            if isinstance(item, Mapping) and "name" in item and "template" in item
        }
    return {}
