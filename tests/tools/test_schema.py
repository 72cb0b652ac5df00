"""Tests for toolscript.tools.schema: the validator the gateway runs on tool arguments."""

import time
import urllib.request

import pytest

from toolscript.tools.schema import validate

DRAFT_07 = "http://json-schema.org/draft-07/schema#"
DRAFT_2020 = "https://json-schema.org/draft/2020-12/schema"


# --- type -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "instance, name",
    [
        (None, "null"),
        (True, "boolean"),
        (3, "integer"),
        (3.0, "integer"),
        (3, "number"),
        (3.5, "number"),
        ("x", "string"),
        ([], "array"),
        ({}, "object"),
    ],
)
def test_type_accepts(instance, name):
    assert validate(instance, {"type": name}) == []


@pytest.mark.parametrize(
    "instance, name, message",
    [
        ("3", "integer", "/: expected integer, got string"),
        (3.5, "integer", "/: expected integer, got number"),
        (True, "integer", "/: expected integer, got boolean"),
        (False, "number", "/: expected number, got boolean"),
        (1, "boolean", "/: expected boolean, got integer"),
        (0, "null", "/: expected null, got integer"),
        (None, "string", "/: expected string, got null"),
        ({}, "array", "/: expected array, got object"),
        ([], "object", "/: expected object, got array"),
    ],
)
def test_type_rejects(instance, name, message):
    assert validate(instance, {"type": name}) == [message]


def test_type_list():
    schema = {"type": ["string", "null"]}
    assert validate(None, schema) == []
    assert validate("a", schema) == []
    assert validate(3.5, schema) == ["/: expected string or null, got number"]
    assert validate(3, {"type": ["string", "array", "null"]}) == ["/: expected string, array or null, got integer"]


def test_type_at_property_pointer():
    schema = {"type": "object", "properties": {"count": {"type": "integer"}}}
    assert validate({"count": "3"}, schema) == ["/count: expected integer, got string"]
    assert validate({"count": 3}, schema) == []


def test_unknown_type_names_are_ignored():
    assert validate(3, {"type": "any"}) == []
    assert validate(3, {"type": ["any", "string"]}) == ["/: expected string, got integer"]


# --- objects ------------------------------------------------------------------------


def test_required():
    schema = {"type": "object", "required": ["path", "mode"]}
    assert validate({"path": "a", "mode": "r"}, schema) == []
    assert validate({"mode": "r"}, schema) == ["/path: required property is missing"]
    assert validate({}, schema) == [
        "/path: required property is missing",
        "/mode: required property is missing",
    ]


def test_required_ignored_for_non_objects():
    assert validate("x", {"required": ["a"]}) == []


def test_additional_properties_false():
    schema = {"properties": {"a": {}}, "patternProperties": {"^x-": {}}, "additionalProperties": False}
    assert validate({"a": 1, "x-y": 2}, schema) == []
    assert validate({"a": 1, "extra": 2}, schema) == ["/extra: unexpected property"]


def test_additional_properties_schema():
    schema = {"properties": {"a": {}}, "additionalProperties": {"type": "string"}}
    assert validate({"a": 1, "b": "ok"}, schema) == []
    assert validate({"a": 1, "b": 2}, schema) == ["/b: expected string, got integer"]


def test_pattern_properties():
    schema = {"patternProperties": {"^n_": {"type": "number"}, "s$": {"type": "string"}}}
    assert validate({"n_a": 1, "bs": "x", "other": None}, schema) == []
    assert validate({"n_a": "1", "n_s": 2}, schema) == [
        "/n_a: expected number, got string",
        "/n_s: expected string, got integer",
    ]


def test_pattern_properties_uses_search_not_match():
    assert validate({"abc": 1}, {"patternProperties": {"b": {"type": "string"}}}) == [
        "/abc: expected string, got integer"
    ]


def test_min_and_max_properties():
    assert validate({}, {"minProperties": 1}) == ["/: expected at least 1 property, got 0"]
    assert validate({"a": 1}, {"minProperties": 1}) == []
    assert validate({"a": 1, "b": 2, "c": 3}, {"maxProperties": 2}) == ["/: expected at most 2 properties, got 3"]
    assert validate({"a": 1, "b": 2}, {"maxProperties": 2}) == []


def test_errors_in_keyword_then_property_order():
    schema = {
        "required": ["z"],
        "properties": {"b": {"type": "string"}, "a": {"type": "string"}},
    }
    assert validate({"a": 1, "b": 2}, schema) == [
        "/z: required property is missing",
        "/b: expected string, got integer",
        "/a: expected string, got integer",
    ]


def test_pointer_escaping():
    schema = {"properties": {"a/b": {"type": "string"}, "m~n": {"type": "string"}}}
    assert validate({"a/b": 1, "m~n": 2}, schema) == [
        "/a~1b: expected string, got integer",
        "/m~0n: expected string, got integer",
    ]


# --- arrays ------------------------------------------------------------------------


def test_items_schema():
    schema = {"type": "array", "items": {"type": "integer"}}
    assert validate([1, 2, 3], schema) == []
    assert validate([1, "2", 3, None], schema) == [
        "/1: expected integer, got string",
        "/3: expected integer, got null",
    ]


def test_items_tuple_form_draft_07():
    schema = {"$schema": DRAFT_07, "items": [{"type": "string"}, {"type": "integer"}]}
    assert validate(["a", 1, {"anything": True}], schema) == []
    assert validate([1, "a"], schema) == [
        "/0: expected string, got integer",
        "/1: expected integer, got string",
    ]


def test_additional_items_false_in_tuple_form():
    schema = {"items": [{"type": "string"}], "additionalItems": False}
    assert validate(["a"], schema) == []
    assert validate(["a", 1, 2], schema) == ["/1: unexpected item", "/2: unexpected item"]


def test_additional_items_schema_and_ignored_without_tuple():
    schema = {"items": [{"type": "string"}], "additionalItems": {"type": "integer"}}
    assert validate(["a", 1, "b"], schema) == ["/2: expected integer, got string"]
    assert validate(["a", "b"], {"items": {"type": "string"}, "additionalItems": False}) == []


def test_prefix_items_2020_12():
    schema = {
        "$schema": DRAFT_2020,
        "prefixItems": [{"type": "string"}, {"type": "integer"}],
        "items": {"type": "boolean"},
    }
    assert validate(["a", 1, True, False], schema) == []
    assert validate([1, 1, "x"], schema) == [
        "/0: expected string, got integer",
        "/2: expected boolean, got string",
    ]


def test_prefix_items_with_items_false():
    schema = {"prefixItems": [{"type": "string"}], "items": False}
    assert validate(["a"], schema) == []
    assert validate(["a", "b"], schema) == ["/1: unexpected item"]


def test_min_and_max_items():
    assert validate([], {"minItems": 1}) == ["/: expected at least 1 item, got 0"]
    assert validate([1], {"minItems": 1}) == []
    assert validate([1, 2, 3], {"maxItems": 2}) == ["/: expected at most 2 items, got 3"]
    assert validate([1, 2], {"maxItems": 2}) == []


def test_unique_items():
    assert validate([1, 2, 3], {"uniqueItems": True}) == []
    assert validate([1, 2, 1.0], {"uniqueItems": True}) == ["/: expected unique items, item 2 equals item 0"]
    assert validate([{"a": 1, "b": 2}, {"b": 2, "a": 1}], {"uniqueItems": True}) == [
        "/: expected unique items, item 1 equals item 0"
    ]
    # true and 1 are different JSON values
    assert validate([1, True], {"uniqueItems": True}) == []
    assert validate([1, 1], {"uniqueItems": False}) == []


def test_nested_array_pointer():
    schema = {"properties": {"items": {"items": {"properties": {"name": {"type": "string"}}}}}}
    assert validate({"items": [{"name": "a"}, {"name": 5}]}, schema) == ["/items/1/name: expected string, got integer"]


# --- strings -----------------------------------------------------------------------


def test_min_and_max_length_count_code_points():
    assert validate("ab", {"minLength": 3}) == ["/: expected at least 3 characters, got 2"]
    assert validate("", {"minLength": 1}) == ["/: expected at least 1 character, got 0"]
    assert validate("abc", {"minLength": 3}) == []
    # two astral code points are two characters, not four UTF-16 units
    assert validate("\U0001F600\U0001F600", {"maxLength": 2}) == []
    assert validate("abcd", {"maxLength": 3}) == ["/: expected at most 3 characters, got 4"]


def test_pattern():
    assert validate("abc-123", {"pattern": "[0-9]+$"}) == []
    assert validate("abc", {"pattern": "^[0-9]+$"}) == ['/: does not match pattern "^[0-9]+$"']


def test_invalid_pattern_is_ignored():
    assert validate("abc", {"pattern": "("}) == []
    assert validate("abc", {"pattern": "\\p{Script=Greek}"}) == []  # a property the matcher does not know


def test_pattern_has_ecma_262_meaning():
    assert validate("123", {"pattern": "^\\p{L}+$"}) == ['/: does not match pattern "^\\\\p{L}+$"']
    assert validate("abc\n", {"pattern": "^abc$"}) == ['/: does not match pattern "^abc$"']  # $ is the very end
    assert validate("\u0661", {"pattern": "^\\d$"}) == ['/: does not match pattern "^\\\\d$"']  # \d is ASCII


def test_format_is_ignored():
    assert validate("not an email", {"type": "string", "format": "email"}) == []


# --- numbers -----------------------------------------------------------------------


def test_minimum_and_maximum():
    assert validate(1, {"minimum": 1, "maximum": 10}) == []
    assert validate(10, {"minimum": 1, "maximum": 10}) == []
    assert validate(0, {"minimum": 1}) == ["/: expected >= 1, got 0"]
    assert validate(10.5, {"maximum": 10}) == ["/: expected <= 10, got 10.5"]


def test_exclusive_numeric_form():
    assert validate(0.5, {"exclusiveMinimum": 0, "exclusiveMaximum": 1}) == []
    assert validate(0, {"exclusiveMinimum": 0}) == ["/: expected > 0, got 0"]
    assert validate(1, {"exclusiveMaximum": 1}) == ["/: expected < 1, got 1"]


def test_exclusive_boolean_form_draft_04():
    assert validate(0, {"minimum": 0, "exclusiveMinimum": True}) == ["/: expected > 0, got 0"]
    assert validate(0, {"minimum": 0, "exclusiveMinimum": False}) == []
    assert validate(5, {"maximum": 5, "exclusiveMaximum": True}) == ["/: expected < 5, got 5"]
    assert validate(4.9, {"maximum": 5, "exclusiveMaximum": True}) == []


def test_number_keywords_ignore_booleans_and_strings():
    assert validate(True, {"minimum": 5}) == []
    assert validate("1", {"minimum": 5}) == []


def test_multiple_of():
    assert validate(9, {"multipleOf": 3}) == []
    assert validate(10, {"multipleOf": 3}) == ["/: expected a multiple of 3, got 10"]
    # 0.3 % 0.1 is not 0 in binary floating point; it is still a multiple
    assert validate(0.3, {"multipleOf": 0.1}) == []
    assert validate(0.35, {"multipleOf": 0.1}) == ["/: expected a multiple of 0.1, got 0.35"]
    assert validate(4.0, {"multipleOf": 2}) == []
    assert validate(1e308, {"multipleOf": 1e-308}) == []


# --- enum / const --------------------------------------------------------------------


def test_enum():
    schema = {"enum": ["a", "b"]}
    assert validate("a", schema) == []
    assert validate("c", schema) == ['/: expected one of "a", "b", got "c"']


def test_enum_uses_json_equality():
    assert validate(1.0, {"enum": [1, None]}) == []
    assert validate(True, {"enum": [1]}) == ["/: expected one of 1, got true"]
    assert validate({"b": [1], "a": 2}, {"enum": [{"a": 2, "b": [1]}]}) == []
    assert validate(None, {"enum": ["x", None]}) == []


def test_enum_message_is_shortened_for_long_enums():
    schema = {"enum": list(range(25))}
    assert validate(99, schema) == [
        "/: expected one of " + ", ".join(str(i) for i in range(20)) + ", ... (5 more), got 99"
    ]


def test_const():
    assert validate("x", {"const": "x"}) == []
    assert validate("y", {"const": "x"}) == ['/: expected "x"']
    assert validate(0, {"const": None}) == ["/: expected null"]
    assert validate(None, {"const": None}) == []


# --- combinators ---------------------------------------------------------------------


def test_all_of_reports_all_messages():
    schema = {"allOf": [{"minLength": 3}, {"pattern": "^a"}]}
    assert validate("abc", schema) == []
    assert validate("b", schema) == [
        "/: expected at least 3 characters, got 1",
        '/: does not match pattern "^a"',
    ]


def test_any_of_type_errors_merge():
    schema = {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert validate("a", schema) == []
    assert validate(None, schema) == []
    assert validate(3, schema) == ["/: expected string or null, got integer"]


def test_any_of_reports_the_branch_with_the_right_type():
    schema = {
        "anyOf": [
            {"type": "object", "properties": {"n": {"type": "integer"}}},
            {"type": "null"},
        ]
    }
    assert validate({"n": "x"}, schema) == ["/n: expected integer, got string"]


def test_any_of_generic_message():
    schema = {"anyOf": [{"type": "string", "minLength": 5}, {"type": "string", "pattern": "^[0-9]+$"}]}
    assert validate("12345", schema) == []
    assert validate("abc", schema) == ["/: does not match any of the allowed schemas"]


def test_one_of():
    schema = {"oneOf": [{"type": "integer"}, {"minimum": 2}]}
    assert validate(1, schema) == []
    assert validate(2.5, schema) == []
    assert validate(3, schema) == ["/: matches 2 of the allowed schemas, expected exactly one"]
    assert validate("x", {"oneOf": [{"type": "integer"}, {"type": "boolean"}]}) == [
        "/: expected integer or boolean, got string"
    ]
    assert validate(
        "x", {"oneOf": [{"type": "string", "minLength": 5}, {"type": "string", "maxLength": 0}]}
    ) == ["/: does not match any of the allowed schemas"]


def test_not():
    schema = {"not": {"type": "string"}}
    assert validate(1, schema) == []
    assert validate("x", schema) == ["/: must not match the excluded schema"]


def test_if_then_else():
    schema = {
        "if": {"properties": {"kind": {"const": "file"}}},
        "then": {"required": ["path"]},
        "else": {"required": ["url"]},
    }
    assert validate({"kind": "file", "path": "/x"}, schema) == []
    assert validate({"kind": "file"}, schema) == ["/path: required property is missing"]
    assert validate({"kind": "web", "url": "u"}, schema) == []
    assert validate({"kind": "web"}, schema) == ["/url: required property is missing"]
    # then / else without if do nothing
    assert validate({}, {"then": False, "else": False}) == []


def test_boolean_schemas():
    assert validate({"anything": [1]}, True) == []
    assert validate(1, False) == ["/: not allowed"]
    assert validate({"a": 1}, {"properties": {"a": False}}) == ["/a: not allowed"]


def test_nullable_openapi_style():
    schema = {"type": "string", "nullable": True}
    assert validate(None, schema) == []
    assert validate("x", schema) == []
    assert validate(3, schema) == ["/: expected string or null, got integer"]
    assert validate(None, {"type": "string"}) == ["/: expected string, got null"]


def test_title_and_description_do_not_affect_validation():
    schema = {"title": "Count", "description": "how many", "type": "integer", "examples": ["x"]}
    assert validate(3, schema) == []
    assert validate("3", schema) == ["/: expected integer, got string"]


def test_unknown_keywords_are_ignored():
    assert validate(3, {"x-custom": {"type": "string"}, "contains": {"const": 1}}) == []


# --- $ref -----------------------------------------------------------------------------


def test_ref_into_defs_2020_12():
    schema = {
        "$schema": DRAFT_2020,
        "$defs": {"count": {"type": "integer", "minimum": 0}},
        "type": "object",
        "properties": {"n": {"$ref": "#/$defs/count"}},
    }
    assert validate({"n": 1}, schema) == []
    assert validate({"n": -1}, schema) == ["/n: expected >= 0, got -1"]


def test_ref_into_definitions_draft_07():
    schema = {
        "$schema": DRAFT_07,
        "definitions": {"name": {"type": "string"}},
        "properties": {"name": {"$ref": "#/definitions/name"}},
    }
    assert validate({"name": "x"}, schema) == []
    assert validate({"name": 1}, schema) == ["/name: expected string, got integer"]


def test_ref_to_root():
    schema = {"type": "object", "properties": {"child": {"$ref": "#"}}, "required": ["id"]}
    assert validate({"id": 1, "child": {"id": 2}}, schema) == []
    assert validate({"id": 1, "child": {}}, schema) == ["/child/id: required property is missing"]


def test_nested_refs():
    schema = {
        "$defs": {
            "a": {"$ref": "#/$defs/b"},
            "b": {"$ref": "#/definitions/c"},
        },
        "definitions": {"c": {"type": "boolean"}},
        "$ref": "#/$defs/a",
    }
    assert validate(True, schema) == []
    assert validate("x", schema) == ["/: expected boolean, got string"]


def test_ref_with_escapes_and_percent_encoding():
    schema = {
        "$defs": {"a/b": {"type": "string"}, "m~n": {"type": "integer"}, "with space": {"type": "null"}},
        "properties": {
            "p": {"$ref": "#/$defs/a~1b"},
            "q": {"$ref": "#/$defs/m~0n"},
            "r": {"$ref": "#/$defs/with%20space"},
        },
    }
    assert validate({"p": "x", "q": 1, "r": None}, schema) == []
    assert validate({"p": 1, "q": "x", "r": 0}, schema) == [
        "/p: expected string, got integer",
        "/q: expected integer, got string",
        "/r: expected null, got integer",
    ]


def test_ref_next_to_other_keywords_applies_both():
    schema = {
        "$schema": DRAFT_07,
        "definitions": {"s": {"type": "string"}},
        "$ref": "#/definitions/s",
        "maxLength": 2,
    }
    assert validate("ab", schema) == []
    assert validate("abc", schema) == ["/: expected at most 2 characters, got 3"]
    assert validate(1, schema) == ["/: expected string, got integer"]


def test_ref_naming_the_root_id():
    schema = {
        "$id": "https://example.com/tool.json",
        "$defs": {"n": {"type": "integer"}},
        "$ref": "https://example.com/tool.json#/$defs/n",
    }
    assert validate(1, schema) == []
    assert validate("1", schema) == ["/: expected integer, got string"]


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        pytest.fail("the validator tried to fetch a URL")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)


def test_unresolvable_ref_is_ignored(no_network):
    schema = {"properties": {"a": {"$ref": "#/$defs/missing"}, "b": {"$ref": "#/$defs/missing", "type": "string"}}}
    assert validate({"a": 1, "b": "x"}, schema) == []
    assert validate({"a": 1, "b": 2}, schema) == ["/b: expected string, got integer"]


def test_remote_ref_is_ignored_and_not_fetched(no_network):
    schema = {
        "properties": {
            "a": {"$ref": "http://example.com/schema.json#/defs/x"},
            "b": {"$ref": "other.json"},
            "c": {"$ref": "#anchor"},
        }
    }
    assert validate({"a": 1, "b": 2, "c": 3}, schema) == []


def test_ref_cycles_without_progress_stop():
    loop = {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}
    assert validate(1, loop) == []
    assert validate(1, {"$ref": "#"}) == []
    assert validate(1, {"not": {"$ref": "#"}}) == []
    assert validate(1, {"$ref": "#", "type": "string"}) == ["/: expected string, got integer"]


TREE = {
    "$schema": DRAFT_2020,
    "$defs": {
        "node": {
            "type": "object",
            "properties": {
                "value": {"type": "integer"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
            },
            "required": ["value"],
        }
    },
    "$ref": "#/$defs/node",
}


def _chain(levels, leaf):
    """A tree ``levels`` nodes deep whose last node is ``leaf``."""
    node = leaf
    for _ in range(levels):
        node = {"value": 1, "children": [node]}
    return node


def test_recursive_tree_schema():
    assert validate(_chain(10, {"value": 2}), TREE) == []
    bad = _chain(10, {"value": "x"})
    assert validate(bad, TREE) == ["/children/0" * 10 + "/value: expected integer, got string"]


def test_deep_recursive_instance_stops_quietly():
    # The bad leaf is 2000 pointer levels down: beyond the depth limit, so not seen.
    start = time.perf_counter()
    assert validate(_chain(1000, {"value": "x"}), TREE) == []
    assert time.perf_counter() - start < 5  # generous: the depth cut-off fired
    # Within the limit (40 nodes = 80 pointer levels) errors are still reported.
    assert validate(_chain(40, {"value": "x"}), TREE) == ["/children/0" * 40 + "/value: expected integer, got string"]


# --- real-world schemas ------------------------------------------------------------


WEATHER = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {
        "location": {
            "type": "string",
            "enum": ["New York", "Chicago", "Los Angeles"],
            "description": "Choose city",
        }
    },
    "required": ["location"],
    "additionalProperties": False,
}


def test_server_everything_structured_content_schema():
    assert validate({"location": "Chicago"}, WEATHER) == []
    assert validate({}, WEATHER) == ["/location: required property is missing"]
    assert validate({"location": "Paris"}, WEATHER) == [
        '/location: expected one of "New York", "Chicago", "Los Angeles", got "Paris"'
    ]
    assert validate({"location": 3, "units": "C"}, WEATHER) == [
        "/location: expected string, got integer",
        '/location: expected one of "New York", "Chicago", "Los Angeles", got 3',
        "/units: unexpected property",
    ]


GITHUB_CREATE_PR_REVIEW = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {
        "owner": {"type": "string", "description": "Repository owner"},
        "repo": {"type": "string", "description": "Repository name"},
        "pull_number": {"type": "number", "description": "Pull request number"},
        "event": {"type": "string", "enum": ["APPROVE", "REQUEST_CHANGES", "COMMENT"]},
        "comments": {
            "type": "array",
            "items": {
                "anyOf": [
                    {
                        "type": "object",
                        "properties": {
                            "path": {"type": "string"},
                            "position": {"type": "number"},
                            "body": {"type": "string"},
                        },
                        "required": ["path", "position", "body"],
                        "additionalProperties": False,
                    },
                    {
                        "type": "object",
                        "properties": {
                            "path": {"type": "string"},
                            "line": {"type": "number"},
                            "body": {"type": "string"},
                        },
                        "required": ["path", "line", "body"],
                        "additionalProperties": False,
                    },
                ]
            },
        },
        "labels": {"type": ["array", "null"], "items": {"type": "string"}, "uniqueItems": True},
    },
    "required": ["owner", "repo", "pull_number", "event"],
    "additionalProperties": False,
}


def test_github_like_nested_schema():
    good = {
        "owner": "o",
        "repo": "r",
        "pull_number": 7,
        "event": "COMMENT",
        "comments": [{"path": "a.py", "position": 3, "body": "x"}, {"path": "b.py", "line": 9, "body": "y"}],
        "labels": None,
    }
    assert validate(good, GITHUB_CREATE_PR_REVIEW) == []
    bad = dict(good, pull_number="7", comments=[{"path": "a.py", "body": "x"}, "nope"], labels=["a", "a"])
    del bad["repo"]
    assert validate(bad, GITHUB_CREATE_PR_REVIEW) == [
        "/pull_number: expected number, got string",
        "/comments/0: does not match any of the allowed schemas",
        "/comments/1: expected object, got string",
        "/labels: expected unique items, item 1 equals item 0",
        "/repo: required property is missing",
    ]


# --- robustness --------------------------------------------------------------------


GARBAGE_SCHEMAS = [
    None,
    1,
    "x",
    [],
    {"type": 5},
    {"type": []},
    {"properties": []},
    {"properties": {"a": 5}},
    {"required": "a"},
    {"required": [1, None, ["a"]]},
    {"items": 3},
    {"items": [3, None]},
    {"prefixItems": "x"},
    {"$ref": 7},
    {"$ref": "#/"},
    {"$ref": "#/$defs/0/x"},
    {"$ref": "%"},
    {"pattern": "("},
    {"pattern": 5},
    {"patternProperties": {"(": {}, "[": False}, "additionalProperties": False},
    {"enum": "abc"},
    {"enum": []},
    {"minLength": "3", "maxLength": -1, "minItems": None, "maxProperties": 1.5},
    {"minimum": "0", "maximum": None, "exclusiveMinimum": "x", "multipleOf": 0},
    {"multipleOf": -2},
    {"multipleOf": float("inf")},
    {"allOf": 5, "anyOf": {}, "oneOf": [1, 2], "not": 5, "if": 3, "then": False},
    {"anyOf": [], "oneOf": []},
    {"uniqueItems": "yes", "additionalItems": 5},
    {"nullable": "yes", "type": "string"},
]
INSTANCES = [None, True, 0, 1.5, float("inf"), "", "abc", [], [1, [2]], {}, {"a": {"b": []}}, {"(": 1}]


@pytest.mark.parametrize("schema", GARBAGE_SCHEMAS, ids=repr)
def test_validate_never_raises_on_garbage(schema):
    for instance in INSTANCES:
        result = validate(instance, schema)
        assert isinstance(result, list)
        assert all(isinstance(error, str) for error in result)


def test_garbage_keywords_are_ignored_not_errors():
    # Every garbage schema above only has malformed keywords, so nothing is rejected
    # except by the ones that are real constraints in disguise (none here).
    for schema in GARBAGE_SCHEMAS:
        if schema == {"nullable": "yes", "type": "string"}:
            continue
        for instance in INSTANCES:
            assert validate(instance, schema) == [], (schema, instance)


def test_hostile_deep_all_of_is_fast():
    schema = {"type": "string"}
    for _ in range(10000):
        schema = {"allOf": [schema]}
    start = time.perf_counter()
    assert validate(1, schema) == []  # too deep to reach the type: cut off, not an error
    assert time.perf_counter() - start < 5  # generous: the nesting cut-off fired
    shallow = {"type": "string"}
    for _ in range(50):
        shallow = {"allOf": [shallow]}
    assert validate(1, shallow) == ["/: expected string, got integer"]


def test_hostile_long_enum_is_fast():
    schema = {"type": "array", "items": {"enum": ["v%d" % i for i in range(10000)]}}
    instance = ["v%d" % i for i in range(0, 10000, 5)] + ["nope"]
    start = time.perf_counter()
    errors = validate(instance, schema)
    assert time.perf_counter() - start < 5  # generous: catches only a pathological slowdown
    assert len(errors) == 1
    assert errors[0].startswith('/2000: expected one of "v0", "v1",')
    assert errors[0].endswith(', ... (9980 more), got "nope"')


def test_hostile_exponential_refs_are_bounded():
    defs = {"a%d" % i: {"anyOf": [{"$ref": "#/$defs/a%d" % (i + 1)}, {"$ref": "#/$defs/a%d" % (i + 1)}]}
            for i in range(60)}
    defs["a60"] = {"type": "string"}
    schema = {"$defs": defs, "$ref": "#/$defs/a0"}
    start = time.perf_counter()
    result = validate(3, schema)
    assert time.perf_counter() - start < 5  # generous: the work limit fired (2**60 paths otherwise)
    assert result == []  # the work limit cuts it off; cut-off parts count as valid


def test_hostile_deep_instance_is_fast():
    instance = "leaf"
    for _ in range(5000):
        instance = [instance]
    schema = {"$defs": {"t": {"type": "array", "items": {"anyOf": [{"$ref": "#/$defs/t"}, {"type": "integer"}]}}},
              "$ref": "#/$defs/t"}
    start = time.perf_counter()
    assert validate(instance, schema) == []
    assert time.perf_counter() - start < 5  # generous: the depth cut-off fired
    assert validate([["leaf"]], schema) == ["/0/0: expected array or integer, got string"]


# --- values too deep to compare -------------------------------------------------------


def _nested(depth, leaf="x"):
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("keyword", [{"enum": [1, 2]}, {"const": 1}, {"uniqueItems": True}], ids=["enum", "const", "uniqueItems"])
def test_a_value_too_deep_to_compare_is_an_error_and_hides_nothing(keyword):
    deep = _nested(500)
    schema = {"type": "object", "properties": {"a": keyword, "b": {"type": "string"}}}
    instance = {"a": [deep, deep] if "uniqueItems" in keyword else deep, "b": 5}
    errors = validate(instance, schema)
    assert "/b: expected string, got integer" in errors
    assert any(e.startswith("/a: argument nested too deeply") for e in errors), errors
    assert len(errors) == 2, errors


def test_a_schema_value_too_deep_to_compare_is_ignored():
    # A strange schema must not make a good call fail: the keyword is skipped.
    assert validate(1, {"enum": [_nested(500), 1]}) == []
    assert validate(1, {"const": _nested(500)}) == []


def test_values_within_the_depth_limit_still_compare():
    assert validate(_nested(60), {"const": _nested(60)}) == []
    assert validate(_nested(60), {"enum": [_nested(60, "y")]})[0].startswith("/: expected one of")
    assert validate([_nested(60), _nested(60)], {"uniqueItems": True}) == ["/: expected unique items, item 1 equals item 0"]
