#!/usr/bin/env python3
"""Benchmark memory as Claude Code meets it: the hook processes, and inject/brief with rendering.

One JSON document (ms; progress on stderr):

- ``hooks``: wall time of ``toolscript hook NAME`` (the zipapp under
  ``python -I -S``, the event on stdin, as the plugin runs it) against a
  database of ``--memories`` memories, with suggestions off
  (``TOOLSCRIPT_SUGGEST=0``) so only memory is measured: post-tool-use (capture
  of one Bash action, process start included), user-prompt-submit (related
  memories for a prompt) and stop (capture of an answer), next to a bare
  ``python -I -S -c pass``; in rotation.  (SessionStart also starts the
  session's gateway, so it is not a memory figure.)
- ``inject`` and ``brief``: ``memory.context.inject``/``brief`` in-process
  (search + recent + rendering) p50/p95/p99 at 50, 10,000 and 100,000
  memories (bench/memory_store.py's generator).  Issue 11's goal: p99 <= 50 ms
  at 100k.

    .venv/bin/python bench/memory_hooks.py [--sizes 50,10000,100000] [--rounds 15] [--memories 10000]
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import memory_store  # noqa: E402  (bench/memory_store.py: the generator and percentiles)
from stats import summary  # noqa: E402
from toolscript.memory import context  # noqa: E402
from toolscript.memory.store import open_store  # noqa: E402

def progress(message):
    print(f"[bench/memory_hooks] {message}", file=sys.stderr, flush=True)


def fill(path, project, count, seed=7):
    rng = random.Random(seed)
    now = time.time()
    memory_store.PROJECT = project  # bench/memory_store.fill writes its own project; ours, so hooks and queries find it
    with open_store(path) as store:
        memory_store.fill(store, rng, 0, count, now)


def time_context(sizes, rounds):
    results = {}
    for size in sizes:
        scratch = tempfile.mkdtemp(prefix="toolscript-bench-memctx-")
        try:
            path = os.path.join(scratch, "memory.db")
            project = "/bench/project"
            progress(f"{size} memories")
            fill(path, project, size)
            rng = random.Random(size)
            with open_store(path) as store:
                injects, briefs = [], []
                for i in range(rounds):
                    # Words of the stored work (common and rare, as bench/memory_store.py draws them) in a prompt.
                    prompt = "please look at the " + " ".join(memory_store._words(rng, 5)) + " again"
                    t = time.perf_counter()
                    context.inject(store, prompt, project=project, session="current")
                    injects.append((time.perf_counter() - t) * 1000)
                    t = time.perf_counter()
                    context.brief(store, "Edit " + memory_store._file(rng) + ": " + " ".join(memory_store._words(rng, 6)),
                                  project=project, session="current")
                    briefs.append((time.perf_counter() - t) * 1000)
            results[str(size)] = {"inject": memory_store.percentiles(injects), "brief": memory_store.percentiles(briefs)}
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return results


def time_hooks(memories, rounds):
    import build_pyz

    scratch = tempfile.mkdtemp(prefix="toolscript-bench-memhooks-")
    try:
        pyz = build_pyz.build(os.path.join(scratch, "toolscript.pyz"))
        project = os.path.join(scratch, "project")
        os.makedirs(os.path.join(project, ".git"))
        data = os.path.join(scratch, "data")
        os.makedirs(data)
        progress(f"hooks against {memories} memories")
        fill(os.path.join(data, "memory.db"), project, memories)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TOOLSCRIPT_", "ANTHROPIC_", "CLAUDE_"))}
        env.update(HOME=scratch, TOOLSCRIPT_DATA_DIR=data, TOOLSCRIPT_STATE_DIR=os.path.join(scratch, "state"), TOOLSCRIPT_SUGGEST="0")
        events = {
            "post-tool-use": {"tool_name": "Bash", "tool_input": {"command": "pytest tests/test_cache.py"},
                              "tool_response": {"stdout": "3 passed", "stderr": ""}},
            "user-prompt-submit": {"prompt": "fix the flaky login test in the cache"},
            "stop": {"last_assistant_message": "Raised the eviction limit; the cache tests pass.", "stop_hook_active": False},
        }
        counter = [0]

        def hook(name):
            counter[0] += 1
            event = dict(events[name], session_id=f"bench-{counter[0] % 7}", cwd=project)
            t = time.perf_counter()
            proc = subprocess.run([sys.executable, "-I", "-S", pyz, "hook", name], input=json.dumps(event).encode(), env=env,
                                  cwd=project, capture_output=True, timeout=60)
            wall = (time.perf_counter() - t) * 1000
            if proc.returncode != 0 or proc.stderr:
                raise RuntimeError(f"hook {name}: {proc.returncode} {proc.stderr[-300:]!r}")
            return wall

        def bare():
            t = time.perf_counter()
            subprocess.run([sys.executable, "-I", "-S", "-c", "pass"], check=True)
            return (time.perf_counter() - t) * 1000

        variants = {name: (lambda n=name: hook(n)) for name in events}
        variants["bare_python_I_S"] = bare
        samples = {name: [] for name in variants}
        for run in variants.values():
            run()  # warm-up
        for _ in range(rounds):
            for name, run in variants.items():
                samples[name].append(run())
        return {name: summary(values) for name, values in samples.items()}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="50,10000,100000")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--memories", type=int, default=10000)
    args = parser.parse_args()
    started = time.perf_counter()
    report = {
        "benchmark": "memory_hooks",
        "context": time_context([int(s) for s in args.sizes.split(",")], args.queries),
        "hooks": time_hooks(args.memories, args.rounds),
        "hook_memories": args.memories,
    }
    report["total_s"] = round(time.perf_counter() - started, 1)
    json.dump(report, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
