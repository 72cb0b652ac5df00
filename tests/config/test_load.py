"""Tests for toolscript.config.load and .view: file selection, validation, substitution, masking."""

import json
import os
import tempfile

import pytest

from cli_checks import GITHUB_ERROR, github_unset_config
from conftest import trust_project_file
from toolscript.config.load import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_MAX_MESSAGE_BYTES,
    Config,
    ConfigError,
    ServerConfig,
    default_config_paths,
    load_config,
)
from toolscript.config.view import masked_view
from toolscript.errors import UserError

# One config file per test process: ``parse`` writes the text under test to it
# and reads it back through ``load_config``, the public entry point.
SRC = os.path.join(tempfile.mkdtemp(prefix="toolscript-test-config-"), "config.json")


def write(path, data):
    """Write ``data`` (a str, or anything JSON-serialisable) to ``path``; return the path as str."""
    text = data if isinstance(data, str) else json.dumps(data)
    path.write_text(text, encoding="utf-8")
    return str(path)


def servers_doc(**servers):
    return json.dumps({"mcpServers": servers})


def parse(text, environ=None, source=SRC):
    """``(servers, warnings)`` of one file holding ``text``, or ConfigError."""
    with open(source, "w", encoding="utf-8") as f:
        f.write(text)
    config = load_config([source], environ=environ or {})
    return config.servers, config.warnings


def parse_one(entry, environ=None, name="s"):
    servers, warnings = parse(servers_doc(**{name: entry}), environ)
    return servers[name], warnings


def problems_of(text, environ=None, source=SRC):
    """The problems ``text`` raises, after checking every message is one line."""
    with pytest.raises(ConfigError) as info:
        parse(text, environ, source)
    assert "\n" not in str(info.value)
    for problem in info.value.problems:
        assert "\n" not in problem
    return info.value.problems


def problem_of(entry, environ=None, name="s"):
    """The single problem one bad server entry raises."""
    problems = problems_of(servers_doc(**{name: entry}), environ)
    assert len(problems) == 1, problems
    return problems[0]


# --- file selection ---------------------------------------------------------


def test_default_paths_use_home_and_cwd():
    paths = default_config_paths(cwd="/work/proj", environ={"HOME": "/home/u"})
    assert paths == ["/home/u/.toolscript.json", "/work/proj/.toolscript.json"]


def test_default_paths_fall_back_to_expanduser_without_home():
    paths = default_config_paths(cwd="/work/proj", environ={})
    assert paths == [os.path.join(os.path.expanduser("~"), ".toolscript.json"), "/work/proj/.toolscript.json"]


def test_default_paths_read_once_when_cwd_is_home():
    assert default_config_paths(cwd="/home/u", environ={"HOME": "/home/u"}) == ["/home/u/.toolscript.json"]


def test_toolscript_config_replaces_defaults():
    environ = {"HOME": "/home/u", "TOOLSCRIPT_CONFIG": " ~/a.json , ,rel/b.json,/abs/c.json,"}
    paths = default_config_paths(cwd="/work/proj", environ=environ)
    assert paths == ["/home/u/a.json", "/work/proj/rel/b.json", "/abs/c.json"]


def test_empty_toolscript_config_means_defaults():
    paths = default_config_paths(cwd="/p", environ={"HOME": "/h", "TOOLSCRIPT_CONFIG": "  "})
    assert paths == ["/h/.toolscript.json", "/p/.toolscript.json"]


def test_load_defaults_later_file_wins_in_place(tmp_path):
    home, proj = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    proj.mkdir()
    home_file = write(
        home / ".toolscript.json",
        {"mcpServers": {"a": {"command": "home-a"}, "b": {"command": "home-b", "args": ["x"]}, "c": {"command": "c"}}},
    )
    proj_file = write(proj / ".toolscript.json", {"mcpServers": {"d": {"url": "http://d"}, "b": {"url": "http://b"}}})
    environ = {"HOME": str(home)}
    trust_project_file(proj_file, environ)
    config = load_config(cwd=str(proj), environ=environ)
    assert config.files == [home_file, proj_file]
    # b is replaced wholesale (no args carried over) but keeps its first position.
    assert list(config.servers) == ["a", "b", "c", "d"]
    b = config.servers["b"]
    assert (b.type, b.url, b.command, b.args, b.source) == ("http", "http://b", None, [], proj_file)
    assert config.servers["a"].source == home_file
    assert config.warnings == []


def test_missing_default_files_are_fine(tmp_path):
    config = load_config(cwd=str(tmp_path), environ={"HOME": str(tmp_path / "nohome")})
    assert (config.servers, config.files, config.warnings) == ({}, [], [])


def test_explicit_paths_replace_defaults(tmp_path):
    write(tmp_path / ".toolscript.json", {"mcpServers": {"default": {"command": "d"}}})
    write(tmp_path / "mine.json", {"mcpServers": {"mine": {"command": "m"}}})
    config = load_config(["mine.json"], cwd=str(tmp_path), environ={"HOME": str(tmp_path)})
    assert list(config.servers) == ["mine"]
    assert config.files == [str(tmp_path / "mine.json")]


NOT_FOUND = "config file not found: {} (named by --config or TOOLSCRIPT_CONFIG; fix the path or create the file)"


def test_missing_explicit_file_is_a_problem(tmp_path):
    missing = str(tmp_path / "nope.json")
    with pytest.raises(ConfigError) as err:
        load_config([missing], cwd=str(tmp_path), environ={})
    assert err.value.problems == [NOT_FOUND.format(missing)]


def test_missing_file_from_toolscript_config_is_a_problem(tmp_path):
    write(tmp_path / "a.json", {"mcpServers": {"a": {"command": "a"}}})
    environ = {"HOME": str(tmp_path), "TOOLSCRIPT_CONFIG": "a.json,gone.json"}
    with pytest.raises(ConfigError) as err:
        load_config(cwd=str(tmp_path), environ=environ)
    assert err.value.problems == [NOT_FOUND.format(tmp_path / "gone.json")]


def test_unreadable_file_is_an_error(tmp_path):
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(ConfigError) as info:
        load_config([str(tmp_path / "dir.json")], environ={})
    assert str(info.value).startswith(f"{tmp_path / 'dir.json'}: cannot read file: ")
    assert "\n" not in str(info.value)


def test_utf8_bom_is_tolerated(tmp_path):
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + servers_doc(a={"command": "x"}).encode())
    assert list(load_config([str(path)], environ={}).servers) == ["a"]


def test_invalid_utf8_is_an_error(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"mcpServers": {\n  "a": {"command": "caf\xe9"}}}')
    with pytest.raises(ConfigError) as info:
        load_config([str(path)], environ={})
    assert str(info.value) == f"{path}:2:24: file is not valid UTF-8 (byte 0xe9); save it as UTF-8"


def test_empty_file_is_an_error():
    assert problems_of("  \n\t") == [f'{SRC}: file is empty; write {{"mcpServers": {{}}}} or delete it']


# --- JSON syntax and structure ----------------------------------------------


def test_malformed_json_reports_line_and_column():
    text = '{\n  "mcpServers": {\n    "a": {"command": "x"}\n    "b": {}\n  }\n}'
    assert problems_of(text) == [f"{SRC}:4:5: invalid JSON: Expecting ',' delimiter"]


def test_trailing_comma_hint_in_object_and_array():
    obj = '{"mcpServers": {"a": {"command": "x",}}}'
    assert problems_of(obj) == [
        f"{SRC}:1:38: invalid JSON: Expecting property name enclosed in double quotes (trailing comma?)"
    ]
    arr = '{"mcpServers": {"a": {"command": "x", "args": ["1",]}}}'
    assert problems_of(arr)[0].endswith("(trailing comma?)")


def test_comment_hint():
    text = '{\n  // my servers\n  "mcpServers": {}\n}'
    assert problems_of(text) == [
        f"{SRC}:2:3: invalid JSON: Expecting property name enclosed in double quotes (JSON does not allow comments)"
    ]


def test_top_level_must_be_object():
    assert problems_of("[1, 2]") == [f'{SRC}: top level must be a JSON object with "mcpServers"']


def test_missing_mcpservers_and_unknown_top_level_key_warn():
    servers, warnings = parse('{"mcpServer": {"a": {"command": "x"}}, "$schema": "s"}')
    assert servers == {}
    assert warnings == [
        f'{SRC}: unknown top-level key "mcpServer" ignored (did you mean "mcpServers"?)',
        f'{SRC}: no "mcpServers" key; this file defines no servers',
    ]


def test_mcpservers_must_be_object():
    assert problems_of('{"mcpServers": []}') == [f"{SRC}: mcpServers: expected an object, got array"]


@pytest.mark.parametrize(
    "entry, expected",
    [
        ({"command": "x", "args": ["a", 2]}, "mcpServers.s.args[1]: expected a string, got number"),
        ({"command": "x", "args": "a b"}, "mcpServers.s.args: expected an array of strings, got string"),
        ({"command": ["npx"]}, "mcpServers.s.command: expected a string, got array"),
        ({"command": "x", "env": {"PORT": 8080}}, "mcpServers.s.env.PORT: expected a string, got number"),
        ({"command": "x", "env": ["A=1"]}, "mcpServers.s.env: expected an object of strings, got array"),
        ({"url": "http://h", "headers": {"X Y": None}}, 'mcpServers.s.headers."X Y": expected a string, got null'),
        ({"command": "x", "cwd": True}, "mcpServers.s.cwd: expected a string, got boolean"),
        ({"url": 5}, "mcpServers.s.url: expected a string, got number"),
        (
            {"command": "x", "includeTools": "get_*"},
            "mcpServers.s.includeTools: expected an array of strings, got string",
        ),
        ({"command": "x", "excludeTools": [{}]}, "mcpServers.s.excludeTools[0]: expected a string, got object"),
        ({"command": "x", "excludeTools": [""]}, "mcpServers.s.excludeTools[0]: must not be empty"),
        ({"command": "x", "disabled": "true"}, "mcpServers.s.disabled: expected a boolean, got string"),
        ({"command": "x", "type": 1}, "mcpServers.s.type: expected a string, got number"),
        ({"command": ""}, "mcpServers.s.command: must not be empty"),
        ("npx", "mcpServers.s: expected an object, got string"),
    ],
)
def test_wrong_types_name_the_json_path(entry, expected):
    assert problem_of(entry) == f"{SRC}: {expected}"


def test_unknown_server_keys_warn_with_suggestion():
    server, warnings = parse_one({"command": "x", "comand": "y", "include_tools": ["a"], "zzzzz": 1})
    assert warnings == [
        f'{SRC}: mcpServers.s: unknown key "comand" ignored (did you mean "command"?)',
        f'{SRC}: mcpServers.s: unknown key "include_tools" ignored (did you mean "includeTools"?)',
        f'{SRC}: mcpServers.s: unknown key "zzzzz" ignored',
    ]
    assert server.include_tools == []  # ignored, not applied


def test_fields_of_the_other_transport_warn():
    _, warnings = parse_one({"command": "x", "headers": {"A": "b"}})
    assert warnings == [f'{SRC}: mcpServers.s: "headers" is ignored for a stdio server']
    _, warnings = parse_one({"url": "http://h", "args": ["a"]})
    assert warnings == [f'{SRC}: mcpServers.s: "args" is ignored for a http server']


# --- type and transport fields ----------------------------------------------


def test_type_is_inferred():
    assert parse_one({"command": "npx"})[0].type == "stdio"
    assert parse_one({"url": "https://h/mcp"})[0].type == "http"


@pytest.mark.parametrize(
    "written, canonical",
    [("stdio", "stdio"), ("http", "http"), ("sse", "sse"), ("streamable-http", "http"),
     ("streamableHttp", "http"), ("streamable_http", "http")],
)
def test_type_aliases(written, canonical):
    entry = {"type": written, "command": "x"} if canonical == "stdio" else {"type": written, "url": "http://h"}
    assert parse_one(entry)[0].type == canonical


def test_unknown_type_lists_accepted_values():
    message = problem_of({"type": "websocket", "url": "http://h"})
    assert message.startswith(
        f'{SRC}: mcpServers.s.type: "websocket" is not a server type; use "stdio", "http" or "sse"'
    )
    assert "streamable-http" in message


STDIO_NOT_URL = 'type "stdio" needs "command", not "url" (use type "http" or "sse" for a "url")'


@pytest.mark.parametrize(
    "entry, expected",
    [
        ({"args": ["x"]}, 'needs "command" (a stdio server) or "url" (an http/sse server)'),
        (
            {"command": "x", "url": "http://h"},
            'has both "command" and "url"; keep "command" for a stdio server or "url" for an http/sse server',
        ),
        ({"type": "stdio", "url": "http://h"}, STDIO_NOT_URL),
        ({"type": "stdio", "command": "x", "url": "http://h"}, STDIO_NOT_URL),
        ({"type": "http", "command": "x"}, 'type "http" needs "url", not "command" (use type "stdio" for a "command")'),
        ({"type": "sse"}, 'type "sse" needs "url"'),
        ({"type": "stdio"}, 'type "stdio" needs "command"'),
    ],
)
def test_command_url_and_type_conflicts(entry, expected):
    assert problem_of(entry) == f"{SRC}: mcpServers.s: {expected}"


@pytest.mark.parametrize(
    "name, expected",
    [
        ("my server", "mcpServers.\"my server\": server names may contain only letters, digits, '_', '-' and '.'"),
        ("a/b", "mcpServers.\"a/b\": server names may contain only letters, digits, '_', '-' and '.'"),
        ("", 'mcpServers."": server names must not be empty'),
        (
            "a__b",
            "mcpServers.a__b: server names must not contain '__' (toolscript joins server and tool names with it)",
        ),
    ],
)
def test_bad_server_names(name, expected):
    assert problem_of({"command": "x"}, name=name) == f"{SRC}: {expected}"


def test_good_server_name_with_dots_dashes_underscores():
    assert parse_one({"command": "x"}, name="my-srv_1.v2")[0].name == "my-srv_1.v2"


@pytest.mark.parametrize(
    "url, expected",
    [
        ("ftp://x", '"ftp://x" must start with http:// or https://'),
        ("example.com/mcp", '"example.com/mcp" must start with http:// or https://'),
        ("http://", '"http://" has no host'),
        ("http://h:port/", '"http://h:port/" is not a valid URL'),
        ("", "must not be empty"),
    ],
)
def test_bad_urls(url, expected):
    assert problem_of({"url": url}).startswith(f"{SRC}: mcpServers.s.url: {expected}")


def test_bad_url_error_does_not_print_secrets():
    message = problem_of({"url": "ftp://me:hunter2@h/?token=abc"})
    assert "hunter2" not in message and "abc" not in message
    assert '"ftp://me:****@h/?token=****"' in message


def test_good_urls_keep_their_case_insensitive_scheme():
    assert parse_one({"url": "HTTPS://Example.com:8443/mcp"})[0].url == "HTTPS://Example.com:8443/mcp"


@pytest.mark.parametrize(
    "value, expected",
    [
        (0, "must be a number of seconds greater than 0, got 0"),
        (-1.5, "must be a number of seconds greater than 0, got -1.5"),
        (True, "expected a number of seconds, got boolean"),
        ("20", "expected a number of seconds, got string"),
        (None, "expected a number of seconds, got null"),
    ],
)
def test_bad_timeouts(value, expected):
    assert problem_of({"command": "x", "timeout": value}) == f"{SRC}: mcpServers.s.timeout: {expected}"


def test_timeout_applies_to_connect_and_call():
    server = parse_one({"command": "x", "timeout": 2.5})[0]
    assert (server.timeout, server.connect_timeout, server.call_timeout) == (2.5, 2.5, 2.5)
    server = parse_one({"command": "x", "timeout": 7})[0]
    assert server.timeout == 7.0 and isinstance(server.timeout, float)
    server = parse_one({"command": "x"})[0]
    assert server.timeout is None
    assert (server.connect_timeout, server.call_timeout) == (DEFAULT_CONNECT_TIMEOUT, DEFAULT_CALL_TIMEOUT)
    assert (DEFAULT_CONNECT_TIMEOUT, DEFAULT_CALL_TIMEOUT) == (30.0, 60.0)


def test_full_entry_is_parsed():
    entry = {
        "command": "npx",
        "args": ["-y", "pkg"],
        "env": {"A": "1"},
        "includeTools": ["get_*"],
        "excludeTools": ["get_secret"],
        "disabled": True,
    }
    server, warnings = parse_one(entry)
    assert warnings == []
    assert server == ServerConfig(
        name="s",
        type="stdio",
        source=SRC,
        command="npx",
        args=["-y", "pkg"],
        env={"A": "1"},
        include_tools=["get_*"],
        exclude_tools=["get_secret"],
        disabled=True,
        raw=entry,
    )


def test_enabled_servers_skip_disabled():
    servers, _ = parse(servers_doc(a={"command": "a"}, b={"command": "b", "disabled": True}, c={"url": "http://c"}))
    config = Config(servers=servers, files=[SRC], warnings=[])
    assert [s.name for s in config.enabled_servers()] == ["a", "c"]


# --- cwd --------------------------------------------------------------------


def test_cwd_relative_to_config_file(tmp_path):
    (tmp_path / "proj").mkdir()
    path = write(tmp_path / "proj" / "ts.json", {"mcpServers": {"a": {"command": "x", "cwd": "sub/../tools"}}})
    config = load_config([path], cwd="/somewhere/else", environ={})
    assert config.servers["a"].cwd == str(tmp_path / "proj" / "tools")


def test_cwd_tilde_and_absolute():
    assert parse_one({"command": "x", "cwd": "~/work"}, environ={"HOME": "/home/u"})[0].cwd == "/home/u/work"
    assert parse_one({"command": "x", "cwd": "/opt/x"})[0].cwd == "/opt/x"
    assert parse_one({"command": "x", "cwd": "${D}/y"}, environ={"D": "/data"})[0].cwd == "/data/y"
    assert parse_one({"command": "x"})[0].cwd is None


# --- ${VAR} substitution ----------------------------------------------------


def test_substitution_in_every_string_field():
    environ = {"CMD": "node", "A": "arg", "V": "val", "H": "host", "T": "tok", "P": "pre"}
    server = parse_one(
        {"command": "${CMD}", "args": ["--x=${A}"], "env": {"K": "${V}"}, "includeTools": ["${P}_*"]}, environ
    )[0]
    assert (server.command, server.args, server.env, server.include_tools) == (
        "node", ["--x=arg"], {"K": "val"}, ["pre_*"])
    server = parse_one(
        {
            "type": "${TY}",
            "url": "https://${H}/mcp",
            "headers": {"Authorization": "Bearer ${T}"},
            "excludeTools": ["${P}"],
        },
        dict(environ, TY="sse"),
    )[0]
    assert (server.type, server.url, server.headers, server.exclude_tools) == (
        "sse", "https://host/mcp", {"Authorization": "Bearer tok"}, ["pre"])


def test_substitution_keeps_raw_and_does_not_touch_keys():
    entry = {"command": "x", "env": {"${K}": "${V}"}}
    server = parse_one(entry, {"K": "key", "V": "value"})[0]
    assert server.env == {"${K}": "value"}
    assert server.raw == entry


@pytest.mark.parametrize(
    "template, environ, expected",
    [
        ("${X}", {"X": "set"}, "set"),
        ("${X}", {"X": ""}, ""),
        ("a${X}b${Y}c", {"X": "1", "Y": "2"}, "a1b2c"),
        ("${X:-fallback}", {}, "fallback"),
        ("${X:-fallback}", {"X": ""}, "fallback"),
        ("${X:-fallback}", {"X": "set"}, "set"),
        ("${X:-}", {}, ""),
        ("${X:-a:-b}", {}, "a:-b"),
        ("$${X}", {"X": "set"}, "${X}"),
        ("$$${X}", {"X": "set"}, "$${X}"),  # "$" then the "$${" escape
        ("$X and $", {"X": "set"}, "$X and $"),
        ("${X}}", {"X": "v"}, "v}"),
    ],
)
def test_substitution_forms(template, environ, expected):
    assert parse_one({"command": "x", "args": [template]}, environ)[0].args == [expected]


def test_unset_variable_fails_only_its_server_naming_the_variable():
    # Not a problem of the file: that server alone cannot start, the others load.
    servers, warnings = parse(servers_doc(
        github={"url": "http://h", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}},
        other={"command": "x"},
    ))
    assert servers["github"].config_error == "${GITHUB_TOKEN} is not set (export it or remove it from server 'github')"
    assert servers["other"].config_error is None and warnings == []
    server, _ = parse_one({"command": "x", "args": ["a", "${MISSING}"]})
    assert server.config_error.startswith("${MISSING} is not set")


def test_unset_variable_in_command_is_one_error_not_a_cascade():
    server, _ = parse_one({"command": "${NOPE}"})
    assert server.config_error == "${NOPE} is not set (export it or remove it from server 's')"
    # A URL made of an unset variable is not also "not a valid URL".
    server, _ = parse_one({"url": "${BASE}/mcp", "headers": {"A": "${BASE}"}})
    assert server.type == "http" and server.config_error.startswith("${BASE} is not set")
    # The type cannot be left unknown: that stays a problem of the file.
    assert problem_of({"type": "${NOPE}", "url": "http://h"}).startswith(f'{SRC}: server "s", field type:')


def test_every_unset_variable_of_a_server_is_named():
    server, _ = parse_one({"command": "${A} ${B}", "env": {"X": "${A}"}})
    assert server.config_error == "${A} and ${B} are not set (export them or remove them from server 's')"


@pytest.mark.parametrize("reference", ["${a b}", "${1X}", "${}", "${X-y}"])
def test_invalid_variable_names(reference):
    message = problem_of({"command": "x", "env": {"E": "v=" + reference}})
    assert message == (
        f'{SRC}: server "s", field env.E: invalid variable reference {json.dumps(reference)}: '
        "names may contain only letters, digits and '_' and must not start with a digit"
    )


def test_unterminated_reference():
    message = problem_of({"command": "x", "args": ["${HOME"]})
    assert message == (
        f'{SRC}: server "s", field args[0]: unterminated "${{" in "${{HOME" (write $${{ for a literal "${{")'
    )


# --- include/exclude --------------------------------------------------------


def test_allows_tool_include_then_exclude():
    server = ServerConfig(name="s", type="stdio", source=SRC, command="x")
    assert server.allows_tool("anything")
    server.include_tools = ["get_*", "search"]
    assert server.allows_tool("get_issue")
    assert server.allows_tool("search")
    assert not server.allows_tool("search_all")  # exact name, not a prefix
    assert not server.allows_tool("delete_issue")
    assert not server.allows_tool("GET_issue")  # case-sensitive
    server.exclude_tools = ["get_secret?"]
    assert not server.allows_tool("get_secret1")
    assert server.allows_tool("get_secret")  # ? needs one character
    server.include_tools = []
    assert server.allows_tool("delete_issue")
    assert not server.allows_tool("get_secretX")


# --- masked_view ------------------------------------------------------------


def test_masked_view_masks_literals_and_shows_templates():
    text = servers_doc(
        local={
            "command": "npx",
            "args": ["-y", "pkg", "--api-key", "sk-live", "--token=abc", "--key", "${K}", "--port", "80", "--verbose"],
            "env": {"LITERAL": "s3cret", "FROM_ENV": "${MY_KEY}", "MIXED": "x-${MY_KEY:-d}"},
        },
        remote={
            "type": "streamable-http",
            "url": "https://me:pw@h.example/mcp?api_key=1&Signature=2&page=3",
            "headers": {"Authorization": "Bearer ${TOKEN}", "X-Static": "abc123"},
            "timeout": 20,
            "includeTools": ["get_*"],
            "excludeTools": ["get_x"],
            "disabled": True,
        },
        tmpl={"url": "https://h/mcp?x=${SECRET}"},
    )
    servers, warnings = parse(text, {"MY_KEY": "real-key", "K": "real-k", "TOKEN": "real-token", "SECRET": "real-s"})
    view = masked_view(Config(servers=servers, files=[SRC], warnings=["w"]))
    assert view == {
        "files": [SRC],
        "warnings": ["w"],
        "builtinTools": True,
        "workspaceRoots": [],
        "mcpToolNames": "prefixed",
        "maxMessageBytes": 8 * 1024 * 1024,
        "requireIsolation": False,
        "suggestions": {"enabled": True, "backend": "auto", "model": None, "timeout": 1.5, "minInterval": 5.0, "maxTools": 5},
        "memory": {"enabled": True, "dataDir": None, "captureReadOnly": False, "injectBudget": 600, "briefBudget": 200, "briefInterval": 60.0,
                   "summaryBackend": "none", "summaryModel": None},
        "servers": {
            "local": {
                "type": "stdio",
                "command": "npx",
                "args": [
                    "-y", "pkg", "--api-key", "****", "--token=****", "--key", "${K}", "--port", "80", "--verbose"
                ],
                "env": {"LITERAL": "****", "FROM_ENV": "${MY_KEY}", "MIXED": "x-${MY_KEY:-d}"},
                "source": SRC,
            },
            "remote": {
                "type": "http",
                "url": "https://me:****@h.example/mcp?api_key=****&Signature=****&page=3",
                "headers": {"Authorization": "Bearer ${TOKEN}", "X-Static": "****"},
                "timeout": 20.0,
                "includeTools": ["get_*"],
                "excludeTools": ["get_x"],
                "disabled": True,
                "source": SRC,
            },
            "tmpl": {"type": "http", "url": "https://h/mcp?x=${SECRET}", "source": SRC},
        },
        "untrusted": [],
        "claudeCodeServers": True,
        "claudeCodeFiles": [],
        "notImported": [],
    }
    dumped = json.dumps(view)
    for secret in ("real-key", "real-k", "real-token", "real-s", "s3cret", "sk-live", "abc123", ":pw@"):
        assert secret not in dumped
    assert json.loads(dumped) == view  # JSON-ready


def test_masked_view_masks_token_only_userinfo():
    servers, _ = parse(servers_doc(gh={"url": "https://ghp_abc@api.example/mcp"}))
    view = masked_view(Config(servers=servers, files=[], warnings=[]))
    assert view["servers"]["gh"]["url"] == "https://****@api.example/mcp"


# --- ConfigError ------------------------------------------------------------


def test_config_error_message_counts_further_problems():
    err = ConfigError(["p1", "p2", "p3"])
    assert str(err) == "p1 (and 2 more problems; run `toolscript config validate` to see all)"
    assert str(ConfigError(["p1", "p2"])) == "p1 (and 1 more problem; run `toolscript config validate` to see all)"
    assert str(ConfigError(["only"])) == "only"
    assert err.problems == ["p1", "p2", "p3"]
    assert isinstance(err, UserError) and err.exit_code == 1


def test_config_error_message_is_one_line_even_for_odd_input():
    assert "\n" not in str(ConfigError(["a\nb", "c"]))


def test_problems_in_one_file_are_all_collected():
    problems = problems_of(servers_doc(a={"command": 1}, b={"url": "ftp://x"}, c={"command": "x", "timeout": 0}))
    assert [p.split(": ")[1] for p in problems] == ["mcpServers.a.command", "mcpServers.b.url", "mcpServers.c.timeout"]


def test_problems_across_files_are_all_collected(tmp_path):
    bad_json = write(tmp_path / "a.json", '{"mcpServers": {,}}')
    bad_entry = write(tmp_path / "b.json", {"mcpServers": {"x": {"args": []}, "y": {"comand": "z", "command": "ok"}}})
    empty = write(tmp_path / "c.json", "")
    good = write(tmp_path / "d.json", {"mcpServers": {"z": {"command": "z"}}})
    with pytest.raises(ConfigError) as info:
        load_config([bad_json, bad_entry, str(tmp_path / "missing.json"), empty, good], environ={})
    err = info.value
    assert [p.split(":")[0] for p in err.problems] == [bad_json, bad_entry, "config file not found", empty]
    assert str(err) == err.problems[0] + " (and 3 more problems; run `toolscript config validate` to see all)"
    assert "\n" not in str(err)
    # Warnings gathered on the way are kept for `config validate`.
    assert len(err.warnings) == 1
    assert err.warnings[0].startswith(f"{bad_entry}: mcpServers.y: unknown key")


def test_gateway_settings_expand_variables_and_resolve_paths(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"mcpServers": {}, "workspaceRoots": ["${NOTES}/x", "rel", "~/h"], "builtinTools": ["time.now"], "mcpToolNames": "plain"}))
    config = load_config([str(path)], environ={"NOTES": "/data/notes", "HOME": "/home/u"})
    assert config.workspace_roots == ["/data/notes/x", str(tmp_path / "rel"), "/home/u/h"]
    assert config.builtin_tools == ["time.now"] and config.mcp_tool_names == "plain"
    path.write_text(json.dumps({"workspaceRoots": ["${MISSING}"], "mcpToolNames": "loud"}))
    with pytest.raises(ConfigError) as err:
        load_config([str(path)], environ={})
    assert any("workspaceRoots[0]: environment variable MISSING is not set" in p for p in err.value.problems)
    assert any('mcpToolNames: expected "prefixed" or "plain", got "loud"' in p for p in err.value.problems)


# --- a server whose ${VAR} is unset; maxMessageBytes --------------------------------


@pytest.fixture
def github_unset(tmp_path):
    """A config whose "github" server needs ${GITHUB_TOKEN} (unset) next to a working server."""
    return github_unset_config(tmp_path)


def test_unset_variable_leaves_the_other_servers_loadable(github_unset):
    config = load_config([github_unset], environ={})
    assert config.servers["github"].config_error == GITHUB_ERROR
    assert config.servers["other"].config_error is None
    assert [s.name for s in config.enabled_servers()] == ["github", "other"]


def test_max_message_bytes_per_server_and_as_the_top_level_default(tmp_path):
    path = write(tmp_path / "c.json", {
        "maxMessageBytes": 1000,
        "mcpServers": {"a": {"command": "x"}, "b": {"command": "x", "maxMessageBytes": 2000}},
    })
    config = load_config([path], environ={})
    assert (config.servers["a"].max_message_bytes, config.servers["b"].max_message_bytes) == (1000, 2000)
    assert masked_view(config)["maxMessageBytes"] == 1000
    plain = write(tmp_path / "d.json", {"mcpServers": {"a": {"command": "x"}}})
    assert load_config([plain], environ={}).servers["a"].max_message_bytes == DEFAULT_MAX_MESSAGE_BYTES


def test_the_top_level_default_applies_to_servers_of_every_file(tmp_path):
    servers = write(tmp_path / "a.json", {"mcpServers": {"a": {"command": "x"}}})
    settings = write(tmp_path / "b.json", {"maxMessageBytes": 4096})
    assert load_config([servers, settings], environ={}).servers["a"].max_message_bytes == 4096


@pytest.mark.parametrize("value", [0, -1, 1.5, "8MB", True, None])
def test_bad_max_message_bytes_is_a_clear_problem(tmp_path, value):
    path = write(tmp_path / "c.json", {"mcpServers": {"a": {"command": "x", "maxMessageBytes": value}}})
    with pytest.raises(ConfigError) as err:
        load_config([path], environ={})
    assert err.value.problems == [
        f"{path}: mcpServers.a.maxMessageBytes: expected a positive whole number of bytes, got {json.dumps(value)} "
        f"(the default is {DEFAULT_MAX_MESSAGE_BYTES}, 8 MiB)"
    ]
    top = write(tmp_path / "t.json", {"maxMessageBytes": value})
    with pytest.raises(ConfigError) as err:
        load_config([top], environ={})
    assert err.value.problems[0].startswith(f"{top}: maxMessageBytes: expected a positive whole number of bytes")


def test_max_message_bytes_is_a_known_key(tmp_path):
    path = write(tmp_path / "c.json", {"maxMessageBytes": 10, "mcpServers": {"a": {"command": "x", "maxMessageBytes": 10}}})
    assert load_config([path], environ={}).warnings == []


def test_config_text_is_read_only_through_load_config():
    """load_config reads the files and asks trust about the project's; no second entry point parses text around that."""
    from toolscript.config import load

    assert not hasattr(load, "parse_config_text")
