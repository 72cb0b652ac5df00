"""What the Streamable HTTP and legacy SSE transports share: ``HttpTransport``, their base.

The URL and settings a transport is made with, the headers of each MCP
request, the one-line wording of an HTTP error status, and how a request
carries OAuth: with a ``BearerAuth`` every request gets its ``Authorization``
header, and a 401 or 403 is shown to it to decide whether to send the request
once more.
"""

import http.client
from typing import Dict, Optional

from toolscript.mcp.auth.bearer import BearerAuth
from toolscript.mcp.client.transport import DEFAULT_MAX_MESSAGE_BYTES
from toolscript.mcp.errors import HttpStatusError
from toolscript.mcp.httpconn import USER_AGENT, Endpoint, redact_url


def request_headers(
    configured: Dict[str, str], accept: str, *, session_id: Optional[str] = None, protocol_version: Optional[str] = None
) -> Dict[str, str]:
    """Headers for one MCP HTTP request: the user's configured ones plus the protocol's."""
    headers = {"User-Agent": USER_AGENT}
    headers.update(configured)
    headers["Accept"] = accept
    if session_id:
        headers["Mcp-Session-Id"] = session_id
    if protocol_version:
        headers["MCP-Protocol-Version"] = protocol_version
    return headers


def describe_status(status: int, reason: str, body: bytes, url: str) -> str:
    """One line for an HTTP error status, naming the URL and what to check."""
    where = redact_url(url)
    hint = {
        401: "check the credentials in this server's \"headers\"",
        403: "the server refused access; check \"headers\" and that this client is allowed",
        404: "check the URL path: MCP endpoints are usually /mcp (Streamable HTTP) or /sse",
        405: "the server does not accept this method at this URL",
        406: "the server did not accept the Accept header",
    }.get(status, "")
    text = f"HTTP {status} {reason}".rstrip() + f" from {where}"
    detail = body.decode("utf-8", errors="replace").strip().replace("\n", " ")[:200]
    if detail:
        text += f": {detail}"
    if hint:
        text += f" ({hint})"
    return text


def status_error(resp: http.client.HTTPResponse, body: bytes, url: str) -> HttpStatusError:
    """The ``HttpStatusError`` for a response that is not a success (its body already read)."""
    return HttpStatusError(describe_status(resp.status, resp.reason, body, url), resp.status, body.decode("utf-8", "replace"))


class HttpTransport:
    """What the Streamable HTTP and legacy SSE transports share: the URL and
    settings they are made with, and how a request carries OAuth."""

    def __init__(
        self,
        url: str,
        headers: Optional[Dict[str, str]] = None,
        *,
        timeout: float = 30.0,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        server_name: str = "",
        auth: Optional[BearerAuth] = None,
    ) -> None:
        self.endpoint = Endpoint(url)
        self.headers = dict(headers or {})
        self.auth = auth
        self.timeout = timeout
        self.max_message_bytes = max_message_bytes
        self.server_name = server_name
        self.protocol_version: Optional[str] = None  # set by the session after the handshake

    def stderr_tail(self, lines: int = 10) -> str:
        return ""  # a remote server has no stderr we can see

    def _authorize(self, headers: Dict[str, str]) -> Dict[str, str]:
        """``headers`` with the grant's Authorization header added (when there is a grant)."""
        if self.auth is not None:
            value = self.auth.authorization()
            if value:
                headers["Authorization"] = value
        return headers

    def _auth_retry(self, resp: http.client.HTTPResponse, headers: Dict[str, str]) -> bool:
        """A 401/403 answer to a request sent with ``headers``: True when ``auth``
        renewed the grant (or stepped up) and the request should go once more."""
        if self.auth is None or resp.status not in (401, 403):
            return False
        return self.auth.on_unauthorized(resp.status, resp.getheader("WWW-Authenticate"), used=headers.get("Authorization"))
