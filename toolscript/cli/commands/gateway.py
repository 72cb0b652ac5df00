"""``toolscript gateway start|status|stop``: run and manage the per-session gateway."""

import argparse
import os
import shlex
import sys

from toolscript.cli.args import add_action
from toolscript.errors import UserError
from toolscript.cli.output import echo, format_table, print_json

DESCRIPTION = """\
The gateway serves the built-in tools and every configured MCP server behind
one loopback URL that carries a fresh random token:
TOOLSCRIPT_GATEWAY_URL=http://127.0.0.1:PORT/t/TOKEN.  It offers a JSON API for
toolscript's own commands and a standard MCP endpoint at $TOOLSCRIPT_GATEWAY_URL/mcp.

examples:
  toolscript gateway start                       run in the foreground (Ctrl-C stops it)
  eval "$(toolscript gateway start --detach)"    run in the background, export its URL
  toolscript gateway status                      is it up? which servers are ready?
  toolscript gateway stop                        stop the gateway of this session
  toolscript gateway start --detach --session S  one gateway per Claude Code session
"""


def add_arguments(parser: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", title="actions")
    start = add_action(
        actions, "start", common, "start a gateway",
        "Start a gateway on 127.0.0.1 and a random port with a fresh token.\n"
        "It prints TOOLSCRIPT_GATEWAY_URL=... as soon as the port is open; servers connect in the background.\n"
        "Config changes apply live: the servers whose entry changed reconnect, the others are left alone.\n\n"
        "examples:\n"
        "  toolscript gateway start\n"
        "  toolscript gateway start --port 8765\n"
        '  eval "$(toolscript gateway start --detach)" && toolscript list-servers\n'
        "  toolscript gateway start --detach --session my-session --json\n",
        run_start,
    )
    start.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")
    start.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    start.add_argument("--allow-remote", action="store_true", help="required to bind a non-loopback address")
    start.add_argument("--detach", action="store_true", help="run in the background; return once it listens")
    start.add_argument("--workspace", metavar="DIR", help="the directory file built-ins may read (default: the current one)")
    start.add_argument("--exit-with", type=int, metavar="PID", help="stop when this process exits (the hook passes Claude Code's pid)")
    # Internal: the descriptor of the session's start lock a detached gateway's parent holds (see gateway.daemon).
    start.add_argument("--lock-fd", type=int, help=argparse.SUPPRESS)
    add_action(
        actions, "status", common, "health of the gateway and its servers",
        "Is the gateway reachable, is the token valid, and what state is each server in?\n"
        "Also: a config file that changed but cannot be used (the last good configuration\n"
        "stays in use), and the keys whose change waits for a restart.\n"
        "Exit 1 when it is not running, a server failed or a config file cannot be used,\n"
        "with the next step to take.\n\n"
        "examples:\n  toolscript gateway status\n  toolscript gateway status --json\n",
        run_status,
    )
    add_action(
        actions, "stop", common, "stop the gateway",
        "Stop the gateway named by --gateway-url, --session, $TOOLSCRIPT_GATEWAY_URL or the\n"
        "session's state file, in that order -- only after checking the process really is that\n"
        "gateway.  A gateway you did not name is never stopped.\n\n"
        "examples:\n  toolscript gateway stop\n  toolscript gateway stop --session my-session\n",
        run_stop,
    )


# -- start ---------------------------------------------------------------------


def _session(args: argparse.Namespace):
    """The session named by --session or CLAUDE_CODE_SESSION_ID, as valid text (argv may hold undecodable bytes)."""
    from toolscript.gateway.state import text_session

    session = args.session or os.environ.get("CLAUDE_CODE_SESSION_ID")
    return text_session(session) if session else None


def _check_host(args: argparse.Namespace) -> None:
    if args.host not in ("127.0.0.1", "localhost", "::1") and not args.allow_remote:
        raise UserError(
            f"refusing to listen on {args.host}: anyone who can reach it could use your tools; "
            "add --allow-remote if you really mean it",
            exit_code=2,
        )
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"toolscript: warning: listening on {args.host}, reachable from other machines; the token is the only protection", file=sys.stderr)


def run_start(args: argparse.Namespace) -> int:
    from toolscript.config import load as configuration
    from toolscript.gateway import daemon, launch, reload

    _check_host(args)
    session = _session(args)
    where = {"workspace": args.workspace or os.getcwd(), "host": args.host, "port": args.port, "exit_with": args.exit_with}
    if args.detach:
        info, already = launch.start_or_reuse(session, config_paths=args.config_paths, allow_remote=args.allow_remote, **where)
        _announce(args, info, already=already)
        return 0
    # Check, bind and write the state file under the session's lock, so racing starts leave one gateway.
    with daemon.StartLock(session, args.lock_fd) as lock:
        # A detached gateway's parent checked under the lock it handed down.
        running = None if lock.handed_down else launch.live_gateway(session)
        if running is not None:
            _announce(args, running, already=True)
            return 0
        # The watcher first: it notes the files as they are before they are read, so an edit in between is seen.
        watcher = reload.ConfigWatcher(args.config_paths, os.getcwd())
        config = configuration.load_config(args.config_paths)
        for warning in config.warnings:
            echo(f"toolscript: warning: {warning}", file=sys.stderr)
        from toolscript.claude_code.suggest import gateway_warm_model

        # The prompt hook's model, kept warm for the claude backend (for a Claude Code session: started now).
        models = gateway_warm_model(os.environ, os.path.abspath(where["workspace"]), for_session=bool(args.exit_with))
        return daemon.serve(config, session, release_lock=lock.release, models=models, watcher=watcher,
                            on_listening=lambda info, gateway: _listening(args, info, gateway), **where)


def _listening(args: argparse.Namespace, info, gateway) -> None:
    """Tell the user of a foreground gateway where it listens (and, without --json, how to use it)."""
    _announce(args, info)
    if not args.json:
        _print_usage_hint(info["url"], gateway)


def _announce(args, info, already: bool = False) -> None:
    if args.json:
        print_json({"url": info["url"], "pid": info["pid"], "session": info["session"], "log": info.get("log"), "alreadyRunning": already})
    else:
        # A shell line: eval "$(toolscript gateway start --detach)" exports it.
        print(f"export TOOLSCRIPT_GATEWAY_URL={shlex.quote(info['url'])}")
        if already:
            print(f"toolscript: the gateway of session {info['session']!r} is already running (pid {info['pid']})", file=sys.stderr)
    sys.stdout.flush()


def _print_usage_hint(url: str, gateway) -> None:
    """How to use the gateway just started in the foreground (on stderr)."""
    me = sys.argv[0]
    shortest = min(os.path.relpath(me), os.path.abspath(me), key=len)
    command = f"python3 {shortest}" if me.endswith(".pyz") else "toolscript"
    servers = len(gateway.upstreams)
    print(
        f"toolscript: gateway listening with {len(gateway.builtins)} built-in tools"
        + (f" and {servers} server(s) connecting in the background" if servers else " and no MCP servers configured")
        + "\n  try it from another shell:\n"
        f"    export TOOLSCRIPT_GATEWAY_URL={url}\n"
        f"    {command} tools invoke builtin__time.now\n"
        f"    {command} tools invoke builtin__fs.list_dir --args '{{\"path\": \".\"}}'\n"
        f"    {command} list-servers\n"
        f"  MCP clients can connect to {url}/mcp\n"
        "  stop it with Ctrl-C",
        file=sys.stderr,
    )
    sys.stderr.flush()


# -- status and stop -------------------------------------------------------------


def run_status(args: argparse.Namespace) -> int:
    from toolscript.gateway.client import GatewayClient, GatewayUnavailable, find_url, redact

    start = "toolscript gateway start --detach" + (f" --session {shlex.quote(_session(args) or '')}" if args.session else "")
    url = find_url(args.gateway_url, args.session)
    if not url:
        return _report(args, {"running": False, "error": "no gateway is running for this session", "next": start})
    client = GatewayClient(url, timeout=5, hint="it has stopped, or the URL is outdated")
    try:
        health = client.get("/health")
        servers = client.get("/servers")["servers"]
    except GatewayUnavailable as exc:
        return _report(args, {"running": False, "url": redact(url), "error": str(exc), "next": start})
    failed = [s for s in servers if s["state"] == "failed"]
    signed_out = [s for s in servers if s["state"] == "needs-auth"]
    report = {"running": True, "url": redact(url), "health": health, "servers": servers}
    if health.get("configProblem"):
        report["next"] = "fix the file (toolscript config validate lists every problem); the gateway reads it again once it is saved"
    elif signed_out:
        report["next"] = f"toolscript auth {signed_out[0]['name']} (the gateway reconnects by itself once signed in)"
    elif failed:
        report["next"] = f"toolscript servers check {failed[0]['name']}, or fix its config: the gateway retries it"
    elif any(s["state"] == "untrusted" for s in servers):
        report["next"] = "toolscript trust (in a terminal: review and approve the project's .toolscript.json); the gateway starts its servers then"
    return _report(args, report)


def _report(args, report) -> int:
    from toolscript.gateway.servers import describe_count

    ok = report["running"] and all(s["state"] not in ("failed", "needs-auth") for s in report.get("servers", []))
    ok = ok and not report.get("health", {}).get("configProblem")
    if args.json:
        print_json(report)
        return 0 if ok else 1
    if not report["running"]:
        echo(f"gateway: not running: {report['error']}")
        print(f"next: {report['next']}")
        return 1
    health = report["health"]
    print(f"gateway: running at {report['url']} (pid {health['pid']}, up {health['uptimeSeconds']:g}s, session {health['session'] or 'default'})")
    rows = [
        (s["name"], s["state"], s["transport"], describe_count(s["tools"], s.get("hidden") or {}), s.get("error", ""))
        for s in report["servers"]
    ]
    for line in format_table(rows):
        print("  " + line)
    if health.get("configProblem"):
        echo(f"config: {health['configProblem']}; the last good configuration stays in use")
    if health.get("restartToApply"):
        print(f"restart to apply: {', '.join(health['restartToApply'])} (the other changes are applied)")
    if report.get("next"):
        print(f"next: {report['next']}")
    return 0 if ok else 1


def run_stop(args: argparse.Namespace) -> int:
    from toolscript.gateway import launch
    from toolscript.gateway.client import find_url

    # Only a gateway the user named: --gateway-url, else --session's, else the
    # environment's (TOOLSCRIPT_GATEWAY_URL, CLAUDE_CODE_SESSION_ID, default).
    pid = launch.stop(_session(args), find_url(args.gateway_url, args.session))
    if pid is None:
        print("gateway: not running; nothing to stop")
        return 0
    print(f"gateway: stopped (pid {pid})")
    return 0
