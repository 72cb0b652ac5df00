"""SearchIndex: how a catalog is ranked against a query (toolscript/search/index.py).

Small catalogs prove each behaviour: typo tolerance, stems, synonyms, exact
names, fields, filters, limits and thresholds, scores in 0..1 with a
deterministic order; ``search(explain=True)`` and ``explain_terms`` name
each signal's part of a score; with the vectors data the hybrid finds what
no word matches, and without it search is the words' alone.  The quality on
the evaluation sets is tests/quality/'s.
"""

import os
import subprocess
import sys

import pytest

from conftest import REPO_ROOT
from search_sets import tool
from toolscript.search import SIGNALS, SearchIndex, vectors

needs_vectors = pytest.mark.skipif(not vectors.available(), reason="no vectors data in this checkout")


CATALOG = [
    tool("github", "search_issues", "Search for issues and pull requests across GitHub repositories",
         inputSchema={"type": "object", "properties": {"q": {"type": "string", "description": "Search query"}}}),
    tool("github", "create_issue", "Create a new issue in a GitHub repository",
         inputSchema={"type": "object", "properties": {"title": {"type": "string"}, "body": {"type": "string"}}}),
    tool("github", "create_branch", "Create a new branch in a GitHub repository"),
    tool("gitlab", "create_branch", "Create a new branch in a GitLab project"),
    tool("filesystem", "read_text_file", "Read the complete contents of a file from the file system as text",
         inputSchema={"type": "object", "properties": {"path": {"type": "string"}}}),
    tool("filesystem", "list_directory", "Get a detailed listing of all files and directories in a specified path"),
    tool("time", "get_current_time", "Get current time in a specific timezone",
         inputSchema={"type": "object", "properties": {"timezone": {"type": "string", "description": "IANA timezone name"}}}),
    tool("everything", "getTinyImage", "Returns a tiny MCP logo image."),
    tool("browser", "page.screenshot", "Take a screenshot of the current page", title="Screenshot"),
    tool("slack", "slack-post-message", "Post a new message to a Slack channel",
         inputSchema={"type": "object", "properties": {"channel_id": {"type": "string"}, "text": {"type": "string"}}}),
]


@pytest.fixture(scope="module")
def index():
    return SearchIndex(CATALOG)


def ids(results):
    return [r["id"] for r in results]



# --- ranking ----------------------------------------------------------------------


def test_typo_tolerance(index):
    assert ids(index.search("serach isues"))[0] == "github__search_issues"
    assert ids(index.search("scrennshot of the pgae"))[0] == "browser__page.screenshot"


def test_short_words_are_not_typo_corrected(index):
    # "bake" is one letter from "make"/"base": guessing would only add noise.
    assert index.search("bake") == []


def test_stemming_matches_other_forms(index):
    assert ids(index.search("listing directories"))[0] == "filesystem__list_directory"


def test_an_id_no_tool_has_is_not_read_as_a_misspelling(index):
    # "a1b2c3" is nobody's word: the rest of the request decides its words' scores, as if it were not there
    # (read as a misspelling it would count in the ideal score, lowering every score).
    plain = index.search("screenshot of the page", semantic=False)
    with_id = index.search("screenshot of the page a1b2c3", semantic=False)
    assert [(r["id"], r["score"]) for r in with_id] == [(r["id"], r["score"]) for r in plain]


def test_synonyms_and_abbreviations(index):
    assert ids(index.search("ls a folder"))[0] == "filesystem__list_directory"
    assert ids(index.search("new branch in my gitlab repo"))[0] == "gitlab__create_branch"


@pytest.mark.parametrize(
    "query, expected",
    [
        ("search_issues", "github__search_issues"),
        ("search issues", "github__search_issues"),
        ("github__search_issues", "github__search_issues"),
        ("getTinyImage", "everything__getTinyImage"),
        ("get_tiny_image", "everything__getTinyImage"),
        ("page.screenshot", "browser__page.screenshot"),
        ("slack-post-message", "slack__slack-post-message"),
    ],
)
def test_exact_name_ranks_first_with_score_one(index, query, expected):
    results = index.search(query)
    assert results[0]["id"] == expected
    assert results[0]["score"] == 1.0


def test_exact_name_shared_by_servers_ties_by_id(index):
    results = index.search("create_branch", limit=2)
    assert ids(results) == ["github__create_branch", "gitlab__create_branch"]
    assert [r["score"] for r in results] == [1.0, 1.0]


def test_server_name_in_query_prefers_that_server(index):
    assert ids(index.search("create a branch on gitlab"))[0] == "gitlab__create_branch"
    assert ids(index.search("create a branch on github"))[0] == "github__create_branch"


def test_parameter_names_and_descriptions_count(index):
    assert ids(index.search("IANA timezone"))[0] == "time__get_current_time"
    assert ids(index.search("channel text"))[0] == "slack__slack-post-message"


def test_server_filter(index):
    results = index.search("create branch", limit=10, servers=["gitlab"])
    assert ids(results) == ["gitlab__create_branch"]
    assert index.search("create branch", servers=[]) == []
    assert index.search("create branch", servers=["nosuchserver"]) == []


def test_limit(index):
    assert len(index.search("create", limit=1)) == 1
    assert len(index.search("create", limit=2)) == 2
    assert index.search("create", limit=0) == []
    assert len(index.search("file", limit=100)) <= len(CATALOG)


def test_threshold(index):
    everything = index.search("create a new issue", limit=100)
    assert len(everything) > 1
    cut = everything[1]["score"]
    kept = index.search("create a new issue", limit=100, threshold=cut)
    assert kept and all(r["score"] >= cut for r in kept)
    assert ids(kept) == [r["id"] for r in everything if r["score"] >= cut]
    assert index.search("create a new issue", threshold=1.01) == []


def test_noise_scores_low(index):
    # Words no tool has weigh like the rarest word: an unrelated request stays under 0.3.
    assert index.search("bake a chocolate cake", threshold=0.3) == []
    assert index.search("book a flight to rome for my holiday", threshold=0.3) == []


def test_scores_are_normalised_and_sorted(index):
    for query in ["read file", "create a new issue", "time in tokyo", "serach isues", "x", "file file file",
                  "create_branch", "the a an"]:
        results = index.search(query, limit=100)
        scores = [r["score"] for r in results]
        assert all(0.0 < s <= 1.0 for s in scores), (query, scores)
        assert scores == sorted(scores, reverse=True), (query, scores)
        assert all(isinstance(s, float) and round(s, 3) == s for s in scores)


def test_result_shape(index):
    [result] = index.search("current time", limit=1)
    assert result == {
        "id": "time__get_current_time",
        "server": "time",
        "name": "get_current_time",
        "score": result["score"],
        "description": "Get current time in a specific timezone",
    }


@pytest.mark.parametrize("query", ["", "   ", "\n\t", "the of a", "!!!"])
def test_empty_or_meaningless_query_finds_nothing(index, query):
    assert index.search(query) == []


def test_deterministic_with_ties_broken_by_id():
    twins = [tool("b", "echo", "Echo a message"), tool("a", "echo", "Echo a message"), tool("c", "echo", "Echo a message")]
    # By the words the twins tie exactly (their vectors differ by the server's name, "a", "b" or "c").
    assert ids(SearchIndex(twins, semantic=False).search("echo message", limit=3)) == ["a__echo", "b__echo", "c__echo"]
    first = [ids(SearchIndex(CATALOG).search(q, limit=10)) for q in ("create", "file", "get")]
    again = [ids(SearchIndex(list(reversed(CATALOG))).search(q, limit=10)) for q in ("create", "file", "get")]
    assert first == again


def test_odd_catalog_entries_do_not_break_the_index():
    odd = [
        {"id": "s__t", "server": "s", "name": "t"},  # no description, no schema
        {"id": "s__u", "server": "s", "name": "u", "description": None, "inputSchema": {"properties": []}},
        {"id": "s__v", "server": "s", "name": "v", "inputSchema": {"properties": {"x": {"enum": [1, "alpha"]}}}},
        "not a tool",
    ]
    index = SearchIndex(odd)  # type: ignore[arg-type]
    assert len(index) == 3
    assert ids(index.search("alpha")) == ["s__v"]
    assert SearchIndex([]).search("anything") == []


@pytest.mark.timeout(60)
def test_a_huge_one_word_query_is_answered_promptly():
    # The identifier pattern once tried every start of a long run of letters to its end: 20,000 letters took
    # 2.6 s (a suggestion hook's search timed out behind it), 400,000 would take ~17 minutes.  Now milliseconds.
    index = SearchIndex(CATALOG)
    for query in ("x" * 400_000, "q" * 200_000 + " create_issue"):
        index.search(query, limit=3)
        index.search(query, limit=3, semantic=False)


def test_nested_schema_properties_are_indexed():
    schema = {"type": "object", "properties": {"entities": {"type": "array", "items": {
        "type": "object", "properties": {"entityType": {"type": "string", "description": "kind of thing"}}}}}}
    index = SearchIndex([tool("m", "create_entities", "Create things", inputSchema=schema), tool("m", "other", "Other things")])
    assert ids(index.search("entity type"))[0] == "m__create_entities"


def test_runs_of_letters_and_digits_are_words_whole():
    # "k8s" and "s3" split into single characters that count for nothing: a request saying only them
    # would match nothing by its words.
    catalog = [
        tool("aws", "list_s3_buckets", "List the S3 buckets of the account"),
        tool("gcs", "list_buckets", "List the buckets of a Cloud Storage project"),
        tool("eks", "list_k8s_resources", "List resources in the cluster"),
        tool("eks", "list_node_groups", "List node groups in the cluster"),
    ]
    index = SearchIndex(catalog)
    for semantic in (False, True):
        assert ids(index.search("s3 buckets", semantic=semantic))[0] == "aws__list_s3_buckets"
        assert ids(index.search("what is in k8s", semantic=semantic))[:1] == ["eks__list_k8s_resources"]


# --- explain ---------------------------------------------------------------------


EXPLAIN_CATALOG = [
    tool("github", "search_issues", "Search for issues and pull requests across GitHub repositories",
         inputSchema={"type": "object", "properties": {"q": {"type": "string", "description": "Search query"}}}),
    tool("github", "create_issue", "Create a new issue in a GitHub repository"),
    tool("filesystem", "list_directory", "Get a detailed listing of all files and directories in a specified path"),
    tool("brave", "brave_web_search", "Performs a web search using the Brave Search API"),
    tool("time", "get_current_time", "Get current time in a specific timezone",
         inputSchema={"type": "object", "properties": {"timezone": {"type": "string", "description": "IANA timezone name"}}}),
]


@pytest.fixture(scope="module")
def explain_index():
    return SearchIndex(EXPLAIN_CATALOG)


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
def test_explain_names_the_signal_that_found_the_tool(explain_index, query, expected, signal):
    results = explain_index.search(query, limit=3, explain=True)
    top = results[0]
    assert top["id"] == expected
    assert top["signals"].get(signal, 0) > 0, top["signals"]
    assert set(top["signals"]) <= set(SIGNALS)


@pytest.mark.parametrize("query", ["serach isues", "ls a folder", "create a new issue", "search_issues", "web search tokyo time"])
def test_explained_contributions_add_up_to_the_score(explain_index, query):
    for r in explain_index.search(query, limit=10, explain=True):
        assert round(min(1.0, sum(r["signals"].values())), 3) == pytest.approx(r["score"], abs=0.001), r


@pytest.mark.parametrize("query", ["serach isues", "ls a folder", "create a new issue", "search_issues", "zzz", ""])
def test_explain_changes_nothing_but_adds_signals(explain_index, query):
    plain = explain_index.search(query, limit=10, threshold=0.1)
    explained = explain_index.search(query, limit=10, threshold=0.1, explain=True)
    assert [{k: v for k, v in r.items() if k != "signals"} for r in explained] == plain
    assert all("signals" not in r for r in plain)


def test_explain_terms_lists_what_the_query_looked_up(explain_index):
    terms = {t["term"]: t for t in explain_index.explain_terms("serach isues in my repo")}
    assert terms["search"]["signal"] == "typo" and 0 < terms["search"]["weight"] < 1
    assert terms["repository"]["signal"] == "synonym"
    assert all(t["idf"] > 0 for t in terms.values())
    assert explain_index.explain_terms("   ") == []


# --- the vector signal -------------------------------------------------------------

PARAPHRASE_CATALOG = EXPLAIN_CATALOG + [
    tool("browser", "page_screenshot", "Capture a PNG of the current browser tab"),
    tool("filesystem", "delete_file", "Remove a file from disk"),
    tool("git", "git_log", "Shows the commit logs",
         inputSchema={"type": "object", "properties": {"max_count": {"type": "integer"}}}),
]


def test_importing_search_loads_only_its_words_module():
    # The prompt hook reads words through toolscript.search: it must not pay for the ranker or the vectors.
    code = "import sys, toolscript.search; print(sorted(m for m in sys.modules if m.startswith('toolscript.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT,
                         env=dict(os.environ, PYTHONPATH=REPO_ROOT), timeout=60)
    assert out.stdout.strip() == "['toolscript.search', 'toolscript.search.text']", out.stderr


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
