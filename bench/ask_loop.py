#!/usr/bin/env python3
"""What ``toolscript ask`` costs on top of the model: the loop per step, and the first step's cold start.

The model is ``tests/fake_anthropic.py`` on 127.0.0.1, answering at once, so the
figures are our own overhead:

- ``loop_overhead``: in this process, ``ask.run_api`` over a script of tool turns
  (``builtin__time_now``, then a text answer), with the built-ins in-process.  One
  sample per step: from the end of one model call to the start of the next, i.e.
  reading the reply, running the tool, building the tool_result and the next
  request (the model calls themselves excluded);
- ``model_call``: the same runs' model calls (one HTTP round trip to the 0-latency fake),
  for scale;
- ``cold_first_step``: ``python -I -S toolscript.pyz ask QUESTION --json`` against the
  fake answering at once (one step: start, tools listed, one model call, print);
- ``cold_no_tools``: the same with ``--with-tools=false``;
- ``python_floor``: a bare ``python3 -c pass`` (this interpreter), and
  ``python_floor_isolated`` with ``-I -S`` as the pyz runs, in the same rotation.

    python3 bench/ask_loop.py [--rounds 20] [--steps 8]

Prints one JSON document: per variant ``{n, median_ms, p95_ms}``.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import build_pyz  # noqa: E402
from fake_anthropic import FakeAnthropic  # noqa: E402
from stats import summary  # noqa: E402
from toolscript.models import ask  # noqa: E402
from toolscript.tools.builtin import builtin_specs  # noqa: E402


def loop_samples(rounds: int, steps: int, scratch: str) -> Dict[str, List[float]]:
    """Per-step loop overhead and per-call model time, over ``rounds`` runs of ``steps`` steps."""
    overhead: List[float] = []
    model: List[float] = []
    tools = ask.LocalTools(builtin_specs(), [scratch])
    script = [{"tool": "builtin__time_now"}] * (steps - 1) + [{"text": "done"}]
    for _ in range(rounds):
        marks: List[tuple] = []  # (model call start, model call end), monotonic seconds

        def on_event(kind: str, info: Dict[str, float]) -> None:
            if kind == "model":
                end = time.monotonic()
                marks.append((end - info["ms"] / 1000, end))

        with FakeAnthropic(script, sequential=True) as api:
            env = {"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-bench"}
            result = ask.run_api("bench", tools=tools, env=env, max_steps=steps, on_event=on_event)
        assert result.stopped == "answered", result.error
        model += [(end - start) * 1000 for start, end in marks]
        overhead += [(marks[i + 1][0] - marks[i][1]) * 1000 for i in range(len(marks) - 1)]
    return {"loop_overhead": overhead, "model_call": model}


def timed(argv: List[str], env: Dict[str, str], cwd: str) -> float:
    started = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    elapsed = (time.perf_counter() - started) * 1000
    if proc.returncode != 0:
        raise SystemExit(f"{argv[-3:]} failed ({proc.returncode}): {proc.stderr.decode()[-400:]}")
    return elapsed


def cold_samples(rounds: int, scratch: str) -> Dict[str, List[float]]:
    pyz = build_pyz.build(os.path.join(scratch, "toolscript.pyz"))
    home = os.path.join(scratch, "home")
    os.makedirs(home, exist_ok=True)
    samples: Dict[str, List[float]] = {"cold_first_step": [], "cold_no_tools": [], "python_floor": [], "python_floor_isolated": []}
    with FakeAnthropic([{"text": "answer"}]) as api:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": home,
            "TOOLSCRIPT_DATA_DIR": os.path.join(scratch, "data"),
            "ANTHROPIC_BASE_URL": api.url,
            "ANTHROPIC_API_KEY": "sk-bench",
        }
        python = sys.executable
        variants = {
            "cold_first_step": [python, "-I", "-S", pyz, "ask", "what time is it?", "--json"],
            "cold_no_tools": [python, "-I", "-S", pyz, "ask", "hello", "--with-tools=false", "--json"],
            "python_floor": [python, "-c", "pass"],  # the same interpreter, so the difference is ours
            "python_floor_isolated": [python, "-I", "-S", "-c", "pass"],
        }
        for argv in variants.values():
            timed(argv, env, scratch)  # warm the page cache once
        for _ in range(rounds):
            for name, argv in variants.items():  # rotation: noise hits every variant alike
                samples[name].append(timed(argv, env, scratch))
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ask-bench-") as scratch:
        samples = loop_samples(args.rounds, args.steps, scratch)
        samples.update(cold_samples(args.rounds, scratch))
    report = {name: summary(values) for name, values in samples.items()}
    for floor in ("python_floor", "python_floor_isolated"):
        report[f"cold_first_step_over_{floor}_ms"] = round(report["cold_first_step"]["median_ms"] - report[floor]["median_ms"], 1)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
