"""Code mode as three MCP tools (``toolscript.gateway.codemode_tools``), and the gateway's ``/mcp/code``.

The tools run against a real in-process gateway with the fixture MCP server,
through both backends: in the gateway's process (what ``/mcp/code`` uses)
and over the gateway's JSON API (what ``toolscript mcp`` uses).  Scripts run
in the real sandbox.
"""

import http.client
import json

import pytest

from gateway_processes import fixture_server
from gateway_http import served
from toolscript.gateway import codemode_tools
from toolscript.gateway.client import GatewayClient, GatewayUnavailable
from toolscript.gateway.codemode_tools import CodeModeTools, GatewayBackend, HttpBackend
from toolscript.mcp.client.session import ClientSession
from toolscript.mcp.client.streamable_http import StreamableHttpTransport
from toolscript.mcp.server.endpoint import UnknownTool

CLAUDE_CODE_DESCRIPTION_CUT = 2048  # bytes of a tool description Claude Code keeps


def text(result):
    assert [block["type"] for block in result["content"]] == ["text"]
    return result["content"][0]["text"]


@pytest.fixture(params=["in-process", "json-api"])
def tools(request, tmp_path):
    """CodeModeTools over a gateway serving the fixture server, through one backend or the other."""
    with served(tmp_path, fixture_server()) as (gw, server, url):
        if request.param == "in-process":
            backend = GatewayBackend(gw, lambda: server.url)
        else:
            backend = HttpBackend(lambda: GatewayClient(url))
        yield CodeModeTools(backend)


def test_three_tools_that_claude_code_keeps_loaded_and_that_say_when_to_use_them():
    listed = CodeModeTools(backend=None).list_tools()
    assert [t["name"] for t in listed] == ["search_tools", "get_types", "run_script"]
    for tool in listed:
        assert tool["_meta"] == {"anthropic/alwaysLoad": True}
        assert len(tool["description"].encode()) < CLAUDE_CODE_DESCRIPTION_CUT // 4
        assert tool["inputSchema"]["type"] == "object" and tool["inputSchema"]["additionalProperties"] is False
    search, types, run = listed
    assert "first" in search["description"] and "get_types" in search["description"]
    assert "search_tools" in types["description"] and "run_script" in types["description"]
    assert "get_types" in run["description"] and "print" in run["description"]
    assert search["inputSchema"]["required"] == ["query"] and set(search["inputSchema"]["properties"]) == {"query", "limit"}
    assert set(types["inputSchema"]["properties"]) == {"tools", "filter"}
    assert run["inputSchema"]["required"] == ["code"] and set(run["inputSchema"]["properties"]) == {"code", "timeout"}
    listed[0]["_meta"]["anthropic/alwaysLoad"] = False  # a caller changing its copy changes nothing
    assert CodeModeTools(backend=None).list_tools()[0]["_meta"] == {"anthropic/alwaysLoad": True}


def test_search_then_stubs_then_one_script(tools):
    found = tools.call_tool("search_tools", {"query": "add two integers", "limit": 3})
    assert not found.get("isError") and "structuredContent" not in found  # Claude Code would show that instead of the text
    lines = text(found).splitlines()
    assert lines[0].startswith("fixture__add (") and "Add two integers" in lines[0]
    assert len(lines) == 4 and lines[-1].startswith("Next: get_types")
    stubs = text(tools.call_tool("get_types", {"tools": ["fixture__add"]}))
    assert "def add(*, a: int, b: int)" in stubs and "# usage: result = tools.fixture.add(a=0, b=0)" in stubs
    assert "def echo(" not in stubs
    code = "from toolscript import tools\nprint('sum', tools.fixture.add(a=20, b=22)['sum'])"
    ran = tools.call_tool("run_script", {"code": code})
    assert ran == {"content": [{"type": "text", "text": "sum 42\n"}]}


def test_stubs_of_a_server_by_name_or_filter_and_a_name_that_is_not_there(tools):
    whole = text(tools.call_tool("get_types", {"filter": "fixture"}))
    assert "def add(" in whole and "def echo(" in whole
    partly = text(tools.call_tool("get_types", {"tools": ["fixture__echo", "fixture__nope"]}))
    assert "def echo(" in partly and partly.endswith("# not found: fixture__nope (use the ids search_tools returns)")


def test_a_script_that_needs_no_tools_runs_without_the_gateway():
    class NoGateway:
        require_isolation = False

        def runtime(self):
            raise AssertionError("the script never names toolscript")

    assert text(CodeModeTools(NoGateway()).call_tool("run_script", {"code": "print(6 * 7)"})) == "42\n"


def test_what_goes_wrong_is_a_tool_error_with_one_clear_line(tools):
    def error(name, arguments):
        result = tools.call_tool(name, arguments)
        assert result["isError"] is True
        return text(result)

    assert error("search_tools", {"query": "   "}) == 'the query is empty: say what the tool should do, e.g. "create a github issue"'
    assert error("search_tools", {}) == "invalid arguments for search_tools: /query: required property is missing"
    assert error("search_tools", {"query": "x", "limit": 0}) == "invalid arguments for search_tools: /limit: expected >= 1, got 0"
    assert error("get_types", {}) == "name the tools: pass tools: [ids from search_tools] (or a server name)"
    assert error("get_types", {"tools": ["nope__x"]}) == "no tool or server named nope__x: use the ids search_tools returns (server__tool)"
    assert error("run_script", {"code": "print(("}).startswith("syntax error, nothing was run: <script>:1:")
    assert error("run_script", {"code": "x", "timeout": 0}).startswith("invalid arguments for run_script: /timeout:")
    with pytest.raises(UnknownTool):
        tools.call_tool("exec", {"code": "1"})


def test_a_failing_script_says_so_first_then_shows_its_output(tools):
    code = "from toolscript import tools\nprint('before')\ntools.fixture.fail(message='the fixture refused')"
    result = tools.call_tool("run_script", {"code": code})
    assert result["isError"] is True
    lines = text(result).splitlines()
    assert lines[:3] == ["The script failed with exit status 1.", "[stdout]", "before"]
    assert lines[3] == "[stderr]" and "the fixture refused" in lines[-1] and "ToolError" in lines[-1]


def test_a_script_past_its_time_or_its_output_bound_is_stopped_and_told_why(tools, monkeypatch):
    slow = tools.call_tool("run_script", {"code": "import time\nprint('started', flush=True)\ntime.sleep(30)", "timeout": 1})
    assert slow["isError"] is True
    assert text(slow).splitlines()[:3] == ["The script timed out after 1s: do less per script, or pass a larger timeout (up to 300).",
                                            "[stdout]", "started"]
    monkeypatch.setattr(codemode_tools, "MAX_OUTPUT_BYTES", 2000)
    loud = tools.call_tool("run_script", {"code": "while True: print('x' * 100)"})
    assert loud["isError"] is True
    assert text(loud).startswith("The script printed more than 2 kB and was stopped: print a compact result.")


def test_a_script_that_prints_nothing_is_told_to_print(tools):
    assert text(tools.call_tool("run_script", {"code": "x = 1"})) == "(the script printed nothing: print the result you need)"


def test_an_unreachable_gateway_is_a_tool_error():
    def connect():
        raise GatewayUnavailable("the gateway at http://127.0.0.1:9/t/**** is not reachable: connection refused\nsecond line")

    result = CodeModeTools(HttpBackend(connect)).call_tool("search_tools", {"query": "add"})
    assert result == {"content": [{"type": "text", "text": "the gateway at http://127.0.0.1:9/t/**** is not reachable: connection refused second line"}],
                      "isError": True}


def test_required_isolation_is_honoured(tools, monkeypatch):
    monkeypatch.setenv("TOOLSCRIPT_EXEC_LAYER", "guard")  # only the in-process guard: isolation cannot be had
    tools.backend.require_isolation = True
    result = tools.call_tool("run_script", {"code": "print(1)"})
    assert result["isError"] is True and "isolation is required" in text(result)


# -- the gateway's second MCP profile -------------------------------------------------------------


def test_the_gateway_serves_the_three_tools_at_mcp_code_and_every_tool_at_mcp(tmp_path):
    with served(tmp_path, fixture_server()) as (gw, server, url):
        code = ClientSession(StreamableHttpTransport(url + "/mcp/code"))
        every = ClientSession(StreamableHttpTransport(url + "/mcp"))
        try:
            code.initialize(10)
            assert code.server_info["name"] == "toolscript-code" and "search_tools" in (code.instructions or "")
            listed = code.list_tools()
            assert [t["name"] for t in listed] == ["search_tools", "get_types", "run_script"]
            assert all(t["_meta"] == {"anthropic/alwaysLoad": True} for t in listed)
            found = code.call_tool("search_tools", {"query": "echo a message back"})
            assert found["content"][0]["text"].startswith("fixture__echo (")
            ran = code.call_tool("run_script", {"code": "from toolscript import tools\nprint(tools.fixture.echo(message='hi'))"})
            assert ran["content"][0]["text"] == "Echo: hi\n" and not ran.get("isError")
            every.initialize(10)
            assert "fixture__add" in [t["name"] for t in every.list_tools()]
        finally:
            code.close()
            every.close()
        # The token guards the profile too.
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
        conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
        conn.request("POST", "/mcp/code", body=body, headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
        assert conn.getresponse().status == 401
        conn.close()
