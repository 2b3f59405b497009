"""What the parser tests share: the request's functions, and feeding an output in pieces."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence

import orjson

from backends.tool_calls.functions import Functions
from backends.tool_calls.parsed import Parsed, ToolCallParser

Calls = list[tuple[str, object]]
Case = tuple[str, str, Calls]  # output, content, (name, arguments) of each call

TOOLS = Functions.from_tools(
    [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": "search",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "q": {"type": "string"},
                        "limit": {"type": "integer"},
                        "exact": {"type": "boolean"},
                        "score": {"type": "number"},
                        "filters": {"type": "object"},
                        "tags": {"type": "array"},
                        "note": {"type": ["string", "null"]},
                    },
                },
            },
        },
    ]
)


def parse_pieces(parser: ToolCallParser, pieces: Iterable[str]) -> tuple[str, Calls]:
    """Content and (name, arguments) of every call, feeding `pieces` one by one."""
    results: list[Parsed] = [parser.feed(piece) for piece in pieces]
    results.append(parser.finish())
    content = "".join(r.content for r in results)
    assert all(c.id.startswith("call_") for r in results for c in r.calls)
    return content, call_values(results)


def call_values(results: Iterable[Parsed]) -> Calls:
    """(name, arguments object) of every call; the arguments' text where it is no JSON."""
    return [(name, _value(arguments)) for name, arguments in whole_calls(results)]


def whole_calls(results: Iterable[Parsed]) -> list[tuple[str, str]]:
    """(name, arguments text) of every call, its streamed arguments joined."""
    calls: list[tuple[str, str]] = []
    for result in results:
        if result.arguments:
            assert calls, "arguments before any call"
            calls[-1] = (calls[-1][0], calls[-1][1] + result.arguments)
        calls.extend((call.name, call.arguments) for call in result.calls)
    return calls


def _value(arguments: str) -> object:
    """The arguments object, or their text where it is no JSON (a call whose streamed
    arguments broke off)."""
    try:
        return orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return arguments


def cut(text: str, points: Iterable[int]) -> list[str]:
    """`text` cut at `points` (taken modulo its length + 1, in order)."""
    bounds = sorted({0, len(text), *(p % (len(text) + 1) for p in points)})
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def assert_every_split(
    make: Callable[[], ToolCallParser], output: str, expected: tuple[str, Calls]
) -> None:
    """Cut at every point, and at every pair of points (as tokens arrive), the result is the
    expected one."""
    for points in itertools.chain(
        ((p,) for p in range(len(output) + 1)),
        itertools.combinations(range(1, len(output)), 2),
    ):
        pieces = cut(output, points)
        assert parse_pieces(make(), pieces) == expected, pieces


def one_char_at_a_time(make: Callable[[], ToolCallParser], output: str) -> Sequence[Parsed]:
    """What each character fed alone gives, then what `finish` gives."""
    parser = make()
    return [*(parser.feed(char) for char in output), parser.finish()]
