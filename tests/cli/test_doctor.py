"""``toolscript doctor``: the command end to end (subprocesses with a scratch HOME, state
directory and cwd) and the checks of ``toolscript.cli.doctor`` called in-process.
"""

import json
import os
import stat
import sys
import threading
import time

import pytest

import peers
from cli_checks import GITHUB_ERROR, github_unset_config
from conftest import as_unprivileged_user, trust_project_file, wait_for
from mcp_servers.launch import FIXTURE
from toolscript import __version__
from toolscript.cli import doctor
from toolscript.config.load import ServerConfig

# Variables that would point doctor at the real user's gateway, session or Claude config.
_OUTSIDE_VARS = ("CLAUDE_CODE_SESSION_ID", "TOOLSCRIPT_GATEWAY_URL", "CLAUDE_CONFIG_DIR", "XDG_STATE_HOME", "TOOLSCRIPT_STATE_DIR")
ZERO_CONFIG_STATUSES = {
    "python": "ok", "config": "ok", "servers": "ok", "gateway": "warn", "claude": "warn", "plugin": "warn", "state": "ok", "memory": "ok",
}


def exec_status() -> str:
    """The exec isolation line's status here: ok with Landlock, else a warning (no requireIsolation)."""
    from toolscript.codemode import sandbox

    return "ok" if sandbox.isolation_report(gateway=True)["layer"] == "landlock" else "warn"


@pytest.fixture
def scratch(tmp_path, clean_env):
    """An environment and cwd of our own: HOME empty, PATH with only an empty bin/ (no claude)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in clean_env.items() if k not in _OUTSIDE_VARS}
    env.update(PATH=str(bin_dir), TOOLSCRIPT_STATE_DIR=str(tmp_path / "state"))

    class Scratch:
        pass

    s = Scratch()
    s.env, s.cwd, s.bin, s.home, s.tmp = env, work, bin_dir, env["HOME"], tmp_path
    return s


def run_doctor(run_cli, scratch, *args, **env):
    return run_cli("doctor", *args, env=dict(scratch.env, **env), cwd=scratch.cwd)


def as_json(proc):
    assert "Traceback" not in proc.stderr, proc.stderr
    data = json.loads(proc.stdout)
    assert isinstance(data, list) and data
    for item in data:
        extra = ["isolation"] if item["check"] == "exec" else []  # the exec line carries the whole report
        assert sorted(item) == sorted(["check", "detail", "fix", "status"] + extra), item
        assert item["status"] in ("ok", "warn", "fail"), item
        assert isinstance(item["detail"], str) and item["detail"], item
        # Every problem comes with its fix; an ok line needs none.
        assert bool(item["fix"]) == (item["status"] != "ok"), item
    return data


def by_check(data):
    return {item["check"]: item for item in data}


def write_config(scratch, servers, trusted=True):
    """The project's .toolscript.json, approved by the user unless ``trusted=False``."""
    path = scratch.cwd / ".toolscript.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    if trusted:
        trust_project_file(path, scratch.env)


def fixture_entry():
    return {"command": sys.executable, "args": [FIXTURE, "stdio"]}


def fake_claude(scratch, body='[ "$1" = "--version" ] && [ "$#" = 1 ] && echo "2.1.328 (Claude Code)" && exit 0; exit 2'):
    path = scratch.bin / "claude"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


def write_plugins(config_dir, document):
    plugins = config_dir / "plugins"
    plugins.mkdir(parents=True, exist_ok=True)
    path = plugins / "installed_plugins.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document, indent=2))
    return str(path)


def v2_entry(scope="user", version=__version__, **extra):
    entry = {"scope": scope, "installPath": f"/x/cache/toolscript/toolscript/{version}", "version": version,
             "installedAt": "2026-11-22T04:11:19.835Z", "lastUpdated": "2026-11-22T04:11:19.835Z"}
    entry.update(extra)
    return entry


# -- the command end to end -------------------------------------------------------------------


def test_zero_config_passes_with_warnings_only(run_cli, scratch):
    proc = run_doctor(run_cli, scratch, "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = as_json(proc)
    assert {item["check"]: item["status"] for item in data} == dict(ZERO_CONFIG_STATUSES, exec=exec_status())
    checks = by_check(data)
    assert "no config file" in checks["config"]["detail"] and ".toolscript.json" in checks["config"]["detail"]
    assert checks["servers"]["detail"] == "no MCP servers configured"
    assert checks["gateway"]["fix"] == "toolscript gateway start --detach"
    assert f"toolscript {__version__}" in checks["python"]["detail"] and sys.executable in checks["python"]["detail"]
    assert checks["state"]["detail"].startswith(scratch.env["TOOLSCRIPT_STATE_DIR"])
    assert not os.path.exists(scratch.env["TOOLSCRIPT_STATE_DIR"])  # doctor looks; it does not create


def test_healthy_setup_is_all_ok(run_cli, scratch, gateway):
    write_config(scratch, {"fixture": fixture_entry()})
    fake_claude(scratch)
    write_plugins(scratch.tmp / "home" / ".claude", {"version": 2, "plugins": {"toolscript@toolscript": [v2_entry()]}})
    assert os.stat(scratch.env["TOOLSCRIPT_STATE_DIR"]).st_mode & 0o777 == 0o700  # made by the approval
    gw, url = gateway(ServerConfig(name="fixture", type="stdio", source="test", command=sys.executable, args=[FIXTURE, "stdio"]))
    assert wait_for(lambda: gw.upstreams["fixture"].state == "ready")
    proc = run_doctor(run_cli, scratch, "--gateway-url", url)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    status = exec_status()  # ok with Landlock; without it the exec line warns, with its fix
    assert lines[-1] == ("all 9 checks passed" if status == "ok" else "1 warning (of 9 checks)"), proc.stdout
    assert [line.split()[:2] for line in lines[:-1] if not line.startswith("      fix: ")] == [
        ["ok", "python"], ["ok", "config"], ["ok", "server:fixture"], ["ok", "gateway"],
        ["ok", "claude"], ["ok", "plugin"], ["ok", "state"], [status, "exec"], ["ok", "memory"],
    ]
    assert proc.stdout.count("fix:") == (0 if status == "ok" else 1)
    assert "MCP servers: fixture ready" in proc.stdout
    assert "2.1.328 (Claude Code)" in proc.stdout and "toolscript@toolscript" in proc.stdout
    assert url.split("/t/")[1] not in proc.stdout  # the token is never printed


def test_bad_config_fails_with_the_position_and_the_fix(run_cli, scratch):
    bad = scratch.tmp / "bad.json"
    bad.write_text('{"mcpServers": {\n  "a": {"command": "x"}\n  "b": {}}}')
    proc = run_doctor(run_cli, scratch, "--json", "--config", str(bad))
    assert proc.returncode == 1
    checks = by_check(as_json(proc))
    assert checks["config"]["status"] == "fail"
    assert checks["config"]["detail"].startswith(f"{bad}:3:3: invalid JSON")
    assert checks["config"]["fix"].startswith(f"toolscript --config {bad} config validate")
    assert checks["servers"]["status"] == "warn" and "did not load" in checks["servers"]["detail"]
    # Only the config failed: nothing else turned into a failure because of it.
    assert [i["check"] for i in as_json(proc) if i["status"] == "fail"] == ["config"]


def test_config_type_error_is_reported_by_json_path(run_cli, scratch):
    write_config(scratch, {"a": {"command": "x", "args": ["ok", 5]}})
    proc = run_doctor(run_cli, scratch)
    assert proc.returncode == 1
    line = next(l for l in proc.stdout.splitlines() if l.split()[:2] == ["FAIL", "config"])
    assert "mcpServers.a.args[1]" in line
    assert "fix: toolscript config validate" in proc.stdout


def test_a_failing_server_is_a_fail_line_naming_it(run_cli, scratch):
    write_config(scratch, {"broken": {"command": "toolscript-test-no-such-command"}})
    proc = run_doctor(run_cli, scratch)
    assert proc.returncode == 1, proc.stdout
    lines = proc.stdout.splitlines()
    index = next(i for i, l in enumerate(lines) if l.split()[:2] == ["FAIL", "server:broken"])
    assert "command not found" in lines[index] and "toolscript-test-no-such-command" in lines[index]
    assert lines[index + 1].strip() == "fix: toolscript servers check broken"
    assert lines[-1].startswith("1 failed")


def test_a_working_stdio_server_is_ok(run_cli, scratch):
    write_config(scratch, {"fixture": fixture_entry(), "off": {"command": "nothing", "disabled": True}})
    proc = run_doctor(run_cli, scratch, "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    checks = by_check(as_json(proc))
    server = checks["server:fixture"]
    assert server["status"] == "ok"
    assert server["detail"].startswith("stdio, 2025-11-25, fixture 1.2.3, 14 tools, ")
    assert "server:off" not in checks  # disabled servers are not connected to
    assert checks["config"]["detail"].startswith("1 server (+1 disabled) from ")


def test_no_servers_skips_the_probe(run_cli, scratch):
    write_config(scratch, {"broken": {"command": "toolscript-test-no-such-command"}})
    proc = run_doctor(run_cli, scratch, "--json", "--no-servers")
    assert proc.returncode == 0, proc.stdout
    checks = by_check(as_json(proc))
    assert checks["servers"] == {"check": "servers", "status": "ok", "detail": "not checked (--no-servers)", "fix": ""}
    assert not any(name.startswith("server:") for name in checks)


def test_running_gateway_reports_each_servers_state(run_cli, scratch, gateway):
    fixture = ServerConfig(name="fixture", type="stdio", source="test", command=sys.executable, args=[FIXTURE, "stdio"])
    broken = ServerConfig(name="broken", type="stdio", source="test", command="toolscript-test-no-such-command")
    gw, url = gateway(fixture, broken)
    assert wait_for(lambda: gw.upstreams["fixture"].state == "ready" and gw.upstreams["broken"].state == "failed")
    proc = run_doctor(run_cli, scratch, "--json", "--no-servers", "--gateway-url", url)
    line = by_check(as_json(proc))["gateway"]
    assert line["status"] == "warn", line
    assert "running at http://127.0.0.1:" in line["detail"] and f"pid {os.getpid()}" in line["detail"]
    assert "fixture ready" in line["detail"] and "broken failed" in line["detail"]
    assert "toolscript servers check broken" in line["fix"]
    assert url.split("/t/")[1] not in proc.stdout
    assert proc.returncode == 0  # a server the gateway retries is a warning, not a broken install


def test_healthy_gateway_from_the_environment_is_ok(run_cli, scratch, gateway):
    _, url = gateway()
    proc = run_doctor(run_cli, scratch, "--json", "--no-servers", TOOLSCRIPT_GATEWAY_URL=url)
    line = by_check(as_json(proc))["gateway"]
    assert line["status"] == "ok", line
    assert "from TOOLSCRIPT_GATEWAY_URL" in line["detail"] and "MCP servers: none configured" in line["detail"]


def test_gateway_url_pointing_nowhere_fails_with_the_restart_command(run_cli, scratch):
    dead = f"http://127.0.0.1:{peers.free_port()}/t/sekrit-token"
    proc = run_doctor(run_cli, scratch, "--json", "--no-servers", "--gateway-url", dead)
    assert proc.returncode == 1
    line = by_check(as_json(proc))["gateway"]
    assert line["status"] == "fail" and "not reachable" in line["detail"] and "connection refused" in line["detail"]
    assert "gateway start --detach" in line["fix"]
    assert "sekrit-token" not in proc.stdout

    from_env = run_doctor(run_cli, scratch, "--json", "--no-servers", TOOLSCRIPT_GATEWAY_URL=dead)
    line = by_check(as_json(from_env))["gateway"]
    assert line["status"] == "fail" and line["fix"] == 'unset TOOLSCRIPT_GATEWAY_URL, then: eval "$(toolscript gateway start --detach)"'


def test_wrong_token_is_reported_as_such(run_cli, scratch, gateway):
    _, url = gateway()
    wrong = url.split("/t/")[0] + "/t/not-the-token"
    proc = run_doctor(run_cli, scratch, "--json", "--no-servers", "--gateway-url", wrong)
    line = by_check(as_json(proc))["gateway"]
    assert line["status"] == "fail" and "refused the token" in line["detail"]
    assert proc.returncode == 1


def write_state_file(scratch, session, url):
    gateways = scratch.tmp / "state" / "gateways"
    gateways.mkdir(parents=True, exist_ok=True)
    (gateways / f"{session}.json").write_text(json.dumps({"url": url, "pid": 999999, "session": session}))


def test_stale_state_file_warns_outside_and_fails_inside_claude_code(run_cli, scratch):
    dead = f"http://127.0.0.1:{peers.free_port()}/t/abc"
    write_state_file(scratch, "default", dead)
    outside = by_check(as_json(run_doctor(run_cli, scratch, "--json", "--no-servers")))["gateway"]
    assert outside["status"] == "warn" and "session 'default'" in outside["detail"] and "not reachable" in outside["detail"]
    assert outside["fix"] == "toolscript gateway start --detach"

    write_state_file(scratch, "s1", dead)
    proc = run_doctor(run_cli, scratch, "--json", "--no-servers", CLAUDE_CODE_SESSION_ID="s1")
    inside = by_check(as_json(proc))["gateway"]
    assert inside["status"] == "fail" and "session 's1'" in inside["detail"]
    assert inside["fix"] == "toolscript gateway start --detach --session s1"
    assert proc.returncode == 1


def test_no_gateway_inside_claude_code_fails(run_cli, scratch):
    proc = run_doctor(run_cli, scratch, "--json", "--no-servers", CLAUDE_CODE_SESSION_ID="abc-123")
    assert proc.returncode == 1
    line = by_check(as_json(proc))["gateway"]
    assert line["status"] == "fail" and "inside Claude Code" in line["detail"]
    assert line["fix"] == "toolscript gateway start --detach --session abc-123"
    # --session names another session explicitly.
    other = by_check(as_json(run_doctor(run_cli, scratch, "--json", "--no-servers", "--session", "mine")))["gateway"]
    assert other["status"] == "warn" and other["fix"] == "toolscript gateway start --detach --session mine"


def test_claude_cli_present_absent_and_broken(run_cli, scratch):
    absent = by_check(as_json(run_doctor(run_cli, scratch, "--json", "--no-servers")))["claude"]
    assert absent["status"] == "warn" and "not on PATH" in absent["detail"] and "npm install" in absent["fix"]
    path = fake_claude(scratch)
    present = by_check(as_json(run_doctor(run_cli, scratch, "--json", "--no-servers")))["claude"]
    assert present == {"check": "claude", "status": "ok", "detail": f"2.1.328 (Claude Code) ({path})", "fix": ""}
    fake_claude(scratch, "echo 'claude: broken install' >&2; exit 3")
    broken = by_check(as_json(run_doctor(run_cli, scratch, "--json", "--no-servers")))["claude"]
    assert broken["status"] == "warn" and "status 3" in broken["detail"] and "broken install" in broken["detail"]


def test_plugin_found_through_claude_config_dir(run_cli, scratch):
    # ~/.claude says nothing is installed; CLAUDE_CONFIG_DIR (which moves ~/.claude) says it is.
    write_plugins(scratch.tmp / "home" / ".claude", {"version": 2, "plugins": {}})
    moved = scratch.tmp / "claude-config"
    write_plugins(moved, {"version": 1, "plugins": {"toolscript@acme": {"version": __version__, "installPath": "/x", "isLocal": True}}})
    home_only = by_check(as_json(run_doctor(run_cli, scratch, "--json", "--no-servers")))["plugin"]
    assert home_only["status"] == "warn" and "plugin not installed" in home_only["detail"]
    proc = run_doctor(run_cli, scratch, "--json", "--no-servers", CLAUDE_CONFIG_DIR=str(moved))
    line = by_check(as_json(proc))["plugin"]
    assert line["status"] == "ok", line
    assert line["detail"] == f"installed: toolscript@acme {__version__} (user)"


def test_malformed_plugin_file_warns_with_its_position(run_cli, scratch):
    path = write_plugins(scratch.tmp / "home" / ".claude", '{"version": 2,\n  "plugins": {,}}')
    proc = run_doctor(run_cli, scratch, "--json", "--no-servers")
    assert proc.returncode == 0
    line = by_check(as_json(proc))["plugin"]
    assert line["status"] == "warn" and line["detail"].startswith(f"{path}:2:15: invalid JSON")


def test_doctor_runs_from_the_zipapp(run_pyz, pyz, scratch):
    proc = run_pyz(pyz, "doctor", "--json", "--no-servers", env=scratch.env, cwd=scratch.cwd)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    checks = by_check(as_json(proc))
    assert f"from zipapp {pyz}" in checks["python"]["detail"]
    # Outside a checkout the install hint cannot name a local marketplace.
    assert "claude plugin install toolscript@" in checks["plugin"]["fix"]


# -- the checks in-process --------------------------------------------------------------------


def plugin_env(tmp_path, document):
    home = tmp_path / "home"
    write_plugins(home / ".claude", document)
    return {"HOME": str(home)}


def test_plugin_v1_matching_and_older_versions(tmp_path):
    ok = doctor.check_plugin(plugin_env(tmp_path, {"version": 1, "plugins": {"toolscript@mkt": {"version": __version__, "installPath": "/p"}}}), str(tmp_path))
    assert (ok.status, ok.detail) == ("ok", f"installed: toolscript@mkt {__version__} (user)")
    old = doctor.check_plugin(plugin_env(tmp_path, {"version": 1, "plugins": {"toolscript@mkt": {"version": "0.0.1"}}}), str(tmp_path))
    assert old.status == "warn" and f"this toolscript is {__version__}" in old.detail and "toolscript@mkt 0.0.1 (user)" in old.detail
    assert old.fix.startswith("claude plugin update toolscript@mkt")


def test_plugin_v2_scopes(tmp_path):
    project = tmp_path / "proj"
    (project / "sub").mkdir(parents=True)
    document = {"version": 2, "plugins": {
        "other@elsewhere": [v2_entry(version="9.9")],
        "toolscript@mkt": [v2_entry("project", projectPath=str(project)), v2_entry("local", projectPath="/somewhere/else")],
    }}
    env = plugin_env(tmp_path, document)
    inside = doctor.check_plugin(env, str(project / "sub"))
    assert inside.status == "ok", inside
    assert inside.detail == f"installed: toolscript@mkt {__version__} (project {project}); toolscript@mkt {__version__} (local /somewhere/else)"
    outside = doctor.check_plugin(env, str(tmp_path))
    assert outside.status == "warn" and f"none applies to {tmp_path}" in outside.detail
    assert outside.fix.startswith("claude plugin install toolscript@mkt")
    # A user-scope entry applies everywhere.
    document["plugins"]["toolscript@mkt"].append(v2_entry("user"))
    assert doctor.check_plugin(plugin_env(tmp_path, document), str(tmp_path)).status == "ok"


def test_plugin_missing_other_plugins_only_and_bad_shapes(tmp_path):
    missing = doctor.check_plugin({"HOME": str(tmp_path / "nobody")}, str(tmp_path))
    assert missing.status == "warn" and missing.detail.startswith("plugin not installed (")
    assert "claude plugin marketplace add " in missing.fix and " && claude plugin install toolscript@" in missing.fix
    others = doctor.check_plugin(plugin_env(tmp_path, {"version": 2, "plugins": {"toolscriptish@m": [v2_entry()], "x@y": [v2_entry()]}}), str(tmp_path))
    assert others.status == "warn" and "lists 2 other plugins" in others.detail
    for document in ([], {"version": 2}, {"plugins": []}, "null"):
        weird = doctor.check_plugin(plugin_env(tmp_path, document), str(tmp_path))
        assert weird.status == "warn" and "unexpected format" in weird.detail, (document, weird)
    # Entries that are not objects are skipped, not fatal.
    odd = doctor.check_plugin(plugin_env(tmp_path, {"version": 2, "plugins": {"toolscript@m": [7, v2_entry()]}}), str(tmp_path))
    assert odd.status == "ok", odd


def test_plugin_entries_reads_v1_and_v2_alike():
    v1 = {"version": 1, "plugins": {"a@m": {"version": "1"}}}
    v2 = {"version": 2, "plugins": {"a@m": [{"scope": "user", "version": "1"}, {"scope": "local", "version": "1"}]}}
    assert doctor.plugin_entries(v1) == {"a@m": [{"version": "1"}]}
    assert [e["scope"] for e in doctor.plugin_entries(v2)["a@m"]] == ["user", "local"]
    with pytest.raises(ValueError):
        doctor.plugin_entries({"version": 2, "plugins": "nope"})


def test_claude_config_dir_honours_the_variable(tmp_path):
    assert doctor.claude_config_dir({"HOME": "/h"}) == "/h/.claude"
    assert doctor.claude_config_dir({"HOME": "/h", "CLAUDE_CONFIG_DIR": "/elsewhere"}) == "/elsewhere"


def test_python_version_check():
    old = doctor.check_python((3, 8, 18), "/usr/bin/python3.8")
    assert old.status == "fail" and old.detail.startswith("Python 3.8.18 (/usr/bin/python3.8)") and "3.9" in old.fix
    new = doctor.check_python((3, 9, 0), "/usr/bin/python3.9")
    assert new.status == "ok" and f"toolscript {__version__} from " in new.detail


def test_claude_that_hangs_is_a_warning_after_the_timeout(tmp_path):
    script = tmp_path / "claude"
    script.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(30)\n")
    script.chmod(0o755)
    started = time.monotonic()
    result = doctor.check_claude({"PATH": str(tmp_path)}, timeout=0.5)
    assert time.monotonic() - started < 5
    assert result.status == "warn" and "did not answer within 0.5s" in result.detail


def test_state_directory_checks(tmp_path):
    path = tmp_path / "state"
    env = {"TOOLSCRIPT_STATE_DIR": str(path)}
    assert doctor.check_state_dir(env).status == "ok" and not path.exists()
    path.mkdir(mode=0o700)
    good = doctor.check_state_dir(env)
    assert good.status == "ok" and "writable" in good.detail
    assert os.listdir(path) == []  # the write probe cleans up
    path.chmod(0o755)
    loose = doctor.check_state_dir(env)
    assert loose.status == "warn" and "mode 0755" in loose.detail and loose.fix == f"chmod 700 {path}"
    (path / "gateways").mkdir(mode=0o777)
    os.chmod(path / "gateways", 0o777)
    path.chmod(0o700)
    sub = doctor.check_state_dir(env)
    assert sub.status == "warn" and "gateways is mode 0777" in sub.detail
    not_dir = tmp_path / "file"
    not_dir.write_text("")
    assert doctor.check_state_dir({"TOOLSCRIPT_STATE_DIR": str(not_dir)}).status == "fail"
    xdg = doctor.state_dir_path({"XDG_STATE_HOME": "/x", "HOME": "/h"})
    assert xdg == "/x/toolscript" and doctor.state_dir_path({"HOME": "/h"}) == "/h/.local/state/toolscript"




def test_unwritable_state_directory_fails():
    # Outside tmp_path: pytest's base temp dir is private to its user, and the check runs as nobody.
    import shutil
    import tempfile

    base = tempfile.mkdtemp(prefix="toolscript-unwritable-")
    locked = os.path.join(base, "locked")
    os.mkdir(locked, 0o500)
    if os.geteuid() == 0:
        import pwd

        nobody = pwd.getpwnam("nobody")
        for path in (base, locked):
            os.chown(path, nobody.pw_uid, nobody.pw_gid)

    def check_both():
        return [
            [c.status, c.detail]
            for c in (
                doctor.check_state_dir({"TOOLSCRIPT_STATE_DIR": os.path.join(locked, "state")}),
                doctor.check_state_dir({"TOOLSCRIPT_STATE_DIR": locked}),
            )
        ]

    try:
        (missing_status, missing_detail), (locked_status, locked_detail) = as_unprivileged_user(check_both)
    finally:
        os.chmod(locked, stat.S_IRWXU)
        shutil.rmtree(base)
    assert missing_status == "fail" and f"cannot be created ({locked} is not writable)" in missing_detail
    assert locked_status == "fail" and f"{locked} is not writable" in locked_detail


def test_a_check_that_raises_becomes_a_fail_line(tmp_path, monkeypatch):
    def explode(env):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(doctor, "check_claude", explode)
    env = {"HOME": str(tmp_path), "PATH": str(tmp_path), "TOOLSCRIPT_STATE_DIR": str(tmp_path / "state")}
    results = doctor.run_checks(environ=env, cwd=str(tmp_path), servers=False)
    claude = [r for r in results if r.check == "claude"]
    assert len(claude) == 1 and claude[0].status == "fail" and "RuntimeError: kaboom" in claude[0].detail
    assert [r.check for r in results] == ["python", "config", "servers", "gateway", "claude", "plugin", "state", "exec", "memory"]
    assert doctor.exit_code(results) == 1


def test_checks_run_in_parallel(tmp_path, monkeypatch):
    # Each of the three checks waits for the other two: they all pass only when they run at once
    # (one after another, the first one's wait breaks the barrier and it becomes a fail line).
    barrier = threading.Barrier(3, timeout=30)

    def slow(result):
        def check(*args, **kwargs):
            barrier.wait()
            return result

        return check

    monkeypatch.setattr(doctor, "check_claude", slow(doctor.Check("claude", "ok", "fake")))
    monkeypatch.setattr(doctor, "check_plugin", slow(doctor.Check("plugin", "ok", "fake")))
    monkeypatch.setattr(doctor, "check_gateway", slow(doctor.Check("gateway", "ok", "fake")))
    env = {"HOME": str(tmp_path), "PATH": str(tmp_path), "TOOLSCRIPT_STATE_DIR": str(tmp_path / "state")}
    results = doctor.run_checks(environ=env, cwd=str(tmp_path), servers=False)
    assert doctor.exit_code(results) == 0, doctor.render(results)


def test_render_and_exit_code():
    results = [doctor.Check("a", "ok", "fine", "unused"), doctor.Check("b", "warn", "meh", "do x"), doctor.Check("c", "fail", "bad", "do y")]
    assert doctor.render(results) == [
        "ok    a  fine",
        "warn  b  meh",
        "      fix: do x",
        "FAIL  c  bad",
        "      fix: do y",
        "1 failed, 1 warning (of 3 checks)",
    ]
    assert doctor.exit_code(results) == 1
    assert doctor.exit_code(results[:2]) == 0
    assert doctor.render([results[0], results[0]])[-1] == "all 2 checks passed"


def test_memory_line_names_the_database_and_its_search(tmp_path):
    from toolscript.cli import doctor
    from toolscript.memory import store

    env = {"HOME": str(tmp_path), "TOOLSCRIPT_DATA_DIR": str(tmp_path / "data")}
    fresh = doctor.check_memory(None, str(tmp_path), env)
    assert fresh.status == "ok" and "no memories yet" in fresh.detail and "FTS5" in fresh.detail
    with store.open_store(str(tmp_path / "data" / "memory.db")) as db:
        db.add(session="s", project=str(tmp_path), kind="note", content="a note")
    filled = doctor.check_memory(None, str(tmp_path), env)
    assert filled.status == "ok" and filled.detail.startswith("1 memories in ")
    (tmp_path / "data" / "memory.db").write_bytes(b"not a database at all" * 100)
    for suffix in ("-wal", "-shm"):
        try:
            os.unlink(str(tmp_path / "data" / "memory.db") + suffix)
        except OSError:
            pass
    broken = doctor.check_memory(None, str(tmp_path), env)
    assert broken.status == "fail" and "move" in broken.fix


# --- a server whose ${VAR} is unset; how doctor finds and asks the gateway -------------------


@pytest.fixture
def github_unset(tmp_path):
    """A config whose "github" server needs ${GITHUB_TOKEN} (unset) next to a working server."""
    return github_unset_config(tmp_path)


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
