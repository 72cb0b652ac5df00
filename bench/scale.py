#!/usr/bin/env python3
"""Benchmark search at scale: a catalog change, the first search after it, warm searches, 50 servers, a reload.

Every figure is measured for this tree and for a base commit (``--base``,
checked out in a throwaway git worktree) in the same run, the two in turn
round after round, so machine noise hits both alike:

- change: a catalog of 500 or 5,000 tools (the development sets' recorded
  tools, bench/search/sets/, without the held-out set; past their number,
  copies with every word changed) in one server or in ten, served by the
  gateway's catalog and derived search (``Catalog``, ``Derived``, in a child
  Python of that build).  One server's tool list changes (one tool's
  description, a new list): ``apply`` is ``catalog.rebuild()`` (what the
  server's own thread spends), ``first_search`` the search right after it
  (a query not asked before), ``change_to_answer`` the two together; then
  ``warm_search``: queries the index has answered before;
- reload_of_one_of_50: the same over 50 servers of 100 tools each (5,000):
  from one server's new list until search answers from the catalog with it;
- gateway_50_servers: ``toolscript gateway start`` with 50 stdio fixture
  servers (tests/mcp_servers/fixture_server.py; ``--fillers`` more tools
  each): until GET /servers says every one is ready (``to_all_ready``), the
  first GET /search after that, and a reload: one server's ``change_tools``
  (it adds a tool and sends tools/list_changed) until GET /search finds the
  new tool (``reload_to_searchable``).

Prints one JSON document: median/p95/n per build and figure, and per figure
the difference (this tree minus base) and ratio of the medians.  Progress on stderr.

    .venv/bin/python bench/scale.py --base main [--rounds 2] [--repeats 6] [--no-gateway | --no-catalogs]
"""

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
sys.path.insert(0, BENCH)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from stats import exit_on_sigterm, summary  # noqa: E402  (bench/stats.py)

BUILDS = ("base", "head")
CHANGE_CONFIGS = ((500, 1), (500, 10), (5000, 1), (5000, 10))
WARM_QUERIES = 40
START_TIMEOUT = 60.0


def progress(message):
    print(f"[bench/scale] {message}", file=sys.stderr, flush=True)


def git(*args, cwd=ROOT):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=120).stdout.strip()


# -- the catalogs and queries (in the child) ------------------------------------------------------


def pool_of_tools():
    """Every development set's recorded tool as an MCP tool (name made unique with its server's), in set order."""
    import evalsets

    tools = []
    for name in evalsets.development():
        for t in evalsets.own_tools(name):
            tool = {k: v for k, v in t.items() if k not in ("id", "server")}
            tool["name"] = f"{t['server']}_{t['name']}"
            tools.append(tool)
    return tools


def mangled(value, suffix):
    """``value`` with every word of four letters or more given ``suffix``: another server's words."""
    if isinstance(value, str):
        return re.sub(r"[A-Za-z]{4,}", lambda m: m.group(0) + suffix, value)
    if isinstance(value, dict):
        return {k: mangled(v, suffix) for k, v in value.items()}
    if isinstance(value, list):
        return [mangled(v, suffix) for v in value]
    return value


def catalog_of(tools, servers):
    """{server: [tools]} of ``tools`` tools split into ``servers`` servers in order."""
    pool = pool_of_tools()
    out, copy = list(pool), 0
    while len(out) < tools:
        copy += 1
        out += [mangled(t, "qxz"[copy % 3] * (1 + copy // 3)) for t in pool]
    out = out[:tools]
    size = -(-tools // servers)
    return {f"server{k:02d}": out[k * size:(k + 1) * size] for k in range(servers)}


def query_pool(seed):
    """Every development set's labelled query, shuffled."""
    import evalsets

    queries = [q["query"] for name in evalsets.development() for q in evalsets.queries(name)]
    random.Random(seed).shuffle(queries)
    return queries


def changed(tools, revision):
    """A new list of ``tools`` with one tool's description changed."""
    out = list(tools)
    k = revision % len(out)
    out[k] = dict(out[k], description=f"{out[k].get('description') or ''} (revision {revision})")
    return out


def ms(start):
    return (time.perf_counter() - start) * 1000


def child_change(tools, servers, repeats, seed):
    """apply / first_search / change_to_answer / warm_search samples for one catalog, in this process's build."""
    from toolscript.gateway.catalog import Catalog
    from toolscript.gateway.derived import Derived

    lists = catalog_of(tools, servers)
    catalog = Catalog(lambda: list(lists.items()))
    started = time.perf_counter()
    derived = Derived(catalog)
    derived.current()
    out = {"first_build": [ms(started)], "apply": [], "first_search": [], "change_to_answer": [], "warm_search": []}
    queries = query_pool(seed)
    warm, fresh = queries[:WARM_QUERIES], iter(queries[WARM_QUERIES:])
    for query in warm:
        derived.search(query, limit=5, threshold=0.0, servers=None)
    names = list(lists)
    try:
        for revision in range(1, repeats + 1):
            server = names[revision % len(names)]
            lists[server] = changed(lists[server], revision)
            query = next(fresh)
            start = time.perf_counter()
            assert catalog.rebuild()
            applied = time.perf_counter()
            derived.search(query, limit=5, threshold=0.0, servers=None)
            done = time.perf_counter()
            out["apply"].append((applied - start) * 1000)
            out["first_search"].append((done - applied) * 1000)
            out["change_to_answer"].append((done - start) * 1000)
            assert derived.current().version == catalog.snapshot().version
            # The whole catalog's stubs too, so no build of them runs into the next change.
            for lang in ("python", "ts"):
                derived.types(lang=lang)
        for _ in range(3):
            for query in warm:
                start = time.perf_counter()
                derived.search(query, limit=5, threshold=0.0, servers=None)
                out["warm_search"].append(ms(start))
    finally:
        derived.close()
    return out


def child(args):
    sys.path.insert(0, args.child)  # that build's toolscript
    import toolscript

    assert os.path.dirname(os.path.dirname(os.path.abspath(toolscript.__file__))) == os.path.abspath(args.child), toolscript.__file__
    tools, servers = args.tools, args.servers
    json.dump(child_change(tools, servers, args.repeats, args.seed), sys.stdout)


# -- the gateway with 50 servers -----------------------------------------------------------------


def fixture_servers(count, fillers):
    from mcp_servers import launch

    command = launch.stdio_command(*(["--tools", str(fillers)] if fillers else []))
    return {f"fixture{i:02d}": {"command": command[0], "args": command[1:]} for i in range(1, count + 1)}


def searched(client, query, server):
    return [r["id"] for r in client.get("/search", q=query, limit="10", server=server)["results"]]


def gateway_round(tree, servers, reload_server):
    """One gateway start: ms to every server ready, the first search after, and a reload until it is searchable."""
    from gateway import GatewayProcess  # bench/gateway.py: the gateway as a user starts it

    from toolscript.gateway.client import GatewayClient

    gateway = GatewayProcess(servers)
    gateway.env["PYTHONPATH"] = tree  # that build's gateway
    try:
        _, started = gateway.start()
        ready = gateway.wait_ready(list(servers), started)
        client = GatewayClient(gateway.url, timeout=START_TIMEOUT)
        start = time.perf_counter()
        client.get("/search", q="echo the message back", limit="5")
        first_search = ms(start)
        result = client.post("/call", {"tool": f"{reload_server}__change_tools", "arguments": {}})
        if not result.get("ok"):
            raise RuntimeError(f"change_tools failed: {result}")
        start = time.perf_counter()
        while f"{reload_server}__extra_tool" not in searched(client, "added by change_tools", reload_server):
            if ms(start) > START_TIMEOUT * 1000:
                raise RuntimeError(f"the reloaded tool never became searchable; log: {gateway.log_tail()}")
        reload_ms = ms(start)
        return {"to_all_ready": ready, "first_search_after_ready": first_search, "reload_to_searchable": reload_ms}
    finally:
        gateway.stop()


# -- the parent: both builds, in turn ---------------------------------------------------------------


def run_child(tree, tools, servers, repeats, seed):
    argv = [sys.executable, os.path.abspath(__file__), "--child", tree, "--tools", str(tools), "--servers", str(servers),
            "--repeats", str(repeats), "--seed", str(seed)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=1800, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    if proc.returncode != 0:
        raise RuntimeError(f"child {tree} {tools}/{servers} failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def compare(base, head):
    out = {}
    for key in ("median_ms", "p95_ms"):
        out[key.replace("_ms", "_difference_ms")] = round(head[key] - base[key], 3)
        out[key.replace("_ms", "_ratio")] = round(head[key] / base[key], 4) if base[key] else None
    return out


def report(samples):
    """{figure: {"base": summary, "head": summary, "head_vs_base": ...}} of {build: {figure: [ms]}}."""
    out = {}
    for figure in samples["head"]:
        base, head = summary(samples["base"][figure]), summary(samples["head"][figure])
        out[figure] = {"base": base, "head": head, "head_vs_base": compare(base, head)}
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="main", help="the commit to compare with (default: main)")
    parser.add_argument("--rounds", type=int, default=2, help="times each build's child runs per catalog, in turn")
    parser.add_argument("--repeats", type=int, default=6, help="catalog changes per child")
    parser.add_argument("--gateway-rounds", type=int, default=3, help="gateway starts per build and server count")
    parser.add_argument("--fillers", type=int, default=85, help="extra tools per fixture server in the 5,000-tool gateway")
    parser.add_argument("--no-gateway", action="store_true", help="skip the gateway figures")
    parser.add_argument("--no-catalogs", action="store_true", help="skip the in-process catalog figures (only the gateway's)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--tools", type=int, default=500, help=argparse.SUPPRESS)
    parser.add_argument("--servers", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args)
        return 0
    exit_on_sigterm()  # the finally block removes the base worktree
    sys.path.insert(0, ROOT)  # this tree's gateway client, for the gateway figures
    scratch = tempfile.mkdtemp(prefix="toolscript-bench-scale-")
    base_tree = os.path.join(scratch, "base-tree")
    started = time.perf_counter()
    try:
        sha = git("rev-parse", "--verify", args.base + "^{commit}")
        git("worktree", "add", "--detach", base_tree, sha)
        trees = {"base": base_tree, "head": ROOT}
        results = {
            "benchmark": "scale",
            "base": sha, "head": git("rev-parse", "HEAD"), "head_dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
            "python": sys.version.split()[0], "cpus": os.cpu_count(), "load_average_before": [round(x, 2) for x in os.getloadavg()],
        }
        configs = [(f"{tools}_tools_{servers}_server{'s' if servers > 1 else ''}", tools, servers) for tools, servers in CHANGE_CONFIGS]
        configs.append(("reload_of_one_of_50", 5000, 50))
        if args.no_catalogs:
            configs = []
        for label, tools, servers in configs:
            samples = {build: {} for build in BUILDS}
            for round_number in range(args.rounds):
                for build in (BUILDS if round_number % 2 == 0 else BUILDS[::-1]):
                    progress(f"{label}: {build}, round {round_number + 1}")
                    got = run_child(trees[build], tools, servers, args.repeats, seed=round_number)
                    for figure, values in got.items():
                        samples[build].setdefault(figure, []).extend(values)
            results[label] = report(samples)
        if not args.no_gateway:
            for label, fillers in (("gateway_50_servers", 0), (f"gateway_50_servers_{50 * (15 + args.fillers)}_tools", args.fillers)):
                servers = fixture_servers(50, fillers)
                samples = {build: {} for build in BUILDS}
                for round_number in range(args.gateway_rounds):
                    for build in (BUILDS if round_number % 2 == 0 else BUILDS[::-1]):
                        progress(f"{label}: {build}, round {round_number + 1}")
                        got = gateway_round(trees[build], servers, "fixture25")
                        for figure, value in got.items():
                            samples[build].setdefault(figure, []).append(value)
                results[label] = report(samples)
        results["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    finally:
        if os.path.isdir(base_tree):
            git("worktree", "remove", "--force", base_tree)
        shutil.rmtree(scratch, ignore_errors=True)
    results["total_s"] = round(time.perf_counter() - started, 1)
    json.dump(results, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
