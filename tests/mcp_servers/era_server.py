"""A scripted stdio MCP server for protocol-era tests: it answers ``server/discover`` as argv[1] says.

``python era_server.py MODE LOG``: each method it receives is appended to LOG
(with ``:bare`` when a ``modern`` server got a request without the 2026-07-28
envelope).  MODE is how it answers ``server/discover``: ``modern`` (it speaks
2026-07-28), ``listen-ends`` (the same, offering listChanged, and every
``subscriptions/listen`` stream ends at once), ``silent`` (no answer),
``disjoint`` (-32022 naming only a version nobody speaks) or anything else
(-32022 naming only a handshake-era version).  ``initialize`` always succeeds
with 2025-11-25.
"""
import json, sys
mode, log = sys.argv[1], sys.argv[2]
MODERN = {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
          "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "era", "version": "1"}}}
def send(message):
    print(json.dumps(message), flush=True)
for line in sys.stdin:
    request = json.loads(line)
    method, rid = request.get("method"), request.get("id")
    meta = (request.get("params") or {}).get("_meta") or {}
    bare = mode == "modern" and meta.get("io.modelcontextprotocol/protocolVersion") != "2026-07-28"
    with open(log, "a") as f:
        f.write(method + (":bare" if bare else "") + "\n")
    if rid is None:
        continue
    if method == "server/discover":
        if mode == "silent":
            continue
        if mode == "modern":
            send({"jsonrpc": "2.0", "id": rid, "result": MODERN})
        elif mode == "listen-ends":  # offers listChanged, then ends each listen stream at once (below)
            send({"jsonrpc": "2.0", "id": rid, "result": dict(MODERN, capabilities={"tools": {"listChanged": True}})})
        else:
            supported = ["2099-01-01"] if mode == "disjoint" else ["2025-11-25"]
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32022, "message": "Unsupported protocol version",
                                                         "data": {"supported": supported, "requested": "2026-07-28"}}})
    elif method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                                                     "serverInfo": {"name": "era", "version": "1"}}})
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": rid, "result": {"resultType": "input_required", "inputRequests": {}}})
    else:
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": []}})
