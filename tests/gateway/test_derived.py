"""What the gateway derives from its catalog (search index, stubs, the runtime's name map), rebuilt on change."""

import threading

import pytest

from conftest import wait_for
from gateway_processes import fixture_server
from toolscript.gateway.catalog import Catalog
from toolscript.gateway.derived import Derived


def test_a_burst_of_catalog_changes_is_one_worker_not_a_thread_each():
    tools = []
    catalog = Catalog(lambda: [("s", list(tools))])
    derived = Derived(catalog)
    try:
        for i in range(40):
            tools.append({"name": f"t{i}", "inputSchema": {"type": "object"}})
            catalog.rebuild()
        workers = [t for t in threading.enumerate() if t.name == "derived-rebuild"]
        assert len(workers) <= 1
        assert len(derived.names()["servers"]["s"]) == 40
        artifacts = derived.current()
        assert artifacts.version == catalog.snapshot().version and len(artifacts.tools) == 40
    finally:
        derived.close()


@pytest.mark.timeout(60)
def test_names_say_why_a_configured_server_is_unavailable(gateway):
    gw, _url = gateway(fixture_server("good"), fixture_server("crashy-one", "--exit-at-start", "3"))
    assert wait_for(lambda: gw.upstreams["crashy-one"].state == "failed" and gw.upstreams["good"].state == "ready")
    gw.wait_for_servers()  # as GET /names does: a server's tools are in the names once it has settled
    names = gw.derived.names()
    assert "good" in names["servers"] and "crashy_one" not in names["servers"]
    assert "crashy_one" in names["unavailable"] and "crashy-one" in names["unavailable"]["crashy_one"]
    assert "good" not in names["unavailable"]


def three_servers():
    return {server: [{"name": f"{server}_tool_{i}", "description": f"Tool number {i} of the {server} server", "inputSchema": {"type": "object"}}
                     for i in range(3)] for server in ("alpha", "beta", "gamma")}


def test_a_change_to_one_server_reads_only_that_servers_tools_again(monkeypatch):
    import importlib

    from toolscript.search import fields

    indexed = []
    real = fields.index_fields

    def counting(tool, surface):
        indexed.append(tool["id"])
        return real(tool, surface)

    # Whichever module of search reads a tool's fields to index it.
    for name in ("toolscript.search.index", "toolscript.search.parts"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "index_fields"):
            monkeypatch.setattr(module, "index_fields", counting)
    tools = three_servers()
    catalog = Catalog(lambda: list(tools.items()))
    derived = Derived(catalog)
    try:
        first = derived.current()
        assert sorted(indexed) == sorted(f"{s}__{t['name']}" for s, own in tools.items() for t in own)
        indexed.clear()
        tools["beta"] = tools["beta"] + [{"name": "beta_extra", "description": "Frobnicate the widgets", "inputSchema": {"type": "object"}}]
        assert catalog.rebuild()
        after = derived.current()
        assert after.version == catalog.snapshot().version > first.version
        assert derived.search("frobnicate the widgets", limit=1, threshold=0, servers=None)[0]["id"] == "beta__beta_extra"
        # alpha's and gamma's tools were not read again: their parts are the ones built before.
        assert sorted(indexed) == ["beta__beta_extra"] + [f"beta__beta_tool_{i}" for i in range(3)]
        assert after.parts[0] is first.parts[0] and after.parts[2] is first.parts[2] and after.parts[1] is not first.parts[1]
        built = derived.parts_built
        tools.pop("gamma")
        assert catalog.rebuild()
        assert [t["server"] for t in derived.current().tools] == ["alpha"] * 3 + ["beta"] * 4
        assert derived.parts_built == built  # a server that went away needs no part built
    finally:
        derived.close()


def test_a_search_while_a_server_is_being_indexed_answers_from_the_previous_complete_version(monkeypatch):
    from toolscript.gateway import derived as derived_module

    blocked, release = threading.Event(), threading.Event()
    real = derived_module.python_names

    def slow(tools):
        # The build of the version with the new tool stops here until the test lets it go on.
        if any(t.get("name") == "slow_new_tool" for t in tools):
            blocked.set()
            release.wait(30)
        return real(tools)

    monkeypatch.setattr(derived_module, "python_names", slow)
    tools = three_servers()
    catalog = Catalog(lambda: list(tools.items()))
    derived = Derived(catalog)
    changer = threading.Thread(target=catalog.rebuild)
    try:
        before = derived.current()
        tools["beta"] = tools["beta"] + [{"name": "slow_new_tool", "description": "Frobnicate the widgets", "inputSchema": {"type": "object"}}]
        changer.start()
        assert blocked.wait(10)
        answers = []
        searcher = threading.Thread(target=lambda: answers.append(
            (derived.search("frobnicate the widgets", limit=20, threshold=0, servers=None), derived.current(), derived.names())))
        searcher.start()
        searcher.join(10)
        assert answers, "a search waited for the index being built"
        results, seen, names = answers[0]
        assert not release.is_set()
        # The previous version, whole: its tools, its index, its names, none of the new one's.
        assert seen is before and "beta__slow_new_tool" not in [r["id"] for r in results]
        assert len(seen.tools) == len(seen.index) == 9 and "slow_new_tool" not in names["servers"]["beta"]
    finally:
        release.set()
        changer.join(10)
        derived.close()
    after = derived.current()
    assert after.version == catalog.snapshot().version
    assert derived.search("frobnicate the widgets", limit=1, threshold=0, servers=None)[0]["id"] == "beta__slow_new_tool"


def test_names_put_together_from_servers_are_the_whole_catalogs():
    """Each server's function names are its own, its attribute the servers' names': together, python_names of all."""
    from toolscript.stubs.names import python_arg_names, python_names
    from toolscript.stubs.python import python_stubs, usage_example

    schema = {"type": "object", "properties": {"from": {"type": "string"}, "per-page": {"type": "integer"}}, "required": ["from"]}
    tools = {
        "foo_bar": [{"name": "a_b", "inputSchema": schema}, {"name": "a-b", "inputSchema": {"type": "object"}}],
        "foo-bar": [{"name": "class", "inputSchema": {"type": "object"}}, {"name": "call", "inputSchema": {"type": "object"}}],
        "call": [{"name": "list", "inputSchema": schema}],
        "9lives": [{"name": "", "inputSchema": {"type": "object"}}, {"name": "-", "inputSchema": {"type": "object"}}],
    }
    catalog = Catalog(lambda: list(tools.items()))
    derived = Derived(catalog, unavailable=lambda: {"foo.bar": "failed", "down": "connecting", "call": "failed"})
    try:
        artifacts = derived.current()
        whole = python_names(artifacts.tools)
        assert artifacts.attributes == whole
        servers = {}
        for tool in artifacts.tools:
            server_attr, attr = whole[tool["id"]]
            servers.setdefault(server_attr, {})[attr] = {"id": tool["id"], "args": python_arg_names(tool)}
        names = derived.names()
        assert names["servers"] == servers and list(names["servers"]) == list(servers)
        assert names["unavailable"] == {"foo_bar_3": "failed", "down": "connecting", "call_": "failed"}
        typed = derived.types(lang="python")
        assert typed["code"] == python_stubs(artifacts.tools)
        assert typed["usage"] == usage_example(artifacts.tools, names=whole)
    finally:
        derived.close()


def test_a_cached_tool_list_adopted_at_start_is_indexed_off_the_starting_thread(tmp_path, monkeypatch):
    """The gateway starts its servers before it writes its state file: indexing a cached list there would hold that up."""
    import os

    from claude_code_files import Layout, lock_entry
    from toolscript.config.load import Config
    from toolscript.gateway import derived as derived_module, toolcache, upstream as upstream_module
    from toolscript.gateway.service import Gateway

    layout = Layout(tmp_path)
    monkeypatch.setenv("TOOLSCRIPT_STATE_DIR", layout.state)
    monkeypatch.setattr(upstream_module, "LISTING_DELAY_SECONDS", 60.0)  # the cached list is all there is
    layout.claude_json(user={"locked": lock_entry(os.path.join(layout.root, "l.lock"), os.path.join(layout.root, "l.log"))})
    server = layout.load().servers["locked"]
    toolcache.store(server, [{"name": "hold", "description": "Say which process holds the lock file.",
                              "inputSchema": {"type": "object", "properties": {}}}])
    built_on = []
    real = derived_module.build_part
    monkeypatch.setattr(derived_module, "build_part", lambda group, previous=None: built_on.append(
        (group.server, threading.get_ident())) or real(group, previous))
    gw = Gateway(Config(servers={"locked": server}, files=[], warnings=[]), workspace=str(tmp_path))
    try:
        gw.start()
        assert wait_for(lambda: {"builtin", "locked"} <= {s for s, _ in built_on})
        assert all(thread != threading.get_ident() for _, thread in built_on), "a part was built while the gateway started"
        assert [hit["id"] for hit in gw.derived.search("which process holds the lock", limit=1, threshold=0.0, servers=None)] == ["locked__hold"]
    finally:
        gw.stop()


def test_a_list_left_to_the_worker_is_still_searchable_by_whoever_waited_for_it(monkeypatch):
    """Only the deferring thread's changes wait for the worker; a request never reads a version without them."""
    from toolscript.gateway import derived as derived_module

    built_on = []
    real = derived_module.build_part
    monkeypatch.setattr(derived_module, "build_part", lambda group, previous=None: built_on.append(
        (group.server, threading.current_thread().name)) or real(group, previous))
    tools = three_servers()
    catalog = Catalog(lambda: list(tools.items()))
    derived = Derived(catalog)
    try:
        derived.current()
        built_on.clear()
        with derived.deferred():
            tools["alpha"] = tools["alpha"] + [{"name": "cached_tool", "description": "Frobnicate the widgets", "inputSchema": {"type": "object"}}]
            assert catalog.rebuild()
            assert built_on == []  # not on this thread
            # A request now gets the adopted list too, though the worker waits for the block to end.
            answers = []
            searcher = threading.Thread(target=lambda: answers.append(
                derived.search("frobnicate the widgets", limit=1, threshold=0, servers=None)), name="request")
            searcher.start()
            searcher.join(10)
            assert answers and answers[0][0]["id"] == "alpha__cached_tool"
            # Another server's thread, meanwhile, derives its own change as always.
            other = threading.Thread(target=lambda: (tools.__setitem__("gamma", tools["gamma"][:1]), catalog.rebuild()), name="upstream-gamma")
            other.start()
            other.join(10)
            assert [thread for server, thread in built_on if server == "gamma"] == ["upstream-gamma"]
        assert derived.current().version == catalog.snapshot().version
    finally:
        derived.close()


def catalog_of_5000_tools():
    """{server: [MCP tools]}: every development set's recorded servers (a server per set and name), then copies
    of them with every long word changed, up to 5,000 tools."""
    import re

    from search_sets import evalsets

    def mangled(value, suffix):
        if isinstance(value, str):
            return re.sub(r"[A-Za-z]{4,}", lambda m: m.group(0) + suffix, value)
        if isinstance(value, dict):
            return {k: mangled(v, suffix) for k, v in value.items()}
        return [mangled(v, suffix) for v in value] if isinstance(value, list) else value

    recorded = {}
    for name in evalsets.development():
        for t in evalsets.own_tools(name):
            recorded.setdefault(f"{name}-{t['server']}", []).append({k: v for k, v in t.items() if k not in ("id", "server")})
    servers, total, copy = {}, 0, 0
    while total < 5000:
        for server, tools in recorded.items():
            if total >= 5000:
                break
            own = tools[:5000 - total]
            servers[f"{server}-copy{copy}" if copy else server] = [mangled(t, "qx" * copy) for t in own] if copy else own
            total += len(own)
        copy += 1
    return servers


@pytest.mark.timeout(600)
def test_search_over_5000_tools_made_of_server_parts_ranks_as_one_index_of_the_whole_catalog():
    """The gateway's index, made of one part per server and kept across changes, answers every query as an index
    of the whole catalog built at once: the same tools, scores and --explain shares, to the last bit."""
    import random

    from search_sets import evalsets
    from toolscript.search.index import SearchIndex

    tools = catalog_of_5000_tools()
    rng = random.Random(5)
    queries = [rng.choice(evalsets.queries(name))["query"] for name in evalsets.development()]
    queries += ["serach isues", "calendarId timeMin", "github__search_issues", "list the filesqx", "", "the of a"]

    def answers(index):
        return [(index.search(q, limit=10, threshold=0.0, explain=True), index.search(q, limit=5, semantic=False),
                 index.explain_terms(q)) for q in queries]

    catalog = Catalog(lambda: list(tools.items()))
    derived = Derived(catalog)
    try:
        first = derived.current()
        assert len(first.tools) == 5000 and len(first.parts) > 10
        answers(first.index)  # what the parts learn of these queries' words they keep for the next version
        # One server changes, one goes away, one comes: the others' parts are kept, ranking is still the whole catalog's.
        names = list(tools)
        changed, gone = names[3], names[40]
        tools[changed] = [dict(t, description=f"{t.get('description') or ''} and archive it") for t in tools[changed][1:]]
        del tools[gone]
        tools["brand-new"] = [{"name": "frobnicate_widget", "description": "Frobnicate a widget and archive it",
                               "inputSchema": {"type": "object", "properties": {"widgetId": {"type": "string"}}}}]
        built = derived.parts_built
        assert catalog.rebuild()
        after = derived.current()
        assert derived.parts_built - built == 2  # the changed server's and the new one's
        assert answers(after.index) == answers(SearchIndex(after.tools))
    finally:
        derived.close()


@pytest.mark.timeout(120)
def test_a_reload_that_changes_one_server_builds_that_servers_part_alone(tmp_path, monkeypatch):
    """The others keep their connection, so their tool lists and their parts of the index: none is read again."""
    import importlib
    import importlib.util
    import os

    from live_config import fixture_entry, marker, write_json
    from toolscript.config.load import load_config
    from toolscript.gateway.service import Gateway
    from toolscript.search import fields

    read = []  # the servers whose tools search read to index them, one entry per tool
    real = fields.index_fields
    for name in ("toolscript.search.index", "toolscript.search.parts"):  # whichever module of search indexes a tool
        module = importlib.util.find_spec(name) and importlib.import_module(name)
        if module and hasattr(module, "index_fields"):
            monkeypatch.setattr(module, "index_fields", lambda tool, surface: read.append(tool["server"]) or real(tool, surface))
    home, project = str(tmp_path / "home"), str(tmp_path / "project")
    for directory in (home, os.path.join(project, ".git")):
        os.makedirs(directory)
    env = {"HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TOOLSCRIPT_STATE_DIR": str(tmp_path / "state")}
    entries = {name: fixture_entry(marker(tmp_path, name)) for name in ("alpha", "beta", "gamma")}
    write_json(os.path.join(home, ".toolscript.json"), {"mcpServers": entries})
    gateway = Gateway(load_config(cwd=project, environ=env), workspace=project)
    try:
        gateway.start()
        assert not gateway.wait_for_servers(60) and all(u.state == "ready" for u in gateway.upstreams.values())
        assert {"alpha", "beta", "gamma"} <= {hit["server"] for hit in gateway.derived.search("echo", limit=50, threshold=0.0, servers=None)}
        read.clear()
        entries["beta"]["env"] = {"FIXTURE_SETTING": "changed"}
        write_json(os.path.join(home, ".toolscript.json"), {"mcpServers": entries})
        changes = gateway.apply_config(load_config(cwd=project, environ=env))
        assert changes.changed == ["beta"]
        assert not gateway.wait_for_servers(60) and gateway.upstreams["beta"].state == "ready"
        hits = gateway.derived.search("echo", limit=50, threshold=0.0, servers=None)
        assert {"alpha__echo", "beta__echo", "gamma__echo"} <= {hit["id"] for hit in hits}
        assert read and set(read) == {"beta"}
    finally:
        gateway.stop()
