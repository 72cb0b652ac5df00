"""``from toolscript import tools, ToolError`` inside ``toolscript exec``.

This file is copied into the sandbox as ``toolscript.py`` (toolscript's own
package is not importable there): a self-contained stdlib module, Python 3.9+.

    from toolscript import tools, ToolError

    total = tools.fixture.add(a=2, b=3)            # keyword arguments only
    page = tools.call("fetch__get", {"url": u})     # any tool id, JSON argument names
    for hit in tools.search("github issues"):       # discovery
        print(hit["id"], hit["description"])
    print([t["id"] for t in tools.list("fixture")])

A call returns the tool's ``structuredContent`` when it has one, else its
single text block decoded as JSON (or the text itself when it is not JSON),
else its text blocks joined by newlines, else the content list; built-in
tools (``builtin__...``) return their data as is.  A tool error raises
``ToolError`` (``str(err)`` is ``server__tool: message``; ``err.code``,
``err.message``, ``err.data``).  Keyword arguments set to None are left out
(an optional parameter not given).  Reading ``tools.<server>`` of a
configured server that is not ready (it failed, or is still connecting)
raises ``ServerUnavailable`` (a ``ToolError`` with code
``server_unavailable`` that names why; also an ``AttributeError``, so
``hasattr`` is False).

Tools are reached through the gateway at ``$TOOLSCRIPT_GATEWAY_URL``
(``POST /call``) over kept-open HTTP/1.1 connections with TCP_NODELAY.  The
client is a few lines over ``_socket`` rather than ``http.client``, whose
imports (email, ssl) cost more than 20 ms per script; the gateway always
answers with Content-Length.  Attribute names come from the name map the
runner writes next to this file (``_toolscript_names.json``).
"""

import os
import sys

__all__ = ["tools", "ToolError", "ServerUnavailable"]

NAMES_FILE = "_toolscript_names.json"
BUILTIN_PREFIX = "builtin__"
_NO_GATEWAY = (
    "this script has no gateway: TOOLSCRIPT_GATEWAY_URL is not set "
    "(toolscript exec passes it when a gateway is running: start one with `toolscript gateway start`)"
)


class ToolError(Exception):
    """A tool call that failed: ``str(err)`` is ``server__tool: message``."""

    def __init__(self, tool, code, message, data=None):
        super().__init__(f"{tool}: {message}")
        self.tool = tool
        self.code = code
        self.message = message
        self.data = data


class ServerUnavailable(ToolError, AttributeError):
    """``tools.<server>`` of a configured server that is not ready: the message says why."""


# -- the gateway connection ------------------------------------------------------------


class _Connection:
    """One kept-open HTTP/1.1 connection to the gateway."""

    def __init__(self, host, port):
        import _socket

        family = _socket.AF_INET6 if ":" in host else _socket.AF_INET
        sock = _socket.socket(family, _socket.SOCK_STREAM)
        try:
            sock.connect((host, port))
            sock.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
        except BaseException:
            sock.close()
            raise
        self.sock = sock
        self.buffer = b""
        self.used = False

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def _read_more(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionResetError("the gateway closed the connection")
        self.buffer += chunk

    def exchange(self, request):
        """Send one request; return (status, headers, body)."""
        self.sock.sendall(request)
        while b"\r\n\r\n" not in self.buffer:
            self._read_more()
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        try:
            status = int(lines[0].split(" ", 2)[1])
        except (IndexError, ValueError):
            raise ConnectionResetError(f"not an HTTP answer: {lines[0][:80]!r}") from None
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length") or 0)
        while len(self.buffer) < length:
            self._read_more()
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        self.used = True
        return status, headers, body


class _Gateway:
    """Where the gateway is, and a small pool of connections to it (one per concurrent caller)."""

    def __init__(self, url):
        self.url = url
        self.idle = []
        if not url.startswith("http://"):
            raise ValueError(f"TOOLSCRIPT_GATEWAY_URL must be an http:// URL, not {url!r}")
        rest = url[len("http://"):]
        authority, slash, path = rest.partition("/")
        self.prefix = (slash + path).rstrip("/")
        if authority.startswith("["):
            host, _, port = authority[1:].partition("]")
            port = port.lstrip(":")
        else:
            host, _, port = authority.rpartition(":") if ":" in authority else (authority, "", "")
        self.host = host
        self.port = int(port) if port else 80
        self.host_header = authority

    def request(self, method, path, payload, tool):
        import json

        body = b"" if payload is None else json.dumps(payload).encode("utf-8")
        request = (
            f"{method} {self.prefix}{path} HTTP/1.1\r\nHost: {self.host_header}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode("latin-1") + body
        for attempt in (1, 2):
            try:
                connection = self.idle.pop()
            except IndexError:
                connection = None
            try:
                if connection is None:
                    connection = _Connection(self.host, self.port)
                status, headers, data = connection.exchange(request)
            except (ConnectionError, OSError) as exc:
                reused = connection is not None and connection.used
                if connection is not None:
                    connection.close()
                if reused and attempt == 1 and not isinstance(exc, PermissionError):
                    continue  # a kept-open connection the gateway had closed: once more on a new one
                raise ToolError(tool, "gateway_unreachable", f"cannot reach the toolscript gateway at {self.host_header}: {exc}") from None
            if headers.get("connection", "").lower() == "close":
                connection.close()
            else:
                self.idle.append(connection)
            try:
                decoded = json.loads(data.decode("utf-8")) if data else None
            except ValueError:
                decoded = None
            return status, decoded
        raise AssertionError("unreachable")  # pragma: no cover

    def get_json(self, path, tool):
        status, payload = self.request("GET", path, None, tool)
        if status != 200 or not isinstance(payload, dict):
            raise ToolError(tool, "gateway_error", _http_error(status, payload, path))
        return payload


def _http_error(status, payload, path):
    message = payload.get("error") if isinstance(payload, dict) else None
    if status == 404 and not message:
        message = f"the gateway has no {path.split('?')[0]} endpoint"
    return f"gateway answered HTTP {status}: {message or 'no details'}"


_GATEWAY = None


def _gateway(tool):
    global _GATEWAY
    if _GATEWAY is None:
        url = os.environ.get("TOOLSCRIPT_GATEWAY_URL", "").strip()
        if not url:
            raise ToolError(tool, "no_gateway", _NO_GATEWAY)
        try:
            _GATEWAY = _Gateway(url)
        except ValueError as exc:
            raise ToolError(tool, "no_gateway", str(exc)) from None
    return _GATEWAY


def _quote(text):
    safe = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~"
    return "".join(chr(b) if b in safe else "%%%02X" % b for b in str(text).encode("utf-8"))


# -- calls and results -------------------------------------------------------------------


def _result_value(tool, data):
    """What a call returns (see the module docstring)."""
    if tool.startswith(BUILTIN_PREFIX) or not isinstance(data, dict) or not isinstance(data.get("content"), list):
        return data
    if data.get("structuredContent") is not None:
        return data["structuredContent"]
    content = data["content"]
    if content and all(isinstance(c, dict) and c.get("type") == "text" and isinstance(c.get("text"), str) for c in content):
        if len(content) == 1:
            import json

            text = content[0]["text"]
            try:
                return json.loads(text)
            except ValueError:
                return text
        return "\n".join(c["text"] for c in content)
    return content


def _call(tool, arguments):
    if not isinstance(tool, str) or not tool:
        raise TypeError("the tool id must be a non-empty string such as 'server__tool'")
    if not isinstance(arguments, dict):
        raise TypeError(f"arguments for {tool} must be a dict, not {type(arguments).__name__}")
    status, payload = _gateway(tool).request("POST", "/call", {"tool": tool, "arguments": arguments, "source": "exec"}, tool)
    if status != 200 or not isinstance(payload, dict) or "ok" not in payload:
        raise ToolError(tool, "gateway_error", _http_error(status, payload, "/call"))
    if not payload.get("ok"):
        error = payload.get("error")
        if not isinstance(error, dict):
            error = {}
        raise ToolError(tool, error.get("code") or "error", error.get("message") or "the tool failed", payload.get("data"))
    return _result_value(tool, payload.get("data"))


# -- attribute access: tools.<server>.<tool>(...) -----------------------------------------

_NAMES = None
_UNAVAILABLE = None


def _load():
    """The name map the runner wrote: (servers, unavailable) (see ``GET /runtime/names``)."""
    global _NAMES, _UNAVAILABLE
    if _NAMES is None:
        import json

        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), NAMES_FILE)
        try:
            with open(path, "rb") as f:
                loaded = json.loads(f.read().decode("utf-8"))
        except FileNotFoundError:
            loaded = {}
        if not isinstance(loaded, dict):
            loaded = {}
        servers, unavailable = loaded.get("servers"), loaded.get("unavailable")
        _UNAVAILABLE = unavailable if isinstance(unavailable, dict) else {}
        _NAMES = servers if isinstance(servers, dict) else {}
    return _NAMES, _UNAVAILABLE


def _names():
    return _load()[0]


def _unavailable(name):
    """ServerUnavailable for a configured server that is not ready, else None."""
    reason = _load()[1].get(name)
    if reason is None:
        return None
    why = reason if isinstance(reason, str) and reason else "no reason given"
    return ServerUnavailable(f"tools.{name}", "server_unavailable", f"the server {name!r} is configured but not available: {why}")


def _no_such(kind, name, known, where):
    import difflib

    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    listing = ", ".join(sorted(known)[:30]) or "none"
    more = "" if len(known) <= 30 else f" (and {len(known) - 30} more)"
    return AttributeError(f"{where} has no {kind} {name!r}{hint} (available: {listing}{more}); tools.call('server__tool', {{...}}) reaches any tool id")


class Tool:
    """One tool: call it with keyword arguments."""

    __slots__ = ("id", "_path", "_args")

    def __init__(self, tool_id, path, args):
        self.id = tool_id
        self._path = path
        self._args = args if isinstance(args, dict) else {}

    def __call__(self, *positional, **kwargs):
        if positional:
            names = ", ".join(f"{name}=..." for name in self._args) or "name=value"
            raise TypeError(f"{self._path}() takes keyword arguments only: {self._path}({names})")
        arguments = {}
        for name, value in kwargs.items():
            if value is not None:
                arguments[self._args.get(name, name)] = value
        return _call(self.id, arguments)

    def __repr__(self):
        return f"<tool {self._path} ({self.id})>"


class Server:
    """One server's tools as attributes."""

    def __init__(self, attr, entries):
        self._attr = attr
        self._entries = entries if isinstance(entries, dict) else {}

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        entry = self._entries.get(name)
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise _no_such("tool", name, list(self._entries), f"tools.{self._attr}")
        return Tool(entry["id"], f"tools.{self._attr}.{name}", entry.get("args"))

    __getitem__ = __getattr__

    def __dir__(self):
        return sorted(self._entries)

    def __repr__(self):
        return f"<tools.{self._attr}: {', '.join(sorted(self._entries)) or 'no tools'}>"


class Tools:
    """``tools.<server>.<tool>(...)``, ``tools.call``, ``tools.search``, ``tools.list``."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        servers = _names()
        if name not in servers:
            raise _unavailable(name) or _no_such("server", name, list(servers), "tools")
        return Server(name, servers[name])

    __getitem__ = __getattr__

    def __dir__(self):
        return sorted(set(_names()) | {"call", "search", "list"})

    def __repr__(self):
        return f"<tools: {', '.join(sorted(_names())) or 'no servers'}>"

    def call(self, tool, arguments=None, **kwargs):
        """Call any tool by id (``server__tool``) with JSON argument names."""
        merged = dict(arguments or {})
        merged.update(kwargs)
        return _call(tool, merged)

    def search(self, query, limit=10):
        """Tools matching ``query``: a list of {"id", "server", "name", "score", "description"}."""
        path = f"/search?q={_quote(query)}&limit={int(limit)}"
        return _gateway("tools.search").get_json(path, "tools.search").get("results", [])

    def list(self, server=None):
        """Tool descriptions (id, server, name, description, inputSchema, ...), of one server or all."""
        path = "/tools" + (f"?server={_quote(server)}" if server else "")
        return _gateway("tools.list").get_json(path, "tools.list").get("tools", [])


tools = Tools()

if __name__ == "__main__":  # pragma: no cover - a reminder when run by hand
    sys.stderr.write("this is toolscript's exec runtime: `from toolscript import tools` inside `toolscript exec`\n")
