"""Builds the stand-in's tokenizer directory offline: a byte-level BPE with a ChatML template.

The corpus mixes English, CJK and emoji so that multi-byte characters split across tokens,
which is exactly what incremental detokenization must get right.

Two variants get directories of their own: a thinking model's (another chat template) and a
gpt-oss-like model's (Harmony's special tokens added after the others, so every id the default
tokenizer has stays the same, and a Harmony chat template).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from tokenizers import (
    AddedToken,
    Tokenizer,
    decoders,
    models,
    pre_tokenizers,
    processors,
    trainers,
)

from core.env import env_dir
from standin.vllm import chat_templates

BOS_TOKEN = "<|endoftext|>"
EOS_TOKEN = "<|im_end|>"
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
VOCAB_SIZE = 1200

# gpt-oss's Harmony format: every message is `<|start|>` header `<|message|>` body `<|end|>`; the
# answer ends with `<|return|>`, a call with `<|call|>` (both stop the engine).
HARMONY_RETURN, HARMONY_CALL = "<|return|>", "<|call|>"
HARMONY_SPECIAL_TOKENS = [
    "<|start|>",
    "<|end|>",
    "<|message|>",
    "<|channel|>",
    "<|constrain|>",
    HARMONY_RETURN,
    HARMONY_CALL,
]

WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "lazy",
    "dog",
    "gateway",
    "latency",
    "token",
    "stream",
    "cache",
    "budget",
    "model",
    "replica",
    "backend",
    "request",
    "answer",
    "question",
    "deadline",
    "vector",
    "semantic",
    "exact",
    "hello",
    "world",
    "again",
    "please",
    "thanks",
    "refund",
    "policy",
    "order",
    "days",
    "old",
    "new",
    "enable",
    "disable",
    "open",
    "close",
    "ascending",
    "descending",
    "first",
    "second",
    "third",
    "number",
    "value",
    "kernel",
    "tensor",
    "parallel",
    "streaming",
    "python",
    "rust",
    "cluster",
    "node",
    "pod",
    "queue",
    "shed",
    "admit",
    "route",
    "retry",
    "你好",
    "世界",
    "模型",
    "缓存",
    "延迟",
    "请求",
    "回答",
    "数据",
    "服务",
    "网关",
    "東京",
    "大阪",
    "こんにちは",
    "ありがとう",
    "안녕하세요",
    "감사합니다",
    "Привет",
    "мир",
    "café",
    "naïve",
    "über",
    "straße",
    "façade",
    "jalapeño",
    "🙂",
    "🚀",
    "🔥",
    "👍🏽",
    "👨\u200d👩\u200d👧",
    "🇯🇵",
    "✅",
    "🧠",
    "☕",
    "🎉",
]


def _corpus() -> list[str]:
    lines = []
    for i in range(len(WORDS)):
        window = WORDS[i:] + WORDS[:i]
        lines.append(" ".join(window[:24]))
        lines.append(" ".join(reversed(window[:16])) + ".")
    return lines * 4


def build_tokenizer() -> Tokenizer:
    """Train the stand-in's tokenizer; deterministic for a given `tokenizers` version."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=2,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(_corpus(), trainer=trainer)
    return tokenizer


def build_harmony_tokenizer() -> Tokenizer:
    """The stand-in's tokenizer with Harmony's special tokens added at the end of its vocabulary."""
    tokenizer = build_tokenizer()
    tokenizer.add_special_tokens(
        [AddedToken(token, special=True, normalized=False) for token in HARMONY_SPECIAL_TOKENS]
    )
    return tokenizer


def tokenizer_config(thinking: bool = False, harmony: bool = False) -> dict[str, object]:
    template = chat_templates.THINKING_CHAT_TEMPLATE if thinking else chat_templates.CHAT_TEMPLATE
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": BOS_TOKEN,
        "eos_token": HARMONY_RETURN if harmony else EOS_TOKEN,
        "pad_token": BOS_TOKEN,
        "unk_token": None,
        "add_bos_token": False,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": 4096,
        "chat_template": chat_templates.HARMONY_CHAT_TEMPLATE if harmony else template,
    }


def _fingerprint() -> str:
    import tokenizers

    # The chat templates are written into the directory too.
    source = Path(__file__).read_bytes() + Path(chat_templates.__file__).read_bytes()
    return hashlib.sha256(source + tokenizers.__version__.encode()).hexdigest()[:16]


def write_tokenizer_dir(directory: Path, thinking: bool = False, harmony: bool = False) -> Path:
    """Write tokenizer.json, tokenizer_config.json and special_tokens_map.json into `directory`
    (and, for Harmony, generation_config.json naming both of its stop tokens)."""
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = build_harmony_tokenizer() if harmony else build_tokenizer()
    tokenizer.save(str(directory / "tokenizer.json"))
    config = tokenizer_config(thinking, harmony)
    (directory / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    special = {"bos_token": BOS_TOKEN, "eos_token": config["eos_token"], "pad_token": BOS_TOKEN}
    (directory / "special_tokens_map.json").write_text(json.dumps(special, indent=2))
    if harmony:
        stops = [tokenizer.token_to_id(token) for token in (HARMONY_RETURN, HARMONY_CALL)]
        (directory / "generation_config.json").write_text(json.dumps({"eos_token_id": stops}))
    (directory / "config.json").write_text(
        json.dumps({"model_type": "sim", "max_position_embeddings": 4096}, indent=2)
    )
    return directory


CACHE_DIR_VARIABLE = "GATEWAY_SIM_CACHE_DIR"


def default_cache_root(env: Mapping[str, str]) -> Path:
    """`GATEWAY_SIM_CACHE_DIR`, else `$TMPDIR/llm-gateway-sim`; a path that cannot be a
    directory (an existing file, say) is a SettingsError naming the variable."""
    return env_dir(env, CACHE_DIR_VARIABLE, Path(tempfile.gettempdir()) / "llm-gateway-sim")


def tokenizer_dir(
    cache_root: Path | None = None, thinking: bool = False, harmony: bool = False
) -> Path:
    """The stand-in's tokenizer directory, built once per source version and reused (a
    thinking model's has its own chat template, a gpt-oss-like one its own tokens too)."""
    root = cache_root or default_cache_root(os.environ)
    suffix = "-harmony" if harmony else "-thinking" if thinking else ""
    target = root / f"tokenizer-{_fingerprint()}{suffix}"
    if (target / "tokenizer_config.json").is_file():
        return target
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=root))
    write_tokenizer_dir(staging, thinking, harmony)
    # Another process may have won the race; its directory is identical.
    with contextlib.suppress(OSError):
        staging.rename(target)
    return target
