#!/usr/bin/env python3
"""Benchmark the memory store (toolscript/memory/store.py): what a hook pays to write and to read.

Figures, all in milliseconds unless named otherwise, printed as one JSON document
(progress on stderr):

- ``add``: one ``Store.add`` in-process (redaction included), at each size; and
  ``add_fresh_process``: a fresh ``python -I -S`` process that opens the
  database and adds one memory (what a PostToolUse hook pays, minus the hook's
  own parsing), next to a bare ``python -I -S -c pass``.
- ``search``, ``recent`` and ``inject`` (search + recent, the store's part of
  ``memory inject``) p50/p95/p99 at 50, 10,000 and 100,000 memories, for the
  FTS5 index and the LIKE fallback.  All memories are in ONE project (the worst
  case for per-project scoping).  Issue 11's goal: inject p99 <= 50 ms at 100k.
- ``bytes_per_10k``: database size per 10,000 memories; ``build_ms_per_memory``: the
  index build (row, FTS entry and meaning vector) per memory.  Goals: search p95 <= 10 ms
  at 10k, inject p99 <= 50 ms at 100k.
- ``concurrent``: N writer processes x M adds each (a fresh open per add, as
  hooks do), started together: wall time and adds per second; the row count
  proves nothing was lost.

Content is generated (seeded): tool actions on files of a made-up repository
and short assistant responses, with a Zipf-like vocabulary so some words are
everywhere and most are rare, like real work logs.

    .venv/bin/python bench/memory_store.py [--sizes 50,10000,100000] [--queries 200] [--writers 10 --adds 100]
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from typing import Dict, List, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from toolscript.memory.store import open_store  # noqa: E402

PROJECT = "/home/dev/src/shop"

COMMON = (
    "fix test tests error build update add remove refactor config file function class module import return "
    "value type check run failed passed handler request response user api server client cache session token "
    "parser input output data list dict string path query database migration schema index log debug"
).split()
RARE_STEMS = (
    "auth login logout payment invoice cart checkout order shipping refund webhook stripe email template "
    "render router middleware cors csrf jwt oauth redis postgres sqlite celery worker queue retry timeout "
    "docker compose kubernetes helm nginx deploy staging prod metrics tracing sentry lint mypy ruff pytest "
    "fixture mock snapshot coverage benchmark profile memory leak thread async await event loop socket"
).split()
DIRS = ["src/shop", "src/shop/api", "src/shop/models", "src/shop/services", "tests", "tests/api", "web/src", "deploy", "docs"]
EXTS = [".py", ".py", ".py", ".ts", ".tsx", ".md", ".yaml", ".sql"]
TOOLS = ["Edit", "Edit", "Edit", "Write", "Bash", "Bash", "Bash", "Read", "Grep", "mcp__github__create_pull_request"]

PROMPTS = [
    "fix the failing checkout test after the stripe refund change",
    "why does the webhook handler time out in staging",
    "add retry with backoff to the email worker queue",
    "refactor the cart service to use the new order model",
    "the login page returns 500 after the oauth update",
    "write a migration adding an index on orders created",
    "speed up the invoice render template",
    "set up sentry tracing for the celery worker",
    "what did we change in the docker compose file yesterday",
    "mypy complains about the payment client types",
]


def _words(rng: random.Random, n: int) -> List[str]:
    out = []
    for _ in range(n):
        if rng.random() < 0.55:
            out.append(COMMON[min(len(COMMON) - 1, int(rng.paretovariate(1.2)) - 1)])
        else:
            stem = rng.choice(RARE_STEMS)
            out.append(stem if rng.random() < 0.7 else stem + rng.choice(["s", "er", "ing", "_id", "_at", "2"]))
    return out


def _file(rng: random.Random) -> str:
    return f"{rng.choice(DIRS)}/{rng.choice(RARE_STEMS)}_{rng.choice(COMMON)}{rng.choice(EXTS)}"


def generate(rng: random.Random, i: int) -> Dict[str, object]:
    """One realistic memory: mostly tool actions, some responses."""
    if rng.random() < 0.15:
        text = "Answered: " + " ".join(_words(rng, rng.randint(15, 60)))
        return {"kind": "response", "tool": "", "files": [], "content": text}
    tool = rng.choice(TOOLS)
    files = [_file(rng) for _ in range(rng.randint(0, 2))] if tool != "Bash" else []
    if tool == "Bash":
        command = rng.choice(["pytest -q", "npm run build", "make lint", "git diff --stat", "docker compose up -d", "alembic upgrade head"])
        outcome = rng.choice(["passed", "failed", "ok", "exit 1"]) + ": " + " ".join(_words(rng, rng.randint(3, 20)))
        text = f"Bash: {command} {' '.join(_words(rng, 2))} -> {outcome}"
    else:
        text = f"{tool} {' '.join(files) or _file(rng)}: " + " ".join(_words(rng, rng.randint(5, 30)))
    return {"kind": "action", "tool": tool, "files": files, "content": text}


def percentiles(samples_ms: Sequence[float]) -> Dict[str, float]:
    ordered = sorted(samples_ms)
    if not ordered:  # a step turned off (--adds 0, --fresh 0): nothing measured
        return {"n": 0}

    def rank(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(round(p * (len(ordered) - 1))))], 3)

    return {"n": len(ordered), "p50_ms": rank(0.5), "p95_ms": rank(0.95), "p99_ms": rank(0.99), "max_ms": round(ordered[-1], 3)}


def fill(store, rng: random.Random, start: int, end: int, now: float) -> None:
    """Memories start..end-1, 30 per session, a minute apart, in transactions of 1000 (population speed only).

    Each with its meaning vector, as the Stop hook or an import would give it: the embedding table is read first.
    """
    from toolscript.memory import vectorcodec

    vectorcodec.available()
    for batch in range(start, end, 1000):
        store.conn.execute("BEGIN")
        for i in range(batch, min(end, batch + 1000)):
            item = generate(rng, i)
            store.add(session=f"sess-{i // 30}", project=PROJECT, created=now - (end - i) * 60.0, **item)
        store.conn.execute("COMMIT")


def time_reads(store, rng: random.Random, queries: int, latest_session: str) -> Dict[str, Dict[str, float]]:
    search_ms, recent_ms, inject_ms = [], [], []
    for q in range(queries):
        prompt = PROMPTS[q % len(PROMPTS)] if q % 2 == 0 else " ".join(_words(rng, rng.randint(4, 14)))
        t0 = time.perf_counter()
        store.search(prompt, project=PROJECT, limit=10)
        t1 = time.perf_counter()
        store.recent(project=PROJECT, limit=20, exclude_session=latest_session)
        store.recent(project=PROJECT, session=latest_session, limit=10)
        t2 = time.perf_counter()
        search_ms.append((t1 - t0) * 1000)
        recent_ms.append((t2 - t1) * 1000)
        inject_ms.append((t2 - t0) * 1000)
    return {"search": percentiles(search_ms), "recent": percentiles(recent_ms), "inject": percentiles(inject_ms)}


def time_adds(store, rng: random.Random, n: int) -> Dict[str, float]:
    samples = []
    for i in range(n):
        item = generate(rng, i)
        t0 = time.perf_counter()
        store.add(session="bench-add", project=PROJECT, **item)
        samples.append((time.perf_counter() - t0) * 1000)
    store.forget(session="bench-add")
    return percentiles(samples)


def db_bytes(path: str) -> int:
    with open_store(path) as store:
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return os.path.getsize(path)


FRESH_ADD = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[1])
    from toolscript.memory.store import open_store
    with open_store(sys.argv[2]) as store:
        store.add(session="fresh", project=sys.argv[3], kind="action", tool="Edit", files=["src/a.py"],
                  content="Edit src/a.py: fix the login handler")
    """
)


def time_fresh_process(path: str, n: int) -> Dict[str, Dict[str, float]]:
    bare, fresh = [], []
    for _ in range(n):
        for argv, samples in (
            ([sys.executable, "-I", "-S", "-c", "pass"], bare),
            ([sys.executable, "-I", "-S", "-c", FRESH_ADD, ROOT, path, PROJECT], fresh),
        ):
            t0 = time.perf_counter()
            subprocess.run(argv, check=True)
            samples.append((time.perf_counter() - t0) * 1000)
    with open_store(path) as store:
        store.forget(session="fresh")
    return {"python_bare": percentiles(bare), "open_and_add": percentiles(fresh)}


WRITER = textwrap.dedent(
    """
    import os, sys, time
    sys.path.insert(0, sys.argv[1])
    from toolscript.memory.store import open_store
    path, go, worker, count = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    while not os.path.exists(go):
        time.sleep(0.001)
    for i in range(count):
        with open_store(path) as store:
            store.add(session="w%d" % worker, project="/p", kind="action", tool="Bash", content="worker %d add %d" % (worker, i))
    """
)


def concurrent_writers(workdir: str, writers: int, adds: int) -> Dict[str, object]:
    path = os.path.join(workdir, "concurrent.db")
    go = os.path.join(workdir, "go")
    procs = [
        subprocess.Popen([sys.executable, "-I", "-S", "-c", WRITER, ROOT, path, go, str(n), str(adds)])
        for n in range(writers)
    ]
    time.sleep(1.0)  # every interpreter at the start line
    t0 = time.perf_counter()
    open(go, "w").close()
    codes = [p.wait() for p in procs]
    wall = time.perf_counter() - t0
    with open_store(path) as store:
        rows = store.stats()["memories"]
    return {
        "writers": writers,
        "adds_each": adds,
        "open_per_add": True,
        "wall_s": round(wall, 3),
        "adds_per_s": round(writers * adds / wall, 1),
        "rows": rows,
        "lost": writers * adds - rows,
        "failed_processes": sum(1 for c in codes if c != 0),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="50,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--adds", type=int, default=100)
    parser.add_argument("--fresh", type=int, default=20, help="fresh-process adds")
    parser.add_argument("--writers", type=int, default=10)
    parser.add_argument("--writer-adds", type=int, default=100)
    parser.add_argument("--modes", default="fts5,like")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    workdir = tempfile.mkdtemp(prefix="toolscript-bench-memory-")
    import sqlite3

    result: Dict[str, object] = {
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "project_scope": "all memories in one project",
        "sizes": {},
    }
    try:
        now = time.time()
        for mode in args.modes.split(","):
            path = os.path.join(workdir, f"{mode}.db")
            rng = random.Random(11)
            have = 0
            for size in sizes:
                print(f"[{mode}] filling to {size}", file=sys.stderr, flush=True)
                with open_store(path, fts=(mode == "fts5")) as store:
                    started = time.perf_counter()
                    fill(store, rng, have, size, now)
                    built = time.perf_counter() - started
                    added = size - have
                    have = size
                    latest = f"sess-{(size - 1) // 30}"
                    print(f"[{mode}] timing at {size}", file=sys.stderr, flush=True)
                    figures: Dict[str, object] = time_reads(store, random.Random(5), args.queries, latest)
                    figures["add"] = time_adds(store, random.Random(7), args.adds)
                    figures["stats_fts"] = store.stats()["fts"]
                    # Index build: each memory's row, FTS entry and meaning vector, in transactions of 1000.
                    figures["build_ms_per_memory"] = round(built * 1000 / max(1, added), 3)
                figures["db_bytes"] = db_bytes(path)
                figures["bytes_per_10k"] = int(figures["db_bytes"] * 10000 / size)
                result["sizes"].setdefault(str(size), {})[mode] = figures
            if mode == "fts5":
                print("[fts5] fresh-process adds", file=sys.stderr, flush=True)
                result["add_fresh_process"] = time_fresh_process(path, args.fresh)
        print("concurrent writers", file=sys.stderr, flush=True)
        result["concurrent"] = concurrent_writers(workdir, args.writers, args.writer_adds)
        ten = result["sizes"].get("10000", {}).get("fts5")
        if ten and "p95_ms" in ten["search"]:
            result["goal_search_p95_le_10ms_at_10k"] = ten["search"]["p95_ms"] <= 10.0
        biggest = result["sizes"].get("100000", {}).get("fts5")
        if biggest and "p99_ms" in biggest["inject"]:
            result["goal_inject_p99_le_50ms_at_100k"] = biggest["inject"]["p99_ms"] <= 50.0
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
