"""``toolscript list-tools SERVER``: one server's tools, through the gateway."""

import argparse
import sys

from toolscript.errors import UserError
from toolscript.output import print_json

SUMMARY = "one server's tools, via the gateway"
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
    from toolscript.gateway.client import connect

    try:
        answer = connect(args.gateway_url, args.session).get("/tools", server=args.server)
    except UserError as exc:
        payload = getattr(exc, "payload", None)
        if isinstance(payload, dict) and "servers" in payload:
            raise UserError(f"unknown server {args.server!r}; the gateway has: {', '.join(payload['servers'])}", exit_code=2) from exc
        raise
    if args.json:
        print_json(answer["tools"])
        return 0
    for tool in answer["tools"]:
        description = " ".join((tool.get("description") or "").split())
        print(f"{tool['id']}  {description[:100]}")
    if not answer["tools"]:
        print(f"{args.server} has no tools", file=sys.stderr)
    if answer.get("pending"):
        print(f"still connecting: {', '.join(answer['pending'])}", file=sys.stderr)
    return 0
