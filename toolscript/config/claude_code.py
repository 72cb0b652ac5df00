"""The MCP servers Claude Code is configured with for a project, read the way Claude Code reads them.

toolscript serves them too, so a user who set servers up in Claude Code needs
no toolscript configuration.  What is read, as Claude Code 2.1.337 and
2.1.330 were observed to read it:

* **user scope**: ``~/.claude.json``'s top-level ``mcpServers``;
* **local scope**: ``~/.claude.json``'s ``projects[<root>].mcpServers``, where
  ``<root>`` is the real path of the git root of the working directory (the
  working directory itself outside a repository);
* **project scope**: ``.mcp.json`` in the working directory and every directory
  above it, the nearest file winning by name.  A project file comes with the
  repository, so its servers count only once Claude Code approved them
  (``enabledMcpjsonServers`` / ``enableAllProjectMcpServers`` in the settings
  layers Claude Code reads, never when ``disabledMcpjsonServers`` names them),
  or once the user trusted that exact file with ``toolscript trust .mcp.json``.

``CLAUDE_CONFIG_DIR`` replaces ``~/.claude.json`` with
``$CLAUDE_CONFIG_DIR/.claude.json`` and ``~/.claude/settings.json`` with
``$CLAUDE_CONFIG_DIR/settings.json``.  One name in several scopes: local, then
an approved project entry, then user (the whole entry; no merging of keys).
``projects[<root>].disabledMcpServers`` (Claude Code's ``/mcp disable``) turns
a server off in every scope.

So that an entry working in Claude Code works here, it keeps Claude Code's
rules: ``${VAR}`` and ``${VAR:-default}`` in ``command``, ``args``, ``env``
values, ``url`` and ``headers`` values (a default only when the variable is
unset; an unset variable without one stays as written and the server still
starts; no ``$${`` escape; the values come from the environment and the user
settings' ``env``); a stdio server gets the whole environment minus
``CLAUDE_CODE_OAUTH_TOKEN`` and ``OTEL_*``, the settings' ``env`` blocks, then
its own ``env``, and runs in the project directory; ``timeout`` is the tool-call
timeout in milliseconds; ``oauth.callbackPort`` and ``oauth.scopes`` are
toolscript's ``redirectPort`` and ``scope``; ``headersHelper`` runs through the
shell in Claude Code's config directory and its JSON object of headers is laid
over ``headers`` (``helper_headers``, run when the server connects).  WebSocket
servers (``type: ws``) cannot be served and are listed as such.

Nothing in Claude Code's files can fail toolscript's configuration: an entry
that cannot be served is reported with its reason (``load.NotImported``).
"""

import copy
import hashlib
import json
import os
import re
import subprocess
from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Mapping, Optional, Tuple

from toolscript import paths
from toolscript.config.model import (
    DEFAULT_MAX_MESSAGE_BYTES,
    Imported,
    NotImported,
    OAuthConfig,
    ServerConfig,
    UntrustedFile,
)
from toolscript.errors import UserError

USER, LOCAL, PROJECT = "user", "local", "project"
PROJECT_FILE = ".mcp.json"
# Why an entry running toolscript itself (`claude mcp add toolscript -- toolscript mcp`) is not served: expected, not warned about.
ITSELF = "it runs toolscript itself, which would serve its own gateway"
# How a project server is marked when the user, not Claude Code, approved its file.
TRUSTED_IN_TOOLSCRIPT = "trusted with toolscript trust"
MAX_FILE_BYTES = 64 * 1024 * 1024  # ~/.claude.json keeps per-project history; larger is not Claude Code's
HELPER_TIMEOUT = 10.0  # seconds for a headersHelper command

# ``${NAME}`` and ``${NAME:-default}``, Claude Code's pattern: one pass, no nesting, no escape.
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
# Expanded to empty wherever they are written: Claude Code's own session credentials (and OTEL_*, by prefix).
_BLANKED = frozenset({"CLAUDE_CODE_OAUTH_TOKEN"})
# Also expanded to empty toward a remote server (url, headers), set or not: credentials and
# endpoints that must never leave for a URL an entry names, as Claude Code does.
_REMOTE_BLANKED = _BLANKED | frozenset({
    "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_IDENTITY_TOKEN", "ANTHROPIC_BASE_URL",
    "ANTHROPIC_CUSTOM_HEADERS", "AWS_CONTAINER_AUTHORIZATION_TOKEN", "CLOUDSDK_AUTH_ACCESS_TOKEN",
    "GOOGLE_OAUTH_ACCESS_TOKEN", "AZURE_CLIENT_CERTIFICATE_PASSWORD", "AZURE_PASSWORD",
    "CLAUDE_CODE_CLIENT_KEY_PASSPHRASE", "CLAUDE_CODE_CLIENT_KEY", "CLAUDE_CODE_CLIENT_CERT",
    "HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "CARGO_REGISTRY_TOKEN", "NPM_TOKEN", "CODEARTIFACT_AUTH_TOKEN",
    "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_DEFAULT_INDEX", "UV_INDEX",
    "GOPROXY", "GOAUTH", "PYPI_TOKEN", "TWINE_PASSWORD",
})
# What a stdio server does not get of the environment: Claude Code's session credential, telemetry
# settings (by prefix), and the variable toolscript's own gateway adds for its log.
_NOT_PASSED = frozenset({"CLAUDE_CODE_OAUTH_TOKEN", "TOOLSCRIPT_GATEWAY_LOG"})
_TYPES = {"stdio": "stdio", "sse": "sse", "http": "http", "streamable-http": "http"}
# toolscript's rule for server names: ``__`` joins server and tool names.
_NAME_RE = re.compile(r"[A-Za-z0-9_.-]+\Z")
# Names of the toolscript command itself: an entry running it would make the gateway serve itself.
_SELF_NAMES = ("toolscript", "toolscript.pyz")


@dataclass
class Found:
    """What Claude Code's files give for one project directory."""

    servers: Dict[str, ServerConfig] = field(default_factory=dict)  # by precedence: local > approved project > user
    not_imported: List[NotImported] = field(default_factory=list)
    pending: List[UntrustedFile] = field(default_factory=list)  # .mcp.json servers awaiting approval, per file
    files: List[str] = field(default_factory=list)  # Claude Code's files that exist and were read
    warnings: List[str] = field(default_factory=list)


@dataclass
class _Layers:
    """The settings files Claude Code reads for approvals, and whether it trusts the folder."""

    user: Dict[str, Any]
    user_path: str
    project: List[Tuple[str, Dict[str, Any]]]  # (path, settings) read only in a trusted folder, except for rejections
    legacy: Dict[str, Any]  # ~/.claude.json projects[<root>]: approvals from before they moved to settings files
    trusted: bool


def config_dir(environ: Mapping[str, str]) -> str:
    """Claude Code's config directory: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    return paths.claude_config_dir(environ)


def claude_json_path(environ: Mapping[str, str]) -> str:
    """``$CLAUDE_CONFIG_DIR/.claude.json``, else ``~/.claude.json``."""
    if environ.get("CLAUDE_CONFIG_DIR"):
        return os.path.join(config_dir(environ), ".claude.json")
    return os.path.join(_home(environ), ".claude.json")


def user_settings_path(environ: Mapping[str, str]) -> str:
    return os.path.join(config_dir(environ), "settings.json")


def project_root(cwd: str) -> str:
    """The key of ``projects`` in ``~/.claude.json``: the real path of the git root, else of ``cwd``."""
    here = os.path.realpath(cwd)
    directory = here
    while True:
        if os.path.exists(os.path.join(directory, ".git")):
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return here
        directory = parent


def read(cwd: str, environ: Mapping[str, str]) -> Found:
    """The servers Claude Code is configured with for ``cwd``, as ``ServerConfig``s (see the module docstring)."""
    found = Found()
    here = os.path.realpath(cwd)
    root = project_root(here)
    home = _home(environ)
    claude_json_file = claude_json_path(environ)
    claude_json = _read_object(claude_json_file, found)
    projects = _object(claude_json.get("projects"))
    project_entry = _object(projects.get(root))
    layers = _layers(here, root, projects, project_entry, environ, found)
    settings_env = _settings_env(layers)
    expand_from = dict(environ)
    expand_from.update(_string_map(layers.user.get("env")))
    turned_off = set(_names(project_entry.get("disabledMcpServers")))

    chosen: Dict[str, Tuple[str, str, str, Any]] = {}  # name -> (scope, file, approval, entry)
    for name, entry in _servers(claude_json).items():
        chosen[name] = (USER, claude_json_file, "", entry)
    for name, (path, entry, approval) in _project_servers(here, layers, found, environ).items():
        chosen[name] = (PROJECT, path, approval, entry)
    for name, entry in _servers(project_entry).items():
        chosen[name] = (LOCAL, claude_json_file, "", entry)

    for name, (scope, path, approval, entry) in chosen.items():
        where = Imported(scope=scope, shown=_shown(path, here, home), approval=approval)
        if name in turned_off:
            found.not_imported.append(NotImported(name, where.describe(), "turned off in Claude Code for this project (disabledMcpServers)", warn=False))
            continue
        helper_allowed = scope == USER or layers.trusted or approval == TRUSTED_IN_TOOLSCRIPT
        server, reason = convert(name, entry, where, path, here, environ, expand_from, settings_env, helper_allowed)
        if server is None:
            found.not_imported.append(NotImported(name, where.describe(), reason, warn=reason != ITSELF))
            continue
        found.servers[name] = server
        if server.imported is not None and server.imported.unset:
            shown = ", ".join("${" + variable + "}" for variable in server.imported.unset)
            found.warnings.append(f"{where.describe()}: server {name!r}: {shown} not set; passed on as written, as Claude Code does")
    # A pending project server hides nothing: a user or local entry of its name is served.
    for pending in found.pending:
        for name in [name for name in pending.servers if name in turned_off]:
            shown = Imported(scope=PROJECT, shown=_shown(pending.path, here, home)).describe()
            found.not_imported.append(NotImported(name, shown, "turned off in Claude Code for this project (disabledMcpServers)", warn=False))
        pending.servers = {name: entry for name, entry in pending.servers.items() if name not in found.servers and name not in turned_off}
    found.pending = [pending for pending in found.pending if pending.servers]
    return found


def watched_files(cwd: str, environ: Mapping[str, str]) -> List[str]:
    """Every file ``read`` may read for ``cwd``, whether it exists or not: what a live gateway watches for changes."""
    here = os.path.realpath(cwd)
    return [claude_json_path(environ), user_settings_path(environ)] + _settings_files(here, project_root(here)) + _mcp_json_files(here)


def _settings_files(here: str, root: str) -> List[str]:
    """The project settings files Claude Code reads for approvals: cwd's two, and the git root's local one (each once)."""
    candidates = [os.path.join(here, ".claude", "settings.json"), os.path.join(here, ".claude", "settings.local.json"),
                  os.path.join(root, ".claude", "settings.local.json")]
    return list(dict.fromkeys(candidates))  # the cwd may be the root


def _mcp_json_files(here: str) -> List[str]:
    """``.mcp.json`` in ``here`` and every directory above it, nearest first, whether they exist or not."""
    files: List[str] = []
    directory = here
    while True:
        files.append(os.path.join(directory, PROJECT_FILE))
        parent = os.path.dirname(directory)
        if parent == directory:
            return files
        directory = parent


def _layers(here: str, root: str, projects: Dict[str, Any], project_entry: Dict[str, Any],
            environ: Mapping[str, str], found: Found) -> _Layers:
    """The settings files Claude Code reads for project-server approval (cwd's and the git root's local file)."""
    user_path = user_settings_path(environ)
    user = _read_object(user_path, found)
    project: List[Tuple[str, Dict[str, Any]]] = []
    for path in _settings_files(here, root):
        settings = _read_object(path, found)
        if settings:
            project.append((path, settings))
    trusted = any(_object(projects.get(key)).get("hasTrustDialogAccepted") is True for key in (here, root))
    return _Layers(user=user, user_path=user_path, project=project, legacy=project_entry, trusted=trusted)


def _settings_env(layers: _Layers) -> Dict[str, str]:
    """The ``env`` of the settings layers, user then project then local: Claude Code passes them to every server.

    A project's own settings count only in a folder Claude Code trusts: until
    then a cloned repository's ``.claude/settings.json`` must not set, say,
    ``NODE_OPTIONS`` for a server the user configured.
    """
    env = _string_map(layers.user.get("env"))
    if layers.trusted:
        for _path, settings in layers.project:
            env.update(_string_map(settings.get("env")))
    return env


def _project_servers(here: str, layers: _Layers, found: Found, environ: Mapping[str, str]) -> Dict[str, Tuple[str, Any, str]]:
    """The approved ``.mcp.json`` servers: name -> (file, entry, what approved it); the others go to ``found``."""
    from toolscript.config import trust

    files = [candidate for candidate in _mcp_json_files(here) if os.path.isfile(candidate)]
    entries: Dict[str, Tuple[str, Any]] = {}
    contents: Dict[str, bytes] = {}
    for path in reversed(files):  # the farthest first, so the nearest file wins by name
        data = _read_bytes(path, found)
        document = _parse_object(path, data, found) if data is not None else {}
        if data is not None:
            contents[path] = data
        for name, entry in _servers(document).items():
            entries[name] = (path, entry)
    approved: Dict[str, Tuple[str, Any, str]] = {}
    pending: Dict[str, UntrustedFile] = {}
    for name, (path, entry) in entries.items():
        decision, by = _approval(name, layers, environ)
        if decision == "rejected":
            shown = Imported(scope=PROJECT, shown=_shown(path, here, _home(environ))).describe()
            found.not_imported.append(NotImported(name, shown, f"rejected in Claude Code ({by}: disabledMcpjsonServers)", warn=False))
            continue
        if decision == "approved":
            approved[name] = (path, entry, f"approved in {_shown(by, here, _home(environ))}")
            continue
        state = trust.status(path, contents.get(path, b""), environ)
        if state == trust.TRUSTED:
            approved[name] = (path, entry, TRUSTED_IN_TOOLSCRIPT)
            continue
        file = pending.get(path)
        if file is None:
            file = pending[path] = UntrustedFile(path=path, status=state, sha256=trust.digest(contents.get(path, b"")), claude_code=True)
        file.servers[name] = entry
    found.pending.extend(pending.values())
    return approved


def _approval(name: str, layers: _Layers, environ: Mapping[str, str]) -> Tuple[str, str]:
    """``("rejected" | "approved" | "pending", the file that decided)`` for a project server, as Claude Code decides.

    Rejected when any layer lists it in ``disabledMcpjsonServers`` (even in a
    folder Claude Code does not trust); approved by the user settings always,
    by the project's settings files and the legacy ``~/.claude.json`` entry only
    in a trusted folder; pending otherwise.
    """
    legacy_path = claude_json_path(environ)
    everything = [(layers.user_path, layers.user)] + layers.project + [(legacy_path, layers.legacy)]
    for path, settings in everything:
        if _listed(name, settings.get("disabledMcpjsonServers")):
            return "rejected", path
    approving = [(layers.user_path, layers.user)]
    if layers.trusted:
        approving += layers.project + [(legacy_path, layers.legacy)]
    for path, settings in approving:
        if settings.get("enableAllProjectMcpServers") is True or _listed(name, settings.get("enabledMcpjsonServers")):
            return "approved", path
    return "pending", ""


def _listed(name: str, names: Any) -> bool:
    """Whether ``name`` is in the list, exactly or as Claude Code normalises server names."""
    wanted = _normalised(name)
    return any(item == name or _normalised(item) == wanted for item in _names(names))


def _normalised(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)


# -- one entry ---------------------------------------------------------------------------------


def convert(
    name: str,
    entry: Any,
    where: Imported,
    path: str,
    cwd: str,
    environ: Mapping[str, str],
    expand_from: Mapping[str, str],
    settings_env: Mapping[str, str],
    helper_allowed: bool = True,
) -> Tuple[Optional[ServerConfig], str]:
    """One Claude Code entry as a ``ServerConfig``, or ``(None, why it cannot be served)``."""
    if not name or not _NAME_RE.match(name) or "__" in name:
        return None, "toolscript server names may contain only letters, digits, '_', '-' and '.', and no '__'"
    if not isinstance(entry, dict):
        return None, "the entry is not a JSON object (Claude Code skips it too)"
    kind = entry.get("type")
    if kind is None and "command" in entry:
        kind = "stdio"
    if kind == "ws":
        return None, "a WebSocket server (type \"ws\"): toolscript speaks stdio, http and sse only"
    server_type = _TYPES.get(kind) if isinstance(kind, str) else None
    if server_type is None:
        return None, f"type {json.dumps(kind)} is not one Claude Code starts from its files (stdio, sse, http)"
    unset: List[str] = []

    def expand(value: str, remote: bool) -> str:
        result, missing = expand_value(value, expand_from, remote)
        unset.extend(variable for variable in missing if variable not in unset)
        return result

    imported = replace(where, key=entry_key(name, entry), unset=unset)
    timeout, problem = _timeout(entry)
    if problem:
        return None, problem
    imported.call_seconds = timeout
    imported.connect_seconds = _connect_seconds(environ)
    server = ServerConfig(name=name, type=server_type, source=path, raw=copy.deepcopy(entry), imported=imported,
                          max_message_bytes=DEFAULT_MAX_MESSAGE_BYTES)
    if server_type == "stdio":
        command, args, env = entry.get("command"), entry.get("args", []), entry.get("env", {})
        if not isinstance(command, str) or not command:
            return None, '"command" must be a non-empty string (Claude Code skips the entry too)'
        if not _strings(args) or not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            return None, '"args" must be an array of strings and "env" an object of strings (Claude Code skips the entry too)'
        server.command = expand(command, False)
        server.args = [expand(arg, False) for arg in args]
        if _is_toolscript(server.command, server.args):
            return None, ITSELF
        imported.env = {key: expand(value, False) for key, value in env.items()}  # keys are never expanded
        server.env = server_environment(environ, settings_env, imported.env)
        server.cwd = cwd
        return server, ""
    url, headers = entry.get("url"), entry.get("headers", {})
    if not isinstance(url, str) or not url:
        return None, '"url" must be a non-empty string (Claude Code skips the entry too)'
    if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
        return None, '"headers" must be an object of strings (Claude Code skips the entry too)'
    server.url = expand(url, True)
    if not server.url.lower().startswith(("http://", "https://")):
        return None, f"the URL must start with http:// or https:// (it is {json.dumps(url)})"
    server.headers = {key: expand(value, True) for key, value in headers.items()}
    helper = entry.get("headersHelper")
    if helper is not None:
        if not isinstance(helper, str) or not helper.strip():
            return None, '"headersHelper" must be a shell command (Claude Code skips the entry too)'
        if not helper_allowed:
            return None, "its headersHelper runs only once Claude Code trusts this folder (accept the trust dialog), as in Claude Code"
        imported.headers_helper = helper  # never expanded: Claude Code runs it as written
        imported.helper_cwd = config_dir(environ)
    oauth, problem = _oauth(entry.get("oauth"))
    if problem:
        return None, problem
    server.oauth = oauth
    return server, ""


def expand_value(value: str, values: Mapping[str, str], remote: bool = False) -> Tuple[str, List[str]]:
    """``value`` with Claude Code's ``${NAME}`` / ``${NAME:-default}`` expanded, and the names left unset.

    The default is used only when the variable is unset (an empty one stays
    empty); an unset one without a default stays as written.  Claude Code's
    session credential and ``OTEL_*`` expand to empty; toward a remote server
    (``remote``: a URL or header) so do the credentials in ``_REMOTE_BLANKED``,
    set or not.
    """
    unset: List[str] = []

    def one(match: "re.Match[str]") -> str:
        name, default = match.group(1), match.group(2)
        upper = name.upper()
        blanked = upper in (_REMOTE_BLANKED if remote else _BLANKED) or upper.startswith("OTEL_")
        if blanked and (remote or name in values):
            return ""
        if name in values:
            return values[name]
        if default is not None:
            return default
        unset.append(name)
        return match.group(0)

    return _REFERENCE.sub(one, value), unset


def server_environment(environ: Mapping[str, str], settings_env: Mapping[str, str], entry_env: Mapping[str, str]) -> Dict[str, str]:
    """What a stdio server starts with, as under Claude Code: the whole environment minus its session
    credential and ``OTEL_*``, the settings' ``env``, then the entry's own ``env`` (which may replace PATH)."""
    env = {key: value for key, value in environ.items() if key not in _NOT_PASSED and not key.startswith("OTEL_")}
    env.update(settings_env)
    env.update(entry_env)
    return env


def entry_key(name: str, entry: Any) -> str:
    """The SHA-256 of a server's name and entry as written: a changed entry gets a fresh tool list."""
    text = json.dumps({"name": name, "entry": entry}, sort_keys=True, ensure_ascii=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def helper_headers(server: ServerConfig, environ: Optional[Mapping[str, str]] = None) -> ServerConfig:
    """``server`` with its ``headersHelper``'s headers laid over ``headers`` (itself when it has none).

    The helper runs through the shell in Claude Code's config directory with
    the environment a stdio server gets, and must print one JSON object of
    string values.  Raises ``UserError`` saying what went wrong.
    """
    imported = server.imported
    if imported is None or not imported.headers_helper:
        return server
    env = server_environment(os.environ if environ is None else environ, {}, {})
    where = imported.helper_cwd if imported.helper_cwd and os.path.isdir(imported.helper_cwd) else env.get("HOME") or None
    try:
        done = subprocess.run(["/bin/sh", "-c", imported.headers_helper], cwd=where, env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=HELPER_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise UserError(f"headersHelper of server {server.name!r} did not finish within {HELPER_TIMEOUT:g}s") from None
    except OSError as exc:
        raise UserError(f"headersHelper of server {server.name!r} could not run: {exc.strerror or exc}") from None
    if done.returncode != 0:
        last = (done.stderr.decode("utf-8", "replace").strip().splitlines() or [""])[-1][:300]
        raise UserError(f"headersHelper of server {server.name!r} exited with status {done.returncode}" + (f": {last}" if last else ""))
    try:
        headers = json.loads(done.stdout.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        headers = None
    if not isinstance(headers, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
        raise UserError(f"headersHelper of server {server.name!r} must print a JSON object of string header values")
    merged = dict(server.headers)
    merged.update(headers)
    return replace(server, headers=merged)


def _timeout(entry: Dict[str, Any]) -> Tuple[Optional[float], str]:
    """The tool-call timeout in seconds from ``timeout`` (milliseconds; below 1000 Claude Code ignores it)."""
    value = entry.get("timeout")
    if value is None:
        return None, ""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None, '"timeout" must be a positive whole number of milliseconds (Claude Code skips the entry too)'
    return (value / 1000.0 if value >= 1000 else None), ""


def _connect_seconds(environ: Mapping[str, str]) -> Optional[float]:
    """``MCP_TIMEOUT`` (milliseconds): Claude Code's connect timeout, read the same way."""
    try:
        value = int(environ.get("MCP_TIMEOUT", ""))
    except ValueError:
        return None
    return value / 1000.0 if value > 0 else None


def _oauth(value: Any) -> Tuple[OAuthConfig, str]:
    """Claude Code's ``oauth`` object in toolscript's terms: ``callbackPort`` -> ``redirectPort``, ``scopes`` -> ``scope``.

    ``authServerMetadataUrl`` and ``xaa`` have no toolscript equivalent: discovery finds the server's metadata.
    """
    if value is None:
        return OAuthConfig(), ""
    if not isinstance(value, dict):
        return OAuthConfig(), '"oauth" must be an object (Claude Code skips the entry too)'
    client_id, port, scopes = value.get("clientId"), value.get("callbackPort"), value.get("scopes")
    if client_id is not None and not (isinstance(client_id, str) and client_id):
        return OAuthConfig(), '"oauth.clientId" must be a string (Claude Code skips the entry too)'
    if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535):
        return OAuthConfig(), '"oauth.callbackPort" must be a port number (Claude Code skips the entry too)'
    if scopes is not None and not (isinstance(scopes, str) and scopes):
        return OAuthConfig(), '"oauth.scopes" must be a string (Claude Code skips the entry too)'
    return OAuthConfig(client_id=client_id, redirect_port=port, scope=scopes), ""


def _is_toolscript(command: str, args: List[str]) -> bool:
    """Whether a stdio entry runs toolscript (``toolscript mcp``, ``python3 toolscript.pyz``, ``python -m toolscript``)."""
    words = [command] + list(args)
    if os.path.basename(command) in _SELF_NAMES:
        return True
    if any(os.path.basename(word) == "toolscript.pyz" for word in words):
        return True
    return any(words[i] == "-m" and words[i + 1] == "toolscript" for i in range(len(words) - 1))


# -- reading Claude Code's files ---------------------------------------------------------------


def _home(environ: Mapping[str, str]) -> str:
    return environ.get("HOME") or os.path.expanduser("~")


def _shown(path: str, cwd: str, home: str) -> str:
    """A path as people read it: relative within the working directory, ``~/...`` within the home directory."""
    if not path:
        return path
    if path.startswith(cwd.rstrip(os.sep) + os.sep):
        return os.path.relpath(path, cwd)
    home = home.rstrip(os.sep)
    if home and path.startswith(home + os.sep):
        return "~" + path[len(home):]
    return path


def _read_bytes(path: str, found: Found) -> Optional[bytes]:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        found.warnings.append(f"{path}: cannot read Claude Code's file: {exc.strerror or exc}")
        return None
    if len(data) > MAX_FILE_BYTES:
        found.warnings.append(f"{path}: larger than {MAX_FILE_BYTES} bytes; not read")
        return None
    return data


def _parse_object(path: str, data: bytes, found: Found) -> Dict[str, Any]:
    found.files.append(path)
    try:
        document = json.loads(data.decode("utf-8-sig")) if data.strip() else {}
    except (ValueError, RecursionError):
        found.warnings.append(f"{path}: not valid JSON, so its MCP servers are not served (Claude Code cannot read it either)")
        return {}
    if not isinstance(document, dict):
        found.warnings.append(f"{path}: not a JSON object; ignored")
        return {}
    return document


def _read_object(path: str, found: Found) -> Dict[str, Any]:
    """A Claude Code JSON file as a dict; ``{}`` when missing, unreadable or malformed (the last two are warned about)."""
    data = _read_bytes(path, found)
    return {} if data is None else _parse_object(path, data, found)


def _servers(document: Dict[str, Any]) -> Dict[str, Any]:
    entries = document.get("mcpServers")
    return {str(name): entry for name, entry in entries.items()} if isinstance(entries, dict) else {}


def _object(value: Any) -> Dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _names(value: Any) -> List[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _string_map(value: Any) -> Dict[str, str]:
    """A settings ``env`` block: its string values (Claude Code passes numbers as text too)."""
    if not isinstance(value, dict):
        return {}
    result = {}
    for key, item in value.items():
        if isinstance(item, str):
            result[str(key)] = item
        elif isinstance(item, (int, float)) and not isinstance(item, bool):
            result[str(key)] = str(item)
    return result
