#!/usr/bin/env python3
"""Benchmark the start-up of what runs most often: a base commit's zipapp against this tree's, same run.

Claude Code starts toolscript on every prompt and every tool call, so the cost
of starting it is the cost users feel most.  Builds the zipapp at ``--base`` and
from this tree (bench/security_overhead.py's builders) and times, in rotation
so machine noise hits both alike, ``python3 -I -S toolscript.pyz``:

- version: ``--version`` (the interpreter plus the command line's frame);
- prompt_hook: ``hook user-prompt-submit`` with a prompt event, memory and
  suggestions on (local backend, no gateway), in a scratch HOME;
- tool_hook: ``hook post-tool-use`` with a Bash event (memory capture);
- bare: ``python3 -I -S -c pass``, the floor neither build can go under.

Prints one JSON document: median/p95/n per build and figure (wall and CPU time),
and per figure the difference (this tree minus base) and ratio of the medians.

    .venv/bin/python bench/startup.py --base main~5 [--repeats 40]
"""

import argparse
import json
import os
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from security_overhead import build_base, build_head, compare, run_once  # noqa: E402  (bench/security_overhead.py)
from stats import exit_on_sigterm, summary  # noqa: E402  (bench/stats.py)

PROMPT = {"session_id": "bench-startup", "hook_event_name": "UserPromptSubmit", "prompt": "run the failing tests in tests/test_cache.py"}
BASH = {"session_id": "bench-startup", "hook_event_name": "PostToolUse", "tool_name": "Bash",
        "tool_input": {"command": "pytest tests/test_cache.py"}, "tool_response": {"stdout": "3 passed", "stderr": ""}}


def figures(pyz, cwd):
    """(name, argv, stdin) per figure of one build."""
    python = [sys.executable, "-I", "-S"]
    return [
        ("version", python + [pyz, "--version"], None),
        ("prompt_hook", python + [pyz, "hook", "user-prompt-submit"], json.dumps(dict(PROMPT, cwd=cwd))),
        ("tool_hook", python + [pyz, "hook", "post-tool-use"], json.dumps(dict(BASH, cwd=cwd))),
    ]


def timed_run(argv, env, cwd, stdin):
    """(wall ms, CPU ms) of one run; the output is not checked beyond the exit status (hooks may print nothing)."""
    import resource
    import subprocess
    import time

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(argv, input=stdin, env=env, cwd=cwd, capture_output=True, text=True, timeout=60)
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[-2:]} failed (exit {proc.returncode}): {proc.stderr[-600:]}")
    return wall, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000


def main(argv=None):
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True, help="the commit to compare with (any git revision)")
    parser.add_argument("--repeats", type=int, default=40)
    args = parser.parse_args(argv)
    scratch = tempfile.mkdtemp(prefix="toolscript-bench-startup-")
    try:
        base, sha = build_base(args.base, scratch)
        head = build_head(scratch)
        home, work = os.path.join(scratch, "home"), os.path.join(scratch, "work")
        os.makedirs(home)
        os.makedirs(os.path.join(work, ".git"))
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "TOOLSCRIPT_STATE_DIR": os.path.join(scratch, "state"),
               "TOOLSCRIPT_DATA_DIR": os.path.join(scratch, "data"), "TOOLSCRIPT_SUGGEST_BACKEND": "local"}
        variants = []
        for build, pyz in (("base", base), ("head", head)):
            variants += [(f"{build}/{name}", argv, stdin) for name, argv, stdin in figures(pyz, work)]
        variants.append(("bare", [sys.executable, "-I", "-S", "-c", "pass"], None))
        samples = {key: {"wall": [], "cpu": []} for key, _, _ in variants}
        for round_number in range(args.repeats + 1):
            for key, command, stdin in (variants if round_number % 2 else variants[::-1]):
                wall, cpu = timed_run(command, env, work, stdin)
                if round_number:  # the first round warms the page cache for both
                    samples[key]["wall"].append(wall)
                    samples[key]["cpu"].append(cpu)
        report = {"base": sha, "repeats": args.repeats, "figures": {}}
        for name in ("version", "prompt_hook", "tool_hook"):
            entry = {}
            for kind in ("wall", "cpu"):
                b, h = summary(samples[f"base/{name}"][kind]), summary(samples[f"head/{name}"][kind])
                entry[kind] = {"base": b, "head": h, "head_vs_base": compare(b, h)}
            report["figures"][name] = entry
        report["figures"]["bare"] = {kind: summary(samples["bare"][kind]) for kind in ("wall", "cpu")}
        print(json.dumps(report, indent=2))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
