"""``toolscript ui``: a link to the session gateway's web page (memories, servers, tools, calls)."""

import argparse
import sys
from typing import Any, Dict
from urllib.parse import urlsplit

from toolscript import log
from toolscript.cli.output import echo, print_json

logger = log.get("ui")

DESCRIPTION = """\
Print a link to this session's gateway page: memories as a timeline per
project (search, full text, where each came from, forget), the servers with
their state and where each is configured, the tool catalog with search and
each tool's stub, and the gateway's recent tool calls.

The link works once, within 10 minutes: opening it signs that browser in to
this gateway's page (a cookie only the page's own requests carry) and takes
the one-time code out of the address bar.  The gateway's token never reaches
the browser.  Run the command again for another browser or a fresh link.
The gateway is the one the other commands use (--session, --gateway-url,
TOOLSCRIPT_GATEWAY_URL); with none running, exit 1 and say how to start one.

examples:
  toolscript ui                     print the link
  toolscript ui --open              open it in the default browser
  toolscript ui --json              {"url": ..., "expiresInSeconds": 600}
  toolscript ui --session s2        the page of another session's gateway
"""


def add_arguments(parser: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
    parser.add_argument("--open", action="store_true", help="open the link in the default web browser")
    parser.set_defaults(handler=run)


def page_link(gateway_url: str, path: str) -> str:
    """The page's address on the gateway: its scheme, host and port, and ``path`` (never the token)."""
    parts = urlsplit(gateway_url)
    return f"{parts.scheme}://{parts.netloc}{path}"


def run(args: argparse.Namespace) -> int:
    from toolscript.errors import UserError
    from toolscript.gateway.client import GatewayHttpError, connect, redact

    client = connect(args.gateway_url, args.session, timeout=10)
    try:
        answer = client.post("/ui/code", {})
    except GatewayHttpError as exc:
        if exc.status == 404:
            raise UserError(f"the gateway at {redact(client.url)} has no web page (it is older than this toolscript); "
                            "restart it: 'toolscript gateway stop' then 'toolscript gateway start --detach'") from exc
        raise
    if not isinstance(answer, dict) or not isinstance(answer.get("path"), str):
        raise UserError(f"the gateway at {redact(client.url)} gave no link; check 'toolscript gateway status'")
    url = page_link(client.url, answer["path"])
    report: Dict[str, Any] = {"url": url, "expiresInSeconds": answer.get("expiresInSeconds")}
    if args.open:
        import webbrowser

        report["opened"] = bool(webbrowser.open(url))
    if args.json:
        print_json(report)
        return 0
    echo(url)
    # The hint goes to stderr: stdout is the link alone, for scripts.
    if args.open and not report["opened"]:
        echo("no web browser could be started here: open the link above yourself", file=sys.stderr)
    elif not args.open:
        echo("Open it within 10 minutes; it works once (run 'toolscript ui' again for another).", file=sys.stderr)
    logger.info("page link made for the gateway at %s", redact(client.url))
    return 0
