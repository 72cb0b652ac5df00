"""Hardening of the command line (issue 8): what a new user meets when a name is
mistyped, a variable is unset or a file is missing, and the code's own structure.

Commands run as ``python -m toolscript`` subprocesses from an empty directory with an
empty ``HOME``; gateways are served from this process (``running_gateway``).
"""

import json
import logging
import os
import subprocess
import sys

import pytest

import toolscript.cli.frame
from conftest import REPO_ROOT
from mcp_servers.launch import stdio_command
from toolscript.config import load as configuration
from toolscript.config.view import masked_view
from toolscript.cli import doctor
from toolscript.tools import schema as jsonschema
from toolscript.config.load import DEFAULT_MAX_MESSAGE_BYTES, ConfigError, ServerConfig, load_config

# -- helpers -----------------------------------------------------------------------------


@pytest.fixture
def cli(run_cli, clean_env, workdir):
    """``cli(*args, **env_overrides)``: toolscript in the empty workdir with HOME empty."""

    def run(*args, **env):
        return run_cli(*args, env=dict(clean_env, **env), cwd=workdir)

    return run


def write_config(path, document) -> str:
    path.write_text(json.dumps(document), encoding="utf-8")
    return str(path)


def fixture_entry() -> dict:
    command = stdio_command()
    return {"command": command[0], "args": command[1:]}


def one_error_line(proc) -> str:
    """The single line a usage error prints, after checking there is nothing else."""
    assert proc.stdout == "", proc.stdout
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def fixture_server(name: str = "fixture") -> ServerConfig:
    command = stdio_command()
    return ServerConfig(name=name, type="stdio", source="test", command=command[0], args=command[1:])


# -- 11. one unset ${VAR} fails only its server ---------------------------------------------


@pytest.fixture
def github_unset(tmp_path):
    """A config whose "github" server needs ${GITHUB_TOKEN} (unset) next to a working server."""
    return write_config(tmp_path / "c.json", {"mcpServers": {
        "github": {"url": "https://api.example.invalid/mcp", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}},
        "other": fixture_entry(),
    }})


GITHUB_ERROR = "${GITHUB_TOKEN} is not set (export it or remove it from server 'github')"


def test_unset_variable_leaves_the_other_servers_loadable(github_unset):
    config = load_config([github_unset], environ={})
    assert config.servers["github"].config_error == GITHUB_ERROR
    assert config.servers["other"].config_error is None
    assert [s.name for s in config.enabled_servers()] == ["github", "other"]


@pytest.mark.timeout(60)
def test_servers_check_other_works_and_github_names_the_variable(cli, github_unset):
    other = cli("--config", github_unset, "servers", "check", "other")
    assert other.returncode == 0, other.stdout + other.stderr
    assert other.stdout.splitlines()[-1] == "1 of 1 servers connected"

    github = cli("--config", github_unset, "servers", "check", "github", "--json")
    assert github.returncode == 1, github.stdout + github.stderr
    [report] = json.loads(github.stdout)
    assert report["ok"] is False and report["error"] == GITHUB_ERROR

    both = cli("--config", github_unset, "servers", "check")
    assert both.returncode == 1
    assert f"    {GITHUB_ERROR}" in both.stdout.splitlines()
    assert both.stdout.splitlines()[-1] == "1 of 2 servers connected; 1 failed"


def test_config_validate_reports_the_server_that_cannot_start(cli, github_unset):
    proc = cli("--config", github_unset, "config", "validate")
    assert proc.returncode == 1
    assert f"error: {github_unset}: {GITHUB_ERROR}" in proc.stdout.splitlines()
    as_json = json.loads(cli("--config", github_unset, "config", "validate", "--json").stdout)
    assert as_json["ok"] is False and as_json["problems"] == [f"{github_unset}: {GITHUB_ERROR}"]
    # Exported, the same file is fine.
    assert cli("--config", github_unset, "config", "validate", GITHUB_TOKEN="t").returncode == 0


def test_config_show_says_why_a_server_cannot_start(cli, github_unset):
    proc = cli("--config", github_unset, "config", "show")
    assert proc.returncode == 0
    assert f"    cannot start: {GITHUB_ERROR}" in proc.stdout.splitlines()
    view = json.loads(cli("--config", github_unset, "config", "show", "--json").stdout)
    assert view["servers"]["github"]["error"] == GITHUB_ERROR and "error" not in view["servers"]["other"]


def test_a_disabled_server_with_an_unset_variable_does_not_fail_validation(cli, tmp_path):
    path = write_config(tmp_path / "c.json", {"mcpServers": {"off": {"command": "${NOPE}", "disabled": True}}})
    assert cli("--config", path, "config", "validate").returncode == 0


def test_doctor_fails_only_the_server_with_the_unset_variable(github_unset, tmp_path):
    results = doctor.run_checks(config_paths=[github_unset], environ={"HOME": str(tmp_path), "PATH": "", "TOOLSCRIPT_STATE_DIR": str(tmp_path / "s")}, cwd=str(tmp_path))
    lines = {r.check: r for r in results}
    assert lines["config"].status == "ok"
    assert lines["server:github"].status == "fail" and lines["server:github"].detail == f"http: {GITHUB_ERROR}"
    assert lines["server:other"].status == "ok"


def test_doctor_reports_the_unset_variable_without_connecting_too(github_unset, tmp_path):
    env = {"HOME": str(tmp_path), "PATH": "", "TOOLSCRIPT_STATE_DIR": str(tmp_path / "s")}
    results = doctor.run_checks(config_paths=[github_unset], servers=False, environ=env, cwd=str(tmp_path))
    lines = {r.check: r for r in results}
    assert lines["server:github"].status == "fail" and GITHUB_ERROR in lines["server:github"].detail
    assert "export the variable named" in lines["server:github"].fix
    assert lines["servers"].detail == "not checked (--no-servers)" and "server:other" not in lines


# -- 11. maxMessageBytes ---------------------------------------------------------------------


def test_max_message_bytes_per_server_and_as_the_top_level_default(tmp_path):
    path = write_config(tmp_path / "c.json", {
        "maxMessageBytes": 1000,
        "mcpServers": {"a": {"command": "x"}, "b": {"command": "x", "maxMessageBytes": 2000}},
    })
    config = load_config([path], environ={})
    assert (config.servers["a"].max_message_bytes, config.servers["b"].max_message_bytes) == (1000, 2000)
    assert masked_view(config)["maxMessageBytes"] == 1000
    plain = write_config(tmp_path / "d.json", {"mcpServers": {"a": {"command": "x"}}})
    assert load_config([plain], environ={}).servers["a"].max_message_bytes == DEFAULT_MAX_MESSAGE_BYTES


def test_the_top_level_default_applies_to_servers_of_every_file(tmp_path):
    servers = write_config(tmp_path / "a.json", {"mcpServers": {"a": {"command": "x"}}})
    settings = write_config(tmp_path / "b.json", {"maxMessageBytes": 4096})
    assert load_config([servers, settings], environ={}).servers["a"].max_message_bytes == 4096


@pytest.mark.parametrize("value", [0, -1, 1.5, "8MB", True, None])
def test_bad_max_message_bytes_is_a_clear_problem(tmp_path, value):
    path = write_config(tmp_path / "c.json", {"mcpServers": {"a": {"command": "x", "maxMessageBytes": value}}})
    with pytest.raises(ConfigError) as err:
        load_config([path], environ={})
    assert err.value.problems == [
        f"{path}: mcpServers.a.maxMessageBytes: expected a positive whole number of bytes, got {json.dumps(value)} "
        f"(the default is {DEFAULT_MAX_MESSAGE_BYTES}, 8 MiB)"
    ]
    top = write_config(tmp_path / "t.json", {"maxMessageBytes": value})
    with pytest.raises(ConfigError) as err:
        load_config([top], environ={})
    assert err.value.problems[0].startswith(f"{top}: maxMessageBytes: expected a positive whole number of bytes")


def test_max_message_bytes_is_a_known_key(tmp_path):
    path = write_config(tmp_path / "c.json", {"maxMessageBytes": 10, "mcpServers": {"a": {"command": "x", "maxMessageBytes": 10}}})
    assert load_config([path], environ={}).warnings == []


# -- 13. unknown names: exit 2, one line, did-you-mean, the command that lists them ----------


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
        (["tools", "invoke", "fixture__ecko"], "unknown tool 'fixture__ecko' (did you mean 'fixture__echo'?); see 'toolscript tools list'"),
        (["tools", "invoke", "time.nw"], "unknown tool 'time.nw' (did you mean 'time.now'?); see 'toolscript tools list'"),
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


def test_unknown_builtin_without_a_gateway_says_only_builtins_are_known(cli):
    proc = cli("tools", "invoke", "time.nw")
    assert proc.returncode == 2
    line = one_error_line(proc)
    assert line.startswith("toolscript: error: unknown tool 'time.nw' (did you mean 'time.now'?)")
    assert "only built-ins are known" in line


# -- 14. mistyped commands, -v, --config, tools list, servers check stderr ------------------


@pytest.mark.parametrize(
    "args, expected",
    [
        (["serch", "x"], "toolscript: unknown command 'serch' (did you mean 'search'?); see 'toolscript --help'"),
        (["--json", "get-type"], "toolscript: unknown command 'get-type' (did you mean 'get-types'?); see 'toolscript --help'"),
        (["zzzzzz"], "toolscript: unknown command 'zzzzzz'; see 'toolscript --help'"),
        (["gateway", "strat"], "toolscript: unknown action 'strat' for 'toolscript gateway' (did you mean 'start'?); see 'toolscript gateway --help'"),
        (["config", "valdate"], "toolscript: unknown action 'valdate' for 'toolscript config' (did you mean 'validate'?); see 'toolscript config --help'"),
    ],
)
def test_mistyped_command_is_one_line_with_a_suggestion(cli, args, expected):
    proc = cli(*args)
    assert proc.returncode == 2
    assert one_error_line(proc) == expected


def test_other_usage_errors_keep_the_usage(cli):
    proc = cli("exec", "--lang", "rust", "x")
    assert proc.returncode == 2 and "usage:" in proc.stderr and "invalid choice: 'rust'" in proc.stderr


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


def test_a_named_config_file_that_does_not_exist_is_an_error(cli, tmp_path):
    missing = tmp_path / "no" / "such.json"
    proc = cli("--config", str(missing), "config", "validate")
    assert proc.returncode == 1
    assert f"error: config file not found: {missing}" in proc.stdout
    # The same through the environment, and for commands that load the config.
    assert cli("config", "validate", TOOLSCRIPT_CONFIG=str(missing)).returncode == 1
    show = cli("--config", str(missing), "config", "show")
    assert show.returncode == 1 and "config file not found" in show.stderr
    # Default files that do not exist are still fine.
    assert cli("config", "validate").returncode == 0


def test_tools_list_columns_align(cli):
    proc = cli("tools", "list")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert len(lines) > 3
    starts = {len(line) - len(line.split(None, 1)[1]) for line in lines}
    assert len(starts) == 1, lines  # every description starts in the same column


@pytest.mark.timeout(60)
def test_servers_check_prints_a_crashing_servers_stderr_once(cli, tmp_path):
    dies = "import sys; sys.stderr.write('first line\\nboom: no key\\n'); sys.exit(4)"
    path = write_config(tmp_path / "c.json", {"mcpServers": {"dies": {"command": sys.executable, "args": ["-c", dies]}}})
    proc = cli("--config", path, "servers", "check")
    assert proc.returncode == 1
    assert proc.stdout.count("boom: no key") == 1, proc.stdout
    assert "    | first line" in proc.stdout and "    | boom: no key" in proc.stdout
    assert "exited with status 4" in proc.stdout


# -- 12. tool counts explain the hidden tools ------------------------------------------------


@pytest.mark.timeout(60)
def test_servers_check_and_doctor_say_how_many_tools_are_hidden(cli, tmp_path):
    entry = dict(fixture_entry(), excludeTools=["crash", "hang"])
    path = write_config(tmp_path / "c.json", {"mcpServers": {"f": entry}})
    proc = cli("--config", path, "servers", "check")
    assert proc.returncode == 0
    assert "12 tools (2 hidden: includeTools/excludeTools)" in proc.stdout
    results = doctor.run_checks(config_paths=[path], environ={"HOME": str(tmp_path), "PATH": "", "TOOLSCRIPT_STATE_DIR": str(tmp_path / "s")}, cwd=str(tmp_path))
    line = [r for r in results if r.check == "server:f"][0]
    assert "12 tools (2 hidden: includeTools/excludeTools)" in line.detail


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


# -- 15. backwards edges: shared argparse helpers live outside cli -----------------------------


def test_commands_get_add_action_from_cliargs_not_cli():
    assert not hasattr(toolscript.cli.frame, "add_action")
    from toolscript.cli import args as cliargs

    assert callable(cliargs.add_action)


# -- 17. doctor reuses the gateway client's URL lookup, redaction and typed errors ------------


def test_doctor_has_no_copies_of_the_client_helpers():
    for name in ("redact_token", "_state_file_url"):
        assert not hasattr(doctor, name), name
    from toolscript import paths

    assert doctor.state_dir_path is paths.state_dir_path


def test_doctor_finds_the_gateway_as_the_other_commands_do(monkeypatch, tmp_path):
    """doctor asks client.find_url, so a fix there (e.g. --session over the environment) holds here too."""
    from toolscript.gateway import client

    asked = []

    def fake_find_url(explicit=None, session=None, environ=None):
        asked.append((explicit, session))
        return None

    monkeypatch.setattr(client, "find_url", fake_find_url)
    env = {"HOME": str(tmp_path), "TOOLSCRIPT_GATEWAY_URL": "http://127.0.0.1:9/t/secret"}
    line = doctor.check_gateway(None, "s1", env)
    assert asked == [(None, "s1")]
    assert line.status == "warn" and "no gateway is running for session 's1'" in line.detail


def test_doctor_catches_the_typed_token_error(monkeypatch):
    from toolscript.gateway import client

    def rejected(self, path, **params):
        raise client.TokenRejected("some wording that does not matter")

    monkeypatch.setattr(client.GatewayClient, "get", rejected)
    line = doctor.check_gateway("http://127.0.0.1:9/t/secret-token", None, {})
    assert line.status == "fail" and "refused the token" in line.detail
    assert "secret-token" not in line.detail


# -- 19. dead code is gone --------------------------------------------------------------------


def test_dead_code_is_not_shipped():
    assert not hasattr(jsonschema, "check_schema") and not hasattr(jsonschema, "first_error")
    assert not hasattr(configuration, "parse_config_text")
    assert jsonschema.__all__ == ["validate"]


def test_the_process_ends_with_the_commands_code_and_all_its_output(tmp_path):
    """exit_main skips interpreter teardown (~25 ms): nothing printed may be lost, the code must stay."""
    script = "import sys; sys.stdout.write('x' * 300000); sys.stderr.write('done'); sys.exit(3)"
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    proc = subprocess.run([sys.executable, "-m", "toolscript", "exec", "--max-output", "1000000", script],
                          capture_output=True, text=True, timeout=60, cwd=str(tmp_path), env=env)
    assert proc.returncode == 3 and proc.stdout == "x" * 300000 and proc.stderr.endswith("done"), proc.stderr[-300:]
