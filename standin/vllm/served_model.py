"""The stand-in "model" a server serves, built once per tokenizer directory, and what it
generates for a prompt, which tests anywhere can compute ahead of the server:

    from standin.vllm.sampling import SamplingSpec
    from standin.vllm.served_model import expected_generation
    gen = expected_generation("hello", SamplingSpec(max_tokens=8))
    gen.token_ids, gen.text, gen.finish_reason
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from standin.vllm import tokenizer_files
from standin.vllm.config import SimConfig
from standin.vllm.generator import SimModel
from standin.vllm.sampling import Generation, SamplingSpec
from standin.vllm.vocab import load_vocabulary


@cache
def load_model(tokenizer_dir: str = "") -> SimModel:
    """The generator for `tokenizer_dir` (empty: the built-in stand-in tokenizer), built once."""
    return SimModel(load_vocabulary(tokenizer_dir))


def model_for(config: SimConfig) -> SimModel:
    """The generator `config` serves: its tokenizer directory, else the built-in one (the
    gpt-oss-like model's when `harmony`, else the thinking model's when `reasoning`)."""
    directory = config.tokenizer_dir
    if not directory and config.harmony:
        directory = str(tokenizer_files.tokenizer_dir(harmony=True))
    elif not directory and config.reasoning:
        directory = str(tokenizer_files.tokenizer_dir(thinking=True))
    return load_model(directory)


def expected_generation(
    prompt: str | Sequence[int],
    spec: SamplingSpec | None = None,
    *,
    index: int = 0,
    config: SimConfig | None = None,
) -> Generation:
    """What a server with `config` generates for `prompt` (raw text is tokenized like the
    Generate RPC's `text` input, without a chat template)."""
    config = config or SimConfig()
    model = model_for(config)
    prompt_ids = model.vocab.encode(prompt) if isinstance(prompt, str) else list(prompt)
    return model.generate(
        prompt_ids,
        spec or SamplingSpec(),
        index,
        output_tokens=config.output_tokens,
        max_context_length=config.max_context_length,
        tool_format=config.tool_format,
        reasoning=config.reasoning,
    )
