"""``toolscript get-types``: typed stubs for the tools, to write exec scripts against."""

import argparse
import time
from typing import Any, Dict, List

from toolscript import log
from toolscript.cli.args import unknown_name
from toolscript.cli.output import echo, print_json

logger = log.get("get-types")

DESCRIPTION = """\
Print compact typed stubs: one class per server, one keyword-only function per
tool, with docstrings from the tool's description.  Call them in a script run
by 'toolscript exec' as  from toolscript import tools; tools.<server>.<tool>(...).

examples:
  toolscript get-types --filter github                   one server
  toolscript get-types --filter github__search_issues,builtin
  toolscript get-types --full                            every detail of every tool
  toolscript get-types --lang ts                         TypeScript declarations
"""


def add_arguments(parser: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
    parser.add_argument("--filter", metavar="A,B", help="servers and/or tool ids (server__tool)")
    parser.add_argument("--full", action="store_true", help="complete descriptions and schema details")
    parser.add_argument("--lang", choices=("python", "ts"), default="python", help="python (default) or ts")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from toolscript.gateway.client import connect, redact

    params = {"lang": args.lang, "filter": args.filter or ""}
    if args.full:
        params["full"] = "1"
    client = connect(args.gateway_url, args.session)
    logger.info("fetching %s stubs (filter %r) from the gateway at %s", args.lang, args.filter or "", redact(client.url))
    started = time.monotonic()
    answer = client.get("/types", **params)
    logger.info("%d tool(s) in %.0f ms", len(answer["tools"]), (time.monotonic() - started) * 1000)
    if args.filter:
        _check_filter(client, args.filter, answer)
    if args.json:
        print_json(answer)
        return 0
    echo(answer["code"].rstrip())  # the stubs quote servers' descriptions
    if answer.get("usage"):
        echo(f"\n# usage: {answer['usage']}")
    if args.filter and not answer["tools"]:
        print(f"# no tools matched --filter {args.filter!r}; see 'toolscript list-servers'")
    return 0


def _check_filter(client: Any, text: str, answer: Dict[str, Any]) -> None:
    """Exit 2 naming the first part of --filter that is neither a server nor a tool id."""
    parts = [part.strip() for part in text.split(",") if part.strip()]
    found = set(answer["tools"])
    unmatched = [part for part in parts if part not in found]
    if not unmatched:
        return
    servers: List[str] = [s["name"] for s in client.get("/servers")["servers"]]
    pending = set(answer.get("pending") or [])
    for part in unmatched:
        server = part.split("__", 1)[0]
        if part in servers or server in pending:
            continue  # a server with no tools yet, or one still connecting
        if "__" in part and server in servers:
            ids = [tool["id"] for tool in client.get("/tools", server=server)["tools"]]
            raise unknown_name("tool", part, ids, f"toolscript list-tools {server}")
        if "__" in part:
            raise unknown_name("server", server, servers, "toolscript list-servers")
        raise unknown_name("server", part, servers, "toolscript list-servers")
