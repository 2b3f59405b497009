"""References in a client's schema: local ones that resolve pass, any that points nowhere or
outside the schema is named by where it is and what it says."""

from __future__ import annotations

from typing import Any

import pytest

from core.schema_refs import rebased, reference_problem

STRING = {"type": "string"}


@pytest.mark.parametrize(
    "schema",
    [
        {"properties": {"a": {"$ref": "#/$defs/t"}}, "$defs": {"t": STRING}},
        {"properties": {"a": {"$ref": "#/definitions/t"}}, "definitions": {"t": STRING}},
        {"properties": {"child": {"$ref": "#"}}},
        {"$defs": {"a/b~c": STRING}, "properties": {"a": {"$ref": "#/$defs/a~1b~0c"}}},
        {"$defs": {"a b": STRING}, "properties": {"a": {"$ref": "#/$defs/a%20b"}}},
        {"$defs": {"t": {"$anchor": "name", **STRING}}, "items": {"$ref": "#name"}},
        {"$defs": {"t": {"$id": "#name", **STRING}}, "items": [{"$ref": "#name"}]},
        {"$defs": {"t": {"$dynamicAnchor": "node"}}, "items": {"$dynamicRef": "#node"}},
        {"anyOf": [STRING, {"$ref": "#/anyOf/0"}]},
        {"properties": {"x": {"$ref": "#/$defs/t"}}, "$defs": {"t": True}},
    ],
)
def test_local_references_that_resolve_pass(schema: dict[str, Any]) -> None:
    """Pointers (escaped, percent-encoded, into $defs, definitions or elsewhere), the root,
    anchors of every draft and dynamic anchors resolve within the schema."""
    assert reference_problem(schema) is None


@pytest.mark.parametrize(
    ("schema", "context", "ref"),
    [
        ({"properties": {"a": {"$ref": "#/$defs/nope"}}}, "('properties', 'a')", "#/$defs/nope"),
        ({"items": {"$ref": "#nowhere"}}, "('items',)", "#nowhere"),
        ({"allOf": [{}, {"$ref": "#/allOf/2"}]}, "('allOf', 1)", "#/allOf/2"),
        ({"$defs": {"unused": {"$ref": "#/x"}}}, "('$defs', 'unused')", "#/x"),
        ({"properties": {"a": {"$ref": "#/required"}}, "required": ["a"]}, None, "#/required"),
        ({"$recursiveRef": "#/nope"}, "()", "#/nope"),
    ],
)
def test_a_local_reference_that_points_nowhere_is_named(
    schema: dict[str, Any], context: str | None, ref: str
) -> None:
    """A pointer or an anchor that names no schema, in a used or an unused definition, is a
    problem naming the place in the schema and the reference."""
    problem = reference_problem(schema)
    assert problem is not None and f"reference {ref!r} does not resolve" in problem
    if context is not None:
        assert problem.startswith(f"In context={context}, ")


@pytest.mark.parametrize(
    "ref",
    [
        "http://127.0.0.1:9/x.json",
        "https://json-schema.org/draft/2020-12/schema",
        "other.json",
        "other.json#/$defs/t",
        "urn:example:t",
        "https://example.com/root#/$defs/t",
    ],
)
def test_a_reference_outside_the_schema_is_refused(ref: str) -> None:
    """A URL (the metaschema's too), a relative file, a URN or the schema's own `$id` are not
    local: the engine cannot fetch them and the gateway never does."""
    schema = {"$id": "https://example.com/root", "$defs": {"t": STRING}, "items": {"$ref": ref}}
    problem = reference_problem(schema)
    assert problem is not None
    assert problem.startswith(f"In context=('items',), reference {ref!r} is not local")


@pytest.mark.parametrize(
    "schema",
    [
        {"enum": [{"$ref": "#/nope"}]},
        {"const": {"$ref": "http://127.0.0.1:9/x"}},
        {"default": {"$ref": "#/nope"}, "examples": [{"$ref": "#/nope"}]},
        {"properties": {"$ref": STRING}},
    ],
)
def test_a_reference_in_data_is_data(schema: dict[str, Any]) -> None:
    """Only schema keywords are followed: a `$ref` key in an enum, a const, a default or an
    example, or a property named `$ref`, refers to nothing."""
    assert reference_problem(schema) is None


def test_a_deeply_nested_schema_is_walked_without_recursion() -> None:
    """A schema nested far deeper than Python's recursion limit is walked all the same."""
    schema: dict[str, Any] = {"$ref": "#/$defs/missing"}
    for _ in range(5000):
        schema = {"items": schema}
    problem = reference_problem(schema)
    assert problem is not None and "'#/$defs/missing' does not resolve" in problem


@pytest.mark.parametrize(
    ("schema", "context", "words"),
    [
        (
            {"properties": {"a": {"$ref": "#/x/A"}}, "x": {"A": {"$ref": "https://e.com/s.json"}}},
            "('x', 'A')",
            "reference 'https://e.com/s.json' is not local",
        ),
        (
            {"properties": {"a": {"$ref": "#/x/A"}}, "x": {"A": {"$ref": "#/nowhere"}}},
            "('x', 'A')",
            "reference '#/nowhere' does not resolve",
        ),
        (
            {
                "properties": {
                    "a": {"$ref": "#/properties/b/enum/0"},
                    "b": {"enum": [{"$ref": "#/n"}]},
                }
            },
            "('properties', 'b', 'enum', 0)",
            "reference '#/n' does not resolve",
        ),
        (
            {"$ref": "#/x", "x": {"items": {"$ref": "#/x/y"}, "y": {"$ref": "#/nope"}}},
            "('x', 'y')",
            "reference '#/nope' does not resolve",
        ),
    ],
)
def test_a_pointer_target_is_walked_for_its_references(
    schema: dict[str, Any], context: str, words: str
) -> None:
    """A place reached only through a pointer (under an unknown key, in an enum entry, a chain
    of them) is compiled as a schema, so a reference in it must resolve too."""
    problem = reference_problem(schema)
    assert problem is not None and problem.startswith(f"In context={context}, ")
    assert words in problem


def test_pointer_targets_that_resolve_and_recurse_pass() -> None:
    """A pointer into an unknown key whose references resolve, recursing through itself or the
    root, passes: each target is walked once."""
    schema = {
        "properties": {"a": {"$ref": "#/x/A"}},
        "x": {"A": {"properties": {"self": {"$ref": "#/x/A"}, "root": {"$ref": "#"}}}},
    }
    assert reference_problem(schema) is None


def test_rebased_prefixes_the_pointers_and_anchors_it_follows_only() -> None:
    """A schema placed elsewhere gets the new place in front of each pointer it follows (the
    root, a definition, a pointer's target) and the prefix in front of each anchor it
    declares and follows, not of data; with neither pointer nor anchor, None."""
    schema = {
        "properties": {"a": {"$ref": "#"}, "b": {"$ref": "#/x"}, "c": {"$ref": "#name"}},
        "x": {"$ref": "#/$defs/t"},
        "$defs": {"t": {"$anchor": "name", "enum": [{"$ref": "#/nope", "$anchor": "name"}]}},
    }
    moved = rebased(schema, "/$defs/f", "tool.f.")
    assert moved is not None and moved["properties"] == {
        "a": {"$ref": "#/$defs/f"},
        "b": {"$ref": "#/$defs/f/x"},
        "c": {"$ref": "#tool.f.name"},
    }
    assert moved["x"] == {"$ref": "#/$defs/f/$defs/t"}
    assert moved["$defs"] == {
        "t": {"$anchor": "tool.f.name", "enum": [{"$ref": "#/nope", "$anchor": "name"}]}
    }
    assert rebased({"properties": {"a": STRING}, "enum": [{"$ref": "#"}]}, "/$defs/f", "p.") is None


@pytest.mark.parametrize(
    ("declared", "renamed"),
    [
        ({"$anchor": "n"}, {"$anchor": "p.n"}),
        ({"$dynamicAnchor": "n"}, {"$dynamicAnchor": "p.n"}),
        ({"$id": "#n"}, {"$id": "#p.n"}),
        ({"id": "#n"}, {"id": "#p.n"}),
    ],
)
def test_rebased_renames_anchors_even_where_nothing_points(
    declared: dict[str, Any], renamed: dict[str, Any]
) -> None:
    """A schema that declares an anchor, followed or not, and holds no pointer is copied with
    the anchor renamed, in each way a draft declares one; an `$id` that is no anchor stays."""
    schema = {"properties": {"a": {**declared, "type": "string"}, "b": {"$id": "urn:b"}}}
    moved = rebased(schema, "/$defs/f", "p.")
    assert moved == {"properties": {"a": {**renamed, "type": "string"}, "b": {"$id": "urn:b"}}}
