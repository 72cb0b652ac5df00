"""The signals besides the words' BM25F share, and how they are fused (toolscript/search/signals.py).

Small catalogs prove each behaviour, most of them with the signal switched
off through the tuning to show the case it decides: a paraphrase whose words
match nothing finds its tool through the vectors; a real word is not
"corrected" into a catalog word before the vectors read it; an exact name
still wins over anything soft; fused with the vectors, a word weighs by its
idf to a power, so a word many tools share does not outvote the meaning; a
query naming a tool's parameter (snake_case, camelCase) weighs the vectors
less, and favours the tool taking the rarest of them; among the tools of a
server the query names, the words naming it decide nothing; a question
favours the tools that only read; a query names a server by a word of its
name as written when only the stem is shared ("plane", not "plan"), and by
its whole name run together or apart ("browsertools", "hugging face"); a
request spread over a server's tools lifts that server.
"""

from dataclasses import replace

import pytest

from conftest import load_script
from search_sets import tool
from toolscript.search import SIGNALS, SearchIndex, signals, vectors
from toolscript.search.signals import fuse, identifiers, is_question, reads_only, server_shares, vector_share
from toolscript.search.tuning import DEFAULT_TUNING


def tuned(**changes):
    """The shipped tuning with ``changes``: a signal switched off or weighed otherwise, to show what it decides."""
    return replace(DEFAULT_TUNING, **changes)

needs_vectors = pytest.mark.skipif(not vectors.available(), reason="no vectors data in this checkout")
# The cases here were written against VECTORS-V3's cosines and before the thesaurus (see conftest.vectors_v3 and
# conftest.no_thesaurus).
pytestmark = pytest.mark.usefixtures("vectors_v3", "no_thesaurus")


CATALOG = [
    tool("browser", "page_screenshot", "Capture a PNG of the current browser tab"),
    tool("filesystem", "delete_file", "Remove a file from disk"),
    tool("filesystem", "read_file", "Read the complete contents of a file"),
    tool("git", "git_log", "Shows the commit logs"),
    tool("maps", "get_coordinates", "Latitude and longitude of an address"),
    tool("sentry", "get_issue", "Get a Sentry issue with its stack trace"),
    tool("slack", "post_message", "Post a message to a Slack channel"),
    tool("time", "get_current_time", "Get current time in a specific timezone"),
]


def ids(results):
    return [r["id"] for r in results]


@needs_vectors
def test_a_paraphrase_whose_words_match_nothing_finds_its_tool_through_the_vectors():
    index = SearchIndex(CATALOG)
    query = "what changed lately in the repository"
    assert "git__git_log" not in ids(SearchIndex(CATALOG, semantic=False).search(query, limit=3))
    top = index.search(query, limit=1, explain=True)[0]
    assert top["id"] == "git__git_log"
    assert top["signals"]["vector"] > sum(v for k, v in top["signals"].items() if k != "vector")


@needs_vectors
def test_a_real_word_reaches_the_vectors_as_written_not_as_the_catalog_word_it_resembles():
    index = SearchIndex(CATALOG)
    # "altitude" is one edit from the catalog's "latitude" and "shops" from "shows", but the
    # vectors' vocabulary knows both whole: they mean themselves, not the catalog's word.
    assert index._as_corrected("altitude of a mountain") == "altitude of a mountain"
    assert index._as_corrected("coffee shops nearby") == "coffee shops nearby"
    # A misspelling the vocabulary can only piece together is still read as what it stands for.
    assert index._as_corrected("take a screnshot") == "take a screenshot"
    assert index._as_corrected("delte file") == "delete file"


@needs_vectors
@pytest.mark.parametrize("query, expected", [
    ("delete_file", "filesystem__delete_file"),
    ("read file", "filesystem__read_file"),
    ("filesystem__read_file", "filesystem__read_file"),
])
def test_an_exact_name_still_wins_with_the_top_score(query, expected):
    results = SearchIndex(CATALOG).search(query, limit=3, explain=True)
    assert results[0]["id"] == expected and results[0]["score"] == 1.0
    assert results[0]["signals"]["exact_name"] == 1.0
    assert all(r["score"] < 1.0 for r in results[1:])


def test_without_the_vectors_data_search_is_the_words_alone(monkeypatch):
    words_only = SearchIndex(CATALOG, semantic=False)
    monkeypatch.setattr(vectors, "available", lambda: False)
    degraded = SearchIndex(CATALOG)
    assert not degraded.semantic
    for query in ["what changed lately in the repository", "slack trace", "delete_file", "delte file"]:
        assert degraded.search(query, limit=5, explain=True) == words_only.search(query, limit=5, explain=True)


@needs_vectors
def test_a_tool_no_word_reaches_is_listed_on_its_vector_when_the_query_speaks_the_catalogs_language():
    index = SearchIndex(CATALOG)
    results = index.search("older revisions of the file", limit=3, explain=True)
    found = {r["id"]: r for r in results}
    # "file" reaches the filesystem tools; no word reaches git_log, whose vector is close enough to list.
    # (Its server as a whole may add a little, _SERVER_WEIGHT: not a word either.)
    assert "git__git_log" in found and set(found["git__git_log"]["signals"]) - {"server"} == {"vector"}
    assert found["git__git_log"]["score"] < 0.3  # the threshold that drops noise still drops it
    # Gibberish reaches no tool's words, and no tool's vector is close enough alone.
    assert index.search("xyzzy plugh", limit=3) == []


SERVERS_CATALOG = [
    tool("airtable", "create_table", "Create a new table in an Airtable base"),
    tool("airtable", "list_records", "List records in a table"),
    tool("notion", "create_data_source", "Create a data source (database) under a parent page"),
    tool("notion", "post_page", "Create a page"),
    tool("notion", "get_users", "List all users of the workspace"),
    tool("time", "get_current_time", "Get the current time in a timezone"),
    tool("calendar", "list_events", "List events between a start time and an end time"),
    tool("calendar", "create_event", "Create an event at a time"),
]


@needs_vectors
def test_a_query_that_names_a_server_prefers_that_servers_tools():
    index = SearchIndex(SERVERS_CATALOG)
    # Without the product's name, "a table" means airtable's tool to the words and the vectors alike...
    assert index.search("add a tracker table", limit=1)[0]["id"] == "airtable__create_table"
    # ...named, notion's tools gain a visible, fixed share and its data source comes first.
    results = index.search("add a tracker table to notion", limit=3, explain=True)
    assert results[0]["id"] == "notion__create_data_source"
    for r in results:
        assert ("named_server" in r["signals"]) == (r["server"] == "notion")
        assert r["score"] == pytest.approx(sum(r["signals"].values()), abs=0.001)
    assert results[0]["signals"]["named_server"] == DEFAULT_TUNING.named_server_bonus
    assert list(results[0]["signals"]) == [s for s in SIGNALS if s in results[0]["signals"]]


@needs_vectors
def test_a_word_many_servers_tools_say_names_no_server():
    index = SearchIndex(SERVERS_CATALOG)
    assert index._named_servers("what time is my next event") == frozenset()  # calendar tools say "time" too
    assert index._named_servers("users of my notion workspace") == frozenset({"notion"})
    assert all("named_server" not in r["signals"] for r in index.search("what time is my next event", limit=5, explain=True))


@needs_vectors
def test_words_only_search_gives_no_server_a_share_for_being_named():
    hybrid, words = SearchIndex(SERVERS_CATALOG), SearchIndex(SERVERS_CATALOG, semantic=False)
    query = "add a tracker table to notion"
    assert hybrid.search(query, limit=5, semantic=False, explain=True) == words.search(query, limit=5, explain=True)
    assert all("named_server" not in r["signals"] for r in words.search(query, limit=5, explain=True))


@needs_vectors
def test_naming_the_only_server_moves_no_score():
    notion_only = [t for t in SERVERS_CATALOG if t["server"] == "notion"]
    index = SearchIndex(notion_only)
    assert index._named_servers("users of my notion workspace") == frozenset()
    results = index.search("users of my notion workspace", limit=3, explain=True)
    assert results and all("named_server" not in r["signals"] for r in results)


# A tracker whose every tool says "issue": the word tells them apart little, the vectors more.
TRACKER_CATALOG = [
    tool("tracker", "list_issues", "List issues in a project"),
    tool("tracker", "get_issue", "Get an issue by its key"),
    tool("tracker", "create_issue", "Create an issue in a project"),
    tool("tracker", "update_issue", "Update an issue's fields"),
    tool("tracker", "delete_issue", "Delete an issue"),
    tool("tracker", "list_projects", "List projects"),
    tool("tracker", "issue_changelog", "The history of changes made to an issue: who changed which field and when"),
    tool("tracker", "edit_comment", "Edit a comment"),
    tool("tracker", "add_comment", "Add a comment to an issue"),
    tool("tracker", "list_comments", "List the comments of an issue"),
]


@needs_vectors
def test_fused_with_the_vectors_a_word_many_tools_share_does_not_outvote_the_meaning():
    query = "get the edit log of an issue"
    # "get" and "issue" are both in get_issue's name; with the plain idf they outvote the changelog's meaning...
    assert SearchIndex(TRACKER_CATALOG, tuning=tuned(fused_idf_power=1.0)).search(query, limit=1)[0]["id"] == "tracker__get_issue"
    # ...weighed by idf to the power, the common words count for less and the vectors decide.
    assert SearchIndex(TRACKER_CATALOG).search(query, limit=1)[0]["id"] == "tracker__issue_changelog"


@needs_vectors
def test_the_fused_word_share_weighs_each_word_by_its_idf_to_the_power():
    hybrid, words = SearchIndex(TRACKER_CATALOG), SearchIndex(TRACKER_CATALOG, semantic=False)
    power = DEFAULT_TUNING.fused_idf_power
    assert power > 1.0
    query = "issue changelog"
    fused = {r["id"]: r["signals"] for r in hybrid.search(query, limit=10, explain=True)}
    plain = {r["id"]: r["signals"] for r in words.search(query, limit=10, explain=True)}
    sharp = hybrid._lexical(query, explain=True, idf_power=power)[1]["bm25"]  # the query's words as written
    for i, tool_id in enumerate(hybrid._ids):
        if tool_id in fused and "bm25" in fused[tool_id]:
            assert fused[tool_id]["bm25"] == pytest.approx(DEFAULT_TUNING.lexical_weight * sharp[i])
    # A tool that has only the common word explains less of the query than words alone say,
    # and less against the tool that also has the rare word.
    common, rare = hybrid._ids.index("tracker__get_issue"), hybrid._ids.index("tracker__issue_changelog")
    assert sharp[common] < plain["tracker__get_issue"]["bm25"]
    assert sharp[common] / sharp[rare] < plain["tracker__get_issue"]["bm25"] / plain["tracker__issue_changelog"]["bm25"]
    # Words alone (and an index without vectors) keep the plain idf.
    assert words._lexical(query)[0] == hybrid._lexical(query, similar=False, idf_power=1.0)[0]


@needs_vectors
def test_explain_terms_shows_the_idf_the_fusion_weighs_by():
    index = SearchIndex(TRACKER_CATALOG)
    power = DEFAULT_TUNING.fused_idf_power
    looked_up = {t["term"]: t for t in index.explain_terms("issue changelog")}
    for entry in looked_up.values():
        assert entry["fused_idf"] == pytest.approx(entry["idf"] ** power, abs=0.001)
    assert all("fused_idf" not in t for t in index.explain_terms("issue changelog", semantic=False))
    assert all("fused_idf" not in t for t in SearchIndex(TRACKER_CATALOG, semantic=False).explain_terms("issue changelog"))


# A query that names a tool's parameters is answered by the words.


def schema(*names):
    return {"type": "object", "properties": {name: {"type": "string"} for name in names}}


TASK_CATALOG = [
    tool("tasks", "create_subtask", "Create a subtask under a parent task",
         inputSchema=schema("parent_task_id", "name", "notes", "due_on", "assignee")),
    tool("tasks", "create_task", "Create a new task with a name, notes, a due date and an assignee",
         inputSchema=schema("workspace", "name", "notes", "due_on", "assignee", "projects")),
    tool("tasks", "set_parent_for_task", "Set the parent of a task", inputSchema=schema("task_id", "parent", "insert_before")),
    tool("tasks", "update_task", "Update a task's name, notes, due date or assignee",
         inputSchema=schema("task_id", "name", "notes", "due_on", "assignee")),
    tool("calendar", "search_events", "Search events in a calendar",
         inputSchema=schema("calendarId", "timeMin", "timeMax", "timeZone", "query")),
    tool("calendar", "create_event", "Create a calendar event",
         inputSchema=schema("calendarId", "summary", "start", "end", "timeZone")),
]


# A query naming parameters fused as any other: the parameter-coverage share off too, as it applies
# whenever the query names parameters, whatever the scale.
PARAMETERS_AS_WORDS = tuned(identifier_vector_scale=1.0, parameter_coverage_bonus=0.0)


@needs_vectors
def test_a_query_naming_parameters_is_not_outvoted_by_the_vectors():
    query = "parent_task_id name notes"
    words = ids(SearchIndex(TASK_CATALOG, semantic=False).search(query, limit=2))
    assert "tasks__create_subtask" in words  # the only tool with a parameter parent_task_id
    # With the vectors at their full weight (and no share for the parameters a tool
    # takes), create_task's meaning pushes it out of the top 2...
    assert "tasks__create_subtask" not in ids(SearchIndex(TASK_CATALOG, tuning=PARAMETERS_AS_WORDS).search(query, limit=2))
    # ...with their weight cut for a query that names parameters, the words' top 2 stand.
    assert ids(SearchIndex(TASK_CATALOG).search(query, limit=2)) == words


@needs_vectors
@pytest.mark.parametrize("query, named", [
    ("parent_task_id name notes", True),
    ("calendarId timeMin", True),
    ("due_on", True),
    ("create_subtask under a parent", False),  # a tool's name, not a parameter's
    ("node_modules folder", False),  # an identifier no tool has
    ("create a task with notes", False),  # parameter names as plain words are ordinary words
])
def test_the_vectors_weigh_less_only_for_an_identifier_that_is_a_parameter_name(query, named):
    index = SearchIndex(TASK_CATALOG)
    scale = DEFAULT_TUNING.identifier_vector_scale
    assert scale < 1.0
    assert index._vector_scale(query) == (scale if named else 1.0)


@needs_vectors
def test_explain_adds_up_to_the_score_when_the_query_names_parameters():
    index = SearchIndex(TASK_CATALOG)
    scale = DEFAULT_TUNING.identifier_vector_scale
    for result in index.search("calendarId timeMin timeMax", limit=3, explain=True):
        parts = result["signals"]
        # Capped at 1: the tool taking all three parameters gains parameter_coverage_bonus on top.
        assert min(1.0, sum(parts.values())) == pytest.approx(result["score"], abs=0.001)
        i = index._ids.index(result["id"])
        cosine = index._semantic("calendarId timeMin timeMax")[i]
        assert parts["vector"] == pytest.approx(vector_share(cosine, DEFAULT_TUNING) * scale)
    # A tool both signals fully back still scores 1: the words take the weight the vectors give up.
    assert fuse({0: 1.0}, {0: 1.0}, DEFAULT_TUNING, scale)[0] == pytest.approx(1.0)


@needs_vectors
def test_the_tuning_bench_fuses_a_parameter_query_as_search_does():
    bench = load_script("bench/search.py")
    index = SearchIndex(TASK_CATALOG)
    queries = [{"query": "parent_task_id name notes", "ids": ["tasks__create_subtask"], "kind": "param"}]
    # The grid's shipped point ranks as search does (the identifier scale applied), so its figures are search's.
    row = bench.fused_figures(index, queries, bench.prepare_signals(index, queries, ["book a flight"]))
    rank = ids(index.search(queries[0]["query"], limit=3)).index("tasks__create_subtask") + 1
    assert rank == 2 and row["mrr@10"] == pytest.approx(1 / rank, abs=0.001)
    # The grid's points rank as search does at each scale.  Without the share for the parameters a
    # tool takes (it applies at any scale), full vector weight drops create_subtask to third.
    uncovered = SearchIndex(TASK_CATALOG, tuning=tuned(parameter_coverage_bonus=0.0))
    rows = {r["scale"]: r for r in bench.identifier_scale_rows(uncovered, queries, ["book a flight"])}
    assert rows[DEFAULT_TUNING.identifier_vector_scale]["mrr@10"] == pytest.approx(0.5)
    assert rows[1.0]["mrr@10"] == pytest.approx(1 / 3, abs=0.001)
    as_words = SearchIndex(TASK_CATALOG, tuning=PARAMETERS_AS_WORDS)
    assert ids(as_words.search(queries[0]["query"], limit=3)).index("tasks__create_subtask") == 2


# A named server's tools are told apart by the rest of the query.

JENKINS_CATALOG = [
    # get_view says "Jenkins" three times; build_item, the one that starts a job, never.
    tool("jenkins", "get_view", "Get a Jenkins view: the Jenkins jobs a Jenkins dashboard view lists"),
    tool("jenkins", "build_item", "Trigger a build of a job"),
    tool("jenkins", "stop_build", "Stop a running Jenkins build"),
    tool("jenkins", "get_build_log", "Console output of a build"),
    tool("gitlab", "run_pipeline", "Run a CI pipeline"),
    tool("slack", "post_message", "Post a message to a Slack channel"),
    tool("time", "get_current_time", "Get current time in a specific timezone"),
]


def naming_words_not_set_apart(monkeypatch):
    """Search with a named server's name words counting among its tools like any word (in the vector and the words)."""
    monkeypatch.setattr(SearchIndex, "_evened", lambda self, postings, named: postings)
    return tuned(name_words_set_apart=0.0)


@needs_vectors
def test_the_words_naming_a_server_do_not_choose_among_its_tools(monkeypatch):
    query = "start the jenkins job again"
    assert SearchIndex(JENKINS_CATALOG).search(query, limit=1)[0]["id"] == "jenkins__build_item"
    # Before: the tool that says "Jenkins" most won, in the vectors and the words alike.
    tuning = naming_words_not_set_apart(monkeypatch)
    assert SearchIndex(JENKINS_CATALOG, tuning=tuning).search(query, limit=1)[0]["id"] == "jenkins__get_view"


@needs_vectors
def test_the_named_servers_tools_keep_their_mean_cosine_and_other_servers_theirs():
    index = SearchIndex(JENKINS_CATALOG)
    query = "start the jenkins job again"
    named = index._named_servers(query)
    assert named == frozenset({"jenkins"})
    plain, set_apart = index._semantic(query), index._semantic(query, named)
    mine = [i for i, t in enumerate(JENKINS_CATALOG) if t["server"] == "jenkins"]
    others = [i for i in plain if i not in mine]
    assert all(set_apart[i] == plain[i] for i in others)
    assert sum(set_apart[i] for i in mine) == pytest.approx(sum(plain[i] for i in mine))
    assert any(abs(set_apart[i] - plain[i]) > 0.005 for i in mine)
    # Each moves _NAME_WORDS_SET_APART of the way to its re-centred cosine without the naming word.
    without = index._semantic("start the job again")
    shift = sum(plain[i] - without[i] for i in mine) / len(mine)
    share = DEFAULT_TUNING.name_words_set_apart
    for i in mine:
        assert set_apart[i] == pytest.approx(plain[i] + share * (without[i] + shift - plain[i]))


@needs_vectors
def test_a_query_that_is_only_the_servers_name_keeps_its_cosines():
    index = SearchIndex(JENKINS_CATALOG)
    assert index._semantic("jenkins", frozenset({"jenkins"})) == index._semantic("jenkins")


@needs_vectors
def test_a_word_naming_a_server_counts_the_same_for_each_of_its_tools():
    index = SearchIndex(JENKINS_CATALOG)
    named = frozenset({"jenkins"})
    mine = [i for i, t in enumerate(JENKINS_CATALOG) if t["server"] == "jenkins"]
    plain, _, _ = index._lexical("jenkins", idf_power=DEFAULT_TUNING.fused_idf_power)
    evened, _, _ = index._lexical("jenkins", idf_power=DEFAULT_TUNING.fused_idf_power, named=named)
    assert plain[mine[0]] > plain[mine[1]]  # get_view says it four times
    # Evened: each at the least of them, as if said once, as the server's name.
    assert {round(evened[i], 9) for i in mine} == {round(min(plain[i] for i in mine), 9)}


@needs_vectors
def test_words_inside_parameter_names_set_no_server_apart(monkeypatch):
    index = SearchIndex(TASK_CATALOG)
    query = "calendarId timeMin timeMax"
    assert index._named_servers(query) == frozenset({"calendar"})  # "calendar" is inside calendarId
    seen = []
    real = SearchIndex._semantic
    monkeypatch.setattr(SearchIndex, "_semantic", lambda self, q, named=frozenset(): seen.append(named) or real(self, q, named))
    index.search(query, limit=3)
    index.search("search the calendar for events", limit=3)
    assert seen == [frozenset(), frozenset({"calendar"})]


@needs_vectors
def test_explain_shows_the_set_apart_cosine_and_adds_up():
    index = SearchIndex(JENKINS_CATALOG)
    query = "start the jenkins job again"
    cosines = index._semantic(query, frozenset({"jenkins"}))
    plain = index._semantic(query)
    for result in index.search(query, limit=4, explain=True):
        i = index._ids.index(result["id"])
        assert result["signals"]["vector"] == pytest.approx(vector_share(cosines[i], DEFAULT_TUNING))
        assert sum(result["signals"].values()) == pytest.approx(result["score"], abs=0.001)
    top = index._ids.index("jenkins__build_item")
    assert vector_share(cosines[top], DEFAULT_TUNING) != pytest.approx(vector_share(plain[top], DEFAULT_TUNING))


@needs_vectors
def test_the_tuning_bench_sets_a_named_servers_tools_apart_as_search_does():
    bench = load_script("bench/search.py")
    index = SearchIndex(JENKINS_CATALOG)
    queries = [{"query": "start the jenkins job again", "ids": ["jenkins__build_item"], "kind": "paraphrase"}]
    row = bench.fused_figures(index, queries, bench.prepare_signals(index, queries, ["book a flight"]))
    assert row["mrr@10"] == pytest.approx(1.0)
    rows = {(r["share"], r["evened"]): r for r in bench.name_words_rows(index, queries, ["book a flight"])}
    assert rows[(DEFAULT_TUNING.name_words_set_apart, True)]["mrr@10"] == pytest.approx(1.0)
    assert rows[(0.0, False)]["mrr@10"] < 1.0  # the fusion as it was
    assert "_evened" not in vars(index)  # the grid's points are copies: the index is as it was


@needs_vectors
def test_the_cross_validation_scores_each_set_left_aside_with_the_shipped_fusion_beside_it():
    bench = load_script("bench/search.py")
    sets = {
        "development": (JENKINS_CATALOG, [{"query": "start the jenkins job again", "ids": ["jenkins__build_item"], "kind": "paraphrase"},
                                          {"query": "post to slack", "ids": ["slack__post_message"], "kind": "direct"}], ["book a flight to rome"]),
        "other": (TASK_CATALOG, [{"query": "parent_task_id name notes", "ids": ["tasks__create_subtask"], "kind": "param"}], ["book a flight to rome"]),
    }
    grid = {"lexical_weight": (0.5, 0.35), "floor": (0.2,), "ceiling": (0.9,), "named_server_bonus": (0.15,)}
    report = bench.cross_validation(sets, grid)
    assert report["grid"] == 2 and [f["held_out"] for f in report["folds"]] == ["development", "other"]
    # The shipped point's figures are search's own on each set.
    for fold in report["folds"]:
        tools, queries, _ = sets[fold["held_out"]]
        index = SearchIndex(tools)
        hits = sum(bool(set(q["ids"]) & set(ids(index.search(q["query"], limit=3)))) for q in queries)
        assert fold["recall@3"]["shipped"] == pytest.approx(hits / len(queries))
    assert report["adopt"] == all(f["recall@3"]["fitted"] >= f["recall@3"]["shipped"] for f in report["folds"])


# Siblings that share most of their words -- a family's parameters, an object's verbs --
# are told apart by what only one of them has: the rarest parameter name, whether it only reads.


LABEL_CATALOG = [
    tool("plane", "create_label", "Create a new label in a project", inputSchema=schema("project_id", "label_data")),
    tool("plane", "get_label", "Get a single label by ID", inputSchema=schema("project_id", "label_id")),
    tool("plane", "update_label", "Update a label", inputSchema=schema("project_id", "label_id", "label_data")),
    tool("plane", "delete_label", "Delete a label", inputSchema=schema("project_id", "label_id")),
    tool("plane", "list_labels", "List all labels in a project", inputSchema=schema("project_id")),
]


@needs_vectors
def test_the_tool_taking_every_parameter_the_query_names_comes_first_among_tools_sharing_most():
    query = "project_id label_id label_data"
    # Without the coverage share, create_label's meaning (and two of the three names) wins.
    uncovered = SearchIndex(LABEL_CATALOG, tuning=tuned(parameter_coverage_bonus=0.0))
    assert ids(uncovered.search(query, limit=1)) == ["plane__create_label"]
    top = SearchIndex(LABEL_CATALOG).search(query, limit=1, explain=True)[0]
    assert top["id"] == "plane__update_label"
    assert top["signals"]["parameters"] == pytest.approx(DEFAULT_TUNING.parameter_coverage_bonus)


@needs_vectors
def test_the_coverage_share_follows_whether_the_query_names_parameters_not_the_vectors_weight():
    # The share is for a query that names parameters; the vectors' weight for one is a separate choice.
    full_vectors = SearchIndex(LABEL_CATALOG, tuning=tuned(identifier_vector_scale=1.0))
    results = full_vectors.search("project_id label_id label_data", limit=5, explain=True)
    update = next(r for r in results if r["id"] == "plane__update_label")
    assert update["signals"]["parameters"] == pytest.approx(DEFAULT_TUNING.parameter_coverage_bonus)
    # A query without a parameter name gets none, whatever the scale.
    plain = full_vectors.search("change a label", limit=5, explain=True)
    assert plain and not any("parameters" in r["signals"] for r in plain)


@needs_vectors
def test_a_parameter_name_every_tool_takes_weighs_less_than_a_rare_one():
    coverage = SearchIndex(LABEL_CATALOG)._parameter_coverage("project_id label_data")
    by_id = {SearchIndex(LABEL_CATALOG)._ids[i]: share for i, share in coverage.items()}
    assert by_id["plane__update_label"] == pytest.approx(1.0)
    # list_labels takes only project_id, which all five take: its share is far below half.
    assert by_id["plane__list_labels"] < 0.25 < by_id["plane__create_label"]
    # A plain word or an identifier no tool takes is no parameter name.
    assert SearchIndex(LABEL_CATALOG)._parameter_coverage("label data node_modules") == {}


def test_words_only_search_gives_no_parameter_or_question_share():
    index = SearchIndex(LABEL_CATALOG, semantic=False)
    for query in ("project_id label_id label_data", "which labels are in the project?"):
        for result in index.search(query, limit=5, explain=True):
            assert not {"parameters", "question_read"} & set(result["signals"])


AI_CONFIG_CATALOG = [
    tool("flags", "get_ai_config", "Get an AI config: its model, prompt messages and variations"),
    tool("flags", "create_ai_config", "Create a new AI config with a model and prompt messages"),
    tool("flags", "delete_ai_config", "Delete an AI config"),
]


@needs_vectors
@pytest.mark.parametrize("query", [
    "what model and prompt does the support bot's ai config use",
    "which prompt does the ai config use?",
])
def test_a_question_prefers_the_sibling_that_only_reads(query):
    no_share = SearchIndex(AI_CONFIG_CATALOG, tuning=tuned(question_read_bonus=0.0))
    assert ids(no_share.search(query, limit=1)) == ["flags__create_ai_config"]
    results = SearchIndex(AI_CONFIG_CATALOG).search(query, limit=3, explain=True)
    assert results[0]["id"] == "flags__get_ai_config"
    assert {r["id"]: r["signals"].get("question_read", 0.0) for r in results} == {
        "flags__get_ai_config": DEFAULT_TUNING.question_read_bonus,
        "flags__create_ai_config": 0.0, "flags__delete_ai_config": 0.0}
    for result in results:
        assert min(1.0, sum(result["signals"].values())) == pytest.approx(result["score"], abs=0.001)


@needs_vectors
def test_a_request_that_is_no_question_gives_no_reader_a_share():
    for result in SearchIndex(AI_CONFIG_CATALOG).search("ai config model and prompt", limit=3, explain=True):
        assert "question_read" not in result["signals"]


@pytest.mark.parametrize("query, question", [
    ("which jenkins jobs are running", True),
    ("sonarqube: what's stopping the release", True),
    ("can deepl output Ukrainian?", True),
    ("the release notes, are they out?", True),
    ("did I already have a meeting called sync", True),
    ("delete the what-if branch", False),
    ("kick off the nightly jenkins job", False),
    ("jenkins: restart build 5", False),
])
def test_a_question_is_told_by_its_mark_or_its_first_word(query, question):
    assert is_question(query) is question


@pytest.mark.parametrize("spec, reads", [
    ({"name": "get_label"}, True),
    ({"name": "listLabels"}, True),
    ({"name": "create_label"}, False),
    # The server's own readOnlyHint wins over the words of the name, either way.
    ({"name": "get_or_create_label", "annotations": {"readOnlyHint": False}}, False),
    ({"name": "labels", "annotations": {"readOnlyHint": True}}, True),
])
def test_a_tool_only_reads_by_its_annotation_else_by_a_reading_verb_in_its_name(spec, reads):
    assert reads_only(spec) is reads


@needs_vectors
def test_the_tuning_bench_adds_the_sibling_shares_as_search_does():
    bench = load_script("bench/search.py")
    index = SearchIndex(LABEL_CATALOG + AI_CONFIG_CATALOG)
    queries = [{"query": "project_id label_id label_data", "ids": ["plane__update_label"], "kind": "param"},
               {"query": "which prompt does the ai config use?", "ids": ["flags__get_ai_config"], "kind": "paraphrase"}]
    rows = {(r["parameter_coverage"], r["question_read"]): r for r in bench.sibling_rows(index, queries, ["book a flight"])}
    shipped = rows[(DEFAULT_TUNING.parameter_coverage_bonus, DEFAULT_TUNING.question_read_bonus)]
    assert [ids(index.search(q["query"], limit=1)) for q in queries] == [[q["ids"][0]] for q in queries]
    assert shipped["mrr@10"] == pytest.approx(1.0)
    assert rows[(0.0, 0.0)]["mrr@10"] < 1.0


# A server named by its word as written, or by its whole name.


PLANE_CATALOG = [
    tool("plane", "create_label", "Create a new label in a project"),
    tool("plane", "list_cycles", "List the cycles of a project"),
    tool("plane", "create_work_item", "Create a work item in a project"),
    # "plan" is the stem of "plane" too: a third of the tools with the stem are not plane's.
    tool("testrail", "create_test_plan", "Create a test plan with tags"),
    tool("testrail", "list_test_plans", "List the test plans of a project"),
    tool("pricing", "get_plans", "Get the pricing plans and what each includes"),
    tool("github", "add_labels", "Add labels to an issue"),
    tool("slack", "post_message", "Post a message to a Slack channel"),
]

BROWSER_CATALOG = [
    tool("browser-tools", "getConsoleErrors", "Check our browsers console errors"),
    tool("browser-tools", "runAccessibilityAudit", "Run an accessibility audit on the current page"),
    tool("browser-tools", "takeScreenshot", "Take a screenshot of the current browser tab"),
    tool("chrome-devtools", "list_console_messages", "List all console messages for the currently selected page"),
    tool("chrome-devtools", "take_screenshot", "Take a screenshot of the page or element"),
    tool("chrome-devtools", "lighthouse_audit", "Get Lighthouse scores for accessibility and performance"),
    tool("huggingface", "hub_repo_search", "Search Hugging Face repositories: models, datasets, spaces"),
    tool("time", "get_current_time", "Get current time in a specific timezone"),
    tool("jenkins", "get_build_time", "How long a build took, in time units"),
    tool("cron", "next_run_time", "The next time a schedule fires"),
]


def named_by_stems_alone(monkeypatch):
    """Search that names a server by a pure stem of its name only (no word as written, no whole name)."""
    monkeypatch.setattr(signals, "server_naming_words", lambda tools, postings, naming, purity: {})
    monkeypatch.setattr(signals, "whole_server_names", lambda tools: {})
    # The server as a whole finds browser-tools on its own: off, to see what naming decides.
    return tuned(server_weight=0.0)


@needs_vectors
def test_a_word_of_a_servers_name_names_it_when_only_its_stem_is_shared(monkeypatch):
    query = "I need a red 'regression' tag in plane"
    index = SearchIndex(PLANE_CATALOG)
    assert index._named_servers(query) == frozenset({"plane"})
    assert index._named_servers("list the test plans") == frozenset()  # the stem alone names nothing
    assert all(i.startswith("plane__") for i in ids(index.search(query, limit=3)))
    # Before: "plan" named nothing (its tools are not plane's alone) and a test plan came in.
    before = SearchIndex(PLANE_CATALOG, tuning=named_by_stems_alone(monkeypatch))
    assert before._named_servers(query) == frozenset()
    assert "testrail__create_test_plan" in ids(before.search(query, limit=3))


@needs_vectors
@pytest.mark.parametrize("query, named", [
    ("is my page accessible, via browsertools", {"browser-tools"}),
    ("which errors did the console show (browsertools)", {"browser-tools"}),
    ("hugging face: find llama models", {"huggingface"}),
    # A one-word server's name said alone names it only when (nearly) only its tools say it.
    ("what time is it in tokyo", set()),
])
def test_a_servers_whole_name_names_it_run_together_or_apart(query, named):
    assert SearchIndex(BROWSER_CATALOG)._named_servers(query) == frozenset(named)


@needs_vectors
def test_a_server_named_by_its_run_together_name_ranks_its_tool_first(monkeypatch):
    query = "is my page accessible, via browsertools"
    assert ids(SearchIndex(BROWSER_CATALOG).search(query, limit=1)) == ["browser-tools__runAccessibilityAudit"]
    tuning = named_by_stems_alone(monkeypatch)
    assert ids(SearchIndex(BROWSER_CATALOG, tuning=tuning).search(query, limit=1)) != ["browser-tools__runAccessibilityAudit"]


@needs_vectors
def test_a_run_together_server_name_is_set_apart_like_its_words():
    index = SearchIndex(BROWSER_CATALOG)
    named = frozenset({"browser-tools"})
    # The set-apart vector drops "browsertools" as it would drop "browser tools".
    assert index._semantic("take a screenshot via browsertools", named) != index._semantic("take a screenshot via browsertools")


@needs_vectors
def test_the_tuning_bench_names_servers_as_search_does_and_by_stems_alone():
    # The server as a whole finds browser-tools on its own: off, to see what naming decides.
    bench = load_script("bench/search.py")
    index = SearchIndex(BROWSER_CATALOG, tuning=tuned(server_weight=0.0))
    query = "is my page accessible, via browsertools"
    queries = [{"query": query, "ids": ["browser-tools__runAccessibilityAudit"], "kind": "paraphrase"}]
    rows = {(r["word"], r["whole"]): r for r in bench.server_naming_rows(index, queries, ["book a flight"])}
    assert rows[(True, True)]["mrr@10"] == 1.0  # first, as search ranks it
    assert ids(index.search(query, limit=1)) == ["browser-tools__runAccessibilityAudit"]
    assert rows[(False, False)]["mrr@10"] < 1.0
    assert rows[(False, True)]["mrr@10"] == 1.0  # the whole name run together is what names it
    assert "browsertools" in index._whole_names  # the grid's points are copies: the index is as it was


def test_identifiers_are_found_as_the_pattern_finds_them_in_each_run():
    pattern = signals._IDENTIFIER  # what identifiers() finds, run by run instead of over the whole query
    for query in ("calendarId timeMin", "project_id label_id, label_data", "owner/repo:pull_number do merge_title_field",
                  "getUser's maxResults (pageToken)", "__init__ a_ _b x_y_", "plain words only", "a" * 98 + "_b"):
        assert identifiers(query) == pattern.findall(query), query
    assert identifiers("a" * 99 + "_b") == []  # longer than any parameter name: not looked for


# --- a server as a whole ------------------------------------------------------------
#
# A request that describes a domain ("remember that Alice works at Acme") has its meaning spread over a
# server's tools (a knowledge graph's entities, relations, observations) more than in any one of them.  With
# the vectors, each tool gains a share of server_weight by how its server's score (the mean of the query's
# cosines with its best server_tools tools) leads, softmax over the servers.  A query that names a server
# keeps named_server_bonus alone (not doubled); one by parameter names and a search by the words alone get
# nothing.  These cases were written against VECTORS-V3's cosines, like the rest of this file.


# Three recorded servers' tools (set00's catalogs): a knowledge graph, a database with a memo, git.
MEMORY_CATALOG = [
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
DOMAIN_QUERY = "remember that Alice works at Acme"  # a set00 query whose answers are memory's



@needs_vectors
def test_a_request_spread_over_one_servers_tools_lifts_that_servers_tool_over_another_servers():
    index = SearchIndex(MEMORY_CATALOG)
    alone = ids(SearchIndex(MEMORY_CATALOG, tuning=tuned(server_weight=0.0)).search(DOMAIN_QUERY, limit=len(MEMORY_CATALOG)))
    assert alone.index("git__git_diff_unstaged") < alone.index("memory__add_observations")
    assert "memory__add_observations" not in alone[:3]
    whole = ids(index.search(DOMAIN_QUERY, limit=len(MEMORY_CATALOG)))
    assert whole.index("memory__add_observations") < whole.index("git__git_diff_unstaged")
    assert "memory__add_observations" in whole[:3]


@needs_vectors
def test_the_server_that_leads_takes_nearly_all_the_weight_and_explain_shows_it():
    index = SearchIndex(MEMORY_CATALOG)
    results = index.search(DOMAIN_QUERY, limit=10, explain=True)
    by_server = {}
    assert all("server" in r["signals"] for r in results if r["server"] == "memory")
    for r in results:
        by_server.setdefault(r["server"], set()).add(round(r["signals"].get("server", 0.0), 6))
        # The signals still add up to the score shown.
        assert sum(r["signals"].values()) == pytest.approx(r["score"], abs=0.0006)
    assert by_server["memory"] and all(share == pytest.approx(DEFAULT_TUNING.server_weight, rel=0.05) for share in by_server["memory"])
    assert all(share < 0.1 * DEFAULT_TUNING.server_weight for server, shares in by_server.items() if server != "memory" for share in shares)
    assert SIGNALS.index("named_server") < SIGNALS.index("server") < SIGNALS.index("exact_name")


@needs_vectors
def test_a_query_naming_a_server_gets_the_named_bonus_once_not_the_server_signal_too():
    index = SearchIndex(MEMORY_CATALOG)
    query = "in memory, remember that Alice works at Acme"
    top = index.search(query, limit=3, explain=True)
    assert {r["server"] for r in top} == {"memory"}
    for r in top:
        assert r["signals"]["named_server"] == DEFAULT_TUNING.named_server_bonus
        assert "server" not in r["signals"]
    off = SearchIndex(MEMORY_CATALOG, tuning=tuned(server_weight=0.0))
    assert [(r["id"], r["score"]) for r in off.search(query, limit=3)] == [(r["id"], r["score"]) for r in top]


@needs_vectors
def test_a_query_by_parameter_names_gets_no_server_signal():
    schema = {"type": "object", "properties": {"entity_name": {"type": "string"}, "observation_text": {"type": "string"}}}
    catalog = MEMORY_CATALOG + [tool("notes", "add_note", "Add a note", inputSchema=schema)]
    index = SearchIndex(catalog)
    query = "entity_name observation_text"
    results = index.search(query, limit=5, explain=True)
    assert results and all("server" not in r["signals"] for r in results)
    off = SearchIndex(catalog, tuning=tuned(server_weight=0.0))
    assert [(r["id"], r["score"]) for r in off.search(query, limit=5)] == [(r["id"], r["score"]) for r in results]


def test_words_alone_get_no_server_signal():
    index = SearchIndex(MEMORY_CATALOG, semantic=False)
    results = index.search(DOMAIN_QUERY + " graph", limit=5, explain=True)
    assert results and all("server" not in r["signals"] for r in results)
    off = SearchIndex(MEMORY_CATALOG, semantic=False, tuning=tuned(server_weight=0.0))
    assert [(r["id"], r["score"]) for r in off.search(DOMAIN_QUERY + " graph", limit=5)] == [(r["id"], r["score"]) for r in results]


def test_tied_servers_gain_nothing_and_a_clear_leader_takes_nearly_all_above_an_even_split():
    one_tool = tuned(server_tools=1)
    weight = one_tool.server_weight
    # Two servers of one tool each: their tools' cosines are their scores.
    assert server_shares({0: 0.4, 1: 0.4}, [0, 1], 2, one_tool) == [0.0, 0.0]
    led = server_shares({0: 0.5, 1: 0.4}, [0, 1], 2, one_tool)
    assert led[0] == pytest.approx(weight, rel=0.02) and led[1] == 0.0
    # Of three servers, two that tie for the lead split what is above an even third.
    split = server_shares({0: 0.5, 1: 0.5, 2: 0.3}, [0, 1, 2], 3, one_tool)
    assert split == [pytest.approx(weight / 4, rel=0.01), pytest.approx(weight / 4, rel=0.01), 0.0]


@needs_vectors
def test_one_server_alone_gains_nothing_from_its_standing():
    # The built-in tools alone (or a user with one MCP server): a share of 1 says nothing about which tool.
    alone = [t for t in MEMORY_CATALOG if t["server"] == MEMORY_CATALOG[0]["server"]]
    index = SearchIndex(alone)
    assert index._servers == 1 and server_shares({0: 0.9}, [0], 1, DEFAULT_TUNING) == [0.0]
    results = index.search(DOMAIN_QUERY + " in the knowledge graph", limit=5, explain=True)
    assert results and all("server" not in r["signals"] for r in results)


def test_a_server_is_scored_by_its_best_tools_mean_so_a_spread_domain_beats_one_lone_match():
    assert DEFAULT_TUNING.server_tools == 3
    # Server 0: three tools that each fit a little; server 1: one tool that fits better, and two that do not.
    cosines = {0: 0.45, 1: 0.42, 2: 0.40, 3: 0.55, 4: 0.05, 5: -0.2}
    shares = server_shares(cosines, [0, 0, 0, 1, 1, 1], 2, DEFAULT_TUNING)
    assert shares[0] > 0.9 * DEFAULT_TUNING.server_weight and shares[1] == 0.0
    # A server with fewer tools than that counts 0 for each missing one; above the vectors' ceiling all tie.
    lone = server_shares({0: 0.6, 1: 0.3, 2: 0.3, 3: 0.3}, [0, 1, 1, 1], 2, DEFAULT_TUNING)
    assert lone[1] > 0.9 * DEFAULT_TUNING.server_weight and lone[0] == 0.0  # 0.6 / 3 = 0.2 < 0.3
    assert server_shares({0: 0.95, 1: 0.99, 2: 0.95, 3: 0.99, 4: 0.95, 5: 0.99}, [0, 1, 0, 1, 0, 1], 2, DEFAULT_TUNING) == [0.0, 0.0]


@needs_vectors
def test_the_tuning_bench_adds_the_server_signal_as_search_does():
    bench = load_script("bench/search.py")
    index = SearchIndex(MEMORY_CATALOG)
    queries = [{"query": DOMAIN_QUERY, "ids": ["memory__add_observations"], "kind": "paraphrase"}]
    grid = {"tools": (DEFAULT_TUNING.server_tools,), "weight": (0.0, DEFAULT_TUNING.server_weight), "temperature": (DEFAULT_TUNING.server_temperature,)}
    rows = bench.server_signal_rows(index, queries, ["book a flight"], grid)
    assert [r["hits@3"] for r in rows] == [0, 1]  # without it, and as search ranks it (above)
    assert "memory__add_observations" in ids(index.search(DOMAIN_QUERY, limit=3))


