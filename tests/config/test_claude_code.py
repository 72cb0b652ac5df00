"""The MCP servers Claude Code is configured with, served by toolscript under Claude Code's own rules.

Each rule here was observed on the real ``claude`` CLI (2.1.337 and 2.1.330):
which files and scopes it reads, which project servers it approves, which
entry wins when a name is in several scopes, how ``${VAR}`` expands, what
environment and working directory a stdio server gets, and what its keys mean.
"""

import json
import os
import sys

import pytest

from claude_code_files import Layout, lock_entry
from conftest import run_cli
from toolscript.config import claude_code, trust
from toolscript.config.load import ConfigError
from toolscript.config.view import masked_view


@pytest.fixture
def layout(tmp_path):
    return Layout(tmp_path)


def stdio(tag, **extra):
    entry = {"command": "/bin/echo", "args": [tag]}
    entry.update(extra)
    return entry


def served(config):
    """{name: (scope, first argument or url)} of the servers taken from Claude Code."""
    return {name: (s.imported.scope, s.args[0] if s.args else s.url) for name, s in config.servers.items() if s.imported}


# -- where Claude Code keeps its servers ------------------------------------------------------------


def test_user_scope_servers_are_served_with_their_source(layout):
    layout.claude_json(user={"u1": stdio("user")})
    config = layout.load()
    assert served(config) == {"u1": ("user", "user")}
    server = config.servers["u1"]
    assert server.lazy and server.source == os.path.join(layout.home, ".claude.json")
    assert server.describe_source() == "~/.claude.json (user scope)"
    assert config.claude_code_files == [os.path.join(layout.home, ".claude.json")]


def test_claude_config_dir_replaces_the_home_files(layout):
    layout.claude_json(user={"home_server": stdio("home")})
    other = os.path.join(layout.root, "cfg")
    layout.claude_json(user={"cfg_server": stdio("cfg")}, where=os.path.join(other, ".claude.json"))
    layout.write_json(os.path.join(other, "settings.json"), {"enabledMcpjsonServers": ["p1"]})
    layout.write_json(os.path.join(layout.repo, ".mcp.json"), {"mcpServers": {"p1": stdio("project")}})
    config = layout.load(CLAUDE_CONFIG_DIR=other)
    assert served(config) == {"cfg_server": ("user", "cfg"), "p1": ("project", "project")}
    assert config.servers["p1"].imported.approval == "approved in " + os.path.join(other, "settings.json")


def test_local_scope_is_keyed_on_the_real_path_of_the_git_root(layout):
    link = os.path.join(layout.root, "link")
    os.symlink(layout.repo, link)
    layout.claude_json(projects={
        layout.repo: {"mcpServers": {"atRoot": stdio("root")}},
        layout.cwd: {"mcpServers": {"atCwd": stdio("cwd")}},  # Claude Code keys local servers on the git root only
        link: {"mcpServers": {"atLink": stdio("link")}},
    })
    assert served(layout.load()) == {"atRoot": ("local", "root")}
    through_link = layout.load(cwd=os.path.join(link, "sub"))
    assert served(through_link) == {"atRoot": ("local", "root")}
    assert through_link.servers["atRoot"].cwd == layout.cwd  # the real path of the working directory


def test_local_scope_outside_a_repository_is_keyed_on_the_working_directory(layout):
    elsewhere = os.path.join(layout.root, "plain", "dir")
    os.makedirs(elsewhere)
    layout.claude_json(projects={elsewhere: {"mcpServers": {"here": stdio("here")}},
                                 os.path.dirname(elsewhere): {"mcpServers": {"parent": stdio("parent")}}})
    assert served(layout.load(cwd=elsewhere)) == {"here": ("local", "here")}


def test_mcp_json_files_are_read_up_the_tree_and_the_nearest_wins(layout):
    layout.user_settings({"enableAllProjectMcpServers": True})
    layout.write_json(os.path.join(layout.root, ".mcp.json"), {"mcpServers": {"above": stdio("above"), "x": stdio("x-above")}})
    layout.write_json(os.path.join(layout.repo, ".mcp.json"), {"mcpServers": {"onlyroot": stdio("root"), "x": stdio("x-root")}})
    layout.write_json(os.path.join(layout.cwd, ".mcp.json"), {"mcpServers": {"onlysub": stdio("sub"), "x": stdio("x-sub")}})
    config = layout.load()
    assert {name: arg for name, (_, arg) in served(config).items()} == {
        "above": "above", "x": "x-sub", "onlyroot": "root", "onlysub": "sub"}
    assert config.servers["x"].describe_source() == ".mcp.json (project scope, approved in ~/.claude/settings.json)"


# -- which project servers count ------------------------------------------------------------------


def _approval_case(layout, trusted, files):
    layout.write_json(os.path.join(layout.repo, ".mcp.json"), {"mcpServers": {"p1": stdio("p1"), "p2": stdio("p2")}})
    projects = {layout.repo: {"hasTrustDialogAccepted": trusted}}
    for where, settings in files.items():
        if where == "legacy":
            projects[layout.repo].update(settings)
        else:
            layout.write_json(where.format(repo=layout.repo, cwd=layout.cwd, home=layout.home), settings)
    layout.claude_json(projects=projects)
    config = layout.load()
    return sorted(served(config)), sorted(config.untrusted_servers())


@pytest.mark.parametrize("files, untrusted_folder, trusted_folder", [
    ({}, ([], ["p1", "p2"]), ([], ["p1", "p2"])),
    ({"{home}/.claude/settings.json": {"enabledMcpjsonServers": ["p1"]}}, (["p1"], ["p2"]), (["p1"], ["p2"])),
    ({"{home}/.claude/settings.json": {"enableAllProjectMcpServers": True}}, (["p1", "p2"], []), (["p1", "p2"], [])),
    ({"{repo}/.claude/settings.local.json": {"enabledMcpjsonServers": ["p1"]}}, ([], ["p1", "p2"]), (["p1"], ["p2"])),
    ({"{cwd}/.claude/settings.local.json": {"enabledMcpjsonServers": ["p1"]}}, ([], ["p1", "p2"]), (["p1"], ["p2"])),
    ({"{cwd}/.claude/settings.json": {"enableAllProjectMcpServers": True}}, ([], ["p1", "p2"]), (["p1", "p2"], [])),
    # The git root's shared settings are not read when Claude Code runs in a subdirectory.
    ({"{repo}/.claude/settings.json": {"enabledMcpjsonServers": ["p1"]}}, ([], ["p1", "p2"]), ([], ["p1", "p2"])),
    ({"legacy": {"enabledMcpjsonServers": ["p1"]}}, ([], ["p1", "p2"]), (["p1"], ["p2"])),
    # Rejected is final, in any folder, and hides the server: it is not even pending.
    ({"{home}/.claude/settings.json": {"enableAllProjectMcpServers": True},
      "{cwd}/.claude/settings.local.json": {"disabledMcpjsonServers": ["p1"]}}, (["p2"], []), (["p2"], [])),
    ({"{cwd}/.claude/settings.local.json": {"enabledMcpjsonServers": ["p1"], "disabledMcpjsonServers": ["p1"]}},
     ([], ["p2"]), ([], ["p2"])),
])
def test_project_servers_count_only_once_claude_code_approved_them(layout, files, untrusted_folder, trusted_folder):
    assert _approval_case(Layout(os.path.join(layout.root, "untrusted")), False, files) == untrusted_folder
    assert _approval_case(Layout(os.path.join(layout.root, "trusted")), True, files) == trusted_folder


def test_approval_names_are_compared_as_claude_code_normalises_them(layout):
    layout.write_json(os.path.join(layout.repo, ".mcp.json"), {"mcpServers": {"my.server": stdio("p")}})
    layout.user_settings({"enabledMcpjsonServers": ["my_server"]})
    assert list(served(layout.load())) == ["my.server"]


def test_toolscript_trust_lets_an_unapproved_mcp_json_serve_until_it_changes(layout):
    path = layout.write_json(os.path.join(layout.repo, ".mcp.json"), {"mcpServers": {"p1": stdio("p1")}})
    pending = layout.load()
    assert served(pending) == {} and pending.untrusted_servers()["p1"].claude_code
    assert f"toolscript trust {path}" in pending.untrusted_servers()["p1"].reason()
    with open(path, "rb") as f:
        trust.approve(path, f.read(), environ=layout.env())
    config = layout.load()
    assert served(config) == {"p1": ("project", "p1")}
    assert config.servers["p1"].imported.approval == "trusted with toolscript trust"
    layout.write_json(path, {"mcpServers": {"p1": stdio("changed")}})
    changed = layout.load()
    assert served(changed) == {} and changed.untrusted_servers()["p1"].status == trust.CHANGED


def test_toolscript_trust_does_not_override_a_rejection(layout):
    path = layout.write_json(os.path.join(layout.repo, ".mcp.json"), {"mcpServers": {"p1": stdio("p1")}})
    layout.user_settings({"disabledMcpjsonServers": ["p1"]})
    with open(path, "rb") as f:
        trust.approve(path, f.read(), environ=layout.env())
    config = layout.load()
    assert served(config) == {} and not config.untrusted_servers()
    assert [(item.name, item.warn) for item in config.not_imported] == [("p1", False)]


def test_trust_command_approves_an_mcp_json_and_shows_the_whole_environment(layout):
    path = layout.write_json(os.path.join(layout.repo, ".mcp.json"), {"mcpServers": {"p1": stdio("p1", args=["$${HOME}"])}})
    shown = run_cli("trust", "--show", path, env=dict(layout.env(), PYTHONPATH=""), cwd=layout.repo)
    assert shown.returncode == 0, shown.stderr
    assert "with your whole environment, in the project directory" in shown.stdout
    assert "${HOME} (set)" in shown.stdout  # Claude Code has no $${ escape: it reads HOME
    done = run_cli("trust", "--yes", path, env=layout.env(), cwd=layout.repo)
    assert done.returncode == 0 and "serves its servers" in done.stdout
    assert served(layout.load()) == {"p1": ("project", "$${HOME}".replace("${HOME}", layout.home))}


# -- precedence -------------------------------------------------------------------------------------


@pytest.mark.parametrize("scopes, expected", [
    (("user", "local", "project"), "local"),
    (("user", "local"), "local"),
    (("local", "project"), "local"),
    (("user", "project"), "project"),
    (("user", "project-pending"), "user"),
    (("user", "project-rejected"), "user"),
])
def test_one_name_in_several_scopes(layout, scopes, expected):
    projects = {layout.repo: {"mcpServers": {"dup": stdio("local")}}} if "local" in scopes else None
    layout.claude_json(user={"dup": stdio("user")} if "user" in scopes else None, projects=projects)
    if any(scope.startswith("project") for scope in scopes):
        layout.write_json(os.path.join(layout.repo, ".mcp.json"), {"mcpServers": {"dup": stdio("project")}})
    if "project" in scopes:
        layout.user_settings({"enabledMcpjsonServers": ["dup"]})
    if "project-rejected" in scopes:
        layout.user_settings({"disabledMcpjsonServers": ["dup"]})
    config = layout.load()
    assert served(config) == {"dup": (expected, expected)}
    assert "dup" not in config.untrusted_servers()


def test_disabled_mcp_servers_turns_a_server_off_in_every_scope(layout):
    layout.claude_json(user={"u": stdio("u")}, projects={layout.repo: {
        "mcpServers": {"l": stdio("l")}, "disabledMcpServers": ["u", "l", "p", "pending"]}})
    layout.write_json(os.path.join(layout.repo, ".mcp.json"), {"mcpServers": {"p": stdio("p"), "pending": stdio("x")}})
    layout.user_settings({"enabledMcpjsonServers": ["p"]})
    config = layout.load()
    assert served(config) == {} and not config.untrusted_servers()
    assert sorted(item.name for item in config.not_imported if "disabledMcpServers" in item.reason) == ["l", "p", "pending", "u"]
    assert not config.warnings  # the user chose it: nothing to warn about


def test_a_toolscript_entry_wins_by_name(layout):
    layout.claude_json(user={"github": stdio("claude"), "other": stdio("other")})
    layout.write_json(os.path.join(layout.home, ".toolscript.json"), {"mcpServers": {"github": {"command": "/bin/true"}}})
    config = layout.load()
    assert config.servers["github"].imported is None and config.servers["github"].command == "/bin/true"
    assert served(config) == {"other": ("user", "other")}
    (shadowed,) = config.not_imported
    assert shadowed.name == "github" and ".toolscript.json defines 'github'" in shadowed.reason


# -- the off switch ------------------------------------------------------------------------------


def test_claude_code_servers_false_turns_them_off(layout):
    layout.claude_json(user={"u": stdio("u")})
    layout.write_json(os.path.join(layout.home, ".toolscript.json"), {"claudeCodeServers": False})
    config = layout.load()
    assert config.servers == {} and config.claude_code_servers is False and config.claude_code_files == []
    assert masked_view(config)["claudeCodeServers"] is False


def test_claude_code_servers_must_be_a_boolean(layout):
    layout.write_json(os.path.join(layout.home, ".toolscript.json"), {"claudeCodeServers": "no"})
    with pytest.raises(ConfigError) as caught:
        layout.load()
    assert "claudeCodeServers: expected true or false" in str(caught.value)


@pytest.mark.parametrize("user_says, project_says, expected", [(None, False, True), (False, True, False)])
def test_an_untrusted_project_file_cannot_turn_them_on_or_off(layout, user_says, project_says, expected):
    layout.claude_json(user={"u": stdio("u")})
    if user_says is not None:
        layout.write_json(os.path.join(layout.home, ".toolscript.json"), {"claudeCodeServers": user_says})
    layout.write_json(os.path.join(layout.cwd, ".toolscript.json"), {"claudeCodeServers": project_says})
    config = layout.load()
    assert ("u" in config.servers) is expected
    assert config.untrusted and config.untrusted[0].settings == ["claudeCodeServers"]


# -- ${VAR}, as Claude Code expands it ---------------------------------------------------------------


EXPANSIONS = [
    ("${SET_VAR}", "setval"),
    ("${UNSET_VAR}", "${UNSET_VAR}"),
    ("${UNSET_VAR:-dflt}", "dflt"),
    ("${EMPTY_VAR:-dflt}", ""),  # the default only when unset, not when empty
    ("${EMPTY_VAR}", ""),
    ("${UNSET_VAR:-}", ""),
    ("${UNSET_VAR:-with space}", "with space"),
    ("$SET_VAR", "$SET_VAR"),
    ("$${SET_VAR}", "$setval"),  # no escape
    ("\\${SET_VAR}", "\\setval"),
    ("${SET_VAR-dash}", "${SET_VAR-dash}"),
    ("${SET_VAR:=x}", "${SET_VAR:=x}"),
    ("${ SET_VAR }", "${ SET_VAR }"),
    ("${UNSET_VAR:-${SET_VAR}}", "${SET_VAR}"),  # no nesting
    ("${UNSET_VAR:-a}b}", "ab}"),
    ("~/x", "~/x"),
    ("${set_var}", "${set_var}"),  # case-sensitive
    ("${FROM_SETTINGS}", "user-settings"),  # the user settings' env counts, and wins over the shell
    ("${PROJECT_ONLY}", "${PROJECT_ONLY}"),  # the project settings' env does not
    ("${ENTRY_ONLY}", "${ENTRY_ONLY}"),  # nor the entry's own env
    ("${CLAUDE_CODE_OAUTH_TOKEN}", ""),
    ("${OTEL_SERVICE_NAME}", ""),
    ("${ANTHROPIC_API_KEY}", "sk-test"),  # a stdio server may read it, as in Claude Code
]


def test_variables_expand_in_stdio_fields_as_in_claude_code(layout):
    args = [written for written, _ in EXPANSIONS]
    layout.claude_json(user={"x": {"command": "${PYBIN}", "args": args, "env": {"ENTRY_ONLY": "e", "K": "${SET_VAR}", "${SET_VAR}_KEY": "v"}}},
                       projects={layout.repo: {"hasTrustDialogAccepted": True}})
    layout.user_settings({"env": {"FROM_SETTINGS": "user-settings"}})
    layout.write_json(os.path.join(layout.cwd, ".claude", "settings.json"), {"env": {"PROJECT_ONLY": "p"}})
    config = layout.load(PYBIN=sys.executable, SET_VAR="setval", EMPTY_VAR="", set_var_other="x", FROM_SETTINGS="shell",
                         CLAUDE_CODE_OAUTH_TOKEN="oauth", OTEL_SERVICE_NAME="svc", ANTHROPIC_API_KEY="sk-test")
    server = config.servers["x"]
    assert server.command == sys.executable
    assert list(zip(args, server.args)) == EXPANSIONS
    assert server.imported.env == {"ENTRY_ONLY": "e", "K": "setval", "${SET_VAR}_KEY": "v"}  # keys are never expanded
    # An unset variable is no error: the server starts, and the user is told.
    assert server.config_error is None
    assert server.imported.unset == ["UNSET_VAR", "set_var", "PROJECT_ONLY", "ENTRY_ONLY"]
    assert any("server 'x'" in w and "${UNSET_VAR}" in w and "passed on as written" in w for w in config.warnings)


def test_variables_expand_in_remote_fields_and_credentials_stay_home(layout):
    entry = {"type": "http", "url": "https://h.example/${SET_VAR}/${UNSET_VAR}",
             "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}", "X-Key": "${ANTHROPIC_API_KEY}", "X-Proxy": "${HTTPS_PROXY:-none}"},
             "headersHelper": "echo ${SET_VAR}", "oauth": {"clientId": "${SET_VAR}"}}
    layout.claude_json(user={"remote": entry})
    config = layout.load(SET_VAR="setval", GITHUB_TOKEN="ghp", ANTHROPIC_API_KEY="sk-test")
    server = config.servers["remote"]
    assert server.url == "https://h.example/setval/${UNSET_VAR}"
    assert server.headers == {"Authorization": "Bearer ghp", "X-Key": "", "X-Proxy": ""}
    assert server.imported.headers_helper == "echo ${SET_VAR}"  # run as written: its shell reads the variable
    assert server.oauth.client_id == "${SET_VAR}"  # oauth is never expanded
    view = masked_view(config)["servers"]["remote"]
    assert view["headers"]["Authorization"] == "Bearer ${GITHUB_TOKEN}" and "ghp" not in json.dumps(view)


# -- the environment and working directory of a stdio server ----------------------------------------


def test_a_stdio_server_gets_the_whole_environment_as_under_claude_code(layout):
    layout.claude_json(user={"x": {"command": "srv", "env": {"ENTRY_VAR": "e1", "MY_SHELL_VAR": "from-entry", "PATH": "/entry/bin"}}},
                       projects={layout.repo: {"hasTrustDialogAccepted": True}})
    layout.user_settings({"env": {"SETTINGS_VAR": "user", "BOTH": "user"}})
    layout.write_json(os.path.join(layout.cwd, ".claude", "settings.json"), {"env": {"BOTH": "project", "PV": "p"}})
    layout.write_json(os.path.join(layout.cwd, ".claude", "settings.local.json"), {"env": {"LV": "l"}})
    extra = {"BRAVE_API_KEY": "brave", "GITHUB_TOKEN": "ghp", "MY_SHELL_VAR": "shell", "SSH_AUTH_SOCK": "/s", "lowercase_var": "x",
             "CLAUDE_CODE_OAUTH_TOKEN": "oauth", "OTEL_EXPORTER_OTLP_HEADERS": "h", "OTEL_SERVICE_NAME": "s"}
    config = layout.load(**extra)
    server = config.servers["x"]
    expected = {k: v for k, v in layout.env(**extra).items() if k != "CLAUDE_CODE_OAUTH_TOKEN" and not k.startswith("OTEL_")}
    expected.update(SETTINGS_VAR="user", BOTH="project", PV="p", LV="l", ENTRY_VAR="e1", MY_SHELL_VAR="from-entry", PATH="/entry/bin")
    assert server.env == expected
    assert server.cwd == layout.cwd
    # config show lists only what the entry sets, not the whole environment.
    assert masked_view(config)["servers"]["x"]["env"] == {"ENTRY_VAR": "****", "MY_SHELL_VAR": "****", "PATH": "****"}


def test_a_cloned_projects_settings_env_reaches_no_server_until_the_folder_is_trusted(layout):
    layout.claude_json(user={"x": {"command": "srv"}})
    layout.write_json(os.path.join(layout.cwd, ".claude", "settings.json"), {"env": {"NODE_OPTIONS": "--require /evil.js"}})
    assert "NODE_OPTIONS" not in layout.load().servers["x"].env
    layout.claude_json(user={"x": {"command": "srv"}}, projects={layout.repo: {"hasTrustDialogAccepted": True}})
    assert layout.load().servers["x"].env["NODE_OPTIONS"] == "--require /evil.js"


def test_a_stdio_server_runs_with_that_environment_in_the_project_directory(layout):
    from toolscript.mcp.client.connect import open_session

    layout.claude_json(user={"locked": lock_entry(os.path.join(layout.root, "lock"), env={"ENTRY_VAR": "e1"})})
    config = layout.load(BRAVE_API_KEY="brave-secret-123", CLAUDE_CODE_OAUTH_TOKEN="oauth", OTEL_SERVICE_NAME="s")
    session = open_session(config.servers["locked"])
    try:
        result = session.call_tool("env", {}, timeout=10)
    finally:
        session.close()
    seen = json.loads(result["content"][0]["text"])
    assert seen["cwd"] == layout.cwd
    assert seen["env"]["BRAVE_API_KEY"] == "brave-secret-123" and seen["env"]["ENTRY_VAR"] == "e1"
    assert "CLAUDE_CODE_OAUTH_TOKEN" not in seen["env"] and "OTEL_SERVICE_NAME" not in seen["env"]


# -- keys that differ from toolscript's ----------------------------------------------------------------


def test_timeouts_oauth_and_types_map_to_toolscript(layout):
    layout.claude_json(user={
        "slow": {"command": "srv", "timeout": 45000},
        "tiny": {"command": "srv", "timeout": 500},  # Claude Code ignores a timeout below one second
        "web": {"type": "streamable-http", "url": "https://h/mcp",
                "oauth": {"clientId": "abc", "callbackPort": 8765, "scopes": "read write", "authServerMetadataUrl": "https://a/x"}},
        "events": {"type": "sse", "url": "https://h/sse"},
        "socket": {"type": "ws", "url": "wss://h/ws"},
        "odd": {"type": "streamableHttp", "url": "https://h/mcp"},
        "typeless": {"url": "https://h/mcp"},
        "bad": {"command": "srv", "args": "not a list"},
        "a__b": {"command": "srv"},
        "ignored": {"command": "srv", "cwd": "/tmp", "disabled": True, "alwaysLoad": True},
    })
    config = layout.load(MCP_TIMEOUT="12000")
    slow, tiny = config.servers["slow"], config.servers["tiny"]
    assert (slow.call_timeout, slow.connect_timeout) == (45.0, 12.0)
    assert tiny.call_timeout == 60.0  # toolscript's default
    web = config.servers["web"]
    assert web.type == "http" and (web.oauth.client_id, web.oauth.redirect_port, web.oauth.scope) == ("abc", 8765, "read write")
    assert config.servers["events"].type == "sse"
    ignored = config.servers["ignored"]
    assert not ignored.disabled and ignored.cwd == layout.cwd  # Claude Code drops "cwd" and "disabled"
    reasons = {item.name: item.reason for item in config.not_imported}
    assert sorted(reasons) == ["a__b", "bad", "odd", "socket", "typeless"]
    assert "WebSocket" in reasons["socket"] and "streamableHttp" in reasons["odd"]
    assert all(f"server {name!r} is not served" in " ".join(config.warnings) for name in reasons)


def test_headers_helper_output_is_laid_over_the_headers(layout):
    os.makedirs(os.path.join(layout.home, ".claude"))
    helper = "printf '{\"X-Helper\": \"%s\", \"X-Static\": \"helper\", \"X-Where\": \"%s\"}' \"$SET_VAR\" \"$PWD\""
    layout.claude_json(user={"remote": {"type": "http", "url": "https://h/mcp", "headers": {"X-Static": "static", "X-Kept": "k"},
                                        "headersHelper": helper}})
    config = layout.load(SET_VAR="setval")
    resolved = claude_code.helper_headers(config.servers["remote"], layout.env(SET_VAR="setval"))
    assert resolved.headers == {"X-Static": "helper", "X-Kept": "k", "X-Helper": "setval",
                                "X-Where": os.path.join(layout.home, ".claude")}


@pytest.mark.parametrize("helper, message", [
    ("exit 4", "exited with status 4"),
    ("echo not-json", "must print a JSON object"),
    ("echo '{\"X\": 1}'", "must print a JSON object"),
])
def test_a_failing_headers_helper_says_why(layout, helper, message):
    os.makedirs(os.path.join(layout.home, ".claude"))
    layout.claude_json(user={"remote": {"type": "http", "url": "https://h/mcp", "headersHelper": helper}})
    with pytest.raises(Exception) as caught:
        claude_code.helper_headers(layout.load().servers["remote"], layout.env())
    assert message in str(caught.value) and "'remote'" in str(caught.value)


def test_a_local_headers_helper_needs_the_folder_trusted_as_in_claude_code(layout):
    entry = {"type": "http", "url": "https://h/mcp", "headersHelper": "echo {}"}
    layout.claude_json(projects={layout.repo: {"mcpServers": {"remote": entry}}})
    config = layout.load()
    assert "remote" not in config.servers and "trust dialog" in config.not_imported[0].reason
    layout.claude_json(projects={layout.repo: {"mcpServers": {"remote": entry}, "hasTrustDialogAccepted": True}})
    assert "remote" in layout.load().servers


@pytest.mark.parametrize("entry", [
    {"command": "toolscript", "args": ["mcp"]},
    {"command": "/opt/plugin/bin/toolscript", "args": ["mcp"]},
    {"command": "python3", "args": ["/x/toolscript.pyz", "mcp"]},
    {"command": "python3", "args": ["-m", "toolscript", "mcp"]},
])
def test_toolscript_itself_is_not_served_by_its_own_gateway(layout, entry):
    layout.claude_json(user={"toolscript": entry})
    config = layout.load()
    assert config.servers == {} and "toolscript itself" in config.not_imported[0].reason
    assert not config.warnings  # the README's own advice: nothing to warn about


def test_claude_codes_broken_file_does_not_break_toolscripts_configuration(layout):
    with open(os.path.join(layout.home, ".claude.json"), "w") as f:
        f.write("{not json")
    config = layout.load()
    assert config.servers == {} and any("not valid JSON" in w for w in config.warnings)


def test_the_cache_key_follows_the_entry(layout):
    assert claude_code.entry_key("a", {"command": "x"}) == claude_code.entry_key("a", {"command": "x"})
    assert claude_code.entry_key("a", {"command": "x"}) != claude_code.entry_key("a", {"command": "y"})
    assert claude_code.entry_key("a", {"command": "x"}) != claude_code.entry_key("b", {"command": "x"})


# -- config show names the source ----------------------------------------------------------------------


def test_config_show_names_each_servers_file_and_scope(layout):
    layout.claude_json(user={"u1": stdio("u")}, projects={layout.repo: {"mcpServers": {"l1": stdio("l")}, "hasTrustDialogAccepted": True}})
    layout.write_json(os.path.join(layout.cwd, ".mcp.json"), {"mcpServers": {"p1": stdio("p"), "p2": stdio("p2")}})
    layout.write_json(os.path.join(layout.cwd, ".claude", "settings.local.json"), {"enabledMcpjsonServers": ["p1"]})
    shown = run_cli("config", "show", env=layout.env(), cwd=layout.cwd)
    assert shown.returncode == 0, shown.stderr
    assert "from ~/.claude.json (user scope)" in shown.stdout
    assert "from ~/.claude.json (local scope)" in shown.stdout
    assert "from .mcp.json (project scope, approved in .claude/settings.local.json)" in shown.stdout
    assert "p2: not started: awaiting approval" in shown.stdout and "toolscript trust " in shown.stdout
    view = json.loads(run_cli("--json", "config", "show", env=layout.env(), cwd=layout.cwd).stdout)
    assert view["servers"]["u1"]["from"] == {"client": "Claude Code", "scope": "user", "file": "~/.claude.json", "approval": None,
                                            "described": "~/.claude.json (user scope)", "lazy": True}
    assert view["servers"]["p1"]["from"]["approval"] == "approved in .claude/settings.local.json"
    assert view["untrusted"][0]["servers"] == ["p2"] and view["untrusted"][0]["fix"].startswith("toolscript trust ")
