"""Signing in to a remote MCP server interactively: the browser, the loopback callback, or a pasted URL.

``toolscript auth SERVER`` uses ``sign_in``.  The authorization server sends
the browser back to ``http://127.0.0.1:PORT/callback?code=...&state=...``; how
that URL reaches us depends on where the browser is:

* same machine (the default): a one-shot HTTP listener on 127.0.0.1 catches it.
  The browser is opened for the user when there is one (``$TOOLSCRIPT_AUTH_BROWSER``,
  a command the URL is appended to or substituted for ``%s``; else Python's
  ``webbrowser`` when a display or ``$BROWSER`` exists); the URL is always
  printed too, to open by hand.
* another machine (``paste``): the user opens the printed URL anywhere, signs
  in, and pastes the address the browser was sent to (its page will not load
  there; the address bar still has the code) back on stdin.

The port is ``redirectPort`` from the config, else the port of the previous
sign-in (so a registered redirect URI keeps working), else any free one.

The callback's ``state`` is compared with the one we sent before the code is
used: an answer to someone else's sign-in is refused.  Codes, tokens and
verifiers are never printed or logged.
"""

import http.server
import os
import shlex
import socket
import socketserver
import subprocess
import sys
import threading
import time
import urllib.parse
from typing import Any, Callable, Dict, Mapping, Optional

from toolscript import log
from toolscript.mcp.auth import flow as oauth
from toolscript.mcp.auth import store as oauth_store
from toolscript.mcp.auth.flow import Grant, OAuthError

logger = log.get("mcp.oauth_login")

CALLBACK_PATH = "/callback"
DEFAULT_WAIT_SECONDS = 300.0
CONNECTION_TIMEOUT_SECONDS = 10.0  # a connection to the callback listener that sends nothing for this long is dropped
BROWSER_ENV = "TOOLSCRIPT_AUTH_BROWSER"

_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>toolscript</title></head>
<body style="font-family: sans-serif; margin: 3em"><h2>{title}</h2><p>{text}</p></body></html>
"""


class CallbackListener:
    """A one-shot HTTP listener on 127.0.0.1 that waits for the authorization server's redirect.

    Only ``GET /callback`` with the ``state`` of the sign-in under way is taken,
    and only the first: anything else (another path, a wrong or missing state,
    a second answer) is refused without ending the wait, so a stray or hostile
    local request cannot cut a sign-in short.  Each connection is served on its
    own thread with a short socket timeout: an idle connection (browsers open
    speculative ones) cannot hold up the real callback.
    """

    def __init__(self, port: int = 0, on_refused: Optional[Callable[[str], None]] = None) -> None:
        self._url: Optional[str] = None
        self._arrived = threading.Event()
        self._lock = threading.Lock()
        self.expected_state: Optional[str] = None  # set before the browser is sent off; until then nothing is taken
        listener = self

        class Handler(http.server.BaseHTTPRequestHandler):
            timeout = CONNECTION_TIMEOUT_SECONDS  # socket timeout per connection: an idle one is dropped

            def do_GET(self) -> None:  # noqa: N802 (the http.server name)
                parts = urllib.parse.urlsplit(self.path)
                if parts.path != CALLBACK_PATH:
                    self._page(404, "Not found", "This is toolscript's sign-in callback; nothing here.")
                    return
                query = urllib.parse.parse_qs(parts.query)
                state = _query_value(self.path, "state")
                if listener.expected_state is None or state != listener.expected_state:
                    self._page(400, "Sign-in refused", "This answer does not belong to the sign-in toolscript started "
                               "(its state differs). Nothing was stored; run toolscript auth again.")
                    if on_refused is not None:
                        on_refused("ignored an answer on the callback whose state does not match this sign-in "
                                   "(a stale browser tab or a forged redirect); still waiting")
                    return
                with listener._lock:
                    first = not listener._arrived.is_set()
                    if first:
                        listener._url = f"http://127.0.0.1:{listener.port}{self.path}"
                        listener._arrived.set()
                if not first:
                    self._page(409, "Already answered", "toolscript already got an answer for this sign-in; return to the terminal.")
                elif "error" in query:
                    self._page(200, "Sign-in not completed", "The authorization server said: "
                               + _html((query.get("error_description") or query["error"])[0]) + ". Return to the terminal.")
                else:
                    self._page(200, "Signed in", "toolscript got the answer; you can close this tab and return to the terminal.")

            def _page(self, status: int, title: str, text: str) -> None:
                body = _PAGE.format(title=_html(title), text=text).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body)
                self.close_connection = True

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the request line carries the code: never log it

        try:
            self._server = _LoopbackServer(("127.0.0.1", port), Handler)
        except OSError as exc:
            raise OAuthError(
                f"cannot listen for the sign-in callback on 127.0.0.1:{port}: {exc.strerror or exc} "
                "(free the port, change \"redirectPort\", or use --paste)"
            ) from exc
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
        self._thread.start()

    @property
    def redirect_uri(self) -> str:
        return redirect_uri(self.port)

    def wait(self, timeout: float) -> Optional[str]:
        """The callback URL the browser arrived with, or None after ``timeout`` seconds."""
        self._arrived.wait(timeout)
        return self._url

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class _LoopbackServer(http.server.ThreadingHTTPServer):
    allow_reuse_address = True
    daemon_threads = True  # a connection still open when the sign-in ends must not keep the process alive  # a fixed redirectPort must be reusable right after the last sign-in

    def server_bind(self) -> None:
        # HTTPServer.server_bind looks up the host's FQDN (reverse DNS), which can stall; a plain bind is enough.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "127.0.0.1", self.server_address[1]


def redirect_uri(port: int) -> str:
    return f"http://127.0.0.1:{port}{CALLBACK_PATH}"


def free_port() -> int:
    """A port nothing listens on now (for --paste, where nobody listens at all)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_free(port: int) -> bool:
    """Whether the listener could bind ``port`` now (with SO_REUSEADDR, as it does: TIME_WAIT leftovers do not count)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def choose_port(configured: Optional[int], previous: Optional[Grant]) -> int:
    """The configured port, else the previous sign-in's (when free), else 0 (any)."""
    if configured:
        return configured
    if previous is not None:
        try:
            old = urllib.parse.urlsplit(previous.redirect_uri).port
        except ValueError:
            old = None
        if old and port_free(old):
            return old
    return 0


def has_display(environ: Mapping[str, str]) -> bool:
    """Whether a graphical browser can be opened here (a text browser in this terminal would be worse than a URL)."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY") or environ.get("BROWSER"))


def open_browser(url: str, environ: Mapping[str, str]) -> Optional[str]:
    """Open ``url`` in a browser when there is one; returns how (for the message), or None when not opened."""
    command = environ.get(BROWSER_ENV, "").strip()
    if command:
        argv = shlex.split(command)
        argv = [url if word == "%s" else word for word in argv] if "%s" in argv else argv + [url]
        try:
            subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True)
        except OSError as exc:
            logger.warning("cannot run $%s (%s): %s", BROWSER_ENV, argv[0], exc.strerror or exc)
            return None
        return f"${BROWSER_ENV}"
    if not has_display(environ):
        return None
    import webbrowser  # here: only an interactive sign-in needs it

    try:
        return "your browser" if webbrowser.open(url) else None
    except webbrowser.Error:
        return None


def sign_in(
    server: Any,
    *,
    paste: bool = False,
    no_browser: bool = False,
    force: bool = False,
    scope: Optional[str] = None,
    timeout: float = DEFAULT_WAIT_SECONDS,
    say: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
    read_line: Callable[[], str] = lambda: sys.stdin.readline(),
    environ: Optional[Mapping[str, str]] = None,
) -> Optional[Grant]:
    """Authorize toolscript for ``server`` (an http/sse ``config.load.ServerConfig``) and store the grant.

    Returns the stored grant, or None when the server did not ask for
    authorization and ``force`` is False.  ``scope`` (a step-up) replaces the
    configured scope; the scope granted before is kept.  Raises ``OAuthError`` (one line,
    what to do next) on every failure; nothing is stored then.
    """
    env = os.environ if environ is None else environ
    name, url = server.name, server.url
    challenge = oauth.probe(url)
    if challenge is None and not force:
        return None
    previous = oauth_store.load(name, url)
    settings = getattr(server, "oauth", None)
    port = choose_port(getattr(settings, "redirect_port", None), previous)
    listener: Optional[CallbackListener] = None
    if paste:
        uri = redirect_uri(port or free_port())
    else:
        listener = CallbackListener(port, on_refused=say)
        uri = listener.redirect_uri

    def open_url(authorization_url: str) -> str:
        state = _query_value(authorization_url, "state")
        if paste:
            say(f"Open this URL in a browser on any machine and sign in:\n\n  {authorization_url}\n")
            say(f"The browser then goes to {uri}?code=... (the page may fail to load there; that is fine).")
            say("Paste that whole address here and press Enter:")
            answer = read_line().strip()
            if not answer:
                raise OAuthError(f"no address was pasted; run 'toolscript auth {name} --paste' again")
            if not answer.startswith(uri + "?"):
                raise OAuthError(f"the pasted address does not start with {uri}?; paste the address the browser ended up at")
            returned = answer
        else:
            assert listener is not None
            listener.expected_state = state
            how = None if no_browser else open_browser(authorization_url, env)
            if how:
                say(f"Opened {how} to sign in to {name}. If nothing opened, open this URL:\n\n  {authorization_url}\n")
            else:
                say(f"Open this URL in a browser on this machine to sign in to {name}:\n\n  {authorization_url}\n")
            say(f"Waiting for the browser to come back to {uri} (up to {timeout:g}s; Ctrl-C to give up; "
                f"no browser on this machine? use --paste)")
            arrived = listener.wait(timeout)
            if arrived is None:
                raise OAuthError(f"the browser did not come back within {timeout:g}s; run 'toolscript auth {name}' again, or use --paste")
            returned = arrived
        if _query_value(returned, "state") != state:
            raise OAuthError("the answer's state does not match the sign-in toolscript started (a forged or stale "
                             f"redirect); nothing was stored; run 'toolscript auth {name}' again")
        error = _query_value(returned, "error")
        if error:
            detail = _query_value(returned, "error_description")
            raise OAuthError(f"the authorization server refused: {oauth.printable(error, 60)}"
                             + (f" ({oauth.printable(detail)})" if detail else "")
                             + f"; run 'toolscript auth {name}' again")
        return returned

    try:
        grant = oauth.authorize(
            url, open_url, uri, www_authenticate=challenge, client=oauth_store.client_settings(settings, scope), previous=previous
        )
    finally:
        if listener is not None:
            listener.close()
    oauth_store.save(name, grant)
    return grant


def expires_in(grant: Grant, now: Optional[float] = None) -> str:
    """``"in 59m"``, ``"expired"`` or ``"no expiry"`` for a grant's access token."""
    if not grant.expires_at:
        return "no expiry"
    left = grant.expires_at - (time.time() if now is None else now)
    if left <= 0:
        return "expired" + (" (refreshable)" if grant.refresh_token else "")
    if left < 120:
        return f"in {int(left)}s"
    if left < 7200:
        return f"in {int(left // 60)}m"
    return f"in {int(left // 3600)}h"


def _query_value(url: str, key: str) -> Optional[str]:
    values: Dict[str, Any] = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
    found = values.get(key)
    return found[0] if found else None


def _html(text: str) -> str:
    import html

    return html.escape(text)
