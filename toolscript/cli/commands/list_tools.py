"""``toolscript list-tools SERVER``: one server's tools, through the gateway."""

import argparse
import sys

from toolscript.cli.args import unknown_name
from toolscript.cli.output import format_table, print_json
from toolscript.log import one_line

DESCRIPTION = """\
List one server's tools with their gateway ids (server__tool) and descriptions.

examples:
  toolscript list-tools builtin
  toolscript list-tools github --json
"""


def add_arguments(parser: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
    parser.add_argument("server", help="server name, as in list-servers")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from toolscript.gateway.client import GatewayHttpError, connect

    try:
        answer = connect(args.gateway_url, args.session).get("/tools", server=args.server)
    except GatewayHttpError as exc:
        # 404 {"error": "unknown server ...", "servers": [...]}: every name the gateway has.
        if exc.status == 404 and isinstance(exc.payload, dict) and isinstance(exc.payload.get("servers"), list):
            raise unknown_name("server", args.server, exc.payload["servers"], "toolscript list-servers") from exc
        raise
    if args.json:
        print_json(answer["tools"])
        return 0
    rows = [(tool["id"], one_line(tool.get("description"), 100)) for tool in answer["tools"]]
    for line in format_table(rows):
        print(line)
    if not answer["tools"]:
        print(f"{args.server} has no tools", file=sys.stderr)
    if answer.get("pending"):
        print(f"still connecting: {', '.join(answer['pending'])}", file=sys.stderr)
    return 0
