#!/usr/bin/env python3
"""Measure tool search quality and speed on the evaluation sets (bench/search/sets/).

Prints one JSON document:

- on the first development set (set00: 20 common servers, 126 tools): recall@1, recall@3, MRR
  (0 past rank 10), the misspelt queries' recall, query latency p50 / p95, index build time;
  the same figures for a naive keyword-overlap baseline; for score thresholds 0.2-0.5 the recall@3
  that is left and the share of the noise queries (requests no tool serves) that get nothing;
  ablations (the synonym table, the thesaurus, typo correction, field weights or similar words
  switched off, one at a time);
- per development set (key: its name), recall@1/3/5, MRR@10 and nDCG@10, overall and per query
  kind, for the rankers ``bm25`` (words only), ``vectors`` (the cosine alone),
  ``hybrid_without_similar_words`` and ``hybrid`` (what search ships), each query file alone and
  together, plus the threshold figures; a set's index is its catalogs and every earlier set's;
- ``scale``: build and query time over the first set plus renamed copies of it (~1000 tools);
- ``speed``: in-process query latency over 500 tools (wall and thread CPU time, the load
  average beside them, each query's first sight too), the 500-tool build with vectors (cold,
  and rebuilt as a gateway does for a new catalog version), ``toolscript search`` through a
  gateway holding 500 tools, ``toolscript --version`` against ``python3 -c pass``, the vectors
  data file's size.

set00 has no kind labels but ``typo``; bench labels its other queries mechanically (no ranker
involved): ``shared_words`` when at least half of the query's index terms occur in a labelled
tool's name, title, description or parameter names, else ``few_shared_words``.

    python3 bench/search.py [--repeat 5] [--misses] [--dev-only] [--no-cli]
    python3 bench/search.py --floors            # every development set against its floor (sets.json)
    python3 bench/search.py --only set21        # one development set's figures
    python3 bench/search.py --only SET --first-run     # a held-out-unseen set's one first run
    python3 bench/search.py --tune | --tune-similar | --tune-server | --cv

``--dev-only`` keeps to set00 (and the speed figures).  A held-out-unseen set is never ranked but
by ``--only NAME --first-run`` (see bench/search/sets/README.md).  ``--tune`` prints the grids the
fusion's and the tool vectors' constants were chosen from (bench/search/README.md), per
development set (set00 only with ``--dev-only``); ``--tune-similar`` the set00 grid of the
similar-words constants; ``--tune-server`` the grid of a server scored as a whole; ``--cv`` the
leave-one-set-out cross-validation of the fusion's linear weights (its fitted weights were not
adopted: they lost on two of the held-aside sets).  Each grid point ranks with
``dataclasses.replace(DEFAULT_TUNING, ...)``, the product's own code.
"""

import argparse
import copy
import dataclasses
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

import evalsets  # noqa: E402  (bench/evalsets.py)
from stats import summary  # noqa: E402  (bench/stats.py)
from toolscript.search import signals, text, thesaurus  # noqa: E402
from toolscript.search.fields import schema_text  # noqa: E402
from toolscript.search.index import SearchIndex  # noqa: E402
from toolscript.search.similar import word_row  # noqa: E402
from toolscript.search.tuning import DEFAULT_TUNING  # noqa: E402

FIRST = evalsets.NAMES[0]  # set00: the development catalogs, the one set without kind labels
KINDS = ("direct", "paraphrase", "task", "typo", "param", "multi")
DEPTH = 10  # ranks looked at for MRR


def load_catalog(directory=os.path.join(evalsets.directory(FIRST), "catalogs")):
    """Every recorded tool as a SearchIndex entry, sorted by id (default: set00's)."""
    return evalsets.load_catalog(directory)


def load_queries(path=os.path.join(evalsets.directory(FIRST), "queries.json"), key="queries"):
    """The labelled queries, or with key="noise" the requests no tool serves (default: set00's)."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)[key]


def retuned(index, **changes):
    """A copy of ``index`` that ranks with ``dataclasses.replace(index.tuning, **changes)``.

    Only for the constants search reads at query time; a constant the index reads when it is built
    (fields, naming_purity, similar_rare, similar_dims, tool_text_weights) needs ``rebuilt``.
    """
    copy_of = copy.copy(index)
    copy_of.tuning = dataclasses.replace(index.tuning, **changes)
    copy_of._near = {}
    if index._similar is not None:
        copy_of._similar = copy.copy(index._similar)
        copy_of._similar.tuning = copy_of.tuning
        copy_of._similar.cache = {}
    return copy_of


def rebuilt(tools, index=None, **changes):
    """A new index of ``tools`` with the tuning changed by ``changes`` (the vectors of ``index`` reused)."""
    tuning = dataclasses.replace(DEFAULT_TUNING if index is None else index.tuning, **changes)
    cache = None if index is None or "tool_text_weights" in changes else index.vector_cache
    return SearchIndex(tools, tuning=tuning, vector_cache=cache)


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
    """Forget every per-word cache of search (stems, terms, similar-words vectors): a cold start."""
    text.clear_caches()
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


def later_set(name, dev_tools=None):
    """A set as (index tools, queries, noise, its own catalog): the index is the set's catalogs and every
    earlier set's, as its labels assume; the queries are its query files, a text a later file repeats
    counted once.  ``dev_tools`` is unused (kept for bench/rerank's call)."""
    return evalsets.index_tools(name), evalsets.queries(name), evalsets.noise(name), evalsets.own_tools(name)


def later_set_report(name, dev_tools=None):
    """A set's graded rankers per query file and together (two authors wrote them independently: the
    difference shows how much a figure owes to who wrote the queries)."""
    tools, both, noise, held = later_set(name)
    hybrid = SearchIndex(tools)
    words = SearchIndex(tools, semantic=False)
    files = evalsets.query_files(name)
    report = {
        "catalog": {"servers": len({t["server"] for t in held}), "tools": len(held), "index_tools": len(tools)},
        "noise_queries": len(noise),
        "queries_in_both_files": sum(len(evalsets.read(name, f)["queries"]) for f in files) - len(both),
        "threshold": {"bm25": thresholds(words, both, noise),
                      "hybrid": thresholds(hybrid, both, noise) if hybrid.semantic else None},
    }
    parts = [("both_authors", both)] + [(f.replace(".json", "").replace("-", "_"), evalsets.read(name, f)["queries"]) for f in files]
    for part, queries in parts:
        if not queries or (part == "queries" and len(files) == 1):
            continue
        rows = ranker_rows(tools, queries, hybrid)
        rows["baseline_keyword_overlap"] = graded(Baseline(tools).search, queries)
        report[part] = {"queries": len(queries), "rankers": rows}
    return report


def recall_by_kind(index, queries):
    """recall@3 of ``index`` (the hybrid) per query kind and "all", and recall@1 of all ("recall@1")."""
    hits, first = {}, []
    for q in queries:
        ids = [r["id"] for r in index.search(q["query"], limit=3)]
        hit = any(i in q["ids"] for i in ids)
        first.append(bool(ids) and ids[0] in q["ids"])
        kind = q.get("kind") or ("typo" if q.get("typo") else None)
        for key in ("all", kind):
            if key:
                hits.setdefault(key, []).append(hit)
    out = {kind: sum(v) / len(v) for kind, v in hits.items()}
    out["recall@1"] = sum(first) / len(first)
    return out


def floors():
    """Every development set's recall@3 per kind (and recall@1) against its floor in sets.json, as the
    hybrid ranks it on the set's own index; ``ok`` False when any figure is below its floor."""
    out = {"sets": {}, "ok": True}
    for name in evalsets.development():
        floor = evalsets.entry(name).get("floor")
        if not floor:
            continue
        index = SearchIndex(evalsets.index_tools(name))
        if not index.semantic:
            return {"error": "no vectors data: the floors are the hybrid's", "ok": False}
        recall = recall_by_kind(index, evalsets.queries(name))
        low = {kind: round(recall[kind], 3) for kind, least in floor.items() if recall[kind] < least}
        out["sets"][name] = {"recall": {k: round(v, 4) for k, v in recall.items()}, "floor": floor, "below": low}
        out["ok"] = out["ok"] and not low
        print(f"{name}: {'below its floor ' + json.dumps(low) if low else 'at or above its floor'}", file=sys.stderr, flush=True)
    return out


def vector_ranking(index):
    """``search(query) -> [ids]`` by the vectors' cosine alone (the hybrid's vector signal, unfused)."""
    def search(query):
        cosines = index._semantic(query)
        order = sorted(cosines, key=lambda i: (-cosines[i], index._ids[i]))
        return [index._ids[i] for i in order[:DEPTH]]
    return search


def ranker_rows(tools, queries, hybrid=None):
    """graded() of the rankers: bm25 (words only), vectors (cosine alone), the hybrid without similar words, hybrid."""
    hybrid = hybrid or SearchIndex(tools)
    words = SearchIndex(tools, semantic=False)
    rows = {"bm25": graded(lambda q: [r["id"] for r in words.search(q, limit=DEPTH)], queries)}
    if hybrid.semantic:
        rows["vectors"] = graded(vector_ranking(hybrid), queries)
        before = retuned(hybrid, similar_top=0)
        rows["hybrid_without_similar_words"] = graded(lambda q: [r["id"] for r in before.search(q, limit=DEPTH)], queries)
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
            wanted = set(text.terms(q["query"]))
            best = 0.0
            for tid in q["ids"]:
                t = by_id[tid]
                names = []
                schema_text(t.get("inputSchema"), names, [])
                said = set(text.terms(" ".join([t["name"], t.get("title") or "", t.get("description") or ""] + names)))
                best = max(best, len(wanted & said) / len(wanted) if wanted else 0.0)
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
    """Size of search's data files (the vectors table, the thesaurus) and whether the vectors load."""
    from toolscript.search import vectors

    directory = os.path.join(ROOT, "toolscript", "search", "data")
    files = sorted(os.path.join(directory, f) for f in os.listdir(directory))
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


def shipped(tuning=DEFAULT_TUNING):
    """The constants the grids vary, as ``tuning`` has them."""
    return {"name_words_set_apart": tuning.name_words_set_apart, "idf_power": tuning.fused_idf_power,
            "identifier_scale": tuning.identifier_vector_scale, "parameter_coverage": tuning.parameter_coverage_bonus,
            "question_read": tuning.question_read_bonus, "blend": {n: getattr(tuning, n) for n in BLEND},
            "tool_text_weights": list(tuning.tool_text_weights),
            "named_server": {"bonus": tuning.named_server_bonus, "purity": tuning.naming_purity},
            "server_signal": {"tools": tuning.server_tools, "weight": tuning.server_weight, "temperature": tuning.server_temperature}}


def tune(sets):
    """The grids the fusion's and the tool vectors' constants were chosen from (bench/search/README.md), per set.

    ``sets``: {label: (tools, queries, noise)}; a change is taken when it helps all of them.  Per set:
    the power the words' idf is raised to in the fusion, the vectors' weight for a query that names a
    parameter, how far a named server's tools are told apart without the words naming it, the ways a
    query names a server besides a pure stem of its name, the blend grid (each query's word shares and
    cosines computed once, then fused per point), the fusions tried instead of the blend (the vector
    weight set by how much of the query the words explain; reciprocal rank fusion), the tool vector's
    text weights and the named-server share (the index rebuilt per point).
    """
    out = {"shipped": shipped()}
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
                      "named_server": named_server_rows(tools, queries, noise, index),
                      "name_words_set_apart": name_words_rows(index, queries, noise),
                      "siblings": sibling_rows(index, queries, noise),
                      "server_naming": server_naming_rows(index, queries, noise),
                      "server_signal": server_signal_rows(index, queries, noise)}
    return out


CV_GRID = {"lexical_weight": (0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65), "floor": (0.1, 0.2, 0.3),
           "ceiling": (0.9, 1.0), "named_server_bonus": (0.1, 0.15, 0.2)}


def cross_validation(sets, grid=CV_GRID):
    """Leave-one-set-out cross-validation of the fusion's linear weights (not adopted).

    The fusion is linear in the word share, the mapped cosine and the named
    server's share: fitted here are the word share's weight (the vectors'
    is 1 minus it, so a tool both fully back still scores 1), the cosine's
    floor and ceiling and the named server's share.  Each fold fits them on
    every set but one (the most recall@3 hits pooled, then MRR@10, among the
    points where the first set's noise at 0.3 stays >= 0.9) and scores
    the set left aside, next to the shipped constants there.  A fitted fusion
    would be adopted only if every fold's held-aside score were >= the
    shipped one's.  ``sets``: {label: (tools, queries, noise)}, the first
    label the first development set.  Each point fuses the signals search
    computes (prepare_signals) with search's own fusion at the point's tuning.
    """
    base = DEFAULT_TUNING
    point_of_shipped = (base.lexical_weight, base.vector_floor, base.vector_ceiling, base.named_server_bonus)
    points = [point_of_shipped] + [p for p in itertools.product(*grid.values()) if p != point_of_shipped]
    prepared = {}
    for label, (tools, queries, noise) in sets.items():
        index = SearchIndex(tools)
        if not index.semantic:
            return {"error": "no vectors data: nothing to fit"}
        prepared[label] = (index, queries, prepare_signals(index, queries, noise))

    def with_share(signals_of_query, bonus):
        # prepare_signals gave each named server's tool the shipped share; this point's instead.
        lexical, exact, semantic, covered, shares, scale = signals_of_query
        return lexical, exact, semantic, covered, {i: bonus for i in shares}, scale

    table = {}
    for point in points:
        weight, floor, ceiling, bonus = point
        tuning = dataclasses.replace(base, lexical_weight=weight, vector_weight=1.0 - weight, vector_floor=floor,
                                     vector_ceiling=ceiling)
        table[point] = {}
        for label, (index, queries, (labelled, rejected)) in prepared.items():
            points_signals = ([(q, with_share(s, bonus)) for q, s in labelled], [with_share(s, bonus) for s in rejected])
            row = fused_figures(index, queries, points_signals, fusion(tuning))
            table[point][label] = (round(row["recall@3"] * len(queries)), row["recall@3"], row["mrr@10"], row["noise_rejected@0.3"])
    labels = list(sets)
    development = labels[0]
    allowed = [p for p in points if table[p][development][3] >= 0.9]
    folds = []
    for held in labels:
        train = [label for label in labels if label != held]
        fitted = max(allowed, key=lambda p: (sum(table[p][t][0] for t in train), sum(table[p][t][2] for t in train), p == point_of_shipped))
        folds.append({"held_out": held, "fitted": dict(zip(grid, fitted)),
                      "train_hits": {"fitted": sum(table[fitted][t][0] for t in train), "shipped": sum(table[point_of_shipped][t][0] for t in train)},
                      "recall@3": {"fitted": table[fitted][held][1], "shipped": table[point_of_shipped][held][1]},
                      "mrr@10": {"fitted": table[fitted][held][2], "shipped": table[point_of_shipped][held][2]}})
    return {"grid": len(points), "shipped": dict(zip(grid, point_of_shipped)), "folds": folds,
            "adopt": all(f["recall@3"]["fitted"] >= f["recall@3"]["shipped"] for f in folds)}


def name_words_rows(index, queries, noise):
    """How far a named server's tools are told apart without the words naming it (name_words_set_apart), per point.

    ``evened`` False: a naming word's BM25F term frequency left as each tool has it; at share 0 and not
    evened, the fusion without either.
    """
    rows = []
    for even in (False, True):
        for share in (0.0, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0):
            point = retuned(index, name_words_set_apart=share)
            if not even:
                point._evened = lambda postings, named: postings
            rows.append(dict({"share": share, "evened": even}, **fused_figures(point, queries, prepare_signals(point, queries, noise))))
    return rows


def sibling_rows(index, queries, noise):
    """The shares that tell sibling tools apart, per point of their grid.

    ``parameter_coverage``: parameter_coverage_bonus (a query by parameter
    names, the tool's idf-weighed share of them); ``question_read``:
    question_read_bonus (a question, a tool that only reads).  Each point
    prepares every query's signals again at its tuning.
    """
    rows = []
    for covered, question in ((0.0, 0.0), (0.1, 0.0), (0.3, 0.0), (0.5, 0.0), (0.3, 0.02), (0.3, 0.03),
                              (0.3, 0.05), (0.3, 0.1), (0.3, 0.15), (0.3, 0.2), (0.3, 0.3)):
        point = retuned(index, parameter_coverage_bonus=covered, question_read_bonus=question)
        rows.append(dict({"parameter_coverage": covered, "question_read": question},
                         **fused_figures(point, queries, prepare_signals(point, queries, noise))))
    return rows


def server_naming_rows(index, queries, noise):
    """The ways a query names a server besides a pure stem, each on or off.

    ``word``: a word of the server's name as written when only its stem is
    shared ("plane", signals.server_naming_words); ``whole``: its whole name run
    together or apart ("browsertools", "hugging face", signals.whole_server_names).
    Both off: naming by a pure stem alone.  The index's maps are emptied per point.
    """
    rows = []
    for word, whole in ((False, False), (True, False), (False, True), (True, True)):
        point = retuned(index)
        if not word:
            point._naming_words = {}
        if not whole:
            point._whole_names, point._run_together = {}, set()
        rows.append(dict({"word": word, "whole": whole}, **fused_figures(point, queries, prepare_signals(point, queries, noise))))
    return rows


SERVER_GRID = {"tools": (3, 5), "weight": (0.0, 0.03, 0.04, 0.05, 0.06), "temperature": (0.015, 0.02, 0.03)}


def server_signal_rows(index, queries, noise, grid=SERVER_GRID):
    """A server as a whole: server_tools x server_weight x server_temperature.

    Signals prepared per point; weight 0 is the ranking without it (once).
    The variants it was chosen over (the server's centroid, its BM25 over
    its tools' words mixed in, the mean of its best tools' fused scores)
    are in bench/search/README.md with their figures; they were measured on
    precomputed signals outside this script and are not kept.
    """
    points = [(grid["tools"][0], 0.0, grid["temperature"][0])] if 0.0 in grid["weight"] else []
    points += [(k, w, t) for k in grid["tools"] for w in grid["weight"] if w for t in grid["temperature"]]
    rows = []
    for tools, weight, temperature in points:
        point = retuned(index, server_tools=tools, server_weight=weight, server_temperature=temperature)
        row = fused_figures(point, queries, prepare_signals(point, queries, noise))
        rows.append(dict({"tools": tools if weight else None, "weight": weight, "temperature": temperature if weight else None,
                          "hits@3": round(row["recall@3"] * len(queries))}, **row))
    return rows


def idf_power_rows(index, queries, noise):
    """The power the words' idf is raised to when fused with the vectors (fused_idf_power), and words alone at it.

    Each point prepares every query's signals again at its power and fuses
    them with search's own fusion; ``words_alone`` is the word share at that
    power, unfused (what the power would do to words-only search, which
    keeps the plain idf).
    """
    rows = []
    for power in (1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0):
        point = retuned(index, fused_idf_power=power)
        row = dict({"power": power}, **fused_figures(point, queries, prepare_signals(point, queries, noise)))
        row["words_alone@3"] = words_alone(point, queries, power)
        rows.append(row)
    return rows


def words_alone(index, queries, power):
    """recall@3 of the word share alone with every idf raised to ``power`` (exact names first, as search ranks)."""
    answers = {}
    for q in queries:
        lexical, _, exact = index._lexical(q["query"], similar=False, idf_power=power)
        order = sorted((i for i, v in lexical.items() if v > 0 or i in exact), key=lambda i: (i not in exact, -lexical[i], index._ids[i]))
        answers[q["query"]] = [index._ids[i] for i in order[:DEPTH]]
    return graded(lambda text: answers[text], queries)["all"]["recall@3"]


def named_server_rows(tools, queries, noise, index=None):
    """The share a named server's tools gain and the purity that makes a word name a server, every point ranked."""
    rows = []
    for purity in (0.5, 0.8, 0.95):
        built = rebuilt(tools, index, naming_purity=purity)
        for bonus in (0.0, 0.05, 0.1, 0.15, 0.2, 0.3):
            point = retuned(built, named_server_bonus=bonus)
            g = graded(lambda q: [r["id"] for r in point.search(q, limit=DEPTH)], queries)
            quiet = sum(not point.search(n, limit=1, threshold=0.3) for n in noise)
            rows.append({"purity": purity, "bonus": bonus, "recall@3": g["all"]["recall@3"], "mrr@10": g["all"]["mrr@10"],
                         "by_kind@3": {k: v["recall@3"] for k, v in g.items() if k != "all"},
                         "noise_rejected@0.3": round(quiet / len(noise), 4)})
    return rows


BLEND = ("lexical_weight", "vector_weight", "vector_floor", "vector_ceiling")


def prepare_signals(index, queries, noise):
    """Each labelled and noise query's word shares, exact names, cosines and words' coverage, computed once
    at ``index``'s tuning, as search computes them."""
    tuning = index.tuning

    def prepare(query):
        # As search does: a named server's tools are told apart without its name's words, unless the query
        # names parameters.
        named = index._named_servers(query)
        set_apart = named if named and not index._names_parameters(query) else frozenset()
        semantic = index._semantic(query, set_apart)
        if not semantic:
            named = set_apart = frozenset()
        power = tuning.fused_idf_power if semantic else 1.0
        lexical, _, exact = index._lexical(query, idf_power=power, named=set_apart)
        # The named server's tools' share is added after the fusion, as search does.
        bonus = {i: tuning.named_server_bonus for i, t in enumerate(index._tools) if t.get("server") in named}
        scale = index._vector_scale(query) if semantic else 1.0
        # The shares added after the fusion: parameters a tool takes, a question meeting a tool that only reads.
        for part in index._extras(query, bool(semantic), index._names_parameters(query)).values():
            for i, extra in part.items():
                bonus[i] = bonus.get(i, 0.0) + extra
        # Each tool's server as a whole.
        if tuning.server_weight and semantic and not named and not index._names_parameters(query):
            shares = signals.server_shares(semantic, index._server_of, index._servers, tuning)
            for i, server in enumerate(index._server_of):
                bonus[i] = bonus.get(i, 0.0) + shares[server]
        return lexical, set(exact), semantic, coverage(index, query), bonus, scale

    return [(q, prepare(q["query"])) for q in queries], [prepare(n) for n in noise]


def fusion(tuning):
    """``fuse(lexical, semantic, covered, vector_scale)``: search's own fusion at ``tuning``."""
    return lambda lexical, semantic, _covered, scale: signals.fuse(lexical, semantic, tuning, scale)


def identifier_scale_rows(index, queries, noise):
    """The vectors' weight for a query naming a parameter (identifier_vector_scale), with param recall per point."""
    rows = []
    for scale in (1.0, 0.7, 0.5, 0.3, 0.2, 0.0):
        point = retuned(index, identifier_vector_scale=scale)
        rows.append(dict({"scale": scale}, **fused_figures(point, queries, prepare_signals(point, queries, noise))))
    return rows


def with_bonus(fused, bonus):
    for i, extra in bonus.items():
        if i in fused:
            fused[i] += extra
    return fused


def coverage(index, query):
    """The share of the query's ideal score its literal words account for (0..1): how much the words can explain."""
    lookups, ideal, _ = index._lookups(query)
    tuning = index.tuning
    gain = tuning.ideal_tf * (tuning.k1 + 1) / (tuning.ideal_tf + tuning.k1)
    literal = sum(index._idf[t] * gain for t, (_, signal) in lookups.items() if signal == "bm25")
    return min(1.0, literal / ideal) if ideal else 0.0


def fused_figures(index, queries, prepared, fuse=None):
    """graded() and the noise rejection at 0.3 of ``fuse(lexical, semantic, coverage, vector_scale) -> {tool: score}``
    (default: search's fusion at ``index``'s tuning)."""
    fuse = fuse or fusion(index.tuning)
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
    rows = []
    for values in itertools.product((0.5, 0.7, 0.85, 1.0), (0.2, 0.3, 0.5, 0.7, 1.0), (0.2, 0.3, 0.4, 0.5), (0.8, 0.9, 1.0)):
        tuning = dataclasses.replace(index.tuning, **dict(zip(BLEND, values)))
        figures = fused_figures(index, queries, prepared, fusion(tuning))
        rows.append(dict(zip(("lexical_weight", "vector_weight", "floor", "ceiling"), values), **figures))
    shipped_row = fused_figures(index, queries, prepared)
    rows.sort(key=lambda r: (-r["recall@3"], -r["mrr@10"]))
    labelled, rejected = prepared
    best_noise_cosines = sorted(max(semantic.values(), default=0.0) for _, _, semantic, _, _, _ in rejected)
    return {"shipped": shipped_row, "chosen_by_rule": next((r for r in rows if r["noise_rejected@0.3"] >= 0.9), None),
            "best": rows[:10], "grid": len(rows),
            "noise_best_cosine": {p: round(best_noise_cosines[int(round(p * (len(best_noise_cosines) - 1)))], 3)
                                  for p in (0.5, 0.9, 0.95)}}


def adaptive_rows(index, queries, prepared):
    """Fusion whose vector weight grows as the query's literal words explain less of it (tried; not shipped).

    vector weight = base + gain x (1 - coverage); the word weight stays the shipped one
    (``sum_one``: 1 - vector weight).  The best points moved a query or two either way from the plain blend.
    """
    tuning = index.tuning
    floor, span, alone = tuning.vector_floor, tuning.vector_ceiling - tuning.vector_floor, tuning.vector_alone

    def fuse_with(base, gain, sum_one):
        def fuse(lexical, semantic, covered, _scale):
            vector_weight = base + gain * (1.0 - covered)
            word_weight = 1.0 - vector_weight if sum_one else tuning.lexical_weight
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
    rows = []
    for weights in ((1.0, 1.0, 1.0, 0.0), (1.5, 1.0, 1.0, 0.0), (2.0, 1.0, 1.0, 0.0), (3.0, 1.0, 1.0, 0.0),
                    (1.5, 0.5, 1.0, 0.0), (1.5, 1.0, 0.75, 0.0), (1.5, 1.0, 1.0, 0.25), (1.5, 1.0, 1.0, 0.5),
                    (1.0, 1.0, 1.0, 0.25), (2.0, 1.0, 1.0, 0.25), (2.0, 0.5, 1.0, 0.25), (3.0, 1.0, 1.0, 0.25)):
        index = rebuilt(tools, tool_text_weights=weights)
        hybrid = graded(lambda q: [r["id"] for r in index.search(q, limit=DEPTH)], queries)
        alone = graded(vector_ranking(index), queries)
        quiet = sum(not index.search(n, limit=1, threshold=0.3) for n in noise)
        rows.append({"weights": list(weights), "recall@3": hybrid["all"]["recall@3"], "mrr@10": hybrid["all"]["mrr@10"],
                     "by_kind@3": {k: v["recall@3"] for k, v in hybrid.items() if k != "all"},
                     "vectors_alone@3": alone["all"]["recall@3"], "noise_rejected@0.3": round(quiet / len(noise), 4)})
    return rows


def tune_similar(tools, queries, noise):
    """The set00 grid the similar-words constants were picked from (bench/search/README.md).

    Floor (the least cosine that counts), top (catalog words per query
    word; 0 is the hybrid without similar words), weight (at cosine 1) and
    rare (query words in at most this many tools look for similar words; 0:
    only words no tool has).  Each point ranks every query with search's own
    code at its tuning; the rule: the best recall@3, then MRR@10, with
    threshold 0.3 still rejecting >= 90% of the noise queries.
    """
    index = SearchIndex(tools)
    if index._similar is None:
        return {"error": "no vectors data: nothing to tune"}
    tuning = index.tuning
    rows = []
    for floor, top in itertools.product((0.4, 0.45, 0.5, 0.55), (0, 1, 2, 3, 5)):
        for weight, rare in itertools.product((0.45, 0.6, 0.8), (0, 2, 5, len(tools))):
            if top == 0 and (weight, rare) != (0.8, 2):
                continue  # without similar words the other knobs change nothing
            point = retuned(index, similar_floor=floor, similar_top=top, similar_weight=weight)
            point._rare = rare
            g = graded(lambda q: [r["id"] for r in point.search(q, limit=DEPTH)], queries)
            quiet = sum(not point.search(n, limit=1, threshold=0.3) for n in noise)
            rows.append({"floor": floor, "top": top, "weight": weight, "rare": rare,
                         "recall@3": g["all"]["recall@3"], "mrr@10": g["all"]["mrr@10"],
                         "few_shared_words@3": g["few_shared_words"]["recall@3"], "typo@3": g["typo"]["recall@3"],
                         "noise_rejected@0.3": round(quiet / len(noise), 4)})
    rows.sort(key=lambda r: (-r["recall@3"], -r["mrr@10"]))
    shipped_point = {"floor": tuning.similar_floor, "top": tuning.similar_top, "weight": tuning.similar_weight, "rare": index._rare}
    return {"shipped": shipped_point,
            "shipped_row": next((r for r in rows if all(r[k] == v for k, v in shipped_point.items())), None),
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
        lexical, _, exact = index._lexical(q["query"], idf_power=index.tuning.fused_idf_power if semantic else 1.0)
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
    """Quality with one part of the ranker switched off at a time: the synonym table or the thesaurus
    emptied, the rest through the tuning (no typo correction, every field weight 1, no similar words)."""
    base = DEFAULT_TUNING
    switches = {
        "no_synonyms": ("synonyms", None),
        "no_thesaurus": ("thesaurus", None),
        "no_typo_correction": (None, {"typo_lengths": (sys.maxsize, sys.maxsize)}),
        "no_field_weights": (None, {"fields": tuple((f, 1.0, b) for f, _, b in base.fields)}),
        "no_similar_words": (None, {"similar_top": 0}),
    }
    out = {}
    for label, (table, changes) in switches.items():
        saved_synonyms, saved_load = thesaurus.SYNONYMS, thesaurus.load
        if table == "synonyms":
            thesaurus.SYNONYMS = {}
        elif table == "thesaurus":
            thesaurus.load = lambda: {}
        try:
            index = SearchIndex(tools, tuning=dataclasses.replace(base, **(changes or {})))
            figures, _ = evaluate(lambda q: [r["id"] for r in index.search(q, limit=DEPTH)], queries)
        finally:
            thesaurus.SYNONYMS, thesaurus.load = saved_synonyms, saved_load
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
    parser.add_argument("--dev-only", action="store_true", help="keep to set00 and the speed figures (for tuning)")
    parser.add_argument("--floors", action="store_true",
                        help="rank every development set and check it against its floor in sets.json (exit 1 when below); stop")
    parser.add_argument("--tune", action="store_true",
                        help="print the fusion and tool-vector grids on the development sets (set00 only with --dev-only) and stop")
    parser.add_argument("--cv", action="store_true",
                        help="print the leave-one-set-out cross-validation of the fusion's weights on the development sets and stop")
    parser.add_argument("--tune-server", action="store_true",
                        help="print the server-as-a-whole grid (server_tools x server_weight x server_temperature) on the development sets and stop")
    parser.add_argument("--tune-similar", action="store_true", help="print set00's similar-words grid and stop")
    parser.add_argument("--no-cli", action="store_true", help="skip the subprocess timings (CLI search, --version)")
    parser.add_argument("--only", choices=evalsets.NAMES[1:], metavar="SET",
                        help="print only that set's figures (a held-out-unseen set only with --first-run)")
    parser.add_argument("--first-run", action="store_true",
                        help="with --only: rank a held-out-unseen set, once (bench/search/sets/README.md says what follows)")
    args = parser.parse_args(argv)

    tools = load_catalog()
    queries = with_dev_kinds(tools, load_queries())
    noise = load_queries(key="noise")
    servers = sorted({t["server"] for t in tools})
    if args.floors:
        result = floors()
        json.dump(result, sys.stdout, indent=2)
        print()
        if not result["ok"]:
            sys.exit(1)
        return
    if args.only:
        if evalsets.entry(args.only)["role"] == evalsets.UNSEEN and not args.first_run:
            parser.error(f"{args.only} is held out and unseen: rank it only for its first run (--first-run), "
                         "then record the figures and make it a development set (bench/search/sets/README.md)")
        json.dump(later_set_report(args.only), sys.stdout, indent=2)
        print()
        return
    # The development sets by name: set00 with its mechanical kinds, then every later one on its own index.
    development = {FIRST: (tools, queries, noise)}
    later = [name for name in evalsets.development() if name != FIRST]
    if args.tune_server:
        for name in later:
            development[name] = later_set(name)[:3]
        out = {"shipped": shipped()["server_signal"]}
        for label, (set_tools, set_queries, set_noise) in development.items():
            out[label] = server_signal_rows(SearchIndex(set_tools), set_queries, set_noise)
        json.dump(out, sys.stdout, indent=2)
        print()
        return
    if args.tune or args.cv:
        if not args.dev_only or args.cv:
            for name in later:
                development[name] = later_set(name)[:3]
        json.dump(cross_validation(development) if args.cv else tune(development), sys.stdout, indent=2)
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
        "rankers": {FIRST: ranker_rows(tools, queries)},
        **{name: None if args.dev_only else later_set_report(name) for name in evalsets.development() if name != FIRST},
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
