#!/usr/bin/env python3
"""A stdio MCP server that misbehaves on demand, to test the client's limits.

    python3 spew_server.py

Tools (each writes straight to stdout, streaming, so this process stays small
whatever it sends):

- ``echo {message}``                 answers "Echo: <message>"
- ``spew {bytes}``                   writes ``bytes`` of "x" with no newline, then waits forever
- ``big {size, order}``              answers with ``size`` characters of text; ``order`` "head"
                                     writes ``{"jsonrpc":"2.0","id":N,"result":...}`` (Python SDK
                                     order), "tail" writes ``{"result":...,"jsonrpc":"2.0","id":N}``
                                     (TypeScript SDK order)
- ``deep {depth}``                   answers with a result nested ``depth`` arrays deep
- ``bad_id``                         first writes a response whose id is a list, then answers
- ``log {count}``                    sends ``count`` log messages, then answers

Standard library only; it shares no code with the client under test.
"""

import json
import sys
import threading
import time

OUT = sys.stdout.buffer
LOCK = threading.Lock()
CHUNK = 1 << 20


def write(data):
    with LOCK:
        OUT.write(data)
        OUT.flush()


def send(message):
    write(json.dumps(message, separators=(",", ":")).encode() + b"\n")


def answer(request_id, result):
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def text(value):
    return {"content": [{"type": "text", "text": value}]}


def stream_x(size):
    left = size
    block = b"x" * min(CHUNK, size)
    while left > 0:
        OUT.write(block[:left])
        left -= len(block)


TOOLS = [{"name": name, "inputSchema": {"type": "object"}} for name in ("echo", "spew", "big", "deep", "bad_id", "log")]


def call(request_id, name, args):
    if name == "echo":
        answer(request_id, text("Echo: " + str(args.get("message"))))
    elif name == "spew":
        with LOCK:
            stream_x(int(args.get("bytes", 200 << 20)))
            OUT.flush()
        while True:
            time.sleep(3600)
    elif name == "big":
        size = int(args["size"])
        rid = json.dumps(request_id).encode()
        with LOCK:
            if args.get("order", "head") == "head":
                OUT.write(b'{"jsonrpc":"2.0","id":' + rid + b',"result":{"content":[{"type":"text","text":"')
                stream_x(size)
                OUT.write(b'"}]}}\n')
            else:
                OUT.write(b'{"result":{"content":[{"type":"text","text":"')
                stream_x(size)
                OUT.write(b'"}]},"jsonrpc":"2.0","id":' + rid + b"}\n")
            OUT.flush()
    elif name == "deep":
        depth = int(args.get("depth", 100000))
        rid = json.dumps(request_id).encode()
        write(b'{"jsonrpc":"2.0","id":' + rid + b',"result":' + b"[" * depth + b"]" * depth + b"}\n")
    elif name == "bad_id":
        send({"jsonrpc": "2.0", "id": [request_id], "result": {}})
        answer(request_id, text("after a bad id"))
    elif name == "log":
        for i in range(int(args.get("count", 3))):
            send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "log %d" % (i + 1)}})
        answer(request_id, text("logged"))
    else:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": "Unknown tool: %s" % name}})


def main():
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
                                "serverInfo": {"name": "spew", "version": "1"}})
        elif method == "tools/list":
            answer(request_id, {"tools": TOOLS})
        elif method == "tools/call":
            params = message.get("params") or {}
            threading.Thread(target=call, args=(request_id, params.get("name"), params.get("arguments") or {}), daemon=True).start()
        elif method == "ping":
            answer(request_id, {})
        else:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}})


if __name__ == "__main__":
    main()
