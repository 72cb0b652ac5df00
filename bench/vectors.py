#!/usr/bin/env python3
"""Measure the distilled static vectors (toolscript/search/vectors.py) alone: quality on the evaluation sets, speed.

Quality: every tool's text (a recipe of its name split into words, description, parameters) and every
query are encoded; tools are ranked by cosine alone (no BM25) and scored like bench/search.py does
(recall@1/3/5, MRR@10, nDCG@10 per query kind; on the development set bench/search.py's mechanical kinds,
typo / shared_words / few_shared_words).  set00 (bench/search/sets/) is the default; ``--set NAME``
adds another development set (ranked against its catalogs and every earlier set's, as bench/search.py
does).  A held-out-unseen set is never ranked here.

Speed (JSON, median and p95 via bench/stats.py): the table's load time in a fresh process and in-process,
encoding a 12-word query, dot() of one query against 500 tool vectors (what the hybrid ranker does per
query), and encoding 500 tool texts (the index build); plus the data file's size.

    python3 bench/vectors.py [--recipe all] [--data FILE] [--set NAME ...] [--repeat 200]

``--data`` evaluates another candidate table (distill/distill.py -o FILE) without installing it;
``--recipe all`` compares the tool-text recipes.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import search as search_bench  # noqa: E402  (bench/search.py: catalogs, queries, graded figures)
from stats import summary  # noqa: E402

import evalsets  # noqa: E402  (bench/evalsets.py)
from toolscript.search import vectors  # noqa: E402
from toolscript.search.fields import vector_texts  # noqa: E402
from toolscript.search.toolvectors import encode_tool  # noqa: E402
from toolscript.search.tuning import DEFAULT_TUNING  # noqa: E402

_WORD_SPLIT = re.compile(r"[_\-./:]+")


def _name_words(name: str) -> str:
    """``puppeteer_screenshot`` -> ``puppeteer screenshot`` (camelCase is split by the tokenizer itself)."""
    return _WORD_SPLIT.sub(" ", name)


def _params(tool: dict) -> list:
    props = ((tool.get("inputSchema") or {}).get("properties") or {})
    return [(name, (spec or {}).get("description") or "") for name, spec in sorted(props.items()) if isinstance(spec, dict)]


def _first_sentence(text: str) -> str:
    return re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]


def _desc(t: dict) -> str:
    return t.get("description") or ""


# Each recipe: a tool -> [(weight, text)]; the tool's vector is the normalised weighted sum of the parts'
# vectors (one part = plain encode of one text).
RECIPES = {
    "name+desc": lambda t: [(1.0, f"{_name_words(t['name'])}. {_desc(t)}")],
    "name+sentence": lambda t: [(1.0, f"{_name_words(t['name'])}. {_first_sentence(_desc(t))}")],
    "name+desc+params": lambda t: [(1.0, " ".join([_name_words(t["name"]) + ".", _desc(t)]
                                                  + [_name_words(n) for n, _ in _params(t)]))],
    "name+desc+paramdocs": lambda t: [(1.0, " ".join([_name_words(t["name"]) + ".", _desc(t)]
                                                     + [f"{_name_words(n)} {d}" for n, d in _params(t)]))],
    "server+name+desc": lambda t: [(1.0, f"{_name_words(t['server'])} {_name_words(t['name'])}. {_desc(t)}")],
    "server+name+sentence": lambda t: [(1.0, f"{_name_words(t['server'])} {_name_words(t['name'])}. "
                                             f"{_first_sentence(_desc(t))}")],
    # the name and the description as separate vectors, so a long description does not drown the name
    "name|desc": lambda t: [(1.0, _name_words(t["name"])), (1.0, _desc(t))],
    "server name|desc": lambda t: [(1.0, f"{_name_words(t['server'])} {_name_words(t['name'])}"), (1.0, _desc(t))],
    "server name|sentence|desc": lambda t: [(1.0, f"{_name_words(t['server'])} {_name_words(t['name'])}"),
                                            (1.0, _first_sentence(_desc(t))), (1.0, _desc(t))],
    "server name*1.5|sentence|desc": lambda t: [(1.5, f"{_name_words(t['server'])} {_name_words(t['name'])}"),
                                                (1.0, _first_sentence(_desc(t))), (1.0, _desc(t))],
    "server name*0.7|sentence|desc": lambda t: [(0.7, f"{_name_words(t['server'])} {_name_words(t['name'])}"),
                                                (1.0, _first_sentence(_desc(t))), (1.0, _desc(t))],
    "server name|sentence|desc*0.5": lambda t: [(1.0, f"{_name_words(t['server'])} {_name_words(t['name'])}"),
                                                (1.0, _first_sentence(_desc(t))), (0.5, _desc(t))],
    "server|name|sentence|desc": lambda t: [(0.5, _name_words(t['server'])), (1.0, _name_words(t['name'])),
                                            (1.0, _first_sentence(_desc(t))), (1.0, _desc(t))],
    "server name|sentence|desc|params*0.5": lambda t: [(1.0, f"{_name_words(t['server'])} {_name_words(t['name'])}"),
                                                       (1.0, _first_sentence(_desc(t))), (1.0, _desc(t)),
                                                       (0.5, " ".join(_name_words(n) for n, _ in _params(t)))],
    "search": None,  # what toolscript.search ranks with (server name*2|sentence|desc|params*0.25)
    "name+sentence|desc": lambda t: [(1.0, f"{_name_words(t['name'])}. {_first_sentence(_desc(t))}"), (1.0, _desc(t))],
}
DEFAULT_RECIPE = "search"


def tool_vector(tool: dict, recipe: str):
    """The tool's vector under ``recipe`` (None when no part has a known token)."""
    if recipe == "search":
        return encode_tool(vector_texts(tool), DEFAULT_TUNING.tool_text_weights)
    total = None
    for weight, text in RECIPES[recipe](tool):
        part = vectors.encode(text)
        if part is None:
            continue
        total = [weight * x for x in part] if total is None else [a + weight * x for a, x in zip(total, part)]
    if total is None:
        return None
    norm = sum(x * x for x in total) ** 0.5
    return [x / norm for x in total] if norm else None


def ranker(tools: list, recipe: str):
    """``search(query) -> [ids]`` by cosine alone over ``tools`` encoded with ``recipe``."""
    encoded = [(t["id"], tool_vector(t, recipe)) for t in tools]
    encoded = [(tid, v) for tid, v in encoded if v is not None]

    def search(query: str) -> list:
        q = vectors.encode(query)
        if q is None:
            return []
        scored = sorted(((-vectors.dot(q, v), tid) for tid, v in encoded))
        return [tid for _, tid in scored[:search_bench.DEPTH]]

    return search


def quality(recipes: list, extra_sets: list) -> dict:
    dev_tools = search_bench.load_catalog()
    # bench/search.py's mechanical kinds (typo, shared_words, few_shared_words), so the paraphrase- and
    # task-like development queries are reported apart, as for the hybrid ranker.
    dev_queries = search_bench.with_dev_kinds(dev_tools, search_bench.load_queries())
    out = {}
    for recipe in recipes:
        row = {evalsets.NAMES[0]: search_bench.graded(ranker(dev_tools, recipe), dev_queries)}
        for name in extra_sets:
            row[name] = search_bench.graded(ranker(evalsets.index_tools(name), recipe), evalsets.queries(name))
        out[recipe] = row
    return out


_LOAD_CHILD = """
import sys, time
sys.path.insert(0, sys.argv[1])
start = time.perf_counter()
from toolscript.search import vectors
vectors.available()
print((time.perf_counter() - start) * 1000)
"""


def speed(repeat: int, data_size: int) -> dict:
    tools = search_bench.load_catalog()
    # 500 distinct tools: the recorded ones, then copies under a numbered server so none is identical.
    many = [dict(tools[n % len(tools)], server=f"{tools[n % len(tools)]['server']}{n // len(tools)}") for n in range(500)]
    query = "show me every commit that touched the billing module during the last week"  # 12 words... plus one
    query = " ".join(query.split()[:12])

    fresh = [float(subprocess.run([sys.executable, "-I", "-c", _LOAD_CHILD, ROOT], capture_output=True, text=True,
                                  check=True).stdout) for _ in range(max(3, repeat // 20))]

    in_process = []
    for _ in range(max(3, repeat // 20)):
        vectors.reset()
        start = time.perf_counter()
        vectors.available()
        in_process.append((time.perf_counter() - start) * 1000)
    table = vectors.loaded()

    encode_cold = []
    encode_warm = []
    for n in range(repeat):
        table.pieces.clear()  # a new query's words are not in the word cache yet
        table.packed.clear()
        start = time.perf_counter()
        vectors.encode(f"{query} {n}")
        encode_cold.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        vectors.encode(f"{query} {n}")
        encode_warm.append((time.perf_counter() - start) * 1000)

    build = []
    for _ in range(max(3, repeat // 40)):
        table.pieces.clear()
        table.packed.clear()
        start = time.perf_counter()
        tool_vectors = [v for v in (tool_vector(t, "search") for t in many) if v is not None]
        build.append((time.perf_counter() - start) * 1000)

    q = vectors.encode(query)
    dots = []
    for _ in range(repeat):
        start = time.perf_counter()
        scores = [vectors.dot(q, v) for v in tool_vectors]
        dots.append((time.perf_counter() - start) * 1000)
    assert len(scores) == 500
    as_tuples = [tuple(v) for v in tool_vectors]  # what an index may keep: math.dist takes tuples fastest
    q_tuple = tuple(q)
    dots_tuples = []
    for _ in range(repeat):
        start = time.perf_counter()
        scores = [vectors.dot(q_tuple, v) for v in as_tuples]
        dots_tuples.append((time.perf_counter() - start) * 1000)

    return {
        "dim": vectors.DIM,
        "data_bytes": data_size,
        "vocabulary": len(table.index),
        "rows_with_vectors": sum(1 for s in table.scales if s > 0),
        "load_fresh_process_ms": summary(fresh),
        "load_in_process_ms": summary(in_process),
        "encode_12_word_query_ms": summary(encode_cold),
        "encode_12_word_query_cached_words_ms": summary(encode_warm),
        "dot_500_tools_ms": summary(dots),
        "dot_500_tools_as_tuples_ms": summary(dots_tuples),
        "index_build_500_tools_ms": summary(build),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="a candidate table to evaluate instead of toolscript/search/data/embeddings.bin")
    parser.add_argument("--recipe", default=DEFAULT_RECIPE, help=f"tool-text recipe, or 'all' ({', '.join(RECIPES)})")
    parser.add_argument("--set", action="append", default=[], choices=evalsets.development()[1:], metavar="NAME",
                        help="also score this development set (repeatable)")
    parser.add_argument("--no-speed", action="store_true", help="quality only")
    parser.add_argument("--repeat", type=int, default=200, help="timed repetitions of each operation")
    args = parser.parse_args(argv)
    if args.data:
        with open(args.data, "rb") as f:
            data = f.read()
        vectors.DIM = int.from_bytes(data[8:10], "little")  # a candidate may have another width
        vectors.use_table(data)
        size = len(data)
    else:
        size = os.path.getsize(os.path.join(ROOT, "toolscript", "search", vectors.DATA))
    if not vectors.available():
        sys.exit("the embedding table did not load: run distill/distill.py (distill/README.md)")
    recipes = list(RECIPES) if args.recipe == "all" else [args.recipe]
    report = {"python": sys.version.split()[0], "quality": quality(recipes, args.set)}
    if not args.no_speed and not args.data:
        report["speed"] = speed(args.repeat, size)
    json.dump(report, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
