"""The fourth held-out tool-search set (bench/heldout4/): its data is well formed.

Held-out set 3 (bench/heldout3/) was run once to report a round and becomes a
development set when tuning moves on; held-out 4 is the fresh set for then.
Format checks only -- no ranker has run on this set, so there is no floor yet.
What they check: every catalog is a recorded server in none of the other four
sets, pinned in bench/eval/record_catalogs.py's HELDOUT4_SERVERS; every label
names a tool of the five-set index; every held-out-4 tool answers some query;
the kinds and their counts are the README's; noise is present.
"""

import collections
import json
import os

import pytest

from conftest import REPO_ROOT
from search_sets import KINDS, load_catalogs, load_recorder, readme_kind_counts, tool_ids

HELDOUT4_DIR = os.path.join(REPO_ROOT, "bench", "heldout4")
OTHER_DIRS = [os.path.join(REPO_ROOT, "bench", d) for d in ("eval", "heldout", "heldout2", "heldout3")]


@pytest.fixture(scope="module")
def heldout4():
    with open(os.path.join(HELDOUT4_DIR, "queries.json"), encoding="utf-8") as f:
        data = json.load(f)
    others = [c for d in OTHER_DIRS for c in load_catalogs(d)]
    return load_catalogs(HELDOUT4_DIR), others, data


def test_heldout4_catalogs_are_recorded_servers_in_no_other_set(heldout4):
    held4, others, _ = heldout4
    assert len(held4) >= 12
    other_servers = {c["server"] for _, c in others}
    other_packages = {c["package"].rsplit("@", 1)[0] for _, c in others}
    for filename, catalog in held4:
        assert set(catalog) == {"server", "package", "registry", "recorded", "tools"}, filename
        assert filename == catalog["server"] + ".json"
        assert catalog["registry"] in ("npm", "pypi")
        package, _, version = catalog["package"].rpartition("@")
        assert package and version[:1].isdigit(), catalog["package"]  # an exact version, not a range
        assert catalog["server"] not in other_servers and package not in other_packages, filename
        assert catalog["tools"], filename
        names = [t["name"] for t in catalog["tools"]]
        assert len(names) == len(set(names)), filename
        for t in catalog["tools"]:
            assert isinstance(t.get("inputSchema"), dict), (filename, t["name"])
    assert 150 <= len(tool_ids(held4)) <= 250
    # Tool ids stay unique across the five-set index the queries run against.
    all_ids = [f"{c['server']}__{t['name']}" for _, c in held4 + others for t in c["tools"]]
    assert len(all_ids) == len(set(all_ids))


def test_heldout4_catalogs_match_the_recorders_pins():
    recorder = load_recorder()
    servers, catalogs_dir = recorder.SETS["heldout4"]
    assert os.path.samefile(catalogs_dir, os.path.join(HELDOUT4_DIR, "catalogs"))
    earlier = (set(recorder.SERVERS) | set(recorder.HELDOUT_SERVERS) | set(recorder.HELDOUT2_SERVERS)
               | set(recorder.HELDOUT3_SERVERS))
    assert not set(servers) & earlier
    recorded = {c["server"]: c for _, c in load_catalogs(HELDOUT4_DIR)}
    assert set(recorded) == set(servers)
    for name, (registry, package, version, _, _) in servers.items():
        assert recorded[name]["package"] == f"{package}@{version}", name
        assert recorded[name]["registry"] == registry, name


def test_recorder_knows_the_heldout4_set_and_only_its_servers(capsys):
    recorder = load_recorder()
    with pytest.raises(SystemExit) as exc:
        recorder.main(["--set", "heldout4", "asana"])  # a held-out-3 server, not held-out 4
    assert exc.value.code == 2
    err = capsys.readouterr().err
    # Rejected as a server outside the set (listing the set's own), not as an unknown --set.
    assert "unknown server(s) in --set heldout4: asana" in err
    assert "jenkins" in err and "mapbox" in err


def test_recorder_starts_heldout4_servers_from_the_scratch_install(tmp_path):
    recorder = load_recorder()
    scratch = str(tmp_path)
    exe, _, _ = recorder.command_for(scratch, "shortcut", "127.0.0.1:1")
    assert exe == os.path.join(scratch, "npm", "node_modules", ".bin", "mcp-server-shortcut")
    # PyPI executables named unlike their package come from PYPI_BIN.
    exe, _, env = recorder.command_for(scratch, "mssql", "127.0.0.1:1")
    assert exe == os.path.join(scratch, "venv-mssql", "bin", "mssql_mcp_server")
    assert env["MSSQL_PORT"] == "9"  # a closed local port: no database is reached
    exe, _, _ = recorder.command_for(scratch, "jenkins", "127.0.0.1:1")
    assert exe == os.path.join(scratch, "venv-jenkins", "bin", "mcp-jenkins")


def test_heldout4_queries_are_well_formed(heldout4):
    held4, others, data = heldout4
    assert set(data) == {"queries", "noise"}
    queries = data["queries"]
    held4_ids = tool_ids(held4)
    known = held4_ids | tool_ids(others)
    for q in queries:
        assert set(q) == {"query", "ids", "kind"}, q
        assert q["kind"] in KINDS, q
        assert q["query"].strip() == q["query"] and q["query"], q
        assert q["ids"] and len(q["ids"]) == len(set(q["ids"])), q
        assert set(q["ids"]) <= known, q
        assert set(q["ids"]) & held4_ids, q  # every query is about a held-out-4 server
    texts = [q["query"].lower() for q in queries]
    assert len(texts) == len(set(texts))
    # Every held-out-4 tool answers at least one query.
    assert held4_ids <= {i for q in queries for i in q["ids"]}


def test_heldout4_kind_counts_are_the_readmes(heldout4):
    _, _, data = heldout4
    kinds = collections.Counter(q["kind"] for q in data["queries"])
    assert readme_kind_counts(HELDOUT4_DIR) == dict(kinds)
    assert sum(kinds.values()) >= 300
    assert kinds["paraphrase"] >= 75 and kinds["task"] >= 75
    assert kinds["direct"] >= 50 and kinds["typo"] >= 25 and kinds["param"] >= 35 and kinds["multi"] >= 20
    # A multi query is answered by tools of more than one server.
    for q in data["queries"]:
        if q["kind"] == "multi":
            assert len({i.split("__", 1)[0] for i in q["ids"]}) >= 2, q


def test_heldout4_noise_is_present_and_distinct(heldout4):
    _, _, data = heldout4
    noise = data["noise"]
    assert len(noise) >= 30 and len(set(noise)) == len(noise)
    assert not {n.lower() for n in noise} & {q["query"].lower() for q in data["queries"]}
