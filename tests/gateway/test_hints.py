"""A stdio server that says it lacks a variable: every report of it names the ``env`` line to add.

toolscript passes a stdio server only a few variables of its environment plus
the entry's ``env``.  The server here (``NEEDY``) exits 1 with a message
naming its variable unless it has it, and is the fixture server when it does;
it runs through ``servers check``, ``doctor`` and a gateway with the variable
set in the caller's environment (then the fix is the ``env`` line) and unset
(then: export it first).  Following the fix makes the same check pass.
"""

import json
import os
import sys

import pytest

from conftest import running_gateway, run_cli, wait_for
from mcp_servers.launch import FIXTURE
from toolscript.cli import doctor
from toolscript.config.load import ServerConfig
from toolscript.gateway import hints

NEEDY = """\
import os, sys
name, message = sys.argv[1], sys.argv[2]
if not os.environ.get(name):
    sys.stderr.write("starting up\\n" + message + "\\n")
    sys.exit(1)
os.execv(sys.executable, [sys.executable, {fixture!r}, "stdio"])
"""

# The phrasings servers use, each with the variable it names.
MESSAGES = [
    ("BRAVE_API_KEY", "BRAVE_API_KEY environment variable is required"),
    ("FOO", "Error: Missing FOO"),
    ("ACME_TOKEN", "ACME_TOKEN is not set"),
    ("GITHUB_PERSONAL_ACCESS_TOKEN", "Please set GITHUB_PERSONAL_ACCESS_TOKEN to a token with repo scope"),
]


def needy_entry(tmp_path, name, message, **extra):
    script = tmp_path / "needy_server.py"
    script.write_text(NEEDY.format(fixture=FIXTURE))
    return dict({"command": sys.executable, "args": [str(script), name, message]}, **extra)


def write_user_config(home, servers):
    path = os.path.join(home, ".toolscript.json")
    with open(path, "w") as f:
        json.dump({"mcpServers": servers}, f)
    return path


@pytest.fixture
def cli_env(clean_env, tmp_path):
    """The CLI's environment: an empty HOME (the user config goes there), TMPDIR our own."""
    return dict(clean_env, TMPDIR=str(tmp_path))


@pytest.mark.parametrize("name,message", MESSAGES, ids=[m[0] for m in MESSAGES])
def test_servers_check_names_the_env_line_for_a_variable_set_here(tmp_path, cli_env, name, message):
    write_user_config(cli_env["HOME"], {"needy": needy_entry(tmp_path, name, message)})
    env = dict(cli_env, **{name: "secret-value"})
    proc = run_cli("servers", "check", env=env, cwd=str(tmp_path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    line = f'add "env": {{"{name}": "${{{name}}}"}} to server "needy" in ~/.toolscript.json'
    assert line in proc.stdout and f"{name} is set in your environment but not passed" in proc.stdout, proc.stdout
    assert "secret-value" not in proc.stdout + proc.stderr
    report = json.loads(run_cli("--json", "servers", "check", env=env, cwd=str(tmp_path)).stdout)[0]
    assert report["fix"].endswith(line) and report["error"].endswith(report["fix"])
    # Doing what it says fixes it.
    write_user_config(cli_env["HOME"], {"needy": needy_entry(tmp_path, name, message, env={name: "${" + name + "}"})})
    fixed = run_cli("servers", "check", env=env, cwd=str(tmp_path))
    assert fixed.returncode == 0 and "1 of 1 servers connected" in fixed.stdout, fixed.stdout + fixed.stderr


def test_a_variable_set_nowhere_is_to_be_exported_first(tmp_path, cli_env):
    write_user_config(cli_env["HOME"], {"brave": needy_entry(tmp_path, "BRAVE_API_KEY", "BRAVE_API_KEY environment variable is required")})
    env = {k: v for k, v in cli_env.items() if k != "BRAVE_API_KEY"}
    proc = run_cli("servers", "check", env=env, cwd=str(tmp_path))
    assert proc.returncode == 1
    assert ('BRAVE_API_KEY is not set: export BRAVE_API_KEY=..., then add "env": {"BRAVE_API_KEY": "${BRAVE_API_KEY}"} '
            'to server "brave" in ~/.toolscript.json') in proc.stdout, proc.stdout


def test_an_entry_with_an_env_gets_the_key_to_add_to_it(tmp_path, cli_env):
    entry = needy_entry(tmp_path, "BRAVE_API_KEY", "BRAVE_API_KEY environment variable is required", env={"LOG_LEVEL": "debug"})
    write_user_config(cli_env["HOME"], {"brave": entry})
    proc = run_cli("servers", "check", env=dict(cli_env, BRAVE_API_KEY="k"), cwd=str(tmp_path))
    assert 'add "BRAVE_API_KEY": "${BRAVE_API_KEY}" to the "env" of server "brave" in ~/.toolscript.json' in proc.stdout, proc.stdout


def test_doctor_gives_the_env_line_as_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("BRAVE_API_KEY", "k")
    path = write_user_config(str(tmp_path), {"brave": needy_entry(tmp_path, "BRAVE_API_KEY", "BRAVE_API_KEY environment variable is required")})
    (check,) = doctor.check_servers(doctor._load_config([path], str(tmp_path), dict(os.environ)))
    assert check.status == doctor.FAIL and "BRAVE_API_KEY environment variable is required" in check.detail
    assert check.fix.startswith('BRAVE_API_KEY is set in your environment but not passed to stdio servers: '
                                'add "env": {"BRAVE_API_KEY": "${BRAVE_API_KEY}"} to server "brave" in ~/.toolscript.json')
    assert "add \"env\"" not in check.detail  # said once, as the fix
    assert check.fix.endswith("servers check brave")  # then the check that shows it worked


def test_the_gateway_reports_carry_the_env_line(tmp_path, monkeypatch, clean_env):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("BRAVE_API_KEY", "k")
    entry = needy_entry(tmp_path, "BRAVE_API_KEY", "BRAVE_API_KEY environment variable is required")
    server = ServerConfig(name="brave", type="stdio", source=str(tmp_path / ".toolscript.json"),
                          command=entry["command"], args=entry["args"], raw=entry)
    line = 'add "env": {"BRAVE_API_KEY": "${BRAVE_API_KEY}"} to server "brave" in ~/.toolscript.json'
    with running_gateway([server], tmp_path) as (gw, url):
        def failed_with_hint():
            (info,) = [s for s in gw.servers(wait=False)["servers"] if s["name"] == "brave"]
            return info if info["state"] == "failed" and line in info.get("error", "") else None

        assert wait_for(failed_with_hint, timeout=20), gw.servers(wait=False)
        env = dict(clean_env, HOME=str(tmp_path))
        listed = run_cli("--gateway-url", url, "list-servers", env=env, cwd=str(tmp_path))
        assert line in listed.stdout, listed.stdout + listed.stderr
        status = run_cli("--gateway-url", url, "gateway", "status", env=env, cwd=str(tmp_path))
        assert status.returncode == 1 and line in status.stdout, status.stdout + status.stderr


# -- what counts as naming a missing variable ---------------------------------------------------


@pytest.mark.parametrize("said,names", [
    ("BRAVE_API_KEY environment variable is required", ["BRAVE_API_KEY"]),
    ("Error: Missing FOO", ["FOO"]),
    ("FOO is not set", ["FOO"]),
    ("please set FOO and BAR_KEY", ["FOO"]),
    ("Missing required environment variable: NOTION_TOKEN", ["NOTION_TOKEN"]),
    ("Error: the `SLACK_BOT_TOKEN` env var must be set", ["SLACK_BOT_TOKEN"]),
    ("KeyError: 'OPENAI_API_KEY'", ["OPENAI_API_KEY"]),
    ("TypeError: cannot read process.env.DB_URL", ["DB_URL"]),
    ("ERROR: connection refused", []),
    ("HTTP 500 from the API", []),
    ("Usage: server [--port N]", []),
])
def test_asked_variables_reads_the_usual_phrasings(said, names):
    assert [name for name, _ in hints.asked_variables(said)] == names


def stdio_server(**fields):
    return ServerConfig(**dict({"name": "s", "type": "stdio", "source": "/etc/toolscript.json", "command": "x"}, **fields))


def test_no_hint_for_a_variable_the_server_was_given_or_for_remote_servers():
    environ = {"API_TOKEN": "t", "PATH": "/bin"}
    assert hints.missing_variable_hint(stdio_server(env={"API_TOKEN": "t"}), "API_TOKEN is not set", environ) is None
    assert hints.missing_variable_hint(stdio_server(type="http", command=None, url="https://x"), "API_TOKEN is not set", environ) is None
    assert hints.missing_variable_hint(stdio_server(), "connection refused", environ) is None
    # An inherited variable (PATH) is passed already; a made-up upper-case word with no "env" near it is not taken.
    assert hints.missing_variable_hint(stdio_server(), "PATH is not set", environ) is None
    assert hints.missing_variable_hint(stdio_server(), "Missing CONFIG", {}) is None
    assert "export CONFIG=..." in hints.missing_variable_hint(stdio_server(), "Missing environment variable CONFIG", {})


def test_with_hint_appends_once():
    server = stdio_server(name="brave")
    error = "the server exited with status 1; stderr: BRAVE_API_KEY environment variable is required"
    hinted = hints.with_hint(server, error, "", {"BRAVE_API_KEY": "k"})
    assert hinted.startswith(error + "; BRAVE_API_KEY is set in your environment") and 'to server "brave" in /etc/toolscript.json' in hinted
    assert hints.with_hint(server, hinted, "", {"BRAVE_API_KEY": "k"}) == hinted
    assert hints.with_hint(server, "connection refused", "", {}) == "connection refused"
