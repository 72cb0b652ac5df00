"""What both memory retrieval evaluations share: loading units through ``memory import``, the systems, the scores.

A *unit* is one memory to load: ``{"key", "project", "session", "created", "content", "kind", "tool", "files"}``.
``key`` (a LoCoMo ``dia_id``, a coding-set id) never enters the store: it is found again from the memory's
project and creation time, which each unit has unique (see ``load``), so no evidence id is searchable text.

A *question* is ``{"question", "project", "evidence": [keys], "category": str, "now": epoch}``.

Systems, each giving a ranked list of unit keys per question:

* ``search``: the store's search, what ``toolscript memory search`` and the ``memory.search`` tool call;
* ``hook_search``: what the UserPromptSubmit hook ranks before it renders;
* ``injected``: the memories the hook's text holds (``context.inject(..., shown=...)``), in the order shown;
  scored as a set: Hit (an evidence unit among them) and R (share of evidence among them);
* ``bm25``: plain BM25 (k1 1.2, b 0.75) over lower-cased words, no stemming, no stopwords, computed here.
"""

import io
import json
import math
import os
import re
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from toolscript.memory import context  # noqa: E402
from toolscript.memory.store import open_store  # noqa: E402

SYSTEMS = ("search", "hook_search", "injected", "bm25")
INJECT_SESSION = "eval-asking-session"  # the session that asks: never one that stored a unit
INJECT_BUDGET = 600  # the hook's default injectBudget (toolscript/config/keys.py)


def progress(message: str) -> None:
    print(f"[bench/memory_eval] {message}", file=sys.stderr, flush=True)


# -- loading ------------------------------------------------------------------------------------------


class Loaded(object):
    """A scratch store holding the units, and the way back from memory ids to unit keys."""

    def __init__(self, units: Sequence[Dict[str, Any]]) -> None:
        self.dir = tempfile.mkdtemp(prefix="toolscript-memory-eval-")
        self.path = os.path.join(self.dir, "memory.db")
        stream = io.StringIO("".join(json.dumps(_record(u), ensure_ascii=False) + "\n" for u in units))
        by_place = {(u["project"], round(float(u["created"]), 3)): u["key"] for u in units}
        if len(by_place) != len(units):
            raise SystemExit("two units share a project and a creation time: the evidence could not be found again")
        started = time.perf_counter()
        self.store = open_store(self.path)
        self.imported = self.store.import_(stream)  # what `toolscript memory import FILE` does
        self.import_seconds = time.perf_counter() - started
        self.key_of: Dict[int, str] = {}
        for memory_id, project, created in self.store.conn.execute("SELECT id, project, created FROM memories"):
            key = by_place.get((project, round(float(created), 3)))
            if key is not None:
                self.key_of[int(memory_id)] = key

    def keys(self, ids: Iterable[int]) -> List[str]:
        return [self.key_of[i] for i in ids if i in self.key_of]

    def close(self) -> None:
        self.store.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def _record(unit: Dict[str, Any]) -> Dict[str, Any]:
    return {"session": unit.get("session", ""), "project": unit["project"], "kind": unit.get("kind", "note"),
            "tool": unit.get("tool", ""), "files": unit.get("files", []), "content": unit["content"],
            "created": float(unit["created"])}


# -- systems ------------------------------------------------------------------------------------------


def run_search(loaded: Loaded, q: Dict[str, Any], limit: int = 10) -> List[str]:
    found = loaded.store.search(q["question"], project=q["project"], limit=limit)
    return loaded.keys(m.id for m, _ in found)


def run_hook_search(loaded: Loaded, q: Dict[str, Any], limit: int = 10) -> List[str]:
    """What ``context.inject`` asks the store for the prompt (before it drops this session's and shown memories)."""
    found = loaded.store.search(context._query_words(q["question"]), project=q["project"], limit=limit)
    return loaded.keys(m.id for m, _ in found)


def run_injected(loaded: Loaded, q: Dict[str, Any], budget: int = INJECT_BUDGET) -> Tuple[List[str], int]:
    shown: List[Any] = []
    text = context.inject(loaded.store, q["question"], project=q["project"], session=INJECT_SESSION,
                          budget_tokens=budget, now=q.get("now"), shown=shown)
    return loaded.keys(int(i) for i in shown), context.estimate_tokens(text)


_BM25_WORD = re.compile(r"[a-z0-9]+")


class BM25(object):
    """Plain Okapi BM25 (k1 1.2, b 0.75) per project: lower-cased words, nothing removed, nothing stemmed."""

    def __init__(self, units: Sequence[Dict[str, Any]], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.docs: Dict[str, List[Tuple[str, Counter, int]]] = defaultdict(list)
        for u in units:
            words = _BM25_WORD.findall(u["content"].lower())
            self.docs[u["project"]].append((u["key"], Counter(words), len(words)))
        self.df: Dict[str, Counter] = {}
        self.avg: Dict[str, float] = {}
        for project, docs in self.docs.items():
            df: Counter = Counter()
            for _, counts, _ in docs:
                df.update(counts.keys())
            self.df[project] = df
            self.avg[project] = sum(n for _, _, n in docs) / float(len(docs) or 1)

    def rank(self, q: Dict[str, Any], limit: int = 10) -> List[str]:
        project = q["project"]
        docs, df, avg = self.docs[project], self.df[project], self.avg[project]
        n = len(docs)
        words = _BM25_WORD.findall(q["question"].lower())
        scored = []
        for key, counts, length in docs:
            score = 0.0
            for w in words:
                tf = counts.get(w, 0)
                if tf:
                    idf = math.log(1.0 + (n - df[w] + 0.5) / (df[w] + 0.5))
                    score += idf * tf * (self.k1 + 1) / (tf + self.k1 * (1 - self.b + self.b * length / avg))
            if score > 0:
                scored.append((score, key))
        scored.sort(key=lambda s: -s[0])
        return [key for _, key in scored[:limit]]


# -- scores -------------------------------------------------------------------------------------------


def score_ranked(ranked: Sequence[str], evidence: Sequence[str]) -> Dict[str, float]:
    wanted = set(evidence)
    top5 = set(ranked[:5]) & wanted
    rr = 0.0
    for i, key in enumerate(ranked[:10]):
        if key in wanted:
            rr = 1.0 / (i + 1)
            break
    return {"hit5": 1.0 if top5 else 0.0, "r5": len(top5) / float(len(wanted)), "mrr10": rr}


def score_set(shown: Sequence[str], evidence: Sequence[str]) -> Dict[str, float]:
    wanted = set(evidence)
    got = set(shown) & wanted
    return {"hit": 1.0 if got else 0.0, "r": len(got) / float(len(wanted))}


def mean_table(rows: List[Tuple[str, Dict[str, float]]]) -> Dict[str, Dict[str, float]]:
    """category -> mean of each figure, plus "all" and "n"."""
    by: Dict[str, List[Dict[str, float]]] = defaultdict(list)
    for category, figures in rows:
        by[category].append(figures)
        by["all"].append(figures)
    out: Dict[str, Dict[str, float]] = {}
    for category in sorted(by):
        items = by[category]
        out[category] = {k: round(sum(f[k] for f in items) / len(items), 3) for k in items[0]}
        out[category]["n"] = len(items)
    return out


def evaluate(units: Sequence[Dict[str, Any]], questions: Sequence[Dict[str, Any]],
             systems: Sequence[str] = SYSTEMS, misses: Optional[List[Dict[str, Any]]] = None) -> Dict[str, Any]:
    """Every system's figures by category over ``questions``, each asked in its project."""
    loaded = Loaded(units)
    try:
        bm25 = BM25(units) if "bm25" in systems else None
        rows: Dict[str, List[Tuple[str, Dict[str, float]]]] = defaultdict(list)
        times: Dict[str, List[float]] = defaultdict(list)
        tokens: List[int] = []
        runners: Dict[str, Callable[[Dict[str, Any]], List[str]]] = {
            "search": lambda q: run_search(loaded, q),
            "hook_search": lambda q: run_hook_search(loaded, q),
            "bm25": lambda q: bm25.rank(q) if bm25 else [],
        }
        for q in questions:
            for system in systems:
                started = time.perf_counter()
                if system == "injected":
                    shown, used = run_injected(loaded, q)
                    tokens.append(used)
                    figures = score_set(shown, q["evidence"])
                    ranked = shown
                else:
                    ranked = runners[system](q)
                    figures = score_ranked(ranked, q["evidence"])
                times[system].append((time.perf_counter() - started) * 1000)
                rows[system].append((q["category"], figures))
                if misses is not None and system == "injected" and not figures["hit"]:
                    misses.append({"question": q["question"], "category": q["category"], "evidence": q["evidence"],
                                   "shown": ranked})
        out: Dict[str, Any] = {system: mean_table(rows[system]) for system in systems}
        out["ms_per_question"] = {s: round(sum(t) / len(t), 2) for s, t in times.items() if t}
        if tokens:
            out["injected_tokens_mean"] = round(sum(tokens) / len(tokens), 1)
        out["memories"] = loaded.imported
        out["import_seconds"] = round(loaded.import_seconds, 2)
        return out
    finally:
        loaded.close()


def markdown(results: Dict[str, Any], categories: Sequence[Tuple[str, str]]) -> str:
    """A table: one row per system, Hit@5 (Hit for injected) per category and all, R@5 and MRR@10 over all."""
    head = "| system | " + " | ".join(label for _, label in categories) + " | all Hit@5 | all R@5 | all MRR@10 |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for system in SYSTEMS:
        table = results.get(system)
        if not table:
            continue
        hit = "hit" if system == "injected" else "hit5"
        cells = [("%.3f" % table[c][hit]) if c in table else "-" for c, _ in categories]
        whole = table["all"]
        lines.append("| %s | %s | %.3f | %s | %s |" % (
            system, " | ".join(cells), whole[hit], "%.3f" % whole.get("r5", whole.get("r", 0.0)),
            "%.3f" % whole["mrr10"] if "mrr10" in whole else "-"))
    return "\n".join(lines)


def run_and_report(units: Sequence[Dict[str, Any]], questions: Sequence[Dict[str, Any]], args: Any,
                   categories: Sequence[Tuple[str, str]], **extra: Any) -> Dict[str, Any]:
    """Evaluate ``args.systems`` and report: JSON on stdout (and in ``args.json``), the table and
    the first ``args.misses`` misses on stderr.  ``extra`` keys go into the JSON."""
    misses: List[Dict[str, Any]] = []
    results = evaluate(units, questions, [s for s in args.systems.split(",") if s], misses)
    results["questions"] = len(questions)
    results.update(extra)
    text = json.dumps(results, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    print(markdown(results, categories), file=sys.stderr)
    for miss in misses[:args.misses]:
        print(json.dumps(miss), file=sys.stderr)
    return results
