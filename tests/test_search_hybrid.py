"""Search ranking as named signals: --explain, the vector signal and the hybrid's quality on the development set.

The ranker adds up named signals (BM25F word matches, synonym lookups, typo
corrections, joined words, exact names and, when the vectors data is
present, semantic similarity).  ``search(explain=True)`` returns each
signal's contribution and ``toolscript search --explain`` prints them; these
tests check the contributions add up to the score, that explaining changes
no result, and that the CLI and the gateway pass it through.
"""

import json
import os
import sys

import pytest

from conftest import REPO_ROOT, run_cli
from mcp_servers.launch import FIXTURE
from toolscript.config import ServerConfig
from toolscript.search import SIGNALS, SearchIndex


def tool(server, name, description="", **extra):
    return dict({"id": f"{server}__{name}", "server": server, "name": name, "description": description}, **extra)


CATALOG = [
    tool("github", "search_issues", "Search for issues and pull requests across GitHub repositories",
         inputSchema={"type": "object", "properties": {"q": {"type": "string", "description": "Search query"}}}),
    tool("github", "create_issue", "Create a new issue in a GitHub repository"),
    tool("filesystem", "list_directory", "Get a detailed listing of all files and directories in a specified path"),
    tool("brave", "brave_web_search", "Performs a web search using the Brave Search API"),
    tool("time", "get_current_time", "Get current time in a specific timezone",
         inputSchema={"type": "object", "properties": {"timezone": {"type": "string", "description": "IANA timezone name"}}}),
]


@pytest.fixture(scope="module")
def index():
    return SearchIndex(CATALOG)


def lexical_signals(result):
    return {k: v for k, v in result["signals"].items() if k != "vector"}


@pytest.mark.parametrize(
    "query, expected, signal",
    [
        ("serach isues", "github__search_issues", "typo"),
        ("ls a folder", "filesystem__list_directory", "synonym"),
        ("brave web search", "brave__brave_web_search", "joined_words"),
        ("search_issues", "github__search_issues", "exact_name"),
        ("current time in tokyo", "time__get_current_time", "bm25"),
    ],
)
def test_explain_names_the_signal_that_found_the_tool(index, query, expected, signal):
    results = index.search(query, limit=3, explain=True)
    top = results[0]
    assert top["id"] == expected
    assert top["signals"].get(signal, 0) > 0, top["signals"]
    assert set(top["signals"]) <= set(SIGNALS)


@pytest.mark.parametrize("query", ["serach isues", "ls a folder", "create a new issue", "search_issues", "web search tokyo time"])
def test_explained_contributions_add_up_to_the_score(index, query):
    for r in index.search(query, limit=10, explain=True):
        assert round(min(1.0, sum(r["signals"].values())), 3) == pytest.approx(r["score"], abs=0.001), r


@pytest.mark.parametrize("query", ["serach isues", "ls a folder", "create a new issue", "search_issues", "zzz", ""])
def test_explain_changes_nothing_but_adds_signals(index, query):
    plain = index.search(query, limit=10, threshold=0.1)
    explained = index.search(query, limit=10, threshold=0.1, explain=True)
    assert [{k: v for k, v in r.items() if k != "signals"} for r in explained] == plain
    assert all("signals" not in r for r in plain)


def test_explain_terms_lists_what_the_query_looked_up(index):
    terms = {t["term"]: t for t in index.explain_terms("serach isues in my repo")}
    assert terms["search"]["signal"] == "typo" and 0 < terms["search"]["weight"] < 1
    assert terms["repository"]["signal"] == "synonym"
    assert all(t["idf"] > 0 for t in terms.values())
    assert index.explain_terms("   ") == []


def stdio_fixture():
    return ServerConfig(name="fixture", type="stdio", source="t", command=sys.executable, args=[FIXTURE, "stdio"], timeout=10)


def cli_env(url, tmp_path):
    return {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": REPO_ROOT,
            "TOOLSCRIPT_GATEWAY_URL": url, "TOOLSCRIPT_STATE_DIR": str(tmp_path / "state")}


def test_search_explain_through_the_gateway_and_cli(gateway, tmp_path):
    _, url = gateway(stdio_fixture())
    env = cli_env(url, tmp_path)
    plain = run_cli("search", "add two integers", "--json", env=env, cwd=str(tmp_path))
    assert plain.returncode == 0, plain.stderr
    assert all("signals" not in r for r in json.loads(plain.stdout))

    table = run_cli("search", "add two integers", "--explain", env=env, cwd=str(tmp_path))
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split()[:3] == ["SCORE", "TOOL", "BM25"]
    assert lines[1].split()[1] == "fixture__add"
    assert any(line.startswith("looked up: ") and "add (bm25)" in line for line in lines)

    as_json = json.loads(run_cli("search", "add two integers", "--explain", "--json", env=env, cwd=str(tmp_path)).stdout)
    assert as_json["query"] == "add two integers"
    top = as_json["results"][0]
    assert top["id"] == "fixture__add" and top["signals"]["bm25"] > 0
    assert {"term", "signal", "weight", "idf"} <= set(as_json["terms"][0])

    refused = run_cli("search", "add", "--explain", "--output", "types", env=env, cwd=str(tmp_path))
    assert refused.returncode == 2 and "--explain shows a table or JSON" in refused.stderr
