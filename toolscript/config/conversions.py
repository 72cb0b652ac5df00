"""Each client's server entry in toolscript's terms: what maps, what is translated, what cannot carry over.

``toolscript.config.importers`` reads a client's file and hands each entry
here with a :class:`Context` (the client, the scope, the project).  The answer
is toolscript's entry (``toolscript.config.load``'s format) with a warning for
everything that did not carry over unchanged, or the reason it is skipped.

How values change on the way (docs/configuration.md, "Importing servers from
other clients", says the same for users):

- Cursor, VS Code and Windsurf resolve ``${env:NAME}``; it becomes toolscript's
  ``${NAME}``.  ``${userHome}`` becomes ``${HOME}``; ``${workspaceFolder}`` the
  project's absolute path (only with ``--project``: a user file's
  ``${workspaceFolder}`` means whatever folder is open, so that server is
  skipped); ``${pathSeparator}``/``${/}`` the separator.  VS Code's
  ``${input:id}`` lives in VS Code's secret storage, which nothing else can
  read: it becomes ``${ID}`` with a warning naming the variable to export.
  ``${file:...}``, ``${command:...}``, ``${config:...}`` and the like have no
  equivalent: the server is skipped, saying which key.
- Codex and Claude Desktop pass values literally.  A ``${NAME}`` written there
  is kept as a variable (the user meant one), with a warning; any other
  ``${`` is escaped so it stays text.
- ``envFile``: the variable *names* in the file become ``NAME: "${NAME}"``
  entries; values are never copied (they are secrets, and the file may change).
- A VS Code server that ran in VS Code's sandbox is imported with
  ``"disabled": true``: toolscript does not sandbox servers, so running it is
  the user's decision.
- A server name toolscript does not accept (``[A-Za-z0-9_.-]``, no ``__``) is
  renamed, with a warning.
"""

import json
import os
import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

from toolscript.config.keys import json_type
from toolscript.config.load import is_secret_name

CLIENTS = {"cursor": "Cursor", "vscode": "VS Code", "claude-desktop": "Claude Desktop", "codex": "Codex", "windsurf": "Windsurf"}
# Clients that resolve ${...} variables themselves; the others pass every value as written.
_RESOLVING_CLIENTS = ("cursor", "vscode", "windsurf")

_VAR_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# A ${NAME} or ${NAME:-default} toolscript reads as a variable.
_TOOLSCRIPT_VAR = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\Z")
_REFERENCE = re.compile(r"\$\{([^}]*)\}")
# The editor variables VS Code (and Cursor, Windsurf, built on it) resolve, which mean nothing outside the editor.
_RESOLVER_NAMES = ("file", "fileWorkspaceFolder", "relativeFile", "relativeFileDirname", "fileBasename", "fileBasenameNoExtension",
                   "fileExtname", "fileDirname", "fileDirnameBasename", "cwd", "lineNumber", "columnNumber", "selectedText",
                   "execPath", "defaultBuildTask")
_RESOLVER_PREFIXES = ("config", "command", "workspaceFolder")
_TYPES = {"stdio": "stdio", "http": "http", "sse": "sse", "streamable-http": "http", "streamableHttp": "http", "streamable_http": "http"}
CODEX_DEFAULT_STARTUP = 10.0  # seconds Codex waits for a server to start, unless told otherwise
CODEX_DEFAULT_TOOL = 60.0  # seconds Codex waits for a tool call


class Skip(Exception):
    """This server cannot be imported; the message says why."""


class Context:
    """What converting a server needs to know besides the entry: the client and the places."""

    def __init__(self, client: str, project: Optional[str], home: str, environ: Mapping[str, str]) -> None:
        self.client = client
        self.project = project  # the project directory (with --project); None for a user-scope import
        self.home = home
        self.environ = environ
        self.inputs: Dict[str, str] = {}  # VS Code's input ids -> descriptions
        self.codex_base = home  # what a relative Codex cwd is taken against: the folder holding .codex/

    @property
    def client_label(self) -> str:
        return CLIENTS[self.client]

    def convert(self, entry: Any, file: str) -> Tuple[Optional[Dict[str, Any]], List[str], Optional[str]]:
        """``(toolscript's entry, warnings, None)``, or ``(None, warnings, why it is skipped)``, for one entry of ``file``."""
        server = _Server(self, file)
        try:
            if not isinstance(entry, dict):
                raise Skip(f"not a server entry ({json_type(entry)}, not an object)")
            converter = _codex_entry if self.client == "codex" else _json_entry
            converted: Optional[Dict[str, Any]] = converter(server, entry)
            skipped = None
        except Skip as why:
            converted, skipped = None, str(why)
        return converted, list(dict.fromkeys(server.warnings)), skipped  # each warning once, in order


class _Server:
    """One entry being converted: its warnings, and the value translation its client needs."""

    def __init__(self, context: Context, file: str) -> None:
        self.context = context
        self.file = file  # the client file the entry is in
        self.warnings: List[str] = []
        self.workspace_in: List[str] = []  # fields where ${workspaceFolder} became this machine's path

    def warn(self, text: str) -> None:
        self.warnings.append(text)

    def text(self, value: Any, where: str) -> str:
        """A string value of the client's, in toolscript's variable syntax."""
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise Skip(f"{where} is {json_type(value)}, not a string")
        if not isinstance(value, str):
            self.warn(f"{where} is the number {value}; written as the string \"{value}\"")
            value = str(value)
        if self.context.client in _RESOLVING_CLIENTS:
            return self._resolve(value, where)
        return self._literal(value, where)

    def strings(self, value: Any, where: str) -> List[str]:
        if not isinstance(value, list):
            raise Skip(f"{where} is {json_type(value)}, not an array of strings")
        return [self.text(item, f"{where}[{i}]") for i, item in enumerate(value)]

    def mapping(self, value: Any, where: str) -> Dict[str, str]:
        if not isinstance(value, dict):
            raise Skip(f"{where} is {json_type(value)}, not an object of strings")
        result: Dict[str, str] = {}
        for key, item in value.items():
            if item is None:
                self.warn(f"{where}.{key} is null (in VS Code: remove the variable); dropped: a server gets only the part of your "
                          "environment toolscript passes (PATH, HOME, ...) and its env")
                continue
            result[str(key)] = self.text(item, f"{where}.{key}")
        return result

    def _literal(self, value: str, where: str) -> str:
        """A value the client passed as written: a ``${NAME}`` stays a variable (with a warning), other ``${`` stays text."""
        pieces: List[Tuple[bool, str]] = []
        last = 0
        for match in _REFERENCE.finditer(value):
            inner = match.group(1)
            if _TOOLSCRIPT_VAR.match(inner) and not value[:match.start()].endswith("$"):
                pieces.append((False, value[last:match.start()]))
                pieces.append((True, inner))
                last = match.end()
                self.warn(f"{where} is {json.dumps(value)}: {self.context.client_label} passes it as written, toolscript reads "
                          f"${{{inner.split(':-')[0]}}} from your environment (write $${{{inner}}} for the text itself)")
        pieces.append((False, value[last:]))
        return self._join(pieces, where)

    def _resolve(self, value: str, where: str) -> str:
        """A value of a client that resolves ``${...}`` itself, in toolscript's terms (see the module docstring)."""
        pieces: List[Tuple[bool, str]] = []
        last = 0
        label = self.context.client_label
        for match in _REFERENCE.finditer(value):
            pieces.append((False, value[last:match.start()]))
            last = match.end()
            inner = match.group(1)
            kind, _, rest = inner.partition(":")
            if kind == "env" and rest:
                if not _VAR_NAME_RE.match(rest):
                    raise Skip(f"{where} uses ${{env:{rest}}}: toolscript variable names are letters, digits and '_'")
                pieces.append((True, rest))
            elif inner == "userHome":
                pieces.append((True, "HOME"))
            elif inner in ("pathSeparator", "/"):
                pieces.append((False, os.sep))
            elif inner in ("workspaceFolder", "workspaceFolderBasename"):
                project = self.context.project
                if project is None:
                    raise Skip(f"{where} uses ${{{inner}}}, which means whatever project {label} has open; import it from that "
                                "project with --project")
                pieces.append((False, project if inner == "workspaceFolder" else os.path.basename(project)))
                if inner == "workspaceFolder" and not where.startswith("cwd"):
                    self.workspace_in.append(where)
            elif kind == "input" and rest:
                variable = re.sub(r"[^A-Za-z0-9]", "_", rest).upper()
                variable = variable if _VAR_NAME_RE.match(variable) else "_" + variable
                described = f" ({self.context.inputs[rest]})" if self.context.inputs.get(rest) else ""
                self.warn(f"{where}: ${{input:{rest}}}{described} is kept in {label}'s secret storage, which toolscript cannot "
                          f"read; it became ${{{variable}}}: export {variable}")
                pieces.append((True, variable))
            elif kind == "file":
                raise Skip(f"{where} uses ${{{inner}}}: toolscript cannot read a value from a file; put the value in a variable "
                            "and write ${NAME}")
            elif kind in _RESOLVER_PREFIXES and rest or inner in _RESOLVER_NAMES:
                raise Skip(f"{where} uses ${{{inner}}}, which only {label} can resolve")
            elif _TOOLSCRIPT_VAR.match(inner):
                name = inner.split(":-")[0]
                self.warn(f"{where}: {label} does not document ${{{inner}}}; toolscript reads ${name} from your environment")
                pieces.append((True, inner))
            else:  # no variable of the client's: it leaves the text as it is, and so does toolscript
                pieces.append((False, match.group(0)))
        pieces.append((False, value[last:]))
        return self._join(pieces, where)

    def _join(self, pieces: List[Tuple[bool, str]], where: str) -> str:
        out: List[str] = []
        for variable, text in pieces:
            if variable:
                if out and out[-1].endswith("$"):
                    raise Skip(f"{where} has a '$' right before a variable, which toolscript would read as its $${{ escape")
                out.append("${" + text + "}")
            else:
                out.append(text.replace("${", "$${"))  # text that only looks like a variable stays text
        return "".join(out)


def _server_type(entry: Dict[str, Any], url_key: Optional[str]) -> Optional[str]:
    """The toolscript ``type`` to write (None: leave it out, as for a plain command entry)."""
    given = entry.get("type")
    if given is not None:
        if not isinstance(given, str) or given not in _TYPES:
            raise Skip(f"type {json.dumps(given)} is not one toolscript knows (stdio, http, sse)")
        return _TYPES[given]
    return "http" if url_key else None


def _check_url(url: str, where: str) -> None:
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme in ("unix", "pipe"):
        raise Skip(f"{where} {url}: toolscript reaches servers only over http(s), not a local socket or pipe")
    if scheme not in ("http", "https") and not url.startswith("${"):
        raise Skip(f"{where} {url!r} is not an http(s) URL")


def _secret_literals(server: _Server, values: Dict[str, str], where: str) -> None:
    """Warn about each literal (not ``${VAR}``) value that looks like a secret: it is copied into the file as is."""
    for key, value in values.items():
        if value and "${" not in value.replace("$${", "") and (is_secret_name(key) or value.lower().startswith(("bearer ", "basic "))):
            server.warn(f"{where}.{key} holds a literal secret; copied as is (consider \"${{{_env_name(key)}}}\" and exporting it)")


def _env_name(key: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_]", "_", key).upper()
    return name if _VAR_NAME_RE.match(name) else "_" + name


def _ordered(entry: Dict[str, Any]) -> Dict[str, Any]:
    """The keys in the order people read them: how it runs, then what it reaches, then the filters."""
    order = ["type", "command", "args", "cwd", "env", "url", "headers", "oauth", "timeout", "includeTools", "excludeTools", "disabled"]
    return {key: entry[key] for key in order if key in entry}


# --- Cursor, VS Code, Claude Desktop, Windsurf (JSON) -------------------------------------

_JSON_KEYS: Dict[str, Tuple[str, ...]] = {
    "cursor": ("type", "command", "args", "env", "envFile", "cwd", "url", "headers", "auth", "disabled"),
    "vscode": ("type", "command", "args", "env", "envFile", "cwd", "url", "headers", "oauth", "sandboxEnabled", "sandbox",
               "dev", "gallery", "version", "disabled"),
    "claude-desktop": ("type", "command", "args", "env", "cwd", "url", "headers", "disabled"),
    "windsurf": ("type", "command", "args", "env", "cwd", "url", "serverUrl", "headers", "disabled", "disabledTools"),
}


def _json_entry(server: _Server, entry: Dict[str, Any]) -> Dict[str, Any]:
    client = server.context.client
    for key in entry:
        if key not in _JSON_KEYS[client]:
            server.warn(f"{key}: not a key toolscript knows; dropped")
    url_key = "serverUrl" if client == "windsurf" and "serverUrl" in entry else ("url" if "url" in entry else None)
    if "command" in entry and url_key:
        raise Skip(f"has both command and {url_key}; toolscript needs one or the other")
    if "command" not in entry and not url_key:
        raise Skip("has neither command nor url")
    out: Dict[str, Any] = {}
    server_type = _server_type(entry, url_key)
    if server_type:
        out["type"] = server_type
    if "command" in entry:
        if server_type not in (None, "stdio"):
            raise Skip(f"type {server_type} needs a url, and this entry has a command")
        out["command"] = server.text(entry["command"], "command")
        if "args" in entry:
            out["args"] = server.strings(entry["args"], "args")
        if "cwd" in entry:
            out["cwd"] = _cwd(server, server.text(entry["cwd"], "cwd"))
        env = server.mapping(entry["env"], "env") if "env" in entry else {}
        _secret_literals(server, env, "env")
        if "envFile" in entry:
            _env_file(server, entry["envFile"], env)
        if env:
            out["env"] = env
        for key in ("headers", "auth", "oauth"):
            if key in entry:
                server.warn(f"{key}: not used by a stdio server; dropped")
    else:
        if server_type == "stdio":
            raise Skip("type stdio needs a command, and this entry has a url")
        url_key = url_key or "url"
        url = server.text(entry[url_key], url_key)
        _check_url(url, url_key)
        out["url"] = url
        if url_key == "serverUrl" and "url" in entry:
            server.warn("has both serverUrl and url; used serverUrl, as Windsurf does")
        if "headers" in entry:
            headers = server.mapping(entry["headers"], "headers")
            _secret_literals(server, headers, "headers")
            if headers:
                out["headers"] = headers
        if client == "claude-desktop":
            server.warn("Claude Desktop ignores url entries in this file (remote servers are its Connectors); imported as an "
                        f"{server_type} server anyway")
        if client == "cursor" and "auth" in entry:
            out["oauth"] = _cursor_auth(server, entry["auth"])
        if client == "vscode" and "oauth" in entry:
            out["oauth"] = _vscode_oauth(server, entry["oauth"])
        for key in ("args", "env", "envFile", "cwd"):
            if key in entry:
                server.warn(f"{key}: not used by a remote server; dropped")
    if client == "vscode" and entry.get("sandboxEnabled") is True:
        out["disabled"] = True
        server.warn("sandboxEnabled: VS Code ran this server in its sandbox; toolscript does not sandbox servers, so it was "
                    "imported with \"disabled\": true (remove that line once you accept running it unsandboxed)")
    if client == "windsurf" and "disabledTools" in entry:
        tools = entry["disabledTools"]
        if isinstance(tools, list) and all(isinstance(t, str) and t for t in tools):
            if tools:
                out["excludeTools"] = list(tools)
        else:
            server.warn("disabledTools is not an array of tool names; dropped")
    if "disabled" in entry:
        if isinstance(entry["disabled"], bool):
            if entry["disabled"]:
                out["disabled"] = True
        else:
            server.warn("disabled is not true or false; dropped")
    if server.workspace_in:
        server.warn(f"${{workspaceFolder}} in {', '.join(server.workspace_in)} became {server.context.project}: the entry names "
                    f"this machine's path")
    return _ordered(out)


def _cwd(server: _Server, cwd: str) -> str:
    """A working directory as the written file should hold it: relative to the project when it lies inside (a project file
    stays portable; toolscript reads cwd against the file's folder), else absolute."""
    if "${" in cwd.replace("$${", "") or not cwd:
        return cwd
    base = server.context.codex_base if server.context.client == "codex" else (server.context.project or server.context.home)
    absolute = cwd if os.path.isabs(cwd) else os.path.normpath(os.path.join(base, cwd))
    project = server.context.project
    if project and (absolute == project or absolute.startswith(project.rstrip(os.sep) + os.sep)):
        return os.path.relpath(absolute, project)
    return absolute


def _env_file(server: _Server, value: Any, env: Dict[str, str]) -> None:
    """``envFile``: each variable it names becomes ``NAME: "${NAME}"`` (unless env sets it); its values are never read into the entry."""
    if not isinstance(value, str) or not value:
        server.warn("envFile is not a path; dropped")
        return
    path = _resolve_now(server, value)
    if path is None:
        server.warn(f"envFile {value}: its path cannot be worked out outside {server.context.client_label}; dropped")
        return
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as exc:
        server.warn(f"envFile {path} cannot be read ({exc.strerror or exc}); dropped: add the variables the server needs to env")
        return
    names: List[str] = []
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name = line.split("=", 1)[0].strip()
        if name.startswith("export "):
            name = name[len("export "):].strip()
        if _VAR_NAME_RE.match(name) and name not in names and name not in env:
            names.append(name)
    if not names:
        server.warn(f"envFile {path} names no variable; dropped")
        return
    for name in names:
        env[name] = "${" + name + "}"
    server.warn(f"envFile {path}: toolscript has no envFile; {', '.join(names)} became env entries that read your environment "
                "(export them, or write their values into env; none was copied)")


def _resolve_now(server: _Server, value: str) -> Optional[str]:
    """``value`` (an envFile path) with its ``${...}`` replaced by what they mean here and now; None when one cannot be."""
    context = server.context
    unknown = False

    def replace(match: "re.Match[str]") -> str:
        nonlocal unknown
        inner = match.group(1)
        kind, _, rest = inner.partition(":")
        if kind == "env" and rest:
            return context.environ.get(rest, "")
        if inner == "userHome":
            return context.home
        if inner in ("pathSeparator", "/"):
            return os.sep
        if inner == "workspaceFolder" and context.project:
            return context.project
        unknown = True
        return ""

    path = _REFERENCE.sub(replace, value)
    if unknown:
        return None
    path = os.path.expanduser(path)
    return path if os.path.isabs(path) else os.path.join(context.project or os.path.dirname(server.file), path)


def _cursor_auth(server: _Server, auth: Any) -> Dict[str, Any]:
    if not isinstance(auth, dict):
        raise Skip(f"auth is {json_type(auth)}, not an object")
    oauth: Dict[str, Any] = {}
    for key, value in auth.items():
        if key == "CLIENT_ID":
            oauth["clientId"] = server.text(value, "auth.CLIENT_ID")
        elif key == "CLIENT_SECRET":
            oauth["clientSecret"] = server.text(value, "auth.CLIENT_SECRET")
        elif key == "scopes" and isinstance(value, list) and all(isinstance(v, str) for v in value):
            if value:
                oauth["scope"] = " ".join(value)
        else:
            server.warn(f"auth.{key}: not a key toolscript knows; dropped")
    if "clientSecret" in oauth and "clientId" not in oauth:
        server.warn("auth.CLIENT_SECRET without CLIENT_ID; dropped")
        del oauth["clientSecret"]
    if "clientId" in oauth:
        server.warn("auth: a client registered for Cursor uses Cursor's redirect URI; toolscript signs in through a loopback "
                    "callback (set oauth.redirectPort if the client allows a fixed http://127.0.0.1 redirect)")
    return oauth


def _vscode_oauth(server: _Server, value: Any) -> Dict[str, Any]:
    if not isinstance(value, dict):
        raise Skip(f"oauth is {json_type(value)}, not an object")
    oauth: Dict[str, Any] = {}
    for key, item in value.items():
        if key in ("clientId", "clientSecret"):
            oauth[key] = server.text(item, f"oauth.{key}")
        else:
            server.warn(f"oauth.{key}: not a key toolscript knows; dropped")
    if "clientSecret" in oauth and "clientId" not in oauth:
        server.warn("oauth.clientSecret without clientId; dropped")
        del oauth["clientSecret"]
    return oauth


# --- Codex (TOML) --------------------------------------------------------------------------

_CODEX_STDIO = ("command", "args", "env", "env_vars", "cwd")
_CODEX_HTTP = ("url", "bearer_token_env_var", "http_headers", "env_http_headers", "scopes", "oauth", "oauth_resource", "bearer_token")
_CODEX_BOTH = ("startup_timeout_sec", "startup_timeout_ms", "tool_timeout_sec", "enabled", "required", "enabled_tools",
               "disabled_tools", "default_tools_approval_mode", "tools", "supports_parallel_tool_calls", "experimental_environment",
               "name")


def _codex_entry(server: _Server, entry: Dict[str, Any]) -> Dict[str, Any]:
    for key in entry:
        if key not in _CODEX_STDIO + _CODEX_HTTP + _CODEX_BOTH:
            server.warn(f"{key}: not a key Codex or toolscript knows; dropped")
    environment = entry.get("experimental_environment")
    if environment is not None and environment != "local":
        raise Skip(f"experimental_environment = {json.dumps(environment)}: Codex starts this server in a remote environment, "
                    "not on this machine")
    stdio = "command" in entry
    if stdio and "url" in entry:
        raise Skip("has both command and url, which Codex refuses too")
    if not stdio and "url" not in entry:
        raise Skip("has neither command nor url, which Codex refuses too")
    wrong = [key for key in (_CODEX_HTTP if stdio else _CODEX_STDIO) if key in entry and key != "url"]
    if "bearer_token" in entry:
        raise Skip("bearer_token (a token written into the file) is refused by Codex; write bearer_token_env_var and import again")
    if wrong:
        raise Skip(f"{', '.join(wrong)} {'is' if len(wrong) == 1 else 'are'} not allowed on a "
                    f"{'stdio' if stdio else 'streamable http'} server, and Codex refuses the entry too")
    out: Dict[str, Any] = {}
    if stdio:
        out["command"] = server.text(entry["command"], "command")
        if "args" in entry:
            out["args"] = server.strings(entry["args"], "args")
        if "cwd" in entry:
            raw = server.text(entry["cwd"], "cwd")
            out["cwd"] = _cwd(server, raw)
            if raw and not os.path.isabs(raw) and "${" not in raw:
                server.warn(f"cwd {raw!r} is relative and Codex does not document its base; taken against "
                            f"{server.context.codex_base}")
        env = server.mapping(entry["env"], "env") if "env" in entry else {}
        _secret_literals(server, env, "env")
        for name in _codex_env_vars(server, entry.get("env_vars")):
            env.setdefault(name, "${" + name + "}")
        if env:
            out["env"] = env
    else:
        out["type"] = "http"
        url = server.text(entry["url"], "url")
        _check_url(url, "url")
        out["url"] = url
        headers: Dict[str, str] = {}
        token = entry.get("bearer_token_env_var")
        if token is not None:
            if not isinstance(token, str) or not _VAR_NAME_RE.match(token):
                raise Skip(f"bearer_token_env_var {json.dumps(token)} is not a variable name")
            headers["Authorization"] = "Bearer ${" + token + "}"
        if "http_headers" in entry:
            literal = server.mapping(entry["http_headers"], "http_headers")
            _secret_literals(server, literal, "http_headers")
            headers.update(literal)
        from_env = entry.get("env_http_headers")
        if from_env is not None:
            if not isinstance(from_env, dict):
                raise Skip(f"env_http_headers is {json_type(from_env)}, not a table")
            for header, name in from_env.items():
                if not isinstance(name, str) or not _VAR_NAME_RE.match(name):
                    raise Skip(f"env_http_headers.{header} = {json.dumps(name)} is not a variable name")
                headers[str(header)] = "${" + name + "}"
                server.warn(f"env_http_headers {header} = {name}: Codex leaves the header out when ${name} is unset or empty; "
                            f"toolscript stops this server and names the variable instead")
        if headers:
            out["headers"] = headers
        oauth = _codex_oauth(server, entry)
        if oauth:
            out["oauth"] = oauth
    timeout = _codex_timeout(server, entry)
    if timeout is not None:
        out["timeout"] = timeout
    for key, target in (("enabled_tools", "includeTools"), ("disabled_tools", "excludeTools")):
        if key in entry:
            tools = entry[key]
            if isinstance(tools, list) and all(isinstance(t, str) and t for t in tools):
                out[target] = list(tools)
            else:
                server.warn(f"{key} is not an array of tool names; dropped")
    enabled = entry.get("enabled", True)
    if enabled is False:
        out["disabled"] = True
    elif enabled is not True:
        server.warn("enabled is not true or false; dropped")
    if entry.get("required") is True:
        server.warn("required = true (Codex fails when this server does not start): toolscript keeps the other servers working and reports this one; dropped")
    if "default_tools_approval_mode" in entry:
        server.warn("default_tools_approval_mode: toolscript has no per-tool approval; dropped")
    tools = entry.get("tools")
    if isinstance(tools, dict):
        for tool, settings in tools.items():
            for key in (settings if isinstance(settings, dict) else {"": None}):
                server.warn(f"tools.{tool}{'.' + key if key else ''}: toolscript has no per-tool approval; dropped")
    return _ordered(out)


def _codex_env_vars(server: _Server, value: Any) -> List[str]:
    """``env_vars``: the names Codex forwards from the environment (``source = "remote"`` ones are read elsewhere)."""
    if value is None:
        return []
    if not isinstance(value, list):
        server.warn("env_vars is not an array; dropped")
        return []
    names = []
    for item in value:
        if isinstance(item, dict):
            name, where = item.get("name"), item.get("source", "local")
        else:
            name, where = item, "local"
        if not isinstance(name, str) or not _VAR_NAME_RE.match(name):
            server.warn(f"env_vars entry {json.dumps(item)} names no variable; dropped")
        elif where != "local":
            server.warn(f"env_vars {name} has source {json.dumps(where)} (read in Codex's remote environment); dropped")
        else:
            names.append(name)
    return names


def _codex_oauth(server: _Server, entry: Dict[str, Any]) -> Dict[str, Any]:
    oauth: Dict[str, Any] = {}
    table = entry.get("oauth")
    if table is not None:
        if not isinstance(table, dict):
            server.warn("oauth is not a table; dropped")
        else:
            for key, value in table.items():
                if key == "client_id":
                    oauth["clientId"] = server.text(value, "oauth.client_id")
                else:
                    server.warn(f"oauth.{key}: toolscript has no such setting; dropped")
    scopes = entry.get("scopes")
    if scopes is not None:
        if isinstance(scopes, list) and all(isinstance(s, str) for s in scopes):
            if scopes:
                oauth["scope"] = " ".join(scopes)
        else:
            server.warn("scopes is not an array of strings; dropped")
    if "oauth_resource" in entry:
        server.warn("oauth_resource: toolscript asks for the resource the server names itself; dropped")
    return oauth


def _seconds(server: _Server, entry: Dict[str, Any], key: str, scale: float = 1.0) -> Optional[float]:
    if key not in entry:
        return None
    value = entry[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value == float("inf"):
        server.warn(f"{key} = {json.dumps(value)} is not a positive number; dropped")
        return None
    return float(value) / scale


def _codex_timeout(server: _Server, entry: Dict[str, Any]) -> Optional[float]:
    """One ``timeout`` long enough for both of Codex's: starting the server and each call (their defaults fill in)."""
    startup_key = "startup_timeout_sec" if "startup_timeout_sec" in entry else "startup_timeout_ms"
    startup = _seconds(server, entry, startup_key, 1000.0 if startup_key == "startup_timeout_ms" else 1.0)
    tool = _seconds(server, entry, "tool_timeout_sec")
    if startup is None and tool is None:
        return None
    chosen = max(startup if startup is not None else CODEX_DEFAULT_STARTUP, tool if tool is not None else CODEX_DEFAULT_TOOL)
    value: Any = int(chosen) if chosen == int(chosen) else chosen
    if startup is not None and tool is not None and startup != tool:
        server.warn(f"{startup_key} {_number(entry[startup_key])} and tool_timeout_sec {_number(entry['tool_timeout_sec'])}: "
                    f"toolscript has one timeout for connecting and for each call; used {value}")
    elif startup is not None and tool is None and startup != chosen:
        server.warn(f"{startup_key} {_number(entry[startup_key])}: toolscript has one timeout for connecting and for each call; "
                    f"used {value}, Codex's default for a call")
    return value


def _number(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value == int(value) else str(value)

