"""``toolscript tools list|info|invoke``: the tool registry from the command line.

Built-in tools (``time.now``, ``fs.read_file``, ...) work with no gateway at
all: when none is reachable they run in this process.  MCP tools
(``server__tool``) go through the gateway.
"""

import argparse
import json
import os
import sys
import time

from toolscript import log
from toolscript.cli.args import add_action, unknown_name
from toolscript.cli.output import format_table, print_json
from toolscript.errors import UserError
from toolscript.log import one_line

logger = log.get("tools")

DESCRIPTION = """\
Tools are named server__tool; built-ins may also be named without the
"builtin__" prefix.  invoke prints the ToolResult JSON
({"ok", "data", "error": {"code", "message"}, "meta"}) and exits 0 when ok, 1 otherwise;
an unknown tool is such a failed call (tool_not_found, its message naming the closest tool).

examples:
  toolscript tools list
  toolscript tools list --tool-allow time.now,fs.read_file --json
  toolscript tools info fs.read_file
  toolscript tools invoke time.now
  toolscript tools invoke fs.list_dir --args '{"path": ".", "recursive": true}'
  toolscript tools invoke everything__echo --args '{"message": "hi"}'
"""

BUILTIN_PREFIX = "builtin__"


def add_arguments(parser: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", title="actions")
    listing = add_action(
        actions, "list", common, "list the tools",
        "List tools with name, description and input schema (--json).\n\n"
        "examples:\n  toolscript tools list\n  toolscript tools list --tool-allow time.now,shell.pwd --json\n",
        run_list,
    )
    listing.add_argument("--tool-allow", metavar="A,B", help="only these tools (ids, built-in names, * globs)")
    info = add_action(
        actions, "info", common, "one tool's schema and runtime details",
        "Print one tool's description, input schema and runtime details as JSON.\n\n"
        "examples:\n  toolscript tools info fs.read_file\n  toolscript tools info github__search_issues\n",
        run_info,
    )
    info.add_argument("name", help="tool id (server__tool) or built-in name")
    invoke = add_action(
        actions, "invoke", common, "call a tool and print its ToolResult",
        "Call a tool. Arguments are a JSON object (--args '{...}', or --args - to read stdin).\n"
        "Exit 0 when the result is ok, 1 otherwise.\n\n"
        "examples:\n  toolscript tools invoke time.now\n"
        "  toolscript tools invoke fs.read_file --args '{\"path\": \"README.md\", \"maxBytes\": 10000}'\n"
        "  echo '{\"message\": \"hi\"}' | toolscript tools invoke everything__echo --args -\n"
        "  toolscript tools invoke fs.read_file --tool-allow 'fs.*' --args '{\"path\": \"README.md\"}'\n",
        run_invoke,
    )
    invoke.add_argument("name", help="tool id (server__tool) or built-in name")
    invoke.add_argument("--args", default="{}", metavar="JSON", help="arguments as a JSON object (default {}); - reads stdin")
    invoke.add_argument("--tool-allow", metavar="A,B",
                        help="refuse (tool_not_found) any tool not in this list (ids, built-in names, * globs)")
    invoke.add_argument("--timeout", type=float, help="seconds to wait for the tool (default: the server's timeout)")


def _local_builtins(args):
    from toolscript.config import load as configuration
    from toolscript.gateway.catalog import builtin_tools

    config = configuration.load_config(args.config_paths)
    return config, builtin_tools(config.builtin_tools)


def _canonical(name: str) -> str:
    """Gateway id for ``name``: every id but a built-in's has ``__``, so a bare name is a built-in."""
    return name if "__" in name else BUILTIN_PREFIX + name


def _all_tools(args):
    """(tool descriptions, the gateway client) -- or the built-ins and None when no gateway answers."""
    from toolscript.gateway.client import GatewayUnavailable, connect

    try:
        client = connect(args.gateway_url, args.session, timeout=5)
        return client.get("/tools")["tools"], client
    except GatewayUnavailable:
        pass
    return _builtin_descriptions(args), None


def _builtin_descriptions(args):
    _, builtins = _local_builtins(args)
    return [dict(id=BUILTIN_PREFIX + name, server="builtin", name=name, description=spec.description, inputSchema=spec.input_schema) for name, spec in builtins.items()]


def run_list(args: argparse.Namespace) -> int:
    from toolscript.models.ask import allowed, parse_allow

    tools, client = _all_tools(args)
    patterns = parse_allow(args.tool_allow)
    tools = [t for t in tools if allowed(t["id"], patterns)]
    if args.json:
        print_json([{"name": t["id"], "description": t.get("description", ""), "inputSchema": t.get("inputSchema", {})} for t in tools])
        return 0
    rows = [(tool["id"], one_line(tool.get("description"), 100)) for tool in tools]
    for line in format_table(rows):
        print(line)
    if client is None:
        print("(no gateway reachable: showing built-in tools only; start one with 'toolscript gateway start --detach')", file=sys.stderr)
    return 0


def run_info(args: argparse.Namespace) -> int:
    tools, client = _all_tools(args)
    wanted = _canonical(args.name)
    for tool in tools:
        if tool["id"] == wanted:
            info = dict(tool)
            info["runtime"] = {"via": "gateway" if client else "in-process"}
            if tool["server"] == "builtin":
                info["runtime"]["timeoutSeconds"] = 8
            print_json(info)
            return 0
    raise _unknown_tool(args.name, tools, client)


def _unknown_tool(name: str, tools, client) -> UserError:
    """The closest known name, as a usage error (exit 2: ``info``) or a message (``invoke``); built-ins count under their bare names too."""
    known = [t["id"] for t in tools] + [t["name"] for t in tools if t["server"] == "builtin"]
    error = unknown_name("tool", name, known, "toolscript tools list")
    if client is None:
        return UserError(f"{error} (no gateway reachable: only built-ins are known)", exit_code=2)
    return error


def run_invoke(args: argparse.Namespace) -> int:
    from toolscript.models.ask import allowed, parse_allow, refusal_message
    from toolscript.gateway.client import GatewayUnavailable, connect, redact
    from toolscript.tools.contract import ERROR_TOOL_NOT_FOUND

    arguments = _parse_arguments(args.args)
    payload = {"tool": _canonical(args.name), "arguments": arguments, "source": "cli"}
    patterns = parse_allow(args.tool_allow)
    if not allowed(payload["tool"], patterns):
        # Refused before anything runs: the allow-list limits what can be called, not only what is listed.
        print_json({"ok": False, "data": None, "error": {"code": ERROR_TOOL_NOT_FOUND, "message": refusal_message(payload["tool"], patterns)},
                    "meta": {"tool": payload["tool"], "source": "cli"}})
        return 1
    if args.timeout:
        payload["timeout"] = args.timeout
    started = time.monotonic()
    via_gateway = True
    try:
        client = connect(args.gateway_url, args.session, timeout=5)
        logger.info("calling %s via the gateway at %s", payload["tool"], redact(client.url))
        result = client.post("/call", payload, timeout=(args.timeout or 600) + 5)
    except GatewayUnavailable as exc:
        logger.info("running %s in this process, as no gateway answers: %s", payload["tool"], exc)
        via_gateway = False
        result = _invoke_locally(args, arguments)  # built-ins need no gateway
    logger.info("%s %s in %.0f ms", payload["tool"], "ok" if result.get("ok") else "failed", (time.monotonic() - started) * 1000)
    if (result.get("error") or {}).get("code") == ERROR_TOOL_NOT_FOUND:
        # A failed call like any other (as /call and ask answer it), its message naming the closest tool.
        tools, known_via = _all_tools(args) if via_gateway else (_builtin_descriptions(args), None)
        result["error"] = dict(result["error"], message=str(_unknown_tool(args.name, tools, known_via)))
    print_json(result)
    return 0 if result.get("ok") else 1


def _invoke_locally(args, arguments):
    from toolscript.tools.contract import ToolCall, ToolContext, execute

    config, builtins = _local_builtins(args)
    name = args.name[len(BUILTIN_PREFIX):] if args.name.startswith(BUILTIN_PREFIX) else args.name
    if "__" in name:
        from toolscript.gateway.client import START_HINT

        raise UserError(f"{args.name!r} is an MCP tool and needs the gateway, which is not reachable; {START_HINT}")
    roots = [os.path.realpath(os.getcwd())] + [os.path.realpath(r) for r in config.workspace_roots]
    result = execute(builtins, ToolCall(name=name, args=arguments, source="cli"), ToolContext(workspace_roots=roots))
    return result.to_dict()


def _parse_arguments(text: str):
    if text == "-":
        text = sys.stdin.read()
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UserError(f"--args is not valid JSON: {exc} (example: --args '{{\"path\": \".\"}}')", exit_code=2) from exc
    if not isinstance(value, dict):
        raise UserError("--args must be a JSON object, e.g. --args '{\"path\": \".\"}'", exit_code=2)
    return value
