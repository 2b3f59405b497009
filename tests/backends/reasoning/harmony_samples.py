"""gpt-oss outputs as the engine returns them (after the prompt's `<|start|>assistant`, decoded
with special tokens kept), and the parts of gpt-oss's chat template that show its format; shared
by the reasoning and the tool-call tests."""

from __future__ import annotations

from dataclasses import dataclass

# Trimmed from gpt-oss's public chat template: how it writes turns, thinking and calls back.
GPT_OSS_TEMPLATE = (
    '{{- "<|start|>system<|message|>" }}{{- build_system_message() }}{{- "<|end|>" }}'
    "{%- for message in loop_messages -%}{%- if message.role == 'assistant' -%}"
    '{%- if "tool_calls" in message %}'
    '{{- "<|start|>assistant<|channel|>analysis<|message|>" + message.thinking + "<|end|>" }}'
    '{{- "<|start|>assistant to=" }}'
    '{{- "functions." + tool_call.name + "<|channel|>commentary " }}'
    '{{- (tool_call.content_type if tool_call.content_type is defined else "json")'
    ' + "<|message|>" }}{{- tool_call.arguments|tojson }}{{- "<|call|>" }}'
    "{%- else %}"
    '{{- "<|start|>assistant<|channel|>final<|message|>" + message.content + "<|end|>" }}'
    "{%- endif %}{%- elif message.role == 'user' -%}"
    '{{- "<|start|>user<|message|>" + message.content + "<|end|>" }}'
    "{%- endif -%}{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|start|>assistant{%- endif -%}"
)

WEATHER_CALL = (
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
    '<|message|>{"city": "Paris"}<|call|>'
)
SEARCH_CALL = (
    '<|start|>assistant<|channel|>commentary to=functions.search <|constrain|>json<|message|>{"q": '
    '"a<b", "limit": 2}<|call|>'
)


@dataclass(frozen=True, slots=True)
class Sample:
    """An output, what the reasoning parser makes of it, and the calls read from its content."""

    name: str
    output: str
    reasoning: str
    content: str  # what the reasoning parser passes on (call markup included)
    answer: str  # the content once the tool-call parser took the calls out
    calls: tuple[tuple[str, object], ...] = ()


SAMPLES = [
    Sample(
        "analysis then final",
        '<|channel|>analysis<|message|>User asks: "What is 2 + 2?" Simple.<|end|>'
        "<|start|>assistant<|channel|>final<|message|>2 + 2 = 4.<|return|>",
        'User asks: "What is 2 + 2?" Simple.',
        "2 + 2 = 4.",
        "2 + 2 = 4.",
    ),
    Sample(
        "analysis then a call",
        "<|channel|>analysis<|message|>Need to use function get_weather.<|end|>" + WEATHER_CALL,
        "Need to use function get_weather.",
        WEATHER_CALL,
        "",
        (("get_weather", {"city": "Paris"}),),
    ),
    Sample(
        "a preamble then a call",
        "<|channel|>analysis<|message|>Two steps.<|end|>"
        "<|start|>assistant<|channel|>commentary<|message|>**Plan**: look it up.<|end|>"
        + SEARCH_CALL,
        "Two steps.",
        "**Plan**: look it up." + SEARCH_CALL,
        "**Plan**: look it up.",
        (("search", {"q": "a<b", "limit": 2}),),
    ),
    Sample(
        "two calls",
        "<|channel|>analysis<|message|>Both.<|end|>" + WEATHER_CALL + SEARCH_CALL,
        "Both.",
        WEATHER_CALL + SEARCH_CALL,
        "",
        (("get_weather", {"city": "Paris"}), ("search", {"q": "a<b", "limit": 2})),
    ),
    Sample(
        "a malformed call",
        "<|channel|>analysis<|message|>Call it.<|end|><|start|>assistant<|channel|>commentary "
        'to=functions.get_weather <|constrain|>json<|message|>{"city": <|call|>',
        "Call it.",
        "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
        '<|message|>{"city": <|call|>',
        "",  # its header was sent: a call, its arguments what was valid of them
        (("get_weather", '{"city": '),),
    ),
    Sample(
        "a call to no requested function",
        "<|channel|>commentary to=functions.launch <|constrain|>json<|message|>{}<|call|>",
        "",
        "<|start|>assistant<|channel|>commentary to=functions.launch <|constrain|>json"
        "<|message|>{}<|call|>",
        "<|start|>assistant<|channel|>commentary to=functions.launch <|constrain|>json"
        "<|message|>{}<|call|>",
    ),
    Sample(
        "final only",
        "<|channel|>final<|message|>Hello! How can I help?<|return|>",
        "",
        "Hello! How can I help?",
        "Hello! How can I help?",
    ),
    Sample(
        "analysis cut by max_tokens",
        "<|channel|>analysis<|message|>The user wants a poem. Let me think about rhy",
        "The user wants a poem. Let me think about rhy",
        "",
        "",
    ),
    Sample(
        "the recipient before the channel",
        ' to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Oslo"}<|call|>',
        "",
        "<|start|>assistant to=functions.get_weather<|channel|>commentary json"
        '<|message|>{"city": "Oslo"}<|call|>',
        "",
        (("get_weather", {"city": "Oslo"}),),
    ),
    Sample(
        "the recipient before the channel, after thinking",
        "<|channel|>analysis<|message|>Search.<|end|><|start|>assistant to=functions.search"
        '<|channel|>commentary <|constrain|>json<|message|>{"q": "x"}<|call|>',
        "Search.",
        "<|start|>assistant to=functions.search<|channel|>commentary <|constrain|>json"
        '<|message|>{"q": "x"}<|call|>',
        "",
        (("search", {"q": "x"}),),
    ),
    Sample(
        "a call whose end token the decoder hid",
        "<|channel|>analysis<|message|>Go.<|end|><|start|>assistant<|channel|>commentary "
        'to=functions.search <|constrain|>json<|message|>{"q": "y"}',
        "Go.",
        "<|start|>assistant<|channel|>commentary to=functions.search <|constrain|>json"
        '<|message|>{"q": "y"}',
        "",
        (("search", {"q": "y"}),),
    ),
    Sample(
        "two thinking messages, a preamble and an answer",
        "<|channel|>analysis<|message|>First.<|end|><|start|>assistant<|channel|>analysis"
        "<|message|>Second.<|end|><|start|>assistant<|channel|>commentary<|message|>Checking."
        "<|end|><|start|>assistant<|channel|>final<|message|>Done: a <| b.<|return|>",
        "First.\nSecond.",
        "Checking.\nDone: a <| b.",
        "Checking.\nDone: a <| b.",
    ),
]
