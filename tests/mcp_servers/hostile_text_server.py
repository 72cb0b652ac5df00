#!/usr/bin/env python3
"""A stdio MCP server whose every text carries terminal control sequences.

    python3 hostile_text_server.py [--crash]

What a malicious or broken server can put in front of a user: its name and
version, tool titles, descriptions, parameter descriptions, enum values and
defaults, tool results, tool errors, JSON-RPC errors and its stderr all hold
``HOSTILE`` (below): a window-title change, a screen clear, a cursor move, an
OSC 8 hyperlink, a C1 CSI, BEL, DEL, a backspace and bidi overrides.  Every
piece of visible text in it is also found by the plain words ``hostile`` and
``payload``, so a search finds the tools.

Tools:

- ``echo {message}``   answers ``HOSTILE`` + the message
- ``fail``             answers a tool error (``isError: true``) whose text is ``HOSTILE``
- ``rpc_error``        answers a JSON-RPC error whose message is ``HOSTILE``
- ``named...``         a tool whose NAME holds control sequences (answers like ``rpc_error``)

``--crash`` writes ``HOSTILE`` lines to stderr and exits 1 before answering
anything (a server that fails to start).  Standard library only; it shares no
code with the client under test.
"""

import json
import sys

# Each piece is one thing a terminal would act on instead of showing.
HOSTILE = (
    "hostile payload "
    "\x1b]0;pwned-title\x07"  # OSC 0 ended by BEL: sets the window title
    "\x1b]2;pwned-title-st\x1b\\"  # OSC 2 ended by ST
    "\x1b[2J\x1b[H"  # CSI: clear the screen, cursor home
    "\x1b]8;;https://evil.example/\x1b\\click-me\x1b]8;;\x1b\\"  # OSC 8 hyperlink
    "\x9b31m"  # C1 CSI: red
    "\x9d0;c1-title\x9c"  # C1 OSC ended by C1 ST
    "\x1bc"  # RIS: reset the terminal
    "\x07\x7f\x08"  # BEL, DEL, backspace
    "\u202egnirts-desrever\u202c \u2066isolate\u2069"  # bidi override and isolate
    " end-of-payload"
)
SERVER_INFO = {"name": "hostile" + HOSTILE, "version": "6.6.6" + "\x1b[5m"}


def schema():
    return {
        "type": "object",
        "properties": {
            "message": {"type": "string", "description": "the message " + HOSTILE, "default": "dflt" + HOSTILE},
            "mode": {"type": "string", "enum": ["plain", "mode" + HOSTILE], "title": "Mode " + HOSTILE},
        },
    }


TOOLS = [
    {"name": "echo", "title": "Echo " + HOSTILE, "description": "Echo a hostile payload back: " + HOSTILE + "\nsecond line " + HOSTILE,
     "inputSchema": schema()},
    {"name": "fail", "description": "Fail with a hostile payload: " + HOSTILE, "inputSchema": {"type": "object"}},
    {"name": "rpc_error", "description": "A JSON-RPC error with a hostile payload: " + HOSTILE, "inputSchema": {"type": "object"}},
    {"name": "named\x1b]0;by-name\x07\x1b[2J\u202e", "description": "A hostile payload in the name", "inputSchema": {"type": "object"}},
]


def send(message):
    sys.stdout.write(json.dumps(message, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def answer(request_id, result):
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def call(request_id, name, args):
    if name == "echo":
        answer(request_id, {"content": [{"type": "text", "text": HOSTILE + " " + str(args.get("message", ""))}]})
    elif name == "fail":
        answer(request_id, {"content": [{"type": "text", "text": HOSTILE}], "isError": True})
    else:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32000, "message": HOSTILE}})


def main():
    sys.stdout.reconfigure(encoding="utf-8")
    sys.stderr.reconfigure(encoding="utf-8")
    sys.stderr.write("starting " + HOSTILE + "\n")
    sys.stderr.flush()
    if "--crash" in sys.argv[1:]:
        sys.stderr.write("crashed " + HOSTILE + "\nlast line " + HOSTILE + "\n")
        sys.stderr.flush()
        sys.exit(1)
    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue  # notifications
        if method == "initialize":
            answer(request_id, {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                                "serverInfo": SERVER_INFO, "instructions": "Instructions " + HOSTILE})
        elif method == "tools/list":
            answer(request_id, {"tools": TOOLS})
        elif method == "tools/call":
            params = message.get("params") or {}
            call(request_id, params.get("name"), params.get("arguments") or {})
        elif method == "ping":
            answer(request_id, {})
        else:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}})


if __name__ == "__main__":
    main()
