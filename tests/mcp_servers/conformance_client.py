"""The client the MCP conformance suite's client scenarios launch (tests/test_conformance_client.py).

The suite runs ``<command> <server URL>`` with ``MCP_CONFORMANCE_SCENARIO`` set
to the scenario's name, then judges what it saw on the wire.  This script opens
a session with ``toolscript.mcp.connect.open_session``, exactly as the gateway
opens one for a configured ``"type": "http"`` server, and does what the
scenario expects a client to do:

- ``initialize``: connect (the handshake), list tools, close.
- ``tools_call``: connect, list tools, call ``add_numbers`` with a=5, b=3.
- ``sse-retry``: connect, list tools, call ``test_reconnection`` (the server
  ends the call's SSE stream early; the answer arrives on the resumed stream).

It prints one JSON line per step on stdout (the suite saves it as stdout.txt)
and exits 1 with a one-line error when a step fails or a result is wrong.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))  # the repository root, for ``toolscript``

from toolscript.config import ServerConfig  # noqa: E402
from toolscript.mcp.connect import open_session  # noqa: E402

TIMEOUT = 20.0  # seconds per step; the suite kills the client after its own --timeout


def _emit(step: str, value: object) -> None:
    print(json.dumps({"step": step, "value": value}), flush=True)


def _texts(result: dict) -> list:
    return [block.get("text") for block in result.get("content") or [] if isinstance(block, dict) and block.get("type") == "text"]


def run(scenario: str, url: str) -> None:
    server = ServerConfig(name="conformance", type="http", source="<conformance>", url=url, timeout=TIMEOUT)
    session = open_session(server)
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
        elif scenario != "initialize":
            raise SystemExit(f"conformance_client.py does not know scenario {scenario!r}; add it to run()")
    finally:
        session.close()


def main() -> int:
    if len(sys.argv) < 2:
        print("usage: conformance_client.py SERVER_URL  (with MCP_CONFORMANCE_SCENARIO set)", file=sys.stderr)
        return 2
    run(os.environ.get("MCP_CONFORMANCE_SCENARIO", "initialize"), sys.argv[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
