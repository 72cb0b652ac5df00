"""The tool contract: what a tool is, how it is called, what a call returns, and the executor.

Every tool source (the built-ins, memory's tools, the gateway's upstream
servers) and every caller (the CLI, the gateway, the MCP endpoint, ``ask``)
speak these terms.  A tool is a ``ToolSpec``: a name, a description, a JSON
Schema for its input and a handler.  A request to run one is a ``ToolCall``;
the outcome is always a ``ToolResult``, never an exception, so every surface
reports failures the same way.  A failed result carries one of three fixed
error codes, defined here (use the ``ERROR_*`` names, not the strings):

* ``tool_not_found``: no tool of that name is registered;
* ``invalid_args``: the arguments are not an object or do not match the schema;
* ``execution_error``: the handler failed, crashed or ran past its timeout.

Handlers run in a daemon thread so a stuck handler cannot hold the caller past
the tool's timeout.  Python cannot kill a thread: a handler that times out
keeps running in the background until it returns, and its result is dropped.
"""

import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from toolscript import log
from toolscript.tools import schema as jsonschema

ERROR_TOOL_NOT_FOUND = "tool_not_found"
ERROR_INVALID_ARGS = "invalid_args"
ERROR_EXECUTION = "execution_error"

DEFAULT_TIMEOUT = 8.0  # seconds

# How many names the "unknown tool" message lists before it stops.
_KNOWN_NAMES_SHOWN = 10

_log = log.get("tools")


@dataclass
class ToolContext:
    """What a handler may know about where it runs."""

    # Absolute and realpath'd; the first is the working directory (shell.pwd)
    # and the base of relative paths.
    workspace_roots: List[str]


@dataclass
class ToolSpec:
    """A tool: what it is called, what it takes, and the function that runs it.

    ``handler(args, context)`` returns JSON-ready data and raises
    ``ToolFailure`` for failures it expects (file not found, too large, ...).
    """

    name: str
    description: str
    input_schema: Dict[str, Any]
    handler: Callable[[Dict[str, Any], ToolContext], Any]
    timeout: float = DEFAULT_TIMEOUT  # seconds
    output_schema: Optional[Dict[str, Any]] = None

    def to_mcp(self) -> Dict[str, Any]:
        """The tool as an MCP ``tools/list`` entry."""
        result: Dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
        }
        if self.output_schema is not None:
            result["outputSchema"] = self.output_schema
        return result


def _new_call_id() -> str:
    return secrets.token_hex(6)


@dataclass
class ToolCall:
    """A request to run one tool; ``source`` says who asked (cli, api, mcp, exec)."""

    name: str
    args: Dict[str, Any]
    source: str = "cli"
    id: str = field(default_factory=_new_call_id)


@dataclass
class ToolResult:
    """The outcome of a call: ``data`` when ``ok``, else ``error`` = {"code", "message"}."""

    ok: bool
    data: Any = None
    error: Optional[Dict[str, str]] = None
    meta: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        """The JSON shape: ``{"ok", "data", "error", "meta"}`` (error is null when ok)."""
        return {
            "ok": self.ok,
            "data": self.data,
            "error": None if self.ok else self.error,
            "meta": self.meta,
        }

    @classmethod
    def failure(cls, code: str, message: str, call: ToolCall, started: float, **meta: Any) -> "ToolResult":
        """A failed result for ``call``; ``started`` is the ``time.monotonic()`` the call began at."""
        return cls(
            ok=False,
            error={"code": code, "message": _one_line(message)},
            meta=_meta(call, started, **meta),
        )


class ToolFailure(Exception):
    """Raised by a handler for an expected failure; its message is shown as is."""


def execute(registry: Mapping[str, ToolSpec], call: ToolCall, context: ToolContext) -> ToolResult:
    """Look the tool up, check the arguments, run the handler; always return a ToolResult."""
    started = time.monotonic()
    spec = registry.get(call.name)
    if spec is None:
        return ToolResult.failure(ERROR_TOOL_NOT_FOUND, _unknown_tool_message(call.name, registry), call, started)

    if not isinstance(call.args, dict):
        message = f"arguments must be a JSON object, got {jsonschema.json_type(call.args)}"
        return ToolResult.failure(ERROR_INVALID_ARGS, message, call, started)
    try:
        problems = jsonschema.validate(call.args, spec.input_schema)
    except Exception as exc:  # a broken schema is the tool's fault, not the caller's
        _log.debug("validating arguments of %s failed", call.name, exc_info=True)
        message = f'tool "{call.name}" has an unusable input schema: {_describe(exc)}'
        return ToolResult.failure(ERROR_EXECUTION, message, call, started)
    if problems:
        return ToolResult.failure(ERROR_INVALID_ARGS, "; ".join(problems), call, started)

    outcome = _run_with_timeout(spec, call, context)
    if outcome is None:
        message = f'tool "{call.name}" timed out after {spec.timeout:g}s'
        return ToolResult.failure(ERROR_EXECUTION, message, call, started)
    data, raised = outcome
    if isinstance(raised, ToolFailure):
        return ToolResult.failure(ERROR_EXECUTION, str(raised) or type(raised).__name__, call, started)
    if raised is not None:
        _log.debug("tool %s crashed", call.name, exc_info=(type(raised), raised, raised.__traceback__))
        return ToolResult.failure(ERROR_EXECUTION, _describe(raised), call, started)

    # Every consumer serialises the result; catch a bad handler here, once,
    # instead of as a crash in whichever printer meets it first.
    try:
        json.dumps(data, allow_nan=False)
    except (TypeError, ValueError) as err:
        message = f'tool "{call.name}" returned data that is not JSON: {_describe(err)}'
        return ToolResult.failure(ERROR_EXECUTION, message, call, started)
    return ToolResult(ok=True, data=data, meta=_meta(call, started))


def _run_with_timeout(spec: ToolSpec, call: ToolCall, context: ToolContext) -> Optional[Tuple[Any, Optional[BaseException]]]:
    """``(data, exception)`` from the handler, or None if it ran past ``spec.timeout``."""
    outcome: List[Tuple[Any, Optional[BaseException]]] = []

    def target() -> None:
        try:
            outcome.append((spec.handler(call.args, context), None))
        except BaseException as exc:  # noqa: B902 - whatever happens, the caller gets a result
            outcome.append((None, exc))

    thread = threading.Thread(target=target, name=f"tool-{call.name}-{call.id}", daemon=True)
    thread.start()
    thread.join(spec.timeout)
    if thread.is_alive() or not outcome:
        return None
    return outcome[0]


def _meta(call: ToolCall, started: float, **extra: Any) -> Dict[str, Any]:
    meta: Dict[str, Any] = {
        "tool": call.name,
        "callId": call.id,
        "source": call.source,
        "durationMs": int((time.monotonic() - started) * 1000),
    }
    meta.update(extra)
    return meta


def _unknown_tool_message(name: str, registry: Mapping[str, ToolSpec]) -> str:
    names = list(registry)
    if not names:
        return f'unknown tool "{name}"; no tools are available'
    shown = ", ".join(names[:_KNOWN_NAMES_SHOWN])
    if len(names) > _KNOWN_NAMES_SHOWN:
        shown += f" (and {len(names) - _KNOWN_NAMES_SHOWN} more)"
    return f'unknown tool "{name}"; known tools: {shown}'


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _one_line(text: str) -> str:
    """Error messages are one line: join a multi-line message with spaces."""
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())
