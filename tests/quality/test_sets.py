"""The search evaluation sets (bench/search/sets/): their data is well formed, and their table says the truth.

One home for the checks every set shares, parametrized over the sets of
sets.json (through bench/evalsets.py) with the few facts of each set kept in
SETS below; a check that only one set needs stays a plain test named for it.
A held-out-unseen set gets these format checks only: nothing in tests/ or
bench/ ranks it by default (checked here).  The quality floors are
tests/quality/test_floors.py's.
"""

import collections
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO_ROOT
from search_sets import KINDS, evalsets, load_catalogs, load_recorder, readme_kind_counts, tool_ids

# Per set after set00, in the order the sets were built: the fewest servers; the bounds on its tool
# count (None: not bounded); a server of an earlier set the recorder must reject for it, and two of
# its own the rejection lists.  Derived below from that order: its directory; the sets before it (its
# servers are in none of them, and its labels may name their tools); the pin tables of
# bench/search/record_catalogs.py for those earlier sets.
SETS = {
    "set01": {
        "min_servers": 10, "tool_bounds": None,
    },
    "set02": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "github", "own": ("mongodb", "datadog"),
    },
    "set03": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "datadog", "own": ("asana", "cloudwatch"),
    },
    "set04": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "asana", "own": ("jenkins", "mapbox"),
    },
    "set05": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "jenkins", "own": ("plane", "sonarqube"),
    },
    "set06": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "plane", "own": ("paddle", "lara"),
    },
    "set07": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "paddle", "own": ("iam", "serper"),
    },
    "set08": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "iam", "own": ("sns-sqs", "pubmed"),
    },
    "set09": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "sns-sqs", "own": ("azure-devops", "biomcp"),
    },
    "set10": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "azure-devops", "own": ("airflow", "meilisearch"),
    },
    "set11": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "airflow", "own": ("elasticache", "strava"),
    },
    "set12": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "elasticache", "own": ("ida-pro", "appsignals"),
    },
    "set13": {
        # 133 tools: below the 150 the earlier sets reached (see its README's "Known biases").
        "min_servers": 12, "tool_bounds": (120, 250), "outsider": "ida-pro", "own": ("memcached", "kubernetes-go"),
    },
    "set14": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "memcached", "own": ("azure", "xcodebuild"),
    },
    "set15": {
        # 143 tools: below the 150 most earlier sets reached (see its README's "Known biases").
        "min_servers": 12, "tool_bounds": (120, 250), "outsider": "opik", "own": ("gcs", "qase"),
    },
    "set16": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "qase", "own": ("chatwork", "vonage"),
    },
    "set17": {
        # 122 tools: below the 150 most earlier sets reached (see its README's "Known biases").
        "min_servers": 12, "tool_bounds": (120, 250), "outsider": "chatwork", "own": ("infisical", "meta-ads"),
    },
    "set18": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "infisical", "own": ("proxmox", "word"),
    },
    "set19": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "proxmox", "own": ("databricks", "mlflow"),
    },
    "set20": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "databricks", "own": ("langfuse", "paper-search"),
    },
    "set21": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "langfuse", "own": ("hetzner", "ynab"),
    },
    "set22": {
        "min_servers": 12, "tool_bounds": (150, 250), "outsider": "hetzner", "own": ("paperless", "woocommerce"),
    },
}
for _name in SETS:
    SETS[_name]["dir"] = evalsets.directory(_name)
    SETS[_name]["earlier"] = [evalsets.directory(e) for e in evalsets.earlier(_name)]
    SETS[_name]["earlier_pins"] = ["SERVERS"] + [f"{e.upper()}_SERVERS" for e in evalsets.earlier(_name)[1:]]

# The sets recorded with bench/search/record_catalogs.py --set and checked alike
# (README kind table, noise, pins); set01 predates that format.
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


def test_set01_queries_are_well_formed():
    # set01 keeps its noise in queries.json and has no README kind table: its counts are checked here.
    held, earlier, data = load_set("set01")
    queries, noise = data["queries"], data["noise"]
    assert_queries_are_well_formed(queries, tool_ids(held), tool_ids(held) | tool_ids(earlier))
    kinds = collections.Counter(q["kind"] for q in queries)
    assert len(queries) >= 250
    assert kinds["paraphrase"] >= 50 and kinds["task"] >= 50
    assert all(kinds[k] for k in KINDS)
    assert len(noise) >= 25 and len(set(noise)) == len(noise)
    assert not set(n.lower() for n in noise) & {q["query"].lower() for q in queries}


def test_set03_wikipedia_aliases_are_labelled_together():
    # wikipedia-mcp lists each tool twice (NAME and wikipedia_NAME, same description):
    # a query that one answers must list both, or a ranker is marked wrong for a tie.
    _, _, data = load_set("set03")
    for q in data["queries"]:
        ids = set(q["ids"])
        for i in ids:
            if i.startswith("wikipedia__"):
                name = i.split("__", 1)[1]
                twin = name[len("wikipedia_"):] if name.startswith("wikipedia_") else "wikipedia_" + name
                assert "wikipedia__" + twin in ids, q


def test_set00_is_consistent():
    # The first set predates the kinds: its queries carry only a "typo" flag, its noise is in queries.json.
    tools, queries, noise = evalsets.own_tools("set00"), evalsets.queries("set00"), evalsets.noise("set00")
    known = {t["id"] for t in tools}
    assert len(known) == len(tools) >= 100
    assert len(queries) >= 250 and len(noise) >= 20
    for q in queries:
        assert q["query"].strip() and q["ids"], q
        assert set(q["ids"]) <= known, q
    # Every recorded tool is the answer to at least one query.
    assert {i for q in queries for i in q["ids"]} == known


# -- the table of sets ---------------------------------------------------------------------------------------

def test_the_table_lists_every_set_once_oldest_first_with_a_known_role():
    on_disk = sorted(d for d in os.listdir(evalsets.SETS_DIR) if os.path.isdir(os.path.join(evalsets.SETS_DIR, d)))
    assert evalsets.NAMES == on_disk == ["set00"] + list(SETS)
    roles = [evalsets.entry(name)["role"] for name in evalsets.NAMES]
    assert set(roles) <= {evalsets.DEVELOPMENT, evalsets.UNSEEN}
    # Only the newest sets can be unseen: a set becomes a development set by its first run, in order.
    assert roles == sorted(roles, key=lambda role: role == evalsets.UNSEEN)
    for name in evalsets.NAMES:
        entry = evalsets.entry(name)
        assert entry["query_files"][0] == "queries.json"
        assert all(os.path.exists(os.path.join(evalsets.directory(name), f)) for f in entry["query_files"])
        if entry["role"] == evalsets.DEVELOPMENT:
            # Ranked: when, its first figures, and a floor per kind that bench/search.py --floors checks.
            assert entry["first_ranked"] and entry["first_run"] and entry["floor"], name
            assert set(entry["floor"]) <= KINDS | {"all", "recall@1"} and "all" in entry["floor"], name
            assert all(0.0 < floor <= 1.0 for floor in entry["floor"].values()), name
        else:
            assert entry["first_ranked"] is None and entry["first_run"] is None and entry["floor"] is None, name


def test_the_readme_table_is_the_json_one():
    with open(os.path.join(evalsets.SETS_DIR, "README.md"), encoding="utf-8") as f:
        rows = re.findall(r"^\| \[(set\d\d)\]\(set\d\d/README.md\) \| [^|]+ \| ([a-z-]+) \|", f.read(), flags=re.M)
    assert rows == [(name, evalsets.entry(name)["role"]) for name in evalsets.NAMES]


def test_an_unseen_set_is_not_in_the_vectors_training():
    # distill/requests.py trains the word-vector table on the sets sets.json marks; never on an unseen one.
    for name in evalsets.unseen():
        assert not evalsets.entry(name)["trains_vectors"], name


# -- nothing ranks a held-out-unseen set by default ------------------------------------------------------------

def _sources(*directories):
    for directory in directories:
        for root, dirs, files in os.walk(os.path.join(REPO_ROOT, directory)):
            dirs[:] = [d for d in dirs if d not in ("sets", "node_modules", "__pycache__")]
            for filename in files:
                if filename.endswith(".py"):
                    path = os.path.join(root, filename)
                    with open(path, encoding="utf-8") as f:
                        yield os.path.relpath(path, REPO_ROOT), f.read()


def test_no_code_in_tests_or_bench_names_an_unseen_set():
    # The sets a test or a bench ranks come from sets.json by role; naming an unseen set in code is the one way
    # to rank it by accident.  (Its format checks above take it from SETS like every other set.)
    unseen = evalsets.unseen()
    for path, text in _sources("tests", "bench", "distill"):
        if path in (os.path.join("tests", "quality", "test_sets.py"), os.path.join("bench", "search", "record_catalogs.py")):
            continue  # the format checks and the recorder name every set: they read and record, never rank
        for name in unseen:
            assert not re.search(r"\b" + name + r"\b", text), f"{path} names the unseen set {name}"


def test_the_benches_rank_development_sets_only():
    assert not set(evalsets.unseen()) & set(evalsets.development())
    # bench/search.py refuses an unseen set without --first-run, before it builds any index.
    for name in evalsets.unseen():
        proc = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "bench", "search.py"), "--only", name],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and "held out and unseen" in proc.stderr, proc.stderr
