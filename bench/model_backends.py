#!/usr/bin/env python3
"""What a model call costs before the model thinks: the API backend vs the ``claude`` CLI backend.

Everything talks to ``tests/fake_anthropic.py`` on 127.0.0.1, which answers at
once, so the figures are pure client overhead.  The variants run in rotation
(one of each per round, then again), so machine noise hits them alike:

- ``api_in_process``: ``models.complete(backend="api")`` in this process (one
  HTTP request over a fresh connection, JSON in and out);
- ``urllib_in_process``: the same POST with ``urllib.request``, a transport the
  module does not use (its own HTTP/1.1 over a raw socket is lighter and lets
  every socket wait share one overall budget);
- ``api_oneshot``: ``python -I -S -c`` that imports toolscript.models.backends and makes
  the call: what a hook process pays, import included;
- ``urllib_oneshot`` / ``httpclient_oneshot``: the same POST from a bare one-shot
  script with ``urllib.request`` / ``http.client`` and nothing else (the transport
  choice on its own; urllib.request imports http.client, and more);
- ``import_only``: ``python -I -S -c`` importing toolscript.models.backends and nothing else
  (the module defers ssl and subprocess to the call, and never imports http.client
  unless a proxy applies);
- ``import_httpclient`` / ``import_ssl``: ``python -I -S -c "import http.client"``
  (it pulls in the email parser) / ``"import ssl"``: what the raw-socket transport
  saves a hook process (``import_cost_ms``: their medians minus ``python_floor``'s);
- ``python_floor``: ``python -I -S -c pass``;
- ``claude_cli``: ``models.complete(backend="claude")``: the real ``claude -p``
  from the test peers (scratch HOME, hooks off), pointed at the same fake.

Then, against a fake whose every answer takes ``--latency`` seconds (300 ms by
default, a small model's time), the ``claude`` backend cold and warm, in
rotation in the same run:

- ``claude_cold``: ``models.complete(backend="claude")``, a new ``claude -p`` per question;
- ``claude_warm``: the same through a gateway's warm conversation (``POST /model``,
  ``toolscript.gateway.warm_model``), the way the prompt hook asks it;
- ``hook_cold`` / ``hook_warm``: the whole ``toolscript hook user-prompt-submit``
  process with the ``claude`` backend, its session's gateway without / with the
  warm model (a new prompt each time: nothing comes from the cache).

``added_ms`` is each median minus the fake's latency; ``warm / cold`` is the ratio of
the medians (the aim: at most 0.5).

    python3 bench/model_backends.py [--rounds 20] [--latency 0.3] [--no-claude]

Prints one JSON document: per variant ``{n, median_ms, p95_ms}``, ratios, and
``import_cost_ms``.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Callable, Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "bench"))

from fake_anthropic import FakeAnthropic  # noqa: E402
from stats import summary  # noqa: E402
from toolscript.models import backends as models  # noqa: E402

SYSTEM = "You suggest skills. Answer with JSON."
PROMPT = "help me write a changelog entry"
ONESHOT_API = (
    "import sys; sys.path.insert(0, {root!r}); from toolscript.models import backends as models; "
    "print(models.complete({system!r}, {prompt!r}, backend='api', timeout=10).text)"
)
ONESHOT_URLLIB = (
    "import json, os, urllib.request; "
    "req = urllib.request.Request(os.environ['ANTHROPIC_BASE_URL'] + '/v1/messages', "
    "data=json.dumps({{'model': 'claude-haiku-4-5', 'max_tokens': 400, 'system': {system!r}, "
    "'messages': [{{'role': 'user', 'content': {prompt!r}}}]}}).encode(), "
    "headers={{'x-api-key': os.environ['ANTHROPIC_API_KEY'], 'anthropic-version': '2023-06-01', "
    "'content-type': 'application/json'}}); "
    "print(json.loads(urllib.request.urlopen(req, timeout=10).read())['content'][0]['text'])"
)
ONESHOT_HTTPCLIENT = (
    "import json, os, http.client; from urllib.parse import urlsplit; "
    "u = urlsplit(os.environ['ANTHROPIC_BASE_URL']); c = http.client.HTTPConnection(u.hostname, u.port, timeout=10); "
    "c.request('POST', '/v1/messages', body=json.dumps({{'model': 'claude-haiku-4-5', 'max_tokens': 400, "
    "'system': {system!r}, 'messages': [{{'role': 'user', 'content': {prompt!r}}}]}}), "
    "headers={{'x-api-key': os.environ['ANTHROPIC_API_KEY'], 'anthropic-version': '2023-06-01', "
    "'content-type': 'application/json'}}); "
    "print(json.loads(c.getresponse().read())['content'][0]['text'])"
)
IMPORT_ONLY = "import sys; sys.path.insert(0, {root!r}); from toolscript.models import backends"


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def run_python(code: str, env: Dict[str, str]) -> Callable[[], object]:
    def go() -> object:
        proc = subprocess.run([sys.executable, "-I", "-S", "-c", code], env=env, capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            raise RuntimeError(f"one-shot failed: {proc.stderr.strip()[-500:]}")
        return proc.stdout

    return go


def urllib_call(env: Dict[str, str]) -> Callable[[], object]:
    import urllib.request

    body = json.dumps(
        {"model": "claude-haiku-4-5", "max_tokens": 400, "system": SYSTEM, "messages": [{"role": "user", "content": PROMPT}]}
    ).encode()
    headers = {"x-api-key": env["ANTHROPIC_API_KEY"], "anthropic-version": "2023-06-01", "content-type": "application/json"}

    def go() -> object:
        request = urllib.request.Request(env["ANTHROPIC_BASE_URL"] + "/v1/messages", data=body, headers=headers)
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    return go


def claude_setup(scratch: str) -> Dict[str, str]:
    """A scratch HOME and a PATH whose ``claude`` is the test peers' real binary."""
    import peers

    home, bin_dir = os.path.join(scratch, "home"), os.path.join(scratch, "bin")
    os.makedirs(home)
    os.makedirs(bin_dir)
    os.symlink(peers.claude_binary(), os.path.join(bin_dir, "claude"))
    return {"HOME": home, "PATH": os.pathsep.join([bin_dir, "/usr/bin", "/bin"])}


def cold_and_warm(rounds: int, latency: float) -> Dict[str, object]:
    """The claude backend per question, cold (a new claude -p) and warm (a gateway's conversation), same run."""
    from toolscript.claude_code import suggest
    from toolscript.config.load import Config
    from toolscript.gateway import state
    from toolscript.gateway.http_api import serve
    from toolscript.gateway.service import Gateway
    from toolscript.gateway.warm_model import WarmModels
    from toolscript.models import claude_cli

    answer = {"text": json.dumps({"skills": [], "toolQueries": []}), "delay": latency}
    with FakeAnthropic([answer]) as api, tempfile.TemporaryDirectory() as scratch:
        cli_env = dict(claude_setup(scratch), ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="bench-key")
        work = os.path.join(scratch, "work")
        os.makedirs(work)
        warm_models = WarmModels(lambda system, model: claude_cli.Conversation(system, model, cli_env, cwd=work),
                                 prewarm=(suggest.SYSTEM_PROMPT, None))
        gateway = Gateway(Config(servers={}, files=[], warnings=[]), workspace=work)
        server, _ = serve(gateway, models=warm_models)
        gateway.start()
        warm_models.begin()
        try:
            message = suggest.user_message(PROMPT, [])
            hook_env = dict(cli_env, TOOLSCRIPT_STATE_DIR=os.path.join(scratch, "state"), TOOLSCRIPT_SUGGEST_BACKEND="claude",
                            PYTHONPATH=ROOT)
            config = os.path.join(scratch, "config.json")
            with open(config, "w", encoding="utf-8") as fh:
                json.dump({"suggestions": {"minInterval": 0}}, fh)  # every prompt may ask the model
            hook_env["TOOLSCRIPT_CONFIG"] = config
            for session, key in (("s-cold", None), ("s-warm", warm_models.key)):
                info = state.new_state(server.url, os.getpid(), session, None, work)
                if key:
                    info["modelKey"] = key
                state.write_state(session, info, hook_env)
            counter = iter(range(10 ** 9))
            hook_log = os.path.join(scratch, "state", "hooks.log")
            fell_back: Dict[str, int] = {}

            def hook(session: str) -> Callable[[], object]:
                def go() -> object:
                    before = os.path.getsize(hook_log) if os.path.exists(hook_log) else 0
                    event = {"session_id": session, "cwd": work, "hook_event_name": "UserPromptSubmit",
                             "prompt": f"write a changelog entry for release {next(counter)}"}
                    # In the project (a cold claude -p runs where the hook runs), toolscript from this checkout.
                    proc = subprocess.run([sys.executable, "-S", "-m", "toolscript", "hook", "user-prompt-submit"],
                                          input=json.dumps(event), env=hook_env, cwd=work, capture_output=True,
                                          text=True, timeout=60)
                    if proc.returncode != 0:
                        raise RuntimeError(f"hook failed: {proc.stderr[-500:]}")
                    with open(hook_log, "rb") as fh:
                        fh.seek(before)
                        if b"local answered" in fh.read():  # the model missed the hook's budget
                            fell_back[session] = fell_back.get(session, 0) + 1
                    return proc.stdout

                return go

            variants: Dict[str, Callable[[], object]] = {
                "claude_cold": lambda: models.complete(suggest.SYSTEM_PROMPT, message, backend="claude", timeout=60,
                                                       env=cli_env),
                "claude_warm": lambda: models.complete(suggest.SYSTEM_PROMPT, message, backend="claude", timeout=60,
                                                       env=cli_env, gateway=(server.url, warm_models.key)),
                "hook_cold": hook("s-cold"),
                "hook_warm": hook("s-warm"),
            }
            for fn in variants.values():  # warm-up: page cache, the conversation's first question
                fn()
            fell_back.clear()
            samples: Dict[str, List[float]] = {name: [] for name in variants}
            progress(f"{rounds} rounds of {', '.join(variants)} at {latency:g} s model latency")
            for _ in range(rounds):
                for name, fn in variants.items():
                    samples[name].append(timed(fn))
        finally:
            server.shutdown_all()
            gateway.stop()
    figures = {name: summary(values) for name, values in samples.items()}
    added = {name: round(figure["median_ms"] - latency * 1000, 1) for name, figure in figures.items()}
    return {
        "latency_ms": round(latency * 1000),
        "figures": figures,
        "added_ms": added,
        "warm / cold": round(figures["claude_warm"]["median_ms"] / figures["claude_cold"]["median_ms"], 2),
        "hook_warm / hook_cold": round(figures["hook_warm"]["median_ms"] / figures["hook_cold"]["median_ms"], 2),
        # Hook runs whose model answer missed the budget (1.5 s), so the local ranker answered.
        "hook_fallbacks_to_local": {"hook_cold": fell_back.get("s-cold", 0), "hook_warm": fell_back.get("s-warm", 0)},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--no-claude", action="store_true", help="skip the claude CLI variants")
    parser.add_argument("--latency", type=float, default=0.3, help="seconds the fake takes per answer in the cold/warm part")
    args = parser.parse_args()

    with FakeAnthropic(["{\"skills\": [], \"toolQueries\": []}"]) as api, tempfile.TemporaryDirectory() as scratch:
        env = {"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "bench-key", "PATH": os.environ.get("PATH", "")}
        fmt = {"root": ROOT, "system": SYSTEM, "prompt": PROMPT}
        variants: Dict[str, Callable[[], object]] = {
            "api_in_process": lambda: models.complete(SYSTEM, PROMPT, backend="api", timeout=10, env=env),
            "urllib_in_process": urllib_call(env),
            "api_oneshot": run_python(ONESHOT_API.format(**fmt), env),
            "urllib_oneshot": run_python(ONESHOT_URLLIB.format(**fmt), env),
            "httpclient_oneshot": run_python(ONESHOT_HTTPCLIENT.format(**fmt), env),
            "import_only": run_python(IMPORT_ONLY.format(**fmt), env),
            "import_httpclient": run_python("import http.client", env),
            "import_ssl": run_python("import ssl", env),
            "python_floor": run_python("pass", env),
        }
        claude_version = None
        if not args.no_claude:
            try:
                cli_env = dict(claude_setup(scratch), ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="bench-key")
            except Exception as exc:  # peers not installed: report without it
                progress(f"no claude CLI: {exc}")
            else:
                claude_version = subprocess.run(
                    ["claude", "--version"], env=cli_env, capture_output=True, text=True, timeout=60,
                    cwd=scratch, executable=os.path.join(scratch, "bin", "claude"),
                ).stdout.strip()
                variants["claude_cli"] = lambda: models.complete(SYSTEM, PROMPT, backend="claude", timeout=60, env=cli_env)

        for fn in variants.values():  # warm-up: page cache, the CLI's first start
            fn()
        samples: Dict[str, List[float]] = {name: [] for name in variants}
        progress(f"{args.rounds} rounds of {', '.join(variants)}")
        for _ in range(args.rounds):
            for name, fn in variants.items():
                samples[name].append(timed(fn))

    figures = {name: summary(values) for name, values in samples.items()}

    def ratio(a: str, b: str) -> object:
        if a not in figures or b not in figures or not figures[b]["median_ms"]:
            return None
        return round(figures[a]["median_ms"] / figures[b]["median_ms"], 2)

    def over_floor(name: str) -> object:
        if name not in figures or "python_floor" not in figures:
            return None
        return round(figures[name]["median_ms"] - figures["python_floor"]["median_ms"], 1)

    warm_part = None if args.no_claude or claude_version is None else cold_and_warm(args.rounds, args.latency)
    print(
        json.dumps(
            {
                "python": sys.version.split()[0],
                "claude_version": claude_version,
                "rounds": args.rounds,
                "figures": figures,
                "claude_cold_vs_warm": warm_part,
                "ratios": {
                    "claude_cli / api_in_process": ratio("claude_cli", "api_in_process"),
                    "claude_cli / api_oneshot": ratio("claude_cli", "api_oneshot"),
                    "api_oneshot / python_floor": ratio("api_oneshot", "python_floor"),
                    "httpclient_oneshot / urllib_oneshot": ratio("httpclient_oneshot", "urllib_oneshot"),
                    "api_in_process / urllib_in_process": ratio("api_in_process", "urllib_in_process"),
                },
                # Median ms a fresh process pays to import these, beyond a bare interpreter.
                "import_cost_ms": {
                    "http.client": over_floor("import_httpclient"),
                    "ssl": over_floor("import_ssl"),
                    "toolscript.models.backends": over_floor("import_only"),
                },
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
