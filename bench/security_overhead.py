#!/usr/bin/env python3
"""Benchmark what a change to exec's sandbox costs: the zipapp of a base commit against this tree's, same run.

Builds the zipapp twice -- at ``--base`` (a git worktree in a temp dir, built
with that commit's own ``build_pyz.py``) and from this tree -- starts one
gateway (built-in tools only, this tree's), and times, in rotation so machine
noise hits both alike, the wall time of the CLI as an agent runs it
(``python3 -I -S toolscript.pyz exec ...``):

- print1: ``exec 'print(1)'`` (no gateway);
- one_call: a script making one tool call, ``builtin__time.now``, through the gateway.

Prints one JSON document: the modes each build reported (``exec --json``),
median/p95/n per build and figure, of the wall time and of the CPU time (user +
system of exec and everything it started, which a loaded machine inflates far
less), and per figure the difference (this tree minus base) and ratio of the
medians and of the p95s, the median of the per-round differences (each round
runs both builds back to back, so load that drifts hits a pair alike), and
whether the median difference stays within ``--budget-ms`` (5 by default).
Progress goes to stderr.

    .venv/bin/python bench/security_overhead.py --base main [--repeats 30]
"""

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, BENCH)

from exec_isolation import ONE_CALL, PRINT1, timed  # noqa: E402  (bench/exec_isolation.py)
from gateway import GatewayProcess  # noqa: E402  (bench/gateway.py)
from stats import exit_on_sigterm, summary  # noqa: E402  (bench/stats.py)

BUILDS = ("base", "head")
FIGURES = (("print1", PRINT1, "1\n"), ("one_call", ONE_CALL, "True\n"))


def progress(message):
    print(f"[bench/security_overhead] {message}", file=sys.stderr, flush=True)


def git(*args, cwd=ROOT):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=120).stdout.strip()


def build_base(rev, scratch):
    """The zipapp of commit ``rev``, built by its own build_pyz.py in a throwaway worktree; (path, full sha)."""
    sha = git("rev-parse", "--verify", rev + "^{commit}")
    tree = os.path.join(scratch, "base-tree")
    git("worktree", "add", "--detach", tree, sha)
    try:
        output = os.path.join(scratch, "base.pyz")
        subprocess.run([sys.executable, os.path.join(tree, "build_pyz.py"), "-o", output], cwd=tree, check=True, capture_output=True, timeout=300)
    finally:
        git("worktree", "remove", "--force", tree)
    return output, sha


def build_head(scratch):
    """The zipapp of this tree (uncommitted changes included; the report says whether there were any)."""
    import build_pyz

    return build_pyz.build(os.path.join(scratch, "head.pyz"))


def exec_argv(pyz, code, json_output=False):
    return [sys.executable, "-I", "-S", pyz] + (["--json"] if json_output else []) + ["exec", code]


def mode_of(pyz, env, cwd):
    """{figure: the mode exec reported}; raises when a build cannot run the figure."""
    modes = {}
    for name, code, expected in FIGURES:
        _, proc = timed(exec_argv(pyz, code, json_output=True), env, cwd)
        result = json.loads(proc.stdout) if proc.returncode == 0 else {}
        if result.get("stdout") != expected:
            raise RuntimeError(f"{os.path.basename(pyz)} {name}: exit {proc.returncode}, {proc.stdout[-300:]!r} {proc.stderr[-300:]!r}")
        modes[name] = result.get("mode")
    return modes


def run_once(argv, env, cwd, expected):
    """(wall ms, CPU ms of the process and all it waited for) of one run that must print ``expected``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, proc = timed(argv, env, cwd)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0 or proc.stdout.decode(errors="replace") != expected:
        raise RuntimeError(f"{argv[-1][:40]!r} failed (exit {proc.returncode}): {proc.stderr.decode(errors='replace')[-600:]}")
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


def measure(pyzs, env, cwd, repeats):
    """{build/figure: {"wall": [ms...], "cpu": [ms...]}}, one of each variant per round (after one warm-up round), in alternating order."""
    variants = [(f"{build}/{name}", exec_argv(pyzs[build], code), expected) for name, code, expected in FIGURES for build in BUILDS]
    samples = {key: {"wall": [], "cpu": []} for key, _, _ in variants}
    for round_number in range(repeats + 1):
        # Every other round the other build goes first: whatever the one before leaves behind hits both alike.
        for key, argv, expected in (variants if round_number % 2 else variants[::-1]):
            wall, cpu = run_once(argv, env, cwd, expected)
            if round_number:
                samples[key]["wall"].append(wall)
                samples[key]["cpu"].append(cpu)
    return samples


def compare(base, head):
    """Differences and ratios of two summaries (head minus base, head over base)."""
    out = {}
    for key in ("median_ms", "p95_ms"):
        out[key.replace("_ms", "_difference_ms")] = round(head[key] - base[key], 3)
        out[key.replace("_ms", "_ratio")] = round(head[key] / base[key], 4) if base[key] else None
    return out


def main(argv=None):
    exit_on_sigterm()  # the finally blocks stop the gateway and remove the worktree
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="main", help="the commit to compare against (default: main)")
    parser.add_argument("--repeats", type=int, default=30, help="rounds (each variant once per round)")
    parser.add_argument("--budget-ms", type=float, default=5.0, help="the median slow-down allowed per figure")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    scratch = tempfile.mkdtemp(prefix="toolscript-bench-overhead-")
    gateway = GatewayProcess({})
    try:
        progress(f"building the zipapp at {args.base} and from this tree")
        pyzs = {}
        pyzs["base"], base_sha = build_base(args.base, scratch)
        pyzs["head"] = build_head(scratch)
        results = {
            "benchmark": "security_overhead",
            "what": "wall ms of the exec CLI (zipapp, python -I -S): a base commit's build vs this tree's, same run, in rotation",
            "base": base_sha,
            "head": git("rev-parse", "HEAD"),
            "head_dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
            "python": platform.python_version(),
            "kernel": f"{platform.system()} {platform.release()}",
            "machine": f"{platform.machine()}, {os.cpu_count()} cpus",
            "uid": os.getuid() if hasattr(os, "getuid") else None,
        }
        progress("starting the gateway (built-in tools only)")
        _, gw_started = gateway.start()
        gateway.wait_ready([], gw_started)
        env = dict(gateway.env, TOOLSCRIPT_GATEWAY_URL=gateway.url)
        env.pop("PYTHONPATH", None)  # each zipapp runs its own code, not this tree's
        cwd = gateway.work
        results["modes"] = {build: mode_of(pyzs[build], env, cwd) for build in BUILDS}
        progress(f"{len(BUILDS) * len(FIGURES)} variants, {args.repeats} rounds")
        samples = measure(pyzs, env, cwd, args.repeats)
        results["figures"] = {
            build: {name: {kind: summary(samples[f"{build}/{name}"][kind]) for kind in ("wall", "cpu")} for name, _, _ in FIGURES}
            for build in BUILDS
        }
        results["head_vs_base"] = {}
        for name, _, _ in FIGURES:
            entry = {}
            for kind in ("wall", "cpu"):
                base, head = samples[f"base/{name}"][kind], samples[f"head/{name}"][kind]
                entry[kind] = compare(summary(base), summary(head))
                entry[kind]["paired_median_difference_ms"] = round(statistics.median(h - b for h, b in zip(head, base)), 3)
            entry["within_budget"] = entry["wall"]["paired_median_difference_ms"] <= args.budget_ms
            results["head_vs_base"][name] = entry
        results["budget_ms"] = args.budget_ms
    finally:
        gateway.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    results["total_s"] = round(time.perf_counter() - started, 1)
    json.dump(results, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
