"""The held-out tool-search set (bench/heldout/): its data is well formed, and search keeps its measured quality.

The held-out set is 13 real servers that are not in the development set
(bench/eval/) and queries written before any ranker ran on them.  It was run
four times as a held-out set; since session 18 it is a second development
set (dev-b), tuned on alongside bench/eval/, and bench/heldout2/ is the
held-out set.  The index
holds the held-out and the development catalogs together, as a gateway with
many servers would.  bench/search.py prints the full figures (recall@1/3/5,
MRR@10, nDCG@10 per kind, for words alone, vectors alone and the hybrid);
the floors here are the hybrid's measured values minus 0.02, rounded down.
"""

import collections
import json
import os

import pytest

from conftest import REPO_ROOT
from search_sets import KINDS, load_catalogs, tools_of
from toolscript.search import SearchIndex

HELDOUT_DIR = os.path.join(REPO_ROOT, "bench", "heldout")
EVAL_DIR = os.path.join(REPO_ROOT, "bench", "eval")


@pytest.fixture(scope="module")
def heldout():
    with open(os.path.join(HELDOUT_DIR, "queries.json"), encoding="utf-8") as f:
        data = json.load(f)
    return load_catalogs(HELDOUT_DIR), load_catalogs(EVAL_DIR), data["queries"], data["noise"]


@pytest.fixture(scope="module")
def index(heldout):
    held, dev, _, _ = heldout
    return SearchIndex(tools_of(held) + tools_of(dev))


def test_heldout_catalogs_are_recorded_servers_not_in_the_development_set(heldout):
    held, dev, _, _ = heldout
    assert len(held) >= 10
    dev_servers = {c["server"] for _, c in dev}
    dev_packages = {c["package"].rsplit("@", 1)[0] for _, c in dev}
    for filename, catalog in held:
        assert set(catalog) == {"server", "package", "registry", "recorded", "tools"}, filename
        assert filename == catalog["server"] + ".json"
        assert catalog["registry"] in ("npm", "pypi")
        package, _, version = catalog["package"].rpartition("@")
        assert package and version[:1].isdigit(), catalog["package"]  # an exact version, not a range
        assert catalog["server"] not in dev_servers and package not in dev_packages
        assert catalog["tools"], filename
        names = [t["name"] for t in catalog["tools"]]
        assert len(names) == len(set(names)), filename
        for t in catalog["tools"]:
            assert isinstance(t.get("inputSchema"), dict), (filename, t["name"])


def test_heldout_queries_are_well_formed(heldout):
    held, dev, queries, noise = heldout
    known = {t["id"] for t in tools_of(held) + tools_of(dev)}
    held_ids = {t["id"] for t in tools_of(held)}
    for q in queries:
        assert set(q) == {"query", "ids", "kind"}, q
        assert q["kind"] in KINDS, q
        assert q["query"].strip() == q["query"] and q["query"], q
        assert q["ids"] and len(q["ids"]) == len(set(q["ids"])), q
        assert set(q["ids"]) <= known, q
        assert set(q["ids"]) & held_ids, q  # every query is about a held-out server
    texts = [q["query"].lower() for q in queries]
    assert len(texts) == len(set(texts))
    kinds = collections.Counter(q["kind"] for q in queries)
    assert len(queries) >= 250
    assert kinds["paraphrase"] >= 50 and kinds["task"] >= 50
    assert all(kinds[k] for k in KINDS)
    # Every held-out tool answers at least one query.
    assert held_ids <= {i for q in queries for i in q["ids"]}
    assert len(noise) >= 25 and len(set(noise)) == len(noise)
    assert not set(n.lower() for n in noise) & set(texts)


def recall_at(index, queries, k):
    hits = sum(any(r["id"] in q["ids"] for r in index.search(q["query"], limit=k)) for q in queries)
    return hits / len(queries)


def test_heldout_recall_floor(index, heldout):
    _, _, queries, _ = heldout
    # Since session 18 this set is a second development set (dev-b): its
    # figures were looked at while tuning, so these floors guard against
    # regressions, not for honesty (bench/heldout2/ is the honest measure).
    # Issue 13's first round (held-out run 4): recall@3 0.785; paraphrase
    # 0.270, task 0.723.  Session 18's fusion (FU: real words reach the
    # vectors as written, the tool vector weighs its name 2 and its parameter
    # names 0.25, a tool only the vectors reach is listed when the query's
    # words reach some tool, a named server's tools gain 0.15) with the third
    # vector table (VECTORS-V3), measured on 155 dev-b + 126 development
    # tools, 335 queries: recall@3 0.821; direct 1.0, typo 1.0, param 1.0,
    # paraphrase 0.413, task 0.771.  Words alone (BM25): 0.761.  Floors:
    # measured minus ~0.02, rounded down.
    assert recall_at(index, queries, 3) >= 0.80
    by_kind = collections.defaultdict(list)
    for q in queries:
        by_kind[q["kind"]].append(q)
    assert recall_at(index, by_kind["direct"], 3) >= 0.98
    assert recall_at(index, by_kind["typo"], 3) >= 0.98
    assert recall_at(index, by_kind["paraphrase"], 3) >= 0.39
    assert recall_at(index, by_kind["task"], 3) >= 0.75
