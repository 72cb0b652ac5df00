"""Catalog-aware vectors (issue 13): centring on the catalog, query words weighed by the catalog, on the eight dev sets.

Each variant sets toolscript.search's _CENTRE_BLEND, _CENTRE_DIRECTIONS, _QUERY_IDF_POWER (and optionally
_VECTOR_FLOOR/_VECTOR_CEILING), rebuilds every set's index (tool vectors from a cache: the raw vectors do not
depend on the variant) and prints one JSON line: per set recall@3 hits of the hybrid (all, paraphrase, task),
of the vectors alone (all, paraphrase, task), noise rejected at 0.3, and the pooled hybrid hits.

    python3 bench/catalog_vectors.py                       # the grid below
    python3 bench/catalog_vectors.py '{"blend": 1.0, "dirs": 0}'   # one variant (JSON of knobs)
    python3 bench/catalog_vectors.py --speed '{}' '{"idf": 0.5}'     # 500-tool build and query times per variant

Only the development sets (dev, dev-b .. dev-h); never a later held-out set.

The switches it sets were taken out of toolscript/search.py again (nothing reached the bar; the record is
at the end of search.py): run it in a worktree of commit 572422e (``git worktree add /tmp/cv 572422e``).
"""
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import search as sb  # noqa: E402  (bench/search.py)
from toolscript import search as ts  # noqa: E402

DEV_SETS = ("heldout2", "heldout3", "heldout4", "heldout5", "heldout6", "heldout7")
KNOBS = {"blend": "_CENTRE_BLEND", "dirs": "_CENTRE_DIRECTIONS", "idf": "_QUERY_IDF_POWER", "mix": "_QUERY_IDF_MIX",
         "floor": "_VECTOR_FLOOR", "ceiling": "_VECTOR_CEILING",
         "fused_idf_power": "_FUSED_IDF_POWER"}  # the last for information only: not this helper's constant
GRID = [
    {},
    {"blend": 1.0, "dirs": 0}, {"blend": 0.5, "dirs": 0}, {"blend": 1.0, "dirs": 1}, {"blend": 1.0, "dirs": 2},
    {"idf": 0.25}, {"idf": 0.5}, {"idf": 1.0},
]


def load_sets():
    dev_tools = sb.load_catalog()
    sets = {"dev": (dev_tools, sb.with_dev_kinds(dev_tools, sb.load_queries()), sb.load_queries(key="noise"))}
    held = sb.load_catalog(os.path.join(sb.HELDOUT, "catalogs"))
    sets["b"] = (sorted(held + dev_tools, key=lambda t: t["id"]), sb.load_queries(os.path.join(sb.HELDOUT, "queries.json")),
                 sb.load_queries(os.path.join(sb.HELDOUT, "queries.json"), key="noise"))
    for key, name in zip("cdefgh", DEV_SETS):
        tools, queries, noise, _ = sb.later_set(name, dev_tools)
        sets[key] = (tools, queries, noise)
    return sets


def hits(figures, kind):
    return round(figures[kind]["recall@3"] * figures[kind]["queries"]) if kind in figures else 0


def run(sets, caches, knobs):
    defaults = {name: getattr(ts, attr) for name, attr in KNOBS.items()}
    for name, value in knobs.items():
        setattr(ts, KNOBS[name], value)
    out = {"variant": knobs}
    pooled = pooled_alone = 0
    started = time.perf_counter()
    try:
        for key, (tools, queries, noise) in sets.items():
            index = ts.SearchIndex(tools, vector_cache=caches.get(key))
            caches[key] = index.vector_cache
            hybrid = sb.graded(lambda q: [r["id"] for r in index.search(q, limit=sb.DEPTH)], queries)
            alone = sb.graded(sb.vector_ranking(index), queries)
            out[key] = [hits(hybrid, "all"), hits(hybrid, "paraphrase"), hits(hybrid, "task")]
            out[key + ".vec"] = [hits(alone, "all"), hits(alone, "paraphrase"), hits(alone, "task")]
            if noise:
                out[key + ".noise"] = sum(1 for q in noise if not index.search(q, limit=1, threshold=0.3))
            pooled += out[key][0]
            pooled_alone += out[key + ".vec"][0]
    finally:
        for name, value in defaults.items():
            setattr(ts, KNOBS[name], value)
    out["pooled"] = pooled
    out["pooled.vec"] = pooled_alone
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out


def speed(grid, repeat=3):
    """bench/search.py's speed() (500 tools) per variant, one after the other in the same minute."""
    dev_tools = sb.load_catalog()
    queries = sb.with_dev_kinds(dev_tools, sb.load_queries())
    for knobs in grid:
        defaults = {name: getattr(ts, KNOBS[name]) for name in knobs}
        for name, value in knobs.items():
            setattr(ts, KNOBS[name], value)
        try:
            hybrid = sb.speed(dev_tools, queries, repeat)["hybrid"]
        finally:
            for name, value in defaults.items():
                setattr(ts, KNOBS[name], value)
        print(json.dumps({"variant": knobs, "build_ms": hybrid["build_ms"], "rebuild_ms": hybrid["rebuild_ms"],
                          "query_ms": hybrid["query_ms"], "query_cpu_ms": hybrid["query_cpu_ms"],
                          "first_sight_query_cpu_ms": hybrid["first_sight_query_cpu_ms"]}), flush=True)


def main(argv):
    if not hasattr(ts, "_CENTRE_BLEND"):
        sys.exit("this toolscript has no catalog-vector switches: run this script in a worktree of commit 572422e")
    if argv[:1] == ["--speed"]:
        speed([json.loads(a) for a in argv[1:]] or GRID)
        return
    sets = load_sets()
    caches = {}
    grid = [json.loads(a) for a in argv] if argv else GRID
    for knobs in grid:
        print(json.dumps(run(sets, caches, knobs)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
