"""Per-query CPU cost, in pure Python, of the re-ranker's extra features over a 500-tool catalog (issue 13, LR10).

The catalog is bench/search.py's ``scaled(dev, 500)``, as ``--dev-only`` measures speed.  Each part is timed
apart per development query (thread CPU time, median and p95 in ms): the shipped search as the speed bench
runs it, the shipped search asked for its top 30 with explain, the name-field and parameter-names-field
cosines for those 30 (one dot product each, vectors kept at build) and, for comparison, the same over every
tool with packed rows, the catalog-idf query vector and its 30 cosines, the word features, and the linear
score of 30 rows.  Also the build-time cost of encoding the two extra fields.  Prints one JSON object.

    .venv/bin/python bench/rerank/cost.py
"""
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import search as sb  # noqa: E402
from stats import summary  # noqa: E402
from toolscript import search as ts  # noqa: E402
from toolscript.search import vectors  # noqa: E402
from toolscript.search.fields import vector_texts  # noqa: E402
from toolscript.search.toolvectors import PackedVectors  # noqa: E402
import features  # noqa: E402

REPEAT = 3


def timed(fn, queries):
    samples = []
    for _ in range(REPEAT):
        for q in queries:
            start = time.thread_time()
            fn(q)
            samples.append((time.thread_time() - start) * 1000)
    return summary(samples)


def main():
    dev_tools = sb.load_catalog()
    queries = [q["query"] for q in sb.load_queries()]
    big = sb.scaled(dev_tools, target=500)[:500]
    index = ts.SearchIndex(big)
    tools = index._tools
    start = time.thread_time()
    fields = [(vectors.encode(t[0]) if t[0] else None, vectors.encode(t[3]) if t[3] else None)
              for t in (vector_texts(tool) for tool in tools)]
    build_fields_ms = (time.thread_time() - start) * 1000
    start = time.thread_time()
    packed_names = PackedVectors([(i, tuple(v)) for i, (v, _) in enumerate(fields) if v is not None])
    packed_params = PackedVectors([(i, tuple(p)) for i, (_, p) in enumerate(fields) if p is not None])
    pack_ms = (time.thread_time() - start) * 1000
    idf, unseen = features.catalog_idf(tools)
    name_terms = [set(ts.terms(str(t.get("name") or ""))) for t in tools]
    all_terms = [set(ts.terms(" ".join(vector_texts(t)))) for t in tools]
    tool_vector = dict(index._vectors)
    position = {tid: i for i, tid in enumerate(index._ids)}
    for q in queries[:20]:
        index.search(q, limit=30, explain=True)  # warm caches, as a running gateway has them
    top = {q: [position[r["id"]] for r in index.search(q, limit=30, explain=True)] for q in queries}
    qvec = {q: vectors.encode(index._as_corrected(q)) for q in queries}
    weights = [0.1] * len(features.FEATURES)
    rows = {q: [[0.5] * len(features.FEATURES) for _ in top[q]] for q in queries}

    def field_cosines(q):
        v = qvec[q]
        if v is None:
            return
        for i in top[q]:
            name, params = fields[i]
            features.cos(v, name), features.cos(v, params)

    def field_cosines_packed(q):
        if qvec[q] is not None:
            packed_names.cosines(qvec[q]), packed_params.cosines(qvec[q])

    def idf_cosine(q):
        v = features.idf_query_vector(index._as_corrected(q), idf, unseen)
        for i in top[q]:
            features.cos(v, tool_vector.get(i))

    def word_features(q):
        qterms = set(ts.terms(q))
        known = [t for t in qterms if t in index._idf]
        rarest = max(known, key=lambda t: index._idf[t]) if known else None
        for i in top[q]:
            len(name_terms[i] & qterms), rarest in all_terms[i], rarest in name_terms[i]

    def linear(q):
        sorted(range(len(rows[q])), key=lambda k: -sum(w * x for w, x in zip(weights, rows[q][k])))

    out = {
        "tools": len(tools), "python": sys.version.split()[0],
        "build_extra_fields_ms": round(build_fields_ms, 1), "pack_extra_fields_ms": round(pack_ms, 1),
        "shipped_search_limit10": timed(lambda q: index.search(q, limit=10), queries),
        "shipped_search_top30_explain": timed(lambda q: index.search(q, limit=30, explain=True), queries),
        "field_cosines_top30": timed(field_cosines, queries),
        "field_cosines_packed_all_tools": timed(field_cosines_packed, queries),
        "idf_query_vector_and_top30_cosines": timed(idf_cosine, queries),
        "word_features_top30": timed(word_features, queries),
        "linear_score_top30": timed(linear, queries),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
