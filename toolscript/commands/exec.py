"""``toolscript exec``: run a Python script that calls tools, in a sandbox."""

import argparse
import io
import re
import sys

from toolscript.errors import UserError
from toolscript.output import print_json

SUMMARY = "run a Python script that calls tools, sandboxed"
DESCRIPTION = """\
Run Python in a sandboxed child interpreter (fresh temp dir, empty environment,
CPU/memory/file/process limits, a wall-clock timeout, no network but the
gateway, no subprocesses or native code).  Scripts reach tools with
  from toolscript import tools
  tools.<server>.<tool>(arg=...)        # names as printed by get-types
  tools.call("server__tool", {...})     # dynamic ids
A tool error raises toolscript.ToolError.  Output streams as it is produced;
the script's exit status is exec's.

--lang ts runs TypeScript under Deno (deno on PATH), confined by Deno's own
permissions to the gateway:
  import { tools } from "toolscript";
  console.log(await tools.builtin.time_now({}));   // one object of arguments

examples:
  toolscript exec 'print(1 + 1)'
  toolscript exec 'from toolscript import tools; print(tools.builtin.time_now())'
  toolscript exec -f script.py --timeout 60
  cat script.py | toolscript exec -
  toolscript exec --json 'print("captured")'     {"exitCode", "stdout", "stderr", ...}
  toolscript exec --lang ts 'console.log(1 + 1)'
"""

# A script that never names the runtime needs no gateway.
_USES_TOOLS = re.compile(r"\btoolscript\b")


def add_arguments(parser: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
    parser.add_argument("code", nargs="?", help="the script; - reads stdin")
    parser.add_argument("-f", "--file", metavar="FILE", help="run this file instead")
    parser.add_argument("--timeout", type=float, default=30.0, help="wall-clock limit in seconds (default 30)")
    parser.add_argument("--max-output", type=int, default=1_000_000, metavar="BYTES", help="stop the script after this much output (default 1 MB)")
    parser.add_argument("--lang", choices=("python", "ts"), default="python", help="python (default), or ts: TypeScript under Deno (needs deno on PATH)")
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


def run(args: argparse.Namespace) -> int:
    code, filename = _source(args)
    if args.lang == "ts":
        return _run_typescript(args, code, filename)
    from toolscript.codemode import sandbox

    problem = sandbox.check_syntax(code, filename)
    if problem:
        raise UserError(f"syntax error: {problem} (nothing was run)", exit_code=1)
    gateway_url, names = None, None
    if _USES_TOOLS.search(code):
        from toolscript.gateway.client import connect

        client = connect(args.gateway_url, args.session)
        names = client.get("/runtime/names")
        gateway_url = client.url
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
    )
    _report(args, result, out, err)
    return result.exit_code


def _run_typescript(args: argparse.Namespace, code: str, filename: str) -> int:
    """TypeScript under Deno, whose permission flags confine it to the gateway."""
    from toolscript.codemode import deno

    gateway_url = None
    if _USES_TOOLS.search(code):
        from toolscript.gateway.client import connect

        gateway_url = connect(args.gateway_url, args.session).url
    out, err = _streams(args)
    result = deno.run(code, filename=filename, gateway_url=gateway_url, timeout=args.timeout, max_output=args.max_output, stdout=out, stderr=err)
    _report(args, result, out, err)
    return result.exit_code


def _streams(args: argparse.Namespace):
    """Where the script's output goes: captured for --json, else straight through."""
    if args.json:
        return io.BytesIO(), io.BytesIO()
    sys.stdout.flush()
    return sys.stdout.buffer, sys.stderr.buffer


def _report(args: argparse.Namespace, result, out, err) -> None:
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
