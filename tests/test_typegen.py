"""Tests for toolscript.stubs.typegen: typed Python stubs and TypeScript declarations of MCP tools.

Every generated module is compiled and executed, and ``typing.get_type_hints``
must resolve every annotation in it (forward references included); the shape
of each function is checked with ``ast``.  TypeScript cannot be compiled here,
so its structure and escaping are checked as text.
"""

import ast
import glob
import itertools
import json
import os
import re
import sys
import types
import typing
from typing import Any, Dict, List, Optional

import pytest

from conftest import REPO_ROOT, missing_prerequisite
from toolscript.stubs import typegen
from toolscript.stubs.typegen import python_arg_names, python_names, python_stubs, typescript_declarations, usage_example

CATALOGS = sorted(glob.glob(os.path.join(REPO_ROOT, "bench", "search", "sets", "set00", "catalogs", "*.json")))
_MODULE_COUNTER = itertools.count()


def tool(server: str, name: str, schema: Any = None, description: Any = None, **extra: Any) -> Dict[str, Any]:
    """A catalog entry as the gateway describes it."""
    entry: Dict[str, Any] = {"id": f"{server}__{name}", "server": server, "name": name}
    if schema is not None:
        entry["inputSchema"] = schema
    if description is not None:
        entry["description"] = description
    entry.update(extra)
    return entry


def obj(properties: Dict[str, Any], required: Optional[List[str]] = None, **extra: Any) -> Dict[str, Any]:
    schema: Dict[str, Any] = {"type": "object", "properties": properties}
    if required is not None:
        schema["required"] = required
    schema.update(extra)
    return schema


def load(source: str) -> Dict[str, Any]:
    """Compile and run ``source`` as a module; resolve every annotation in it; return its namespace."""
    assert "\x00" not in source
    code = compile(source, "<stubs>", "exec")
    name = f"_typegen_stubs_{next(_MODULE_COUNTER)}"
    module = types.ModuleType(name)
    # get_type_hints(SomeTypedDict) looks the module up to resolve forward
    # references (on 3.9 it fails without it), so it stays registered.
    sys.modules[name] = module
    exec(code, module.__dict__)
    namespace = dict(module.__dict__)
    for value in namespace.values():
        if isinstance(value, type) and issubclass(value, dict) and hasattr(value, "__total__"):
            typing.get_type_hints(value)
        elif isinstance(value, type) and value.__module__ == name:
            for attr, member in vars(value).items():
                if callable(member) and not attr.startswith("__"):
                    typing.get_type_hints(member)
    return namespace


def hints(source: str, server: str, function: str) -> Dict[str, Any]:
    namespace = load(source)
    return typing.get_type_hints(getattr(namespace[server], function))


class Signature:
    """One stub function as ``ast`` sees it."""

    def __init__(self, node: ast.FunctionDef) -> None:
        self.node = node
        args = node.args
        assert not args.args and not args.posonlyargs and args.vararg is None, "only keyword arguments"
        self.names = [a.arg for a in args.kwonlyargs]
        self.annotations = {a.arg: ast.unparse(a.annotation) for a in args.kwonlyargs}  # type: ignore[arg-type]
        self.defaults = {a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults)}
        self.required = [n for n in self.names if self.defaults[n] is None]
        self.kwargs = args.kwarg.arg if args.kwarg else None
        self.returns = ast.unparse(node.returns) if node.returns else None
        self.doc = ast.get_docstring(node) or ""

    def default(self, name: str) -> Any:
        return ast.literal_eval(self.defaults[name])  # type: ignore[arg-type]


def signature(source: str, server: str, function: str) -> Signature:
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == server:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == function:
                    return Signature(item)
    raise AssertionError(f"no function {server}.{function} in the stubs")


def functions(source: str) -> Dict[str, List[str]]:
    """Server class -> its function names, from the stubs' ``ast``."""
    tree = ast.parse(source)
    return {
        node.name: [item.name for item in node.body if isinstance(item, ast.FunctionDef)]
        for node in tree.body
        if isinstance(node, ast.ClassDef) and not any(isinstance(b, ast.Name) and b.id == "TypedDict" for b in node.bases)
    }


def identifiers(source: str) -> set:
    """Every name the stubs define or use in code (not in strings or comments)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            found.add(node.name)
        elif isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
    return found


def expr(text: str) -> str:
    """An annotation as ``ast.unparse`` writes it (quote style and all)."""
    return ast.unparse(ast.parse(text, mode="eval"))


def literal_values(annotation: Any) -> List[Any]:
    """The values of a Literal, also inside Optional[...]."""
    if typing.get_origin(annotation) is typing.Literal:
        return list(typing.get_args(annotation))
    values: List[Any] = []
    for arg in typing.get_args(annotation):
        if arg is type(None):
            values.append(None)
        else:
            values.extend(literal_values(arg))
    return values


def both(entries: List[Dict[str, Any]]) -> List[str]:
    """Compact and full stubs; both must load."""
    sources = [python_stubs(entries), python_stubs(entries, full=True)]
    for source in sources:
        load(source)
    return sources


# --- names ------------------------------------------------------------------------


def test_names_keep_readable_style():
    entries = [
        tool("my.api.server", "getUserProfile"),
        tool("my.api.server", "search_issues"),
        tool("my.api.server", "foo-bar"),
        tool("github-api", "café"),
        tool("github-api", "123test"),
        tool("github-api", "ｆｕｌｌｗｉｄｔｈ"),
    ]
    names = python_names(entries)
    assert names == {
        "my.api.server__getUserProfile": ("my_api_server", "getUserProfile"),
        "my.api.server__search_issues": ("my_api_server", "search_issues"),
        "my.api.server__foo-bar": ("my_api_server", "foo_bar"),
        "github-api__café": ("github_api", "cafe"),
        "github-api__123test": ("github_api", "_123test"),
        "github-api__ｆｕｌｌｗｉｄｔｈ": ("github_api", "fullwidth"),
    }


def test_names_keywords_dunders_empty_and_non_ascii():
    entries = [tool("s", n) for n in ["class", "match", "type", "None", "__init__", "", "日本", "_", "__", "ok"]]
    names = [attr for _server, attr in python_names(entries).values()]
    assert names == ["class_", "match_", "type_", "None_", "init", "tool_6", "tool_7", "tool_8", "tool_9", "ok"]
    for name in names:
        assert name.isidentifier() and not name.startswith("__")


def test_names_never_collide_and_exact_names_win():
    entries = [tool("s", "foo-bar"), tool("s", "foo_bar"), tool("s", "foo.bar"), tool("s", "foo_bar_2"), tool("s", "class"), tool("s", "class_")]
    names = python_names(entries)
    attrs = [names[e["id"]][1] for e in entries]
    assert len(set(attrs)) == len(attrs)
    # A name that is already an identifier keeps it, whatever else the server has.
    assert names["s__foo_bar"] == ("s", "foo_bar")
    assert names["s__foo_bar_2"] == ("s", "foo_bar_2")
    assert names["s__class_"] == ("s", "class_")
    assert attrs == ["foo_bar_3", "foo_bar", "foo_bar_4", "foo_bar_2", "class_2", "class_"]
    # Deterministic, and unaffected by tools of other servers.
    assert python_names(entries) == names
    assert python_names(entries + [tool("t", "foo-bar")])["s__foo-bar"] == names["s__foo-bar"]


def test_names_of_servers_avoid_runtime_attributes_and_each_other():
    entries = [tool(s, "x") for s in ["call", "search", "list", "a-b", "a_b", "", "日本", "str", "List"]]
    servers = [python_names(entries)[e["id"]][0] for e in entries]
    assert servers == ["call_", "search_", "list_", "a_b_2", "a_b", "server_6", "server_7", "str_", "List_"]


def test_names_that_would_shadow_stub_types_are_suffixed():
    entries = [tool("s", "str", obj({"q": {"type": "string"}}, ["q"])), tool("s", "List"), tool("s", "later", obj({"q": {"type": "string"}}, ["q"]))]
    names = python_names(entries)
    assert names["s__str"] == ("s", "str_") and names["s__List"] == ("s", "List_")
    source = python_stubs(entries)
    assert hints(source, "s", "later")["q"] is str


def test_duplicate_ids_and_junk_entries_are_skipped():
    entries: List[Any] = [tool("s", "a"), tool("s", "a", description="second"), "junk", None, {"name": 3}]
    names = python_names(entries)
    assert names["s__a"] == ("s", "a")
    load(python_stubs(entries))


def test_entries_without_id_or_server():
    names = python_names([{"name": "echo", "server": "e"}, {"id": "x__y"}, {"name": "bare"}])
    assert names == {"e__echo": ("e", "echo"), "x__y": ("x", "y"), "__bare": ("server_3", "bare")}


def test_python_arg_names_map_back_to_json_names():
    schema = obj(
        {"per-page": {"type": "integer"}, "per_page": {"type": "integer"}, "from": {"type": "string"}, "type": {"type": "string"},
         "__init__": {}, "日本": {}, "": {}, "ok": {}, "_meta": {}},
        ["from"],
    )
    mapping = python_arg_names(tool("s", "t", schema))
    assert mapping == {
        "from_": "from", "per_page_2": "per-page", "per_page": "per_page", "type": "type",
        "init": "__init__", "arg_6": "日本", "arg_7": "", "ok": "ok", "meta": "_meta",
    }
    source = python_stubs([tool("s", "t", schema)])
    sig = signature(source, "s", "t")
    assert sorted(sig.names) == sorted(mapping)
    assert sig.required == ["from_"]
    assert 'per_page_2: JSON name "per-page"' in sig.doc
    assert 'from_: JSON name "from"' in sig.doc
    load(source)


def test_python_arg_names_of_odd_tools():
    assert python_arg_names({}) == {}
    assert python_arg_names(tool("s", "t", "not a schema")) == {}
    assert python_arg_names(tool("s", "t", {"type": "object"})) == {}


# --- schemas ----------------------------------------------------------------------


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
        assert sig.doc.startswith(typegen._clean(entries[0]["id"], one_line=True))
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


# --- usage example ------------------------------------------------------------------


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


def test_names_argument_keeps_a_selection_consistent_with_the_whole_catalog():
    catalog = [tool("s", "foo_bar"), tool("s", "foo-bar", obj({"q": {"type": "string"}}, ["q"]))]
    names = python_names(catalog)
    selection = catalog[1:]
    assert python_names(selection)["s__foo-bar"] == ("s", "foo_bar")  # alone it would be foo_bar ...
    source = python_stubs(selection, names=names)
    assert functions(source) == {"s": ["foo_bar_2"]}  # ... but the runtime calls it foo_bar_2
    assert usage_example(selection, names=names) == 'result = tools.s.foo_bar_2(q="...")'
    assert "foo_bar_2(params: {" in typescript_declarations(selection, names=names)


# --- TypeScript ---------------------------------------------------------------------

# Comments and string literals, whichever starts first (as a TypeScript scanner reads them).
_TS_TOKEN = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:[^"\\\n]|\\.)*"', re.S)


def check_typescript(ts: str) -> str:
    """The declarations with comments and strings removed; brackets balanced, no stray comment markers."""
    code = _TS_TOKEN.sub(lambda m: '""' if m.group().startswith('"') else "", ts)
    assert "*/" not in code and "/*" not in code, "a comment ended early"
    assert '"' not in code.replace('""', ""), "an unterminated string"
    for open_, close in ("{}", "()", "[]"):
        depth = 0
        for ch in code:
            depth += (ch == open_) - (ch == close)
            assert depth >= 0
        assert depth == 0, f"unbalanced {open_}{close}"
    assert "export declare const tools:" in code
    for name in re.findall(r"export (?:interface|type) (\S+)", code):
        assert re.fullmatch(r"[A-Za-z_$][\w$]*", name) and name not in typegen._TS_RESERVED, name
    return code


def test_typescript_structure():
    schema = obj(
        {
            "query": {"type": "string", "description": "what */ to find"},
            "per-page": {"type": "integer", "default": 30},
            "state": {"enum": ["open", "closed"]},
            "filter": {"$ref": "#/$defs/Filter"},
            "tags": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
        },
        ["query"],
    )
    schema["$defs"] = {"Filter": obj({"owner": {"type": "string"}, "delete": {"type": "boolean"}}, ["owner"]), "Promise": {"enum": [1]}}
    schema["properties"]["p"] = {"$ref": "#/$defs/Promise"}
    entries = [
        tool("github", "search_issues", schema, "Search */ issues", outputSchema=obj({"total": {"type": "integer"}}, ["total"])),
        tool("github", "class", obj({})),
        tool("list", "x"),
    ]
    for ts in (typescript_declarations(entries), typescript_declarations(entries, full=True)):
        code = check_typescript(ts)
        assert "Search *\\/ issues" in ts and "what *\\/ to find" in ts
        assert "search_issues(params: {" in code and "class_(): Promise<any>;" in code and "list_: {" in code
        assert "query: string;" in code and '"per-page"?: number;' in ts and 'state?: "open" | "closed";' in ts
        assert "filter?: Filter;" in code and "tags?: Array<string | number>;" in code
        assert "export interface Filter {" in code and "owner: string;" in code and "delete?: boolean;" in code
        assert "Promise<SearchIssuesResult>" in code and "export interface SearchIssuesResult {" in code
        assert "export type GithubPromise = 1;" in code  # "Promise" is taken: the server's name goes first
        assert "@default 30" in ts


# --- real catalogs ------------------------------------------------------------------


def catalog_tools(path: str) -> List[Dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    server = data["server"]
    return [dict(t, id=f"{server}__{t['name']}", server=server) for t in data["tools"]]


@pytest.mark.skipif(not CATALOGS, reason="no recorded catalogs in bench/search/sets/set00/catalogs")
@pytest.mark.parametrize("path", CATALOGS, ids=[os.path.basename(p)[:-5] for p in CATALOGS])
def test_recorded_catalogs(path):
    entries = catalog_tools(path)
    names = python_names(entries)
    for source in both(entries):
        namespace = load(source)
        for entry in entries:
            server, function = names[entry["id"]]
            stub = getattr(namespace[server], function)
            assert entry["id"] in (stub.__doc__ or "")
            sig = signature(source, server, function)
            assert set(sig.names) == set(python_arg_names(entry))
            required = (entry.get("inputSchema") or {}).get("required", [])
            assert {python_arg_names(entry)[n] for n in sig.required} == set(required)
    check_typescript(typescript_declarations(entries))
    check_typescript(typescript_declarations(entries, full=True))
    compile(usage_example(entries), "<example>", "exec")


def test_all_recorded_catalogs_together():
    """One module for every server at once: names across servers stay apart."""
    entries = [entry for path in CATALOGS for entry in catalog_tools(path)]
    if not entries:
        pytest.skip("no recorded catalogs")
    namespace = load(python_stubs(entries))
    for entry_id, (server, function) in python_names(entries).items():
        assert callable(getattr(namespace[server], function)), entry_id


def test_server_everything_live(capsys):
    """Record server-everything's catalog through our own client; report stub size vs JSON."""
    import peers
    from toolscript.config.load import ServerConfig
    from toolscript.mcp.client.connect import open_session

    try:
        entry, node = peers.everything_entry(), peers.node_binary()
    except peers.PeerMissing as exc:
        missing_prerequisite(str(exc))
    config = ServerConfig(name="everything", type="stdio", source="test", command=node, args=[entry, "stdio"])
    session = open_session(config)
    try:
        listed = session.list_tools()
    finally:
        session.close()
    entries = [dict(t, id=f"everything__{t['name']}", server="everything") for t in listed]
    source = python_stubs(entries)
    namespace = load(source)
    assert hasattr(namespace["everything"], "echo") and hasattr(namespace["everything"], "get_sum")
    assert signature(source, "everything", "get_sum").annotations == {"a": "float", "b": "float"}
    assert usage_example(entries) == 'result = tools.everything.echo(message="...")'
    sizes = (len(source), len(python_stubs(entries, full=True)), len(json.dumps(entries)))
    assert sizes[0] < sizes[2] * 0.7
    with capsys.disabled():
        print(f"\nserver-everything: {len(entries)} tools; compact stubs {sizes[0]} chars, full {sizes[1]}, json.dumps(tools) {sizes[2]}")
