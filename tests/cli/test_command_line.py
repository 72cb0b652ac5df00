"""The ``toolscript`` command line as a user meets it: help, exit codes, global
options, one-line errors, masked secrets, ``servers check`` failure reports,
stdout kept clean for JSON.  Everything runs ``python -m toolscript`` in a
subprocess from an empty directory with an empty ``HOME``.
"""

import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
from typing import Dict, List

import pytest

import toolscript.cli.frame
from cli_checks import GITHUB_ERROR, github_unset_config, one_error_line, stdio_fixture_entry, write_document
from conftest import DEFAULT_TIMEOUT, REPO_ROOT, find_python39, trust_project_file
from toolscript.cli import doctor

COMMAND_NAMES = list(toolscript.cli.frame.COMMANDS)
# A server that dies at once with a message on stderr, like one missing its API key.
DIES_SCRIPT = "import sys; sys.stderr.write('boom: no key\\n'); sys.exit(4)"
MISSING_COMMAND = "/nonexistent/toolscript-test/definitely-not-a-command"


def python3_command() -> str:
    """``python3`` as a config would name it, if PATH has one; else this interpreter."""
    return "python3" if shutil.which("python3") else sys.executable


def write_config(path, servers: Dict[str, dict]) -> str:
    path.write_text(json.dumps({"mcpServers": servers}, indent=2), encoding="utf-8")
    return str(path)


@pytest.fixture
def cli(run_cli, clean_env, workdir):
    """``cli(*args, **env_overrides)``: run toolscript in the empty workdir with HOME empty."""

    def run(*args, **env):
        return run_cli(*args, env=dict(clean_env, **env), cwd=workdir)

    return run


def error_lines(stderr: str) -> List[str]:
    return [line for line in stderr.splitlines() if line.strip()]


# --- help and usage errors -------------------------------------------------------


def test_no_arguments_prints_help_on_stderr_and_exits_2(cli):
    proc = cli()
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "usage: toolscript" in proc.stderr
    for name, (_module, summary) in toolscript.cli.frame.COMMANDS.items():
        assert name in proc.stderr and summary in proc.stderr


def _has_actions(name: str) -> bool:
    parser = toolscript.cli.frame.build_parser([name])
    command = toolscript.cli.frame._subparser(parser, name)
    return any(isinstance(a, argparse._SubParsersAction) for a in command._actions)


@pytest.mark.parametrize("name", [n for n in COMMAND_NAMES if _has_actions(n)])
def test_command_without_action_prints_its_help_and_exits_2(cli, name):
    proc = cli(name)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == ""
    assert f"usage: toolscript {name}" in proc.stderr


def test_unknown_command_is_a_usage_error(cli):
    proc = cli("frobnicate")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == "toolscript: unknown command 'frobnicate'; see 'toolscript --help'\n"
    assert "--help" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unknown_option_is_a_usage_error(cli):
    proc = cli("config", "validate", "--no-such-option")
    assert proc.returncode == 2
    assert "--no-such-option" in proc.stderr
    assert "Traceback" not in proc.stderr


def sub_actions(parser: argparse.ArgumentParser, prefix: List[str]) -> List[List[str]]:
    """Every command path below ``parser`` (``[["config", "show"], ...]``), from its subparsers."""
    paths = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                paths.append(prefix + [name])
                paths += sub_actions(child, prefix + [name])
    return paths


def test_top_level_help_has_examples(cli):
    proc = cli("--help")
    assert proc.returncode == 0, proc.stderr
    assert "examples:" in proc.stdout
    for name in COMMAND_NAMES:
        assert name in proc.stdout


@pytest.mark.parametrize("name", COMMAND_NAMES)
def test_every_command_and_action_help_has_examples(cli, name):
    # build_parser([name]) loads only that command's arguments, as the real CLI does.
    parser = toolscript.cli.frame.build_parser([name])
    paths = [p for p in sub_actions(parser, []) if p[0] == name]
    assert [name] in paths
    for path in paths:
        proc = cli(*path, "--help")
        where = "toolscript " + " ".join(path) + " --help"
        assert proc.returncode == 0, f"{where}: exit {proc.returncode}\n{proc.stderr}"
        assert "examples:" in proc.stdout, f"{where} has no examples:\n{proc.stdout}"
        assert f"usage: toolscript {' '.join(path)}" in proc.stdout


def test_version(cli):
    proc = cli("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"toolscript {toolscript.__version__}"


# --- global options -------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [["--json", "config", "validate"], ["config", "validate", "--json"], ["config", "--json", "validate"]],
    ids=["before", "after", "between"],
)
def test_json_before_or_after_the_command(cli, args):
    proc = cli(*args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    assert data["ok"] is True
    assert data["servers"] == 0


@pytest.fixture
def one_server_config(tmp_path, clean_env, workdir):
    """A config naming server "solo", plus default files (HOME and cwd) that must NOT be read."""
    write_config(pathlib.Path(clean_env["HOME"]) / ".toolscript.json", {"from_home": {"command": "home-cmd"}})
    write_config(pathlib.Path(workdir) / ".toolscript.json", {"from_cwd": {"command": "cwd-cmd"}})
    return write_config(tmp_path / "that.json", {"solo": {"command": "python3", "args": ["-c", "pass"]}})


def test_default_files_are_read_without_config_option(cli, one_server_config, clean_env, workdir):
    """Control for the two tests below: without --config both default files count (the project's once approved)."""
    proc = cli("config", "show", "--json")
    assert proc.returncode == 0, proc.stderr
    assert list(json.loads(proc.stdout)["servers"]) == ["from_home"]
    assert [file["servers"] for file in json.loads(proc.stdout)["untrusted"]] == [["from_cwd"]]
    trust_project_file(os.path.join(workdir, ".toolscript.json"), clean_env)
    proc = cli("config", "show", "--json")
    assert list(json.loads(proc.stdout)["servers"]) == ["from_home", "from_cwd"]


@pytest.mark.parametrize("position", ["before", "after"])
def test_config_option_replaces_default_files(cli, one_server_config, position):
    args = ["config", "show", "--json"]
    args = ["--config", one_server_config] + args if position == "before" else args + ["--config", one_server_config]
    proc = cli(*args)
    assert proc.returncode == 0, proc.stderr
    view = json.loads(proc.stdout)
    assert list(view["servers"]) == ["solo"]
    assert view["files"] == [one_server_config]
    assert view["servers"]["solo"]["command"] == "python3"


def test_toolscript_config_env_replaces_default_files(cli, one_server_config):
    proc = cli("config", "show", "--json", TOOLSCRIPT_CONFIG=one_server_config)
    assert proc.returncode == 0, proc.stderr
    view = json.loads(proc.stdout)
    assert list(view["servers"]) == ["solo"]
    assert view["files"] == [one_server_config]


# --- errors are one line ---------------------------------------------------------


@pytest.fixture
def malformed_config(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"mcpServers": {\n  "a": {"command": "x",}\n}}\n', encoding="utf-8")
    return str(path)


def test_malformed_config_is_one_line_error(cli, malformed_config):
    proc = cli("--config", malformed_config, "servers", "check")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("toolscript: error: ")
    assert re.search(re.escape(malformed_config) + r":2:\d+: ", lines[0]), lines[0]
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_debug_adds_the_traceback(cli, malformed_config):
    proc = cli("--config", malformed_config, "servers", "check", DEBUG="1")
    assert proc.returncode == 1
    assert proc.stderr.startswith("toolscript: error: "), proc.stderr
    assert "Traceback" in proc.stderr


@pytest.fixture
def two_problem_config(tmp_path):
    return write_config(tmp_path / "two.json", {"a": {"command": 5}, "b": {"url": "ftp://example.com/x"}})


def test_validate_lists_every_problem(cli, two_problem_config):
    proc = cli("--config", two_problem_config, "config", "validate")
    assert proc.returncode == 1
    out = proc.stdout + proc.stderr
    assert "mcpServers.a.command" in out
    assert "mcpServers.b.url" in out
    assert "Traceback" not in out


def test_validate_json_lists_every_problem(cli, two_problem_config):
    proc = cli("--config", two_problem_config, "config", "validate", "--json")
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert data["ok"] is False
    assert len(data["problems"]) == 2, data
    assert any("mcpServers.a.command" in p for p in data["problems"])
    assert any("mcpServers.b.url" in p for p in data["problems"])


# --- secrets ---------------------------------------------------------------------------


@pytest.fixture
def secret_config(tmp_path):
    return write_config(
        tmp_path / "secret.json",
        {
            "remote": {
                "type": "http",
                "url": "https://example.com/mcp",
                "headers": {"Authorization": "Bearer s3cret", "X-Api-Key": "${TS_TEST_TOKEN}"},
            },
            "local": {"command": "python3", "args": ["-c", "pass"], "env": {"API_KEY": "s3cret", "REGION": "${TS_TEST_TOKEN}"}},
        },
    )


@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
def test_config_show_masks_literal_secrets(cli, secret_config, json_flag):
    proc = cli("--config", secret_config, "config", "show", *json_flag, TS_TEST_TOKEN="expanded-t0ken")
    assert proc.returncode == 0, proc.stderr
    if json_flag:
        view = json.loads(proc.stdout)
        assert view["servers"]["remote"]["headers"]["X-Api-Key"] == "${TS_TEST_TOKEN}"
    for stream in (proc.stdout, proc.stderr):
        assert "s3cret" not in stream
        assert "expanded-t0ken" not in stream  # the template is shown, not its value
    assert "${TS_TEST_TOKEN}" in proc.stdout
    assert "Authorization" in proc.stdout  # the header is listed, only its value hidden


# --- servers check -------------------------------------------------------------------


def test_servers_check_without_servers_explains_how_to_add_one(cli):
    proc = cli("servers", "check")
    assert proc.returncode == 0, proc.stderr
    assert "no mcp servers configured" in proc.stdout.lower()
    assert ".toolscript.json" in proc.stdout
    assert "mcpServers" in proc.stdout


def test_servers_check_without_servers_json_is_empty_list(cli):
    proc = cli("servers", "check", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


def test_servers_check_unknown_name_suggests_a_configured_name(cli, tmp_path):
    config = write_config(tmp_path / "c.json", {"alpha": {"command": MISSING_COMMAND}, "beta": {"command": MISSING_COMMAND}})
    proc = cli("--config", config, "servers", "check", "alpah")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = error_lines(proc.stderr)
    assert lines == ["toolscript: error: unknown server 'alpah' (did you mean 'alpha'?); see 'toolscript config show'"], proc.stderr
    assert "FAIL" not in proc.stdout  # nothing was checked


@pytest.fixture
def failing_config(tmp_path):
    return write_config(
        tmp_path / "failing.json",
        {
            "missing": {"command": MISSING_COMMAND},
            "dies": {"command": python3_command(), "args": ["-c", DIES_SCRIPT]},
        },
    )


def test_servers_check_command_not_found(cli, failing_config):
    proc = cli("--config", failing_config, "servers", "check", "missing")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAIL" in proc.stdout
    assert "command not found" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


def test_servers_check_reports_exit_status_and_stderr(cli, failing_config):
    proc = cli("--config", failing_config, "servers", "check", "dies")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout + proc.stderr
    assert "FAIL" in proc.stdout
    assert "exited with status 4" in out
    assert "boom: no key" in out


def test_servers_check_all_reports_each_failure(cli, failing_config):
    proc = cli("--config", failing_config, "servers", "check", "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    reports = {r["name"]: r for r in json.loads(proc.stdout)}
    assert set(reports) == {"missing", "dies"}
    assert not reports["missing"]["ok"] and "command not found" in reports["missing"]["error"]
    assert not reports["dies"]["ok"] and "exited with status 4" in reports["dies"]["error"]


@pytest.mark.parametrize("how", ["DEBUG=1", "-v", "-vv"])
def test_diagnostics_never_reach_stdout(cli, failing_config, how):
    args, env = ["--config", failing_config, "servers", "check", "dies", "--json"], {}
    if how == "DEBUG=1":
        env["DEBUG"] = "1"
    else:
        args.append(how)
    proc = cli(*args, **env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    reports = json.loads(proc.stdout)  # stdout is only the JSON
    assert [r["name"] for r in reports] == ["dies"]
    assert "boom: no key" in reports[0]["error"]
    if how != "-v":
        assert "DEBUG" in proc.stderr, "debug diagnostics should appear on stderr"


# --- broken pipe ----------------------------------------------------------------------


def run_with_closed_stdout(
    args: List[str], env: Dict[str, str], cwd: str, read_first_line: bool = False, python: str = sys.executable
):
    """Run toolscript with stdout a pipe whose reader goes away (at once, or after one line)."""
    proc = subprocess.Popen(
        [python, "-m", "toolscript", *args],
        env=dict(env, PYTHONPATH=REPO_ROOT), cwd=cwd,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        if read_first_line:
            proc.stdout.readline()
        proc.stdout.close()  # like `| head -1` exiting
        stderr = proc.stderr.read()
        code = proc.wait(timeout=DEFAULT_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    return code, stderr.decode("utf-8", "replace")


@pytest.mark.parametrize(
    "args",
    [["--help"], ["--version"], ["config", "show", "--json"], ["config", "validate"], ["servers", "check", "--json"]],
    ids=lambda a: " ".join(a),
)
def test_closed_stdout_is_quiet(clean_env, workdir, args):
    code, stderr = run_with_closed_stdout(args, clean_env, workdir)
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr and "Exception ignored" not in stderr, stderr
    assert code == 0, stderr


def test_large_output_into_head_is_quiet(tmp_path, clean_env, workdir):
    """More output than a pipe holds, reader gone after one line: no traceback, exit 0."""
    servers = {f"server{i:04d}": {"command": "python3", "args": ["-c", "pass", "x" * 40]} for i in range(1500)}
    config = write_config(tmp_path / "many.json", servers)
    code, stderr = run_with_closed_stdout(["--config", config, "config", "show"], clean_env, workdir, read_first_line=True)
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr and "Exception ignored" not in stderr, stderr
    assert code == 0, stderr


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["config", "validate"]], ids=lambda a: " ".join(a))
def test_closed_stdout_is_quiet_on_python39(clean_env, workdir, args):
    """Python 3.9/3.10 argparse does not swallow the BrokenPipeError of --help/--version itself."""
    code, stderr = run_with_closed_stdout(args, clean_env, workdir, python=find_python39())
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr and "Exception ignored" not in stderr, stderr
    assert code == 0, stderr


# --- a server whose ${VAR} is unset fails alone -----------------------------------------


@pytest.fixture
def github_unset(tmp_path):
    """A config whose "github" server needs ${GITHUB_TOKEN} (unset) next to a working server."""
    return github_unset_config(tmp_path)


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
    path = write_document(tmp_path / "c.json", {"mcpServers": {"off": {"command": "${NOPE}", "disabled": True}}})
    assert cli("--config", path, "config", "validate").returncode == 0


# --- mistyped commands, missing files, servers check reports --------------------------------


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


@pytest.mark.timeout(60)
def test_servers_check_prints_a_crashing_servers_stderr_once(cli, tmp_path):
    dies = "import sys; sys.stderr.write('first line\\nboom: no key\\n'); sys.exit(4)"
    path = write_document(tmp_path / "c.json", {"mcpServers": {"dies": {"command": sys.executable, "args": ["-c", dies]}}})
    proc = cli("--config", path, "servers", "check")
    assert proc.returncode == 1
    assert proc.stdout.count("boom: no key") == 1, proc.stdout
    assert "    | first line" in proc.stdout and "    | boom: no key" in proc.stdout
    assert "exited with status 4" in proc.stdout


@pytest.mark.timeout(60)
def test_servers_check_and_doctor_say_how_many_tools_are_hidden(cli, tmp_path):
    entry = dict(stdio_fixture_entry(), excludeTools=["crash", "hang"])
    path = write_document(tmp_path / "c.json", {"mcpServers": {"f": entry}})
    proc = cli("--config", path, "servers", "check")
    assert proc.returncode == 0
    assert "12 tools (2 hidden: includeTools/excludeTools)" in proc.stdout
    results = doctor.run_checks(config_paths=[path], environ={"HOME": str(tmp_path), "PATH": "", "TOOLSCRIPT_STATE_DIR": str(tmp_path / "s")}, cwd=str(tmp_path))
    line = [r for r in results if r.check == "server:f"][0]
    assert "12 tools (2 hidden: includeTools/excludeTools)" in line.detail


def test_commands_get_add_action_from_cliargs_not_cli():
    assert not hasattr(toolscript.cli.frame, "add_action")
    from toolscript.cli import args as cliargs

    assert callable(cliargs.add_action)


def test_the_process_ends_with_the_commands_code_and_all_its_output(tmp_path):
    """exit_main skips interpreter teardown (~25 ms): nothing printed may be lost, the code must stay."""
    script = "import sys; sys.stdout.write('x' * 300000); sys.stderr.write('done'); sys.exit(3)"
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    proc = subprocess.run([sys.executable, "-m", "toolscript", "exec", "--max-output", "1000000", script],
                          capture_output=True, text=True, timeout=60, cwd=str(tmp_path), env=env)
    assert proc.returncode == 3 and proc.stdout == "x" * 300000 and proc.stderr.endswith("done"), proc.stderr[-300:]
