"""Tests for toolscript.config.importers and .conversions: where each client keeps its servers, and how they convert.

Each client's fixture (written from its documentation) must convert to the stored
expected entries with exactly the stored warnings; the rest pins one rule at a time:
file locations per OS, JSONC, variable translation and escaping, renaming, envFile,
Codex's keys, timeouts and project files.
"""

import json
import os

import pytest

from client_configs import CASES, check_warnings, environment, expected, scratch
from toolscript.config import importers
from toolscript.config.load import load_config
from toolscript.errors import UserError


def read(client, tmp_path, scope="home", files=None, **env_extra):
    """``read_source`` of ``client`` in a scratch copy of its fixture (or of ``files``: {relative path: text})."""
    if files is None:
        home, project = scratch(client, tmp_path)
    else:
        home, project = str(tmp_path / "home"), str(tmp_path / "project")
        for relative, text in files.items():
            path = os.path.join(str(tmp_path), relative)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text if isinstance(text, str) else json.dumps(text))
        os.makedirs(home, exist_ok=True)
        os.makedirs(project, exist_ok=True)
    env = dict(environment(home, {}), **env_extra)
    return importers.read_source(client, project=scope == "project", cwd=project, environ=env, platform="linux"), home, project


def by_name(source):
    return {server.name: server for server in source.servers}


# --- each client's fixture ------------------------------------------------------------------


@pytest.mark.parametrize("client,scope", CASES)
def test_each_fixture_converts_to_the_expected_entries_and_warnings(client, scope, tmp_path):
    source, home, project = read(client, tmp_path, scope)
    servers, notes = expected(client, scope, home, project)
    assert source.files, f"nothing read from {source.looked}"
    imported = {s.name: s.entry for s in source.servers if s.entry is not None}
    assert list(imported) == notes["imported"]
    assert imported == servers
    skipped = {s.name: s.skipped for s in source.servers if s.entry is None}
    assert sorted(skipped) == sorted(notes["skipped"])
    for name, part in notes["skipped"].items():
        assert part in skipped[name]
    check_warnings({s.name: s.warnings for s in source.servers}, notes)
    for server in source.servers:
        assert server.file in source.files and server.key.split(".")[-1].strip('"') == server.source_name


@pytest.mark.parametrize("client,scope", CASES)
def test_every_expected_file_is_a_valid_toolscript_config(client, scope, tmp_path):
    home, project = scratch(client, tmp_path)
    servers, _ = expected(client, scope, home, project)
    path = tmp_path / "out.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    config = load_config([str(path)], environ={})
    assert sorted(config.servers) == sorted(servers) and config.warnings == []


def test_the_source_key_names_where_in_the_file_each_server_is(tmp_path):
    keys = {s.name: s.key for s in read("vscode", tmp_path)[0].servers}
    assert keys["perplexity"] == "servers.perplexity" and keys["local-socket"] == "servers.local-socket"
    source = read("codex", tmp_path / "c")[0]
    assert by_name(source)["sentry-prod"].key == "mcp_servers.sentry-prod"


# --- where the files are ----------------------------------------------------------------------


def test_user_files_on_linux_follow_xdg_config_home_and_codex_home():
    env = {"HOME": "/h", "XDG_CONFIG_HOME": "/x"}
    assert importers.user_files("cursor", env, "linux") == ["/h/.cursor/mcp.json"]
    assert importers.user_files("vscode", env, "linux") == ["/x/Code/User/mcp.json", "/x/Code/User/settings.json"]
    assert importers.user_files("claude-desktop", env, "linux") == ["/x/Claude/claude_desktop_config.json"]
    assert importers.user_files("codex", env, "linux") == ["/h/.codex/config.toml"]
    assert importers.user_files("codex", dict(env, CODEX_HOME="/c"), "linux") == ["/c/config.toml"]
    assert importers.user_files("windsurf", env, "linux") == ["/h/.codeium/windsurf/mcp_config.json",
                                                              "/h/.codeium/windsurf-next/mcp_config.json"]
    # A relative XDG_CONFIG_HOME is invalid (the XDG spec): ~/.config.
    assert importers.user_files("vscode", {"HOME": "/h", "XDG_CONFIG_HOME": "rel"}, "linux")[0] == "/h/.config/Code/User/mcp.json"


def test_user_files_on_macos():
    env = {"HOME": "/Users/a", "XDG_CONFIG_HOME": "/ignored"}
    support = "/Users/a/Library/Application Support"
    assert importers.user_files("vscode", env, "darwin")[0] == f"{support}/Code/User/mcp.json"
    assert importers.user_files("claude-desktop", env, "darwin") == [f"{support}/Claude/claude_desktop_config.json"]
    assert importers.user_files("cursor", env, "darwin") == ["/Users/a/.cursor/mcp.json"]
    assert importers.user_files("codex", env, "darwin") == ["/Users/a/.codex/config.toml"]


def test_user_files_on_windows_use_userprofile_appdata_and_the_msix_copy_first():
    env = {"USERPROFILE": "C:\\Users\\a", "APPDATA": "C:\\Users\\a\\AppData\\Roaming", "LOCALAPPDATA": "C:\\Users\\a\\AppData\\Local",
           "HOME": "/ignored"}
    assert importers.user_files("cursor", env, "win32") == ["C:\\Users\\a\\.cursor\\mcp.json"]
    assert importers.user_files("vscode", env, "win32")[0] == "C:\\Users\\a\\AppData\\Roaming\\Code\\User\\mcp.json"
    assert importers.user_files("claude-desktop", env, "win32") == [
        "C:\\Users\\a\\AppData\\Local\\Packages\\Claude_pzs8sxrjxfjjc\\LocalCache\\Roaming\\Claude\\claude_desktop_config.json",
        "C:\\Users\\a\\AppData\\Roaming\\Claude\\claude_desktop_config.json",
    ]
    assert importers.user_files("codex", env, "win32") == ["C:\\Users\\a\\.codex\\config.toml"]
    assert importers.user_files("windsurf", env, "win32")[0] == "C:\\Users\\a\\.codeium\\windsurf\\mcp_config.json"


def test_codex_project_files_run_from_the_repository_root_down_to_the_directory(tmp_path):
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    deep = root / "a" / "b"
    deep.mkdir(parents=True)
    assert importers.project_files("codex", str(deep)) == [
        str(root / ".codex" / "config.toml"), str(root / "a" / ".codex" / "config.toml"), str(deep / ".codex" / "config.toml")]
    alone = tmp_path / "alone"
    alone.mkdir()
    assert importers.project_files("codex", str(alone)) == [str(alone / ".codex" / "config.toml")]


@pytest.mark.parametrize("client", ["claude-desktop", "windsurf"])
def test_a_client_without_project_files_is_a_usage_error_with_project(client, tmp_path):
    with pytest.raises(UserError) as info:
        importers.read_source(client, project=True, cwd=str(tmp_path), environ={"HOME": str(tmp_path)})
    assert info.value.exit_code == 2 and "no project-scope MCP file" in str(info.value)


def test_no_file_reads_nothing_and_says_where_it_looked(tmp_path):
    source = importers.read_source("cursor", project=False, cwd=str(tmp_path), environ={"HOME": str(tmp_path)}, platform="linux")
    assert source.files == [] and source.servers == [] and source.looked == [str(tmp_path / ".cursor" / "mcp.json")]


def test_vscode_reads_the_settings_json_key_of_older_versions_only_without_mcp_json(tmp_path):
    home, _ = scratch("vscode", tmp_path)
    os.remove(os.path.join(home, ".config", "Code", "User", "mcp.json"))
    source = importers.read_source("vscode", project=False, cwd=home, environ={"HOME": home}, platform="linux")
    assert [s.name for s in source.servers] == ["fetch"] and by_name(source)["fetch"].key == "mcp.servers.fetch"
    # A settings.json without "mcp" is no MCP file at all.
    with open(os.path.join(home, ".config", "Code", "User", "settings.json"), "w") as f:
        f.write('{"editor.fontSize": 14}')
    assert importers.read_source("vscode", project=False, cwd=home, environ={"HOME": home}, platform="linux").files == []


def test_file_reads_the_named_file_in_the_clients_format(tmp_path):
    path = tmp_path / "profile.json"
    path.write_text('{"servers": {"x": {"command": "x-mcp"}}}')
    source = importers.read_source("vscode", project=False, cwd=str(tmp_path), environ={"HOME": str(tmp_path)}, file=str(path))
    assert source.files == [str(path)] and by_name(source)["x"].entry == {"command": "x-mcp"}


# --- reading -------------------------------------------------------------------------------------


def test_jsonc_comments_and_trailing_commas_go_and_strings_stay():
    text = '{\n  // c\n  "a": "http://x/*y*/", /* b */\n  "b": [1, 2,],\n}\n'
    assert json.loads(importers.strip_jsonc(text)) == {"a": "http://x/*y*/", "b": [1, 2]}
    assert json.loads(importers.strip_jsonc('{"a": "q\\" // not a comment,]"}')) == {"a": 'q" // not a comment,]'}


def test_a_file_that_does_not_parse_names_its_line_and_column(tmp_path):
    with pytest.raises(UserError) as info:
        read("cursor", tmp_path, files={"home/.cursor/mcp.json": '{\n  // fine\n  "mcpServers": {"a": }\n}'})
    assert str(info.value).startswith(f"{tmp_path}/home/.cursor/mcp.json:3:")
    with pytest.raises(UserError) as info:
        read("codex", tmp_path / "c", files={"home/.codex/config.toml": '[mcp_servers.a]\ncommand = "C:\\Users\\a"\n'})
    assert ".codex/config.toml:2:" in str(info.value)


def test_servers_that_are_not_an_object_are_an_error(tmp_path):
    with pytest.raises(UserError) as info:
        read("cursor", tmp_path, files={"home/.cursor/mcp.json": {"mcpServers": []}})
    assert "mcpServers is not a JSON object" in str(info.value)


# --- values and variables ----------------------------------------------------------------------


def one(client, entry, tmp_path, scope="home", name="s"):
    """The converted server of a one-entry file of ``client``."""
    files = {
        "cursor": ("home/.cursor/mcp.json", "project/.cursor/mcp.json", lambda e: {"mcpServers": {name: e}}),
        "vscode": ("home/.config/Code/User/mcp.json", "project/.vscode/mcp.json", lambda e: {"servers": {name: e}}),
        "claude-desktop": ("home/.config/Claude/claude_desktop_config.json", None, lambda e: {"mcpServers": {name: e}}),
        "windsurf": ("home/.codeium/windsurf/mcp_config.json", None, lambda e: {"mcpServers": {name: e}}),
    }[client]
    path = files[0] if scope == "home" else files[1]
    return read(client, tmp_path, scope, files={path: files[2](entry)})[0].servers[0]


def test_resolved_variables_become_toolscripts(tmp_path):
    server = one("cursor", {"command": "${userHome}/bin/x", "args": ["${env:TOKEN}", "a${pathSeparator}b${/}c"],
                            "env": {"K": "${env:K}-x"}}, tmp_path)
    assert server.entry == {"command": "${HOME}/bin/x", "args": ["${TOKEN}", f"a{os.sep}b{os.sep}c"], "env": {"K": "${K}-x"}}
    assert server.warnings == []


@pytest.mark.parametrize("value,why", [
    ("${config:editor.x}", "only Cursor can resolve"),
    ("${command:pick}", "only Cursor can resolve"),
    ("${workspaceFolder}/x", "import it from that project with --project"),
    ("${file:/run/secret}", "cannot read a value from a file"),
    ("${env:bad-name}", "variable names are letters"),
])
def test_a_variable_without_an_equivalent_skips_the_server_naming_the_key(value, why, tmp_path):
    server = one("cursor", {"command": "x", "args": ["--flag", value]}, tmp_path)
    assert server.entry is None and "args[1]" in server.skipped and why in server.skipped


def test_a_vscode_input_becomes_a_variable_to_export(tmp_path):
    home_file = {"servers": {"s": {"command": "x", "env": {"KEY": "${input:api-key.2}"}}},
                 "inputs": [{"id": "api-key.2", "type": "promptString", "description": "The key"}]}
    source = read("vscode", tmp_path, files={"home/.config/Code/User/mcp.json": home_file})[0]
    server = source.servers[0]
    assert server.entry["env"] == {"KEY": "${API_KEY_2}"}
    assert len(server.warnings) == 1 and "export API_KEY_2" in server.warnings[0] and "(The key)" in server.warnings[0]


def test_a_plain_variable_in_a_resolving_client_is_kept_with_a_warning(tmp_path):
    server = one("windsurf", {"command": "x", "env": {"T": "${TOKEN:-none}"}}, tmp_path)
    assert server.entry["env"] == {"T": "${TOKEN:-none}"} and "does not document ${TOKEN:-none}" in server.warnings[0]


LITERALS = ["${1}", "a$${B}", "${a b}", "cost: $5", "x${", "${X:=y}", "$", "{}"]


@pytest.mark.parametrize("client", ["claude-desktop", "cursor", "windsurf"])
def test_text_that_only_looks_like_a_variable_stays_text(client, tmp_path):
    """Every value here means itself in the client; after import toolscript must expand it to the same text."""
    if client == "claude-desktop":
        literal = LITERALS
    else:  # a resolving client reads "$${B}" as "$" before a variable: that one is its own test
        literal = [value for value in LITERALS if "$${" not in value]
    server = one(client, {"command": "x", "args": literal}, tmp_path)
    assert server.entry is not None, server.skipped
    path = tmp_path / "out.json"
    path.write_text(json.dumps({"mcpServers": {"s": server.entry}}))
    assert load_config([str(path)], environ={}).servers["s"].args == literal


def test_a_dollar_right_before_a_variable_skips_the_server(tmp_path):
    server = one("cursor", {"command": "x", "args": ["$${env:HOME}"]}, tmp_path)
    assert server.entry is None and "'$' right before a variable" in server.skipped


def test_a_variable_written_in_a_literal_client_stays_one_with_a_warning(tmp_path):
    server = one("claude-desktop", {"command": "x", "env": {"A": "${A}", "B": "pre-${B:-d}"}}, tmp_path)
    assert server.entry["env"] == {"A": "${A}", "B": "pre-${B:-d}"}
    assert len(server.warnings) == 2 and all("Claude Desktop passes it as written" in w for w in server.warnings)


# --- names ------------------------------------------------------------------------------------------


def test_names_toolscript_refuses_are_renamed_and_a_clash_is_skipped(tmp_path):
    servers = {"my server": {"command": "a"}, "a__b": {"command": "b"}, "taken": {"command": "c"}, "taken!": {"command": "d"},
               "::": {"command": "e"}}
    source = read("cursor", tmp_path, files={"home/.cursor/mcp.json": {"mcpServers": servers}})[0]
    found = {s.source_name: s for s in source.servers}
    assert found["my server"].name == "my-server" and "renamed 'my server' to 'my-server'" in found["my server"].warnings[0]
    assert found["a__b"].name == "a_b" and found["a__b"].entry == {"command": "b"}
    assert found["taken!"].entry is None and "another server has that name" in found["taken!"].skipped
    assert found["::"].entry is None and found["taken"].entry == {"command": "c"}
    assert found["my server"].key == 'mcpServers."my server"'


# --- keys ---------------------------------------------------------------------------------------------


def test_env_file_names_become_variables_and_values_are_never_copied(tmp_path):
    files = {"home/.cursor/mcp.json": {"mcpServers": {"s": {"command": "x", "env": {"A": "given"}, "envFile": "${userHome}/.env"}}},
             "home/.env": "# comment\nA=from-file\nexport B=secret-b\n\nC = \"secret-c\"\nnot a line\n"}
    server = read("cursor", tmp_path, files=files)[0].servers[0]
    assert server.entry["env"] == {"A": "given", "B": "${B}", "C": "${C}"}
    assert "secret" not in json.dumps(server.entry) and "B, C became env entries" in server.warnings[0]


def test_a_missing_env_file_is_dropped_with_a_warning(tmp_path):
    server = one("cursor", {"command": "x", "envFile": "/nonexistent/.env"}, tmp_path)
    assert server.entry == {"command": "x"} and "cannot be read" in server.warnings[0]


def test_unknown_keys_are_dropped_with_a_warning_and_bookkeeping_silently(tmp_path):
    server = one("vscode", {"command": "x", "gallery": "g", "version": "1", "dev": {}, "alwaysAllow": ["t"]}, tmp_path)
    assert server.entry == {"command": "x"} and server.warnings == ["alwaysAllow: not a key toolscript knows; dropped"]


def test_workspace_folder_in_cwd_becomes_relative_in_a_project_file(tmp_path):
    server = one("vscode", {"command": "x", "cwd": "${workspaceFolder}/tools", "args": ["${workspaceFolderBasename}"]}, tmp_path,
                 scope="project")
    assert server.entry == {"command": "x", "args": ["project"], "cwd": "tools"} and server.warnings == []


@pytest.mark.parametrize("url", ["unix:///tmp/s.sock#/mcp", "pipe:///name", "ftp://x/y"])
def test_urls_toolscript_cannot_reach_skip_the_server(url, tmp_path):
    assert one("vscode", {"type": "http", "url": url}, tmp_path).entry is None


def test_windsurf_server_url_wins_over_url(tmp_path):
    server = one("windsurf", {"serverUrl": "https://a/mcp", "url": "https://b/mcp"}, tmp_path)
    assert server.entry == {"type": "http", "url": "https://a/mcp"} and "used serverUrl" in server.warnings[0]


@pytest.mark.parametrize("entry,why", [
    ({"command": "x", "url": "https://a/mcp"}, "both command and url"),
    ({"args": ["x"]}, "neither command nor url"),
    ({"type": "websocket", "url": "wss://a"}, "type \"websocket\""),
    ({"type": "sse", "command": "x"}, "needs a url"),
    ("npx x", "not a server entry"),
])
def test_entries_toolscript_cannot_express_are_skipped(entry, why, tmp_path):
    server = one("cursor", entry, tmp_path)
    assert server.entry is None and why in server.skipped


def test_literal_secrets_are_copied_with_a_warning(tmp_path):
    server = one("cursor", {"url": "https://a/mcp", "headers": {"Authorization": "Bearer abc", "X-Region": "eu"}}, tmp_path)
    assert server.entry["headers"] == {"Authorization": "Bearer abc", "X-Region": "eu"}
    assert server.warnings == ['headers.Authorization holds a literal secret; copied as is (consider "${AUTHORIZATION}" and exporting it)']


# --- Codex ---------------------------------------------------------------------------------------------


def codex(text, tmp_path, scope="home", extra=None):
    files = {("home/.codex/config.toml" if scope == "home" else "project/.codex/config.toml"): text}
    files.update(extra or {})
    return read("codex", tmp_path, scope, files=files)[0]


def test_codex_entries_codex_refuses_are_skipped_with_its_reason(tmp_path):
    with open(os.path.join(os.path.dirname(__file__), "fixtures", "clients", "codex", "toml", "codex-rejects.toml")) as f:
        source = codex(f.read(), tmp_path)
    skipped = {s.name: s.skipped for s in source.servers}
    assert all(skipped.values()) and sorted(skipped) == ["both", "http_with_env", "inline_token", "neither"]
    assert "both command and url" in skipped["both"] and "bearer_token_env_var" in skipped["inline_token"]
    assert "env is not allowed" in skipped["http_with_env"]


def test_codex_handwritten_config(tmp_path):
    with open(os.path.join(os.path.dirname(__file__), "fixtures", "clients", "codex", "toml", "handwritten.toml")) as f:
        servers = by_name(codex(f.read(), tmp_path))
    assert servers["github"].entry == {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                                       "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}}
    assert any("type: not a key" in w for w in servers["github"].warnings)
    assert any("Codex passes it as written" in w for w in servers["github"].warnings)
    assert servers["lucid_memory"].entry == {"type": "http", "url": "https://memory.example.com/mcp",
                                             "headers": {"X-Lucid-Token": "${LUCID_API_TOKEN}"}, "timeout": 120}
    assert "docker" not in servers  # a commented-out table is no server


@pytest.mark.parametrize("keys,timeout,warned", [
    ("tool_timeout_sec = 300", 300, False),
    ("startup_timeout_sec = 90", 90, False),
    ("startup_timeout_sec = 20", 60, True),
    ("startup_timeout_sec = 5.5\ntool_timeout_sec = 7.5", 7.5, True),
    ("startup_timeout_ms = 120_000", 120, False),
    ("tool_timeout_sec = 0", None, True),
])
def test_codex_timeouts_become_one_long_enough_for_both(keys, timeout, warned, tmp_path):
    server = codex(f'[mcp_servers.s]\ncommand = "x"\n{keys}\n', tmp_path).servers[0]
    assert server.entry.get("timeout") == timeout and bool(server.warnings) == warned


def test_codex_relative_cwd_is_taken_against_the_folder_holding_codex(tmp_path):
    source = codex('[mcp_servers.s]\ncommand = "x"\ncwd = "sub"\n', tmp_path)
    assert source.servers[0].entry["cwd"] == os.path.join(str(tmp_path / "home"), "sub")


def test_codex_project_files_merge_closest_wins_and_untrusted_projects_are_noted(tmp_path):
    files = {"project/.git/HEAD": "", "project/.codex/config.toml": '[mcp_servers.a]\ncommand = "root-a"\n[mcp_servers.b]\ncommand = "b"\n',
             "project/sub/.codex/config.toml": '[mcp_servers.a]\ncommand = "sub-a"\n'}
    home, project = str(tmp_path / "home"), str(tmp_path / "project")
    for relative, text in files.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    os.makedirs(home)
    sub = os.path.join(project, "sub")
    source = importers.read_source("codex", project=True, cwd=sub, environ={"HOME": home}, platform="linux")
    assert {s.name: s.entry["command"] for s in source.servers} == {"a": "sub-a", "b": "b"}
    assert by_name(source)["a"].file == os.path.join(sub, ".codex", "config.toml")
    assert any("only in a project it trusts" in note for note in source.notes)
    os.makedirs(os.path.join(home, ".codex"))
    with open(os.path.join(home, ".codex", "config.toml"), "w") as f:
        f.write(f'[projects."{project}"]\ntrust_level = "trusted"\n')
    source = importers.read_source("codex", project=True, cwd=sub, environ={"HOME": home}, platform="linux")
    assert not any("trusts" in note for note in source.notes)
