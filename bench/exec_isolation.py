#!/usr/bin/env python3
"""Benchmark what exec's isolation costs: each layer of the fallback ladder against a bare interpreter.

One run, one gateway (``python -m toolscript gateway start --json`` as a
subprocess, built-in tools only), everything on 127.0.0.1.  For each layer
exec can be forced onto (``TOOLSCRIPT_EXEC_LAYER=landlock|bubblewrap|
namespaces|guard``) and for the default choice, the wall time of the CLI as an
agent runs it:

- print1: ``toolscript exec 'print(1)'`` (no gateway needed);
- one_call: a script making one tool call, ``builtin__time.now``, through the
  gateway;

next to, in the same rotation, a bare ``python -c pass`` and ``python -I -S -c
pass`` (the floor any exec pays).  A layer this machine does not have (the
forced run fails) is reported with the reason, not measured.  The variants run
in rotation (one of each, then again) so machine noise hits them alike.

Prints one JSON document: per layer the modes exec reported (``exec --json``;
print1 runs without the gateway, so with a network namespace where available)
and median/p95/n of each figure, the bare interpreter's figures, and per layer
the median overhead over the guard-only layer and over ``python -c pass``.
Progress goes to stderr.

    .venv/bin/python bench/exec_isolation.py [--repeats 20]
"""

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, BENCH)

from gateway import GatewayProcess  # noqa: E402  (bench/gateway.py)
from stats import exit_on_sigterm, summary  # noqa: E402  (bench/stats.py)

RUN_TIMEOUT = 60.0  # seconds for any one run
LAYER_ENV = "TOOLSCRIPT_EXEC_LAYER"
LAYERS = ("default", "landlock", "bubblewrap", "namespaces", "guard")  # "default": no forcing, exec's own choice
PRINT1 = "print(1)"
ONE_CALL = "from toolscript import tools\nprint(tools.builtin.time_now()['timestamp'] > 0)"


def progress(message):
    print(f"[bench/exec_isolation] {message}", file=sys.stderr, flush=True)


def timed(argv, env, cwd):
    """Run argv; (wall ms, CompletedProcess)."""
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, timeout=RUN_TIMEOUT)
    return (time.perf_counter() - start) * 1000, proc


def layer_env(base, layer):
    env = {k: v for k, v in base.items() if k != LAYER_ENV}
    if layer != "default":
        env[LAYER_ENV] = layer
    return env


PYZ = []  # the zipapp main() builds: what users run, through the launcher's "python3 -I -S"


def exec_argv(code, json_output=False):
    return [sys.executable, "-I", "-S", PYZ[0]] + (["--json"] if json_output else []) + ["exec", code]


def probe_layer(base_env, cwd, layer):
    """The modes exec reports under this layer ({"print1": ..., "one_call": ...}), or (None, why it cannot run)."""
    modes = {}
    for name, code, expected in (("print1", PRINT1, "1\n"), ("one_call", ONE_CALL, "True\n")):
        _, proc = timed(exec_argv(code, json_output=True), layer_env(base_env, layer), cwd)
        if proc.returncode != 0:
            reason = (proc.stderr.decode(errors="replace").strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
            return None, reason
        result = json.loads(proc.stdout)
        if result.get("stdout") != expected:
            return None, f"{name} printed {result.get('stdout')!r}, stderr {result.get('stderr', '')[-300:]!r}"
        modes[name] = result.get("mode")
    return modes, None


def runner(argv, env, cwd, expected):
    def run():
        wall, proc = timed(argv, env, cwd)
        out = proc.stdout.decode(errors="replace")
        if proc.returncode != 0 or out != expected:
            raise RuntimeError(f"{argv[-1][:40]!r} failed (exit {proc.returncode}, stdout {out!r}): {proc.stderr.decode(errors='replace')[-600:]}")
        return wall

    return run


def rotate(variants, repeats, warmup=1):
    """Each variant ``repeats`` times in rotation; {name: [wall ms, ...]}."""
    samples = {name: [] for name in variants}
    for _ in range(warmup):
        for run in variants.values():
            run()
    for _ in range(repeats):
        for name, run in variants.items():
            samples[name].append(run())
    return samples


def median(figures, name):
    return figures[name]["median_ms"] if name in figures else None


def diff(a, b):
    return None if a is None or b is None else round(a - b, 3)


def measure(gateway, repeats):
    base_env = dict(gateway.env, TOOLSCRIPT_GATEWAY_URL=gateway.url)
    cwd = gateway.work
    layers, variants = {}, {}
    for layer in LAYERS:
        mode, missing = probe_layer(base_env, cwd, layer)
        if missing:
            progress(f"layer {layer}: not available here ({missing})")
            layers[layer] = {"available": False, "reason": missing}
            continue
        progress(f"layer {layer}: {mode['one_call']}")
        layers[layer] = {"available": True, "mode": mode}
        env = layer_env(base_env, layer)
        variants[f"{layer}/print1"] = runner(exec_argv(PRINT1), env, cwd, "1\n")
        variants[f"{layer}/one_call"] = runner(exec_argv(ONE_CALL), env, cwd, "True\n")
    bare_env = {"PATH": base_env.get("PATH", "/usr/bin:/bin")}
    variants["bare/python_c_pass"] = runner([sys.executable, "-c", "pass"], bare_env, cwd, "")
    variants["bare/python_I_S_c_pass"] = runner([sys.executable, "-I", "-S", "-c", "pass"], bare_env, cwd, "")
    progress(f"{len(variants)} variants, {repeats} rounds")
    figures = {name: summary(walls) for name, walls in rotate(variants, repeats).items()}
    for layer, entry in layers.items():
        if entry["available"]:
            entry["print1"] = figures[f"{layer}/print1"]
            entry["one_call"] = figures[f"{layer}/one_call"]
    bare = {"python_c_pass": figures["bare/python_c_pass"], "python_I_S_c_pass": figures["bare/python_I_S_c_pass"]}
    floor = bare["python_c_pass"]["median_ms"]
    overhead = {}
    for layer, entry in layers.items():
        if not entry["available"]:
            continue
        overhead[layer] = {
            "print1_vs_guard_ms": diff(median(figures, f"{layer}/print1"), median(figures, "guard/print1")),
            "one_call_vs_guard_ms": diff(median(figures, f"{layer}/one_call"), median(figures, "guard/one_call")),
            "print1_vs_python_c_pass_ms": diff(median(figures, f"{layer}/print1"), floor),
            "one_call_vs_python_c_pass_ms": diff(median(figures, f"{layer}/one_call"), floor),
        }
    return {"layers": layers, "bare": bare, "median_overhead": overhead}


def main(argv=None):
    exit_on_sigterm()  # the finally blocks stop every process we started
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20, help="rounds (each variant once per round)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    results = {
        "benchmark": "exec_isolation",
        "what": "wall ms of the exec CLI (the zipapp, python -I -S) per forced layer (TOOLSCRIPT_EXEC_LAYER) vs a bare interpreter, same rotation",
        "python": platform.python_version(),
        "kernel": f"{platform.system()} {platform.release()}",
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus",
        "uid": os.getuid() if hasattr(os, "getuid") else None,
    }
    import tempfile

    import build_pyz

    scratch = tempfile.mkdtemp(prefix="toolscript-bench-pyz-")
    PYZ.append(build_pyz.build(os.path.join(scratch, "toolscript.pyz")))
    gateway = GatewayProcess({})
    try:
        progress("starting the gateway (built-in tools only)")
        _, gw_started = gateway.start()
        gateway.wait_ready([], gw_started)
        results.update(measure(gateway, args.repeats))
    finally:
        gateway.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    results["total_s"] = round(time.perf_counter() - started, 1)
    json.dump(results, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
