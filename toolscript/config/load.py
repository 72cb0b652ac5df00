"""Load toolscript's configuration: which MCP servers exist and how to reach them.

The file format is Claude Code's ``mcpServers`` JSON, so users can copy their
servers over unchanged::

    {
      "mcpServers": {
        "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]},
        "remote": {"type": "http", "url": "https://example.com/mcp",
                   "headers": {"Authorization": "Bearer ${TOKEN}"}}
      }
    }

Files are read in order (``~/.toolscript.json`` then ``./.toolscript.json``,
or the comma-separated list in ``TOOLSCRIPT_CONFIG`` / ``--config``).  A later
file's entry replaces an earlier entry of the same name as a whole (no deep
merge) and takes over its position in the ordering.

The project's ``./.toolscript.json`` comes with the repository, not from the
user: until the user approves its exact content (``toolscript trust``,
``toolscript.config.trust``) nothing in it counts.  It is not parsed with the user's
environment, none of its servers exists, none of its settings applies; it is
listed in ``Config.untrusted`` with the names of the servers it would add, so
every command can say what awaits approval.

Every problem is reported as one line naming the file and the JSON path of the
offending value.  Problems from all files are collected and raised together as
one ``ConfigError`` so ``toolscript config validate`` can list them all.  An
unset ``${VAR}`` is not a problem of the file: it stops only the server that
uses it, which keeps the reason in ``ServerConfig.config_error``.
"""

from __future__ import annotations

import copy
import difflib
import json
import math
import os
import re
import urllib.parse
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from toolscript.config import keys as configkeys
from toolscript.config.model import (  # re-exported: the configuration's parts are imported from here too
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_MAX_MESSAGE_BYTES,
    Config,
    Imported,
    NotImported,
    OAuthConfig,
    ServerConfig,
    UntrustedFile,
)
from toolscript.errors import UserError

__all__ = [
    "DEFAULT_CALL_TIMEOUT", "DEFAULT_CONNECT_TIMEOUT", "DEFAULT_MAX_MESSAGE_BYTES", "DEFAULT_PATHS", "MASK", "OAUTH_KEYS",
    "Config", "ConfigError", "Imported", "NotImported", "OAuthConfig", "ServerConfig", "UntrustedFile",
    "default_config_paths", "is_secret_name", "load_config", "mask_url", "references_variable",
]


DEFAULT_PATHS = list(configkeys.DEFAULT_PATHS)

_TOP_LEVEL_KEYS = ["mcpServers", "builtinTools", "workspaceRoots", "mcpToolNames", "maxMessageBytes", "requireIsolation", "suggestions", "memory",
                   configkeys.CLAUDE_CODE_SERVERS_KEY, "$schema"]
_SERVER_KEYS = [
    "type",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "includeTools",
    "excludeTools",
    "timeout",
    "maxMessageBytes",
    "disabled",
    "oauth",
]
_TYPE_ALIASES = {
    "stdio": "stdio",
    "http": "http",
    "sse": "sse",
    "streamable-http": "http",
    "streamableHttp": "http",
    "streamable_http": "http",
}
# Fields that only mean something for one kind of transport.
_STDIO_ONLY = ["args", "env", "cwd"]
_REMOTE_ONLY = ["headers", "oauth"]
# The "oauth" object of an http/sse server: JSON key -> OAuthConfig attribute.
OAUTH_KEYS = {
    "clientId": "client_id",
    "clientSecret": "client_secret",
    "scope": "scope",
    "clientMetadataUrl": "client_metadata_url",
    "redirectPort": "redirect_port",
}

# ``__`` joins server and tool names into tool ids (``server__tool``), so a
# server name containing it would make ids ambiguous.
_NAME_RE = re.compile(r"[A-Za-z0-9_.-]+\Z")
_VAR_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Keys printed bare in JSON paths; anything else is quoted (``mcpServers."a b"``).
_BARE_KEY_RE = re.compile(r"[A-Za-z0-9_-]+\Z")

# What a secret's name contains: masked by ``config show`` (toolscript.config.view) and in problem messages.
_SECRET_WORDS = ("token", "key", "secret", "password", "auth")
_SECRET_QUERY_WORDS = _SECRET_WORDS + ("sig",)
MASK = "****"


class ConfigError(UserError):
    """One or more configuration problems.

    ``str()`` is the first problem on one line, followed by a count of the
    rest; ``problems`` holds every problem and ``warnings`` the warnings
    gathered before the error (both one line per item).
    """

    def __init__(self, problems: List[str], warnings: Optional[List[str]] = None) -> None:
        self.problems = list(problems)
        self.warnings = list(warnings or [])
        message = _one_line(self.problems[0]) if self.problems else "invalid configuration"
        more = len(self.problems) - 1
        if more > 0:
            noun = "problem" if more == 1 else "problems"
            message += f" (and {more} more {noun}; run `toolscript config validate` to see all)"
        super().__init__(message)


def default_config_paths(*, cwd: Optional[str] = None, environ: Optional[Mapping[str, str]] = None) -> List[str]:
    """The config files to read when none are given, resolved to absolute paths.

    ``TOOLSCRIPT_CONFIG`` (comma-separated) replaces the two defaults.
    """
    paths, _ = _select_paths(None, cwd, environ)
    return paths


def load_config(
    paths: Optional[List[str]] = None,
    *,
    cwd: Optional[str] = None,
    environ: Optional[Mapping[str, str]] = None,
) -> Config:
    """Read and merge the config files; raise ``ConfigError`` listing every problem.

    ``paths=None`` means ``default_config_paths()``; an explicit list replaces
    the defaults.  Missing default files are skipped silently; a missing file
    the user named is a problem.  A server whose ``${VAR}`` is unset is kept,
    with ``config_error`` saying why it cannot start.  An unapproved project
    file is set aside in ``Config.untrusted`` (see the module docstring).
    """
    environ = os.environ if environ is None else environ
    selected, explicit = _select_paths(paths, cwd, environ)
    project = configkeys.project_path(paths, cwd, environ)
    untrusted: List[UntrustedFile] = []
    servers: Dict[str, ServerConfig] = {}
    files: List[str] = []
    warnings: List[str] = []
    problems: List[str] = []
    settings: Dict[str, Any] = {}
    suggestions = dict(configkeys.SUGGESTION_DEFAULTS)  # merged per key: a later file overrides only what it sets
    memory = dict(configkeys.MEMORY_DEFAULTS)
    for path in selected:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            if explicit:
                problems.append(f"config file not found: {path} (named by --config or TOOLSCRIPT_CONFIG; fix the path or create the file)")
            continue
        except OSError as exc:
            problems.append(f"{path}: cannot read file: {exc.strerror or exc}")
            continue
        if path == project:
            from toolscript.config import trust

            decision = trust.status(path, data, environ)
            if decision != trust.TRUSTED:
                untrusted.append(_untrusted(path, data, decision))
                continue
        files.append(path)
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
            byte = data[exc.start]
            problems.append(f"{path}:{line}:{col}: file is not valid UTF-8 (byte 0x{byte:02x}); save it as UTF-8")
            continue
        file_servers, file_warnings, file_problems, file_settings = _parse(text, path, environ)
        suggestions.update(file_settings.pop("suggestions", {}))
        memory.update(file_settings.pop("memory", {}))
        settings.update(file_settings)  # later files win per setting, as per server
        warnings.extend(file_warnings)
        problems.extend(file_problems)
        # A later definition replaces the earlier one wholesale, and dict.update
        # keeps the earlier one's position in the ordering.
        servers.update(file_servers)
    if problems:
        raise ConfigError(problems, warnings)
    claude_code: Dict[str, Any] = {}
    if settings.get("claude_code_servers", True):
        claude_code = _claude_code_servers(servers, untrusted, warnings, cwd, environ)
    default_max = settings.get("max_message_bytes")
    if default_max is not None:
        for server in servers.values():
            if "maxMessageBytes" not in server.raw:
                server.max_message_bytes = default_max
    return Config(servers=servers, files=files, warnings=warnings, suggestions=suggestions, memory=memory,
                  untrusted=untrusted, **claude_code, **settings)


def _claude_code_servers(servers: Dict[str, ServerConfig], untrusted: List[UntrustedFile], warnings: List[str],
                         cwd: Optional[str], environ: Mapping[str, str]) -> Dict[str, Any]:
    """Add the servers Claude Code is configured with for this project (toolscript's own entries win by name).

    Claude Code's files are not toolscript's: nothing in them fails the
    configuration.  What cannot be served is listed in ``not_imported`` (a
    warning when the user did not choose it), and project servers Claude Code
    has not approved are set aside like an untrusted file.
    """
    from toolscript.config import claude_code

    found = claude_code.read(os.getcwd() if cwd is None else cwd, environ)
    not_imported = list(found.not_imported)
    for name, server in found.servers.items():
        if name in servers:
            not_imported.append(NotImported(name, server.describe_source(), f"{servers[name].source} defines {name!r}, which wins", warn=False))
        else:
            servers[name] = server
    for item in not_imported:
        if item.warn:
            warnings.append(f"{item.source}: server {item.name!r} is not served: {item.reason}")
    warnings.extend(found.warnings)
    for pending in found.pending:
        pending.servers = {name: entry for name, entry in pending.servers.items() if name not in servers}
        if pending.servers:
            untrusted.append(pending)
    return {"claude_code_files": found.files, "not_imported": not_imported}


def _untrusted(path: str, data: bytes, decision: str) -> UntrustedFile:
    """What an unapproved file would add, read as plain JSON: nothing is expanded, resolved or validated."""
    from toolscript.config import trust

    found = UntrustedFile(path=path, status=decision, sha256=trust.digest(data))
    try:
        document = json.loads(data.decode("utf-8-sig"))
    except (ValueError, RecursionError) as exc:
        found.problem = f"not valid JSON ({exc.__class__.__name__})"
        return found
    if not isinstance(document, dict):
        found.problem = 'top level is not a JSON object with "mcpServers"'
        return found
    entries = document.get("mcpServers")
    if isinstance(entries, dict):
        found.servers = {str(name): entry for name, entry in entries.items()}
    elif "mcpServers" in document:
        found.problem = f'"mcpServers" is {_json_type(entries)}, not an object'
    found.settings = [key for key in document if key not in ("mcpServers", "$schema")]
    return found


# --- file selection ---------------------------------------------------------


def _select_paths(
    paths: Optional[List[str]], cwd: Optional[str], environ: Optional[Mapping[str, str]]
) -> Tuple[List[str], bool]:
    """Resolved paths to read, and whether the user named them explicitly (``configkeys.select_paths``)."""
    return configkeys.select_paths(paths, cwd, environ)


_resolve_path = configkeys.resolve_path


# --- parsing and validation -------------------------------------------------


def _parse(
    text: str, source: str, environ: Mapping[str, str]
) -> Tuple[Dict[str, ServerConfig], List[str], List[str], Dict[str, Any]]:
    """Parse one file's text into ``(servers, warnings, problems, settings)``.

    ``settings`` holds the top-level keys other than ``mcpServers``, as
    keyword arguments of ``Config``.
    """
    servers: Dict[str, ServerConfig] = {}
    warnings: List[str] = []
    problems: List[str] = []
    settings: Dict[str, Any] = {}
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        problems.append(f'{source}: file is empty; write {{"mcpServers": {{}}}} or delete it')
        return servers, warnings, problems, settings
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        problems.append(f"{source}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}{_json_hint(text, exc)}")
        return servers, warnings, problems, settings
    except RecursionError:
        problems.append(f"{source}: invalid JSON: nested too deeply")
        return servers, warnings, problems, settings
    if not isinstance(document, dict):
        problems.append(f'{source}: top level must be a JSON object with "mcpServers"')
        return servers, warnings, problems, settings
    for key in document:
        if key not in _TOP_LEVEL_KEYS:
            hint = _did_you_mean(key, _TOP_LEVEL_KEYS)
            warnings.append(f"{source}: unknown top-level key {_quote(key)} ignored{hint}")
    _parse_settings(document, source, environ, settings, problems)
    if "mcpServers" not in document:
        warnings.append(f'{source}: no "mcpServers" key; this file defines no servers')
        return servers, warnings, problems, settings
    entries = document["mcpServers"]
    if not isinstance(entries, dict):
        problems.append(f"{source}: mcpServers: expected an object, got {_json_type(entries)}")
        return servers, warnings, problems, settings
    for name, entry in entries.items():
        server = _parse_server(name, entry, source, environ, warnings, problems)
        if server is not None:
            servers[name] = server
    return servers, warnings, problems, settings


def _parse_settings(document: Dict[str, Any], source: str, environ: Mapping[str, str], settings: Dict[str, Any], problems: List[str]) -> None:
    """The top-level keys: ``builtinTools``, ``mcpToolNames``, ``workspaceRoots``, ``maxMessageBytes``, ``requireIsolation``, ``suggestions``, ``memory``."""
    max_message_bytes = _max_message_bytes(document, "maxMessageBytes", source, problems)
    if max_message_bytes is not None:
        settings["max_message_bytes"] = max_message_bytes
    if "builtinTools" in document:
        value = document["builtinTools"]
        if isinstance(value, bool) or (isinstance(value, list) and all(isinstance(v, str) and v for v in value)):
            settings["builtin_tools"] = value
        else:
            problems.append(f"{source}: builtinTools: expected true, false or an array of tool names, got {_json_type(value)}")
    if "mcpToolNames" in document:
        value = document["mcpToolNames"]
        if value in ("prefixed", "plain"):
            settings["mcp_tool_names"] = value
        else:
            problems.append(f'{source}: mcpToolNames: expected "prefixed" or "plain", got {json.dumps(value)}')
    if configkeys.CLAUDE_CODE_SERVERS_KEY in document:
        value = document[configkeys.CLAUDE_CODE_SERVERS_KEY]
        if isinstance(value, bool):
            settings["claude_code_servers"] = value
        else:
            problems.append(f"{source}: {configkeys.CLAUDE_CODE_SERVERS_KEY}: expected true or false, got {_json_type(value)}")
    if "requireIsolation" in document:
        value = document["requireIsolation"]
        if isinstance(value, bool):
            settings["require_isolation"] = value
        else:
            problems.append(f"{source}: requireIsolation: expected true or false, got {_json_type(value)}")
    for section in (configkeys.SUGGESTIONS_KEY, configkeys.MEMORY_KEY):
        if section in document:
            given, trouble = configkeys.parse_section(section, document[section], source)
            problems.extend(trouble)
            settings.setdefault(section, {}).update(given)
    if "workspaceRoots" in document:
        value = document["workspaceRoots"]
        if isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value):
            base = os.path.dirname(os.path.abspath(source))
            roots = []
            for index, raw in enumerate(value):
                expanded, errors, missing = _substitute(raw, environ)
                errors += [_unset_message(variable) for variable in missing]
                problems.extend(f"{source}: workspaceRoots[{index}]: {error}" for error in errors)
                roots.append(_resolve_path(expanded, base, environ))
            settings["workspace_roots"] = roots
        else:
            problems.append(f"{source}: workspaceRoots: expected an array of directory paths, got {_json_type(value)}")


def _parse_server(
    name: str,
    entry: Any,
    source: str,
    environ: Mapping[str, str],
    warnings: List[str],
    problems: List[str],
) -> Optional[ServerConfig]:
    """Validate one ``mcpServers`` entry; append to ``problems`` and return None if it is bad."""
    path = _member("mcpServers", name)
    before = len(problems)

    def problem(where: str, message: str) -> None:
        problems.append(f"{source}: {where}: {message}")

    if not name:
        problem(path, "server names must not be empty")
    elif not _NAME_RE.match(name):
        problem(path, "server names may contain only letters, digits, '_', '-' and '.'")
    elif "__" in name:
        problem(path, "server names must not contain '__' (toolscript joins server and tool names with it)")
    if not isinstance(entry, dict):
        problem(path, f"expected an object, got {_json_type(entry)}")
        return None

    for key in entry:
        if key not in _SERVER_KEYS:
            warnings.append(f"{source}: {path}: unknown key {_quote(key)} ignored{_did_you_mean(key, _SERVER_KEYS)}")

    # Unset variables do not make the file invalid: they stop this one server
    # (``config_error``) and leave every other server working.
    unset: List[str] = []

    def substitute(value: str, field_path: str) -> Optional[str]:
        # None on failure, so later checks do not pile more errors onto a half-expanded value.
        result, errors, missing = _substitute(value, environ)
        if field_path == "type":
            # Without its type the entry cannot even be described: a plain problem.
            errors += [_unset_message(variable) for variable in missing]
            missing = []
        for error in errors:
            problems.append(f"{source}: server {_quote(name)}, field {field_path}: {error}")
        unset.extend(variable for variable in missing if variable not in unset)
        return None if errors or missing else result

    def string(key: str) -> Optional[str]:
        if key not in entry:
            return None
        value = entry[key]
        if not isinstance(value, str):
            problem(_member(path, key), f"expected a string, got {_json_type(value)}")
            return None
        return substitute(value, key)

    def string_list(key: str) -> List[str]:
        value = entry.get(key, [])
        if not isinstance(value, list):
            problem(_member(path, key), f"expected an array of strings, got {_json_type(value)}")
            return []
        items = []
        for i, item in enumerate(value):
            item_path = f"{key}[{i}]"
            if not isinstance(item, str):
                problem(f"{path}.{item_path}", f"expected a string, got {_json_type(item)}")
                continue
            expanded = substitute(item, item_path)
            if expanded is not None:
                items.append(expanded)
        return items

    def string_map(key: str) -> Dict[str, str]:
        value = entry.get(key, {})
        if not isinstance(value, dict):
            problem(_member(path, key), f"expected an object of strings, got {_json_type(value)}")
            return {}
        result = {}
        for k, v in value.items():
            item_path = _member(key, k)
            if not isinstance(v, str):
                problem(f"{path}.{item_path}", f"expected a string, got {_json_type(v)}")
                continue
            expanded = substitute(v, item_path)
            if expanded is not None:
                result[k] = expanded
        return result

    type_value = string("type")
    command = string("command")
    args = string_list("args")
    env = string_map("env")
    cwd = string("cwd")
    url = string("url")
    headers = string_map("headers")
    include_tools = string_list("includeTools")
    exclude_tools = string_list("excludeTools")

    timeout: Optional[float] = None
    if "timeout" in entry:
        value = entry["timeout"]
        # bool is an int subclass; "timeout": true is a mistake, not 1 second.
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            problem(_member(path, "timeout"), f"expected a number of seconds, got {_json_type(value)}")
        elif not math.isfinite(value) or value <= 0:
            problem(_member(path, "timeout"), f"must be a number of seconds greater than 0, got {value!r}")
        else:
            timeout = float(value)

    max_message_bytes = _max_message_bytes(entry, _member(path, "maxMessageBytes"), source, problems)

    oauth = _parse_oauth(entry, _member(path, "oauth"), problem, substitute)

    disabled = False
    if "disabled" in entry:
        value = entry["disabled"]
        if not isinstance(value, bool):
            problem(_member(path, "disabled"), f"expected a boolean, got {_json_type(value)}")
        else:
            disabled = value

    for key, value in (("command", command), ("cwd", cwd), ("url", url)):
        if value is not None and not value:
            problem(_member(path, key), "must not be empty")
    for key, items in (("includeTools", include_tools), ("excludeTools", exclude_tools)):
        for i, item in enumerate(items):
            if not item:
                problem(f"{path}.{key}[{i}]", "must not be empty")

    if url:
        # Show the template when there is one, so an error never prints a substituted secret.
        raw_url = entry["url"]
        url_problem = _check_url(url, raw_url if references_variable(raw_url) else mask_url(url))
        if url_problem:
            problem(_member(path, "url"), url_problem)

    if cwd:
        # Relative to the file, so a project's .toolscript.json works from any directory.
        cwd = _resolve_path(cwd, os.path.dirname(os.path.abspath(source)), environ)

    # Infer from which keys are present, not from their values: a bad value is
    # already reported and should not also produce "needs command".
    server_type = _server_type(type_value, "type" in entry, "command" in entry, "url" in entry, path, problem)
    if server_type is not None:
        unused = _REMOTE_ONLY if server_type == "stdio" else _STDIO_ONLY
        for key in unused:
            if key in entry:
                warnings.append(f'{source}: {path}: "{key}" is ignored for a {server_type} server')

    if len(problems) > before or server_type is None:
        return None
    return ServerConfig(
        name=name,
        type=server_type,
        source=source,
        command=command,
        args=args,
        env=env,
        cwd=cwd,
        url=url,
        headers=headers,
        include_tools=include_tools,
        exclude_tools=exclude_tools,
        timeout=timeout,
        max_message_bytes=max_message_bytes or DEFAULT_MAX_MESSAGE_BYTES,
        disabled=disabled,
        oauth=oauth,
        raw=copy.deepcopy(entry),
        config_error=_unset_error(unset, name) if unset else None,
    )


def _parse_oauth(
    entry: Dict[str, Any],
    where: str,
    problem: Callable[[str, str], None],
    substitute: Callable[[str, str], Optional[str]],
) -> OAuthConfig:
    """A server's ``"oauth"``: ``false`` (never sign in), ``true``/absent (defaults) or an object of the keys in ``OAUTH_KEYS``."""
    if "oauth" not in entry:
        return OAuthConfig()
    value = entry["oauth"]
    if isinstance(value, bool):
        return OAuthConfig(enabled=value)
    if not isinstance(value, dict):
        problem(where, f"expected an object (or false to never sign in), got {_json_type(value)}")
        return OAuthConfig()
    settings: Dict[str, Any] = {}
    for key, item in value.items():
        attribute = OAUTH_KEYS.get(key)
        if attribute is None:
            problem(_member(where, key), f"unknown key (known: {', '.join(OAUTH_KEYS)}){_did_you_mean(key, list(OAUTH_KEYS))}")
            continue
        if key == "redirectPort":
            if isinstance(item, bool) or not isinstance(item, int) or not 1 <= item <= 65535:
                problem(_member(where, key), f"expected a port number from 1 to 65535, got {json.dumps(item) if not isinstance(item, (dict, list)) else _json_type(item)}")
            else:
                settings[attribute] = item
            continue
        if not isinstance(item, str) or not item.strip():
            problem(_member(where, key), f"expected a non-empty string, got {_json_type(item) if not isinstance(item, str) else 'an empty string'}")
            continue
        expanded = substitute(item, f"oauth.{key}")
        if expanded is not None:
            settings[attribute] = expanded
    if "clientSecret" in value and "clientId" not in value:
        problem(where, '"clientSecret" needs "clientId" (the client the secret belongs to)')
    url = settings.get("client_metadata_url")
    if url is not None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "https" or not parts.hostname or parts.path in ("", "/"):
            problem(_member(where, "clientMetadataUrl"), f"{_quote(url)} must be an https URL with a path (the client ID metadata document)")
    return OAuthConfig(**settings)


def _server_type(
    type_value: Optional[str],
    has_type: bool,
    has_command: bool,
    has_url: bool,
    path: str,
    problem: Callable[[str, str], None],
) -> Optional[str]:
    """The canonical transport type, inferred when absent; None after reporting a problem."""
    if has_type and type_value is None:
        return None  # a non-string or failed substitution, already reported
    if type_value is not None:
        server_type = _TYPE_ALIASES.get(type_value)
        if server_type is None:
            accepted = (
                '"stdio", "http" or "sse" ("streamable-http", "streamableHttp" and "streamable_http" mean "http")'
            )
            problem(_member(path, "type"), f"{_quote(type_value)} is not a server type; use {accepted}")
            return None
    elif has_command and has_url:
        problem(path, 'has both "command" and "url"; keep "command" for a stdio server or "url" for an http/sse server')
        return None
    elif has_command:
        server_type = "stdio"
    elif has_url:
        server_type = "http"
    else:
        problem(path, 'needs "command" (a stdio server) or "url" (an http/sse server)')
        return None

    if server_type == "stdio":
        needed, has_needed, other, has_other = "command", has_command, "url", has_url
        other_types = 'type "http" or "sse"'
    else:
        needed, has_needed, other, has_other = "url", has_url, "command", has_command
        other_types = 'type "stdio"'
    if has_other:
        problem(path, f'type "{server_type}" needs "{needed}", not "{other}" (use {other_types} for a "{other}")')
        return None
    if not has_needed:
        problem(path, f'type "{server_type}" needs "{needed}"')
        return None
    return server_type


def _check_url(url: str, shown: str) -> Optional[str]:
    """What is wrong with a server URL, or None; ``shown`` is how to print it."""
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # raises ValueError for a non-numeric port
    except ValueError as exc:
        return f"{_quote(shown)} is not a valid URL ({exc})"
    if parts.scheme.lower() not in ("http", "https"):
        return f"{_quote(shown)} must start with http:// or https://"
    if not parts.hostname:
        return f"{_quote(shown)} has no host"
    return None


def _max_message_bytes(document: Dict[str, Any], where: str, source: str, problems: List[str]) -> Optional[int]:
    """``maxMessageBytes`` of a server entry or the top level: None when absent or bad (reported)."""
    if "maxMessageBytes" not in document:
        return None
    value = document["maxMessageBytes"]
    # bool is an int subclass; true is a mistake, not 1 byte.
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        shown = json.dumps(value) if isinstance(value, (bool, int, float, str)) or value is None else _json_type(value)
        problems.append(
            f"{source}: {where}: expected a positive whole number of bytes, got {shown} "
            f"(the default is {DEFAULT_MAX_MESSAGE_BYTES}, 8 MiB)"
        )
        return None
    return value


def _unset_message(variable: str) -> str:
    return f"environment variable {variable} is not set (export it, or write ${{{variable}:-default}})"


def _unset_error(variables: List[str], server: str) -> str:
    """Why a server with unset variables cannot start, naming each variable."""
    named = " and ".join(f"${{{variable}}}" for variable in variables)
    if len(variables) == 1:
        return f"{named} is not set (export it or remove it from server {server!r})"
    return f"{named} are not set (export them or remove them from server {server!r})"


def _substitute(value: str, environ: Mapping[str, str]) -> Tuple[str, List[str], List[str]]:
    """Expand ``${VAR}`` and ``${VAR:-default}`` in ``value``.

    Returns ``(result, errors, unset)``: malformed references are errors;
    variables that are not set (and have no default) are listed in ``unset``.
    """
    out: List[str] = []
    errors: List[str] = []
    missing: List[str] = []
    i = 0
    while i < len(value):
        if value.startswith("$${", i):
            out.append("${")
            i += 3
        elif value.startswith("${", i):
            end = value.find("}", i + 2)
            if end < 0:
                errors.append(f'unterminated "${{" in {_quote(value[i:])} (write $${{ for a literal "${{")')
                out.append(value[i:])
                break
            inner = value[i + 2 : end]
            name, has_default, default = inner.partition(":-")
            if not _VAR_NAME_RE.match(name):
                errors.append(
                    f"invalid variable reference {_quote(value[i:end + 1])}: names may contain only "
                    "letters, digits and '_' and must not start with a digit"
                )
            elif has_default:
                out.append(environ.get(name) or default)
            elif name in environ:
                out.append(environ[name])
            elif name not in missing:
                missing.append(name)
            i = end + 1
        else:
            out.append(value[i])
            i += 1
    return "".join(out), errors, missing


def references_variable(value: str) -> bool:
    """Whether ``value`` contains a ``${...}`` reference (not the ``$${`` escape)."""
    return "${" in value.replace("$${", "")


# --- messages ---------------------------------------------------------------


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _member(path: str, key: str) -> str:
    """``path.key``, quoting keys that would make the path ambiguous."""
    return f"{path}.{key}" if _BARE_KEY_RE.match(key) else f"{path}.{_quote(key)}"


def _quote(text: str) -> str:
    # json.dumps escapes newlines and quotes, keeping messages on one line.
    return json.dumps(text, ensure_ascii=False)


def _one_line(text: str) -> str:
    return text.replace("\r", "\\r").replace("\n", "\\n")


def _did_you_mean(key: str, known: List[str]) -> str:
    # Compare case-insensitively without separators so include_tools finds includeTools.
    def fold(s: str) -> str:
        return s.lower().replace("_", "").replace("-", "")

    folded = {fold(k): k for k in known}
    matches = difflib.get_close_matches(fold(key), list(folded), n=1, cutoff=0.6)
    return f" (did you mean {_quote(folded[matches[0]])}?)" if matches else ""


def _json_hint(text: str, exc: json.JSONDecodeError) -> str:
    """A hint for the JSON mistakes people make most: trailing commas and comments."""
    if "comma" in exc.msg.lower():
        return ""  # newer Pythons already say "Illegal trailing comma"
    if text.startswith(("//", "/*"), exc.pos):
        return " (JSON does not allow comments)"
    before = text[: exc.pos].rstrip()
    if before.endswith(",") and text[exc.pos : exc.pos + 1] in ("}", "]"):
        return " (trailing comma?)"
    return ""


# --- masking (config show, and URLs in messages) --------------------------------


def is_secret_name(name: str, words: Tuple[str, ...] = _SECRET_WORDS) -> bool:
    """Whether a flag, variable or query parameter name looks like it holds a secret (``--api-key``, ``sig``)."""
    name = name.lower()
    return any(word in name for word in words)


def mask_url(url: str) -> str:
    """``url`` with its userinfo secret and secret-looking query values replaced by ``****``."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return url
    netloc = parts.netloc
    userinfo, at, host = netloc.rpartition("@")
    if at:
        user, colon, _ = userinfo.partition(":")
        # A user with no password is usually a token (https://TOKEN@host), so mask it too.
        netloc = (f"{user}:{MASK}" if colon else MASK) + "@" + host
    query = parts.query
    if query:
        pairs = []
        for pair in query.split("&"):
            key, eq, _ = pair.partition("=")
            if eq and is_secret_name(urllib.parse.unquote_plus(key), _SECRET_QUERY_WORDS):
                pair = f"{key}={MASK}"
            pairs.append(pair)
        query = "&".join(pairs)
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
