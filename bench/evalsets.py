"""The search evaluation sets (bench/search/sets/), as the benches, distill/ and tests/quality/ read them.

``sets.json`` lists the sets oldest first, with each one's role (``development`` or
``held-out-unseen``), query files and floor.  A set's labels assume an index of its own catalogs
and every earlier set's: :func:`index_tools`.  Stdlib only; import it with bench/ on sys.path
(``import evalsets``) or load it as a script (tests/conftest.py's ``load_script``).
"""

import glob
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SETS_DIR = os.path.join(ROOT, "bench", "search", "sets")
DEVELOPMENT = "development"
UNSEEN = "held-out-unseen"
KINDS = ("direct", "paraphrase", "task", "typo", "param", "multi")


def _read_table():
    with open(os.path.join(SETS_DIR, "sets.json"), encoding="utf-8") as f:
        return json.load(f)["sets"]


SETS = _read_table()
NAMES = [s["name"] for s in SETS]
_BY_NAME = {s["name"]: s for s in SETS}


def entry(name):
    """The set's row of sets.json."""
    return _BY_NAME[name]


def directory(name):
    return os.path.join(SETS_DIR, name)


def earlier(name):
    """The names of the sets built before ``name``, oldest first."""
    return NAMES[:NAMES.index(name)]


def with_role(role):
    return [s["name"] for s in SETS if s["role"] == role]


def development():
    """The sets ranked and tuned on, oldest first."""
    return with_role(DEVELOPMENT)


def unseen():
    """The sets never ranked: nothing ranks them by default."""
    return with_role(UNSEEN)


def load_catalog(path):
    """Every tool of the catalogs in ``path``/*.json as a SearchIndex entry (id ``server__name``), sorted by id."""
    tools = []
    for file in sorted(glob.glob(os.path.join(path, "*.json"))):
        with open(file, encoding="utf-8") as f:
            catalog = json.load(f)
        for tool in catalog["tools"]:
            tools.append(dict(tool, id=f"{catalog['server']}__{tool['name']}", server=catalog["server"]))
    return sorted(tools, key=lambda t: t["id"])


def own_tools(name):
    """The tools of the set's own catalogs, sorted by id."""
    return load_catalog(os.path.join(directory(name), "catalogs"))


def index_tools(name):
    """The index the set's labels assume: its own tools and every earlier set's, sorted by id."""
    tools = own_tools(name)
    for other in earlier(name):
        tools += own_tools(other)
    return sorted(tools, key=lambda t: t["id"])


def read(name, filename="queries.json"):
    with open(os.path.join(directory(name), filename), encoding="utf-8") as f:
        return json.load(f)


def query_files(name):
    return entry(name)["query_files"]


def queries(name):
    """The set's labelled queries: its query files in order, a text a later file repeats (case aside) counted once."""
    out, seen = [], set()
    for n, filename in enumerate(query_files(name)):
        for q in read(name, filename)["queries"]:
            if n == 0 or q["query"].lower() not in seen:
                out.append(q)
        seen = {q["query"].lower() for q in out}
    return out


def noise(name):
    """The set's requests no tool serves (queries.json's)."""
    return read(name)["noise"]
