"""A server scored as a whole (issue 13, session 20, seventh fusion round): _SERVER_WEIGHT.

A request that describes a domain ("remember that Alice works at Acme")
has its meaning spread over a server's tools (a knowledge graph's entities,
relations, observations) more than in any one of them.  With the vectors,
each tool gains a share of _SERVER_WEIGHT by how its server's score (the
mean of the query's cosines with its best three tools, _SERVER_TOOLS)
leads, softmax over the servers.  A
query that names a server keeps _NAMED_SERVER_BONUS alone (not doubled);
one by parameter names and a search by the words alone get nothing.
"""

import json
import os
import sys

import pytest

import toolscript.search
from conftest import REPO_ROOT, load_script, run_cli
from mcp_servers.launch import FIXTURE
from toolscript.config import ServerConfig
from toolscript import vectors
from toolscript.search import SIGNALS, SearchIndex
from search_sets import tool

needs_vectors = pytest.mark.skipif(not vectors.available(), reason="no vectors data in this checkout")
# The cases here were written against VECTORS-V3's cosines (see conftest.vectors_v3).
pytestmark = pytest.mark.usefixtures("vectors_v3")


# Three recorded servers' tools (bench/eval/catalogs): a knowledge graph, a database with a memo, git.
CATALOG = [
    tool("memory", "create_entities", "Create multiple new entities in the knowledge graph"),
    tool("memory", "create_relations", "Create multiple new relations between entities in the knowledge graph. Relations should be in active voice"),
    tool("memory", "add_observations", "Add new observations to existing entities in the knowledge graph"),
    tool("memory", "delete_entities", "Delete multiple entities and their associated relations from the knowledge graph"),
    tool("memory", "delete_observations", "Delete specific observations from entities in the knowledge graph"),
    tool("memory", "delete_relations", "Delete multiple relations from the knowledge graph"),
    tool("memory", "read_graph", "Read the entire knowledge graph"),
    tool("memory", "search_nodes", "Search for nodes in the knowledge graph based on a query"),
    tool("memory", "open_nodes", "Open specific nodes in the knowledge graph by their names"),
    tool("sqlite", "read_query", "Execute a SELECT query on the SQLite database"),
    tool("sqlite", "write_query", "Execute an INSERT, UPDATE, or DELETE query on the SQLite database"),
    tool("sqlite", "create_table", "Create a new table in the SQLite database"),
    tool("sqlite", "list_tables", "List all tables in the SQLite database"),
    tool("sqlite", "describe_table", "Get the schema information for a specific table"),
    tool("sqlite", "append_insight", "Add a business insight to the memo"),
    tool("git", "git_status", "Shows the working tree status"),
    tool("git", "git_diff_unstaged", "Shows changes in the working directory that are not yet staged"),
    tool("git", "git_diff_staged", "Shows changes that are staged for commit"),
    tool("git", "git_diff", "Shows differences between branches or commits"),
    tool("git", "git_commit", "Records changes to the repository"),
    tool("git", "git_add", "Adds file contents to the staging area"),
    tool("git", "git_reset", "Unstages all staged changes"),
    tool("git", "git_log", "Shows the commit logs"),
    tool("git", "git_create_branch", "Creates a new branch from an optional base branch"),
    tool("git", "git_checkout", "Switches branches"),
    tool("git", "git_show", "Shows the contents of a commit, or of a file or directory given as <revision>:<path>"),
    tool("git", "git_branch", "List Git branches"),
]
DOMAIN_QUERY = "remember that Alice works at Acme"  # a development query (bench/eval) whose answers are memory's


def ids(results):
    return [r["id"] for r in results]


@needs_vectors
def test_a_request_spread_over_one_servers_tools_lifts_that_servers_tool_over_another_servers(monkeypatch):
    index = SearchIndex(CATALOG)
    monkeypatch.setattr(toolscript.search, "_SERVER_WEIGHT", 0.0)
    alone = ids(index.search(DOMAIN_QUERY, limit=len(CATALOG)))
    assert alone.index("git__git_diff_unstaged") < alone.index("memory__add_observations")
    assert "memory__add_observations" not in alone[:3]
    monkeypatch.undo()
    whole = ids(index.search(DOMAIN_QUERY, limit=len(CATALOG)))
    assert whole.index("memory__add_observations") < whole.index("git__git_diff_unstaged")
    assert "memory__add_observations" in whole[:3]


@needs_vectors
def test_the_server_that_leads_takes_nearly_all_the_weight_and_explain_shows_it():
    index = SearchIndex(CATALOG)
    results = index.search(DOMAIN_QUERY, limit=10, explain=True)
    by_server = {}
    assert all("server" in r["signals"] for r in results if r["server"] == "memory")
    for r in results:
        by_server.setdefault(r["server"], set()).add(round(r["signals"].get("server", 0.0), 6))
        # The signals still add up to the score shown.
        assert sum(r["signals"].values()) == pytest.approx(r["score"], abs=0.0006)
    assert by_server["memory"] and all(share == pytest.approx(toolscript.search._SERVER_WEIGHT, rel=0.05) for share in by_server["memory"])
    assert all(share < 0.1 * toolscript.search._SERVER_WEIGHT for server, shares in by_server.items() if server != "memory" for share in shares)
    assert SIGNALS.index("named_server") < SIGNALS.index("server") < SIGNALS.index("exact_name")


@needs_vectors
def test_a_query_naming_a_server_gets_the_named_bonus_once_not_the_server_signal_too(monkeypatch):
    index = SearchIndex(CATALOG)
    query = "in memory, remember that Alice works at Acme"
    top = index.search(query, limit=3, explain=True)
    assert {r["server"] for r in top} == {"memory"}
    for r in top:
        assert r["signals"]["named_server"] == toolscript.search._NAMED_SERVER_BONUS
        assert "server" not in r["signals"]
    monkeypatch.setattr(toolscript.search, "_SERVER_WEIGHT", 0.0)
    assert [(r["id"], r["score"]) for r in index.search(query, limit=3)] == [(r["id"], r["score"]) for r in top]


@needs_vectors
def test_a_query_by_parameter_names_gets_no_server_signal(monkeypatch):
    schema = {"type": "object", "properties": {"entity_name": {"type": "string"}, "observation_text": {"type": "string"}}}
    catalog = CATALOG + [tool("notes", "add_note", "Add a note", inputSchema=schema)]
    index = SearchIndex(catalog)
    query = "entity_name observation_text"
    results = index.search(query, limit=5, explain=True)
    assert results and all("server" not in r["signals"] for r in results)
    monkeypatch.setattr(toolscript.search, "_SERVER_WEIGHT", 0.0)
    assert [(r["id"], r["score"]) for r in index.search(query, limit=5)] == [(r["id"], r["score"]) for r in results]


def test_words_alone_get_no_server_signal(monkeypatch):
    index = SearchIndex(CATALOG, semantic=False)
    results = index.search(DOMAIN_QUERY + " graph", limit=5, explain=True)
    assert results and all("server" not in r["signals"] for r in results)
    monkeypatch.setattr(toolscript.search, "_SERVER_WEIGHT", 0.0)
    assert [(r["id"], r["score"]) for r in index.search(DOMAIN_QUERY + " graph", limit=5)] == [(r["id"], r["score"]) for r in results]


def test_tied_servers_gain_nothing_and_a_clear_leader_takes_nearly_all_above_an_even_split(monkeypatch):
    monkeypatch.setattr(toolscript.search, "_SERVER_TOOLS", 1)
    weight = toolscript.search._SERVER_WEIGHT
    # Two servers of one tool each: their tools' cosines are their scores.
    assert toolscript.search._server_shares({0: 0.4, 1: 0.4}, [0, 1], 2) == [0.0, 0.0]
    led = toolscript.search._server_shares({0: 0.5, 1: 0.4}, [0, 1], 2)
    assert led[0] == pytest.approx(weight, rel=0.02) and led[1] == 0.0
    # Of three servers, two that tie for the lead split what is above an even third.
    split = toolscript.search._server_shares({0: 0.5, 1: 0.5, 2: 0.3}, [0, 1, 2], 3)
    assert split == [pytest.approx(weight / 4, rel=0.01), pytest.approx(weight / 4, rel=0.01), 0.0]


@needs_vectors
def test_one_server_alone_gains_nothing_from_its_standing():
    # The built-in tools alone (or a user with one MCP server): a share of 1 says nothing about which tool.
    alone = [t for t in CATALOG if t["server"] == CATALOG[0]["server"]]
    index = SearchIndex(alone)
    assert index._servers == 1 and toolscript.search._server_shares({0: 0.9}, [0], 1) == [0.0]
    results = index.search(DOMAIN_QUERY + " in the knowledge graph", limit=5, explain=True)
    assert results and all("server" not in r["signals"] for r in results)


def test_a_server_is_scored_by_its_best_tools_mean_so_a_spread_domain_beats_one_lone_match(monkeypatch):
    monkeypatch.setattr(toolscript.search, "_SERVER_TOOLS", 3)
    # Server 0: three tools that each fit a little; server 1: one tool that fits better, and two that do not.
    cosines = {0: 0.45, 1: 0.42, 2: 0.40, 3: 0.55, 4: 0.05, 5: -0.2}
    shares = toolscript.search._server_shares(cosines, [0, 0, 0, 1, 1, 1], 2)
    assert shares[0] > 0.9 * toolscript.search._SERVER_WEIGHT and shares[1] == 0.0
    # A server with fewer tools than that counts 0 for each missing one; above the vectors' ceiling all tie.
    lone = toolscript.search._server_shares({0: 0.6, 1: 0.3, 2: 0.3, 3: 0.3}, [0, 1, 1, 1], 2)
    assert lone[1] > 0.9 * toolscript.search._SERVER_WEIGHT and lone[0] == 0.0  # 0.6 / 3 = 0.2 < 0.3
    assert toolscript.search._server_shares({0: 0.95, 1: 0.99, 2: 0.95, 3: 0.99, 4: 0.95, 5: 0.99}, [0, 1, 0, 1, 0, 1], 2) == [0.0, 0.0]


@needs_vectors
def test_the_tuning_bench_adds_the_server_signal_as_search_does():
    bench = load_script("bench/search.py")
    index = SearchIndex(CATALOG)
    queries = [{"query": DOMAIN_QUERY, "ids": ["memory__add_observations"], "kind": "paraphrase"}]
    mod = toolscript.search
    grid = {"tools": (mod._SERVER_TOOLS,), "weight": (0.0, mod._SERVER_WEIGHT), "temperature": (mod._SERVER_TEMPERATURE,)}
    rows = bench.server_signal_rows(index, queries, ["book a flight"], grid)
    assert [r["hits@3"] for r in rows] == [0, 1]  # without it, and as search ranks it (above)
    assert "memory__add_observations" in ids(index.search(DOMAIN_QUERY, limit=3))


@needs_vectors
def test_cli_explain_shows_the_server_signal_as_a_column_and_in_json(gateway, tmp_path):
    _, url = gateway(ServerConfig(name="fixture", type="stdio", source="t", command=sys.executable, args=[FIXTURE, "stdio"], timeout=10))
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": REPO_ROOT,
           "TOOLSCRIPT_GATEWAY_URL": url, "TOOLSCRIPT_STATE_DIR": str(tmp_path / "state")}
    table = run_cli("search", "add two integers", "--explain", env=env, cwd=str(tmp_path))
    assert table.returncode == 0, table.stderr
    assert "SERVER" in table.stdout.splitlines()[0].split()
    as_json = json.loads(run_cli("search", "add two integers", "--explain", "--json", env=env, cwd=str(tmp_path)).stdout)
    # Its server leads (the gateway may list a few tools of its own): nearly the whole weight.
    assert as_json["results"][0]["signals"]["server"] == pytest.approx(toolscript.search._SERVER_WEIGHT, rel=0.01)
