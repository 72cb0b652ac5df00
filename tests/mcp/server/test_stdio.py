"""The stdio MCP server (``toolscript.mcp.server.stdio``) serving an in-test provider.

Driven two ways: line by line over a pair of pipes (the transport's rules, one
message at a time), and by the official MCP Python SDK launching it as a
subprocess (an independent client, in both protocol eras).
"""

import asyncio
import json
import os
import sys
import threading

import pytest

from conftest import REPO_ROOT, TESTS_DIR
from mcp_fixtures import Provider, base_tools, eventually, sdk
from toolscript.mcp import jsonrpc
from toolscript.mcp.protocol import LOG_LEVEL_META_KEY, SERVER_INFO_META_KEY, SUBSCRIPTION_ID_META_KEY, modern_meta
from toolscript.mcp.server import stdio

MODERN = "2026-07-28"
CLIENT = {"name": "test-client", "version": "1"}


class Pipes:
    """A StdioServer on two pipes, run in a thread; the test writes requests and reads lines."""

    def __init__(self, provider=None, **options):
        self.provider = provider or Provider()
        to_server, self._client_out = os.pipe()
        self._client_in, from_server = os.pipe()
        self.writer = os.fdopen(self._client_out, "wb", buffering=0)
        self.reader = os.fdopen(self._client_in, "rb")
        options.setdefault("server_name", "test-stdio")
        options.setdefault("server_version", "9.9.9")
        self._server_out = os.fdopen(from_server, "wb")
        self.server = stdio.StdioServer(self.provider, stdin=os.fdopen(to_server, "rb"), stdout=self._server_out, **options)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        self._pending = []

    def send(self, message):
        self.writer.write((message if isinstance(message, bytes) else json.dumps(message).encode()) + b"\n")

    def read(self):
        line = self.reader.readline()
        assert line, "the server closed stdout"
        assert line.endswith(b"\n")
        return json.loads(line)

    def answer(self, request_id):
        """The next message answering ``request_id``; notifications met on the way are kept in ``self._pending``."""
        for i, message in enumerate(self._pending):
            if message.get("id") == request_id and "method" not in message:
                return self._pending.pop(i)
        while True:
            message = self.read()
            if message.get("id") == request_id and "method" not in message:
                return message
            self._pending.append(message)

    def notifications(self, method):
        return [m for m in self._pending if m.get("method") == method]

    def request(self, request_id, method, params=None):
        self.send(jsonrpc.request(request_id, method, params))
        return self.answer(request_id)

    def close_stdin(self, timeout=10):
        self.writer.close()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the server did not return when stdin closed"
        self._server_out.close()  # as the process's exit would: what it wrote before is all there is
        rest = self.reader.read()
        return [json.loads(line) for line in rest.splitlines() if line.strip()]


@pytest.fixture
def pipes():
    opened = []

    def _open(**options):
        served = Pipes(**options)
        opened.append(served)
        return served

    yield _open
    for served in opened:
        if not served.writer.closed:
            served.writer.close()
        served.thread.join(10)


def initialize(pipes, version="2025-11-25"):
    answer = pipes.request(0, "initialize", {"protocolVersion": version, "capabilities": {}, "clientInfo": CLIENT})
    pipes.send(jsonrpc.notification("notifications/initialized"))
    return answer


def modern_params(**params):
    return dict(params, _meta=modern_meta(MODERN, CLIENT))


def test_handshake_lists_and_calls(pipes):
    served = pipes(instructions="Test instructions.")
    answer = initialize(served, "2025-06-18")["result"]
    assert answer["protocolVersion"] == "2025-06-18"
    assert answer["serverInfo"] == {"name": "test-stdio", "version": "9.9.9"}
    assert answer["instructions"] == "Test instructions."
    assert answer["capabilities"] == {"tools": {"listChanged": True}, "logging": {}}
    tools = served.request(1, "tools/list")["result"]["tools"]
    assert [t["name"] for t in tools] == [t["name"] for t in base_tools()]
    assert tools[-1]["description"] == "" and tools[-1]["_meta"] == {"x/y": 1}  # filled in, the rest passed through
    added = served.request(2, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})["result"]
    assert added["structuredContent"] == {"sum": 5} and added["_meta"] == {"test/trace": "abc"}
    assert served.request("s", "ping") == {"jsonrpc": "2.0", "id": "s", "result": {}}


def test_an_unknown_client_version_gets_our_latest(pipes):
    served = pipes()
    assert initialize(served, "1999-01-01")["result"]["protocolVersion"] == "2025-11-25"


def test_tool_failures_are_tool_errors_and_bad_requests_protocol_errors(pipes):
    served = pipes()
    initialize(served)
    failed = served.request(1, "tools/call", {"name": "fail", "arguments": {"why": "on purpose"}})["result"]
    assert failed == {"content": [{"type": "text", "text": "the tool broke: on purpose"}], "isError": True}
    assert served.request(2, "tools/call", {"name": "nope", "arguments": {}})["error"]["code"] == jsonrpc.INVALID_PARAMS
    assert served.request(3, "tools/call", {"name": "echo", "arguments": [1]})["error"]["code"] == jsonrpc.INVALID_PARAMS
    assert served.request(4, "tools/call", {"arguments": {}})["error"]["code"] == jsonrpc.INVALID_PARAMS
    assert served.request(5, "resources/list")["error"]["code"] == jsonrpc.METHOD_NOT_FOUND
    assert served.request(6, "tools/list", [1])["error"]["code"] == jsonrpc.INVALID_PARAMS


def test_lines_that_are_not_one_message_get_an_error_and_the_loop_goes_on(pipes):
    served = pipes()
    served.send(b"{not json")
    assert served.read()["error"]["code"] == jsonrpc.PARSE_ERROR
    served.send(b"[" + json.dumps(jsonrpc.request(1, "ping")).encode() + b"]")
    assert served.read() == {"jsonrpc": "2.0", "id": None, "error": {"code": jsonrpc.INVALID_REQUEST,
                                                                       "message": "Invalid Request: one JSON-RPC request or notification per line"}}
    served.send(b"")  # blank lines are skipped
    served.send({"jsonrpc": "2.0", "id": 7, "result": {}})  # a response to nothing we asked: ignored
    assert served.request(2, "ping")["result"] == {}


def test_an_overlong_line_is_refused_without_reading_it_whole(pipes, monkeypatch):
    monkeypatch.setattr(stdio, "MAX_LINE_BYTES", 1000)
    served = pipes()
    served.send(json.dumps(jsonrpc.request(1, "tools/call", {"name": "echo", "arguments": {"text": "x" * 5000}})).encode())
    assert served.read()["error"]["code"] == jsonrpc.PARSE_ERROR
    assert served.request(2, "ping")["result"] == {}


def test_a_running_call_does_not_hold_up_other_requests_and_cancelling_it_drops_its_answer(pipes):
    served = pipes()
    initialize(served)
    served.send(jsonrpc.request(1, "tools/call", {"name": "sleep", "arguments": {"seconds": 30}}))
    assert served.provider.sleep_started.wait(5)
    assert served.request(2, "ping")["result"] == {}  # answered while the call sleeps
    served.send(jsonrpc.notification("notifications/cancelled", {"requestId": 1, "reason": "test"}))
    assert served.provider.sleep_cancelled.wait(5)
    assert served.request(3, "ping")["result"] == {}
    rest = served.close_stdin()
    assert [m for m in rest + served._pending if m.get("id") == 1] == []  # the provider answered, but nothing was sent


def test_closing_stdin_cancels_calls_still_running(pipes):
    served = pipes()
    initialize(served)
    served.send(jsonrpc.request(1, "tools/call", {"name": "sleep", "arguments": {"seconds": 30}}))
    assert served.provider.sleep_started.wait(5)
    assert served.close_stdin() == []
    assert served.provider.sleep_cancelled.is_set()


def test_progress_and_logs_are_notifications(pipes):
    served = pipes()
    initialize(served)
    answer = served.request(1, "tools/call", {"name": "slow", "arguments": {"steps": 2}, "_meta": {"progressToken": "p"}})
    assert answer["result"]["content"][0]["text"] == "done"
    progress = [m["params"] for m in served.notifications("notifications/progress")]
    assert progress == [{"progressToken": "p", "progress": 1, "total": 2, "message": "step 1"},
                        {"progressToken": "p", "progress": 2, "total": 2, "message": "step 2"}]
    logs = [m["params"] for m in served.notifications("notifications/message")]
    assert logs == [{"level": "info", "data": {"step": 1}, "logger": "slow"}, {"level": "info", "data": {"step": 2}, "logger": "slow"}]
    # Without a progress token, no progress; logging/setLevel lowers the bar.
    assert served.request(2, "logging/setLevel", {"level": "debug"})["result"] == {}
    assert served.request(3, "logging/setLevel", {"level": "loud"})["error"]["code"] == jsonrpc.INVALID_PARAMS
    served._pending.clear()
    served.request(4, "tools/call", {"name": "slow", "arguments": {"steps": 1}})
    assert served.notifications("notifications/progress") == []
    assert [m["params"]["level"] for m in served.notifications("notifications/message")] == ["debug", "info"]


def test_a_tool_list_change_is_announced(pipes):
    served = pipes()
    initialize(served)
    served.provider.set_tools(base_tools()[:1])
    assert served.read() == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    assert [t["name"] for t in served.request(1, "tools/list")["result"]["tools"]] == ["echo"]


def test_a_provider_whose_tools_never_change_says_so(pipes):
    served = pipes(list_changed=False)
    assert initialize(served)["result"]["capabilities"]["tools"] == {"listChanged": False}


# -- 2026-07-28: no handshake, the envelope in params._meta -------------------------------------


def test_modern_requests_need_no_handshake_and_carry_that_eras_fields(pipes):
    served = pipes(instructions="Test instructions.")
    discovered = served.request("d", "server/discover", modern_params())["result"]
    assert discovered["supportedVersions"] == [MODERN] and discovered["resultType"] == "complete"
    assert discovered["instructions"] == "Test instructions."
    assert discovered["_meta"][SERVER_INFO_META_KEY] == {"name": "test-stdio", "version": "9.9.9"}
    listed = served.request(1, "tools/list", modern_params())["result"]
    assert listed["ttlMs"] == 0 and listed["cacheScope"] == "private" and len(listed["tools"]) == len(base_tools())
    called = served.request(2, "tools/call", modern_params(name="add", arguments={"a": 1, "b": 1}))["result"]
    assert called["structuredContent"] == {"sum": 2} and called["resultType"] == "complete"
    assert called["_meta"] == {"test/trace": "abc", SERVER_INFO_META_KEY: {"name": "test-stdio", "version": "9.9.9"}}
    refused = served.request(3, "tools/list", dict(_meta=modern_meta("2099-01-01", CLIENT)))["error"]
    assert refused["code"] == -32022 and refused["data"] == {"supported": [MODERN], "requested": "2099-01-01"}


def test_a_modern_call_logs_only_when_it_opts_in(pipes):
    served = pipes()
    served.request(1, "tools/call", modern_params(name="slow", arguments={"steps": 1}))
    assert served.notifications("notifications/message") == []
    params = modern_params(name="slow", arguments={"steps": 1})
    params["_meta"][LOG_LEVEL_META_KEY] = "debug"
    served.request(2, "tools/call", params)
    assert [m["params"]["level"] for m in served.notifications("notifications/message")] == ["debug", "info"]


def test_a_listen_is_acknowledged_carries_changes_and_ends_with_stdin(pipes):
    served = pipes()
    served.send(jsonrpc.request("l", "subscriptions/listen", modern_params(notifications={"toolsListChanged": True})))
    assert served.read() == {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                             "params": {"notifications": {"toolsListChanged": True}, "_meta": {SUBSCRIPTION_ID_META_KEY: "l"}}}
    served.provider.set_tools(base_tools()[:2])
    assert served.read() == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {"_meta": {SUBSCRIPTION_ID_META_KEY: "l"}}}
    (end,) = served.close_stdin()
    assert end["id"] == "l" and end["result"]["_meta"][SUBSCRIPTION_ID_META_KEY] == "l"


def test_a_listen_for_tools_that_never_change_is_acknowledged_with_nothing(pipes):
    served = pipes(list_changed=False)
    served.send(jsonrpc.request("l", "subscriptions/listen", modern_params(notifications={"toolsListChanged": True})))
    assert served.read()["params"]["notifications"] == {}


# -- the official MCP Python SDK, launching it as a subprocess -----------------------------------


SERVER_SCRIPT = """
import sys
from mcp_fixtures import Provider
from toolscript.mcp.server.stdio import serve_stdio
serve_stdio(Provider(), server_name="test-stdio", server_version="9.9.9", instructions="Test instructions.",
            stdin=sys.stdin.buffer, stdout=sys.stdout.buffer)
"""


@pytest.mark.filterwarnings("ignore:ping is removed")
@pytest.mark.parametrize("mode", ["legacy", "auto"])  # auto negotiates 2026-07-28
def test_sdk_client_over_stdio(mode):
    mcp = sdk()
    logs = []

    async def on_log(params):
        logs.append((params.level, params.data))

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO_ROOT, TESTS_DIR]))
    params = mcp.StdioServerParameters(command=sys.executable, args=["-c", SERVER_SCRIPT], env=env)

    async def main():
        async with mcp.Client(params, mode=mode, logging_callback=on_log, log_level="info") as client:
            assert client.protocol_version == ("2025-11-25" if mode == "legacy" else MODERN)
            assert [t.name for t in (await client.list_tools()).tools] == [t["name"] for t in base_tools()]
            added = await client.call_tool("add", {"a": 1, "b": 2})
            assert added.structured_content == {"sum": 3} and not added.is_error
            failed = await client.call_tool("fail", {"why": "sdk"})
            assert failed.is_error and failed.content[0].text == "the tool broke: sdk"
            assert (await client.call_tool("slow", {"steps": 1})).content[0].text == "done"
            await eventually(lambda: logs)

    asyncio.run(asyncio.wait_for(main(), 30))
    assert logs == [("info", {"step": 1})]
