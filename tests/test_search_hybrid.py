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
import toolscript.search
from toolscript.search import SIGNALS, SearchIndex
from search_sets import load_catalogs, tool, tools_of


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


# --- the vector signal -------------------------------------------------------------

vectors = pytest.importorskip("toolscript.vectors")
needs_vectors = pytest.mark.skipif(not vectors.available(), reason="no vectors data in this checkout")

PARAPHRASE_CATALOG = CATALOG + [
    tool("browser", "page_screenshot", "Capture a PNG of the current browser tab"),
    tool("filesystem", "delete_file", "Remove a file from disk"),
    tool("git", "git_log", "Shows the commit logs",
         inputSchema={"type": "object", "properties": {"max_count": {"type": "integer"}}}),
]


def test_importing_search_loads_no_vectors():
    code = "import sys, toolscript.search; print('toolscript.vectors' in sys.modules)"
    import subprocess
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT,
                         env=dict(os.environ, PYTHONPATH=REPO_ROOT), timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def test_without_vectors_data_search_is_words_only(monkeypatch):
    words_only = SearchIndex(PARAPHRASE_CATALOG, semantic=False)
    monkeypatch.setattr(vectors, "available", lambda: False)
    degraded = SearchIndex(PARAPHRASE_CATALOG)
    assert not degraded.semantic
    for query in ["take a picture of the page", "serach isues", "create a new issue", "search_issues", "web search"]:
        assert degraded.search(query, limit=10, explain=True) == words_only.search(query, limit=10, explain=True)


@needs_vectors
def test_words_only_per_query_matches_an_index_without_vectors():
    hybrid, words = SearchIndex(PARAPHRASE_CATALOG), SearchIndex(PARAPHRASE_CATALOG, semantic=False)
    # semantic=False also leaves out the thesaurus, which an index without vectors still uses by default.
    for query in ["what commits happened recently", "serach isues", "create a new issue", "search_issues"]:
        assert (hybrid.search(query, limit=10, semantic=False, explain=True)
                == words.search(query, limit=10, semantic=False, explain=True))
    assert hybrid.search("what commits happened recently", limit=10) != words.search("what commits happened recently", limit=10)


@needs_vectors
def test_gateway_search_words_only_on_request(gateway):
    from toolscript.gateway.client import GatewayClient

    _, url = gateway(stdio_fixture())
    client = GatewayClient(url)
    mixed = client.get("/search", q="add two integers", explain="1")["results"]
    words = client.get("/search", q="add two integers", explain="1", semantic="0")["results"]
    assert mixed[0]["id"] == words[0]["id"] == "fixture__add"
    assert "vector" in mixed[0]["signals"] and "vector" not in words[0]["signals"]
    assert words[0]["score"] != mixed[0]["score"]


DECOYS = [
    tool("browser", "resize_window", "Resize the browser window to a width and height"),
    tool("browser", "close_tab", "Close the current browser tab"),
]


@needs_vectors
@pytest.mark.usefixtures("no_thesaurus")  # "grab" is a thesaurus word for capture: no word must match here
def test_vector_signal_finds_what_no_word_matches():
    query = "grab a picture of the window"  # no word of it is in page_screenshot's name or description
    words = SearchIndex(PARAPHRASE_CATALOG + DECOYS, semantic=False).search(query, limit=5)
    assert "browser__page_screenshot" not in [r["id"] for r in words]
    found = SearchIndex(PARAPHRASE_CATALOG + DECOYS).search(query, limit=5, explain=True)
    shot = next(r for r in found if r["id"] == "browser__page_screenshot")
    # No word of the query matched as written; meaning did (the whole texts' vectors, and similar words).
    assert set(shot["signals"]) <= {"vector", "similar_words", "server"} and shot["signals"]["vector"] > 0
    assert round(min(1.0, sum(shot["signals"].values())), 3) == pytest.approx(shot["score"], abs=0.001)


@needs_vectors
def test_vector_signal_lifts_the_tool_that_means_the_query():
    index, words = SearchIndex(PARAPHRASE_CATALOG), SearchIndex(PARAPHRASE_CATALOG, semantic=False)
    top = index.search("what commits happened recently", limit=1, explain=True)[0]
    assert top["id"] == "git__git_log" and top["signals"]["vector"] > 0
    assert top["score"] > words.search("what commits happened recently", limit=1)[0]["score"]


@needs_vectors
@pytest.mark.parametrize("query, expected", [
    ("search_issues", "github__search_issues"),
    ("serach isues", "github__search_issues"),
    ("IANA timezone", "time__get_current_time"),
])
def test_exact_names_typos_and_parameters_still_lead(query, expected):
    assert SearchIndex(PARAPHRASE_CATALOG).search(query)[0]["id"] == expected


@needs_vectors
def test_noise_stays_below_the_threshold_with_vectors():
    index = SearchIndex(PARAPHRASE_CATALOG)
    assert index.search("bake a chocolate cake", threshold=0.3) == []
    assert index.search("book a flight to rome for my holiday", threshold=0.3) == []


@needs_vectors
def test_a_new_catalog_version_encodes_only_the_tools_that_changed(monkeypatch):
    first = SearchIndex(PARAPHRASE_CATALOG)
    encoded = []
    real = toolscript.search._encode_tool

    def counting(texts):
        encoded.append(texts[0])  # server and name as words
        return real(texts)

    monkeypatch.setattr(toolscript.search, "_encode_tool", counting)
    changed = PARAPHRASE_CATALOG[:-1] + [tool("git", "git_status", "Shows the working tree status")]
    second = SearchIndex(changed, vector_cache=first.vector_cache)
    assert encoded == ["git git status"]
    assert len(second.vector_cache) == len(changed)
    query = "what commits happened recently"
    assert second.search(query, limit=5) == SearchIndex(changed).search(query, limit=5)


@needs_vectors
def test_gateway_keeps_tool_vectors_across_catalog_versions(monkeypatch):
    from toolscript.gateway.catalog import Catalog
    from toolscript.gateway.derived import Derived

    tools = {"git": [{"name": "git_log", "description": "Shows the commit logs", "inputSchema": {"type": "object"}}]}
    catalog = Catalog(lambda: list(tools.items()))
    derived = Derived(catalog)
    try:
        before = derived.current()
        encoded = []
        real = toolscript.search._encode_tool
        monkeypatch.setattr(toolscript.search, "_encode_tool", lambda texts: encoded.append(texts[0]) or real(texts))
        tools["git"] = tools["git"] + [{"name": "git_status", "description": "Shows the working tree status", "inputSchema": {"type": "object"}}]
        assert catalog.rebuild()
        after = derived.current()
        assert after.version > before.version and after.index.semantic
        assert encoded == ["git git status"]
        assert derived.search("what commits happened recently", limit=1, threshold=0, servers=None)[0]["id"] == "git__git_log"
    finally:
        derived.close()


# --- the development set ---------------------------------------------------------


def load_dev():
    tools = tools_of(load_catalogs(os.path.join(REPO_ROOT, "bench", "eval")))
    with open(os.path.join(REPO_ROOT, "bench", "eval", "queries.json"), encoding="utf-8") as f:
        return tools, json.load(f)["queries"]


def few_shared_words(tools, queries):
    """The paraphrase- and task-like dev queries (bench/search.py's with_dev_kinds): under half their terms in a labelled tool."""
    from toolscript.search import _schema_text, terms

    by_id = {t["id"]: t for t in tools}
    out = []
    for q in queries:
        wanted = set(terms(q["query"]))
        best = 0.0
        for tid in q["ids"]:
            t = by_id[tid]
            names = []
            _schema_text(t.get("inputSchema"), names, [])
            text = set(terms(" ".join([t["name"], t.get("title") or "", t.get("description") or ""] + names)))
            best = max(best, len(wanted & text) / len(wanted) if wanted else 0.0)
        if not q.get("typo") and best < 0.5:
            out.append(q)
    return out


def recall3(index, queries):
    return sum(any(r["id"] in q["ids"] for r in index.search(q["query"], limit=3)) for q in queries) / len(queries)


@needs_vectors
def test_hybrid_beats_words_alone_on_the_development_set():
    tools, queries = load_dev()
    hybrid, words = SearchIndex(tools), SearchIndex(tools, semantic=False)
    hard = few_shared_words(tools, queries)
    assert len(hard) >= 100
    # Measured when this was written: paraphrase/task-like (112 queries) 0.661 -> 0.759;
    # all 330 queries 0.867 -> 0.909; the 17 misspelt ones 1.0 -> 1.0.
    assert recall3(hybrid, hard) >= recall3(words, hard) + 0.05
    assert recall3(hybrid, queries) >= recall3(words, queries) + 0.02
    typos = [q for q in queries if q.get("typo")]
    assert recall3(hybrid, typos) >= recall3(words, typos)
