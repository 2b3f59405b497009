"""The workload every path is measured with: one prompt, fixed output length, same parameters.

The gRPC floor sends exactly what the gateway sends for a `/v1/completions` request whose
prompt is a list of token ids (no chat template, no tokenization): the same ids (PROMPT_TEXT in
the stand-in's vocabulary, see bench.grpc_floor.prompt_ids), the same sampling parameters. The
HTTP path uses a short chat request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import orjson

GrpcApi = Literal["completions", "chat"]
PROMPT_TEXT = "Summarize the refund policy for orders older than thirty days, in one sentence."

# Sampling parameters the gateway derives from a request that sets only max_tokens
# (backends.vllm_grpc.request_builder._sampling); the floor sets the same values.
SAMPLING_DEFAULTS: dict[str, Any] = {
    "temperature": 1.0,
    "top_p": 1.0,
    "top_k": 0,
    "min_p": 0.0,
    "frequency_penalty": 0.0,
    "presence_penalty": 0.0,
    "repetition_penalty": 1.0,
    "min_tokens": 0,
    "skip_special_tokens": True,
    "spaces_between_special_tokens": True,
    "ignore_eos": False,
    "n": 1,
    "include_stop_str_in_output": False,
}


@dataclass(frozen=True, slots=True)
class Workload:
    """Prompt and output sizes shared by every path."""

    output_tokens: int = 20
    prompt_tokens: int = 32

    def fallback_prompt_ids(self) -> list[int]:
        """Ids inside the stand-in's vocabulary (757 tokens) clear of its special tokens, for
        when its tokenizer cannot be read (they decode to noise: the detokenizer works harder)."""
        return [10 + (37 * i) % 400 for i in range(self.prompt_tokens)]

    def chat_body(self, model: str, stream: bool) -> bytes:
        """An OpenAI chat request with a short user message."""
        return orjson.dumps(
            {
                "model": model,
                "messages": [{"role": "user", "content": PROMPT_TEXT}],
                "max_tokens": self.output_tokens,
                "temperature": 1.0,
                "stream": stream,
            }
        )

    def completion_ids_body(self, model: str, stream: bool, ids: Sequence[int]) -> bytes:
        """An OpenAI completions request whose prompt is the token ids `ids`."""
        return orjson.dumps(
            {
                "model": model,
                "prompt": list(ids),
                "max_tokens": self.output_tokens,
                "temperature": 1.0,
                "stream": stream,
            }
        )

    def grpc_gateway_request(
        self, api: GrpcApi, model: str, stream: bool, ids: Sequence[int]
    ) -> tuple[str, bytes]:
        """(path, body) of the gateway request for the gRPC path."""
        if api == "chat":
            return "/v1/chat/completions", self.chat_body(model, stream)
        return "/v1/completions", self.completion_ids_body(model, stream, ids)
