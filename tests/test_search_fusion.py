"""How search fuses the words and the vectors (issue 13, FU): what the vectors know must survive the fusion.

Small catalogs prove each behaviour: a paraphrase whose words match nothing
finds its tool through the vectors; a real word is not "corrected" into a
catalog word before the vectors read it; a tool's name weighs more in its
vector than its long description; an exact name still wins over anything
soft; and without the vectors data search is the words' alone.  Round 2
(FU2): fused with the vectors, a word weighs by its idf to a power, so a
word many tools share does not outvote the meaning.  Round 3 (FU3): a
query naming a tool's parameter (snake_case, camelCase) weighs the vectors
less, so the words' exact parameter match is not outvoted.  Round 4
(FU4): among the tools of a server the query names, the words naming it
decide nothing (_NAME_WORDS_SET_APART).  Round 5 (FU5): siblings are told
apart by what only one of them has: a query by parameter names favours the
tool taking the rarest of them (_PARAMETER_COVERAGE_BONUS), a question the
tools that only read (_QUESTION_READ_BONUS).  Round 6 (FU6): a query names a
server by a word of its name as written when only the stem is shared
("plane", not "plan"), and by its whole name run together or apart
("browsertools", "hugging face").
"""

import math

import pytest

import toolscript.search
from toolscript import vectors
from toolscript.search import SearchIndex
from conftest import load_script
from search_sets import tool

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
def test_the_tool_name_weighs_more_than_each_description_text_in_the_tool_vector():
    texts = vectors.tool_texts(tool("git", "git_log", "Shows the commit logs. Lists commits with author, date and message."))
    parts = [vectors.encode(t) for t in texts]
    equal = [sum(xs) for xs in zip(*parts)]
    norm = math.hypot(*equal)
    equal = [x / norm for x in equal]
    weighted = toolscript.search._encode_tool(texts)
    assert math.isclose(math.hypot(*weighted), 1.0, rel_tol=1e-9)
    name = parts[0]
    assert vectors.dot(weighted, name) > vectors.dot(equal, name) + 0.01
    assert toolscript.search._encode_tool(["", "", "", ""]) is None


@needs_vectors
def test_the_parameter_names_are_part_of_the_tool_vector_at_a_small_weight():
    schema = {"type": "object", "properties": {"max_count": {"type": "integer"}, "authorEmail": {"type": "string"}}}
    with_params = tool("git", "git_log", "Shows the commit logs", inputSchema=schema)
    texts = toolscript.search._tool_texts(with_params)
    assert texts[:3] == vectors.tool_texts(with_params) and texts[3] == "max count authorEmail"
    bare = toolscript.search._encode_tool(toolscript.search._tool_texts(tool("git", "git_log", "Shows the commit logs")))
    weighted = toolscript.search._encode_tool(texts)
    params = vectors.encode(texts[3])
    assert vectors.dot(weighted, params) > vectors.dot(bare, params)
    assert vectors.dot(weighted, bare) > 0.95  # a quarter's weight: the name and description still lead
    index = SearchIndex([with_params])
    assert index.vector_cache == {"\n".join(texts): list(weighted)}


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


def test_packed_tool_vectors_give_every_cosine_as_the_float_dot_product_does():
    import random

    rng = random.Random(13)

    def unit(values):
        norm = math.hypot(*values)
        return tuple(x / norm for x in values)

    dim = 256
    axis = tuple(1.0 if d == 0 else 0.0 for d in range(dim))
    tools = [unit([rng.gauss(0, 1) for _ in range(dim)]) for _ in range(40)]
    tools += [axis, tuple(-x for x in axis), unit([1.0] * dim), unit([-1.0] * dim)]  # the extremes: cosines of +-1
    packed = toolscript.search._PackedVectors([(3 * n, v) for n, v in enumerate(tools)])
    for query in [axis, unit([1.0] * dim), unit([-1.0] * dim)] + [unit([rng.gauss(0, 1) for _ in range(dim)]) for _ in range(5)]:
        cosines = packed.cosines(query)
        assert sorted(cosines) == [3 * n for n in range(len(tools))]
        for n, v in enumerate(tools):
            assert abs(cosines[3 * n] - sum(a * b for a, b in zip(query, v))) < 1e-3
    assert toolscript.search._PackedVectors([]).cosines(axis) == {}


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
    assert results[0]["signals"]["named_server"] == toolscript.search._NAMED_SERVER_BONUS
    assert list(results[0]["signals"]) == [s for s in toolscript.search.SIGNALS if s in results[0]["signals"]]


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
def test_fused_with_the_vectors_a_word_many_tools_share_does_not_outvote_the_meaning(monkeypatch):
    query = "get the edit log of an issue"
    # "get" and "issue" are both in get_issue's name; with the plain idf they outvote the changelog's meaning...
    monkeypatch.setattr(toolscript.search, "_FUSED_IDF_POWER", 1.0)
    assert SearchIndex(TRACKER_CATALOG).search(query, limit=1)[0]["id"] == "tracker__get_issue"
    # ...weighed by idf to the power, the common words count for less and the vectors decide.
    monkeypatch.undo()
    assert SearchIndex(TRACKER_CATALOG).search(query, limit=1)[0]["id"] == "tracker__issue_changelog"


@needs_vectors
def test_the_fused_word_share_weighs_each_word_by_its_idf_to_the_power():
    hybrid, words = SearchIndex(TRACKER_CATALOG), SearchIndex(TRACKER_CATALOG, semantic=False)
    power = toolscript.search._FUSED_IDF_POWER
    assert power > 1.0
    query = "issue changelog"
    fused = {r["id"]: r["signals"] for r in hybrid.search(query, limit=10, explain=True)}
    plain = {r["id"]: r["signals"] for r in words.search(query, limit=10, explain=True)}
    sharp = hybrid._lexical(query, explain=True, idf_power=power)[1]["bm25"]  # the query's words as written
    for i, tool_id in enumerate(hybrid._ids):
        if tool_id in fused and "bm25" in fused[tool_id]:
            assert fused[tool_id]["bm25"] == pytest.approx(toolscript.search._LEXICAL_WEIGHT * sharp[i])
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
    power = toolscript.search._FUSED_IDF_POWER
    looked_up = {t["term"]: t for t in index.explain_terms("issue changelog")}
    for entry in looked_up.values():
        assert entry["fused_idf"] == pytest.approx(entry["idf"] ** power, abs=0.001)
    assert all("fused_idf" not in t for t in index.explain_terms("issue changelog", semantic=False))
    assert all("fused_idf" not in t for t in SearchIndex(TRACKER_CATALOG, semantic=False).explain_terms("issue changelog"))


# Round 3 (FU3): a query that names a tool's parameters is answered by the words.


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


def without_round_3(monkeypatch):
    """Search as before session 18's third fusion round: a query naming parameters fused as any other."""
    monkeypatch.setattr(toolscript.search, "_IDENTIFIER_VECTOR_SCALE", 1.0)
    # The parameter-coverage share (round 5) applies whenever the query names parameters, whatever the scale.
    monkeypatch.setattr(toolscript.search, "_PARAMETER_COVERAGE_BONUS", 0.0)


@needs_vectors
def test_a_query_naming_parameters_is_not_outvoted_by_the_vectors(monkeypatch):
    query = "parent_task_id name notes"
    words = ids(SearchIndex(TASK_CATALOG, semantic=False).search(query, limit=2))
    assert "tasks__create_subtask" in words  # the only tool with a parameter parent_task_id
    # With the vectors at their full weight (and no share for the parameters a tool
    # takes, round 5's), create_task's meaning pushes it out of the top 2...
    without_round_3(monkeypatch)
    assert "tasks__create_subtask" not in ids(SearchIndex(TASK_CATALOG).search(query, limit=2))
    # ...with their weight cut for a query that names parameters, the words' top 2 stand.
    monkeypatch.undo()
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
    scale = toolscript.search._IDENTIFIER_VECTOR_SCALE
    assert scale < 1.0
    assert index._vector_scale(query) == (scale if named else 1.0)


@needs_vectors
def test_explain_adds_up_to_the_score_when_the_query_names_parameters():
    index = SearchIndex(TASK_CATALOG)
    scale = toolscript.search._IDENTIFIER_VECTOR_SCALE
    for result in index.search("calendarId timeMin timeMax", limit=3, explain=True):
        signals = result["signals"]
        # Capped at 1: the tool taking all three parameters gains _PARAMETER_COVERAGE_BONUS on top.
        assert min(1.0, sum(signals.values())) == pytest.approx(result["score"], abs=0.001)
        i = index._ids.index(result["id"])
        cosine = index._semantic("calendarId timeMin timeMax")[i]
        assert signals["vector"] == pytest.approx(toolscript.search._vector_share(cosine) * scale)
    # A tool both signals fully back still scores 1: the words take the weight the vectors give up.
    assert toolscript.search._fuse({0: 1.0}, {0: 1.0}, scale)[0] == pytest.approx(1.0)


@needs_vectors
def test_the_tuning_bench_fuses_a_parameter_query_as_search_does(monkeypatch):
    bench = load_script("bench/search.py")
    index = SearchIndex(TASK_CATALOG)
    queries = [{"query": "parent_task_id name notes", "ids": ["tasks__create_subtask"], "kind": "param"}]
    # The grid's shipped point ranks as search does (the identifier scale applied), so its figures are search's.
    row = bench.fused_figures(index, queries, bench.prepare_signals(index, queries, ["book a flight"]), bench.shipped_fuse)
    rank = ids(index.search(queries[0]["query"], limit=3)).index("tasks__create_subtask") + 1
    assert rank == 2 and row["mrr@10"] == pytest.approx(1 / rank, abs=0.001)
    # The grid's points rank as search does at each scale.  Without round 5's share for the
    # parameters a tool takes (it applies at any scale), full vector weight drops create_subtask to third.
    monkeypatch.setattr(toolscript.search, "_PARAMETER_COVERAGE_BONUS", 0.0)
    rows = {r["scale"]: r for r in bench.identifier_scale_rows(index, queries, ["book a flight"])}
    assert rows[toolscript.search._IDENTIFIER_VECTOR_SCALE]["mrr@10"] == pytest.approx(0.5)
    assert rows[1.0]["mrr@10"] == pytest.approx(1 / 3, abs=0.001)
    monkeypatch.setattr(toolscript.search, "_IDENTIFIER_VECTOR_SCALE", 1.0)
    assert ids(index.search(queries[0]["query"], limit=3)).index("tasks__create_subtask") == 2


# Round 4 (FU4): a named server's tools are told apart by the rest of the query.

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


def as_before_round_4(monkeypatch):
    monkeypatch.setattr(toolscript.search, "_NAME_WORDS_SET_APART", 0.0)
    monkeypatch.setattr(SearchIndex, "_evened", lambda self, postings, named: postings)


@needs_vectors
def test_the_words_naming_a_server_do_not_choose_among_its_tools(monkeypatch):
    query = "start the jenkins job again"
    assert SearchIndex(JENKINS_CATALOG).search(query, limit=1)[0]["id"] == "jenkins__build_item"
    # Before: the tool that says "Jenkins" most won, in the vectors and the words alike.
    as_before_round_4(monkeypatch)
    assert SearchIndex(JENKINS_CATALOG).search(query, limit=1)[0]["id"] == "jenkins__get_view"


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
    share = toolscript.search._NAME_WORDS_SET_APART
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
    plain, _, _ = index._lexical("jenkins", idf_power=toolscript.search._FUSED_IDF_POWER)
    evened, _, _ = index._lexical("jenkins", idf_power=toolscript.search._FUSED_IDF_POWER, named=named)
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
        assert result["signals"]["vector"] == pytest.approx(toolscript.search._vector_share(cosines[i]))
        assert sum(result["signals"].values()) == pytest.approx(result["score"], abs=0.001)
    top = index._ids.index("jenkins__build_item")
    assert toolscript.search._vector_share(cosines[top]) != pytest.approx(toolscript.search._vector_share(plain[top]))


@needs_vectors
def test_the_tuning_bench_sets_a_named_servers_tools_apart_as_search_does():
    bench = load_script("bench/search.py")
    index = SearchIndex(JENKINS_CATALOG)
    queries = [{"query": "start the jenkins job again", "ids": ["jenkins__build_item"], "kind": "paraphrase"}]
    row = bench.fused_figures(index, queries, bench.prepare_signals(index, queries, ["book a flight"]), bench.shipped_fuse)
    assert row["mrr@10"] == pytest.approx(1.0)
    rows = {(r["share"], r["evened"]): r for r in bench.name_words_rows(index, queries, ["book a flight"])}
    assert rows[(toolscript.search._NAME_WORDS_SET_APART, True)]["mrr@10"] == pytest.approx(1.0)
    assert rows[(0.0, False)]["mrr@10"] < 1.0  # the fusion as it was
    assert "_evened" not in vars(index)  # the grid put the evening back


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
    assert toolscript.search._LEXICAL_WEIGHT == 0.5 and toolscript.search._VECTOR_WEIGHT == 0.5  # put back


# Round 5 (FU5): siblings that share most of their words -- a family's parameters, an object's verbs --
# are told apart by what only one of them has: the rarest parameter name, whether it only reads.


LABEL_CATALOG = [
    tool("plane", "create_label", "Create a new label in a project", inputSchema=schema("project_id", "label_data")),
    tool("plane", "get_label", "Get a single label by ID", inputSchema=schema("project_id", "label_id")),
    tool("plane", "update_label", "Update a label", inputSchema=schema("project_id", "label_id", "label_data")),
    tool("plane", "delete_label", "Delete a label", inputSchema=schema("project_id", "label_id")),
    tool("plane", "list_labels", "List all labels in a project", inputSchema=schema("project_id")),
]


@needs_vectors
def test_the_tool_taking_every_parameter_the_query_names_comes_first_among_tools_sharing_most(monkeypatch):
    query = "project_id label_id label_data"
    # Without the coverage share, create_label's meaning (and two of the three names) wins.
    monkeypatch.setattr(toolscript.search, "_PARAMETER_COVERAGE_BONUS", 0.0)
    assert ids(SearchIndex(LABEL_CATALOG).search(query, limit=1)) == ["plane__create_label"]
    monkeypatch.undo()
    top = SearchIndex(LABEL_CATALOG).search(query, limit=1, explain=True)[0]
    assert top["id"] == "plane__update_label"
    assert top["signals"]["parameters"] == pytest.approx(toolscript.search._PARAMETER_COVERAGE_BONUS)


@needs_vectors
def test_the_coverage_share_follows_whether_the_query_names_parameters_not_the_vectors_weight(monkeypatch):
    # The share is for a query that names parameters; the vectors' weight for one is a separate choice.
    monkeypatch.setattr(toolscript.search, "_IDENTIFIER_VECTOR_SCALE", 1.0)
    results = SearchIndex(LABEL_CATALOG).search("project_id label_id label_data", limit=5, explain=True)
    update = next(r for r in results if r["id"] == "plane__update_label")
    assert update["signals"]["parameters"] == pytest.approx(toolscript.search._PARAMETER_COVERAGE_BONUS)
    # A query without a parameter name gets none, whatever the scale.
    plain = SearchIndex(LABEL_CATALOG).search("change a label", limit=5, explain=True)
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
def test_a_question_prefers_the_sibling_that_only_reads(monkeypatch, query):
    monkeypatch.setattr(toolscript.search, "_QUESTION_READ_BONUS", 0.0)
    assert ids(SearchIndex(AI_CONFIG_CATALOG).search(query, limit=1)) == ["flags__create_ai_config"]
    monkeypatch.undo()
    results = SearchIndex(AI_CONFIG_CATALOG).search(query, limit=3, explain=True)
    assert results[0]["id"] == "flags__get_ai_config"
    assert {r["id"]: r["signals"].get("question_read", 0.0) for r in results} == {
        "flags__get_ai_config": toolscript.search._QUESTION_READ_BONUS,
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
    assert toolscript.search._is_question(query) is question


@pytest.mark.parametrize("spec, reads", [
    ({"name": "get_label"}, True),
    ({"name": "listLabels"}, True),
    ({"name": "create_label"}, False),
    # The server's own readOnlyHint wins over the words of the name, either way.
    ({"name": "get_or_create_label", "annotations": {"readOnlyHint": False}}, False),
    ({"name": "labels", "annotations": {"readOnlyHint": True}}, True),
])
def test_a_tool_only_reads_by_its_annotation_else_by_a_reading_verb_in_its_name(spec, reads):
    assert toolscript.search._reads_only(spec) is reads


@needs_vectors
def test_the_tuning_bench_adds_the_sibling_shares_as_search_does():
    bench = load_script("bench/search.py")
    index = SearchIndex(LABEL_CATALOG + AI_CONFIG_CATALOG)
    queries = [{"query": "project_id label_id label_data", "ids": ["plane__update_label"], "kind": "param"},
               {"query": "which prompt does the ai config use?", "ids": ["flags__get_ai_config"], "kind": "paraphrase"}]
    rows = {(r["parameter_coverage"], r["question_read"]): r for r in bench.sibling_rows(index, queries, ["book a flight"])}
    shipped = rows[(toolscript.search._PARAMETER_COVERAGE_BONUS, toolscript.search._QUESTION_READ_BONUS)]
    assert [ids(index.search(q["query"], limit=1)) for q in queries] == [[q["ids"][0]] for q in queries]
    assert shipped["mrr@10"] == pytest.approx(1.0)
    assert rows[(0.0, 0.0)]["mrr@10"] < 1.0


# Round 6 (FU6): a server named by its word as written, or by its whole name.


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


def as_before_round_6(monkeypatch):
    monkeypatch.setattr(toolscript.search, "_server_naming_words", lambda tools, postings, naming: {})
    monkeypatch.setattr(toolscript.search, "_whole_server_names", lambda tools: {})
    # Round 7's server as a whole (_SERVER_WEIGHT) finds browser-tools on its own: not before round 6 either.
    monkeypatch.setattr(toolscript.search, "_SERVER_WEIGHT", 0.0)


@needs_vectors
def test_a_word_of_a_servers_name_names_it_when_only_its_stem_is_shared(monkeypatch):
    query = "I need a red 'regression' tag in plane"
    index = SearchIndex(PLANE_CATALOG)
    assert index._named_servers(query) == frozenset({"plane"})
    assert index._named_servers("list the test plans") == frozenset()  # the stem alone names nothing
    assert all(i.startswith("plane__") for i in ids(index.search(query, limit=3)))
    # Before: "plan" named nothing (its tools are not plane's alone) and a test plan came in.
    as_before_round_6(monkeypatch)
    before = SearchIndex(PLANE_CATALOG)
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
    as_before_round_6(monkeypatch)
    assert ids(SearchIndex(BROWSER_CATALOG).search(query, limit=1)) != ["browser-tools__runAccessibilityAudit"]


@needs_vectors
def test_a_run_together_server_name_is_set_apart_like_its_words():
    index = SearchIndex(BROWSER_CATALOG)
    named = frozenset({"browser-tools"})
    # The set-apart vector drops "browsertools" as it would drop "browser tools".
    assert index._semantic("take a screenshot via browsertools", named) != index._semantic("take a screenshot via browsertools")


@needs_vectors
def test_the_tuning_bench_names_servers_as_search_does_and_without_round_6(monkeypatch):
    # Round 7's server as a whole (_SERVER_WEIGHT) finds browser-tools on its own: off, to see round 6's part.
    monkeypatch.setattr(toolscript.search, "_SERVER_WEIGHT", 0.0)
    bench = load_script("bench/search.py")
    index = SearchIndex(BROWSER_CATALOG)
    query = "is my page accessible, via browsertools"
    queries = [{"query": query, "ids": ["browser-tools__runAccessibilityAudit"], "kind": "paraphrase"}]
    rows = {(r["word"], r["whole"]): r for r in bench.server_naming_rows(index, queries, ["book a flight"])}
    assert rows[(True, True)]["mrr@10"] == 1.0  # first, as search ranks it
    assert ids(index.search(query, limit=1)) == ["browser-tools__runAccessibilityAudit"]
    assert rows[(False, False)]["mrr@10"] < 1.0
    assert rows[(False, True)]["mrr@10"] == 1.0  # the whole name run together is what names it
    assert "browsertools" in index._whole_names  # the index's maps are restored
