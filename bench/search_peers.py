#!/usr/bin/env python3
"""The peers' tool-search figures next to toolscript's, from one run, on every development set.

Two peers: the sentence-embedding model all-MiniLM-L6-v2 alone, and the Deno original's hybrid (those
embeddings fused with Fuse.js fuzzy matching). This script measures them, and toolscript's own rankers
(bench/search.py's ``ranker_rows``), on the same sets in the same run: each development set of
bench/search/sets/sets.json (key: its name; index: its catalogs and every earlier set's; set00's kinds
from bench/search.py's ``with_dev_kinds``), each query file alone and both together (a query both
authors wrote counted once). A held-out-unseen set is never run here. Nothing of ours is tuned here by
this script: these are figures, not a grid.

Rankers, each graded by bench/search.py's ``graded`` (recall@1/3/5, MRR@10, nDCG@10 per kind):

- ``teacher``: all-MiniLM-L6-v2 (the PyPI wheel distill/ uses; its forward pass is distill/distill.py's,
  in torch on one thread), BERT tokenisation as its tokenizer.json says, mean pooling, normalised; a
  tool's text is the Deno original's (``[server, name with _ -> space, description, "Inputs: p1 (d1),
  p2"]`` joined by spaces); ranked by cosine.
- ``deno_hybrid``: the Deno original's engine: Fuse.js (npm ``fuse.js``, FUSE_VERSION) with its
  exact options over serverName / toolName / description, score 1 - fuse score; the union of the
  semantic top 2L and the fuzzy top 2L (L = 10), a missing component 0, 0.7 x semantic + 0.3 x fuzzy,
  no threshold. Fuse.js runs in one long-lived node process (one JSON line per request on stdin).
- ``toolscript``: bench/search.py's rows (bm25, vectors, hybrid_without_similar_words, hybrid).

Plus each ranker's per-query latency (median, p95; one thread) and the index build time for the set's
tools. The teacher's build embeds the tools one at a time, as the Deno original does; its query time
is the query's forward pass plus the cosine scan; the hybrid's adds Fuse.js's search time measured inside
node (the pipe's round trip is not counted) and the fusion.

Needs what distill/ needs (numpy, torch, the teacher wheel: /work/venv-distill, see distill/README.md)
and node with fuse.js:

    npm install --prefix /tmp/toolscript-fuse fuse.js@7.5.0
    /work/venv-distill/bin/python bench/search_peers.py --fuse-dir /tmp/toolscript-fuse/node_modules

``--fuse-dir`` (or TOOLSCRIPT_FUSE_DIR) is the node_modules directory holding fuse.js; the default is
tests/peers/node_modules, which has it once tests/peers/package.json's fuse.js is installed. Prints one
JSON document. Log every run of a held-out set in its README.
"""

import os

# Before numpy/torch load: one BLAS/OpenMP thread, so the teacher runs on one thread like our ranker.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import unicodedata  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "distill"))

try:
    import numpy as np  # noqa: E402
    import torch  # noqa: E402,F401
except ImportError:
    sys.exit("bench/search_peers.py needs numpy and torch: run it with /work/venv-distill/bin/python "
             "(or pip install --no-deps --require-hashes -r distill/requirements.txt)")

import distill  # noqa: E402  (distill/distill.py: the teacher's weights and forward pass)
import evalsets  # noqa: E402  (bench/evalsets.py)
import search as ours  # noqa: E402  (bench/search.py)
from stats import summary  # noqa: E402  (bench/stats.py)
from toolscript.search import SearchIndex  # noqa: E402

FUSE_VERSION = "7.5.0"  # what the Deno original's "fuse.js": "^7.0.0" resolves to on 2026-11-24
LIMIT = ours.DEPTH  # L: the Deno engine keeps the top 2L of each signal, then the top L
ALPHA = 0.7  # the Deno original's config.alpha when semantic search is available
# transformers.js truncates to the tokenizer's model_max_length (tokenizer_config.json: 512), not to
# sentence-transformers' 256 nor tokenizer.json's 128: the Deno original sees the whole text up to 512.
MAX_TOKENS = 512

# The Deno original's src/search/fuzzy.ts options, exactly (anchor note 6.3).
FUSE_SERVER = r"""
const Fuse = require("fuse.js");
const readline = require("readline");
const OPTIONS = {
  keys: [{name: "serverName", weight: 0.3}, {name: "toolName", weight: 0.5}, {name: "description", weight: 0.2}],
  threshold: 0.4, includeScore: true, minMatchCharLength: 2, ignoreLocation: true, useExtendedSearch: false,
};
let fuse = null;
readline.createInterface({input: process.stdin}).on("line", (line) => {
  const msg = JSON.parse(line);
  let out;
  if (msg.tools) {
    const start = performance.now();
    fuse = new Fuse(msg.tools, OPTIONS);
    out = {build_ms: performance.now() - start};
  } else {
    const start = performance.now();
    const found = fuse.search(msg.query, {limit: msg.limit});
    out = {ms: performance.now() - start, hits: found.map((r) => [r.refIndex, r.score])};
  }
  process.stdout.write(JSON.stringify(out) + "\n");
});
"""


# --- the teacher: BERT tokenisation (tokenizer.json: BertNormalizer, BertPreTokenizer, WordPiece) -------

def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_chinese(cp: int) -> bool:
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or 0x2A700 <= cp <= 0x2B73F
            or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def bert_words(text: str) -> list:
    """BertNormalizer (clean, Chinese chars apart, lowercase, accents stripped) then BertPreTokenizer."""
    chars = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD:
            continue
        if ch in "\t\n\r" or unicodedata.category(ch) == "Zs":
            chars.append(" ")
        elif unicodedata.category(ch) in ("Cc", "Cf"):
            continue
        elif _is_chinese(cp):
            chars.append(" " + ch + " ")
        else:
            chars.append(ch)
    text = unicodedata.normalize("NFD", "".join(chars).lower())
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Mn")
    words = []
    for chunk in text.split():
        current = ""
        for ch in chunk:
            if _is_punctuation(ch):
                if current:
                    words.append(current)
                words.append(ch)
                current = ""
            else:
                current += ch
        if current:
            words.append(current)
    return words


def wordpiece(text: str, vocab: dict, unknown: int) -> list:
    """The teacher's WordPiece ids of ``text`` (greedy longest match, ## continuations, 100-char words)."""
    ids = []
    for word in bert_words(text):
        ids.extend([unknown] if len(word) > 100 else distill.word_pieces(word, vocab, unknown))
    return ids


class Teacher:
    """all-MiniLM-L6-v2 on one thread: ``embed(text)`` is its mean-pooled, normalised sentence vector."""

    def __init__(self) -> None:
        model = distill.teacher_dir()
        self.weights = distill.load_teacher(model)
        vocab = distill.read_vocab(model)
        self.vocab = {token: n for n, token in enumerate(vocab)}
        self.cls, self.sep, self.unknown = self.vocab["[CLS]"], self.vocab["[SEP]"], self.vocab["[UNK]"]
        self.longest = 0  # the longest text seen, in tokens before truncation

    def embed(self, text: str) -> np.ndarray:
        pieces = wordpiece(text, self.vocab, self.unknown)
        self.longest = max(self.longest, len(pieces) + 2)
        ids = [self.cls] + pieces[:MAX_TOKENS - 2] + [self.sep]
        # One sequence, no padding: the attention mask is all ones, so the mean over tokens is the pooling.
        vector = distill.forward(self.weights, np.array([ids], dtype=np.int64))[0].mean(0)
        return vector / np.linalg.norm(vector)


def deno_tool_text(tool: dict) -> str:
    """The Deno original's searchable text for a tool (src/search/semantic.ts; anchor note 6.2)."""
    properties = ((tool.get("inputSchema") or {}).get("properties")) or {}
    inputs = [f"{name} ({spec['description']})" if isinstance(spec, dict) and spec.get("description") else name
              for name, spec in properties.items()]
    parts = [tool["server"], tool["name"].replace("_", " "), tool.get("description") or "",
             "Inputs: " + ", ".join(inputs) if inputs else ""]
    return " ".join(p for p in parts if p)


# --- Fuse.js in one node process --------------------------------------------------------------------

class Fuzzy:
    """Fuse.js with the Deno original's options, in a node process that lives for the whole run."""

    def __init__(self, fuse_dir: str) -> None:
        self.process = subprocess.Popen(["node", "-e", FUSE_SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        env=dict(os.environ, NODE_PATH=fuse_dir), text=True, bufsize=1)

    def ask(self, message: dict) -> dict:
        self.process.stdin.write(json.dumps(message) + "\n")
        line = self.process.stdout.readline()
        if not line:
            sys.exit("the Fuse.js node process ended: run node -e \"require('fuse.js')\" with NODE_PATH=<--fuse-dir> to see why")
        return json.loads(line)

    def build(self, tools: list) -> float:
        docs = [{"serverName": t["server"], "toolName": t["name"], "description": t.get("description") or ""} for t in tools]
        return self.ask({"tools": docs})["build_ms"]

    def search(self, query: str, limit: int):
        answer = self.ask({"query": query, "limit": limit})
        return answer["hits"], answer["ms"]

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=10)


def fuse_dir_checked(path: str) -> dict:
    """fuse.js's installed version under ``path`` (a node_modules directory), or an exit that says how to get it."""
    manifest = os.path.join(path, "fuse.js", "package.json")
    if not os.path.exists(manifest):
        sys.exit(f"fuse.js not found in {path}: npm install --prefix /tmp/toolscript-fuse fuse.js@{FUSE_VERSION}, "
                 "then pass --fuse-dir /tmp/toolscript-fuse/node_modules")
    with open(manifest, encoding="utf-8") as f:
        version = json.load(f)["version"]
    if version != FUSE_VERSION:
        sys.exit(f"fuse.js {version} in {path}, the figures are for {FUSE_VERSION}: npm install --prefix "
                 f"/tmp/toolscript-fuse fuse.js@{FUSE_VERSION}")
    return {"version": version, "dir": path}


# --- one set -------------------------------------------------------------------------------------------

def ranked(search, queries) -> tuple:
    """({query text: ids}, [ms per query]) of ``search(query) -> (ids, ms)``, each distinct query run once."""
    answers, samples = {}, []
    for q in queries:
        if q["query"] not in answers:
            ids, ms = search(q["query"])
            answers[q["query"]] = ids
            samples.append(ms)
    return answers, samples


def peers_on(tools: list, teacher: Teacher, fuzzy: Fuzzy) -> dict:
    """Both peers built over ``tools``: their build times and a search function each."""
    ids = [t["id"] for t in tools]
    start = time.perf_counter()
    matrix = np.stack([teacher.embed(deno_tool_text(t)) for t in tools])  # one at a time, as the Deno original
    teacher_build = (time.perf_counter() - start) * 1000
    fuse_build = fuzzy.build(tools)

    def cosines(query):
        start = time.perf_counter()
        scores = matrix @ teacher.embed(query)
        order = sorted(range(len(ids)), key=lambda i: (-scores[i], ids[i]))
        return scores, order, (time.perf_counter() - start) * 1000

    def teacher_search(query):
        _, order, ms = cosines(query)
        return [ids[i] for i in order[:LIMIT]], ms

    def hybrid_search(query):
        scores, order, semantic_ms = cosines(query)
        hits, fuzzy_ms = fuzzy.search(query, 2 * LIMIT)
        start = time.perf_counter()
        # The union of both top-2L lists, semantic first (a Map in insertion order), a missing part 0.
        combined = {}
        for i in order[:2 * LIMIT]:
            combined[i] = [float(scores[i]), 0.0]
        for i, fuse_score in hits:
            combined.setdefault(i, [0.0, 0.0])[1] = 1.0 - fuse_score
        best = sorted(combined, key=lambda i: -(ALPHA * combined[i][0] + (1 - ALPHA) * combined[i][1]))  # stable
        fusion_ms = (time.perf_counter() - start) * 1000
        return [ids[i] for i in best[:LIMIT]], semantic_ms + fuzzy_ms + fusion_ms

    def fuse_search(query):
        hits, ms = fuzzy.search(query, LIMIT)
        return [ids[i] for i, _ in hits], ms

    return {"teacher_build_ms": round(teacher_build, 1), "fuse_build_ms": round(fuse_build, 3),
            "teacher": teacher_search, "deno_hybrid": hybrid_search, "fuse": fuse_search}


def our_speed(tools: list, queries: list, repeat: int) -> dict:
    """Our build (cold word caches, median of ``repeat``) and per-query time, bm25 and hybrid, in this run."""
    out = {}
    for name, semantic in (("bm25", False), ("hybrid", True)):
        samples = []
        for _ in range(repeat):
            ours.clear_word_caches()
            start = time.perf_counter()
            index = SearchIndex(tools, semantic=semantic)
            samples.append((time.perf_counter() - start) * 1000)
        _, times = ranked(lambda q: timed(lambda: [r["id"] for r in index.search(q, limit=LIMIT)]), queries)
        out[name] = {"build": summary(samples), "query": summary(times)}
    return out


def timed(call):
    start = time.perf_counter()
    value = call()
    return value, (time.perf_counter() - start) * 1000


def one_set(tools: list, query_files: dict, teacher: Teacher, fuzzy: Fuzzy, repeat: int) -> dict:
    """Every ranker on ``tools`` for each named query list: graded figures, build and query times."""
    peers = peers_on(tools, teacher, fuzzy)
    every = [q for queries in query_files.values() for q in queries]
    runs = {name: ranked(peers[name], every) for name in ("teacher", "deno_hybrid")}
    fuse_alone = ranked(peers["fuse"], every)
    report = {
        "index_tools": len(tools),
        "speed": {
            "teacher": {"build_ms": peers["teacher_build_ms"], "query": summary(runs["teacher"][1])},
            "deno_hybrid": {"build_ms": round(peers["teacher_build_ms"] + peers["fuse_build_ms"], 1),
                            "query": summary(runs["deno_hybrid"][1])},
            "fuse_alone": {"build_ms": peers["fuse_build_ms"], "query": summary(fuse_alone[1])},
            "toolscript": our_speed(tools, every, repeat),
        },
    }
    for name, queries in query_files.items():
        rows = {peer: ours.graded(lambda q, a=runs[peer][0]: a[q], queries) for peer in ("teacher", "deno_hybrid")}
        rows["fuse_alone"] = ours.graded(lambda q: fuse_alone[0][q], queries)
        rows.update({f"toolscript_{k}": v for k, v in ours.ranker_rows(tools, queries).items()})
        report[name] = {"queries": len(queries), "rankers": rows}
    return report


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fuse-dir", default=os.environ.get("TOOLSCRIPT_FUSE_DIR", os.path.join(ROOT, "tests", "peers", "node_modules")),
                        help="the node_modules directory holding fuse.js " + FUSE_VERSION)
    parser.add_argument("--sets", default=",".join(evalsets.development()),
                        help=f"comma-separated development sets (default: all of them: {', '.join(evalsets.development())})")
    parser.add_argument("--repeat", type=int, default=3, help="times our index build is timed (median)")
    args = parser.parse_args(argv)
    fuse = fuse_dir_checked(args.fuse_dir)
    torch.set_num_threads(1)

    dev_tools = ours.load_catalog()
    sets = {evalsets.NAMES[0]: (dev_tools, {"queries": ours.with_dev_kinds(dev_tools, ours.load_queries())})}
    for name in evalsets.development()[1:]:
        tools, both, _, _ = ours.later_set(name)
        files = {f.replace(".json", "").replace("-", "_"): evalsets.read(name, f)["queries"] for f in evalsets.query_files(name)}
        sets[name] = (tools, dict(files, both_authors=both) if len(files) > 1 else files)
    wanted = [s.strip() for s in args.sets.split(",") if s.strip()]
    unknown = [s for s in wanted if s not in sets]
    if unknown:
        sys.exit(f"unknown set(s) {', '.join(unknown)}: choose from {', '.join(sets)}")

    start = time.perf_counter()
    teacher = Teacher()
    load_ms = (time.perf_counter() - start) * 1000
    fuzzy = Fuzzy(fuse["dir"])
    try:
        report = {"python": sys.version.split()[0], "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
                  "fuse_js": fuse["version"], "node": subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip(),
                  "teacher_load_ms": round(load_ms, 1), "limit": LIMIT, "alpha": ALPHA, "max_tokens": MAX_TOKENS}
        for name in wanted:
            tools, files = sets[name]
            report[name] = one_set(tools, files, teacher, fuzzy, args.repeat)
        report["longest_text_tokens"] = teacher.longest
    finally:
        fuzzy.close()
    json.dump(report, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
