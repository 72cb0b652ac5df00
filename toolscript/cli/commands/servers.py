"""``toolscript servers check``: connect to configured MCP servers directly, no gateway."""

import argparse
import sys

from toolscript.config import load as configuration
from toolscript.cli.args import add_action, unknown_name
from toolscript.errors import UserError
from toolscript.cli.output import echo, format_table, print_json
from toolscript.gateway.servers import HIDDEN_BY_CONFIG, describe_count

DESCRIPTION = """\
Connect to each configured MCP server directly (no gateway), list its tools,
and report the transport, protocol version, server name and version, tool
count and time taken -- or exactly why it failed (command not found, exit
status with the end of its stderr, HTTP status, timeout, an unset ${VAR}).
A server of a project's .toolscript.json that you have not approved with
'toolscript trust' is listed as not checked, never started.

The servers Claude Code is configured with for this project are checked too
(see 'toolscript config show'); checking one also stores its tool list, which
the gateway then uses without starting it.

examples:
  toolscript servers check                    every enabled server, in parallel
  toolscript servers check github memory      just these two
  toolscript servers check --json             one JSON object per server
  toolscript --config ./ci.json servers check

exit status: 0 when every checked server connected, 1 when any failed.
"""


def add_arguments(parser: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", title="actions")
    check = add_action(actions, "check", common, "connect to each server and report", DESCRIPTION, run_check)
    check.add_argument("names", nargs="*", metavar="NAME", help="servers to check (default: every enabled server)")


def run_check(args: argparse.Namespace) -> int:
    from toolscript.gateway.servers import probe_all  # the MCP client is only needed here

    config = configuration.load_config(args.config_paths)
    for warning in config.warnings:
        echo(f"toolscript: warning: {warning}", file=sys.stderr)
    servers = _select(config, args.names)
    untrusted = [] if args.names else [untrusted_report(name, file) for name, file in config.untrusted_servers().items()]
    if not servers and untrusted:
        if args.json:
            print_json(untrusted)
        else:
            _print_reports(untrusted)
        return 1
    if not servers:
        if args.json:
            print_json([])
        else:
            looked = ", ".join(config.files) or "no config file found"
            print(
                f"No MCP servers configured ({looked}).\n"
                'Add one to ./.toolscript.json, e.g. {"mcpServers": {"everything": {"command": "npx", '
                '"args": ["-y", "@modelcontextprotocol/server-everything"]}}}'
            )
        return 0
    # A server whose config names an unset ${VAR} is reported, never started.
    probed = iter(probe_all([s for s in servers if not s.config_error]))
    reports = [config_failure(s) if s.config_error else next(probed) for s in servers] + untrusted
    if args.json:
        print_json(reports)
    else:
        _print_reports(reports)
    return 0 if all(r["ok"] for r in reports) else 1


def _select(config: "configuration.Config", names: list) -> list:
    if not names:
        return config.enabled_servers()
    pending = config.untrusted_servers()
    for name in names:
        if name in pending:
            raise UserError(f"server {name!r} is not checked: {pending[name].reason()}", exit_code=1)
        if name not in config.servers:
            raise unknown_name("server", name, list(config.servers), "toolscript config show")
    # Naming a disabled server checks it anyway: the user asked for it by name.
    return [config.servers[n] for n in names]


def config_failure(server: "configuration.ServerConfig") -> dict:
    """The report of a server that cannot be started as configured (``config_error``)."""
    report = {"name": server.name, "ok": False, "transport": server.type, "source": server.describe_source(), "error": server.config_error, "seconds": 0.0}
    if server.imported is not None:
        report["client"] = "Claude Code"
    return report


def untrusted_report(name: str, file: "configuration.UntrustedFile") -> dict:
    """The report of a server an unapproved project file names: not started, so not checked."""
    return {"name": name, "ok": False, "untrusted": True, "transport": "-", "source": file.path,
            "error": f"not checked: {file.reason()}", "seconds": 0.0}


def tool_count(report: dict) -> str:
    """``12 tools (1 hidden: needs tasks)`` for a probe report."""
    hidden = report.get("hidden")
    if not isinstance(hidden, dict):  # reports from before probes counted hidden tools by reason
        extra = report.get("toolsTotal", report["tools"]) - report["tools"]
        hidden = {HIDDEN_BY_CONFIG: extra} if extra else {}
    return describe_count(report["tools"], hidden)


def _print_reports(reports: list) -> None:
    rows = []
    for r in reports:
        if r["ok"]:
            server = " ".join(str(v) for v in (r["server"].get("name"), r["server"].get("version")) if v) or "-"
            rows.append((r["name"], "ok", r["transport"], r["protocolVersion"], server, tool_count(r), f"{r['seconds']:.2f}s"))
        else:
            rows.append((r["name"], "untrusted" if r.get("untrusted") else "FAIL", r["transport"], "-", "-", "-", f"{r['seconds']:.2f}s"))
    for line, r in zip(format_table(rows), reports):
        print(line)
        if r.get("client"):  # a server of Claude Code's configuration: say which file and scope
            echo(f"    from {r['source']}")
        if not r["ok"]:
            tail = (r.get("stderrTail") or "").splitlines()[-10:]
            error = r["error"]
            if tail:
                # The error already quotes the last stderr line; the tail below shows it once.
                error = error.replace(f"; stderr: {tail[-1].strip()}", "")
            if r.get("fix"):
                error = error.replace(f"; {r['fix']}", "")  # shown below the server's own words, as the fix
            echo(f"    {error}")
            for line_of_tail in tail:
                echo(f"    | {line_of_tail}")
            if r.get("fix"):
                echo(f"    fix: {r['fix']}")
    pending = sum(bool(r.get("untrusted")) for r in reports)
    checked = len(reports) - pending
    failed = sum(not r["ok"] for r in reports) - pending
    print(f"{checked - failed} of {checked} servers connected" + (f"; {failed} failed" if failed else "")
          + (f"; {pending} not checked: approve the project's file with 'toolscript trust' first (see 'toolscript config validate')" if pending else ""))
