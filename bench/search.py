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
- ablations: the ranker's quality with its synonym table, typo correction,
  field weights or similar words switched off, one at a time;
- the held-out set (bench/heldout/: servers and queries the ranker was never
  tuned on) next to the development set (bench/eval/): recall@1/3/5, MRR@10
  and nDCG@10, overall and per query kind, for today's ranker (BM25) and the
  keyword-overlap baseline.  The held-out queries run against the held-out
  catalogs plus the development catalogs (a gateway holds many servers);
- build and query time at scale: the catalog plus copies of it under renamed
  servers, with their words altered so the vocabulary grows too, until it
  holds about 1000 tools (recall@3 there shows what the decoys cost);
- ``rankers`` (issue 13): rows ``bm25`` (words only), ``vectors`` (the
  cosine of the static word vectors alone), ``hybrid_without_similar_words``
  (the hybrid before query words met catalog words by meaning) and
  ``hybrid`` (what search ranks with when the vectors data is there) on
  both sets, recall@1/3/5,
  MRR@10 and nDCG@10 per kind.  The development set has no kind labels but
  ``typo``; bench labels its other queries mechanically (no ranker involved):
  ``shared_words`` when at least half of the query's index terms occur in a
  labelled tool's name, title, description or parameter names, else
  ``few_shared_words`` (the paraphrase- and task-like queries).  Plus the
  hybrid's score thresholds against the noise queries;
- ``speed``: in-process query latency p50/p95 over 500 tools (bm25 and
  hybrid; wall and the thread's CPU time, with the load average, since a
  shared machine's wall-time p95 is mostly waiting; for the hybrid also
  each query's first sight, every word new to the index), the 500-tool
  index build with vectors (cold, and rebuilt as a gateway does for a new
  catalog version), the CLI's ``search`` through
  a gateway holding 500 tools, ``toolscript --version`` against a bare
  ``python3 -c pass`` in the same run, and the vectors data file's size.

    python3 bench/search.py [--repeat 5] [--misses] [--dev-only] [--tune | --tune-similar | --tune-server]

``--dev-only`` leaves out everything that touches the held-out sets (what
tuning runs). ``--only heldout2`` .. ``--only heldout21`` prints that set's
figures alone (log every run of a set that is still held out in its README;
a fresh set joins LATER_SETS only for its one run).
``--tune`` prints instead the grids the fusion's and the tool vectors'
constants were chosen from, on the development set and (without
``--dev-only``) held-out sets 1 to 7, development sets too since sessions
18 to 20 (dev-b .. dev-h; keys ``heldout`` .. ``heldout7``, both authors'
queries);
``--tune-similar`` the development grid of the similar-words signal's.
``--tune-server`` the grid of a server scored as a whole (_SERVER_TOOLS,
_SERVER_WEIGHT, _SERVER_TEMPERATURE) on the development sets (dev ..
dev-h), with recall@3 hits per point.
``--cv`` the leave-one-set-out cross-validation of the fusion's linear
weights over the five development sets (session 19; the fitted weights
were not adopted: they lost on two of the five held-aside sets).

``--misses`` adds every query the ranker does not answer in its top 3, with
what it returned instead.
"""

import argparse
import glob
import itertools
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import toolscript.search  # noqa: E402
from stats import summary  # noqa: E402  (bench/stats.py)
from toolscript.search import SearchIndex  # noqa: E402

EVAL = os.path.join(ROOT, "bench", "eval")
HELDOUT = os.path.join(ROOT, "bench", "heldout")
# Held-out sets 2 .. 13 after set 1, in the order they were built: each one's labels assume an index of its own
# catalogs and every earlier set's (listed latest first).  A fresh set joins only for its one run (see above).
_BUILT = [HELDOUT] + [os.path.join(ROOT, "bench", f"heldout{n}") for n in range(2, 22)]
LATER_SETS = {f"heldout{n}": (_BUILT[n - 1], _BUILT[n - 2::-1]) for n in range(2, len(_BUILT) + 1)}
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
        clear_word_caches()
        start = time.perf_counter()
        index = SearchIndex(tools)
        samples.append((time.perf_counter() - start) * 1000)
    return index, round(statistics.median(samples), 3)


def clear_word_caches():
    """Forget every per-word cache of toolscript.search (stems, terms, similar-words vectors): a cold start."""
    toolscript.search.stem.cache_clear()
    toolscript.search._chunk_terms.cache_clear()
    word_row = getattr(toolscript.search, "_word_row", None)
    if word_row is not None:
        word_row.cache_clear()


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
    index = SearchIndex(tools, semantic=False)
    dev_index = SearchIndex(dev_tools, semantic=False)
    hybrid = SearchIndex(tools)
    return {
        "catalog": {"servers": len({t["server"] for t in held_tools}), "tools": len(held_tools),
                    "index_tools": len(tools)},
        "queries": len(held_queries),
        "noise_queries": len(held_noise),
        "heldout": {
            "bm25": graded(lambda q: [r["id"] for r in index.search(q, limit=DEPTH)], held_queries),
            "baseline_keyword_overlap": graded(Baseline(tools).search, held_queries),
            "threshold": thresholds(index, held_queries, held_noise),
            "rankers": ranker_rows(tools, held_queries, hybrid),
            "hybrid_threshold": thresholds(hybrid, held_queries, held_noise) if hybrid.semantic else None,
        },
        "development": {
            "bm25": graded(lambda q: [r["id"] for r in dev_index.search(q, limit=DEPTH)], dev_queries),
            "baseline_keyword_overlap": graded(Baseline(dev_tools).search, dev_queries),
        },
    }


def later_set(name, dev_tools):
    """A later held-out set as (tools, queries, noise, its own catalog).

    The index is the set's catalogs plus every earlier set's and the
    development catalogs, as its labels assume; the queries are both
    authors' files, a query both happened to write counted once.
    """
    directory, earlier = LATER_SETS[name]
    held = load_catalog(os.path.join(directory, "catalogs"))
    tools = sorted(held + [t for d in earlier for t in load_catalog(os.path.join(d, "catalogs"))] + dev_tools,
                   key=lambda t: t["id"])
    first = load_queries(os.path.join(directory, "queries.json"))
    second_path = os.path.join(directory, "queries-b.json")
    second = load_queries(second_path) if os.path.exists(second_path) else []
    seen = {q["query"].lower() for q in first}
    return tools, first + [q for q in second if q["query"].lower() not in seen], load_queries(
        os.path.join(directory, "queries.json"), key="noise"), held


def later_set_report(name, dev_tools):
    """A later held-out set (bench/heldout2/, bench/heldout3/): graded rankers per query file and together.

    The index is the set's catalogs plus every earlier set's and the
    development catalogs, as its labels assume. Each query file is reported
    alone (two authors wrote them independently: the difference shows how
    much a figure owes to who wrote the queries) and together.
    """
    tools, both, noise, held = later_set(name, dev_tools)
    directory = LATER_SETS[name][0]
    first = load_queries(os.path.join(directory, "queries.json"))
    second_path = os.path.join(directory, "queries-b.json")
    second = load_queries(second_path) if os.path.exists(second_path) else []
    hybrid = SearchIndex(tools)
    words = SearchIndex(tools, semantic=False)
    report = {
        "catalog": {"servers": len({t["server"] for t in held}), "tools": len(held), "index_tools": len(tools)},
        "noise_queries": len(noise),
        "queries_in_both_files": len(first) + len(second) - len(both),
        "threshold": {"bm25": thresholds(words, both, noise),
                      "hybrid": thresholds(hybrid, both, noise) if hybrid.semantic else None},
    }
    for part, queries in (("both_authors", both), ("queries", first), ("queries_b", second)):
        if not queries:
            continue
        rows = ranker_rows(tools, queries, hybrid)
        rows["baseline_keyword_overlap"] = graded(Baseline(tools).search, queries)
        report[part] = {"queries": len(queries), "rankers": rows}
    return report


def vector_ranking(index):
    """``search(query) -> [ids]`` by the vectors' cosine alone (the hybrid's vector signal, unfused)."""
    def search(query):
        cosines = index._semantic(query)
        order = sorted(cosines, key=lambda i: (-cosines[i], index._ids[i]))
        return [index._ids[i] for i in order[:DEPTH]]
    return search


def ranker_rows(tools, queries, hybrid=None):
    """graded() of the three rankers: bm25 (words only), vectors (cosine alone), hybrid (what search ships)."""
    hybrid = hybrid or SearchIndex(tools)
    words = SearchIndex(tools, semantic=False)
    rows = {"bm25": graded(lambda q: [r["id"] for r in words.search(q, limit=DEPTH)], queries)}
    if hybrid.semantic:
        rows["vectors"] = graded(vector_ranking(hybrid), queries)
        if hasattr(toolscript.search, "_SIMILAR_TOP"):
            # The hybrid as it was before similar words (issue 13's soft matching), for the before/after.
            saved = toolscript.search._SIMILAR_TOP
            toolscript.search._SIMILAR_TOP = 0
            try:
                before = SearchIndex(tools)
                rows["hybrid_without_similar_words"] = graded(lambda q: [r["id"] for r in before.search(q, limit=DEPTH)], queries)
            finally:
                toolscript.search._SIMILAR_TOP = saved
        rows["hybrid"] = graded(lambda q: [r["id"] for r in hybrid.search(q, limit=DEPTH)], queries)
    return rows


def with_dev_kinds(tools, queries):
    """The development queries, each with a mechanical ``kind``: typo, shared_words or few_shared_words.

    shared_words: at least half of the query's index terms occur in one of
    its labelled tools' name, title, description or parameter names.  Only
    the labels and the catalog decide; no ranker runs.
    """
    by_id = {t["id"]: t for t in tools}
    out = []
    for q in queries:
        if q.get("typo"):
            kind = "typo"
        else:
            wanted = set(toolscript.search.terms(q["query"]))
            best = 0.0
            for tid in q["ids"]:
                t = by_id[tid]
                names = []
                toolscript.search._schema_text(t.get("inputSchema"), names, [])
                text = set(toolscript.search.terms(" ".join([t["name"], t.get("title") or "", t.get("description") or ""] + names)))
                best = max(best, len(wanted & text) / len(wanted) if wanted else 0.0)
            kind = "shared_words" if best >= 0.5 else "few_shared_words"
        out.append(dict(q, kind=kind))
    return out


def speed(tools, queries, repeat):
    """Build and query time over a 500-tool catalog, words only and hybrid.

    ``build_ms`` is a cold build (no word seen before in the process);
    the hybrid's ``rebuild_ms`` is what a running gateway pays for a new
    catalog version (tool vectors and word vectors of the previous one
    reused).  ``query_ms`` runs every query ``repeat`` times after a warm-up,
    as a gateway answers an agent that repeats its vocabulary;
    ``first_sight_query_ms`` runs each query once with the index's
    similar-words cache emptied first, so every query word is new to it.
    """
    big = scaled(tools, target=500)[:500]
    out = {"tools": len(big)}
    for label, semantic in (("bm25", False), ("hybrid", True)):
        samples = []
        index = None
        for _ in range(repeat):
            clear_word_caches()
            start = time.perf_counter()
            index = SearchIndex(big, semantic=semantic)
            samples.append((time.perf_counter() - start) * 1000)
        if semantic and not index.semantic:
            out[label] = None
            continue
        out[label] = {"build_ms": round(statistics.median(samples), 2)}
        if semantic:
            rebuilds = []
            for _ in range(repeat):
                start = time.perf_counter()
                SearchIndex(big, vector_cache=index.vector_cache)
                rebuilds.append((time.perf_counter() - start) * 1000)
            out[label]["rebuild_ms"] = round(statistics.median(rebuilds), 2)
        similar = getattr(index, "_similar", None)
        if similar is not None:
            out[label]["similar_words"] = len(similar.words)
            timings, cpu = [], []
            for q in queries:
                similar.cache.clear()
                start, start_cpu = time.perf_counter(), time.thread_time()
                index.search(q["query"], limit=DEPTH)
                cpu.append((time.thread_time() - start_cpu) * 1000)
                timings.append((time.perf_counter() - start) * 1000)
            out[label]["first_sight_query_ms"] = percentiles(timings)
            out[label]["first_sight_query_cpu_ms"] = percentiles(cpu)
        for q in queries[:20]:
            index.search(q["query"], limit=DEPTH)  # warm caches, as a running gateway has them
        timings, cpu = [], []
        for _ in range(repeat):
            for q in queries:
                start, start_cpu = time.perf_counter(), time.thread_time()
                index.search(q["query"], limit=DEPTH)
                cpu.append((time.thread_time() - start_cpu) * 1000)
                timings.append((time.perf_counter() - start) * 1000)
        # Wall time includes waiting for a CPU on a busy machine; the thread's
        # CPU time is what the query itself costs.
        out[label].update({"query_ms": percentiles(timings), "query_cpu_ms": percentiles(cpu)})
    out["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return out


def vectors_file():
    """Size and location of the vectors data file (None when search has none)."""
    try:
        from toolscript import vectors
    except ImportError:
        return None
    path = getattr(vectors, "DATA_PATH", None) or getattr(vectors, "PATH", None)
    candidates = [path] if isinstance(path, str) else glob.glob(os.path.join(ROOT, "toolscript", "data", "*"))
    files = [c for c in candidates if c and os.path.isfile(c)]
    return {"files": {os.path.relpath(f, ROOT): os.path.getsize(f) for f in files}, "available": vectors.available()}


def timed_run(argv, env=None):
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - start) * 1000


def startup(repeat):
    """``toolscript --version`` (the checkout) against a bare ``python3 -c pass``, alternating, same run."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    version, bare = [], []
    for _ in range(repeat):
        version.append(timed_run([sys.executable, "-m", "toolscript", "--version"], env))
        bare.append(timed_run([sys.executable, "-c", "pass"], env))
    out = {"toolscript_version": summary(version, digits=1), "python_c_pass": summary(bare, digits=1)}
    out["version_minus_bare_median_ms"] = round(out["toolscript_version"]["median_ms"] - out["python_c_pass"]["median_ms"], 1)
    return out


def cli_latency(queries, repeat):
    """``toolscript search`` as a subprocess against a gateway whose fixture server lists 500 tools."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from gateway import GatewayProcess  # bench/gateway.py
    from mcp_servers import launch

    command = launch.stdio_command("--tools", "500")
    gateway = GatewayProcess({"big": {"command": command[0], "args": command[1:]}})
    try:
        _, started = gateway.start()
        gateway.wait_ready(["big"], started)
        env = dict(gateway.env, TOOLSCRIPT_GATEWAY_URL=gateway.url)
        timed_run([sys.executable, "-m", "toolscript", "search", "warm up"], env)
        samples = []
        for _ in range(repeat):
            for q in queries[:10]:
                samples.append(timed_run([sys.executable, "-m", "toolscript", "search", q["query"]], env))
        return summary(samples, digits=1)
    finally:
        gateway.stop()


def tune(sets):
    """The grids the fusion's and the tool vectors' constants were chosen from (see toolscript/search.py), per set.

    ``sets``: {"development": (tools, queries, noise), "heldout": ..., "heldout2": ...};
    since session 18 held-out set 1 is a second development set (dev-b), since
    session 19 held-out set 2 a third (dev-c), since its run 1 held-out set 3
    a fourth (dev-d), and a change is taken when it helps all of them.  Per
    set: the power the words' idf is raised to in the fusion (signals
    prepared again per point), the vectors' weight for a query that names a
    parameter (likewise), how far a named server's tools are told apart
    without the words naming it (likewise), the ways a query names a server
    besides a pure stem of its name (likewise), the blend grid (each query's
    word shares and cosines computed once, then search's own ``_fuse`` with
    its constants patched), the fusions tried instead of the blend (the
    vector weight set by how much of the query the words explain; reciprocal
    rank fusion), the tool vector's text weights and the named-server share
    (the index rebuilt per point).
    """
    mod = toolscript.search
    out = {"shipped": {"name_words_set_apart": mod._NAME_WORDS_SET_APART, "idf_power": mod._FUSED_IDF_POWER, "identifier_scale": mod._IDENTIFIER_VECTOR_SCALE,
                       "parameter_coverage": mod._PARAMETER_COVERAGE_BONUS, "question_read": mod._QUESTION_READ_BONUS, "blend": {n: getattr(mod, n) for n in BLEND}, "tool_text_weights": list(mod._TOOL_TEXT_WEIGHTS),
                       "named_server": {"bonus": mod._NAMED_SERVER_BONUS, "purity": mod._NAMING_PURITY},
                       "server_signal": {"tools": mod._SERVER_TOOLS, "weight": mod._SERVER_WEIGHT, "temperature": mod._SERVER_TEMPERATURE}}}
    for label, (tools, queries, noise) in sets.items():
        index = SearchIndex(tools)
        if not index.semantic:
            return {"error": "no vectors data: nothing to tune"}
        prepared = prepare_signals(index, queries, noise)
        out[label] = {"idf_power": idf_power_rows(index, queries, noise),
                      "blend": blend_grid(index, queries, prepared),
                      "identifier_scale": identifier_scale_rows(index, queries, noise),
                      "adaptive": adaptive_rows(index, queries, prepared),
                      "rrf": rrf_rows(index, queries),
                      "tool_text_weights": tool_text_rows(tools, queries, noise),
                      "named_server": named_server_rows(tools, queries, noise),
                      "name_words_set_apart": name_words_rows(index, queries, noise),
                      "siblings": sibling_rows(index, queries, noise),
                      "server_naming": server_naming_rows(index, queries, noise),
                      "server_signal": server_signal_rows(index, queries, noise)}
    return out


CV_GRID = {"lexical_weight": (0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65), "floor": (0.1, 0.2, 0.3),
           "ceiling": (0.9, 1.0), "named_server_bonus": (0.1, 0.15, 0.2)}


def cross_validation(sets, grid=CV_GRID):
    """Leave-one-set-out cross-validation of the fusion's linear weights (session 19, FU4; not adopted).

    The fusion is linear in the word share, the mapped cosine and the named
    server's share: fitted here are the word share's weight (the vectors'
    is 1 minus it, so a tool both fully back still scores 1), the cosine's
    floor and ceiling and the named server's share.  Each fold fits them on
    every set but one (the most recall@3 hits pooled, then MRR@10, among the
    points where the development set's noise at 0.3 stays >= 0.9) and scores
    the set left aside, next to the shipped constants there.  A fitted fusion
    would be adopted only if every fold's held-aside score were >= the
    shipped one's.  ``sets``: {label: (tools, queries, noise)}, the first
    label the development set.  Each point fuses the signals search computes
    (prepare_signals) with search's own ``_fuse``, its constants patched.
    """
    mod = toolscript.search
    shipped = (mod._LEXICAL_WEIGHT, mod._VECTOR_FLOOR, mod._VECTOR_CEILING, mod._NAMED_SERVER_BONUS)
    points = [shipped] + [p for p in itertools.product(*grid.values()) if p != shipped]
    prepared = {}
    for label, (tools, queries, noise) in sets.items():
        index = SearchIndex(tools)
        if not index.semantic:
            return {"error": "no vectors data: nothing to fit"}
        prepared[label] = (index, queries, prepare_signals(index, queries, noise))

    def with_share(signals, bonus):
        # prepare_signals gave each named server's tool the shipped share; this point's instead.
        lexical, exact, semantic, covered, shares, scale = signals
        return lexical, exact, semantic, covered, {i: bonus for i in shares}, scale

    saved = {n: getattr(mod, n) for n in BLEND}
    table = {}
    try:
        for point in points:
            weight, floor, ceiling, bonus = point
            for n, v in zip(BLEND, (weight, 1.0 - weight, floor, ceiling)):
                setattr(mod, n, v)
            table[point] = {}
            for label, (index, queries, (labelled, rejected)) in prepared.items():
                signals = ([(q, with_share(s, bonus)) for q, s in labelled], [with_share(s, bonus) for s in rejected])
                row = fused_figures(index, queries, signals, shipped_fuse)
                table[point][label] = (round(row["recall@3"] * len(queries)), row["recall@3"], row["mrr@10"], row["noise_rejected@0.3"])
    finally:
        for n, v in saved.items():
            setattr(mod, n, v)
    labels = list(sets)
    development = labels[0]
    allowed = [p for p in points if table[p][development][3] >= 0.9]
    folds = []
    for held in labels:
        train = [label for label in labels if label != held]
        fitted = max(allowed, key=lambda p: (sum(table[p][t][0] for t in train), sum(table[p][t][2] for t in train), p == shipped))
        folds.append({"held_out": held, "fitted": dict(zip(grid, fitted)),
                      "train_hits": {"fitted": sum(table[fitted][t][0] for t in train), "shipped": sum(table[shipped][t][0] for t in train)},
                      "recall@3": {"fitted": table[fitted][held][1], "shipped": table[shipped][held][1]},
                      "mrr@10": {"fitted": table[fitted][held][2], "shipped": table[shipped][held][2]}})
    return {"grid": len(points), "shipped": dict(zip(grid, shipped)), "folds": folds,
            "adopt": all(f["recall@3"]["fitted"] >= f["recall@3"]["shipped"] for f in folds)}


def name_words_rows(index, queries, noise):
    """How far a named server's tools are told apart without the words naming it (_NAME_WORDS_SET_APART), per point.

    ``evened`` False: a naming word's BM25F term frequency left as each
    tool has it (before session 19's fourth round); at share 0 and not
    evened, the fusion as it was.
    """
    mod = toolscript.search
    saved = mod._NAME_WORDS_SET_APART
    evened = index._evened
    rows = []
    try:
        for even in (False, True):
            index._evened = evened if even else (lambda postings, named: postings)
            for share in (0.0, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0):
                mod._NAME_WORDS_SET_APART = share
                rows.append(dict({"share": share, "evened": even}, **fused_figures(index, queries, prepare_signals(index, queries, noise), shipped_fuse)))
    finally:
        mod._NAME_WORDS_SET_APART = saved
        del index._evened
    return rows


def sibling_rows(index, queries, noise):
    """The shares that tell sibling tools apart (session 19, fifth round), per point of their grid.

    ``parameter_coverage``: _PARAMETER_COVERAGE_BONUS (a query by parameter
    names, the tool's idf-weighed share of them); ``question_read``:
    _QUESTION_READ_BONUS (a question, a tool that only reads).  Each point
    prepares every query's signals again with the constants patched.
    """
    mod = toolscript.search
    saved = mod._PARAMETER_COVERAGE_BONUS, mod._QUESTION_READ_BONUS
    rows = []
    try:
        for covered, question in ((0.0, 0.0), (0.1, 0.0), (0.3, 0.0), (0.5, 0.0), (0.3, 0.02), (0.3, 0.03),
                                  (0.3, 0.05), (0.3, 0.1), (0.3, 0.15), (0.3, 0.2), (0.3, 0.3)):
            mod._PARAMETER_COVERAGE_BONUS, mod._QUESTION_READ_BONUS = covered, question
            prepared = prepare_signals(index, queries, noise)
            rows.append(dict({"parameter_coverage": covered, "question_read": question},
                             **fused_figures(index, queries, prepared, shipped_fuse)))
    finally:
        mod._PARAMETER_COVERAGE_BONUS, mod._QUESTION_READ_BONUS = saved
    return rows


def server_naming_rows(index, queries, noise):
    """The ways a query names a server besides a pure stem (session 20, sixth round), each on or off.

    ``word``: a word of the server's name as written when only its stem is
    shared ("plane", _server_naming_words); ``whole``: its whole name run
    together or apart ("browsertools", "hugging face", _whole_server_names).
    Both off: the naming of session 19.  The index's maps are emptied per point.
    """
    saved = index._naming_words, index._whole_names, index._run_together
    rows = []
    try:
        for word, whole in ((False, False), (True, False), (False, True), (True, True)):
            index._naming_words = saved[0] if word else {}
            index._whole_names, index._run_together = saved[1:] if whole else ({}, set())
            rows.append(dict({"word": word, "whole": whole}, **fused_figures(index, queries, prepare_signals(index, queries, noise), shipped_fuse)))
    finally:
        index._naming_words, index._whole_names, index._run_together = saved
    return rows


SERVER_GRID = {"tools": (3, 5), "weight": (0.0, 0.03, 0.04, 0.05, 0.06), "temperature": (0.015, 0.02, 0.03)}


def server_signal_rows(index, queries, noise, grid=SERVER_GRID):
    """A server as a whole (session 20, seventh round): _SERVER_TOOLS x _SERVER_WEIGHT x _SERVER_TEMPERATURE.

    Signals prepared per point; weight 0 is the ranking without it (once).
    The variants it was chosen over (the server's centroid, its BM25 over
    its tools' words mixed in, the mean of its best tools' fused scores)
    are in search.py's comment with their figures; they were measured on
    precomputed signals outside this script and are not kept.
    """
    mod = toolscript.search
    saved = mod._SERVER_TOOLS, mod._SERVER_WEIGHT, mod._SERVER_TEMPERATURE
    points = [(grid["tools"][0], 0.0, grid["temperature"][0])] if 0.0 in grid["weight"] else []
    points += [(k, w, t) for k in grid["tools"] for w in grid["weight"] if w for t in grid["temperature"]]
    rows = []
    try:
        for tools, weight, temperature in points:
            mod._SERVER_TOOLS, mod._SERVER_WEIGHT, mod._SERVER_TEMPERATURE = tools, weight, temperature
            row = fused_figures(index, queries, prepare_signals(index, queries, noise), shipped_fuse)
            rows.append(dict({"tools": tools if weight else None, "weight": weight, "temperature": temperature if weight else None,
                              "hits@3": round(row["recall@3"] * len(queries))}, **row))
    finally:
        mod._SERVER_TOOLS, mod._SERVER_WEIGHT, mod._SERVER_TEMPERATURE = saved
    return rows


def idf_power_rows(index, queries, noise):
    """The power the words' idf is raised to when fused with the vectors (_FUSED_IDF_POWER), and words alone at it.

    Each point prepares every query's signals again with the power patched
    and fuses them with search's own ``_fuse``; ``words_alone`` is the
    word share at that power, unfused (what the power would do to
    words-only search, which keeps the plain idf).
    """
    mod = toolscript.search
    saved = mod._FUSED_IDF_POWER
    rows = []
    try:
        for power in (1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0):
            mod._FUSED_IDF_POWER = power
            prepared = prepare_signals(index, queries, noise)
            row = dict({"power": power}, **fused_figures(index, queries, prepared, shipped_fuse))
            row["words_alone@3"] = words_alone(index, queries, power)
            rows.append(row)
    finally:
        mod._FUSED_IDF_POWER = saved
    return rows


def words_alone(index, queries, power):
    """recall@3 of the word share alone with every idf raised to ``power`` (exact names first, as search ranks)."""
    answers = {}
    for q in queries:
        lexical, _, exact = index._lexical(q["query"], similar=False, idf_power=power)
        order = sorted((i for i, v in lexical.items() if v > 0 or i in exact), key=lambda i: (i not in exact, -lexical[i], index._ids[i]))
        answers[q["query"]] = [index._ids[i] for i in order[:DEPTH]]
    return graded(lambda text: answers[text], queries)["all"]["recall@3"]


def named_server_rows(tools, queries, noise):
    """The share a named server's tools gain and the purity that makes a word name a server, every point ranked."""
    mod = toolscript.search
    saved = mod._NAMED_SERVER_BONUS, mod._NAMING_PURITY
    rows = []
    try:
        for purity in (0.5, 0.8, 0.95):
            mod._NAMING_PURITY = purity
            index = SearchIndex(tools)
            for bonus in (0.0, 0.05, 0.1, 0.15, 0.2, 0.3):
                mod._NAMED_SERVER_BONUS = bonus
                g = graded(lambda q: [r["id"] for r in index.search(q, limit=DEPTH)], queries)
                quiet = sum(not index.search(n, limit=1, threshold=0.3) for n in noise)
                rows.append({"purity": purity, "bonus": bonus, "recall@3": g["all"]["recall@3"], "mrr@10": g["all"]["mrr@10"],
                             "by_kind@3": {k: v["recall@3"] for k, v in g.items() if k != "all"},
                             "noise_rejected@0.3": round(quiet / len(noise), 4)})
    finally:
        mod._NAMED_SERVER_BONUS, mod._NAMING_PURITY = saved
    return rows


BLEND = ("_LEXICAL_WEIGHT", "_VECTOR_WEIGHT", "_VECTOR_FLOOR", "_VECTOR_CEILING")


def prepare_signals(index, queries, noise):
    """Each labelled and noise query's word shares, exact names, cosines and words' coverage, computed once."""
    def prepare(text):
        # As search does: a named server's tools are told apart without its name's words
        # (_NAME_WORDS_SET_APART), unless the query names parameters.
        named = index._named_servers(text)
        set_apart = named if named and not index._names_parameters(text) else frozenset()
        semantic = index._semantic(text, set_apart)
        if not semantic:
            named = set_apart = frozenset()
        # As search does: fused with the vectors, the words' idf is sharpened (_FUSED_IDF_POWER).
        power = getattr(toolscript.search, "_FUSED_IDF_POWER", 1.0) if semantic else 1.0
        lexical, _, exact = index._lexical(text, idf_power=power, named=set_apart)
        # The named server's tools' share is added after the fusion, as search does.
        bonus = {i: toolscript.search._NAMED_SERVER_BONUS for i, t in enumerate(index._tools) if t.get("server") in named}
        # As search does: a query naming a parameter weighs the vectors less (_IDENTIFIER_VECTOR_SCALE).
        scale = index._vector_scale(text) if semantic and hasattr(index, "_vector_scale") else 1.0
        # As search does: the shares added after the fusion (parameters a tool takes, a question
        # meeting a tool that only reads; session 19's fifth round).
        if hasattr(index, "_extras"):
            for part in index._extras(text, bool(semantic), index._names_parameters(text)).values():
                for i, extra in part.items():
                    bonus[i] = bonus.get(i, 0.0) + extra
        # As search does: each tool's server as a whole (_SERVER_WEIGHT; session 20, seventh round).
        if getattr(toolscript.search, "_SERVER_WEIGHT", 0.0) and semantic and not named and not index._names_parameters(text):
            shares = toolscript.search._server_shares(semantic, index._server_of, index._servers)
            for i, server in enumerate(index._server_of):
                bonus[i] = bonus.get(i, 0.0) + shares[server]
        return lexical, set(exact), semantic, coverage(index, text), bonus, scale

    return [(q, prepare(q["query"])) for q in queries], [prepare(n) for n in noise]


def shipped_fuse(lexical, semantic, _covered, scale):
    """search's own fusion, with the module's constants as they are (patched by a grid)."""
    return toolscript.search._fuse(lexical, semantic, scale)


def identifier_scale_rows(index, queries, noise):
    """The vectors' weight for a query naming a parameter (_IDENTIFIER_VECTOR_SCALE), with param recall per point."""
    mod = toolscript.search
    saved = mod._IDENTIFIER_VECTOR_SCALE
    rows = []
    try:
        for scale in (1.0, 0.7, 0.5, 0.3, 0.2, 0.0):
            mod._IDENTIFIER_VECTOR_SCALE = scale
            rows.append(dict({"scale": scale}, **fused_figures(index, queries, prepare_signals(index, queries, noise), shipped_fuse)))
    finally:
        mod._IDENTIFIER_VECTOR_SCALE = saved
    return rows


def with_bonus(fused, bonus):
    for i, extra in bonus.items():
        if i in fused:
            fused[i] += extra
    return fused


def coverage(index, text):
    """The share of the query's ideal score its literal words account for (0..1): how much the words can explain."""
    lookups, ideal, _ = index._lookups(text)
    mod = toolscript.search
    gain = mod._IDEAL_TF * (mod._K1 + 1) / (mod._IDEAL_TF + mod._K1)
    literal = sum(index._idf[t] * gain for t, (_, signal) in lookups.items() if signal == "bm25")
    return min(1.0, literal / ideal) if ideal else 0.0


def fused_figures(index, queries, prepared, fuse):
    """graded() and the noise rejection at 0.3 of ``fuse(lexical, semantic, coverage, vector_scale) -> {tool: score}``."""
    labelled, rejected = prepared
    ids = index._ids
    answers, kept = {}, 0
    for q, (lexical, exact, semantic, covered, bonus, scale) in labelled:
        fused = with_bonus(fuse(lexical, semantic, covered, scale), bonus)
        order = sorted(fused, key=lambda i: (i not in exact, -fused[i], ids[i]))[:DEPTH]
        answers[q["query"]] = [ids[i] for i in order]
        kept += any(ids[i] in q["ids"] and (i in exact or round(min(1.0, fused[i]), 3) >= 0.3) for i in order[:3])
    quiet = sum(1 for lexical, exact, semantic, covered, bonus, scale in rejected
                if not exact and round(min(1.0, max(with_bonus(fuse(lexical, semantic, covered, scale), bonus).values(), default=0.0)), 3) < 0.3)
    g = graded(lambda text: answers[text], queries)
    row = {"recall@3": g["all"]["recall@3"], "mrr@10": g["all"]["mrr@10"]}
    row.update({f"{kind}@3": g[kind]["recall@3"] for kind in g if kind != "all"})
    row.update({"noise_rejected@0.3": round(quiet / len(rejected), 4), "recall@3_at_0.3": round(kept / len(labelled), 4)})
    return row


def blend_grid(index, queries, prepared):
    """The score blend's weights, floor and ceiling; the rule: the best recall@3, then MRR@10, noise@0.3 >= 0.9."""
    mod = toolscript.search
    saved = {n: getattr(mod, n) for n in BLEND}
    rows = []
    try:
        for values in itertools.product((0.5, 0.7, 0.85, 1.0), (0.2, 0.3, 0.5, 0.7, 1.0), (0.2, 0.3, 0.4, 0.5), (0.8, 0.9, 1.0)):
            for n, v in zip(BLEND, values):
                setattr(mod, n, v)
            figures = fused_figures(index, queries, prepared, shipped_fuse)
            rows.append(dict(zip(("lexical_weight", "vector_weight", "floor", "ceiling"), values), **figures))
    finally:
        for n, v in saved.items():
            setattr(mod, n, v)
    shipped = fused_figures(index, queries, prepared, shipped_fuse)
    rows.sort(key=lambda r: (-r["recall@3"], -r["mrr@10"]))
    labelled, rejected = prepared
    best_noise_cosines = sorted(max(semantic.values(), default=0.0) for _, _, semantic, _, _, _ in rejected)
    return {"shipped": shipped, "chosen_by_rule": next((r for r in rows if r["noise_rejected@0.3"] >= 0.9), None),
            "best": rows[:10], "grid": len(rows),
            "noise_best_cosine": {p: round(best_noise_cosines[int(round(p * (len(best_noise_cosines) - 1)))], 3)
                                  for p in (0.5, 0.9, 0.95)}}


def adaptive_rows(index, queries, prepared):
    """Fusion whose vector weight grows as the query's literal words explain less of it (tried; not shipped).

    vector weight = base + gain x (1 - coverage); the word weight stays 0.5
    (``sum_one``: 1 - vector weight).  On both sets the best points moved a
    query or two either way from the plain blend.
    """
    mod = toolscript.search
    floor, span, alone = mod._VECTOR_FLOOR, mod._VECTOR_CEILING - mod._VECTOR_FLOOR, mod._VECTOR_ALONE

    def fuse_with(base, gain, sum_one):
        def fuse(lexical, semantic, covered, _scale):
            vector_weight = base + gain * (1.0 - covered)
            word_weight = 1.0 - vector_weight if sum_one else mod._LEXICAL_WEIGHT
            fused = {i: share * word_weight for i, share in lexical.items()}
            for i, cosine in semantic.items():
                if cosine > floor:
                    extra = vector_weight * min(1.0, (cosine - floor) / span)
                    if i in fused:
                        fused[i] += extra
                    elif cosine >= alone:
                        fused[i] = extra
            return fused
        return fuse

    rows = []
    for base, gain in ((0.3, 0.2), (0.4, 0.1), (0.4, 0.2), (0.45, 0.2), (0.5, 0.1), (0.5, 0.3), (0.5, 0.5), (0.4, 0.6), (0.5, 1.0)):
        for sum_one in (False, True):
            rows.append(dict({"base": base, "gain": gain, "sum_one": sum_one},
                             **fused_figures(index, queries, prepared, fuse_with(base, gain, sum_one))))
    rows.sort(key=lambda r: (-r["recall@3"], -r["mrr@10"]))
    return rows[:8]


def tool_text_rows(tools, queries, noise):
    """The weights of a tool vector's texts (name, first sentence, description, parameter names): hybrid and vectors alone."""
    mod = toolscript.search
    saved = mod._TOOL_TEXT_WEIGHTS
    rows = []
    try:
        for weights in ((1.0, 1.0, 1.0, 0.0), (1.5, 1.0, 1.0, 0.0), (2.0, 1.0, 1.0, 0.0), (3.0, 1.0, 1.0, 0.0),
                        (1.5, 0.5, 1.0, 0.0), (1.5, 1.0, 0.75, 0.0), (1.5, 1.0, 1.0, 0.25), (1.5, 1.0, 1.0, 0.5),
                        (1.0, 1.0, 1.0, 0.25), (2.0, 1.0, 1.0, 0.25), (2.0, 0.5, 1.0, 0.25), (3.0, 1.0, 1.0, 0.25)):
            mod._TOOL_TEXT_WEIGHTS = weights
            index = SearchIndex(tools)
            hybrid = graded(lambda q: [r["id"] for r in index.search(q, limit=DEPTH)], queries)
            alone = graded(vector_ranking(index), queries)
            quiet = sum(not index.search(n, limit=1, threshold=0.3) for n in noise)
            rows.append({"weights": list(weights), "recall@3": hybrid["all"]["recall@3"], "mrr@10": hybrid["all"]["mrr@10"],
                         "by_kind@3": {k: v["recall@3"] for k, v in hybrid.items() if k != "all"},
                         "vectors_alone@3": alone["all"]["recall@3"], "noise_rejected@0.3": round(quiet / len(noise), 4)})
    finally:
        mod._TOOL_TEXT_WEIGHTS = saved
    return rows


def tune_similar(tools, queries, noise):
    """The development-set grid the similar-words constants were picked from (see toolscript/search.py).

    Floor (the least cosine that counts), top (catalog words per query
    word; 0 is the hybrid without similar words), weight (at cosine 1) and
    rare (query words in at most this many tools look for similar words; 0:
    only words no tool has).  Each point ranks every query with search's own
    code, its constants patched; the rule: the best recall@3, then MRR@10,
    with threshold 0.3 still rejecting >= 90% of the noise queries.
    """
    mod = toolscript.search
    names = ("_SIMILAR_FLOOR", "_SIMILAR_TOP", "_SIMILAR_WEIGHT")
    saved = {n: getattr(mod, n) for n in names}
    index = SearchIndex(tools)
    if index._similar is None:
        return {"error": "no vectors data: nothing to tune"}
    shipped_rare = index._rare
    rows = []
    try:
        for floor, top in itertools.product((0.4, 0.45, 0.5, 0.55), (0, 1, 2, 3, 5)):
            mod._SIMILAR_FLOOR, mod._SIMILAR_TOP = floor, top
            index._similar.cache.clear()
            for weight, rare in itertools.product((0.45, 0.6, 0.8), (0, 2, 5, len(tools))):
                if top == 0 and (weight, rare) != (0.8, 2):
                    continue  # without similar words the other knobs change nothing
                mod._SIMILAR_WEIGHT = weight
                index._rare = rare
                g = graded(lambda q: [r["id"] for r in index.search(q, limit=DEPTH)], queries)
                quiet = sum(not index.search(n, limit=1, threshold=0.3) for n in noise)
                rows.append({"floor": floor, "top": top, "weight": weight, "rare": rare,
                             "recall@3": g["all"]["recall@3"], "mrr@10": g["all"]["mrr@10"],
                             "few_shared_words@3": g["few_shared_words"]["recall@3"], "typo@3": g["typo"]["recall@3"],
                             "noise_rejected@0.3": round(quiet / len(noise), 4)})
    finally:
        for n, v in saved.items():
            setattr(mod, n, v)
        index._rare = shipped_rare
    rows.sort(key=lambda r: (-r["recall@3"], -r["mrr@10"]))
    shipped = {"floor": saved["_SIMILAR_FLOOR"], "top": saved["_SIMILAR_TOP"], "weight": saved["_SIMILAR_WEIGHT"], "rare": shipped_rare}
    return {"shipped": shipped,
            "shipped_row": next((r for r in rows if all(r[k] == v for k, v in shipped.items())), None),
            "chosen_by_rule": next((r for r in rows if r["noise_rejected@0.3"] >= 0.9), None),
            "without_similar_words": next((r for r in rows if r["top"] == 0), None),
            "best": rows[:15], "all": rows, "grid": len(rows)}


def rrf_rows(index, queries):
    """Reciprocal rank fusion of the word ranking and the vector ranking, for comparison with the blend.

    score = 1/(k + word rank) + w/(k + vector rank); a tool a query names
    exactly still comes first.  RRF has no 0..1 score to threshold, so only
    its ranking quality is shown.
    """
    prepared = []
    for q in queries:
        semantic = index._semantic(q["query"])
        lexical, _, exact = index._lexical(q["query"], idf_power=toolscript.search._FUSED_IDF_POWER if semantic else 1.0)
        by_words = sorted((i for i, v in lexical.items() if v > 0), key=lambda i: (-lexical[i], index._ids[i]))
        by_vector = sorted(semantic, key=lambda i: (-semantic[i], index._ids[i]))
        prepared.append((q, {i: r for r, i in enumerate(by_words, 1)}, {i: r for r, i in enumerate(by_vector, 1)}, set(exact)))
    rows = []
    for k in (5, 10, 30, 60):
        for weight in (0.5, 0.75, 1.0, 1.5):
            answers = {}
            for q, words, vector, exact in prepared:
                fused = {}
                for i, r in words.items():
                    fused[i] = 1.0 / (k + r)
                for i, r in vector.items():
                    fused[i] = fused.get(i, 0.0) + weight / (k + r)
                order = sorted(fused, key=lambda i: (i not in exact, -fused[i], index._ids[i]))
                answers[q["query"]] = [index._ids[i] for i in order[:DEPTH]]
            g = graded(lambda text: answers[text], queries)
            rows.append(dict({"k": k, "vector_weight": weight, "recall@3": g["all"]["recall@3"], "mrr@10": g["all"]["mrr@10"]},
                             **{f"{kind}@3": g[kind]["recall@3"] for kind in g if kind != "all"}))
    rows.sort(key=lambda r: (-r["recall@3"], -r["mrr@10"]))
    return rows[:8]


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
        "no_thesaurus": ("_thesaurus", lambda: {}),
        "no_typo_correction": ("_max_typos", lambda word: 0),
        "no_field_weights": ("_FIELDS", {f: (1.0, b) for f, (_, b) in mod._FIELDS.items()}),
        "no_similar_words": ("_SIMILAR_TOP", 0),
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
    parser.add_argument("--dev-only", action="store_true", help="leave out the held-out set (for tuning)")
    parser.add_argument("--tune", action="store_true",
                        help="print the fusion and tool-vector grids on the four development sets (dev only with --dev-only) and stop")
    parser.add_argument("--cv", action="store_true",
                        help="print the leave-one-set-out cross-validation of the fusion's weights on the five development sets and stop")
    parser.add_argument("--tune-server", action="store_true",
                        help="print the server-as-a-whole grid (_SERVER_TOOLS x _SERVER_WEIGHT x _SERVER_TEMPERATURE) on the development sets and stop")
    parser.add_argument("--tune-similar", action="store_true", help="print the development-set similar-words grid and stop")
    parser.add_argument("--no-cli", action="store_true", help="skip the subprocess timings (CLI search, --version)")
    parser.add_argument("--only", choices=sorted(LATER_SETS),
                        help="print only that held-out set's figures (log every such run in its README)")
    args = parser.parse_args(argv)

    tools = load_catalog()
    queries = with_dev_kinds(tools, load_queries())
    noise = load_queries(key="noise")
    servers = sorted({t["server"] for t in tools})
    if args.only:
        json.dump(later_set_report(args.only, tools), sys.stdout, indent=2)
        print()
        return
    if args.tune_server:
        # The development sets: bench/eval, held-out set 1 (dev-b) and every set LATER_SETS has run (dev-c on).
        held_path = os.path.join(HELDOUT, "queries.json")
        sets = {"development": (tools, queries, noise),
                "heldout": (sorted(load_catalog(os.path.join(HELDOUT, "catalogs")) + tools, key=lambda t: t["id"]),
                            load_queries(held_path), load_queries(held_path, key="noise"))}
        for name in LATER_SETS:
            sets[name] = later_set(name, tools)[:3]
        out = {"shipped": {"tools": toolscript.search._SERVER_TOOLS, "weight": toolscript.search._SERVER_WEIGHT,
                           "temperature": toolscript.search._SERVER_TEMPERATURE}}
        for label, (set_tools, set_queries, set_noise) in sets.items():
            out[label] = server_signal_rows(SearchIndex(set_tools), set_queries, set_noise)
        json.dump(out, sys.stdout, indent=2)
        print()
        return
    if args.tune or args.cv:
        sets = {"development": (tools, queries, noise)}
        if not args.dev_only or args.cv:
            held_path = os.path.join(HELDOUT, "queries.json")
            held_tools = sorted(load_catalog(os.path.join(HELDOUT, "catalogs")) + tools, key=lambda t: t["id"])
            sets["heldout"] = (held_tools, load_queries(held_path), load_queries(held_path, key="noise"))
            for name in LATER_SETS:
                sets[name] = later_set(name, tools)[:3]
        json.dump(cross_validation(sets) if args.cv else tune(sets), sys.stdout, indent=2)
        print()
        return
    if args.tune_similar:
        json.dump(tune_similar(tools, queries, noise), sys.stdout, indent=2)
        print()
        return

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
        "rankers": {"development": ranker_rows(tools, queries)},
        "heldout": None if args.dev_only else heldout_report(tools, queries),
        **{name: None if args.dev_only else later_set_report(name, tools) for name in LATER_SETS},
        "scale": {
            "tools": len(big),
            "build_ms": big_build,
            "first_misspelt_query_ms": first_typo,
            "query_ms": big_queries["query_ms"],
            "recall@3": big_queries["recall@3"],
        },
    }
    speeds = speed(tools, queries, args.repeat)
    speeds["vectors_data"] = vectors_file()
    if not args.no_cli:
        speeds["cli_search_500_tools"] = cli_latency(queries, max(1, args.repeat // 2))
        speeds["startup"] = startup(max(10, args.repeat * 2))
    report["speed"] = speeds
    if args.misses:
        report["misses"] = misses
    json.dump(report, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
