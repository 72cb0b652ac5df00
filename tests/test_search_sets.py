"""The tool-search evaluation sets under bench/: their data is well formed, and search keeps its measured quality.

One home for the checks every set shares, parametrized over the sets in
SETS below (directory, the earlier sets its labels may also name, the
recorder's pin table, tool-count bounds, servers the recorder must list or
reject); a check that only one set needs stays a plain test named for it.

The sets, in the order they were made (each set's README logs its runs):
- bench/heldout/ (dev-b): 13 real servers not in the development set
  (bench/eval/), run four times as held-out; tuned on since session 18.
- bench/heldout2/ (dev-c): held-out in session 18, run once (run 1), then
  tuned on (fusion round 2).
- bench/heldout3/ (dev-d): run once to report session 18; its floor holds run 1.
- bench/heldout4/ (dev-e): run once at the start of session 19; its floor
  holds run 1.
- bench/heldout5/ (dev-f): built while held-out 4 was run, run once in
  session 19 (before fusion round 5); its floor holds run 1.
- bench/heldout6/ (dev-g from session 20): built after held-out 5's run, run
  once at the end of session 19 on round 5's ranker; its floor holds run 1.
- bench/heldout7/ (dev-h from then on): built after held-out 6's run, run once at 13:12 UTC on 2026-11-24.
- bench/heldout8/ (dev-i from then on): built after held-out 7's run, run once at 15:02 UTC on 2026-11-24.
- bench/heldout9/ (dev-j from then on): built while held-out 8 waited for its run, run once at 15:46 UTC on
  2026-11-24, the first run with the table tuned on the other sets' requests (VECTORS-V5).
- bench/heldout10/ (dev-k from then on): built after held-out 9's run, from servers in none of the sets above,
  run once at 16:24 UTC on 2026-11-24 with VECTORS-V6 (trained on every set above, never on this one).
- bench/heldout11/ (dev-l from then on): built while held-out 10 became a development set, from servers in none
  of the sets above, run once at 16:47 UTC on 2026-11-24 with VECTORS-V6 unchanged (a second judge of it).
- bench/heldout12/ (dev-m from then on): built while held-out 11 became a development set, from servers in none
  of the sets above, run once at 17:45 UTC on 2026-11-24 with VECTORS-V7 (trained on every set above, never on
  this one).
- bench/heldout13/ (dev-n from then on): built while held-out 12 became a development set, from servers in none
  of the sets above, run once at 18:14 UTC on 2026-11-24 with VECTORS-V7 unchanged (a second judge of it).
- bench/heldout14/ (dev-o from then on): built while held-out 13 waited for its run, from servers in none of the
  sets above (13 npm servers, none on AWS), run once at 19:46 UTC on 2026-11-24 with VECTORS-V8 and the thesaurus
  (neither had seen it).
- bench/heldout15/ (dev-p from then on): built while held-out 14 waited for its run, from servers in none of the
  sets above (12 npm servers, none on AWS), run once at 20:01 UTC on 2026-11-24 with VECTORS-V9 and the thesaurus
  (a second judge of the thesaurus; neither had seen it).
- bench/heldout16/ (dev-q from then on): built while held-out 15 waited for its run, from servers in none of the
  sets above (12 npm servers, none on AWS), run once at 20:37 UTC on 2026-11-24 with VECTORS-V10 and the thesaurus
  (a third judge of the thesaurus; neither had seen it).
- bench/heldout17/ (dev-r from then on): built after held-out 16's run, from servers in none of the sets above
  (10 PyPI and 2 npm servers, none on AWS), run once at 21:41 UTC on 2026-11-24 with VECTORS-V11 and the
  thesaurus (neither had seen it).
- bench/heldout18/ (dev-s from then on): built after held-out 17, from servers in none of the sets above
  (12 PyPI servers, none on AWS), run once at 22:09 UTC on 2026-11-24 with VECTORS-V12 and the thesaurus
  (neither had seen it).
- bench/heldout19/ (dev-t from then on): built after held-out 18, from servers in none of the sets above
  (12 PyPI servers, none on AWS), run once at 22:42 UTC on 2026-11-24 with VECTORS-V13 and the thesaurus
  (neither had seen it).
- bench/heldout20/ (dev-u from then on): built after held-out 19's run, from servers in none of the sets above
  (12 PyPI servers, none on AWS), run once at 00:23 UTC on 2026-11-25 with VECTORS-V14 and the thesaurus
  (neither had seen it).
- bench/heldout21/ (dev-v from then on): built after held-out 20, from servers in none of the sets above
  (12 PyPI servers, none on AWS), run once at 00:55 UTC on 2026-11-25 with VECTORS-V15 and the thesaurus
  (neither had seen it).
- bench/heldout22/: built after held-out 21, from servers in none of the sets above (12 PyPI servers, none on
  AWS); unranked.
A set marked ``unranked`` (the fresh one, before its run) gets format checks
only: no floor, and nothing here builds a SearchIndex on it.
The floors are the hybrid's measured recall@3 minus ~0.02, rounded down;
bench/search.py prints the full figures (recall@1/3/5, MRR@10, nDCG@10 per
kind, for words alone, vectors alone and the hybrid).
"""

import collections
import json
import os

import pytest

from search_sets import BENCH, KINDS, load_catalogs, load_recorder, readme_kind_counts, recall_by_kind, tool_ids

# Per set, in the order the sets were built: the fewest servers; the bounds on
# its tool count (None: not bounded); a server of an earlier set the recorder
# must reject for it, and two of its own the rejection lists; unranked: a set
# nothing may build a SearchIndex on yet.  Derived below from that order: its
# directory; the sets before it (its servers are in none of them, and its
# labels may name their tools); the pin tables of bench/eval/record_catalogs.py
# for those earlier sets.
SETS = {
    "heldout": {
        "min_servers": 10, "tool_bounds": None,
    },
    "heldout2": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "github", "own": ("mongodb", "datadog"),
    },
    "heldout3": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "datadog", "own": ("asana", "cloudwatch"),
    },
    "heldout4": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "asana", "own": ("jenkins", "mapbox"),
    },
    "heldout5": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "jenkins", "own": ("plane", "sonarqube"),
    },
    "heldout6": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "plane", "own": ("paddle", "lara"),
    },
    "heldout7": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "paddle", "own": ("iam", "serper"),
    },
    "heldout8": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "iam", "own": ("sns-sqs", "pubmed"),
    },
    "heldout9": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "sns-sqs", "own": ("azure-devops", "biomcp"),
    },
    "heldout10": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "azure-devops", "own": ("airflow", "meilisearch"),
    },
    "heldout11": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "airflow", "own": ("elasticache", "strava"),
    },
    "heldout12": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "elasticache", "own": ("ida-pro", "appsignals"),
    },
    "heldout13": {
        # 133 tools: below the 150 the earlier sets reached (see its README's "Known biases").
        "min_servers": 12, "tool_bounds": (120, 250), "outsider": "ida-pro", "own": ("memcached", "kubernetes-go"),
    },
    "heldout14": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "memcached", "own": ("azure", "xcodebuild"),
    },
    "heldout15": {
        # 143 tools: below the 150 most earlier sets reached (see its README's "Known biases").
        "min_servers": 12, "tool_bounds": (120, 250), "outsider": "opik", "own": ("gcs", "qase"),
    },
    "heldout16": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "qase", "own": ("chatwork", "vonage"),
    },
    "heldout17": {
        # 122 tools: below the 150 most earlier sets reached (see its README's "Known biases").
        "min_servers": 12, "tool_bounds": (120, 250), "outsider": "chatwork", "own": ("infisical", "meta-ads"),
    },
    "heldout18": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "infisical", "own": ("proxmox", "word"),
    },
    "heldout19": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "proxmox", "own": ("databricks", "mlflow"),
    },
    "heldout20": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "databricks", "own": ("langfuse", "paper-search"),
    },
    "heldout21": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "langfuse", "own": ("hetzner", "ynab"),
    },
    "heldout22": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "hetzner", "own": ("paperless", "woocommerce"),
        "unranked": True,
    },
}
_ORDER = ["eval"] + list(SETS)
for _n, _name in enumerate(_ORDER[1:], start=1):
    SETS[_name]["dir"] = os.path.join(BENCH, _name)
    SETS[_name]["earlier"] = [os.path.join(BENCH, e) for e in _ORDER[:_n]]
    SETS[_name]["earlier_pins"] = ["SERVERS"] + [f"{e.upper()}_SERVERS" for e in _ORDER[1:_n]]

# The sets recorded with bench/eval/record_catalogs.py --set and checked alike
# (README kind table, noise, pins); held-out set 1 predates that format.
LATER_SETS = list(SETS)[1:]


def load_set(name):
    """(the set's catalogs, the earlier sets' catalogs, its queries.json)."""
    directory = SETS[name]["dir"]
    with open(os.path.join(directory, "queries.json"), encoding="utf-8") as f:
        data = json.load(f)
    earlier = [c for d in SETS[name]["earlier"] for c in load_catalogs(d)]
    return load_catalogs(directory), earlier, data


def assert_queries_are_well_formed(queries, set_ids, known_ids, every_tool=True):
    """Each label names a known tool and at least one of the set's; texts are distinct; every set tool is asked
    for (unless not ``every_tool``: a second author's file need not cover the set)."""
    for q in queries:
        assert set(q) == {"query", "ids", "kind"}, q
        assert q["kind"] in KINDS, q
        assert q["query"].strip() == q["query"] and q["query"], q
        assert q["ids"] and len(q["ids"]) == len(set(q["ids"])), q
        assert set(q["ids"]) <= known_ids, q
        assert set(q["ids"]) & set_ids, q  # every query is about a server of this set
    texts = [q["query"].lower() for q in queries]
    assert len(texts) == len(set(texts))
    # Every tool of the set answers at least one query.
    assert not every_tool or set_ids <= {i for q in queries for i in q["ids"]}


def recall_of_set(name, query_files):
    """recall@3 per kind of the set's query files, on an index of the set and every earlier set."""
    assert not SETS[name].get("unranked"), f"{name} is held out unranked: no SearchIndex on it yet"
    directory = SETS[name]["dir"]
    return recall_by_kind([directory] + SETS[name]["earlier"], [os.path.join(directory, f) for f in query_files])


def assert_recall_floors(name, recall, floors):
    low = {kind: round(recall[kind], 3) for kind, floor in floors.items() if recall[kind] < floor}
    assert not low, f"{name} recall@3 below its floors {floors}: {low}"


@pytest.mark.parametrize("name", list(SETS))
def test_catalogs_are_recorded_servers_in_no_earlier_set(name):
    held, earlier, _ = load_set(name)
    assert len(held) >= SETS[name]["min_servers"]
    earlier_servers = {c["server"] for _, c in earlier}
    earlier_packages = {c["package"].rsplit("@", 1)[0] for _, c in earlier}
    for filename, catalog in held:
        assert set(catalog) == {"server", "package", "registry", "recorded", "tools"}, filename
        assert filename == catalog["server"] + ".json"
        assert catalog["registry"] in ("npm", "pypi")
        package, _, version = catalog["package"].rpartition("@")
        assert package and version[:1].isdigit(), catalog["package"]  # an exact version, not a range
        assert catalog["server"] not in earlier_servers and package not in earlier_packages, filename
        assert catalog["tools"], filename
        names = [t["name"] for t in catalog["tools"]]
        assert len(names) == len(set(names)), filename
        for t in catalog["tools"]:
            assert isinstance(t.get("inputSchema"), dict), (filename, t["name"])
    if SETS[name]["tool_bounds"]:
        low, high = SETS[name]["tool_bounds"]
        assert low <= len(tool_ids(held)) <= high
    # Tool ids stay unique across the index of this and the earlier sets the queries run against.
    all_ids = [f"{c['server']}__{t['name']}" for _, c in held + earlier for t in c["tools"]]
    assert len(all_ids) == len(set(all_ids))


@pytest.mark.parametrize("name", LATER_SETS)
def test_catalogs_match_the_recorders_pins(name):
    recorder = load_recorder()
    servers, catalogs_dir = recorder.SETS[name]
    assert os.path.samefile(catalogs_dir, os.path.join(SETS[name]["dir"], "catalogs"))
    earlier = set()
    for table in SETS[name]["earlier_pins"]:
        earlier |= set(getattr(recorder, table))
    assert not set(servers) & earlier
    recorded = {c["server"]: c for _, c in load_catalogs(SETS[name]["dir"])}
    assert set(recorded) == set(servers)
    for server, (registry, package, version, _, _) in servers.items():
        assert recorded[server]["package"] == f"{package}@{version}", server
        assert recorded[server]["registry"] == registry, server


@pytest.mark.parametrize("name", LATER_SETS)
def test_recorder_knows_the_set_and_only_its_servers(name, capsys):
    recorder = load_recorder()
    outsider = SETS[name]["outsider"]  # a server of an earlier set, not of this one
    with pytest.raises(SystemExit) as exc:
        recorder.main(["--set", name, outsider])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    # Rejected as a server outside the set (listing the set's own), not as an unknown --set.
    assert f"unknown server(s) in --set {name}: {outsider}" in err
    assert all(server in err for server in SETS[name]["own"])


@pytest.mark.parametrize("name", LATER_SETS)
def test_queries_are_well_formed(name):
    held, earlier, data = load_set(name)
    assert set(data) == {"queries", "noise"}
    assert_queries_are_well_formed(data["queries"], tool_ids(held), tool_ids(held) | tool_ids(earlier))


SECOND_AUTHORS = [name for name in LATER_SETS if os.path.exists(os.path.join(SETS[name]["dir"], "queries-b.json"))]


@pytest.mark.parametrize("name", SECOND_AUTHORS)
def test_second_authors_queries_are_well_formed(name):
    # The floors count these queries too: a label naming no tool of the index would be a miss nobody can fix.
    held, earlier, _ = load_set(name)
    with open(os.path.join(SETS[name]["dir"], "queries-b.json"), encoding="utf-8") as f:
        data = json.load(f)
    assert set(data) <= {"queries", "noise"} and data["queries"]
    assert_queries_are_well_formed(data["queries"], tool_ids(held), tool_ids(held) | tool_ids(earlier), every_tool=False)


@pytest.mark.parametrize("name", LATER_SETS)
def test_kind_counts_are_the_readmes(name):
    _, _, data = load_set(name)
    kinds = collections.Counter(q["kind"] for q in data["queries"])
    assert readme_kind_counts(SETS[name]["dir"]) == dict(kinds)
    assert sum(kinds.values()) >= 300
    assert kinds["paraphrase"] >= 75 and kinds["task"] >= 75
    assert kinds["direct"] >= 50 and kinds["typo"] >= 25 and kinds["param"] >= 35 and kinds["multi"] >= 20
    # A multi query is answered by tools of more than one server.
    for q in data["queries"]:
        if q["kind"] == "multi":
            assert len({i.split("__", 1)[0] for i in q["ids"]}) >= 2, q


@pytest.mark.parametrize("name", LATER_SETS)
def test_noise_is_present_and_distinct(name):
    _, _, data = load_set(name)
    noise = data["noise"]
    assert len(noise) >= 30 and len(set(noise)) == len(noise)
    assert all(isinstance(n, str) and n.strip() == n and n for n in noise)
    assert not {n.lower() for n in noise} & {q["query"].lower() for q in data["queries"]}


def test_heldout_queries_are_well_formed():
    # Held-out set 1 keeps its noise in queries.json and has no README kind table: its counts are checked here.
    held, earlier, data = load_set("heldout")
    queries, noise = data["queries"], data["noise"]
    assert_queries_are_well_formed(queries, tool_ids(held), tool_ids(held) | tool_ids(earlier))
    kinds = collections.Counter(q["kind"] for q in queries)
    assert len(queries) >= 250
    assert kinds["paraphrase"] >= 50 and kinds["task"] >= 50
    assert all(kinds[k] for k in KINDS)
    assert len(noise) >= 25 and len(set(noise)) == len(noise)
    assert not set(n.lower() for n in noise) & {q["query"].lower() for q in queries}


def test_heldout3_wikipedia_aliases_are_labelled_together():
    # wikipedia-mcp lists each tool twice (NAME and wikipedia_NAME, same description):
    # a query that one answers must list both, or a ranker is marked wrong for a tie.
    _, _, data = load_set("heldout3")
    for q in data["queries"]:
        ids = set(q["ids"])
        for i in ids:
            if i.startswith("wikipedia__"):
                name = i.split("__", 1)[1]
                twin = name[len("wikipedia_"):] if name.startswith("wikipedia_") else "wikipedia_" + name
                assert "wikipedia__" + twin in ids, q


def npm_bin(scratch, executable):
    """Where the recorder's scratch install puts an npm server's executable."""
    return os.path.join(scratch, "npm", "node_modules", ".bin", executable)


def venv_bin(scratch, server, executable):
    """Where the recorder's scratch install puts a PyPI server's executable (one venv per server)."""
    return os.path.join(scratch, "venv-" + server, "bin", executable)


@pytest.fixture
def start_command(tmp_path):
    """server -> the recorder's (executable, args, env) to start it from a scratch install in tmp_path."""
    recorder = load_recorder()
    return lambda server: recorder.command_for(str(tmp_path), server, "127.0.0.1:1")


def test_recorder_starts_heldout3_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    assert start_command("asana")[0] == npm_bin(scratch, "mcp-server-asana")
    exe, args, _ = start_command("duckdb")
    assert exe == venv_bin(scratch, "duckdb", "mcp-server-duckdb")
    assert args == ["--db-path", os.path.join(scratch, "test.duckdb")]
    assert start_command("gmail")[2]["HOME"] == os.path.join(scratch, "home")


@pytest.mark.timeout(120)
def test_recorder_prepares_the_oauth_client_files_gmail_and_calendar_read_at_start(tmp_path):
    # Both held-out-3 servers exit at start-up without an OAuth client file; they only use it when a tool is called.
    recorder = load_recorder()
    recorder.prepare(str(tmp_path))
    home = tmp_path / "home"
    for path in (home / ".gmail-mcp" / "gcp-oauth.keys.json", home / "gcp-oauth.keys.json"):
        client = json.loads(path.read_text())
        assert client["installed"]["client_id"] == "dummy"
    _, _, env = recorder.command_for(str(tmp_path), "google-calendar", "127.0.0.1:1")
    assert env["GOOGLE_OAUTH_CREDENTIALS"] == str(home / "gcp-oauth.keys.json")


def test_recorder_starts_heldout4_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    assert start_command("shortcut")[0] == npm_bin(scratch, "mcp-server-shortcut")
    # PyPI executables named unlike their package come from PYPI_BIN.
    exe, _, env = start_command("mssql")
    assert exe == venv_bin(scratch, "mssql", "mssql_mcp_server")
    assert env["MSSQL_PORT"] == "9"  # a closed local port: no database is reached
    assert start_command("jenkins")[0] == venv_bin(scratch, "jenkins", "mcp-jenkins")


def test_heldout_recall_floor():
    # Since session 18 this set is a second development set (dev-b): its
    # figures were looked at while tuning, so these floors guard against
    # regressions, not for honesty (the latest held-out set is the honest measure).
    # Issue 13's first round (held-out run 4): recall@3 0.785; paraphrase
    # 0.270, task 0.723.  Session 18's fusion (FU: real words reach the
    # vectors as written, the tool vector weighs its name 2 and its parameter
    # names 0.25, a tool only the vectors reach is listed when the query's
    # words reach some tool, a named server's tools gain 0.15) with the third
    # vector table (VECTORS-V3), measured on 155 dev-b + 126 development
    # tools, 335 queries: recall@3 0.821; direct 1.0, typo 1.0, param 1.0,
    # paraphrase 0.413, task 0.771.  Words alone (BM25): 0.761.
    recall = recall_of_set("heldout", ["queries.json"])
    floors = {"all": 0.80, "direct": 0.98, "typo": 0.98, "paraphrase": 0.39, "task": 0.75}
    assert_recall_floors("held-out 1", recall, floors)


# Later sets' floors: the hybrid's recall@3 per kind over both authors' files
# (a query in both counted once), minus ~0.02, rounded down.  Each comment
# holds the figures the floors came from.
LATER_FLOORS = {
    # 551 distinct queries, 464-tool index.  Run 1 (held-out): all 0.744, direct 1.0, typo 0.977, param
    # 0.946, paraphrase 0.494, task 0.715.  Fusion round 2 (dev-c, tuned on): all 0.757, direct 1.0,
    # typo 0.977, param 0.964, paraphrase 0.522, task 0.722.
    "heldout2": {"all": 0.73, "direct": 0.98, "typo": 0.95, "param": 0.94, "paraphrase": 0.50, "task": 0.70},
    # 510 distinct queries, 636-tool index.  Run 1: all 0.759, direct 0.988, typo 0.976, param 0.962,
    # paraphrase 0.562, task 0.701, multi 0.80.
    "heldout3": {"all": 0.73, "direct": 0.96, "typo": 0.95, "param": 0.94, "paraphrase": 0.54, "task": 0.68},
    # 613 distinct queries, 883-tool index.  Run 1: all 0.715, direct 0.989, typo 1.0, param 0.971,
    # paraphrase 0.408, task 0.734, multi 0.862.
    "heldout4": {"all": 0.69, "direct": 0.96, "typo": 0.97, "param": 0.95, "paraphrase": 0.38, "task": 0.71},
    # 590 queries, 1,121-tool index.  Run 1: all 0.746, direct 0.990, typo 0.956, param 0.918,
    # paraphrase 0.529, task 0.696, multi 0.853.
    "heldout5": {"all": 0.72, "direct": 0.96, "typo": 0.93, "param": 0.89, "paraphrase": 0.50, "task": 0.67},
    # 601 distinct queries, 1,366-tool index.  Run 1: all 0.667, direct 1.0, typo 0.958, param 1.0,
    # paraphrase 0.350, task 0.577, multi 0.900.
    "heldout6": {"all": 0.64, "direct": 0.98, "typo": 0.93, "param": 0.98, "paraphrase": 0.33, "task": 0.55},
    # 541 distinct queries, 1,529-tool index.  Run 1: all 0.739, direct 0.988, typo 0.977, param 1.0,
    # paraphrase 0.582, task 0.617, multi 0.857.
    "heldout7": {"all": 0.71, "direct": 0.96, "typo": 0.95, "param": 0.98, "paraphrase": 0.55, "task": 0.59},
    # 568 distinct queries, 1,731-tool index.  Run 1: all 0.687, direct 1.0, typo 1.0, param 0.984,
    # paraphrase 0.437, task 0.600, multi 0.862.
    "heldout8": {"all": 0.66, "direct": 0.97, "typo": 0.97, "param": 0.95, "paraphrase": 0.41, "task": 0.57},
    # 557 distinct queries, 1,956-tool index.  Run 1 (VECTORS-V5): all 0.770, direct 1.0, typo 1.0, param 1.0,
    # paraphrase 0.534, task 0.763, multi 0.929.
    "heldout9": {"all": 0.74, "direct": 0.97, "typo": 0.97, "param": 0.97, "paraphrase": 0.50, "task": 0.73},
    # 514 distinct queries, 2,167-tool index.  Run 1 (VECTORS-V6): all 0.823, direct 1.0, typo 0.975, param 1.0,
    # paraphrase 0.676, task 0.782, multi 0.963.
    "heldout10": {"all": 0.79, "direct": 0.97, "typo": 0.94, "param": 0.97, "paraphrase": 0.64, "task": 0.75},
    # 518 distinct queries, 2,383-tool index.  Run 1 (VECTORS-V6): all 0.805, direct 1.0, typo 0.951, param 1.0,
    # paraphrase 0.602, task 0.812, multi 0.960.
    "heldout11": {"all": 0.77, "direct": 0.97, "typo": 0.92, "param": 0.97, "paraphrase": 0.57, "task": 0.78},
    # 597 distinct queries, 2,589-tool index.  Run 1 (VECTORS-V7): all 0.774, direct 1.0, typo 0.977, param 1.0,
    # paraphrase 0.495, task 0.791, multi 0.958.
    "heldout12": {"all": 0.74, "direct": 0.97, "typo": 0.94, "param": 0.97, "paraphrase": 0.46, "task": 0.76},
    # 520 distinct queries, 2,722-tool index.  Run 1 (VECTORS-V7): all 0.835, direct 1.0, typo 1.0, param 1.0,
    # paraphrase 0.661, task 0.797, multi 1.0.
    "heldout13": {"all": 0.80, "direct": 0.97, "typo": 0.95, "param": 0.97, "paraphrase": 0.63, "task": 0.77},
    # 553 distinct queries, 2,922-tool index.  Run 1 (VECTORS-V8 and the thesaurus): all 0.805, direct 1.0,
    # typo 1.0, param 1.0, paraphrase 0.597, task 0.775, multi 0.960.
    "heldout14": {"all": 0.77, "direct": 0.97, "typo": 0.97, "param": 0.97, "paraphrase": 0.56, "task": 0.74},
    # 491 distinct queries, 3,065-tool index.  Run 1 (VECTORS-V9 and the thesaurus): all 0.839, direct 0.988,
    # typo 1.0, param 0.933, paraphrase 0.695, task 0.780, multi 1.0.
    "heldout15": {"all": 0.81, "direct": 0.95, "typo": 0.97, "param": 0.90, "paraphrase": 0.66, "task": 0.75},
    # 498 distinct queries, 3,227-tool index.  Run 1 (VECTORS-V10 and the thesaurus): all 0.809, direct 1.0,
    # typo 1.0, param 0.981, paraphrase 0.649, task 0.726, multi 0.960.
    "heldout16": {"all": 0.78, "direct": 0.97, "typo": 0.97, "param": 0.95, "paraphrase": 0.62, "task": 0.70},
    # 489 distinct queries, 3,349-tool index.  Run 1 (VECTORS-V11 and the thesaurus): all 0.865, direct 1.0,
    # typo 1.0, param 0.963, paraphrase 0.752, task 0.814, multi 1.0.
    "heldout17": {"all": 0.83, "direct": 0.97, "typo": 0.97, "param": 0.93, "paraphrase": 0.72, "task": 0.78},
    # 599 distinct queries, 3,577-tool index.  Run 1 (VECTORS-V12 and the thesaurus): all 0.815, direct 0.989,
    # typo 0.980, param 0.958, paraphrase 0.608, task 0.806, multi 0.963.
    "heldout18": {"all": 0.78, "direct": 0.95, "typo": 0.95, "param": 0.92, "paraphrase": 0.57, "task": 0.77},
    # 536 distinct queries, 3,821-tool index.  Run 1 (VECTORS-V13 and the thesaurus): all 0.776, direct 1.0,
    # typo 1.0, param 0.904, paraphrase 0.575, task 0.822, multi 0.913.
    "heldout19": {"all": 0.74, "direct": 0.97, "typo": 0.97, "param": 0.87, "paraphrase": 0.54, "task": 0.79},
    # 569 distinct queries, 4,040-tool index.  Run 1 (VECTORS-V14 and the thesaurus): all 0.830, direct 0.990,
    # typo 0.949, param 0.980, paraphrase 0.712, task 0.792, multi 0.923.
    "heldout20": {"all": 0.79, "direct": 0.95, "typo": 0.91, "param": 0.94, "paraphrase": 0.68, "task": 0.76},
    # 545 distinct queries, 4,283-tool index.  Run 1 (VECTORS-V15 and the thesaurus): all 0.855, direct 0.991,
    # typo 1.0, param 0.943, paraphrase 0.780, task 0.761, multi 0.920.
    "heldout21": {"all": 0.82, "direct": 0.95, "typo": 0.96, "param": 0.90, "paraphrase": 0.74, "task": 0.72},
}


@pytest.mark.parametrize("name", sorted(LATER_FLOORS))
def test_later_set_recall_floor(name):
    recall = recall_of_set(name, ["queries.json", "queries-b.json"])  # both authors' files
    assert_recall_floors(name, recall, LATER_FLOORS[name])


def test_an_unranked_set_cannot_be_ranked_here(monkeypatch):
    # A fresh set is marked unranked until the round that reports on it: a floor added by mistake fails
    # before any SearchIndex is built on it.  Every set marked so has no floor; the guard itself is proven on
    # the latest set marked unranked again (between two rounds every set may have been run once).
    unranked = [name for name, entry in SETS.items() if entry.get("unranked")]
    assert not set(unranked) & set(LATER_FLOORS)
    latest = LATER_SETS[-1]
    monkeypatch.setitem(SETS, latest, dict(SETS[latest], unranked=True))
    with pytest.raises(AssertionError, match="held out unranked"):
        recall_of_set(latest, ["queries.json"])


def assert_placeholder_aws_credentials(start_command, servers):
    """The awslabs servers get placeholder credentials, never the caller's own."""
    for server in servers:
        env = start_command(server)[2]
        assert env["AWS_ACCESS_KEY_ID"] == "dummy" and env["AWS_SECRET_ACCESS_KEY"] == "dummy", server


def test_recorder_starts_heldout5_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    assert start_command("plane")[0] == npm_bin(scratch, "plane-mcp-server")
    exe, args, _ = start_command("argocd")
    assert exe == npm_bin(scratch, "argocd-mcp") and args == ["stdio"]  # transport subcommand: stdio, sse, http
    assert start_command("powerpoint")[0] == venv_bin(scratch, "powerpoint", "ppt_mcp_server")
    # MotherDuck's default database is its cloud service; a local DuckDB file needs no backend.
    exe, args, _ = start_command("motherduck")
    assert exe == venv_bin(scratch, "motherduck", "mcp-server-motherduck")
    assert args == ["--db-path", os.path.join(scratch, "motherduck.duckdb")]
    assert start_command("sonarqube")[2]["SONARQUBE_URL"] == "http://127.0.0.1:9"  # a closed local port


def test_recorder_starts_heldout6_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    # @digitalocean/mcp's executable is plain "mcp"; its tools are limited to one service (droplets).
    exe, args, _ = start_command("digitalocean")
    assert exe == npm_bin(scratch, "mcp") and args == ["--services", "droplets"]
    # Paddle lists its read-only tools only (41; the default, non-destructive, is 63).
    assert "--tools=read-only" in start_command("paddle")[1]
    # The executeautomation database server opens a SQLite file of the scratch directory: no database server.
    exe, args, _ = start_command("database")
    assert exe == npm_bin(scratch, "ea-database-server") and args == [os.path.join(scratch, "ea-database.sqlite")]
    exe, args, _ = start_command("email")
    assert exe == venv_bin(scratch, "email", "mcp-email-server") and args == ["stdio"]
    assert start_command("tree-sitter")[0] == venv_bin(scratch, "tree-sitter", "mcp-server-tree-sitter")


def test_recorder_starts_heldout7_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    # Bright Data's executable is named "mcp" like DigitalOcean's (one .bin/mcp per npm prefix): its own script.
    exe, _, env = start_command("brightdata")
    assert os.path.normpath(exe) == os.path.join(scratch, "npm", "node_modules", "@brightdata", "mcp", "server.js")
    assert env["API_TOKEN"] == "dummy"
    # Microsoft 365 lists its To Do and Planner tools only (33; every preset lists 188).
    exe, args, _ = start_command("ms-365")
    assert exe == npm_bin(scratch, "ms-365-mcp-server") and args == ["--preset", "tasks"]
    assert start_command("square")[1] == ["start"]
    assert start_command("ecs")[0] == venv_bin(scratch, "ecs", "ecs-mcp-server")
    assert start_command("weather")[0] == venv_bin(scratch, "weather", "mcp_weather_server")
    assert_placeholder_aws_credentials(start_command, ("iam", "ecs", "cloudtrail"))


def test_recorder_starts_heldout8_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    # Vapi's executable is "mcp-server" (as Mapbox's is); AMap's "mcp-amap".
    assert start_command("vapi")[0] == npm_bin(scratch, "mcp-server")
    assert start_command("amap")[0] == npm_bin(scratch, "mcp-amap")
    assert start_command("neo4j-modeling")[0] == venv_bin(scratch, "neo4j-modeling", "mcp-neo4j-data-modeling")
    # Odoo and OpenSearch point at a closed local port: no backend is reached.
    assert start_command("odoo")[2]["ODOO_URL"] == "http://127.0.0.1:9"
    assert start_command("opensearch")[2]["OPENSEARCH_URL"] == "http://127.0.0.1:9"
    assert_placeholder_aws_credentials(start_command, ("sns-sqs", "aws-support", "redshift"))


def test_recorder_starts_heldout9_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    # Currents' executable is plain "mcp" (as DigitalOcean's is); BioMCP's is "biomcp" with a "run" subcommand.
    assert start_command("currents")[0] == npm_bin(scratch, "mcp")
    assert start_command("biomcp")[:2] == (venv_bin(scratch, "biomcp", "biomcp"), ["run"])
    assert start_command("azure-devops")[0] == npm_bin(scratch, "mcp-server-azure-devops")
    assert start_command("gcp-observability")[0] == npm_bin(scratch, "observability-mcp")
    # Azure DevOps and Valkey point at a closed local port: no backend is reached.
    assert start_command("azure-devops")[2]["AZURE_DEVOPS_ORG_URL"].startswith("http://127.0.0.1:9/")
    assert start_command("valkey")[2]["VALKEY_PORT"] == "9"
    assert start_command("taskmanager")[2]["TASK_MANAGER_FILE_PATH"] == os.path.join(scratch, "files", "tasks.json")
    assert_placeholder_aws_credentials(start_command, ("valkey", "aws-location"))


@pytest.mark.timeout(120)
def test_recorder_prepares_the_aws_profile_the_sns_sqs_server_opens_at_start(tmp_path):
    # awslabs.amazon-sns-sqs-mcp-server exits at start-up when the profile "default" does not exist.
    recorder = load_recorder()
    recorder.prepare(str(tmp_path))
    env = recorder.command_for(str(tmp_path), "sns-sqs", "127.0.0.1:1")[2]
    assert env["AWS_CONFIG_FILE"] == str(tmp_path / "aws-config")
    config = (tmp_path / "aws-config").read_text()
    assert config.startswith("[default]\n") and "region = us-east-1" in config
    assert "aws_secret_access_key" not in config  # a region only: the credentials stay placeholders in the env


def test_recorder_starts_heldout10_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    # Cloudinary's and MUI's executables are both named "mcp" (one .bin/mcp per npm prefix): their own scripts.
    exe, args, _ = start_command("cloudinary")
    assert os.path.normpath(exe) == os.path.join(scratch, "npm", "node_modules", "@cloudinary",
                                                 "asset-management-mcp", "bin", "mcp-server.js")
    assert args == ["start"]
    assert os.path.normpath(start_command("mui")[0]) == os.path.join(scratch, "npm", "node_modules", "@mui", "mcp",
                                                                    "stdio.js")
    assert start_command("mastra-docs")[0] == npm_bin(scratch, "mcp-docs-server")
    assert start_command("airflow")[0] == venv_bin(scratch, "airflow", "mcp-server-apache-airflow")
    # Airflow, Meilisearch, InfluxDB and MiniMax point at a closed local port: no backend is reached.
    assert start_command("airflow")[2]["AIRFLOW_HOST"] == "http://127.0.0.1:9"
    assert start_command("meilisearch")[2]["MEILI_HTTP_ADDR"] == "http://127.0.0.1:9"
    assert start_command("influxdb")[2]["INFLUXDB_URL"] == "http://127.0.0.1:9"
    assert start_command("minimax")[2]["MINIMAX_API_HOST"] == "http://127.0.0.1:9"
    # nx-mcp gets the scratch git repository as its workspace.
    assert start_command("nx")[1] == [os.path.join(scratch, "repo")]
    # Amazon MQ opens the AWS profile "default" at start-up, as SNS/SQS does: the scratch profile, placeholder keys.
    env = start_command("amazon-mq")[2]
    assert env["AWS_CONFIG_FILE"] == os.path.join(scratch, "aws-config")
    assert env["AWS_ACCESS_KEY_ID"] == "dummy" and env["AWS_SECRET_ACCESS_KEY"] == "dummy"


def test_recorder_starts_heldout11_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    assert start_command("baidu-map")[0] == npm_bin(scratch, "mcp-server-baidu-map")
    assert start_command("godot")[0] == npm_bin(scratch, "godot-mcp")
    assert start_command("miro")[:2] == (npm_bin(scratch, "mcp-miro"), ["--token", "dummy"])
    assert start_command("strava")[0] == npm_bin(scratch, "strava-mcp-server")
    assert start_command("astra-db")[0] == npm_bin(scratch, "astra-db-mcp")
    assert start_command("mysql")[0] == venv_bin(scratch, "mysql", "mysql_mcp_server")
    assert start_command("es-search")[0] == venv_bin(scratch, "es-search", "elasticsearch-mcp-server")
    # Firebase reads the throwaway service-account file prepare() writes; nothing reaches Google.
    exe, _, env = start_command("firebase")
    assert exe == npm_bin(scratch, "firebase-mcp")
    assert env["SERVICE_ACCOUNT_KEY_PATH"] == os.path.join(scratch, "service-account.json")
    # MySQL, Elasticsearch and Astra DB point at a closed local port: no backend is reached.
    assert start_command("mysql")[2]["MYSQL_PORT"] == "9"
    assert start_command("es-search")[2]["ELASTICSEARCH_HOSTS"] == "http://127.0.0.1:9"
    assert start_command("astra-db")[2]["ASTRA_DB_API_ENDPOINT"] == "http://127.0.0.1:9"
    assert_placeholder_aws_credentials(start_command, ("aws-serverless", "elasticache", "aws-dataprocessing"))


def test_recorder_starts_heldout12_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    assert start_command("codacy")[0] == npm_bin(scratch, "codacy-mcp-server")
    assert start_command("jira")[0] == npm_bin(scratch, "mcp-atlassian-jira")
    assert start_command("next-devtools")[0] == npm_bin(scratch, "next-devtools-mcp")
    assert start_command("omnifocus")[0] == npm_bin(scratch, "omnifocus-mcp")
    # Prisma's MCP server is a subcommand of its CLI.
    assert start_command("prisma")[:2] == (npm_bin(scratch, "prisma"), ["mcp"])
    assert start_command("ida-pro")[0] == venv_bin(scratch, "ida-pro", "ida-pro-mcp")
    assert start_command("memgraph")[0] == venv_bin(scratch, "memgraph", "mcp-memgraph")
    # Memgraph points at a closed local port: no database is reached.
    assert start_command("memgraph")[2]["MEMGRAPH_URL"] == "bolt://127.0.0.1:9"
    assert_placeholder_aws_credentials(start_command, ("appsync", "s3-tables", "appsignals", "documentdb", "timestream-influxdb"))


def test_recorder_installs_ida_pro_with_the_mcp_1_sdk():
    # ida-pro-mcp 1.4.0 imports mcp.server.fastmcp, which mcp 2.x removed: without the pin it exits at start.
    assert "mcp<2" in load_recorder().PYPI_EXTRA["ida-pro-mcp"]


def test_recorder_starts_heldout13_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    assert start_command("clarity")[:2] == (npm_bin(scratch, "clarity-mcp-server"), ["--clarity_api_token", "dummy"])
    assert start_command("playwright-ea")[0] == npm_bin(scratch, "playwright-mcp-server")
    assert start_command("postgres-henkey")[0] == npm_bin(scratch, "postgres-mcp")
    assert start_command("memcached")[0] == venv_bin(scratch, "memcached", "awslabs.memcached-mcp-server")
    # Kubernetes, Postgres and memcached point at closed local ports: no backend is reached.
    exe, args, _ = start_command("kubernetes-go")
    assert exe == npm_bin(scratch, "kubernetes-mcp-server") and args == ["--kubeconfig", os.path.join(scratch, "kubeconfig")]
    assert "127.0.0.1:9" in start_command("postgres-henkey")[1][1]
    assert start_command("memcached")[2]["MEMCACHED_PORT"] == "9"
    assert_placeholder_aws_credentials(start_command, ("keyspaces", "neptune", "aurora-dsql", "finch", "memcached",
                                                       "aurora-postgres", "sagemaker-ai", "wa-security"))


def test_recorder_starts_heldout14_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    # Three servers are a subcommand of a bigger CLI: without it they print help or start something else.
    assert start_command("azure")[:2] == (npm_bin(scratch, "azmcp"), ["server", "start"])
    assert start_command("convex")[:2] == (npm_bin(scratch, "convex"), ["mcp", "start"])
    assert start_command("xcodebuild")[:2] == (npm_bin(scratch, "xcodebuildmcp"), ["mcp"])
    # .bin/mcp is a name many packages take: ESLint's server is started by its own path.
    assert start_command("eslint")[0] == npm_bin(scratch, "../@eslint/mcp/src/mcp-cli.js")
    assert start_command("pdf")[:2] == (npm_bin(scratch, "mcp-pdf-server"), ["--stdio"])
    # Opik points at a closed local port and Search Console at the placeholder service account: no backend.
    assert start_command("opik")[2]["OPIK_API_BASE_URL"] == "http://127.0.0.1:9/api"
    env = start_command("search-console")[2]
    assert env["GOOGLE_APPLICATION_CREDENTIALS"] == os.path.join(scratch, "service-account.json")
    assert start_command("shrimp-tasks")[2]["DATA_DIR"] == os.path.join(scratch, "shrimp-data")


def test_recorder_starts_heldout16_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    # Claude Code's MCP server is a subcommand of its CLI: without it the CLI starts an interactive session.
    assert start_command("claude-code")[:2] == (npm_bin(scratch, "claude"), ["mcp", "serve"])
    # .bin/mcp-server and .bin/redis are names other packages take: these start by their own paths.
    assert start_command("chatwork")[0] == npm_bin(scratch, "../@chatwork/mcp-server/dist/index.js")
    assert start_command("redis-gongrzhe")[0] == npm_bin(scratch, "../@gongrzhe/server-redis-mcp/build/index.js")
    assert start_command("mysql-f4")[0] == npm_bin(scratch, "../@f4ww4z/mcp-mysql-server/build/index.js")
    # MySQL points at a closed local port and Redis at the recorder's stand-in: no backend is reached.
    env = start_command("mysql-f4")[2]
    assert (env["MYSQL_HOST"], env["MYSQL_PORT"]) == ("127.0.0.1", "9")
    assert start_command("redis-gongrzhe")[1] == ["redis://127.0.0.1:1"]
    # freee and Contentful exit at start without credentials: placeholders, never the caller's own.
    assert start_command("freee")[2]["FREEE_CLIENT_SECRET"] == "dummy"
    assert start_command("contentful")[2]["CONTENTFUL_MANAGEMENT_ACCESS_TOKEN"] == "dummy"


def test_recorder_starts_heldout17_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    # .bin/mcp is a name several packages take: Infisical's and Magic UI's servers start by their own paths.
    assert start_command("infisical")[0] == npm_bin(scratch, "../@infisical/mcp/dist/index.js")
    assert start_command("magicui")[0] == npm_bin(scratch, "../@magicuidesign/mcp/dist/server.js")
    # Serena's MCP server is a subcommand of its CLI; kubectl-mcp-tool's executable is not its package name.
    exe, args, _ = start_command("serena")
    assert exe == venv_bin(scratch, "serena", "serena") and args[:3] == ["start-mcp-server", "--transport", "stdio"]
    assert start_command("kubectl")[0] == venv_bin(scratch, "kubectl", "kubectl-mcp")
    # Infisical, kubectl and the SQLAlchemy bridge point at closed local ports or a scratch file: no backend.
    assert start_command("infisical")[2]["INFISICAL_HOST_URL"] == "http://127.0.0.1:9"
    assert start_command("kubectl")[2]["KUBECONFIG"] == os.path.join(scratch, "kubeconfig")
    assert start_command("alchemy")[2]["DB_URL"] == "sqlite:///" + os.path.join(scratch, "alchemy.db")
    # These exit at start with the MCP 2 SDK (or bibtexparser 2): the recorder installs the older ones.
    extra = load_recorder().PYPI_EXTRA
    for package in ("mcp-text-editor", "mcp-server-pacman", "skydeckai-code", "mcp-scholarly"):
        assert "mcp<2" in extra[package], package
    assert "bibtexparser<2" in extra["mcp-scholarly"]


def test_recorder_starts_heldout18_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    # Office-Word's executable is not its package name; Basic Memory's MCP server is a subcommand of its CLI.
    assert start_command("word")[0] == venv_bin(scratch, "word", "word_mcp_server")
    assert start_command("basic-memory")[:2] == (venv_bin(scratch, "basic-memory", "basic-memory"), ["mcp"])
    # Proxmox, Redmine and GreptimeDB point at closed local ports: no backend is reached.
    assert start_command("proxmox")[2]["PROXMOX_HOST"] == "127.0.0.1" and start_command("proxmox")[2]["PROXMOX_PORT"] == "9"
    # proxmox-mcp-plus refuses to start with verify_ssl off ("Insecure TLS configuration blocked").
    assert start_command("proxmox")[2]["PROXMOX_VERIFY_SSL"] == "true"
    assert start_command("redmine")[2]["REDMINE_URL"] == "http://127.0.0.1:9"
    assert start_command("greptime")[2]["GREPTIMEDB_PORT"] == "9"
    # These exit at start with the MCP 2 SDK: the recorder installs the older one.
    extra = load_recorder().PYPI_EXTRA
    for package in ("uv-mcp", "mcp-hn", "mcp-simple-pubmed"):
        assert "mcp<2" in extra[package], package
    assert "pydantic-settings" in extra["mcp-simple-pubmed"]


def test_recorder_makes_the_venv_of_a_python_3_12_server_with_that_python(tmp_path, monkeypatch):
    # kagimcp, mcp-hn and basic-memory publish no release for Python < 3.12: pip on the recorder's
    # own Python finds none, so their venv is made with the interpreter PYPI_PYTHON names.
    recorder = load_recorder()
    calls = []
    monkeypatch.setattr(recorder.subprocess, "run", lambda cmd, **kw: calls.append(cmd))
    recorder.install(str(tmp_path), ["kagi", "uv"])
    venvs = {cmd[-1]: cmd[0] for cmd in calls if cmd[1:3] == ["-m", "venv"]}
    assert venvs[os.path.join(str(tmp_path), "venv-kagi")] == "python3.12"
    assert venvs[os.path.join(str(tmp_path), "venv-uv")] == recorder.sys.executable
    assert [os.path.join(str(tmp_path), "venv-kagi", "bin", "python"), "-m", "pip", "install", "--quiet",
            "--disable-pip-version-check", "kagimcp==1.0.2"] in calls


def test_recorder_starts_heldout19_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    # The ServiceNow fork's executable is not its package name; Ansible's MCP server is a subcommand.
    assert start_command("servicenow")[0] == venv_bin(scratch, "servicenow", "mcp-server-servicenow")
    assert start_command("ansible")[:2] == (venv_bin(scratch, "ansible", "ansible-mcp"), ["serve", "--stdio"])
    # Backends are a closed local port: no server reaches a real one.
    assert start_command("databricks")[2]["DATABRICKS_HOST"] == "http://127.0.0.1:9"
    assert start_command("mlflow")[2]["MLFLOW_TRACKING_URI"] == "http://127.0.0.1:9"
    assert start_command("gitea")[2]["GITEA_URL"] == "http://127.0.0.1:9"
    assert start_command("couchbase-guru")[2]["CB_AGENT_BASE_URL"] == "http://127.0.0.1:9"
    recorder = load_recorder()
    # These exit at start with the MCP 2 SDK: the recorder installs the older one.
    for package in ("databricks-mcp-server", "mcp-ollama", "toggl-mcp", "iflow-mcp_mcp-server-servicenow", "ansible-mcp"):
        assert "mcp<2" in recorder.PYPI_EXTRA[package], package
    # Mattermost's server needs its [mcp] extra (fastmcp); FreeCAD's and Ansible's need Python 3.12.
    assert "mattermost-mcp[mcp]" in recorder.PYPI_EXTRA["mattermost-mcp"]
    assert recorder.PYPI_PYTHON["freecad-mcp"] == recorder.PYPI_PYTHON["ansible-mcp"] == "python3.12"


def test_recorder_starts_heldout20_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    # excel-mcp-server serves stdio only when asked; mcp-gsuite reads the files prepare() writes.
    assert start_command("excel-py")[:2] == (venv_bin(scratch, "excel-py", "excel-mcp-server"), ["stdio"])
    exe, args, _ = start_command("gsuite")
    assert exe == venv_bin(scratch, "gsuite", "mcp-gsuite")
    assert args == ["--gauth-file", os.path.join(scratch, "gauth.json"), "--accounts-file",
                    os.path.join(scratch, "accounts.json"), "--credentials-dir", os.path.join(scratch, "files")]
    # Backends are a closed local port: no server reaches a real one.
    assert start_command("langfuse")[2]["LANGFUSE_HOST"] == "http://127.0.0.1:9"
    assert start_command("timeplus")[2]["TIMEPLUS_PORT"] == "9"
    assert start_command("cli")[2]["ALLOWED_DIR"] == os.path.join(scratch, "repo")
    recorder = load_recorder()
    # These exit at start with the MCP 2 SDK: the recorder installs the older one.
    for package in ("mcp-gsuite", "mcp-timeplus", "paper-search-mcp", "cli-mcp-server"):
        assert "mcp<2" in recorder.PYPI_EXTRA[package], package
    # mcp-gsuite and mcp-timeplus publish no release for Python < 3.13.
    assert recorder.PYPI_PYTHON["mcp-gsuite"] == recorder.PYPI_PYTHON["mcp-timeplus"] == "python3.13"


def test_recorder_prepares_the_oauth_files_gsuite_reads_at_start(tmp_path):
    # mcp-gsuite exits at start-up without its OAuth client file and account list; it only uses them on a call.
    recorder = load_recorder()
    recorder.prepare(str(tmp_path))
    client = json.loads((tmp_path / "gauth.json").read_text())
    assert client["web"]["client_id"] == "dummy"
    assert client["web"]["token_uri"].startswith("http://127.0.0.1:9")
    accounts = json.loads((tmp_path / "accounts.json").read_text())
    assert accounts["accounts"][0]["email"] == "dummy@example.com"


def test_recorder_starts_heldout21_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    # The Pi-hole fork's executable is not its package name; Vectara serves SSE unless told stdio;
    # the Zotero API server's MCP server is a subcommand.
    assert start_command("pihole")[0] == venv_bin(scratch, "pihole", "pihole-mcp-server")
    assert start_command("vectara")[:2] == (venv_bin(scratch, "vectara", "vectara-mcp"), ["--transport", "stdio"])
    assert start_command("zotero-api")[:2] == (venv_bin(scratch, "zotero-api", "zotero-api-mcp"), ["serve"])
    # Backends are a closed local port: no server reaches a real one.
    assert start_command("canvas")[2]["CANVAS_BASE_URL"] == "http://127.0.0.1:9"
    assert start_command("adx")[2]["ADX_CLUSTER_URL"] == "http://127.0.0.1:9"
    assert start_command("pihole")[2]["PIHOLE_URL"] == "http://127.0.0.1:9/"
    recorder = load_recorder()
    # These exit at start with the MCP 2 SDK: the recorder installs the older one.
    for package in ("vectara-mcp", "mcp-hetzner", "iflow-mcp_sbarbett-pihole-mcp-server", "mcp-chess", "fda-mcp"):
        assert "mcp<2" in recorder.PYPI_EXTRA[package], package
    # The Pi-hole fork publishes no release for Python < 3.13.
    assert recorder.PYPI_PYTHON["iflow-mcp_sbarbett-pihole-mcp-server"] == "python3.13"
