"""What a request to the MCP endpoint says in its headers, and the 2026-07-28 envelope's rules.

Reading headers (``request_header``, ``accepts``); which era a request belongs
to (``names_modern_version``, ``is_modern``); and the checks a 2026-07-28
request must pass before it is served: the ``params._meta`` envelope, the
``MCP-Protocol-Version``/``Mcp-Method``/``Mcp-Name`` headers against the body,
the ``Mcp-Param-*`` headers against the arguments, and the version.  Errors
carry the revision's codes and HTTP statuses (-32022 for an unsupported
version, -32020 for a header mismatch, 404 for unknown methods), as the
official SDK's server answers them.  Nothing here writes a response.
"""

import base64
import binascii
import http.server
import re
from typing import Any, Dict, Optional, Tuple

from toolscript.mcp import jsonrpc
from toolscript.mcp.protocol import (
    CLIENT_CAPABILITIES_META_KEY,
    HEADER_MISMATCH,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    MODERN_PROTOCOL_VERSIONS,
    NAMED_METHOD_PARAMS,
    PROTOCOL_VERSION_META_KEY,
    SUPPORTED_PROTOCOL_VERSIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
    param_header_annotations,
)

PARAM_HEADER_PREFIX = "mcp-param-"


def as_object(value: Any) -> Dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one (params and _meta are optional)."""
    return value if isinstance(value, dict) else {}


def request_header(handler: http.server.BaseHTTPRequestHandler, name: str) -> Optional[str]:
    """The value of header ``name``, stripped; None when the request has none."""
    value = handler.headers.get(name)
    return value.strip() if isinstance(value, str) else None


def accepts(handler: http.server.BaseHTTPRequestHandler, media_type: str) -> bool:
    """Does ``Accept`` allow ``media_type``?  Wildcards count (RFC 9110), as in the Python SDK."""
    wanted = {media_type, media_type.split("/")[0] + "/*", "*/*"}
    for value in handler.headers.get_all("Accept") or []:
        for item in value.split(","):
            if item.split(";")[0].strip().lower() in wanted:
                return True
    return False


# -- 2026-07-28 ---------------------------------------------------------------------------

# The HTTP status for a JSON-RPC error code, as the MCP specification's table (and the SDK) map them.
_MODERN_ERROR_STATUS = {
    jsonrpc.PARSE_ERROR: 400,
    jsonrpc.INVALID_REQUEST: 400,
    jsonrpc.INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    jsonrpc.METHOD_NOT_FOUND: 404,
}
_BASE64_SENTINEL = re.compile(r"^=\?base64\?(?P<payload>.*)\?=$")


def names_modern_version(handler: http.server.BaseHTTPRequestHandler) -> bool:
    """Does MCP-Protocol-Version route this request to 2026-07-28?

    A modern revision does.  An unknown one does too (so a modern client is
    told which versions we serve, -32022), unless the request names a
    handshake session: then it is a session's bad header, refused as before.
    """
    version = request_header(handler, "MCP-Protocol-Version")
    if version is None or version in SUPPORTED_PROTOCOL_VERSIONS:
        return False
    return version in MODERN_PROTOCOL_VERSIONS or not request_header(handler, "Mcp-Session-Id")


def is_modern(handler: http.server.BaseHTTPRequestHandler, value: Any) -> bool:
    """Is this POST a 2026-07-28 request?  By its version header; or, with no header and no
    session, by a protocol version in its ``_meta`` (it is then told its headers are missing)."""
    if request_header(handler, "MCP-Protocol-Version") is not None:
        return names_modern_version(handler)
    if request_header(handler, "Mcp-Session-Id") or not isinstance(value, dict) or value.get("method") == "initialize":
        return False
    return PROTOCOL_VERSION_META_KEY in as_object(as_object(value.get("params")).get("_meta"))


def modern_status(response: Optional[Dict[str, Any]]) -> int:
    """The HTTP status a 2026-07-28 answer goes out with: 200, or what its error code maps to."""
    error = response.get("error") if response is not None else None
    code = error.get("code") if isinstance(error, dict) else None
    return _MODERN_ERROR_STATUS.get(code, 200) if isinstance(code, int) else 200


def unsupported_data(requested: Any) -> Dict[str, Any]:
    """The ``data`` of a -32022 error: the versions we serve and the one asked for."""
    return {"supported": list(MODERN_PROTOCOL_VERSIONS), "requested": requested}


def decode_header_value(value: Optional[str]) -> Optional[str]:
    """An Mcp-Name/Mcp-Param value: verbatim, or the UTF-8 inside ``=?base64?...?=`` (None if that is malformed)."""
    if value is None:
        return None
    match = _BASE64_SENTINEL.match(value)
    if match is None:
        return value
    payload = match.group("payload")
    try:
        decoded = base64.b64decode(payload, validate=True)
        if base64.b64encode(decoded).decode("ascii") != payload:
            return None  # not canonical: the client's encoder never writes that
        return decoded.decode("utf-8")
    except (binascii.Error, ValueError):
        return None


_DECIMAL = re.compile(r"^-?[0-9]+(\.[0-9]+)?$")


def param_header_mismatch(handler: http.server.BaseHTTPRequestHandler, schema: Any, arguments: Any) -> Optional[str]:
    """Why the request's Mcp-Param-* headers disagree with its arguments (the MCP specification's rules), or None."""
    annotations = param_header_annotations(schema)  # the client side's rule: one definition
    if not annotations:
        return None
    for path, token, kind in annotations:
        header = "Mcp-Param-" + token
        values = handler.headers.get_all(header) or []
        if len(values) > 1:
            return f"{header} header appears more than once"
        raw = values[0].strip() if values else None
        value: Any = arguments if isinstance(arguments, dict) else {}
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        argument = ".".join(path)
        if isinstance(value, bool):
            rendered: Optional[str] = "true" if value else "false"
        elif isinstance(value, (str, int, float)):
            rendered = str(value)
        else:
            rendered = None  # absent, null, or not a scalar: a client sends no header for it
        if rendered is None:
            if raw is not None:
                return f"{header} header is present but the request body's {argument!r} argument is absent or not a scalar"
            continue
        if raw is None:
            return f"{header} header is missing but the request body's {argument!r} argument is present"
        decoded = decode_header_value(raw)
        if decoded is None:
            return f"{header} header carries a malformed base64 value"
        if kind == "integer" and not isinstance(value, bool) and _DECIMAL.match(decoded) and (isinstance(value, int) or (isinstance(value, float) and value.is_integer())):
            whole, _, fraction = decoded.partition(".")
            if not fraction.strip("0") and int(whole) == int(value):
                continue  # 42 and 42.0 are the same integer
        elif decoded == rendered:
            continue
        return f"{header} header does not match the request body's {argument!r} argument"
    return None


def modern_rejection(handler: http.server.BaseHTTPRequestHandler, message: Dict[str, Any]) -> Optional[Tuple[int, str, Any]]:
    """Why a 2026-07-28 request's envelope is refused, as (code, message, data); None if it is fine.

    The checks and their order are the MCP specification's (and the SDK's): the _meta
    envelope, then the routing headers against the body, then the version.
    """
    for name in ("MCP-Protocol-Version", "Mcp-Method", "Mcp-Name"):
        if len(handler.headers.get_all(name) or []) > 1:
            return HEADER_MISMATCH, f"{name} header appears more than once", None
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict):
        return jsonrpc.INVALID_PARAMS, f"params._meta must be an object carrying {PROTOCOL_VERSION_META_KEY!r} and {CLIENT_CAPABILITIES_META_KEY!r}", None
    missing = [key for key in (PROTOCOL_VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY) if key not in meta]
    if missing:
        return jsonrpc.INVALID_PARAMS, f"params._meta is missing {', '.join(missing)}", None
    assert isinstance(params, dict)
    version = meta[PROTOCOL_VERSION_META_KEY]
    if request_header(handler, "MCP-Protocol-Version") != version:
        return HEADER_MISMATCH, "MCP-Protocol-Version header does not match the request's protocol version in params._meta", None
    method = message["method"]
    if request_header(handler, "Mcp-Method") != method:
        return HEADER_MISMATCH, "Mcp-Method header does not match the request body's method", None
    name_key = NAMED_METHOD_PARAMS.get(method)
    if name_key is not None and params.get(name_key) is not None and decode_header_value(request_header(handler, "Mcp-Name")) != params[name_key]:
        return HEADER_MISMATCH, f"Mcp-Name header does not match the request body's {name_key!r}", None
    if not isinstance(version, str):
        return jsonrpc.INVALID_PARAMS, "the protocol version in params._meta must be a string", None
    if version not in MODERN_PROTOCOL_VERSIONS:
        return UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", unsupported_data(version)
    return None
