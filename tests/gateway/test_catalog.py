"""The catalog: one ``server__tool`` id space, rebuilt from its sources, published one whole snapshot at a time."""

import threading

from toolscript.gateway.catalog import Catalog, split_id, tool_id


def test_tool_ids_split_on_the_first_separator():
    assert tool_id("github", "search_issues") == "github__search_issues"
    assert split_id("github__search_issues") == ("github", "search_issues")
    assert split_id("srv__tool__with__underscores") == ("srv", "tool__with__underscores")
    assert split_id("no-separator") == ("", "no-separator")


def test_catalog_notifies_only_on_real_changes():
    tools = {"a": [{"name": "x", "inputSchema": {}}]}
    catalog = Catalog(lambda: list(tools.items()))
    fired = []
    remove = catalog.add_listener(lambda: fired.append(catalog.snapshot().version))
    assert [e.id for e in catalog.entries()] == ["a__x"]
    assert catalog.rebuild() is False and fired == []
    tools["b"] = [{"name": "y", "inputSchema": {}, "title": "Why"}]
    assert catalog.rebuild() is True and len(fired) == 1
    assert catalog.get("b__y").describe() == {"id": "b__y", "server": "b", "name": "y", "title": "Why", "inputSchema": {}, "description": ""}
    assert catalog.get("b__y").as_mcp_tool()["name"] == "b__y"
    remove()
    tools.pop("a")
    catalog.rebuild()
    assert len(fired) == 1 and catalog.get("a__x") is None


def test_a_slow_rebuild_never_publishes_an_older_catalog_over_a_newer_one():
    tools = {"a": [{"name": "one", "inputSchema": {"type": "object"}}], "b": []}
    first_read = threading.Event()
    release_first = threading.Event()
    calls = []

    def sources():
        snapshot = [(server, list(server_tools)) for server, server_tools in tools.items()]
        calls.append(1)
        if len(calls) == 2:  # the first rebuild after construction: hold it after reading
            first_read.set()
            release_first.wait(10)
        return snapshot

    catalog = Catalog(sources)
    newer_committed = threading.Event()
    catalog.add_listener(lambda: newer_committed.set() if any(e.server == "b" for e in catalog.entries()) else None)
    slow = threading.Thread(target=catalog.rebuild)
    slow.start()
    assert first_read.wait(10)
    # Server b turns ready while the slow rebuild still holds its older reading.
    tools["b"] = [{"name": "two", "inputSchema": {"type": "object"}}]
    fast = threading.Thread(target=catalog.rebuild)
    fast.start()
    newer_committed.wait(1.0)  # unserialised, the newer rebuild would publish here; serialised, it waits for the slow one
    release_first.set()
    slow.join(10)
    fast.join(10)
    assert sorted(e.id for e in catalog.entries()) == ["a__one", "b__two"], "server b's tools were lost"
    assert catalog.snapshot().get("b__two") is not None


def test_each_version_lists_its_servers_and_keeps_an_unchanged_servers_reading():
    tools = {"a": [{"name": "x", "inputSchema": {}}], "b": [{"name": "y", "inputSchema": {}}], "empty": []}
    catalog = Catalog(lambda: list(tools.items()))
    first = catalog.snapshot()
    assert [(g.server, [e.id for e in g.entries]) for g in first.servers] == [("a", ["a__x"]), ("b", ["b__y"])]
    tools["b"] = tools["b"] + [{"name": "z", "inputSchema": {}}]
    assert catalog.rebuild() is True
    second = catalog.snapshot()
    # Server a gave the same list: its reading, fingerprint and entries, is the one of the version before.
    assert second.servers[0] is first.servers[0]
    assert [e.id for e in second.servers[1].entries] == ["b__y", "b__z"] and second.servers[1].fingerprint != first.servers[1].fingerprint
    assert [e.id for e in second.entries()] == ["a__x", "b__y", "b__z"]
    # The same tools in a new list: nothing changed.
    tools["a"] = [dict(t) for t in tools["a"]]
    assert catalog.rebuild() is False


def test_a_server_listed_twice_is_one_server_with_the_tools_the_catalog_keeps():
    sources = [("a", [{"name": "x", "inputSchema": {}}]), ("b", [{"name": "y", "inputSchema": {}}]),
               ("a", [{"name": "x", "description": "a second x"}, {"name": "w", "inputSchema": {}}])]
    catalog = Catalog(lambda: list(sources))
    assert [(g.server, [e.id for e in g.entries]) for g in catalog.snapshot().servers] == [("a", ["a__x", "a__w"]), ("b", ["b__y"])]
    assert catalog.get("a__x").tool == {"name": "x", "inputSchema": {}}
