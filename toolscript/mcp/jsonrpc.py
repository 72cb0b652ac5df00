"""JSON-RPC 2.0 message shapes, the wire encoding, and the errors MCP uses.

Messages are plain dicts.  ``encode`` writes one compact JSON document with no
raw newlines (``json.dumps`` escapes them inside strings), which is exactly
what the stdio transport's newline framing needs.
"""

import json
from typing import Any, Dict, List, Optional, Union

from toolscript.mcp.errors import McpError

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

Message = Dict[str, Any]


class JsonRpcError(McpError):
    """The peer answered a request with a JSON-RPC ``error`` object."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} (JSON-RPC error {code})")
        self.code = code
        self.message = message
        self.data = data

    @classmethod
    def from_error(cls, error: Any) -> "JsonRpcError":
        if not isinstance(error, dict):
            return cls(INTERNAL_ERROR, f"malformed error object: {error!r}")
        code = error.get("code")
        return cls(code if isinstance(code, int) else INTERNAL_ERROR, str(error.get("message", "")), error.get("data"))


def request(request_id: Union[int, str], method: str, params: Optional[dict] = None) -> Message:
    message: Message = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification(method: str, params: Optional[dict] = None) -> Message:
    message: Message = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def result(request_id: Union[int, str], value: Any) -> Message:
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


def error(request_id: Union[int, str, None], code: int, message: str, data: Any = None) -> Message:
    err: Dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": err}


def kind(message: Any) -> str:
    """Classify a decoded message: request, notification, response or invalid."""
    if not isinstance(message, dict):
        return "invalid"
    if "method" in message:
        if not isinstance(message["method"], str):
            return "invalid"
        return "request" if message.get("id") is not None else "notification"
    if "id" in message and ("result" in message or "error" in message):
        return "response"
    return "invalid"


def encode(message: Message) -> bytes:
    """One message as compact UTF-8 JSON without newlines."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def decode(data: Union[bytes, str]) -> List[Any]:
    """Parse a body or a line into a list of messages (a batch array is flattened).

    Raises ``ValueError`` when it is not JSON, not UTF-8, or nested too deeply
    for the parser (``json`` recurses, so a hostile peer's ``[[[[...`` would
    otherwise raise ``RecursionError`` in whatever thread reads it).
    """
    if isinstance(data, bytes):
        data = data.decode("utf-8")
    try:
        value = json.loads(data)
    except RecursionError:
        raise ValueError("the JSON is nested too deeply to parse") from None
    return value if isinstance(value, list) else [value]
