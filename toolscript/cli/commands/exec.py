"""``toolscript exec``: run a Python script that calls tools, in a sandbox."""

import argparse
import io
import json
import logging
import os
import re
import sys
from typing import Any, Dict, List, Optional

from toolscript import log
from toolscript.config import keys as configkeys
from toolscript.errors import UserError
from toolscript.cli.output import print_json

logger = log.get("exec")

DESCRIPTION = """\
Run Python in a sandboxed child interpreter (fresh temp dir, empty environment,
CPU/memory/file/process limits, a wall-clock timeout, no network but the
gateway, no subprocesses or native code).  Scripts reach tools with
  from toolscript import tools
  tools.<server>.<tool>(arg=...)        # names as printed by get-types
  tools.call("server__tool", {...})     # dynamic ids
A tool error raises toolscript.ToolError.  Output streams as it is produced;
the script's exit status is exec's.

Isolation: on Linux the kernel confines the script (Landlock, seccomp and
namespaces, falling back to bubblewrap, then namespaces alone) on top of the
in-process guard; -v names the layer in force and what it does not stop, and
`toolscript doctor` does too.  --require-isolation (or "requireIsolation": true
in the config) refuses to run when only the in-process guard is available.
--workspace DIR runs the script in DIR: DIR is its working directory, so
relative paths (open("report.txt", "w")) read and write there and stay after
exec ends; $TOOLSCRIPT_WORKSPACE names it.  HOME and TMPDIR stay in the temp
dir, and nothing outside DIR and the temp dir becomes writable.

If exec itself is stopped (SIGTERM, SIGHUP, Ctrl-C) the script is killed, its
temp dir removed, and exec exits 128+N; on Linux the script also dies when exec
is killed outright (SIGKILL).  -v prints the gateway, the isolation and the
timing on stderr.

--lang ts runs TypeScript under Deno (deno on PATH), confined by Deno's own
permissions to the gateway (and the --workspace, which works the same):
  import { tools } from "toolscript";
  console.log(await tools.builtin.time_now({}));   // one object of arguments

examples:
  toolscript exec 'print(1 + 1)'
  toolscript exec 'from toolscript import tools; print(tools.builtin.time_now())'
  toolscript exec -f script.py --timeout 60
  cat script.py | toolscript exec -
  toolscript exec --json 'print("captured")'     {"exitCode", "stdout", "stderr", ...}
  toolscript exec --lang ts 'console.log(1 + 1)'
  toolscript exec --require-isolation -f script.py   refuse to run with the guard alone
  toolscript exec --workspace ./out -f report.py      report.py runs in ./out: its files land there
"""

# A script that never names the runtime needs no gateway.
_USES_TOOLS = re.compile(r"\btoolscript\b")
# The config key exec reads itself (see _config_requires_isolation).
REQUIRE_ISOLATION_KEY = "requireIsolation"


def add_arguments(parser: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
    parser.add_argument("code", nargs="?", help="the script; - reads stdin")
    parser.add_argument("-f", "--file", metavar="FILE", help="run this file instead")
    parser.add_argument("--timeout", type=float, default=30.0, help="wall-clock limit in seconds (default 30)")
    parser.add_argument("--max-output", type=int, default=1_000_000, metavar="BYTES", help="stop the script after this much output (default 1 MB)")
    parser.add_argument("--lang", choices=("python", "ts"), default="python", help="python (default), or ts: TypeScript under Deno (needs deno on PATH)")
    parser.add_argument(
        "--require-isolation", action="store_true",
        help='refuse to run (exit 2) when only the in-process guard is available, no kernel-enforced layer (config: "requireIsolation": true)',
    )
    parser.add_argument(
        "--workspace", metavar="DIR",
        help="run the script in DIR (its working directory, also in $TOOLSCRIPT_WORKSPACE), which it may read and write; default: its temp dir only",
    )
    parser.set_defaults(handler=run)


def _source(args: argparse.Namespace):
    if args.file and args.code:
        raise UserError("give the script inline or with -f, not both", exit_code=2)
    if args.file:
        try:
            with open(args.file, encoding="utf-8") as f:
                return f.read(), args.file
        except OSError as exc:
            raise UserError(f"cannot read {args.file}: {exc.strerror or exc}", exit_code=2) from exc
    if args.code == "-":
        return sys.stdin.read(), "<stdin>"
    if args.code is None:
        raise UserError("no script given: toolscript exec 'print(1)', -f FILE, or - for stdin", exit_code=2)
    return args.code, "<exec>"


def _config_requires_isolation(named: Optional[List[str]], cwd: Optional[str] = None, environ: Optional[Dict[str, str]] = None) -> bool:
    """The config's ``requireIsolation`` (later files win), read without loading the whole config.

    Importing ``toolscript.config.load`` costs ~10 ms, the whole budget of exec's
    isolation, so exec reads only this key (``toolscript.config.keys``).  A
    file that mentions it but cannot be read as a JSON object with a boolean
    there is an error (exit 2), never a silent ``false``: the user asked for
    isolation there.
    """
    required = False
    for path, value in configkeys.read_key(REQUIRE_ISOLATION_KEY, named, cwd, environ):
        if not isinstance(value, bool):
            raise UserError(f"{path}: requireIsolation: expected true or false, got {json.dumps(value)}; fix it (toolscript config validate)", exit_code=2)
        required = value
    return required


def _workspace(args: argparse.Namespace) -> Optional[str]:
    """The --workspace directory, absolute and resolved, or None."""
    if not args.workspace:
        return None
    path = os.path.realpath(os.path.expanduser(args.workspace))
    if not os.path.isdir(path):
        raise UserError(f"--workspace {args.workspace}: no such directory; create it first or name an existing one", exit_code=2)
    return path


def run(args: argparse.Namespace) -> int:
    code, filename = _source(args)
    args.require_isolation = bool(args.require_isolation) or _config_requires_isolation(args.config_paths)
    args.workspace = _workspace(args)
    from toolscript.codemode import process

    try:
        with process.terminate_on_signals():
            if args.lang == "ts":
                return _run_typescript(args, code, filename)
            return _run_python(args, code, filename)
    except process.Terminated as stop:
        name = process.signal_name(stop.signum)
        print(f"toolscript: exec stopped by {name}", file=sys.stderr)
        return 128 + stop.signum


def _connect(args: argparse.Namespace):
    from toolscript.gateway.client import connect, redact

    client = connect(args.gateway_url, args.session)
    logger.info("exec: gateway %s", redact(client.url))
    return client


def _run_python(args: argparse.Namespace, code: str, filename: str) -> int:
    from toolscript.codemode import sandbox

    problem = sandbox.check_syntax(code, filename)
    if problem:
        raise UserError(f"syntax error: {problem} (nothing was run)", exit_code=1)
    gateway_url, names = None, None
    if _USES_TOOLS.search(code):
        client = _connect(args)
        names = client.get("/runtime/names")
        gateway_url = client.url
    else:
        logger.info("exec: no gateway (the script does not name toolscript)")
    if logger.isEnabledFor(logging.INFO):
        _log_isolation(sandbox.isolation_report(gateway=gateway_url is not None))
    # Passed only when asked for: the defaults are sandbox.run's own.
    isolation: Dict[str, Any] = {}
    if args.require_isolation:
        isolation["require_isolation"] = True
    if args.workspace:
        isolation["workspace"] = args.workspace
    out, err = _streams(args)
    result = sandbox.run(
        code,
        filename=filename,
        gateway_url=gateway_url,
        names=names,
        timeout=args.timeout,
        max_output=args.max_output,
        stdout=out,
        stderr=err,
        **isolation,
    )
    _report(args, result, out, err)
    return result.exit_code


def _log_isolation(report: Dict[str, Any]) -> None:
    """-v: the layer in force and, one line each, what it does not stop."""
    logger.info("exec: isolation %s", report.get("mode") or report.get("layer"))
    for gap in report.get("gaps") or ():
        logger.info("exec: not stopped: %s", gap)


def _run_typescript(args: argparse.Namespace, code: str, filename: str) -> int:
    """TypeScript under Deno, whose permission flags confine it to the gateway."""
    from toolscript.codemode import deno, sandbox

    if args.require_isolation:
        # deno.run takes no require_isolation: the kernel layer Deno runs under is sandbox's.
        report = sandbox.isolation_report(gateway=_USES_TOOLS.search(code) is not None)
        if report.get("layer") == "guard":
            raise UserError(isolation_missing_message(report), exit_code=2)

    gateway_url = None
    if _USES_TOOLS.search(code):
        gateway_url = _connect(args).url
    else:
        logger.info("exec: no gateway (the script does not import toolscript)")
    out, err = _streams(args)
    # Passed only when asked for, as for Python: the default is deno.run's own.
    workspace: Dict[str, Any] = {"workspace": args.workspace} if args.workspace else {}
    result = deno.run(code, filename=filename, gateway_url=gateway_url, timeout=args.timeout, max_output=args.max_output,
                      stdout=out, stderr=err, **workspace)
    _report(args, result, out, err)
    return result.exit_code


def _streams(args: argparse.Namespace):
    """Where the script's output goes: captured for --json, else straight through."""
    if args.json:
        return io.BytesIO(), io.BytesIO()
    sys.stdout.flush()
    return sys.stdout.buffer, sys.stderr.buffer


def _report(args: argparse.Namespace, result, out, err) -> None:
    how = "timed out" if result.timed_out else "output cut off" if result.truncated else "exited"
    logger.info("exec: %s with status %d after %d ms (%s)", how, result.exit_code, result.duration_ms, result.mode)
    if args.json:
        print_json(
            {
                "exitCode": result.exit_code,
                "stdout": out.getvalue().decode("utf-8", "replace"),
                "stderr": err.getvalue().decode("utf-8", "replace"),
                "mode": result.mode,
                "timedOut": result.timed_out,
                "truncated": result.truncated,
                "durationMs": result.duration_ms,
            }
        )


def isolation_missing_message(report: Dict[str, Any]) -> str:
    """The one line exec gives when isolation is required and only the guard is available."""
    from toolscript.codemode import sandbox

    return (
        "exec refuses to run: isolation is required but only the in-process guard is available here (no Landlock, bubblewrap or namespaces); "
        f'{sandbox.isolation_fix()}, or drop --require-isolation / "requireIsolation"'
    )
