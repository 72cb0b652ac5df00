#!/usr/bin/env python3
"""Benchmark code mode: exec cost in Python and TypeScript, tool calls from a script, context.

One run, one gateway (``python -m toolscript gateway start --json`` as a
subprocess, the stdlib fixture server over stdio as its only upstream),
everything on 127.0.0.1:

- exec_trivial: wall time of ``toolscript exec 'print(1)'`` (the CLI as a
  subprocess, as an agent runs it) and of ``sandbox.run`` alone (in this
  process); the same for TypeScript (``exec --lang ts 'console.log(1)'`` and
  ``deno.run``) and, for comparison, the Deno original's model: ``deno run
  --check`` with a fresh DENO_DIR and an import map pointing at
  ``<gateway>/runtime/tools.ts?_t=<now>``, run directly (so without the
  original CLI's own start-up, which the notes put at >= 0.25 s more);
- exec_100_calls: a script making 100 sequential ``echo`` calls, through the
  CLI, in Python and in TypeScript, plus the Deno original's model; the
  script's own time for the loop is reported next to the wall time;
- context: per catalog of the first search evaluation set (bench/search/sets/set00/catalogs/)
  and for all together, the characters of ``python_stubs(tools)`` (compact, what ``get-types``
  prints) against ``json.dumps`` of the MCP ``tools/list`` result (what an
  agent is given when every tool is loaded), and the ratio.

Search has a bench of its own (bench/search.py, which ``make bench`` runs): it takes minutes on a
small machine, and run from here under a fixed time limit it took every exec figure down with it.

The variants of a section run in rotation (one of each, then again) so
machine noise hits them alike.  Prints one JSON document (median, p95 and n
per figure; progress on stderr).  Needs the npm peers (``make bench``
installs them): Deno is the pinned npm ``deno`` from tests/peers.

    .venv/bin/python bench/codemode.py [--repeats 20] [--call-repeats 10] [--model-repeats 5]
"""

import argparse
import glob
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from urllib.parse import urlsplit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, BENCH)

import peers  # noqa: E402  (tests/peers.py: the pinned Deno)
from gateway import GatewayProcess, fixture_servers, summary  # noqa: E402  (bench/gateway.py)
from stats import exit_on_sigterm  # noqa: E402  (bench/stats.py)

from toolscript.stubs.python import python_stubs  # noqa: E402
from toolscript.stubs.typescript import typescript_declarations  # noqa: E402
from toolscript.codemode import deno, sandbox  # noqa: E402

RUN_TIMEOUT = 60.0  # seconds for any one exec
CALLS = 100

PY_TRIVIAL = "print(1)"
TS_TRIVIAL = "console.log(1);"
PY_CALLS = f"""\
import time
from toolscript import tools
start = time.perf_counter()
for i in range({CALLS}):
    tools.fixture1.echo(message=f"m{{i}}")
print(round((time.perf_counter() - start) * 1000, 3))
"""
TS_CALLS = f"""\
import {{ tools }} from "toolscript";
const start = performance.now();
for (let i = 0; i < {CALLS}; i++) await tools.fixture1.echo({{ message: `m${{i}}` }});
console.log((performance.now() - start).toFixed(3));
"""


def progress(message):
    print(f"[bench/codemode] {message}", file=sys.stderr, flush=True)


def ms_since(start):
    return (time.perf_counter() - start) * 1000


class Runner:
    """The ways of running a script, each returning (wall ms, stdout)."""

    def __init__(self, gateway, deno_path, tmp):
        self.gateway = gateway
        self.deno_path = deno_path
        self.tmp = tmp
        self.env = dict(gateway.env, TOOLSCRIPT_GATEWAY_URL=gateway.url)
        if deno_path:
            self.env["PATH"] = os.path.dirname(deno_path) + os.pathsep + self.env.get("PATH", "/usr/bin:/bin")

    def _check(self, what, code, proc_rc, out, err):
        if proc_rc != 0:
            raise RuntimeError(f"{what} failed (exit {proc_rc}) for {code[:60]!r}: {err[-800:]}")
        return out

    def cli(self, code, lang="python"):
        argv = [sys.executable, "-m", "toolscript", "exec"] + (["--lang", "ts"] if lang == "ts" else []) + [code]
        start = time.perf_counter()
        proc = subprocess.run(argv, env=self.env, cwd=self.gateway.work, stdin=subprocess.DEVNULL, capture_output=True, timeout=RUN_TIMEOUT)
        wall = ms_since(start)
        return wall, self._check(f"exec --lang {lang}", code, proc.returncode, proc.stdout.decode(), proc.stderr.decode())

    def in_process(self, code, lang="python"):
        out, err = io.BytesIO(), io.BytesIO()
        start = time.perf_counter()
        if lang == "ts":
            result = deno.run(code, gateway_url=self.gateway.url, stdout=out, stderr=err, deno=self.deno_path, timeout=RUN_TIMEOUT)
        else:
            result = sandbox.run(code, stdout=out, stderr=err, timeout=RUN_TIMEOUT)
        wall = ms_since(start)
        return wall, self._check(f"{lang} in process", code, result.exit_code, out.getvalue().decode(), err.getvalue().decode())

    def deno_original_model(self, code):
        """The Deno original's exec: fresh DENO_DIR, cache-busting import map, ``deno run --check``."""
        parts = urlsplit(self.gateway.url)
        authority = f"{parts.hostname}:{parts.port}"
        work = tempfile.mkdtemp(prefix="deno-original-", dir=self.tmp)
        try:
            import_map = os.path.join(work, "import_map.json")
            with open(import_map, "w") as f:
                json.dump({"imports": {"toolscript": f"{self.gateway.url}/runtime/tools.ts?_t={int(time.time() * 1000)}"}}, f)
            script = os.path.join(work, "code.ts")
            with open(script, "w") as f:
                f.write(code)
            argv = [
                self.deno_path, "run", "--quiet", "--check", f"--allow-net={authority}", f"--allow-import={authority}",
                "--allow-env=TOOLSCRIPT_GATEWAY_URL", f"--import-map={import_map}", "--no-prompt", script,
            ]
            env = {"TOOLSCRIPT_GATEWAY_URL": self.gateway.url, "DENO_DIR": os.path.join(work, "deno_dir"), "DENO_NO_UPDATE_CHECK": "1", "NO_COLOR": "1"}
            start = time.perf_counter()
            proc = subprocess.run(argv, env=env, cwd=work, stdin=subprocess.DEVNULL, capture_output=True, timeout=RUN_TIMEOUT)
            wall = ms_since(start)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return wall, self._check("deno --check", code, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def rotate(variants, repeats, warmup=1):
    """Run each variant ``repeats`` times in rotation; {name: {"wall": [...], "inner": [...]}}."""
    samples = {name: {"wall": [], "inner": []} for name in variants}
    for _ in range(warmup):
        for run in variants.values():
            run()
    for _ in range(repeats):
        for name, run in variants.items():
            wall, out = run()
            samples[name]["wall"].append(wall)
            last = out.strip().splitlines()[-1] if out.strip() else ""
            try:
                samples[name]["inner"].append(float(last))
            except ValueError:
                pass
    return samples


def figures(samples, inner_label=None):
    out = {}
    for name, got in samples.items():
        entry = {"wall": summary(got["wall"])}
        if inner_label and got["inner"]:
            entry[inner_label] = summary(got["inner"])
        out[name] = entry
    return out


def ratio(a, b):
    return round(a / b, 2) if b else None


def exec_benchmarks(runner, repeats, call_repeats, model_repeats):
    results = {}
    progress(f"exec print(1) / console.log(1): {repeats} rounds (CLI and in process, Python and TypeScript)")
    trivial = {
        "python_cli": lambda: runner.cli(PY_TRIVIAL),
        "python_sandbox_run": lambda: runner.in_process(PY_TRIVIAL),
    }
    if runner.deno_path:
        trivial["ts_cli"] = lambda: runner.cli(TS_TRIVIAL, "ts")
        trivial["ts_deno_run"] = lambda: runner.in_process(TS_TRIVIAL, "ts")
    results["exec_trivial"] = figures(rotate(trivial, repeats))
    results["exec_trivial"]["python_sandbox_mode"] = sandbox.isolation_report(gateway=False)["mode"]

    progress(f"exec with {CALLS} echo calls: {call_repeats} rounds")
    calls = {"python_cli": lambda: runner.cli(PY_CALLS)}
    if runner.deno_path:
        calls["ts_cli"] = lambda: runner.cli(TS_CALLS, "ts")
    results["exec_100_calls"] = figures(rotate(calls, call_repeats), inner_label="loop_in_script_ms")

    if runner.deno_path:
        progress(f"the Deno original's model (deno run --check, fresh DENO_DIR): {model_repeats} rounds")
        model = {
            "trivial": lambda: runner.deno_original_model(TS_TRIVIAL),
            "100_calls": lambda: runner.deno_original_model(TS_CALLS),
        }
        got = figures(rotate(model, model_repeats, warmup=0), inner_label="loop_in_script_ms")
        results["exec_trivial"]["deno_original_model"] = {"wall": got["trivial"]["wall"]}  # its output is just "1"
        results["exec_100_calls"]["deno_original_model"] = got["100_calls"]
        median = lambda section, name: results[section][name]["wall"]["median_ms"]  # noqa: E731
        results["ratios"] = {
            "ts_cli_vs_python_cli_trivial": ratio(median("exec_trivial", "ts_cli"), median("exec_trivial", "python_cli")),
            "deno_original_model_vs_ts_cli_trivial": ratio(median("exec_trivial", "deno_original_model"), median("exec_trivial", "ts_cli")),
            "ts_cli_vs_python_cli_100_calls": ratio(median("exec_100_calls", "ts_cli"), median("exec_100_calls", "python_cli")),
            "deno_original_model_vs_ts_cli_100_calls": ratio(median("exec_100_calls", "deno_original_model"), median("exec_100_calls", "ts_cli")),
        }
    return results


def context_benchmark():
    """Characters an agent reads: compact Python stubs vs the tools/list JSON, per catalog and in all."""
    progress("context: stubs vs tools/list JSON per catalog")
    per, all_tools, all_raw = {}, [], []
    for path in sorted(glob.glob(os.path.join(BENCH, "search", "sets", "set00", "catalogs", "*.json"))):
        with open(path, encoding="utf-8") as f:
            catalog = json.load(f)
        raw = catalog["tools"]
        tools = [dict(t, id=f"{catalog['server']}__{t['name']}", server=catalog["server"]) for t in raw]
        stubs = len(python_stubs(tools))
        listing = len(json.dumps({"tools": raw}))
        per[catalog["server"]] = {"tools": len(raw), "tools_list_json_chars": listing, "python_stubs_chars": stubs, "ratio": round(stubs / listing, 3)}
        all_tools += tools
        all_raw += raw
    stubs = len(python_stubs(all_tools))
    listing = len(json.dumps({"tools": all_raw}))
    return {
        "what": "len(python_stubs(tools)) (compact) vs len(json.dumps(tools/list result)); ratio = stubs / json",
        "per_catalog": per,
        "all_catalogs": {
            "servers": len(per),
            "tools": len(all_raw),
            "tools_list_json_chars": listing,
            "python_stubs_chars": stubs,
            "ts_declarations_chars": len(typescript_declarations(all_tools)),
            "ratio": round(stubs / listing, 3),
            "sum_of_per_catalog_stubs_chars": sum(p["python_stubs_chars"] for p in per.values()),
        },
    }


def deno_version(path):
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30, env={"NO_COLOR": "1"}).stdout
        return out.splitlines()[0] if out else None
    except (OSError, subprocess.SubprocessError):
        return None


def main(argv=None):
    exit_on_sigterm()  # the finally blocks stop every process we started
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20, help="rounds of the trivial exec (each variant once per round)")
    parser.add_argument("--call-repeats", type=int, default=10, help=f"rounds of the {CALLS}-call script")
    parser.add_argument("--model-repeats", type=int, default=5, help="rounds of the Deno original's model (about 1.2 s each)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        deno_path = peers.deno_binary()
    except peers.PeerMissing as exc:
        deno_path, deno_missing = None, str(exc)
    else:
        deno_missing = None
    results = {
        "benchmark": "codemode",
        "upstream": "tests/mcp_servers/fixture_server.py stdio (server fixture1), through one gateway subprocess",
        "python": platform.python_version(),
        "deno": deno_version(deno_path) if deno_path else {"error": deno_missing},
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus",
    }
    tmp = tempfile.mkdtemp(prefix="toolscript-bench-codemode-")
    gateway = GatewayProcess(fixture_servers(1))
    try:
        progress("starting the gateway")
        url_ms, gw_started = gateway.start()
        results["gateway_ready_ms"] = round(gateway.wait_ready(["fixture1"], gw_started), 1)
        runner = Runner(gateway, deno_path, tmp)
        results.update(exec_benchmarks(runner, args.repeats, args.call_repeats, args.model_repeats))
    finally:
        gateway.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    results["context"] = context_benchmark()
    results["total_s"] = round(time.perf_counter() - started, 1)
    json.dump(results, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
