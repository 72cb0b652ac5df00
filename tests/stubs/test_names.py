"""The identifier map (toolscript.stubs.names): what ``tools.<server>.<tool>(<argument>=...)`` calls each thing.

The stubs and the sandbox runtime must agree on these names, so each test
checks the map and, where it matters, that the generated stubs use it.
"""

from typing import Any, List

from stub_checks import functions, hints, load, obj, signature, tool
from toolscript.stubs.names import python_arg_names, python_names
from toolscript.stubs.python import python_stubs, usage_example
from toolscript.stubs.typescript import typescript_declarations


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


def test_names_argument_keeps_a_selection_consistent_with_the_whole_catalog():
    catalog = [tool("s", "foo_bar"), tool("s", "foo-bar", obj({"q": {"type": "string"}}, ["q"]))]
    names = python_names(catalog)
    selection = catalog[1:]
    assert python_names(selection)["s__foo-bar"] == ("s", "foo_bar")  # alone it would be foo_bar ...
    source = python_stubs(selection, names=names)
    assert functions(source) == {"s": ["foo_bar_2"]}  # ... but the runtime calls it foo_bar_2
    assert usage_example(selection, names=names) == 'result = tools.s.foo_bar_2(q="...")'
    assert "foo_bar_2(params: {" in typescript_declarations(selection, names=names)
