"""How CLI commands find the gateway and talk to its JSON API.

The URL comes from ``--gateway-url``, else the state file of ``--session``,
else ``TOOLSCRIPT_GATEWAY_URL``, else the state file of
``CLAUDE_CODE_SESSION_ID`` / the default session (see ``find_url``).  Every failure is one line that says how to get a gateway running.

Requests go through ``toolscript.http1`` (not ``http.client``, whose imports would cost
~20 ms on every command that talks to the gateway), one per connection, the answer
read up to ``MAX_RESPONSE_BYTES``.
"""

import json
import os
import re
import socket
from typing import Any, Dict, Mapping, Optional
from urllib.parse import urlencode, urlsplit

from toolscript import http1
from toolscript.errors import UserError
from toolscript.gateway import state

# The largest answer read from the gateway (its own request-body cap is 16 MiB; answers
# such as stubs for every tool are of that order).  The ask loop's tool calls use it too.
MAX_RESPONSE_BYTES = 64 * 1024 * 1024

START_HINT = "start one with 'toolscript gateway start --detach'"
STATUS_HINT = f"check 'toolscript gateway status', or {START_HINT}"


def redact(url: str) -> str:
    """The gateway URL with its token hidden: it is a secret, and errors get pasted around."""
    head, sep, _ = url.partition("/t/")
    return f"{head}/t/****" if sep else url


def redact_text(text: str) -> str:
    """``text`` (a log line, an error) with every gateway token in it hidden."""
    return re.sub(r"/t/[^/\s'\"?#]+", "/t/****", text)


class GatewayUnavailable(UserError):
    """No gateway, or it does not answer."""


class TokenRejected(GatewayUnavailable):
    """The gateway answered 401: the URL's token belongs to another gateway."""


class GatewayHttpError(UserError):
    """The gateway answered with an error status; ``payload`` is its JSON body (or None)."""

    def __init__(self, message: str, status: int, payload: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.payload = payload


def find_url(
    explicit: Optional[str] = None, session: Optional[str] = None, environ: Optional[Mapping[str, str]] = None
) -> Optional[str]:
    """The gateway URL to use, or None when nothing names one.

    In order: ``explicit`` (``--gateway-url``); the state file of ``session``
    when the user named one (``--session``: it beats the environment, so
    ``--session s2`` never reaches the gateway ``TOOLSCRIPT_GATEWAY_URL``
    names); ``TOOLSCRIPT_GATEWAY_URL``; the state file of
    ``CLAUDE_CODE_SESSION_ID`` or the default session.  A session's
    environment keeps the URL of the gateway it started with; if that gateway
    was restarted by hand, the session's state file names the new one, which
    wins once the old URL no longer answers.
    """
    env = os.environ if environ is None else environ
    if explicit:
        return explicit
    if session:
        named = state.read_state(session, environ)
        return named["url"] if named else None
    found = state.read_state(env.get("CLAUDE_CODE_SESSION_ID"), environ)
    url = env.get("TOOLSCRIPT_GATEWAY_URL")
    if url and found and found["url"] != url:
        try:
            GatewayClient(url, timeout=2).get("/health")
        except UserError:
            return found["url"]  # the environment's gateway is gone; the session has a new one
    return url or (found["url"] if found else None)


class GatewayClient:
    """A few JSON requests to one gateway URL (which carries the token)."""

    def __init__(self, url: str, timeout: float = 30.0, hint: str = STATUS_HINT) -> None:
        # ``hint``: the next step an unreachable-gateway error names.
        try:
            parts = urlsplit(url.rstrip("/"))
            port = parts.port or 80
        except ValueError as exc:
            raise GatewayUnavailable(f"bad gateway URL {redact(url)!r}: {redact_text(str(exc))}") from exc
        if parts.scheme != "http" or not parts.hostname:
            raise GatewayUnavailable(f"bad gateway URL {redact(url)!r}: it must look like http://127.0.0.1:PORT/t/TOKEN")
        self.host, self.port, self.prefix = parts.hostname, port, parts.path.rstrip("/")
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.hint = hint

    def get(self, path: str, **params: str) -> Any:
        query = urlencode({k: v for k, v in params.items() if v}) if params else ""
        return self._request("GET", path + (f"?{query}" if query else ""), None)

    def post(self, path: str, payload: Dict[str, Any], timeout: Optional[float] = None) -> Any:
        return self._request("POST", path, json.dumps(payload).encode("utf-8"), timeout)

    def _request(self, method: str, path: str, body: Optional[bytes], timeout: Optional[float] = None) -> Any:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        try:
            status, _, data = http1.request(
                self.host, self.port, method, self.prefix + path, headers=headers, body=body,
                timeout=timeout or self.timeout, max_body=MAX_RESPONSE_BYTES,
            )
        except OSError as exc:
            raise GatewayUnavailable(f"the gateway at {redact(self.url)} is not reachable: {_why(exc)}; {self.hint}") from exc
        except http1.TooLarge as exc:
            raise GatewayUnavailable(
                f"the gateway at {redact(self.url)} gave an answer larger than the {http1.size_text(exc.limit)} limit; {self.hint}"
            ) from exc
        except ValueError as exc:
            raise GatewayUnavailable(f"the gateway at {redact(self.url)} gave a malformed answer ({exc}); {self.hint}") from exc
        try:
            payload = json.loads(data) if data else None
        except ValueError:
            payload = None
        if status == 401:
            raise TokenRejected(
                f"the gateway at {redact(self.url)} refused our token: TOOLSCRIPT_GATEWAY_URL belongs to another "
                f"gateway or session; {START_HINT}"
            )
        if status >= 400:
            message = payload.get("error") if isinstance(payload, dict) else data[:200].decode("utf-8", "replace")
            raise GatewayHttpError(f"gateway: {message}", status, payload)
        return payload


def _why(exc: OSError) -> str:
    """A socket error in a few words (no parentheses: it goes inside a sentence)."""
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused, so nothing listens on that port"
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return "no answer in time"
    return str(exc.strerror or exc)


def connect(explicit: Optional[str] = None, session: Optional[str] = None, *, timeout: float = 30.0) -> GatewayClient:
    """A client for the gateway named by the usual sources, or GatewayUnavailable.

    ``session`` is the one the user named with ``--session`` (None when not named).
    """
    url = find_url(explicit, session)
    if not url and session:
        raise GatewayUnavailable(
            f"no gateway is running for session {state.text_session(session)!r}; "
            f"start one with 'toolscript gateway start --detach --session {state.text_session(session)}'"
        )
    if not url:
        raise GatewayUnavailable(f"no gateway is running for this session and TOOLSCRIPT_GATEWAY_URL is not set; {START_HINT}")
    return GatewayClient(url, timeout)
