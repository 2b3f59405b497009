"""The references inside a client's JSON schema (`$ref`, `$dynamicRef`, `$recursiveRef`),
each resolved within the schema itself: a reference that points nowhere, or outside the
schema (a URL, another file, even the metaschema's address), would reach the engine's
grammar compiler, which cannot fetch it and fails or reads it as "any value". Nothing is
ever fetched: a reference is refused rather than followed.

A reference is local when it starts with `#`: `#` is the whole schema, `#/a/b` a JSON
Pointer from its root (as the engines resolve it, whatever `$id` a subschema declares),
`#name` an `$anchor` or `$dynamicAnchor` (draft 4-7: an `$id` of `#name`). Only schema
keywords are followed, so a `$ref` inside an `enum`, a `const` or an example is data, unless
a pointer names that place: the engine then compiles it as a schema, references and all.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

REFERENCES = (b'"$ref"', b'"$dynamicRef"', b'"$recursiveRef"')
"""A schema's JSON text holds one of these when it may hold a reference."""
# What each keyword holds: a reference, an anchor, an id (an anchor when it is `#name`), one
# subschema, a list of them, or a map of names to them.
_REF, _ANCHOR, _ID, _ONE, _LIST, _NAMED = range(6)
_KEYWORDS = {
    **dict.fromkeys(("$ref", "$dynamicRef", "$recursiveRef"), _REF),
    **dict.fromkeys(("$anchor", "$dynamicAnchor"), _ANCHOR),
    **dict.fromkeys(("$id", "id"), _ID),
    **dict.fromkeys(
        (
            "additionalItems",
            "additionalProperties",
            "contains",
            "contentSchema",
            "else",
            "if",
            "not",
            "propertyNames",
            "then",
            "unevaluatedItems",
            "unevaluatedProperties",
        ),
        _ONE,
    ),
    **dict.fromkeys(("allOf", "anyOf", "items", "oneOf", "prefixItems"), _LIST),
    **dict.fromkeys(
        (
            "$defs",
            "definitions",
            "dependencies",
            "dependentSchemas",
            "patternProperties",
            "properties",
        ),
        _NAMED,
    ),
}
_INDEX = re.compile(r"0|[1-9][0-9]*")  # RFC 6901's array index

Path = tuple[str | int, ...]


def reference_problem(schema: dict[str, Any]) -> str | None:
    """Why a reference in `schema` cannot be followed (where, then what), or None when every
    one resolves within it."""
    for path, ref, _, resolves in _references(schema):
        if not ref.startswith("#"):
            return (
                f"In context={path!r}, reference {ref!r} is not local: only references within "
                "the schema ('#', '#/$defs/name', '#anchor') are allowed, and none is fetched."
            )
        if not resolves:
            return f"In context={path!r}, reference {ref!r} does not resolve within the schema."
    return None


def rebased(schema: dict[str, Any], base: str, prefix: str) -> dict[str, Any] | None:
    """A copy of `schema` (whose references resolve) to be placed at the JSON Pointer `base`
    (`/$defs/name`) of another schema, beside others: each pointer it follows (`#`, `#/a/b`)
    gets `base` in front, so it names the same place there, and each anchor it declares, and
    each `#anchor` it follows, gets `prefix` in front (`node` -> `tool.f.node`), so that two
    schemas declaring one anchor name each still find their own; data is as it was. None when
    it follows no pointer and declares no anchor: it reads the same anywhere."""
    declared: list[dict[str, Any]] = []
    holders = {id(holder) for _, ref, holder, _ in _references(schema, declared) if _is_local(ref)}
    declaring = {id(node) for node in declared}
    if not holders and not declaring:  # (an `#anchor` it follows is one it declares)
        return None
    copy: dict[str, Any] = {}
    stack: list[tuple[Any, Any]] = [(schema, copy)]
    while stack:  # a stack, not recursion, as in `_walk`
        source, target = stack.pop()
        for key, value in source.items() if isinstance(source, dict) else enumerate(source):
            if isinstance(value, dict | list):
                target[key] = {} if isinstance(value, dict) else [None] * len(value)
                stack.append((value, target[key]))
            elif id(source) in holders and _kind(key) == _REF and _is_local(value):
                target[key] = f"#{base if _is_pointer(value) else prefix}{value[1:]}"
            elif id(source) in declaring and _kind(key) == _ANCHOR and isinstance(value, str):
                target[key] = prefix + value
            elif id(source) in declaring and _kind(key) == _ID and _is_local(value):
                target[key] = f"#{prefix}{value[1:]}"
            else:
                target[key] = value
    return copy


def _kind(key: str | int) -> int | None:
    """What a schema's keyword holds (`_REF`, `_ANCHOR`, ...); None for any other key."""
    return _KEYWORDS.get(key) if isinstance(key, str) else None


def _is_local(ref: Any) -> bool:
    """Whether a reference is within the schema; an `$id` that is, `#name`, is an anchor
    (drafts 4-7)."""
    return isinstance(ref, str) and ref.startswith("#")


def _is_pointer(ref: Any) -> bool:
    return isinstance(ref, str) and (ref == "#" or ref.startswith("#/"))


def _references(
    schema: dict[str, Any], declared: list[dict[str, Any]] | None = None
) -> Iterator[tuple[Path, str, dict[str, Any], bool]]:
    """Every reference the engine follows in `schema`: where it is, what it says, the object
    that holds it and whether it resolves within the schema (never when it is not local).
    Each subschema walked that declares an anchor is added to `declared`."""
    references: list[tuple[Path, str, dict[str, Any]]] = []
    declared = [] if declared is None else declared
    seen: set[int] = set()
    _walk((), schema, references, declared, seen)
    anchors = {name for node in declared for name in _anchors(node)}
    # A pointer's target is compiled as a schema wherever it lies (in an `enum` entry, under a
    # key no keyword names), so its references are followed too; a target already walked (a
    # recursion, a shared definition) is not walked again. Anchors count only where a
    # keyword puts them, as the engines and validators look for them.
    i = 0
    while i < len(references):
        path, ref, holder = references[i]
        i += 1
        fragment = ref[1:]
        if not ref.startswith("#"):
            yield path, ref, holder, False
        elif fragment.startswith("/") or not fragment:
            target = _pointer(schema, fragment)
            if target is not None:
                _walk(target[0], target[1], references, declared, seen)
            yield path, ref, holder, target is not None
        else:
            yield path, ref, holder, unquote(fragment) in anchors


def _walk(
    start: Path,
    schema: Any,
    references: list[tuple[Path, str, dict[str, Any]]],
    declared: list[dict[str, Any]],
    seen: set[int],
) -> None:
    """Adds the references of every subschema of `schema` not `seen` yet (where each is, what
    it says, its holder) and each subschema that declares an anchor. A stack, not recursion:
    a schema nests as deep as its JSON may."""
    stack: list[tuple[Path, Any]] = [(start, schema)]
    while stack:
        path, node = stack.pop()
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen.add(id(node))
        declares = False
        for key, value in node.items():
            kind = _KEYWORDS.get(key)
            if kind is None:
                continue
            if kind == _REF and isinstance(value, str):
                references.append((path, value, node))
            elif (kind == _ANCHOR and isinstance(value, str)) or (kind == _ID and _is_local(value)):
                declares = True
            elif kind == _ONE or (kind == _LIST and isinstance(value, dict)):
                stack.append(((*path, key), value))  # `items`: one schema, or a list
            elif kind == _LIST and isinstance(value, list):
                stack.extend(((*path, key, i), sub) for i, sub in enumerate(value))
            elif kind == _NAMED and isinstance(value, dict):
                stack.extend(((*path, key, name), sub) for name, sub in value.items())
        if declares:
            declared.append(node)


def _anchors(node: dict[str, Any]) -> Iterator[str]:
    """The anchors a subschema declares: `$anchor`, `$dynamicAnchor`, an `$id` of `#name`."""
    for key, value in node.items():
        kind = _kind(key)
        if kind == _ANCHOR and isinstance(value, str):
            yield value
        elif kind == _ID and _is_local(value):
            yield value[1:]


def _pointer(schema: dict[str, Any], pointer: str) -> tuple[Path, dict[str, Any] | bool] | None:
    """Where the JSON Pointer (RFC 6901, percent-encoded as a URI fragment) leads in `schema`
    and the schema (an object or a boolean) there, or None when it names none."""
    node: Any = schema
    path: list[str | int] = []
    for token in unquote(pointer).split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
            path.append(token)
        elif isinstance(node, list) and _INDEX.fullmatch(token) and int(token) < len(node):
            node = node[int(token)]
            path.append(int(token))
        else:
            return None
    return (tuple(path), node) if isinstance(node, dict | bool) else None
