#!/usr/bin/env python3
"""Measure tool search quality and speed on the recorded evaluation set.

Loads every catalog in bench/eval/catalogs/ (the tools/list of real MCP
servers) into one SearchIndex -- the whole catalog, as a gateway with all of
those servers would hold it -- runs every query of bench/eval/queries.json
and prints one JSON document:

- recall@1, recall@3 (a query counts when any of its labelled tools is in the
  top 1 / top 3), MRR (1 / rank of the first labelled tool, 0 past rank 10),
  the same recall for the misspelt queries alone;
- query latency p50 / p95 in milliseconds, index build time, tool and query
  counts;
- the same figures for a naive baseline in the same run: rank tools by how
  many query words occur as substrings of their name + description;
- for score thresholds 0.2-0.5: the recall@3 that is left, and the share of
  the noise queries (requests no tool serves) that get no result at all;
- ablations: the ranker's quality with its synonym table, typo correction or
  field weights switched off, one at a time;
- the held-out set (bench/heldout/: servers and queries the ranker was never
  tuned on) next to the development set (bench/eval/): recall@1/3/5, MRR@10
  and nDCG@10, overall and per query kind, for today's ranker (BM25) and the
  keyword-overlap baseline.  The held-out queries run against the held-out
  catalogs plus the development catalogs (a gateway holds many servers);
- build and query time at scale: the catalog plus copies of it under renamed
  servers, with their words altered so the vocabulary grows too, until it
  holds about 1000 tools (recall@3 there shows what the decoys cost).

    python3 bench/search.py [--repeat 5] [--misses]

``--misses`` adds every query the ranker does not answer in its top 3, with
what it returned instead.
"""

import argparse
import glob
import json
import math
import os
import re
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import toolscript.search  # noqa: E402
from toolscript.search import SearchIndex  # noqa: E402

EVAL = os.path.join(ROOT, "bench", "eval")
HELDOUT = os.path.join(ROOT, "bench", "heldout")
KINDS = ("direct", "paraphrase", "task", "typo", "param", "multi")
DEPTH = 10  # ranks looked at for MRR


def load_catalog(directory=os.path.join(EVAL, "catalogs")):
    """Every recorded tool as a SearchIndex entry, sorted by id."""
    tools = []
    for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        with open(path, encoding="utf-8") as f:
            catalog = json.load(f)
        for tool in catalog["tools"]:
            tools.append(dict(tool, id=f"{catalog['server']}__{tool['name']}", server=catalog["server"]))
    return sorted(tools, key=lambda t: t["id"])


def load_queries(path=os.path.join(EVAL, "queries.json"), key="queries"):
    """The labelled queries, or with key="noise" the requests no tool serves."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)[key]


def thresholds(index, queries, noise, cutoffs=(0.2, 0.3, 0.4, 0.5)):
    """Per score threshold: labelled queries still answered in the top 3, noise queries answered by nothing."""
    out = {}
    for cut in cutoffs:
        kept = sum(any(r["id"] in q["ids"] for r in index.search(q["query"], limit=3, threshold=cut)) for q in queries)
        rejected = sum(not index.search(n, limit=1, threshold=cut) for n in noise)
        out[str(cut)] = {"recall@3": round(kept / len(queries), 4), "noise_rejected": round(rejected / len(noise), 4)}
    return out


def evaluate(search, queries, repeat=1):
    """Quality and latency of ``search(query) -> [ids]`` over ``queries``."""
    hits1 = hits3 = rr = typo_hits3 = typos = 0
    samples = []
    misses = []
    for q in queries:
        for _ in range(repeat):
            start = time.perf_counter()
            ids = search(q["query"])
            samples.append((time.perf_counter() - start) * 1000)
        wanted = set(q["ids"])
        rank = next((n for n, tid in enumerate(ids[:DEPTH], 1) if tid in wanted), None)
        hits1 += rank == 1
        hits3 += rank is not None and rank <= 3
        rr += 1.0 / rank if rank else 0.0
        if q.get("typo"):
            typos += 1
            typo_hits3 += rank is not None and rank <= 3
        if rank is None or rank > 3:
            misses.append({"query": q["query"], "want": q["ids"], "got": ids[:3], "rank": rank})
    n = len(queries)
    return {
        "recall@1": round(hits1 / n, 4),
        "recall@3": round(hits3 / n, 4),
        "mrr": round(rr / n, 4),
        "typo_recall@3": round(typo_hits3 / typos, 4) if typos else None,
        "query_ms": percentiles(samples),
    }, misses


def percentiles(samples):
    ordered = sorted(samples)

    def at(p):
        return round(ordered[min(len(ordered) - 1, int(round(p * (len(ordered) - 1))))], 4)

    return {"p50": at(0.50), "p95": at(0.95), "mean": round(statistics.mean(ordered), 4)}


def timed_build(tools, repeat):
    """The index and its median build time in ms, each build from cold word caches."""
    samples = []
    for _ in range(repeat):
        toolscript.search.stem.cache_clear()
        toolscript.search._chunk_terms.cache_clear()
        start = time.perf_counter()
        index = SearchIndex(tools)
        samples.append((time.perf_counter() - start) * 1000)
    return index, round(statistics.median(samples), 3)


def graded(search, queries):
    """recall@1/3/5, MRR@10 and nDCG@10 of ``search(query) -> [ids]``: all queries and per ``kind``.

    nDCG uses binary relevance (every labelled id counts 1), so a query with
    several right answers scores best when all of them lead the list.
    """
    rows = {"all": []}
    for q in queries:
        ids = search(q["query"])[:DEPTH]
        wanted = set(q["ids"])
        ranks = [n for n, tid in enumerate(ids, 1) if tid in wanted]
        first = ranks[0] if ranks else None
        dcg = sum(1.0 / math.log2(r + 1) for r in ranks)
        ideal = sum(1.0 / math.log2(r + 1) for r in range(1, min(len(wanted), DEPTH) + 1))
        row = (first, dcg / ideal)
        rows["all"].append(row)
        rows.setdefault(q.get("kind") or ("typo" if q.get("typo") else "untagged"), []).append(row)

    def figures(items):
        n = len(items)
        out = {"queries": n}
        for k in (1, 3, 5):
            out[f"recall@{k}"] = round(sum(1 for r, _ in items if r is not None and r <= k) / n, 4)
        out["mrr@10"] = round(sum(1.0 / r for r, _ in items if r) / n, 4)
        out["ndcg@10"] = round(sum(g for _, g in items) / n, 4)
        return out

    order = ["all"] + [k for k in KINDS if k in rows] + sorted(k for k in rows if k not in KINDS and k != "all")
    return {kind: figures(rows[kind]) for kind in order}


def heldout_report(dev_tools, dev_queries):
    """Both sets' graded figures side by side; the held-out index also holds the development catalogs."""
    held_tools = load_catalog(os.path.join(HELDOUT, "catalogs"))
    held_path = os.path.join(HELDOUT, "queries.json")
    held_queries = load_queries(held_path)
    held_noise = load_queries(held_path, key="noise")
    tools = sorted(held_tools + dev_tools, key=lambda t: t["id"])
    index = SearchIndex(tools)
    dev_index = SearchIndex(dev_tools)
    return {
        "catalog": {"servers": len({t["server"] for t in held_tools}), "tools": len(held_tools),
                    "index_tools": len(tools)},
        "queries": len(held_queries),
        "noise_queries": len(held_noise),
        "heldout": {
            "bm25": graded(lambda q: [r["id"] for r in index.search(q, limit=DEPTH)], held_queries),
            "baseline_keyword_overlap": graded(Baseline(tools).search, held_queries),
            "threshold": thresholds(index, held_queries, held_noise),
        },
        "development": {
            "bm25": graded(lambda q: [r["id"] for r in dev_index.search(q, limit=DEPTH)], dev_queries),
            "baseline_keyword_overlap": graded(Baseline(dev_tools).search, dev_queries),
        },
    }


class Baseline:
    """Naive keyword overlap: how many query words occur in the tool's name + description."""

    def __init__(self, tools):
        self.docs = [(t["id"], (t["name"] + " " + (t.get("description") or "")).lower()) for t in tools]

    def search(self, query, limit=DEPTH):
        words = set(re.findall(r"\w+", query.lower()))
        scored = [(sum(w in text for w in words), tid) for tid, text in self.docs]
        scored = [s for s in scored if s[0] > 0]
        scored.sort(key=lambda s: (-s[0], s[1]))
        return [tid for _, tid in scored[:limit]]


def ablations(tools, queries):
    """Quality with one feature of the ranker switched off at a time (module internals patched)."""
    mod = toolscript.search
    switches = {
        "no_synonyms": ("_SYNONYMS", {}),
        "no_typo_correction": ("_max_typos", lambda word: 0),
        "no_field_weights": ("_FIELDS", {f: (1.0, b) for f, (_, b) in mod._FIELDS.items()}),
    }
    out = {}
    for label, (attr, value) in switches.items():
        saved = getattr(mod, attr)
        setattr(mod, attr, value)
        try:
            index = SearchIndex(tools)
            figures, _ = evaluate(lambda q: [r["id"] for r in index.search(q, limit=DEPTH)], queries)
        finally:
            setattr(mod, attr, saved)
        out[label] = {k: figures[k] for k in ("recall@1", "recall@3", "mrr", "typo_recall@3")}
    return out


def scaled(tools, target=1000):
    """About ``target`` tools: the catalog, then copies under renamed servers (s1-github, ...).

    In each copy every word of four letters or more gets a suffix of its own
    ("create" -> "createq"), so the vocabulary grows with the catalog as it
    would with real, different servers, instead of repeating the same words.
    """
    out = list(tools)
    copy = 0
    while len(out) < target:
        copy += 1
        suffix = "qxz"[copy % 3] * (1 + copy // 3)

        def mangle(value):
            if isinstance(value, str):
                return re.sub(r"[A-Za-z]{4,}", lambda m: m.group(0) + suffix, value)
            if isinstance(value, dict):
                return {k: mangle(v) for k, v in value.items()}
            if isinstance(value, list):
                return [mangle(v) for v in value]
            return value

        for t in tools:
            server = f"s{copy}-{t['server']}"
            name = mangle(t["name"])
            out.append(dict(mangle(t), server=server, name=name, id=f"{server}__{name}"))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="times each query (and build) is timed")
    parser.add_argument("--misses", action="store_true", help="list the queries missed in the top 3")
    args = parser.parse_args(argv)

    tools = load_catalog()
    queries = load_queries()
    noise = load_queries(key="noise")
    servers = sorted({t["server"] for t in tools})

    index, build_ms = timed_build(tools, args.repeat)
    ours, misses = evaluate(lambda q: [r["id"] for r in index.search(q, limit=DEPTH)], queries, args.repeat)
    ours["build_ms"] = build_ms
    ours["threshold"] = thresholds(index, queries, noise)

    start = time.perf_counter()
    baseline_index = Baseline(tools)
    base_build = round((time.perf_counter() - start) * 1000, 3)
    base, _ = evaluate(baseline_index.search, queries, args.repeat)
    base["build_ms"] = base_build

    big = scaled(tools)
    big_index, big_build = timed_build(big, args.repeat)
    start = time.perf_counter()
    big_index.search("serach isues")  # the first misspelt query builds the trigram index
    first_typo = round((time.perf_counter() - start) * 1000, 3)
    big_queries, _ = evaluate(lambda q: [r["id"] for r in big_index.search(q, limit=DEPTH)], queries, 1)

    report = {
        "python": sys.version.split()[0],
        "catalog": {"servers": len(servers), "tools": len(tools)},
        "queries": len(queries),
        "typo_queries": sum(1 for q in queries if q.get("typo")),
        "noise_queries": len(noise),
        "toolscript": ours,
        "baseline_keyword_overlap": base,
        "ablations": ablations(tools, queries),
        "heldout": heldout_report(tools, queries),
        "scale": {
            "tools": len(big),
            "build_ms": big_build,
            "first_misspelt_query_ms": first_typo,
            "query_ms": big_queries["query_ms"],
            "recall@3": big_queries["recall@3"],
        },
    }
    if args.misses:
        report["misses"] = misses
    json.dump(report, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
