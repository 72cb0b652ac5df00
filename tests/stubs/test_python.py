"""Python stubs (toolscript.stubs.python) of tool schemas: types, defaults, hostile text, usage example.

Every generated module is compiled and executed and its annotations resolved
(``stub_checks.load``); hostile input is also fed to the TypeScript
declarations, which must stay well formed.
"""

import typing
from typing import Any, Dict, List

import pytest

from stub_checks import both, check_typescript, expr, functions, hints, identifiers, literal_values, load, obj, signature, tool
from toolscript.stubs.model import clean_text
from toolscript.stubs.names import python_arg_names, python_names
from toolscript.stubs.python import python_stubs, usage_example
from toolscript.stubs.typescript import typescript_declarations


def test_titles_never_rename_or_hide_types():
    # FastMCP / pydantic style: a top-level title and a title on every property.
    schema = {
        "title": "add_numbersArguments",
        "type": "object",
        "properties": {
            "a": {"title": "A", "type": "integer"},
            "b": {"title": "B", "type": "integer"},
            "opts": {"title": "Zzz", "type": "object", "properties": {"deep": {"title": "Qqq", "type": "object", "properties": {"x": {"type": "boolean"}}}}},
        },
        "required": ["a", "b"],
    }
    output = {"title": "Yyy", "type": "object", "properties": {"sum": {"title": "Sum", "type": "integer"}}, "required": ["sum"]}
    entries = [tool("calc", "add_numbers", schema, "Add", outputSchema=output)]
    for source in both(entries):
        assert not {"add_numbersArguments", "AddNumbersArguments", "A", "B", "Zzz", "Qqq", "Yyy", "Sum"} & identifiers(source)
        sig = signature(source, "calc", "add_numbers")
        assert sig.names == ["a", "b", "opts"] and sig.required == ["a", "b"]
        assert sig.annotations["a"] == "int" and sig.annotations["opts"] == "Optional[AddNumbersOpts]"
        assert sig.returns == "AddNumbersResult"
        found = hints(source, "calc", "add_numbers")
        assert found["a"] is int
        opts = typing.get_args(found["opts"])[0]
        deep = typing.get_type_hints(opts)["deep"]
        assert deep.__name__ == "AddNumbersOptsDeep"
        assert typing.get_type_hints(deep) == {"x": bool}
        assert typing.get_type_hints(found["return"]) == {"sum": int}


def test_refs_into_defs_and_definitions_are_declared_once():
    address = obj({"street": {"type": "string"}, "zip": {"type": "string", "title": "Postcode"}}, ["street"], title="AddressModel")
    schema = {
        "type": "object",
        "$defs": {"Address": address, "Status": {"type": "string", "enum": ["open", "closed"]}, "Id": {"type": "integer"}},
        "definitions": {"Legacy": obj({"v": {"type": "number"}}, ["v"])},
        "properties": {
            "home": {"$ref": "#/$defs/Address"},
            "work": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}], "default": None},
            "many": {"type": "array", "items": {"$ref": "#/$defs/Address"}},
            "status": {"$ref": "#/$defs/Status"},
            "id": {"$ref": "#/$defs/Id"},
            "legacy": {"$ref": "#/definitions/Legacy"},
            "remote": {"$ref": "https://example.com/schema.json"},
            "dangling": {"$ref": "#/$defs/Nope"},
        },
        "required": ["home", "status", "id", "legacy"],
    }
    # A second tool with the same definition shares the declaration.
    other = {"type": "object", "$defs": {"Address": address}, "properties": {"to": {"$ref": "#/$defs/Address"}}, "required": ["to"]}
    entries = [tool("maps", "route", schema), tool("maps", "ship", other)]
    for source in both(entries):
        assert source.count("class Address(") == 1 and not {"AddressModel", "Postcode"} & identifiers(source)
        sig = signature(source, "maps", "route")
        assert sig.annotations == {
            "home": "Address", "status": "Status", "id": "int", "legacy": "Legacy",
            "work": "Optional[Address]", "many": "Optional[List[Address]]", "remote": "Any", "dangling": "Any",
        }
        assert sig.default("work") is None
        assert signature(source, "maps", "ship").annotations == {"to": "Address"}
        found = hints(source, "maps", "route")
        assert literal_values(found["status"]) == ["open", "closed"]
        assert found["home"].__required_keys__ == frozenset({"street"})
        assert found["home"].__optional_keys__ == frozenset({"zip"})
        assert typing.get_type_hints(found["legacy"]) == {"v": float}


def test_recursive_refs_become_forward_references():
    schema = {
        "type": "object",
        "definitions": {
            "Node": obj({"value": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/definitions/Node"}}}, ["value"]),
            "Json": {"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "array", "items": {"$ref": "#/definitions/Json"}}]},
            "A": obj({"b": {"$ref": "#/definitions/B"}}),
            "B": obj({"a": {"$ref": "#/definitions/A"}}),
            "Loop1": {"$ref": "#/definitions/Loop2"},
            "Loop2": {"$ref": "#/definitions/Loop1"},
        },
        "properties": {
            "tree": {"$ref": "#/definitions/Node"},
            "json": {"$ref": "#/definitions/Json"},
            "a": {"$ref": "#/definitions/A"},
            "loop": {"$ref": "#/definitions/Loop1"},
            "self": {"type": "array", "items": {"$ref": "#"}},
        },
        "required": ["tree", "json", "a", "loop"],
    }
    for source in both([tool("t", "walk", schema)]):
        assert '"Node"' in source and '"Json"' in source
        namespace = load(source)
        found = typing.get_type_hints(namespace["t"].walk)
        node = found["tree"]
        assert typing.get_type_hints(node, globalns=namespace)["children"] == List[node]
        assert found["loop"] is Any
        params = typing.get_args(typing.get_args(found["self"])[0])[0]
        assert params.__name__ == "WalkParams"
        assert typing.get_type_hints(params, globalns=namespace)["tree"] is node
        a_hints = typing.get_type_hints(found["a"], globalns=namespace)
        assert typing.get_type_hints(a_hints["b"], globalns=namespace)["a"] is found["a"]


def test_nested_objects_and_arrays_of_objects():
    schema = obj(
        {
            "filter": obj(
                {"owner": {"type": "string"}, "label": {"type": "string"}, "range": obj({"from": {"type": "integer"}, "to": {"type": "integer"}}, ["from"])},
                ["owner"],
            ),
            "files": {"type": "array", "items": obj({"path": {"type": "string"}, "content": {"type": "string"}}, ["path", "content"])},
            "matrix": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
            "tuple": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
            "meta": {"type": "object", "additionalProperties": {"type": "string"}},
            "loose": {"type": "object"},
            "free": {},
        },
        ["filter", "files"],
    )
    for source in both([tool("gh", "push_files", schema)]):
        sig = signature(source, "gh", "push_files")
        assert sig.annotations["filter"] == "PushFilesFilter"
        assert sig.annotations["files"] == "List[PushFilesFilesItem]"
        assert sig.annotations["matrix"] == "Optional[List[List[float]]]"
        assert sig.annotations["tuple"] == "Optional[List[Union[str, int]]]"
        assert sig.annotations["meta"] == "Optional[Dict[str, str]]"
        assert sig.annotations["loose"] == "Optional[Dict[str, Any]]"
        assert sig.annotations["free"] == "Any"
        found = hints(source, "gh", "push_files")
        flt = found["filter"]
        assert flt.__required_keys__ == frozenset({"owner"}) and flt.__optional_keys__ == frozenset({"label", "range"})
        rng = typing.get_type_hints(flt)["range"]
        assert rng.__name__ == "PushFilesFilterRange"
        assert rng.__required_keys__ == frozenset({"from"})  # functional form: "from" is a keyword
        item = typing.get_args(found["files"])[0]
        assert typing.get_type_hints(item) == {"path": str, "content": str} and item.__total__


def test_enums_with_hostile_values_are_literal():
    values = ['a"b', "c\\d", '"""', "'''", "\n", "\x00", "\u2028", "\ud800", "*/", "日本", 1, True, None]
    schema = obj({"kind": {"enum": values}, "one": {"const": 'say "x"'}, "nums": {"type": "number", "enum": [1.5, 2]}}, ["kind", "one", "nums"])
    for source in both([tool("s", "t", schema)]):
        found = hints(source, "s", "t")
        assert literal_values(found["kind"]) == values
        assert literal_values(found["one"]) == ['say "x"']
        assert found["nums"] == typing.Union[typing.Literal[2], float]
    ts = typescript_declarations([tool("s", "t", schema)])
    assert '"a\\"b" | "c\\\\d"' in ts and "| 1 | true | null" in ts


def test_unions_nullable_and_type_lists():
    schema = obj(
        {
            "any_of": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "one_of": {"oneOf": [{"type": "array", "items": {"type": "string"}}, obj({"q": {"type": "string"}})]},
            "type_list": {"type": ["string", "number", "null"]},
            "nullable": {"type": "string", "nullable": True},
            "null_enum": {"type": ["string", "null"], "enum": ["a", "b", None]},
            "refines": {"type": "string", "anyOf": [{"format": "date"}, {"format": "date-time"}]},
            "null_only": {"type": "null"},
            "mixed_any": {"anyOf": [{"type": "string"}, {}]},
            "all_of": {"allOf": [obj({"a": {"type": "string"}}, ["a"]), obj({"b": {"type": "integer"}})]},
        },
        list("x"),
    )
    schema["required"] = ["any_of", "one_of", "type_list", "nullable", "null_enum", "refines", "null_only", "mixed_any", "all_of"]
    for source in both([tool("s", "u", schema)]):
        sig = signature(source, "s", "u")
        assert sig.annotations["any_of"] == "Union[str, int]"
        assert sig.annotations["one_of"] == "Union[List[str], UOneOfOption2]"
        assert sig.annotations["type_list"] == "Optional[Union[str, float]]"
        assert sig.annotations["nullable"] == "Optional[str]"
        assert sig.annotations["null_enum"] == expr('Optional[Literal["a", "b"]]')
        assert sig.annotations["refines"] == "str"
        assert sig.annotations["null_only"] == "None"
        assert sig.annotations["mixed_any"] == "Any"
        assert sig.annotations["all_of"] == "UAllOf"
        found = hints(source, "s", "u")
        assert found["all_of"].__required_keys__ == frozenset({"a"})
        assert found["null_only"] is type(None)


def test_defaults():
    tricky = 'say "hi" \\ """ \'\'\''
    schema = obj(
        {
            "q": {"type": "string"},
            "quoted": {"type": "string", "default": tricky},
            "tags": {"type": "array", "items": {"type": "string"}, "default": ["a", "b\"c"]},
            "opts": {"type": "object", "default": {"k": [1, 2.5, None, True]}},
            "per_page": {"type": "integer", "default": 30},
            "ratio": {"type": "number", "default": 0.5},
            "flag": {"type": "boolean", "default": False},
            "nothing": {"type": "string", "default": None},
            "state": {"type": "string", "enum": ["open", "closed"]},
            "inf": {"type": "number", "default": float("inf")},
            "huge": {"type": "integer", "default": 10 ** 5000},
            "weird": {"default": {1: "non-string key"}},
            "long": {"type": "string", "default": "x" * 500},
        },
        ["q"],
    )
    entries = [tool("gh", "search", schema)]
    compact, full = both(entries)
    sig = signature(compact, "gh", "search")
    assert sig.names[0] == "q" and sig.required == ["q"]
    assert sig.default("quoted") == tricky
    assert sig.default("tags") == ["a", 'b"c']
    assert sig.default("opts") == {"k": [1, 2.5, None, True]}
    assert (sig.default("per_page"), sig.default("ratio"), sig.default("flag")) == (30, 0.5, False)
    assert sig.annotations["per_page"] == "int"
    for name in ("nothing", "state", "inf", "huge", "weird", "long"):
        assert sig.default(name) is None, name
        assert sig.annotations[name].startswith("Optional[") or sig.annotations[name] == "Any", name
    assert sig.annotations["state"] == expr('Optional[Literal["open", "closed"]]')
    # full=True keeps a long default as it is.
    assert signature(full, "gh", "search").default("long") == "x" * 500


HOSTILE_TEXTS = [
    'ends with a quote"',
    'ends with two quotes""',
    'triple """ inside """',
    "trailing backslash \\",
    "backslash \\\" quote and \\n escape",
    "*/ closes a JSDoc */ export const x = 1; /*",
    "NUL \x00 and BEL \x07 and ESC \x1b[31m",
    "lines\nand\r\nmore\rlines\u2028sep\u2029para\x85nel\x0bvt\x0cff",
    "lone surrogate \ud800 here",
    "bidi \u202e reversed \u2066",
    "# -*- coding: latin-1 -*-",
    "'''single triple'''",
    "{ unbalanced ( [ <",
    "",
    "x" * 100_000,
]


@pytest.mark.parametrize("text", HOSTILE_TEXTS, ids=range(len(HOSTILE_TEXTS)))
def test_hostile_descriptions_and_names(text):
    schema = obj({"p": {"type": "string", "description": text, "title": text, "pattern": text, "format": text}, text or "k": {"type": "object", "description": text, "properties": {text or "k": {"description": text}}}}, ["p"], description=text)
    entries = [tool(text, text, schema, text, title=text, outputSchema={"type": "object", "description": text, "properties": {"r": {"description": text}}}, annotations={"title": text})]
    for source in both(entries):
        assert "\x00" not in source and "\ud800" not in source and "\u202e" not in source
        names = python_names(entries)
        server, function = names[entries[0]["id"]]
        sig = signature(source, server, function)
        assert sig.required == ["p"]
        assert sig.doc.startswith(clean_text(entries[0]["id"], one_line=True))
    described = [tool("s", "t", obj({"p": {"type": "string", "description": text}}), text, outputSchema=obj({"r": {"description": text}}))]
    assert len(python_stubs(described)) < 2000, "compact stubs cut long descriptions"
    if text == "x" * 100_000:
        assert text in python_stubs(described, full=True)
        assert signature(python_stubs(described, full=True), "s", "t").doc.split("\n")[2] == text
    for ts in (typescript_declarations(entries), typescript_declarations(entries, full=True)):
        check_typescript(ts)
        assert "\x00" not in ts and "\ud800" not in ts


def test_docstring_keeps_hostile_text_verbatim_where_it_can():
    text = 'He said """hi""" \\ and */ and \x00 end"'
    source = python_stubs([tool("s", "t", obj({}), text)], full=True)
    doc = signature(source, "s", "t").doc
    assert 'He said """hi""" \\ and */ and  end"' in doc


def test_compact_is_short_and_full_has_details():
    long_text = "word " * 200 + "TAIL"
    schema = obj(
        {
            "count": {"type": "integer", "minimum": 1, "maximum": 10, "description": long_text},
            "url": {"type": "string", "format": "uri", "pattern": "^https://", "maxLength": 2048},
            "ids": {"type": "array", "items": {"type": "string", "minLength": 3}, "minItems": 1, "uniqueItems": True},
        },
        ["count"],
    )
    entries = [tool("s", "t", schema, long_text, title="The Title", annotations={"readOnlyHint": True})]
    compact, full = both(entries)
    doc = signature(compact, "s", "t").doc
    assert "TAIL" not in compact and "minimum" not in compact
    first, *rest = doc.split("\n")
    assert first.startswith("s__t: word word") and first.endswith(" ...") and len(first) < 320
    assert all(len(line) < 200 for line in rest)
    assert "TAIL" in full and "The Title" in full and "readOnlyHint" in full
    assert "# minimum=1, maximum=10" in full
    assert 'format="uri", pattern="^https://", maxLength=2048' in full
    assert 'minItems=1, uniqueItems=true, items: minLength=3' in full


def test_output_schema_becomes_the_return_type():
    output = obj({"temperature": {"type": "number"}, "conditions": {"type": "string"}}, ["temperature", "conditions"], additionalProperties=False)
    entries = [
        tool("w", "weather", obj({}), outputSchema=output),
        tool("w", "loose", obj({}), outputSchema={"type": "object"}),
        tool("w", "none", obj({})),
        tool("w", "empty", obj({}), outputSchema={"type": "object", "properties": {}}),
        tool("w", "odd", obj({}), outputSchema="nonsense"),
    ]
    for source in both(entries):
        assert signature(source, "w", "weather").returns == "WeatherResult"
        assert signature(source, "w", "loose").returns == "Dict[str, Any]"
        assert signature(source, "w", "none").returns == "Any"
        assert signature(source, "w", "empty").returns == "Dict[str, Any]"
        assert signature(source, "w", "odd").returns == "Any"
        result = hints(source, "w", "weather")["return"]
        assert typing.get_type_hints(result) == {"temperature": float, "conditions": str}


def test_generated_type_names_avoid_tool_and_server_names():
    # Tool "SearchFilter" would be shadowed by (or shadow) the TypedDict of search(filter=...).
    entries = [
        tool("s", "SearchFilter"),
        tool("s", "search", obj({"filter": obj({"q": {"type": "string"}})}, ["filter"])),
        tool("SearchFilter", "x"),
    ]
    source = python_stubs(entries)
    found = hints(source, "s", "search")
    assert isinstance(found["filter"], type) and issubclass(found["filter"], dict)
    assert found["filter"].__name__ not in ("SearchFilter",)


def test_catch_all_arguments():
    entries = [
        tool("s", "any_args", {"type": "object", "additionalProperties": True}),
        tool("s", "typed_args", {"type": "object", "additionalProperties": {"type": "integer"}}),
        tool("s", "kw_clash", obj({"kwargs": {"type": "string"}}, ["kwargs"], additionalProperties=True)),
        tool("s", "no_args", {"type": "object"}),
    ]
    for source in both(entries):
        assert signature(source, "s", "any_args").kwargs == "kwargs"
        assert signature(source, "s", "typed_args").annotations == {}
        assert hints(source, "s", "typed_args")["kwargs"] is int
        sig = signature(source, "s", "kw_clash")
        assert sig.names == ["kwargs"] and sig.kwargs == "kwargs_"
        assert signature(source, "s", "no_args").names == [] and signature(source, "s", "no_args").kwargs is None


def test_top_level_ref_allof_and_anyof_in_input_schema():
    entries = [
        tool("s", "ref", {"$ref": "#/$defs/In", "$defs": {"In": obj({"a": {"type": "string"}}, ["a"])}}),
        tool("s", "all", {"allOf": [obj({"a": {"type": "string"}}, ["a"]), obj({"b": {"type": "integer"}}, ["b"])]}),
        tool("s", "alt", {"type": "object", "anyOf": [obj({"a": {"type": "string"}}, ["a"]), obj({"b": {"type": "integer"}}, ["b"])]}),
    ]
    source = python_stubs(entries)
    load(source)
    assert signature(source, "s", "ref").required == ["a"]
    assert signature(source, "s", "all").required == ["a", "b"]
    alt = signature(source, "s", "alt")
    assert alt.names == ["a", "b"] and alt.required == []
    assert python_arg_names(entries[2]) == {"a": "a", "b": "b"}


def test_hostile_schemas_never_break_the_module():
    deep: Dict[str, Any] = {"type": "string"}
    for _ in range(3000):
        deep = {"type": "array", "items": deep}
    fanout = {"$defs": {f"D{i}": {"anyOf": [{"$ref": f"#/$defs/D{i + 1}"}, {"type": "array", "items": {"$ref": f"#/$defs/D{i + 1}"}}]} for i in range(60)}}
    fanout["$defs"]["D60"] = {"type": "string"}
    cyclic: Dict[str, Any] = {"type": "object", "properties": {}}
    cyclic["properties"]["self"] = cyclic  # not JSON, but a dict can be built like this
    schemas: List[Any] = [
        None, [], "string", 42, True, False,
        {"type": "object", "properties": "nope", "required": "nope"},
        {"type": "object", "properties": {"a": "nope", "b": None, "c": True, "d": False, "e": []}},
        {"type": ["foo", 3, None], "enum": []},
        {"properties": {"x": {"type": "madeup", "items": 5, "anyOf": "x", "oneOf": [], "allOf": [None]}}},
        {"properties": {"x": {"enum": [{"a": 1}, [1], 1.5, float("nan"), object()]}}},
        {"properties": {"x": {"$ref": 5}, "y": {"$ref": "#/a~1b/~0c"}, "z": {"$ref": "#/$defs/%7Bx%7D"}, "w": {"$ref": "#/l/\u00b2"}},
         "$defs": {"{x}": {"enum": ["ok"]}}, "a/b": {"~c": {"type": "integer"}}, "l": [{"type": "string"}]},
        {"properties": {"deep": deep}},
        dict(fanout, properties={"f": {"$ref": "#/$defs/D0"}}),
        cyclic,
        {"properties": {"x": {"enum": [10 ** 5000]}}},
        {"properties": {"x": {"allOf": [{"$ref": "#/properties/x"}, {"type": "object", "properties": {"y": {"$ref": "#/properties/x"}}}]}}},
    ]
    entries = [tool("h", f"t{i}", schema, outputSchema=schema) for i, schema in enumerate(schemas)]
    sources = both(entries)
    assert set(functions(sources[0])["h"]) == {f"t{i}" for i in range(len(schemas))}
    for ts in (typescript_declarations(entries), typescript_declarations(entries, full=True)):
        check_typescript(ts)
    assert len(sources[0]) < 200_000
    # JSON pointers with escapes (~1, ~0, percent-encoding) resolve; odd ones are Any.
    assert signature(sources[0], "h", "t11").annotations == {"x": "Any", "y": "Optional[int]", "z": "Optional[X]", "w": "Any"}


def test_empty_catalog():
    assert python_names([]) == {}
    source = python_stubs([])
    load(source)
    assert functions(source) == {}
    assert usage_example([]) == ""
    check_typescript(typescript_declarations([]))


def test_usage_example_uses_real_names_and_required_args():
    entries = [
        tool("git-hub", "search-issues", obj({"query": {"type": "string"}, "per_page": {"type": "integer", "default": 30}, "state": {"enum": ["open", "closed"]},
                                              "from": {"type": "integer"}, "labels": {"type": "array"}, "f": obj({"x": {}})}, ["query", "state", "from", "labels", "f"])),
        tool("git-hub", "other"),
    ]
    line = usage_example(entries)
    assert line == 'result = tools.git_hub.search_issues(query="...", state="open", from_=0, labels=[], f={})'
    compile(line, "<example>", "exec")
    assert usage_example([tool("s", "ping")]) == "result = tools.s.ping()"
