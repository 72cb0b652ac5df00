"""The client the MCP conformance suite's client scenarios launch (tests/e2e/test_conformance_client.py).

The suite runs ``<command> <server URL>`` with ``MCP_CONFORMANCE_SCENARIO`` set
to the scenario's name, then judges what it saw on the wire.  This script opens
a session with ``toolscript.mcp.client.connect.open_session``, exactly as the gateway
opens one for a configured ``"type": "http"`` server, and does what the
scenario expects a client to do:

- ``initialize``: connect (the handshake), list tools, close.
- ``tools_call``: connect, list tools, call ``add_numbers`` with a=5, b=3.
- ``sse-retry``: connect, list tools, call ``test_reconnection`` (the server
  ends the call's SSE stream early; the answer arrives on the resumed stream).
- ``auth/*``: the same with OAuth: a ``BearerAuth`` over an in-memory token
  store whose ``interactive`` runs ``oauth.authorize``; "the browser" GETs the
  authorization URL and takes the redirect's Location (the suite's
  authorization server approves at once).  Pre-registered credentials come in
  ``MCP_CONFORMANCE_CONTEXT``; the client ID metadata document URL is the one
  the suite expects.  Then list tools and call ``test-tool``.

It prints one JSON line per step on stdout (the suite saves it as stdout.txt)
and exits 1 with a one-line error when a step fails or a result is wrong.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))  # the repository root, for ``toolscript``

import http.client  # noqa: E402
from typing import Optional  # noqa: E402
from urllib.parse import urljoin, urlsplit  # noqa: E402

from toolscript.config.load import ServerConfig  # noqa: E402
from toolscript.mcp.client.connect import open_session  # noqa: E402
from toolscript.mcp.errors import McpError  # noqa: E402
from toolscript.mcp.auth.bearer import BearerAuth  # noqa: E402
from toolscript.mcp.auth.flow import ClientSettings, Grant, authorize  # noqa: E402

TIMEOUT = 20.0  # seconds per step; the suite kills the client after its own --timeout
REDIRECT_URI = "http://127.0.0.1:33418/callback"  # never listened on: the redirect is read, not followed
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"  # what auth/basic-cimd expects as client_id


def _emit(step: str, value: object) -> None:
    print(json.dumps({"step": step, "value": value}), flush=True)


def _texts(result: dict) -> list:
    return [block.get("text") for block in result.get("content") or [] if isinstance(block, dict) and block.get("type") == "text"]


def follow_once(url: str) -> str:
    """The browser's part: GET the authorization URL and return where it redirects (not following it)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port or 80, timeout=TIMEOUT)
    try:
        conn.request("GET", parts.path + ("?" + parts.query if parts.query else ""))
        resp = conn.getresponse()
        resp.read()
        location = resp.getheader("Location")
        if resp.status not in (301, 302, 303, 307, 308) or not location:
            raise SystemExit(f"the authorization endpoint answered HTTP {resp.status} without a redirect")
        return urljoin(url, location)
    finally:
        conn.close()


def bearer_auth(url: str) -> BearerAuth:
    """OAuth as the gateway would hold it, with an in-memory store and an authorization that needs no user."""
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    settings = ClientSettings(client_id=context.get("client_id"), client_secret=context.get("client_secret"), client_metadata_url=CLIENT_METADATA_URL)
    store = {}  # type: dict

    def interactive(www_authenticate: Optional[str]) -> Grant:
        grant = authorize(url, follow_once, REDIRECT_URI, www_authenticate=www_authenticate, client=settings, previous=store.get("grant"), timeout=TIMEOUT)
        _emit("authorized", {"scope": grant.scope, "client_id": grant.client_id, "auth_method": grant.token_endpoint_auth_method})
        return grant

    return BearerAuth("conformance", lambda: store.get("grant"), lambda grant: store.__setitem__("grant", grant), interactive)


def run(scenario: str, url: str) -> None:
    server = ServerConfig(name="conformance", type="http", source="<conformance>", url=url, timeout=TIMEOUT)
    session = open_session(server, auth=bearer_auth(url) if scenario.startswith("auth/") else None)
    try:
        _emit("connected", {"modern": bool(getattr(session, "modern", False)), "server": session.server_info})
        names = [tool["name"] for tool in session.list_tools(timeout=TIMEOUT)]
        _emit("tools", names)
        if scenario == "tools_call":
            result = session.call_tool("add_numbers", {"a": 5, "b": 3}, timeout=TIMEOUT)
            _emit("call", result)
            if result.get("isError") or _texts(result) != ["The sum of 5 and 3 is 8"]:
                raise SystemExit(f"add_numbers answered {json.dumps(result)}, expected 'The sum of 5 and 3 is 8'")
        elif scenario == "sse-retry":
            result = session.call_tool("test_reconnection", {}, timeout=TIMEOUT)
            _emit("call", result)
            if result.get("isError") or _texts(result) != ["Reconnection test completed successfully"]:
                raise SystemExit(f"test_reconnection answered {json.dumps(result)}, expected the resumed stream's answer")
        elif scenario.startswith("auth/"):
            result = session.call_tool("test-tool", {}, timeout=TIMEOUT)
            _emit("call", result)
            if result.get("isError") or _texts(result) != ["test"]:
                raise SystemExit(f"test-tool answered {json.dumps(result)}, expected 'test'")
        elif scenario != "initialize":
            raise SystemExit(f"conformance_client.py does not know scenario {scenario!r}; add it to run()")
    finally:
        session.close()


def main() -> int:
    if len(sys.argv) < 2:
        print("usage: conformance_client.py SERVER_URL  (with MCP_CONFORMANCE_SCENARIO set)", file=sys.stderr)
        return 2
    try:
        run(os.environ.get("MCP_CONFORMANCE_SCENARIO", "initialize"), sys.argv[-1])
    except McpError as exc:
        _emit("error", str(exc))
        print(f"conformance_client.py: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
