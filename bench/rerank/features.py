"""Feature rows for a learned re-ranker over the shipped search's top 30 (issue 13, helper LR10; measure only).

For each query of the eight development sets (dev, dev-b .. dev-h; never held-out 8) the shipped
``SearchIndex.search(q, limit=30, explain=True)`` gives the candidates; each candidate gets one row of weak
signals: the shipped score and its explain parts, the blended cosine, the cosines of the tool's name field and
parameter-names field alone, a catalog-idf-weighted query cosine, its rank, its server's share, and cheap word
features.  Nothing under toolscript/ changes: the extra signals are computed here from its private helpers.

    /work/venv-distill/bin/python bench/rerank/features.py [OUT_DIR]   # writes OUT_DIR/<set>.json (not committed)
"""
import json
import math
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import search as sb  # noqa: E402  (bench/search.py)
from toolscript import search as ts  # noqa: E402
from toolscript.search import vectors  # noqa: E402
from toolscript.search.signals import server_shares  # noqa: E402
from toolscript.search.fields import vector_texts  # noqa: E402
from toolscript.search.text import STOPWORDS  # noqa: E402

DEPTH = 30
# The eight development sets the study used, by short name (bench/search/sets/set02 .. set07 for c .. h).
LATER = (("c", "set02"), ("d", "set03"), ("e", "set04"), ("f", "set05"), ("g", "set06"), ("h", "set07"))
FEATURES = (
    ["score", "log_rank", "top_gap"]
    + ["sig_" + s for s in ts.SIGNALS]
    + ["cosine", "cosine_gap", "name_cosine", "params_cosine", "idf_cosine", "server_share",
       "name_words", "rarest_word", "name_rarest_word", "same_server_as_first"]
)


def dev_sets():
    """Short name -> (tools, queries) for the eight development sets, as /work/runs/score7.py builds them."""
    dev_tools = sb.load_catalog()
    sets = {"dev": (dev_tools, sb.with_dev_kinds(dev_tools, sb.load_queries()))}
    sets["b"] = sb.later_set("set01")[:2]
    for key, name in LATER:
        tools, queries, _noise, _ = sb.later_set(name, dev_tools)
        sets[key] = (tools, queries)
    return sets


_FIELD_CACHE = {}


def field_vectors(tool):
    """(name-field vector, parameter-names vector) of a tool, as the blend's parts 0 and 3 encode them."""
    texts = vector_texts(tool)
    key = "\n".join(texts)
    if key not in _FIELD_CACHE:
        _FIELD_CACHE[key] = (vectors.encode(texts[0]) if texts[0] else None, vectors.encode(texts[3]) if texts[3] else None)
    return _FIELD_CACHE[key]


def catalog_idf(tools):
    """Word -> idf over the catalog's tool texts (document frequency of each tokenized word)."""
    df = {}
    for tool in tools:
        for word in set(ts.tokenize(" ".join(vector_texts(tool)))):
            df[word] = df.get(word, 0) + 1
    n = len(tools)
    return {w: math.log((n + 1) / (c + 0.5)) for w, c in df.items()}, math.log((n + 1) / 0.5)


def idf_query_vector(text, idf, unseen):
    """The query's unit vector with each word weighed by (its catalog idf / an unseen word's) ** 0.5."""
    total = None
    for word in ts.tokenize(text):
        if word in STOPWORDS:
            continue
        v = vectors.encode(word)
        if v is None:
            continue
        w = (idf.get(word, unseen) / unseen) ** 0.5
        total = [w * x for x in v] if total is None else [a + w * x for a, x in zip(total, v)]
    if total is None:
        return None
    norm = math.hypot(*total)
    return [x / norm for x in total] if norm else None


def cos(a, b):
    return vectors.dot(a, b) if a is not None and b is not None else 0.0


def query_rows(index, tools, idf, unseen, word_idf, query):
    """(ids, feature rows) of the shipped top DEPTH for ``query``."""
    results = index.search(query, limit=DEPTH, explain=True)
    if not results:
        return [], []
    position = {tid: i for i, tid in enumerate(index._ids)}
    text = index._as_corrected(query)
    qvec = vectors.encode(text)
    cosines = index._semantic(query) if qvec is not None else {}
    shares = server_shares(cosines, index._server_of, index._servers, index.tuning) if cosines else [0.0] * index._servers
    qidf = idf_query_vector(text, idf, unseen)
    tool_vector = dict(index._vectors or [])
    qterms = [t for t in set(ts.terms(query))]
    known = [t for t in qterms if t in word_idf]
    rarest = max(known, key=lambda t: word_idf[t]) if known else None
    top_score = sum(results[0].get("signals", {}).values())
    best_cos = max((cosines.get(position[r["id"]], 0.0) for r in results), default=0.0)
    first_server = results[0]["server"]
    ids, rows = [], []
    for rank, r in enumerate(results, 1):
        i = position[r["id"]]
        tool = tools[i]
        signals = r.get("signals", {})
        score = sum(signals.values())
        name_vec, params_vec = field_vectors(tool)
        name_terms = set(ts.terms(str(tool.get("name") or "")))
        all_terms = set(ts.terms(" ".join(vector_texts(tool))))
        c = cosines.get(i, 0.0)
        row = [score, math.log(rank), top_score - score]
        row += [signals.get(s, 0.0) for s in ts.SIGNALS]
        row += [
            c, best_cos - c, cos(qvec, name_vec), cos(qvec, params_vec), cos(qidf, tool_vector.get(i)),
            shares[index._server_of[i]],
            len(name_terms & set(qterms)) / len(qterms) if qterms else 0.0,
            1.0 if rarest and rarest in all_terms else 0.0,
            1.0 if rarest and rarest in name_terms else 0.0,
            1.0 if r["server"] == first_server else 0.0,
        ]
        ids.append(r["id"])
        rows.append([round(x, 5) for x in row])
    return ids, rows


def dump(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    for name, (tools, queries) in dev_sets().items():
        started = time.time()
        index = ts.SearchIndex(tools)
        idf, unseen = catalog_idf(index._tools)
        word_idf = index._idf
        out = []
        for q in queries:
            ids, rows = query_rows(index, index._tools, idf, unseen, word_idf, q["query"])
            out.append({"query": q["query"], "kind": q.get("kind") or ("typo" if q.get("typo") else "untagged"),
                        "wanted": list(q["ids"]), "ids": ids, "rows": rows})
        with open(os.path.join(out_dir, f"{name}.json"), "w") as f:
            json.dump({"features": FEATURES, "queries": out}, f)
        print(json.dumps({"set": name, "queries": len(out), "tools": len(tools), "seconds": round(time.time() - started, 1)}), flush=True)


if __name__ == "__main__":
    dump(sys.argv[1] if len(sys.argv) > 1 else "/tmp/lr10-features")
