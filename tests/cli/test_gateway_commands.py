"""Commands that ask the gateway (search, get-types, list-tools, tools, list-servers) as a user meets them.

A mistyped server or tool name is one line with a suggestion and the command
that lists the real ones (exit 2), but invoking an unknown tool is a failed
call (the tool_not_found ToolResult, exit 1) whose message carries the
suggestion; ``-v`` shows progress without the gateway's token; tables line up.  Commands run as ``python -m toolscript`` subprocesses
from an empty directory with an empty ``HOME``; gateways are served from this
process.
"""

import json

import pytest

from cli_checks import one_error_line
from mcp_servers.launch import stdio_command
from toolscript.config.load import ServerConfig


@pytest.fixture
def cli(run_cli, clean_env, workdir):
    """``cli(*args, **env_overrides)``: toolscript in the empty workdir with HOME empty."""

    def run(*args, **env):
        return run_cli(*args, env=dict(clean_env, **env), cwd=workdir)

    return run


def fixture_server(name: str = "fixture") -> ServerConfig:
    command = stdio_command()
    return ServerConfig(name=name, type="stdio", source="test", command=command[0], args=command[1:])


@pytest.fixture
def served(gateway):
    """A gateway with the fixture server as "fixture": its URL."""
    _, url = gateway(fixture_server("fixture"))
    return url


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "args, expected",
    [
        (["search", "echo", "--server", "fixtur"], "unknown server 'fixtur' (did you mean 'fixture'?); see 'toolscript list-servers'"),
        (["search", "echo", "--server", "fixture,zzz"], "unknown server 'zzz'; see 'toolscript list-servers'"),
        (["get-types", "--filter", "fixtur"], "unknown server 'fixtur' (did you mean 'fixture'?); see 'toolscript list-servers'"),
        (["get-types", "--filter", "fixture__ecko"], "unknown tool 'fixture__ecko' (did you mean 'fixture__echo'?); see 'toolscript list-tools fixture'"),
        (["get-types", "--filter", "fixtur__echo"], "unknown server 'fixtur' (did you mean 'fixture'?); see 'toolscript list-servers'"),
        (["list-tools", "fixtur"], "unknown server 'fixtur' (did you mean 'fixture'?); see 'toolscript list-servers'"),
        (["tools", "info", "fixture__ecko"], "unknown tool 'fixture__ecko' (did you mean 'fixture__echo'?); see 'toolscript tools list'"),
        (["tools", "info", "time.nw"], "unknown tool 'time.nw' (did you mean 'time.now'?); see 'toolscript tools list'"),
    ],
)
def test_unknown_names_are_one_line_with_a_suggestion(cli, served, args, expected):
    proc = cli("--gateway-url", served, *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert one_error_line(proc) == f"toolscript: error: {expected}"


@pytest.mark.timeout(60)
def test_known_names_still_work(cli, served):
    assert cli("--gateway-url", served, "search", "echo", "--server", "fixture,builtin").returncode == 0
    types = cli("--gateway-url", served, "get-types", "--filter", "fixture__echo,builtin")
    assert types.returncode == 0 and "def echo(" in types.stdout
    assert cli("--gateway-url", served, "list-tools", "fixture").returncode == 0
    assert cli("--gateway-url", served, "tools", "info", "fixture__echo").returncode == 0


@pytest.mark.timeout(60)
@pytest.mark.parametrize("output", [[], ["--json"]], ids=["text", "json"])
@pytest.mark.parametrize(
    "name, expected",
    [
        ("fixture__ecko", "unknown tool 'fixture__ecko' (did you mean 'fixture__echo'?); see 'toolscript tools list'"),
        ("time.nw", "unknown tool 'time.nw' (did you mean 'time.now'?); see 'toolscript tools list'"),
    ],
)
def test_invoking_an_unknown_tool_is_a_failed_call_with_a_suggestion(cli, served, output, name, expected):
    """Like ``/call`` and ``ask``: the tool_not_found ToolResult (exit 1, as any failed call), not a usage error."""
    proc = cli("--gateway-url", served, *output, "tools", "invoke", name)
    assert proc.returncode == 1 and proc.stderr == "", proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert result["ok"] is False and result["data"] is None
    assert result["error"] == {"code": "tool_not_found", "message": expected}
    assert result["meta"]["tool"] == (name if "__" in name else "builtin__" + name)


def test_unknown_builtin_without_a_gateway_says_only_builtins_are_known(cli):
    proc = cli("tools", "invoke", "time.nw")
    assert proc.returncode == 1, proc.stderr
    error = json.loads(proc.stdout)["error"]
    assert error["code"] == "tool_not_found"
    assert error["message"].startswith("unknown tool 'time.nw' (did you mean 'time.now'?)")
    assert "only built-ins are known" in error["message"]


@pytest.mark.timeout(60)
def test_verbose_prints_progress_without_the_token(cli, served):
    token = served.rsplit("/t/", 1)[1]
    for args in (["search", "echo"], ["get-types", "--filter", "fixture"], ["tools", "invoke", "fixture__echo", "--args", '{"message": "hi"}']):
        quiet = cli("--gateway-url", served, *args)
        assert quiet.returncode == 0 and quiet.stderr == "", (args, quiet.stderr)
        loud = cli("--gateway-url", served, "-v", *args)
        assert loud.returncode == 0, loud.stderr
        assert loud.stdout == quiet.stdout or args[0] == "tools"  # callId and timing differ per call
        assert "/t/****" in loud.stderr and " ms" in loud.stderr, (args, loud.stderr)
        assert token not in loud.stderr


def test_verbose_tools_invoke_without_a_gateway_says_it_runs_in_process(cli):
    proc = cli("-v", "tools", "invoke", "time.now")
    assert proc.returncode == 0
    assert "running builtin__time.now in this process" in proc.stderr and " ms" in proc.stderr


def test_tools_list_columns_align(cli):
    proc = cli("tools", "list")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert len(lines) > 3
    starts = {len(line) - len(line.split(None, 1)[1]) for line in lines}
    assert len(starts) == 1, lines  # every description starts in the same column


def test_list_servers_shows_hidden_tools_when_the_gateway_reports_them(monkeypatch, capsys):
    import argparse
    import importlib

    from toolscript.gateway import client

    class Answers:
        url = "http://127.0.0.1:9/t/x"

        def get(self, path, **params):
            assert path == "/servers"
            return {"servers": [
                {"name": "builtin", "state": "ready", "transport": "builtin", "tools": 7},
                {"name": "f", "state": "ready", "transport": "stdio", "tools": 12, "hidden": {"needs tasks": 1}},
            ], "pending": []}

    monkeypatch.setattr(client, "connect", lambda *a, **k: Answers())
    list_servers = importlib.import_module("toolscript.cli.commands.list_servers")
    assert list_servers.run(argparse.Namespace(json=False, gateway_url=None, session=None)) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[3:5] == ["7", "tools"]
    assert "12 tools (1 hidden: needs tasks)" in lines[1]
