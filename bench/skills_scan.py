#!/usr/bin/env python3
"""Benchmark skill discovery: what the per-prompt suggestion hook pays to know which skills exist.

Builds a scratch tree with 100 skills the way Claude Code lays them out (20 user
skills, 20 project skills at the git root of a project with the session in a
subdirectory, and 60 across 5 plugins of a v2 installed_plugins.json, enabled
in user, project and local settings), then measures:

- ``discover()`` in-process (spec 002's goal: <= 50 ms for 100 skills);
- ``toolscript skills --json`` as a process (the zipapp, run as the plugin's
  launcher runs it: ``python3 -I -S toolscript.pyz``), next to a bare
  ``python3 -I -S -c pass`` in the same rotation (one of each, then again), so
  machine noise hits both alike.

Prints one JSON document of median_ms / p95_ms / n (bench/stats.py).
``python3 bench/skills_scan.py [--repeats 200] [--process-repeats 30]``.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
sys.path.insert(0, ROOT)
from stats import summary  # noqa: E402  (bench/stats.py)

from toolscript.claude_code.skills import discover  # noqa: E402

USER_SKILLS = 20
PROJECT_SKILLS = 20
PLUGINS = 5
SKILLS_PER_PLUGIN = 12  # 20 + 20 + 5 * 12 = 100


def write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def skill_text(name: str, i: int) -> str:
    """A SKILL.md of typical shape: a few frontmatter keys, a folded description, a body."""
    return (
        "---\n"
        f"name: {name}\n"
        "description: >-\n"
        f"  Use when the user asks to {name.replace('-', ' ')}: the steps, the checks and\n"
        f"  the commands for task number {i}, with examples.\n"
        "allowed-tools: [Read, Grep, Bash]\n"
        f"version: '1.{i}'\n"
        "---\n\n"
        f"# {name}\n\n" + "Instructions line.\n" * 40
    )


def build_tree(root: str) -> dict:
    """The scratch HOME and project; returns {"home", "cwd"}."""
    home = os.path.join(root, "home")
    config = os.path.join(home, ".claude")
    project = os.path.join(root, "project")
    cwd = os.path.join(project, "src", "app")
    os.makedirs(cwd)
    os.makedirs(os.path.join(project, ".git"))
    n = 0
    for i in range(USER_SKILLS):
        write(os.path.join(config, "skills", f"user-skill-{i}", "SKILL.md"), skill_text(f"user-skill-{i}", n))
        n += 1
    for i in range(PROJECT_SKILLS):
        write(os.path.join(project, ".claude", "skills", f"project-skill-{i}", "SKILL.md"), skill_text(f"project-skill-{i}", n))
        n += 1
    plugins = {}
    for p in range(PLUGINS):
        name = f"plugin-{p}"
        install = os.path.join(config, "plugins", "cache", "market", name, "1.0.0")
        write(os.path.join(install, ".claude-plugin", "plugin.json"), json.dumps({"name": name, "version": "1.0.0"}))
        for i in range(SKILLS_PER_PLUGIN):
            write(os.path.join(install, "skills", f"skill-{i}", "SKILL.md"), skill_text(f"{name}-skill-{i}", n))
            n += 1
        entry = {"scope": "user", "installPath": install, "version": "1.0.0", "installedAt": "2026-11-24T00:00:00.000Z"}
        if p == PLUGINS - 1:
            entry.update(scope="local", projectPath=project)
        plugins[f"{name}@market"] = [entry]
    write(os.path.join(config, "plugins", "installed_plugins.json"), json.dumps({"version": 2, "plugins": plugins}))
    write(os.path.join(config, "plugins", "known_marketplaces.json"), json.dumps(
        {"market": {"source": {"source": "github", "repo": "example/market"}, "installLocation": os.path.join(config, "plugins", "marketplaces", "market")}}))
    write(os.path.join(config, "settings.json"), json.dumps({"enabledPlugins": {f"plugin-{p}@market": True for p in range(3)}}))
    # Project settings come from the session's directory, local ones also from the git root (as Claude Code reads them).
    write(os.path.join(cwd, ".claude", "settings.json"), json.dumps({"enabledPlugins": {"plugin-3@market": True}}))
    write(os.path.join(project, ".claude", "settings.local.json"), json.dumps({"enabledPlugins": {"plugin-4@market": True}}))
    return {"home": home, "cwd": cwd}


def in_process(tree: dict, repeats: int) -> dict:
    env = {"HOME": tree["home"]}
    warnings: list = []
    found = discover(tree["cwd"], env, warnings)
    assert len(found) == USER_SKILLS + PROJECT_SKILLS + PLUGINS * SKILLS_PER_PLUGIN and not warnings, (len(found), warnings)
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        discover(tree["cwd"], env, [])
        samples.append((time.perf_counter() - started) * 1000)
    return summary(samples)


def timed(argv, env, cwd) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - started) * 1000


def as_process(tree: dict, pyz: str, repeats: int) -> dict:
    env = {"HOME": tree["home"], "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    proc = subprocess.run([sys.executable, "-I", "-S", pyz, "skills", "--json"], env=env, cwd=tree["cwd"], capture_output=True, text=True, check=True)
    assert len(json.loads(proc.stdout)) == USER_SKILLS + PROJECT_SKILLS + PLUGINS * SKILLS_PER_PLUGIN, proc.stderr
    variants = {
        "skills_command": [sys.executable, "-I", "-S", pyz, "skills", "--json"],
        "python_floor": [sys.executable, "-I", "-S", "-c", "pass"],
    }
    samples = {name: [] for name in variants}
    for i in range(repeats + 1):
        for name, argv in variants.items():
            elapsed = timed(argv, env, tree["cwd"])
            if i:  # the first round warms the page cache
                samples[name].append(elapsed)
    return {name: summary(values) for name, values in samples.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=200, help="discover() calls (default 200)")
    parser.add_argument("--process-repeats", type=int, default=30, help="rounds of the process rotation (default 30)")
    args = parser.parse_args()
    scratch = tempfile.mkdtemp(prefix="toolscript-bench-skills-")
    try:
        tree = build_tree(scratch)
        import build_pyz

        pyz = build_pyz.build(os.path.join(scratch, "toolscript.pyz"))
        report = {
            "skills": USER_SKILLS + PROJECT_SKILLS + PLUGINS * SKILLS_PER_PLUGIN,
            "layout": f"{USER_SKILLS} user, {PROJECT_SKILLS} project, {PLUGINS} plugins x {SKILLS_PER_PLUGIN} (v2 installed_plugins.json)",
            "discover_in_process": in_process(tree, args.repeats),
            "goal_ms": 50,
            "process": as_process(tree, pyz, args.process_repeats),
        }
        report["process"]["command_minus_floor_median_ms"] = round(
            report["process"]["skills_command"]["median_ms"] - report["process"]["python_floor"]["median_ms"], 3)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
