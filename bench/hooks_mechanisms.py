#!/usr/bin/env python3
"""What each hook costs the user, per event and per mechanism, with the real ``claude`` CLI; and the brief at scale.

Part 1, the latency a user feels.  The real CLI runs offline against the fake
Messages API (tests/fake_anthropic.py) with a copy of the plugin holding a
fresh build of this checkout, once per (event, mechanism), round-robin so
every mechanism sees the same machine load:

- ``none``: no hook on the event (the baseline);
- ``bare``: a command hook ``python3 -I -S -c pass`` (the floor of any command hook);
- ``command``: the plugin's command hook, ``hooks/hook.sh EVENT`` running
  ``toolscript hook EVENT`` in a new Python, waited for (what Claude Code before
  2.1.330 and ``toolscript setup`` users get, but for PostToolUse);
- ``server``: the plugin as shipped: the ``mcp_tool`` hook answered by the
  plugin's hook server, and ``hook.sh`` stepping aside;
- ``async`` (PostToolUse only): the command hook with ``"async": true``, as
  shipped.

Every configuration keeps the plugin's SessionStart and SessionEnd hooks, so a
gateway runs as in real use.  How the latency is read, from the times the
fake API receives each request:

- UserPromptSubmit: one ``claude -p --input-format stream-json`` gets
  ``--prompts`` prompts in turn; latency = the request's arrival minus the
  moment the prompt was written, prompts 2 and later (the first carries the
  session's start);
- PreToolUse, PostToolUse: one ``claude -p`` whose model makes ``--tools``
  Bash calls in turn; latency = the gap between consecutive requests (the
  CLI's own work, the hooks and the command);
- Stop: the stream-json session again; latency = the ``result`` line's
  arrival minus its request's arrival (the answer streamed, then the Stop hook).

Part 2, the PreToolUse brief at 10,000 and 100,000 memories: the handler the
hook runs (``memory_hooks.pre_tool_use``) in this process, as the hook server
runs it, over a store of that size (bench/memory_store.py's generator), with
the brief rate limit off so every call searches.

Prints one JSON document: per event and mechanism n, median_ms, p95_ms and
the median's difference from ``none``; per store size the brief's median and
p95.  ``python3 bench/hooks_mechanisms.py [--rounds 4] [--claude PATH]`` (the CLI: ``$CLAUDE_BIN``, else
tests/peers' pinned one, else PATH);
``--part latency`` or ``--part brief`` runs one part.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from stats import exit_on_sigterm, summary  # noqa: E402  (bench/stats.py)

PLUGIN = os.path.join(ROOT, "plugins", "toolscript")
EVENTS = ("UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")
MECHANISMS = ("none", "bare", "command", "server", "async")
HOOK_NAMES = {"UserPromptSubmit": "user-prompt-submit", "PreToolUse": "pre-tool-use", "PostToolUse": "post-tool-use",
              "Stop": "stop"}
PROMPTS = [
    "fix the failing test in the cache module",
    "why does the parser reject unicode escapes",
    "add a retry to the http client when the server answers 503",
    "rename the config loader's private helpers",
    "write a changelog entry for the memory store",
    "profile the search index build and make it faster",
    "explain what the gateway does when a server crashes",
    "update the docs for the setup command",
]


def progress(message: str) -> None:
    print(f"[bench/hooks_mechanisms] {message}", file=sys.stderr, flush=True)


def default_claude() -> Optional[str]:
    for candidate in (os.environ.get("CLAUDE_BIN"), os.path.join(ROOT, "tests", "peers", "node_modules", ".bin", "claude")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("claude")


# -- the plugin variants -------------------------------------------------------------------------


def plugin_variant(base: str, pyz: str, event: str, mechanism: str) -> str:
    """A copy of the plugin whose hooks on ``event`` use ``mechanism`` (none elsewhere but SessionStart/End)."""
    folder = os.path.join(base, f"{event}-{mechanism}")
    shutil.copytree(PLUGIN, folder, ignore=shutil.ignore_patterns("toolscript.pyz"))
    os.symlink(pyz, os.path.join(folder, "bin", "toolscript.pyz"))
    with open(os.path.join(PLUGIN, "hooks", "hooks.json"), encoding="utf-8") as f:
        shipped = json.load(f)["hooks"]
    with open(os.path.join(PLUGIN, "hooks", "mcp-hooks.json"), encoding="utf-8") as f:
        fast = json.load(f)["hooks"]
    hooks: Dict[str, Any] = {name: shipped[name] for name in ("SessionStart", "SessionEnd")}
    fast_hooks: Dict[str, Any] = {}
    if mechanism == "bare":
        group = dict(shipped[event][0], hooks=[{"type": "command", "command": "python3 -I -S -c pass", "timeout": 5}])
        hooks[event] = [group]
    elif mechanism in ("command", "server", "async"):
        # "command" waits for the hook (what a Claude Code without the server does for every event but
        # PostToolUse); "async" is the shipped PostToolUse command hook, run in the background.
        group = shipped[event][0]
        hooks[event] = [dict(group, hooks=[dict({k: v for k, v in hook.items() if k != "async"},
                                                **({"async": True} if mechanism == "async" else {}))
                                           for hook in group["hooks"]])]
    if mechanism == "server":
        fast_hooks[event] = fast[event]
    else:
        os.unlink(os.path.join(folder, ".mcp.json"))  # no hook server: hook.sh runs toolscript itself
    for name, document in (("hooks.json", hooks), ("mcp-hooks.json", fast_hooks)):
        with open(os.path.join(folder, "hooks", name), "w", encoding="utf-8") as f:
            json.dump({"hooks": document}, f)
    return folder


def environment(scratch: str, api_url: str) -> Dict[str, str]:
    env = {
        "HOME": os.path.join(scratch, "home"),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "ANTHROPIC_BASE_URL": api_url,
        "ANTHROPIC_API_KEY": "test",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_MAX_RETRIES": "1",
        "TOOLSCRIPT_STATE_DIR": os.path.join(scratch, "state"),
        "TOOLSCRIPT_SUGGEST_BACKEND": "local",  # no model call inside the hook: the mechanism is what is measured
    }
    for keep in ("LANG", "LC_ALL", "TMPDIR", "USER", "LOGNAME"):
        if keep in os.environ:
            env[keep] = os.environ[keep]
    os.makedirs(env["HOME"], exist_ok=True)
    return env


# -- one run each ----------------------------------------------------------------------------------


def conversation_requests(api: Any) -> List[Dict[str, Any]]:
    return [r for r in api.message_requests() if r["body"].get("stream") is True]


def run_prompts(claude: str, plugin: str, scratch: str, prompts: int) -> Dict[str, List[float]]:
    """UserPromptSubmit and Stop samples (ms) from one stream-json session of ``prompts`` prompts."""
    from fake_anthropic import FakeAnthropic

    project = os.path.join(scratch, "project")
    os.makedirs(project, exist_ok=True)
    ups: List[float] = []
    stop: List[float] = []
    with FakeAnthropic(["ok"], sequential=True, on_message=lambda entry: time.time()) as api:
        argv = [claude, "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
                "--model", "haiku", "--plugin-dir", plugin]
        proc = subprocess.Popen(argv, env=environment(scratch, api.url), cwd=project, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        try:
            for index in range(prompts):
                before = len(conversation_requests(api))
                sent = time.time()
                message = {"type": "user", "message": {"role": "user", "content": PROMPTS[index % len(PROMPTS)]}}
                proc.stdin.write(json.dumps(message) + "\n")
                proc.stdin.flush()
                for line in proc.stdout:
                    try:
                        if json.loads(line).get("type") == "result":
                            break
                    except ValueError:
                        continue
                finished = time.time()
                new = conversation_requests(api)[before:]
                if index and new and isinstance(new[0].get("observed"), float):
                    ups.append((new[0]["observed"] - sent) * 1000)
                    stop.append((finished - new[-1]["observed"]) * 1000)
            proc.stdin.close()
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return {"UserPromptSubmit": ups, "Stop": stop}


def run_tools(claude: str, plugin: str, scratch: str, tools: int) -> List[float]:
    """Gaps (ms) between the requests around each of ``tools`` Bash calls in one ``claude -p``."""
    from fake_anthropic import FakeAnthropic

    project = os.path.join(scratch, "project")
    os.makedirs(project, exist_ok=True)
    script: List[Any] = [{"bash": f"echo step {i}", "description": f"step {i}"} for i in range(tools)] + [{"text": "done"}]
    with FakeAnthropic(script, on_message=lambda entry: time.time()) as api:
        argv = [claude, "-p", "run the steps", "--model", "haiku", "--output-format", "json", "--plugin-dir", plugin,
                "--allowedTools", "Bash(echo *)"]
        subprocess.run(argv, env=environment(scratch, api.url), cwd=project, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=180)
        times = [r["observed"] for r in conversation_requests(api) if isinstance(r.get("observed"), float)]
    if len(times) != tools + 1:
        progress(f"a tools run made {len(times)} requests instead of {tools + 1}; its gaps are left out")
        return []
    return [(b - a) * 1000 for a, b in zip(times, times[1:])]


def latency(claude: str, rounds: int, prompts: int, tools: int, events: List[str]) -> Dict[str, Any]:
    import build_pyz

    base = tempfile.mkdtemp(prefix="toolscript-bench-hookmech-")
    try:
        pyz = build_pyz.build(os.path.join(base, "toolscript.pyz"))
        configs = [(event, mechanism) for event in events for mechanism in MECHANISMS
                   if mechanism != "async" or event == "PostToolUse"]
        plugins = {config: plugin_variant(base, pyz, *config) for config in configs}
        samples: Dict[str, List[float]] = {}
        for round_index in range(rounds):
            for event, mechanism in configs:
                scratch = tempfile.mkdtemp(prefix="run-", dir=base)
                if event in ("UserPromptSubmit", "Stop"):
                    got = run_prompts(claude, plugins[(event, mechanism)], scratch, prompts)[event]
                else:
                    got = run_tools(claude, plugins[(event, mechanism)], scratch, tools)
                samples.setdefault(f"{event}/{mechanism}", []).extend(got)
                shutil.rmtree(scratch, ignore_errors=True)
            progress(f"round {round_index + 1}/{rounds} done")
        result: Dict[str, Any] = {}
        for event in events:
            baseline = samples.get(f"{event}/none")
            rows = {}
            for mechanism in MECHANISMS:
                got = samples.get(f"{event}/{mechanism}")
                if not got:
                    continue
                row = summary(got, 1)
                if baseline:
                    row["over_none_ms"] = round(row["median_ms"] - summary(baseline, 1)["median_ms"], 1)
                rows[mechanism] = row
            result[event] = rows
        return result
    finally:
        shutil.rmtree(base, ignore_errors=True)


# -- part 2: the brief at scale ---------------------------------------------------------------------


def brief_at_scale(sizes: List[int], calls: int) -> Dict[str, Any]:
    import memory_hooks as bench_memory  # bench/memory_hooks.py: fills a store the way the other memory benches do

    from toolscript.claude_code import memory_hooks

    results: Dict[str, Any] = {}
    commands = ["pytest tests/test_cache.py -q", "make release", "git diff src/cluster.py", "cargo build --release",
                "npm run lint", "python3 scripts/migrate.py --dry-run", "ls docs", "grep -rn TODO src"]
    files = ["src/cache.py", "src/cluster.py", "docs/setup.md", "tests/test_parser.py", "Makefile"]
    for size in sizes:
        scratch = tempfile.mkdtemp(prefix="toolscript-bench-brief-")
        saved = {k: os.environ.get(k) for k in ("TOOLSCRIPT_DATA_DIR", "TOOLSCRIPT_STATE_DIR", "HOME")}
        try:
            project = os.path.join(scratch, "project")
            os.makedirs(project)
            os.environ.update(TOOLSCRIPT_DATA_DIR=os.path.join(scratch, "data"), TOOLSCRIPT_STATE_DIR=os.path.join(scratch, "state"),
                              HOME=scratch)
            os.makedirs(os.environ["TOOLSCRIPT_DATA_DIR"])
            progress(f"filling a store of {size} memories")
            bench_memory.fill(os.path.join(os.environ["TOOLSCRIPT_DATA_DIR"], "memory.db"), project, size)
            with open(os.path.join(project, ".toolscript.json"), "w") as f:
                json.dump({"memory": {"briefInterval": 0}}, f)  # every call searches
            _trust(project)
            timings: List[float] = []
            found = 0
            for index in range(calls):
                if index % 2:
                    event = {"tool_name": "Edit", "tool_input": {"file_path": os.path.join(project, files[index % len(files)])}}
                else:
                    event = {"tool_name": "Bash", "tool_input": {"command": commands[index % len(commands)]}}
                event.update(session_id=f"bench-{index}", cwd=project)  # a new session each: nothing excluded yet
                started = time.perf_counter()
                text = memory_hooks.pre_tool_use(event)
                timings.append((time.perf_counter() - started) * 1000)
                found += bool(text)
            results[str(size)] = dict(summary(timings[1:], 1), briefs=found)  # the first call opens the store cold
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
            shutil.rmtree(scratch, ignore_errors=True)
    return results


def _trust(project: str) -> None:
    from toolscript.config import trust

    path = os.path.join(project, ".toolscript.json")
    with open(path, "rb") as f:
        trust.approve(path, f.read())


def main() -> None:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--prompts", type=int, default=6)
    parser.add_argument("--tools", type=int, default=8)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--calls", type=int, default=41)
    parser.add_argument("--claude", default=None, help="the claude CLI (default: $CLAUDE_BIN, then tests/peers, then PATH)")
    parser.add_argument("--part", choices=("all", "latency", "brief"), default="all")
    parser.add_argument("--events", default=",".join(EVENTS), help="which events to time (default: all four)")
    args = parser.parse_args()
    report: Dict[str, Any] = {}
    if args.part in ("all", "latency"):
        claude = args.claude or default_claude()
        if not claude:
            sys.exit("no claude CLI: pass --claude PATH (npm install @anthropic-ai/claude-code)")
        version = subprocess.run([claude, "--version"], capture_output=True, text=True).stdout.strip()
        report["claude"] = version
        events = [e for e in args.events.split(",") if e]
        unknown = set(events) - set(EVENTS)
        if unknown:
            sys.exit(f"unknown events {sorted(unknown)}; known: {', '.join(EVENTS)}")
        report["latency_ms"] = latency(claude, args.rounds, args.prompts, args.tools, events)
    if args.part in ("all", "brief"):
        report["pre_tool_use_brief_ms"] = brief_at_scale([int(s) for s in args.sizes.split(",") if s], args.calls)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
