"""``toolscript list-servers``: the gateway's servers and their state."""

import argparse

from toolscript.cli.output import format_table, print_json
from toolscript.gateway.servers import describe_count

DESCRIPTION = """\
List the servers of the running gateway: the built-in tools (server "builtin")
and every configured MCP server, with state (connecting / ready / failed and
why / needs-auth: run toolscript auth NAME / untrusted: the project's
.toolscript.json awaits your approval, run toolscript trust) and tool count,
with the tools hidden and why ("12 tools (1 hidden: needs tasks)"), and
where each is configured.  Servers still connecting are waited for briefly.

Servers taken from Claude Code's configuration ("~/.claude.json (user
scope)", ".mcp.json (project scope, ...)") are idle until a script calls
them: Claude Code runs its own copy, so toolscript starts one only for calls
and stops it when idle; their tools are known from a cached listing.

examples:
  toolscript list-servers
  toolscript list-servers --json
"""


def add_arguments(parser: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from toolscript.gateway.client import connect

    answer = connect(args.gateway_url, args.session).get("/servers")
    if args.json:
        print_json(answer)
        return 0
    rows = []
    for s in answer["servers"]:
        detail = s.get("error") or (s.get("serverInfo") or {}).get("name", "")
        if s.get("lazy") and s.get("state") == "idle":
            detail = (detail + "; " if detail else "") + "starts when a script calls it"
        hidden = s.get("hidden") if isinstance(s.get("hidden"), dict) else {}
        rows.append((s["name"], s["state"], s["transport"], describe_count(s["tools"], hidden), s.get("source") or "-", detail))
    for line in format_table(rows):
        print(line)
    if len(answer["servers"]) == 1:
        print('no MCP servers configured: add them to ./.toolscript.json as {"mcpServers": {...}} (Claude Code\'s format), '
              "or to Claude Code (claude mcp add): toolscript serves Claude Code's servers too")
    if any(s["state"] == "untrusted" for s in answer["servers"]):
        print("untrusted servers come from a project's .toolscript.json, or a .mcp.json whose servers Claude Code has not approved: "
              "the user reviews and approves the file in a terminal with 'toolscript trust FILE'")
    if answer.get("pending"):
        print(f"still connecting: {', '.join(answer['pending'])}")
    return 0
