"""Shared helpers of the tool-search evaluation-set tests (tests/test_search_sets.py).

Each set under bench/ is `catalogs/<server>.json` (a recorded tools/list) and
query files; a later held-out set's labels assume an index of its catalogs and
every earlier set's.  These helpers load them and measure recall@3 per query
kind, the one figure the floor tests hold.
"""

import collections
import glob
import json
import os
import re

from conftest import REPO_ROOT, load_script

BENCH = os.path.join(REPO_ROOT, "bench")
KINDS = {"direct", "paraphrase", "task", "typo", "param", "multi"}


def tool(server, name, description="", **extra):
    """One catalog entry as SearchIndex takes it (id ``server__name``), for the search tests' small catalogs."""
    return dict({"id": f"{server}__{name}", "server": server, "name": name, "description": description}, **extra)


def load_catalogs(directory):
    """[(file name, catalog)] of a set directory, sorted by file name."""
    catalogs = []
    for path in sorted(glob.glob(os.path.join(directory, "catalogs", "*.json"))):
        with open(path, encoding="utf-8") as f:
            catalogs.append((os.path.basename(path), json.load(f)))
    return catalogs


def tool_ids(catalogs):
    return {f"{c['server']}__{t['name']}" for _, c in catalogs for t in c["tools"]}


def tools_of(catalogs):
    """SearchIndex entries for the catalogs' tools (id server__name)."""
    return [dict(t, id=f"{c['server']}__{t['name']}", server=c["server"]) for _, c in catalogs for t in c["tools"]]


def load_recorder():
    """bench/eval/record_catalogs.py as a module (it is a script, not a package)."""
    return load_script("bench/eval/record_catalogs.py")


def readme_kind_counts(directory):
    """The kind table of a set's README.md: {kind: queries} (rows `| kind | N |`)."""
    with open(os.path.join(directory, "README.md"), encoding="utf-8") as f:
        text = f.read()
    return {kind: int(n) for kind, n in re.findall(r"^\| (\w+) \| (\d+) \|", text, flags=re.M) if kind in KINDS}


def recall_by_kind(set_dirs, query_files):
    """recall@3 of today's search (with the vectors) per kind and "all", over the sets' catalogs together.

    A query both files hold (same text, case aside) counts once, as
    bench/search.py counts it.
    """
    from toolscript.search import SearchIndex

    index = SearchIndex([t for d in set_dirs for t in tools_of(load_catalogs(d))])
    assert index.semantic, "the vectors data file is missing: the floors are the hybrid's"
    queries, seen = [], set()
    for path in query_files:
        with open(path, encoding="utf-8") as f:
            for q in json.load(f)["queries"]:
                if q["query"].lower() not in seen:
                    seen.add(q["query"].lower())
                    queries.append(q)
    hits = collections.defaultdict(list)
    for q in queries:
        hit = any(r["id"] in q["ids"] for r in index.search(q["query"], limit=3))
        hits["all"].append(hit)
        hits[q["kind"]].append(hit)
    return {kind: sum(v) / len(v) for kind, v in hits.items()}
