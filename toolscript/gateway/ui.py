"""The gateway's web page: memories, servers, tools and recent calls, in a browser.

The page lives under ``/ui/`` and never sees the gateway's token.  ``toolscript ui``
asks the gateway (with the token: ``POST /t/<token>/ui/code``) for a one-time code
and prints ``http://127.0.0.1:PORT/ui/?code=...``.  Opening that link trades the
code (single use, ``CODE_SECONDS`` to live) for a cookie the page's scripts cannot
read (HttpOnly), sent only by this site's own pages (SameSite=Strict), and named
by the port so two gateways' cookies never mix; the answer redirects to ``/ui/``
so the code leaves the address bar.  The cookie opens the page and its JSON under
``/ui/api/`` and nothing else: it is not the gateway's token, so the page cannot
call tools.

Host and Origin pass the checks every request gets (``http_api``).  On top:
forgetting a memory is a POST whose Origin must be the page's own origin
exactly (a page on another loopback port is same-site and would carry the
cookie) with a JSON body; reads refuse a browser's cross-origin fetch
(``Sec-Fetch-Site``).  Every answer carries a Content-Security-Policy that
allows only the page's own script and style files (no inline script), and
the page writes every text with ``textContent``: memories, server errors and
tool descriptions are data, whoever wrote them.

Routes (``/ui/...`` with the cookie):

    GET  /ui/                     the page (with ?code=: the exchange, then a redirect)
    GET  /ui/app.js, /ui/app.css  its script and style
    GET  /ui/api/overview         the session, the workspace's project, every project with its count
    GET  /ui/api/memories?project=P&q=words&limit=N   newest first, or best first with q
    POST /ui/api/forget {"id": N}                      delete one memory
    GET  /ui/api/servers          every server with its state and where it is configured
    GET  /ui/api/tools?q=words    the catalog, or the tools matching q, best first
    GET  /ui/api/stub?id=TOOL     one tool's Python stub
    GET  /ui/api/calls            the gateway's most recent tool calls, newest first
"""

import hmac
import json
import os
import pkgutil
import secrets
import threading
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple
from urllib.parse import parse_qs

from toolscript import log

logger = log.get("gateway.ui")

CODE_SECONDS = 600.0  # how long a printed link works if nobody opens it
MAX_CODES = 16  # unused codes kept; minting more drops the oldest
MAX_SESSIONS = 16  # browser sessions kept; a new one beyond drops the oldest
MEMORY_LIMIT = 200  # memories one answer lists at most
TOOL_LIMIT = 500
FORGET_BODY_BYTES = 4096

# Only the page's own files: no inline script or style, no other site, no frames, no plugins
# (img-src data: for the empty icon, so the browser does not ask the gateway for /favicon.ico).
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS: Tuple[Tuple[str, str], ...] = (
    ("Content-Security-Policy", CONTENT_SECURITY_POLICY),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "no-referrer"),
    ("Cross-Origin-Resource-Policy", "same-origin"),
)
STATIC = {
    "/ui/": ("index.html", "text/html; charset=utf-8"),
    "/ui/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/ui/app.css": ("app.css", "text/css; charset=utf-8"),
}
STATIC_DIR = "page"  # beside this module; read with pkgutil so the zipapp serves it as a checkout does

EXPIRED_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>toolscript</title></head>
<body><h1>This link has expired or was already used</h1>
<p>Run <code>toolscript ui</code> for a fresh one (<code>toolscript ui --open</code> opens it).</p></body></html>
"""


class UiAccess:
    """The one-time codes ``toolscript ui`` hands out and the browser sessions they became."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._codes: Dict[str, float] = {}  # code -> when it expires (monotonic)
        self._sessions: Dict[str, float] = {}  # cookie value -> when it was made

    def mint(self) -> Dict[str, Any]:
        """A new one-time code, for ``POST /ui/code`` (behind the gateway's token)."""
        code = secrets.token_urlsafe(24)
        now = time.monotonic()
        with self._lock:
            self._codes = {c: t for c, t in self._codes.items() if t > now}
            while len(self._codes) >= MAX_CODES:
                self._codes.pop(min(self._codes, key=self._codes.__getitem__))
            self._codes[code] = now + CODE_SECONDS
        return {"code": code, "path": f"/ui/?code={code}", "expiresInSeconds": int(CODE_SECONDS)}

    def redeem(self, code: str) -> Optional[str]:
        """A new session's cookie value for a valid unused code (which is gone now), else None."""
        now = time.monotonic()
        with self._lock:
            found = next((c for c in self._codes if hmac.compare_digest(c.encode(), code.encode())), None)
            if found is None or self._codes.pop(found) <= now:
                return None
            session = secrets.token_urlsafe(32)
            while len(self._sessions) >= MAX_SESSIONS:
                self._sessions.pop(min(self._sessions, key=self._sessions.__getitem__))
            self._sessions[session] = now
            return session

    def valid(self, session: str) -> bool:
        with self._lock:
            return any(hmac.compare_digest(s.encode(), session.encode()) for s in self._sessions)


def cookie_name(port: int) -> str:
    """Cookies ignore ports: each gateway's has its own name so sessions of two gateways never clash."""
    return f"toolscript_ui_{port}"


def _cookie(handler: Any) -> str:
    name = cookie_name(handler.server.port)
    for header in handler.headers.get_all("Cookie") or []:
        for part in header.split(";"):
            key, _, value = part.strip().partition("=")
            if key == name:
                return value.strip()
    return ""


def handle(handler: Any, method: str, path: str, query: str, size: int) -> None:
    """Answer one request under ``/ui`` (Host and Origin have passed; nothing of the body is read yet)."""
    access: UiAccess = handler.server.ui
    params = {k: ",".join(v) for k, v in parse_qs(query).items()}
    if size and not (method == "POST" and path == "/ui/api/forget"):
        _refuse(handler, 413, f"{method} {path} takes no body")
        return
    if path == "/ui":
        _send(handler, 308, "text/plain; charset=utf-8", b"", [("Location", "/ui/")])
        return
    if path == "/ui/" and method == "GET" and "code" in params:
        code = params["code"]
        handler.requestline = handler.requestline.replace(code, "****")  # the access log never shows a code
        session = access.redeem(code)
        if session is None:
            _send(handler, 401, "text/html; charset=utf-8", EXPIRED_PAGE.encode("utf-8"))
            return
        cookie = f"{cookie_name(handler.server.port)}={session}; Path=/ui; HttpOnly; SameSite=Strict"
        _send(handler, 303, "text/plain; charset=utf-8", b"", [("Set-Cookie", cookie), ("Location", "/ui/")])
        return
    session = _cookie(handler)
    if not session or not access.valid(session):
        if path == "/ui/" and method == "GET":
            _send(handler, 401, "text/html; charset=utf-8", EXPIRED_PAGE.encode("utf-8"))
        else:
            _refuse(handler, 401, "not signed in to the page: run 'toolscript ui' for a fresh link")
        return
    if path in STATIC:
        if method != "GET":
            _json(handler, 405, {"error": f"{method} is not allowed on {path}"})
            return
        filename, content_type = STATIC[path]
        _send(handler, 200, content_type, page_file(filename))
        return
    if not path.startswith("/ui/api/"):
        _json(handler, 404, {"error": f"no such page: {path}"})
        return
    fetch_site = handler.headers.get("Sec-Fetch-Site")
    if fetch_site is not None and fetch_site not in ("same-origin", "none"):
        _json(handler, 403, {"error": "the page's data is for the page itself"})
        return
    endpoint = path[len("/ui/api"):]
    if endpoint == "/forget":
        _forget(handler, method, size)
        return
    if method != "GET":
        _json(handler, 405, {"error": f"{method} is not allowed on {path}"})
        return
    gateway = handler.server.gateway
    if endpoint == "/overview":
        _json(handler, 200, overview(gateway))
    elif endpoint == "/memories":
        try:
            limit = max(1, min(MEMORY_LIMIT, int(params.get("limit", str(MEMORY_LIMIT)))))
        except ValueError:
            limit = MEMORY_LIMIT
        _json(handler, 200, memories(gateway, params.get("project", ""), params.get("q", ""), limit))
    elif endpoint == "/servers":
        _json(handler, 200, gateway.servers(wait=False))
    elif endpoint == "/tools":
        _json(handler, 200, tools(gateway, params.get("q", "")))
    elif endpoint == "/stub":
        _stub(handler, params.get("id", ""))
    elif endpoint == "/calls":
        _json(handler, 200, {"calls": list(reversed(list(gateway.recent_calls)))})
    else:
        _json(handler, 404, {"error": f"no such endpoint: {path}"})


def _forget(handler: Any, method: str, size: int) -> None:
    """POST /ui/api/forget: only from the page itself (its exact origin), with a JSON body naming one memory."""
    if method != "POST":
        _json(handler, 405, {"error": "forget is a POST"})
        return
    origin = handler.headers.get("Origin")
    own = f"http://{handler.headers.get('Host', '')}"
    if origin is None or not hmac.compare_digest(origin.encode(), own.encode()):
        _refuse(handler, 403, "forget is answered only to the page itself (its Origin)")
        return
    if (handler.headers.get("Content-Type") or "").split(";")[0].strip() != "application/json":
        _refuse(handler, 415, "send JSON: {\"id\": N}")
        return
    if size > FORGET_BODY_BYTES:
        _refuse(handler, 413, "the body is too large")
        return
    body = handler._read_body(size)
    if body is None:
        return
    try:
        request = json.loads(body or b"null")
    except ValueError:
        request = None
    memory_id = request.get("id") if isinstance(request, dict) else None
    if not isinstance(memory_id, int) or isinstance(memory_id, bool) or memory_id < 1:
        _json(handler, 400, {"error": "send {\"id\": N}: the id of one memory"})
        return
    db = open_memories(handler.server.gateway, readonly=False)
    if db is None:
        _json(handler, 404, {"error": f"no memory with id {memory_id}"})
        return
    with db:
        count = db.forget(ids=[memory_id])
    if count:
        logger.info("the page forgot memory %d", memory_id)
    _json(handler, 200 if count else 404, {"forgotten": count} if count else {"error": f"no memory with id {memory_id}"})


def _stub(handler: Any, tool: str) -> None:
    gateway = handler.server.gateway
    if not tool or gateway.catalog.get(tool) is None:
        _json(handler, 404, {"error": f"no tool {tool!r}"})
        return
    answer = gateway.derived.types(lang="python", selection=[tool], full=True)
    _json(handler, 200, {"id": tool, "code": answer["code"], "usage": answer.get("usage", "")})


# -- what the API answers ------------------------------------------------------------


def memory_path(gateway: Any) -> str:
    """The memory database the configuration names for the gateway's workspace (as the memory tools read it)."""
    from toolscript.config import keys as configkeys
    from toolscript.memory import store

    settings, _ = configkeys.memory_settings(None, gateway.context.workspace_roots[0])
    data = settings.get("dataDir")
    return os.path.join(os.path.expanduser(data), store.DB_FILENAME) if data else store.default_path()


def open_memories(gateway: Any, readonly: bool = True) -> Any:
    """The memory store, or None when there is no database yet (the page never creates one)."""
    from toolscript.memory import store

    path = memory_path(gateway)
    if not os.path.exists(path):
        return None
    return store.open_store(path, readonly=readonly)


def _memory_json(memory: Any, score: Optional[float] = None) -> Dict[str, Any]:
    from toolscript.memory.automemory import source

    item = {"id": memory.id, "project": memory.project, "session": memory.session, "kind": memory.kind,
            "tool": memory.tool, "source": source(memory), "files": list(memory.files), "content": memory.content,
            "created": memory.created}
    if score is not None:
        item["score"] = round(score, 3)
    return item


def overview(gateway: Any) -> Dict[str, Any]:
    from toolscript.memory import project_root

    projects: List[Dict[str, Any]] = []
    error = ""
    try:
        db = open_memories(gateway)
        if db is not None:
            with db:
                projects = db.projects()
    except Exception as exc:  # a locked or damaged database: the page says so, the rest still works
        error = str(exc)
    health = gateway.health()
    return {"session": gateway.session, "version": health["version"], "workspace": health["workspace"],
            "project": project_root(gateway.context.workspace_roots[0]), "projects": projects,
            "memoryError": error, "tools": health["tools"], "servers": health["servers"]}


def memories(gateway: Any, project: str, query: str, limit: int) -> Dict[str, Any]:
    db = open_memories(gateway)
    if db is None:
        return {"memories": [], "note": "no memories yet: toolscript's hooks record them as sessions work"}
    scope = project or None
    with db:
        if query.strip():
            found = db.search(query, project=scope, limit=limit)
            return {"memories": [_memory_json(m, score) for m, score in found], "query": query}
        return {"memories": [_memory_json(m) for m in db.recent(project=scope, limit=limit)]}


def tools(gateway: Any, query: str) -> Dict[str, Any]:
    snapshot = gateway.catalog.snapshot()
    if query.strip():
        found = gateway.derived.search(query, limit=TOOL_LIMIT // 10, threshold=0.0, servers=None)
        ids: Sequence[str] = [r["id"] for r in found]
        scores = {r["id"]: r.get("score") for r in found}
    else:
        ids = [e.id for e in snapshot.entries()][:TOOL_LIMIT]
        scores = {}
    listed = []
    for identifier in ids:
        entry = snapshot.get(identifier)
        if entry is None:
            continue
        item = {"id": entry.id, "server": entry.server, "name": entry.name, "description": entry.tool.get("description") or ""}
        if identifier in scores:
            item["score"] = scores[identifier]
        listed.append(item)
    return {"tools": listed, "query": query, "total": len(snapshot.entries())}


# -- files and answers ---------------------------------------------------------------

_files: Dict[str, bytes] = {}


def page_file(name: str) -> bytes:
    """One of the page's files, read once (from the zipapp as from a checkout)."""
    if name not in _files:
        _files[name] = pkgutil.get_data(__name__.rpartition(".")[0], f"{STATIC_DIR}/{name}") or b""
    return _files[name]


def _json(handler: Any, status: int, payload: Any) -> None:
    from toolscript.http1 import encode_json

    _send(handler, status, "application/json", encode_json(payload))


def _refuse(handler: Any, status: int, message: str) -> None:
    """An error answered before the body was read: the connection closes after it (as the gateway's own refusals do)."""
    handler.close_connection = True
    handler.server.linger(handler.connection)
    _json(handler, status, {"error": message})


def _send(handler: Any, status: int, content_type: str, body: bytes, extra: Sequence[Tuple[str, str]] = ()) -> None:
    handler._send(status, content_type, body, extra=tuple(extra) + SECURITY_HEADERS)
