"""Canonical request forms and the cache keys derived from them.

Every request field is either part of the key or deliberately excluded, in the two tables
below; a test fails when a new field appears in neither, so adding a field forces a decision.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

import orjson

from core.protocol import ChatCompletionRequest, ChatMessage, CompletionRequest

# Fields that change the answer: they are in the canonical form, with defaults filled in.
KEYED_FIELDS = frozenset(
    {
        "model", "messages", "prompt", "n", "stop", "max_tokens", "max_completion_tokens",
        "temperature", "top_p", "seed", "presence_penalty", "frequency_penalty", "logit_bias",
        "logprobs", "top_logprobs", "response_format", "tools", "tool_choice",
        "parallel_tool_calls", "top_k", "min_p", "repetition_penalty", "min_tokens",
        "ignore_eos", "skip_special_tokens", "spaces_between_special_tokens",
        "include_stop_str_in_output", "stop_token_ids", "chat_template_kwargs",
        "add_generation_prompt", "continue_final_message", "echo", "best_of", "suffix",
        "reasoning_effort", "verbosity", "include_reasoning",
    }
)  # fmt: skip

# Fields that do not change the answer, and why.
EXCLUDED_FIELDS = {
    "user": "end-user identifier for abuse tracking; the tenant is keyed separately",
    "stream": "one entry serves streaming and non-streaming requests",
    "stream_options": "only shapes the stream's framing (usage chunk)",
    "metadata": "request annotations, not model input",
    "store": "nothing is kept for chat: accepted and ignored (an upstream may keep it)",
    "prompt_cache_key": "a routing hint for an upstream's prefix cache, not model input",
    "safety_identifier": "end-user identifier for abuse tracking, as user",
    "service_tier": "scheduling class, not model input",
    "modalities": 'only ["text"] is accepted, which is the default',
}

_LINE_BREAK = re.compile(r"\r\n?")
_WORDS = re.compile(r"\S+")
KEY_SCHEMA = 5
"""Part of every digest. 1 collapsed whitespace inside message text, which let "def f():\n
    return" share an entry with "def f(): return"; 2 trimmed message text and unified its line
    breaks, which let "P" and "P\n\n" (another prompt to the model: a template renders the
    newlines as tokens, an HTTP upstream reads them) share one entry; 3 keyed an omitted
    `temperature`, `top_p`, `top_k`, `min_p` or `repetition_penalty` as its neutral value,
    though the model's generation_config.json samples it otherwise; 4 sorted the keys of every
    object, inside tools and JSON schemas too, where their order is model input (a template
    renders a tool's JSON as sent, constrained decoding writes members in the schema's order:
    `reasoning` before `answer` is another answer), so such requests shared an entry. A new
    schema keeps such entries unreachable."""
SCOPE_SCHEMA = 6
"""Part of every semantic scope's digest: KEY_SCHEMA until 3, which changed exact keys only
(a scope's messages were still normalized), so entries stored before it stayed reachable; 4 for
the omitted sampling fields, as KEY_SCHEMA; 5 when the earlier messages that scope a query
became verbatim: 4 trimmed each text part, so code or YAML sent as one part a line shared one
scope whatever its indentation (a line inside a loop or after it); 6 as KEY_SCHEMA 5."""


@dataclass(frozen=True, slots=True)
class KeyContext:
    """What besides the body goes into a key."""

    tenant: str
    model_revision: str = ""
    prompt_version: str = ""
    answer_shape: str = ""
    """The gateway's settings that shape the model's prompts and answers (parsers, special
    tokens, sampling defaults, tokenizer), so an answer made under others never serves."""
    max_tokens_from_key: bool = False
    """The body's `max_tokens` is its API key's cap, not the client's (`canonical`)."""


def compared_text(value: str) -> str:
    """The last user text as compared by meaning: one kind of line break, without blank lines
    around it or whitespace at its end; whitespace inside and the first line's indentation
    kept (they change what code, tables and verse mean, and the verifier compares them).
    Everything else in a key is verbatim: every character of it is what the model reads."""
    text = _LINE_BREAK.sub("\n", value).rstrip()
    return text[text.rfind("\n", 0, len(text) - len(text.lstrip())) + 1 :]


def _content(content: str | list[dict[str, Any]] | None) -> Any:
    if content is None or isinstance(content, str):
        return content
    parts = []
    for part in content:
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            parts.append({"type": "text", "text": part["text"]})
        else:
            parts.append(part)
    return parts


def _message(message: ChatMessage) -> dict[str, Any]:
    return {
        "role": message.role,
        "content": _content(message.content),
        "name": message.name,
        "tool_calls": message.tool_calls,
        "tool_call_id": message.tool_call_id,
        "reasoning_content": message.reasoning_content,
    }


def _sampling(body: ChatCompletionRequest | CompletionRequest) -> dict[str, Any]:
    """The sampling fields shared by both endpoints, explicit defaults filled in."""
    top_k = None if body.top_k is None else max(body.top_k, 0)
    return {
        "model": body.model,
        "n": body.n,
        "stop": sorted(set(body.stop_list)),
        "max_tokens": body.max_output_tokens,
        # Left out, these five are sampled with the model's generation_config.json values
        # (over gRPC): keyed as None, apart from any value sent.
        "temperature": None if body.temperature is None else float(body.temperature),
        "top_p": None if body.top_p is None else float(body.top_p),
        "seed": body.seed,
        "presence_penalty": float(body.presence_penalty or 0.0),
        "frequency_penalty": float(body.frequency_penalty or 0.0),
        "logit_bias": sorted((int(k), float(v)) for k, v in (body.logit_bias or {}).items()),
        "top_k": top_k,
        "min_p": None if body.min_p is None else float(body.min_p),
        "repetition_penalty": (
            None if body.repetition_penalty is None else float(body.repetition_penalty)
        ),
        "min_tokens": body.min_tokens or 0,
        "ignore_eos": bool(body.ignore_eos),
        "skip_special_tokens": body.skip_special_tokens,
        "spaces_between_special_tokens": body.spaces_between_special_tokens,
        "include_stop_str_in_output": body.include_stop_str_in_output,
        "stop_token_ids": sorted(set(body.stop_token_ids or [])),
    }


def canonical_chat(body: ChatCompletionRequest) -> dict[str, Any]:
    """The chat request as keyed; message text verbatim (see `KEY_SCHEMA`)."""
    response_format = body.response_format
    tools = body.tools or []
    return {
        "endpoint": "chat",
        **_sampling(body),
        "messages": [_message(m) for m in body.messages],
        "logprobs": body.logprobs,
        "top_logprobs": (body.top_logprobs or 0) if body.logprobs else 0,
        "response_format": (
            response_format.model_dump(by_alias=True, exclude_none=True)
            if response_format is not None and response_format.type != "text"
            else {"type": "text"}
        ),
        "tools": tools,
        "tool_choice": body.tool_choice or ("auto" if tools else "none"),
        "parallel_tool_calls": True
        if body.parallel_tool_calls is None
        else body.parallel_tool_calls,
        # Arguments by name: their order is no input (the form is hashed as it stands).
        "chat_template_kwargs": dict(sorted((body.chat_template_kwargs or {}).items())),
        "add_generation_prompt": body.add_generation_prompt,
        "continue_final_message": body.continue_final_message,
        # Only when set, so the keys of requests without them did not change when they came.
        **({"reasoning_effort": body.reasoning_effort} if body.reasoning_effort else {}),
        **({"verbosity": body.verbosity} if body.verbosity else {}),
        # Chat logprobs became those of the content's tokens alone (a reasoning model's used
        # to hold its thinking's and its calls' markup): an entry made before must not serve.
        **({"logprobs_of": "content"} if body.logprobs else {}),
        # A vLLM server behind the gateway leaves the thinking out of what it answers (and so
        # of the entry): an answer without it must not serve a request that wants it.
        **({} if body.include_reasoning else {"include_reasoning": False}),
    }


def canonical_completion(body: CompletionRequest) -> dict[str, Any]:
    prompts = body.prompts
    # A batch is keyed by every prompt, in order; one prompt as itself (as keyed before
    # batches were served).
    prompt = prompts[0] if len(prompts) == 1 else prompts
    return {
        "endpoint": "completion",
        **_sampling(body),
        "prompt": prompt,  # verbatim: a raw prompt's every space is model input, and echoed
        "echo": body.echo,
        "logprobs": body.logprobs,
        "best_of": body.n,
        "suffix": None,
    }


def canonical(
    body: ChatCompletionRequest | CompletionRequest, max_tokens_from_key: bool = False
) -> dict[str, Any]:
    """The request as keyed. A `max_tokens` that is the API key's cap is a ceiling, which
    gives way where the context leaves less room, unlike the client's own (a 400 there): it
    is keyed as the client sent it, unset, beside the cap, so one never serves the other. The
    keys of every other request are as they were."""
    form = (
        canonical_chat(body)
        if isinstance(body, ChatCompletionRequest)
        else (canonical_completion(body))
    )
    if max_tokens_from_key:
        form["key_max_tokens"] = form["max_tokens"]
        form["max_tokens"] = None
    return form


def _digest(document: Any) -> str:
    # Not sorted: the form's own fields come in a fixed order, and the client's JSON inside it
    # (tools, schemas) is model input in the order sent (see `KEY_SCHEMA`).
    return hashlib.blake2b(orjson.dumps(document), digest_size=20).hexdigest()


def exact_key(
    body: ChatCompletionRequest | CompletionRequest,
    context: KeyContext,
    form: dict[str, Any] | None = None,
) -> str:
    """The exact-cache key: every keyed field plus model revision, prompt version and the
    settings that shape the answer.

    The tenant is not hashed in: it is the key's namespace. Pass `form` when the canonical
    form was already built.
    """
    if form is None:
        form = canonical(body, context.max_tokens_from_key)
    return _digest([KEY_SCHEMA, form, *_context(context)])


@dataclass(frozen=True, slots=True)
class SemanticQuery:
    """The part compared by meaning (the last user message) and the scope that must match."""

    text: str
    scope: str


def semantic_query(
    body: ChatCompletionRequest | CompletionRequest,
    context: KeyContext,
    form: dict[str, Any] | None = None,
) -> SemanticQuery | None:
    """Split a request for the semantic cache; None when it has no single last user text, or
    when its answer reflects its own wording, which a merely similar request's answer does
    not: a completion's `echo` (the prompt, and its logprobs, open the answer) and a chat's
    `continue_final_message` (the answer goes on from the last message's last character).

    Meaning is compared on the last user text with its ends and line breaks normalized
    (`compared_text`); the rest of the request, earlier messages verbatim, scopes it. `form`,
    the request's canonical form if already built, is not modified.
    """
    if isinstance(body, ChatCompletionRequest):
        if body.tools or body.continue_final_message:
            return None  # calls are answered from the exact cache only
        last = body.messages[-1]
        if last.role != "user" or not isinstance(last.content, str) or last.name:
            return None
        text = compared_text(last.content)
        form = dict(form) if form is not None else canonical(body, context.max_tokens_from_key)
        form["messages"] = form["messages"][:-1]
    else:
        if body.echo or not isinstance(body.prompt, str):
            return None
        text = body.prompt
        form = dict(form) if form is not None else canonical(body, context.max_tokens_from_key)
        form["prompt"] = None
    if not text:
        return None
    return SemanticQuery(text, _digest([SCOPE_SCHEMA, form, *_context(context)]))


def _context(context: KeyContext) -> tuple[str, str, str]:
    """What besides the form a digest covers."""
    return context.model_revision, context.prompt_version, context.answer_shape


EMBED_HEAD_WORDS = 40
EMBED_TAIL_WORDS = 120
"""all-MiniLM-L6-v2 reads 256 word pieces (~180 English words) and drops the rest, so a slot
after a long context (the question after a RAG passage) would be invisible to it. Longer
prompts are embedded as their first and last words, where templates put their slots."""


def embedded_text(text: str) -> str:
    """What the embedding model is given for `text`: the text itself when it fits the model,
    else its first EMBED_HEAD_WORDS and last EMBED_TAIL_WORDS words around an ellipsis."""
    words = list(_WORDS.finditer(text))
    if len(words) <= EMBED_HEAD_WORDS + EMBED_TAIL_WORDS:
        return text
    head = text[: words[EMBED_HEAD_WORDS - 1].end()]
    tail = text[words[-EMBED_TAIL_WORDS].start() :]
    return f"{head} … {tail}"
