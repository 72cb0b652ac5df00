"""The tool contract (toolscript.tools.contract): the executor, its three error codes, calls and results."""

import logging
import re
import threading
import time

import pytest

from builtin_calls import ctx, error_of, ok_data, root, run  # noqa: F401  # ctx, root: fixtures
from toolscript.tools.contract import (
    ERROR_EXECUTION,
    ERROR_INVALID_ARGS,
    ERROR_TOOL_NOT_FOUND,
    ToolCall,
    ToolFailure,
    ToolResult,
    ToolSpec,
    execute,
)


def spec(name="t", handler=None, schema=None, **kwargs) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=f"test tool {name}",
        input_schema=schema if schema is not None else {"type": "object"},
        handler=handler or (lambda args, context: {"got": args}),
        **kwargs,
    )


# --- executor -------------------------------------------------------------------


def test_unknown_tool_lists_known_names(ctx):
    registry = {"a.one": spec("a.one"), "b.two": spec("b.two")}
    result = execute(registry, ToolCall(name="nope", args={}), ctx)
    assert error_of(result) == (ERROR_TOOL_NOT_FOUND, 'unknown tool "nope"; known tools: a.one, b.two')
    assert result.data is None


def test_unknown_tool_lists_at_most_ten_names(ctx):
    registry = {f"t{i:02d}": spec(f"t{i:02d}") for i in range(12)}
    _, message = error_of(execute(registry, ToolCall(name="x", args={}), ctx))
    shown = ", ".join(f"t{i:02d}" for i in range(10))
    assert message == f'unknown tool "x"; known tools: {shown} (and 2 more)'


def test_unknown_tool_with_empty_registry(ctx):
    assert error_of(execute({}, ToolCall(name="x", args={}), ctx)) == (
        ERROR_TOOL_NOT_FOUND,
        'unknown tool "x"; no tools are available',
    )


@pytest.mark.parametrize(
    "args, kind",
    [([1, 2], "array"), ("text", "string"), (None, "null"), (3, "integer"), (True, "boolean")],
)
def test_args_must_be_an_object(ctx, args, kind):
    called = []
    registry = {"t": spec(handler=lambda a, c: called.append(a))}
    result = execute(registry, ToolCall(name="t", args=args), ctx)
    assert error_of(result) == (ERROR_INVALID_ARGS, f"arguments must be a JSON object, got {kind}")
    assert called == []


def test_invalid_args_wrong_type(ctx):
    result = run("fs.read_file", ctx, path="a.txt", maxBytes="10")
    assert error_of(result) == (ERROR_INVALID_ARGS, "/maxBytes: expected integer, got string")


def test_invalid_args_missing_required(ctx):
    result = run("fs.read_file", ctx)
    assert error_of(result) == (ERROR_INVALID_ARGS, "/path: required property is missing")


def test_invalid_args_unexpected_property(ctx):
    result = run("fs.list_dir", ctx, path=".", bogus=1)
    assert error_of(result) == (ERROR_INVALID_ARGS, "/bogus: unexpected property")


def test_invalid_args_problems_joined_with_semicolons(ctx):
    result = run("fs.list_dir", ctx, path=3, recursive="yes")
    assert error_of(result) == (
        ERROR_INVALID_ARGS,
        "/path: expected string, got integer; /recursive: expected boolean, got string",
    )


@pytest.mark.parametrize("depth, message", [(0, "expected >= 1, got 0"), (33, "expected <= 32, got 33")])
def test_invalid_args_max_depth_range(ctx, depth, message):
    result = run("fs.list_dir", ctx, recursive=True, maxDepth=depth)
    assert error_of(result) == (ERROR_INVALID_ARGS, "/maxDepth: " + message)


def test_invalid_args_handler_not_called(ctx):
    called = []
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": False}
    registry = {"t": spec(schema=schema, handler=lambda a, c: called.append(a))}
    result = execute(registry, ToolCall(name="t", args={"n": "1"}), ctx)
    assert error_of(result) == (ERROR_INVALID_ARGS, "/n: expected integer, got string")
    assert called == []


def test_handler_gets_args_and_context(ctx):
    seen = []
    registry = {"t": spec(handler=lambda a, c: seen.append((a, c)) or {"n": a["n"] + 1})}
    result = execute(registry, ToolCall(name="t", args={"n": 1}), ctx)
    assert ok_data(result) == {"n": 2}
    assert seen == [({"n": 1}, ctx)]
    assert result.error is None


def test_tool_failure_becomes_execution_error(ctx):
    def handler(args, context):
        raise ToolFailure("the disk is on fire")

    result = execute({"t": spec(handler=handler)}, ToolCall(name="t", args={}), ctx)
    assert error_of(result) == (ERROR_EXECUTION, "the disk is on fire")


def test_multi_line_failure_message_is_one_line(ctx):
    def handler(args, context):
        raise ToolFailure("first line\n  second line\n")

    result = execute({"t": spec(handler=handler)}, ToolCall(name="t", args={}), ctx)
    assert error_of(result) == (ERROR_EXECUTION, "first line second line")


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        self.records.append(record)


def test_handler_crash_reports_type_and_logs_traceback(ctx):
    def handler(args, context):
        raise ValueError("boom")

    # A handler of our own: log.setup() elsewhere in the session may stop propagation to caplog's.
    logger = logging.getLogger("toolscript.tools")
    capture, level = _Records(), logger.level
    logger.addHandler(capture)
    logger.setLevel(logging.DEBUG)
    try:
        result = execute({"t": spec(handler=handler)}, ToolCall(name="t", args={}), ctx)
    finally:
        logger.removeHandler(capture)
        logger.setLevel(level)
    assert error_of(result) == (ERROR_EXECUTION, "ValueError: boom")
    tracebacks = [r for r in capture.records if r.exc_info and r.exc_info[1] is not None]
    assert len(tracebacks) == 1
    assert isinstance(tracebacks[0].exc_info[1], ValueError)


def test_handler_crash_without_message(ctx):
    def handler(args, context):
        raise KeyError()

    result = execute({"t": spec(handler=handler)}, ToolCall(name="t", args={}), ctx)
    assert error_of(result) == (ERROR_EXECUTION, "KeyError")


def test_handler_system_exit_does_not_escape(ctx):
    def handler(args, context):
        raise SystemExit(3)

    result = execute({"t": spec(handler=handler)}, ToolCall(name="t", args={}), ctx)
    assert error_of(result) == (ERROR_EXECUTION, "SystemExit: 3")


def test_non_json_data_is_an_execution_error(ctx):
    registry = {"t": spec(handler=lambda a, c: {"s": {1, 2}})}
    code, message = error_of(execute(registry, ToolCall(name="t", args={}), ctx))
    assert code == ERROR_EXECUTION
    assert message.startswith('tool "t" returned data that is not JSON: TypeError: ')


def test_timeout(ctx):
    # The handler blocks until released (60 s at most): only the 0.2 s timeout can end the call
    # sooner, so a result in under 60 s proves the timeout fired.
    release = threading.Event()
    registry = {"slow": spec("slow", handler=lambda a, c: release.wait(60), timeout=0.2)}
    try:
        result = execute(registry, ToolCall(name="slow", args={}), ctx)
    finally:
        release.set()
    assert error_of(result) == (ERROR_EXECUTION, 'tool "slow" timed out after 0.2s')
    assert 150 <= result.meta["durationMs"] < 60_000


def test_meta_on_success_and_failure(ctx):
    registry = {"t": spec()}
    call = ToolCall(name="t", args={}, source="gateway")
    for result in (
        execute(registry, call, ctx),
        execute(registry, ToolCall(name="t", args=[], source="gateway", id=call.id), ctx),
        execute(registry, ToolCall(name="missing", args={}, source="gateway", id=call.id), ctx),
    ):
        assert set(result.meta) == {"tool", "callId", "source", "durationMs"}
        assert result.meta["callId"] == call.id
        assert result.meta["source"] == "gateway"
        assert isinstance(result.meta["durationMs"], int) and result.meta["durationMs"] >= 0
    assert execute(registry, call, ctx).meta["tool"] == "t"


def test_duration_is_measured(ctx):
    registry = {"t": spec(handler=lambda a, c: time.sleep(0.15) or {})}
    result = execute(registry, ToolCall(name="t", args={}), ctx)
    assert result.meta["durationMs"] >= 150


def test_call_defaults():
    first, second = ToolCall(name="t", args={}), ToolCall(name="t", args={})
    assert first.source == "cli"
    assert re.fullmatch(r"[0-9a-f]{12}", first.id)
    assert first.id != second.id


def test_result_to_dict(ctx):
    registry = {"t": spec()}
    good = execute(registry, ToolCall(name="t", args={"a": 1}), ctx).to_dict()
    assert list(good) == ["ok", "data", "error", "meta"]
    assert good["ok"] is True and good["error"] is None and good["data"] == {"got": {"a": 1}}
    bad = execute(registry, ToolCall(name="zzz", args={}), ctx).to_dict()
    assert list(bad) == ["ok", "data", "error", "meta"]
    assert bad["ok"] is False and bad["data"] is None
    assert set(bad["error"]) == {"code", "message"}
    assert bad["meta"]["tool"] == "zzz"


def test_failure_constructor_adds_extra_meta():
    call = ToolCall(name="t", args={}, source="mcp")
    result = ToolResult.failure(ERROR_EXECUTION, "nope", call, time.monotonic() - 0.05, server="s1")
    assert result.ok is False
    assert result.error == {"code": ERROR_EXECUTION, "message": "nope"}
    assert result.meta["server"] == "s1"
    assert result.meta["callId"] == call.id and result.meta["source"] == "mcp"
    assert result.meta["durationMs"] >= 50


def test_to_mcp():
    plain = spec("x", schema={"type": "object"})
    assert plain.to_mcp() == {"name": "x", "description": "test tool x", "inputSchema": {"type": "object"}}
    with_output = spec("y", output_schema={"type": "object", "properties": {}})
    assert with_output.to_mcp()["outputSchema"] == {"type": "object", "properties": {}}
