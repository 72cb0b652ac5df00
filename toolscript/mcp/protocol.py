"""MCP protocol constants shared by the client session and the server endpoint.

Two eras: the handshake revisions (``initialize`` + sessions, up to
2025-11-25) and the modern ones (2026-07-28: no handshake, every request
carries its version and client capabilities in ``params._meta``).
The helpers at the end build that envelope and its HTTP headers for the client.
"""

import base64
import re
from typing import Any, Dict, List, Optional, Tuple

LATEST_PROTOCOL_VERSION = "2025-11-25"  # the newest handshake revision (what initialize offers)
SUPPORTED_PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")  # handshake era
HANDSHAKE_PROTOCOL_VERSIONS = SUPPORTED_PROTOCOL_VERSIONS
MODERN_PROTOCOL_VERSIONS = ("2026-07-28",)
LATEST_MODERN_VERSION = MODERN_PROTOCOL_VERSIONS[-1]

# The per-request envelope of the modern era, in params._meta / result._meta.
PROTOCOL_VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_META_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_META_KEY = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_META_KEY = "io.modelcontextprotocol/logLevel"
SERVER_INFO_META_KEY = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID_META_KEY = "io.modelcontextprotocol/subscriptionId"

# Error codes the modern era added.
HEADER_MISMATCH = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022

# Methods whose modern HTTP request names its target in the Mcp-Name header, and the param that holds it.
NAMED_METHOD_PARAMS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def modern_meta(version: str, client_info: Dict[str, Any]) -> Dict[str, Any]:
    """The ``_meta`` envelope a modern request carries (we declare no client capabilities)."""
    return {PROTOCOL_VERSION_META_KEY: version, CLIENT_INFO_META_KEY: client_info, CLIENT_CAPABILITIES_META_KEY: {}}


def envelope_version(message: Any) -> Optional[str]:
    """The modern protocol version a message's ``params._meta`` names, or None (a handshake-era message)."""
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(PROTOCOL_VERSION_META_KEY) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


def encode_header_value(value: str) -> str:
    """A header value as the modern HTTP transport sends it: verbatim, or ``=?base64?...?=`` when it is
    not plain printable ASCII, has edge whitespace, or already looks like the sentinel."""
    plain = value.isascii() and value.isprintable() and value == value.strip()
    if plain and not (value.startswith("=?base64?") and value.endswith("?=")):
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


# A tool's x-mcp-header annotations: (argument path, header token) pairs.
ParamHeaders = List[Tuple[Tuple[str, ...], str, str]]  # (property path, header token, JSON type)
_HEADER_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")  # RFC 9110 field-name characters


def param_header_annotations(schema: Any) -> Optional[ParamHeaders]:
    """The ``x-mcp-header`` annotations of a tool's inputSchema, on pure ``properties`` chains.

    None when one is invalid (not a header token, not on a string, integer
    or boolean property, or a duplicate): a client must then drop the tool.
    """
    found: ParamHeaders = []
    seen = set()
    stack: List[Tuple[Tuple[str, ...], Any]] = [((), schema)]
    while stack:
        path, node = stack.pop()
        if not isinstance(node, dict):
            continue
        if path and "x-mcp-header" in node:
            token, kind = node["x-mcp-header"], node.get("type")
            if not isinstance(token, str) or not _HEADER_TOKEN.match(token) or kind not in ("string", "integer", "boolean") or token.lower() in seen:
                return None
            seen.add(token.lower())
            found.append((path, token, kind))
        properties = node.get("properties")
        if isinstance(properties, dict):
            stack.extend(((*path, key), sub) for key, sub in properties.items())
    return found


def param_headers(annotations: ParamHeaders, arguments: Any) -> Dict[str, str]:
    """``Mcp-Param-<token>`` for each annotated argument the call carries as a scalar."""
    headers = {}
    for path, token, _kind in annotations:
        value: Any = arguments
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, bool):
            headers["Mcp-Param-" + token] = "true" if value else "false"
        elif isinstance(value, (str, int, float)):
            headers["Mcp-Param-" + token] = encode_header_value(str(value))
    return headers


def modern_headers(message: Dict[str, Any], version: str) -> Dict[str, str]:
    """MCP-Protocol-Version, Mcp-Method and (for named methods) Mcp-Name for one modern POST."""
    method = message.get("method")
    headers = {"MCP-Protocol-Version": version}
    if not isinstance(method, str):
        return headers
    headers["Mcp-Method"] = method
    params = message.get("params")
    key = NAMED_METHOD_PARAMS.get(method)
    if key and isinstance(params, dict) and isinstance(params.get(key), str):
        headers["Mcp-Name"] = encode_header_value(params[key])
    return headers
