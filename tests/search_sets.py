"""Shared helpers of the search tests: small catalogs, and the evaluation sets (bench/search/sets/).

The sets are read through bench/evalsets.py, as the benches read them: each set is
`catalogs/<server>.json` (a recorded tools/list) and query files, and a set's labels assume an
index of its catalogs and every earlier set's.
"""

import glob
import json
import os
import re

from conftest import load_script

evalsets = load_script("bench/evalsets.py")
KINDS = set(evalsets.KINDS)


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
    """bench/search/record_catalogs.py as a module (it is a script, not a package)."""
    return load_script("bench/search/record_catalogs.py")


def readme_kind_counts(directory):
    """The kind table of a set's README.md: {kind: queries} (rows `| kind | N |`)."""
    with open(os.path.join(directory, "README.md"), encoding="utf-8") as f:
        text = f.read()
    return {kind: int(n) for kind, n in re.findall(r"^\| (\w+) \| (\d+) \|", text, flags=re.M) if kind in KINDS}
