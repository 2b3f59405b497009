"""How the stand-in writes tool calls in each model format the gateway parses: whole calls
(for one or several), and a broken call (markup a parser must keep as text).

The writers mirror the formats' public descriptions, not the gateway's parsers (the stand-in
never imports the product): a round trip through both is what the tests check.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

Call = tuple[str, dict[str, Any]]

TOOL_FORMATS = (
    "hermes",
    "qwen3_coder",
    "llama3_json",
    "mistral",
    "deepseek_v3",
    "pythonic",
    "harmony",
)
DEEPSEEK_CALLS_BEGIN, DEEPSEEK_CALLS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
_DEEPSEEK_CALL = (
    "<｜tool▁call▁begin｜>function<｜tool▁sep｜>{name}\n"
    "```json\n{arguments}\n```<｜tool▁call▁end｜>"
)


def harmony_call(name: str, arguments: str) -> str:
    """One gpt-oss call: a commentary message to the function, its arguments as JSON."""
    return (
        f"<|start|>assistant<|channel|>commentary to=functions.{name} <|constrain|>json"
        f"<|message|>{arguments}<|call|>"
    )


def write_calls(tool_format: str, calls: Sequence[Call], *, after_text: bool) -> str:
    """The markup of `calls` in `tool_format`; `after_text` when words come before it."""
    return _WRITERS[tool_format](calls, after_text)


def write_broken_call(tool_format: str, name: str, parameter: str) -> str:
    """A call to `name` whose arguments are broken JSON, not even an object, so no parser can
    have begun streaming the call (or, for Qwen3-Coder, a function and parameter left unclosed
    inside a closed block)."""
    broken = f'[{{"{parameter}": }}]'
    if tool_format == "hermes":
        return f'<tool_call>\n{{"name": "{name}", "arguments": {broken}}}\n</tool_call>'
    if tool_format == "qwen3_coder":
        return f"<tool_call>\n<function={name}>\n<parameter={parameter}>\n\n</tool_call>"
    if tool_format == "llama3_json":
        return f'<|python_tag|>{{"name": "{name}", "parameters": {broken}}}'
    if tool_format == "mistral":
        return f"[TOOL_CALLS]{name}[ARGS]{broken}"
    if tool_format == "deepseek_v3":
        call = _DEEPSEEK_CALL.format(name=name, arguments=broken)
        return f"{DEEPSEEK_CALLS_BEGIN}{call}{DEEPSEEK_CALLS_END}"
    if tool_format == "harmony":
        return harmony_call(name, broken)
    return f"[{name}({parameter}=)]"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _hermes(calls: Sequence[Call], after_text: bool) -> str:
    return "\n".join(
        f"<tool_call>\n{_json({'name': name, 'arguments': arguments})}\n</tool_call>"
        for name, arguments in calls
    )


def _qwen3_coder(calls: Sequence[Call], after_text: bool) -> str:
    def value(item: Any) -> str:
        return item if isinstance(item, str) else _json(item)

    return "\n".join(
        f"<tool_call>\n<function={name}>\n"
        + "".join(
            f"<parameter={key}>\n{value(item)}\n</parameter>\n" for key, item in arguments.items()
        )
        + "</function>\n</tool_call>"
        for name, arguments in calls
    )


def _llama3_json(calls: Sequence[Call], after_text: bool) -> str:
    # Without words before them the calls go bare, as when the engine skips <|python_tag|>.
    body = "; ".join(_json({"name": name, "parameters": arguments}) for name, arguments in calls)
    return f"<|python_tag|>{body}" if after_text else body


def _mistral(calls: Sequence[Call], after_text: bool) -> str:
    return "".join(f"[TOOL_CALLS]{name}[ARGS]{_json(arguments)}" for name, arguments in calls)


def _deepseek_v3(calls: Sequence[Call], after_text: bool) -> str:
    body = "".join(
        _DEEPSEEK_CALL.format(name=name, arguments=_json(arguments)) for name, arguments in calls
    )
    return f"{DEEPSEEK_CALLS_BEGIN}{body}{DEEPSEEK_CALLS_END}"


def _pythonic(calls: Sequence[Call], after_text: bool) -> str:
    listed = ", ".join(
        f"{name}({', '.join(f'{key}={_python(item)}' for key, item in arguments.items())})"
        for name, arguments in calls
    )
    return f"[{listed}]"


def _harmony(calls: Sequence[Call], after_text: bool) -> str:
    return "".join(harmony_call(name, _json(arguments)) for name, arguments in calls)


def _python(value: Any) -> str:
    """A Python literal of a JSON value (JSON's string escapes are Python's too)."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_python(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_json(k)}: {_python(v)}" for k, v in value.items()) + "}"
    return _json(value)


_WRITERS: dict[str, Callable[[Sequence[Call], bool], str]] = {
    "hermes": _hermes,
    "qwen3_coder": _qwen3_coder,
    "llama3_json": _llama3_json,
    "mistral": _mistral,
    "deepseek_v3": _deepseek_v3,
    "pythonic": _pythonic,
    "harmony": _harmony,
}
