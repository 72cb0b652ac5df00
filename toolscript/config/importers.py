"""Other MCP clients' servers, read from their own files and written in toolscript's format.

``toolscript config import --from CLIENT`` reads Cursor, VS Code, Claude
Desktop, Codex or Windsurf's configuration where that client keeps it
(:func:`user_files`, :func:`project_files`), and turns each server into a
``mcpServers`` entry of toolscript's (``toolscript.config.load``'s format)
with the reasons for everything that could not carry over unchanged.  Nothing
here writes: ``toolscript.config.merge`` puts the entries into a file.

How values change on the way is ``toolscript.config.conversions``'s part.
"""

import json
import ntpath
import os
import posixpath
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from toolscript.config.conversions import CLIENTS, Context
from toolscript.errors import UserError

# Clients with a file of their own inside a project (the others have only the user's).
PROJECT_CLIENTS = ("cursor", "vscode", "codex")

_NAME_RE = re.compile(r"[A-Za-z0-9_.-]+\Z")


@dataclass
class Imported:
    """One server of the client's file: the entry to write, or why it is skipped."""

    name: str  # the name it gets in toolscript (the client's, renamed when toolscript does not accept it)
    source_name: str  # the name in the client's file
    file: str  # the client file it came from
    key: str  # where in that file: "mcpServers.github", "servers.github", "mcp_servers.github"
    entry: Optional[Dict[str, Any]] = None  # toolscript's entry; None when skipped
    warnings: List[str] = field(default_factory=list)
    skipped: Optional[str] = None  # why it is not imported
    status: str = ""  # set when merged: added, replaced, unchanged, conflict or skipped


@dataclass
class Source:
    """What one client's files hold for one scope."""

    client: str
    scope: str  # "user" or "project"
    looked: List[str]  # every path looked at, in order
    files: List[str] = field(default_factory=list)  # the files read
    servers: List[Imported] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)  # about the whole import, not one server

    @property
    def label(self) -> str:
        return CLIENTS[self.client]


# --- where each client keeps its files ---------------------------------------------------


def home_dir(environ: Mapping[str, str], platform: str = sys.platform) -> str:
    """The user's home as the clients see it: ``%USERPROFILE%`` on Windows, else ``$HOME``."""
    if platform == "win32" and environ.get("USERPROFILE"):
        return environ["USERPROFILE"]
    found = environ.get("HOME", "")
    return found if found else os.path.expanduser("~")


def _config_home(environ: Mapping[str, str], home: str) -> str:
    """``$XDG_CONFIG_HOME`` when it is absolute (as Electron apps read it on Linux), else ``~/.config``."""
    xdg = environ.get("XDG_CONFIG_HOME", "")
    return xdg if posixpath.isabs(xdg) else posixpath.join(home, ".config")


def user_files(client: str, environ: Mapping[str, str], platform: str = sys.platform) -> List[str]:
    """Where ``client`` keeps its user-scope servers on ``platform``, in the order they are tried (the first that exists is read)."""
    home = home_dir(environ, platform)
    windows = platform == "win32"
    join = ntpath.join if windows else posixpath.join
    appdata = environ.get("APPDATA") or join(home, "AppData", "Roaming")
    if client == "cursor":
        return [join(home, ".cursor", "mcp.json")]
    if client == "vscode":
        if windows:
            folder = join(appdata, "Code", "User")
        elif platform == "darwin":
            folder = join(home, "Library", "Application Support", "Code", "User")
        else:
            folder = join(_config_home(environ, home), "Code", "User")
        # Before VS Code 1.102 servers lived under "mcp" in settings.json; read only when mcp.json is absent.
        return [join(folder, "mcp.json"), join(folder, "settings.json")]
    if client == "claude-desktop":
        if windows:
            local = environ.get("LOCALAPPDATA") or join(home, "AppData", "Local")
            # The MSIX install (today's installer) reads its own copy; the classic one %APPDATA%'s.
            return [join(local, "Packages", "Claude_pzs8sxrjxfjjc", "LocalCache", "Roaming", "Claude", "claude_desktop_config.json"),
                    join(appdata, "Claude", "claude_desktop_config.json")]
        if platform == "darwin":
            return [join(home, "Library", "Application Support", "Claude", "claude_desktop_config.json")]
        return [join(_config_home(environ, home), "Claude", "claude_desktop_config.json")]  # community Linux builds
    if client == "codex":
        codex_home = environ.get("CODEX_HOME") or join(home, ".codex")
        return [join(codex_home, "config.toml")]
    if client == "windsurf":
        return [join(home, ".codeium", "windsurf", "mcp_config.json"), join(home, ".codeium", "windsurf-next", "mcp_config.json")]
    raise ValueError(f"unknown client {client!r}")


def project_files(client: str, project: str) -> List[str]:
    """Where ``client`` keeps a project's servers, for the project in directory ``project``.

    Codex reads every ``.codex/config.toml`` from the repository's root down to
    the working directory (the closest wins); the list is in that order.
    """
    if client == "cursor":
        return [os.path.join(project, ".cursor", "mcp.json")]
    if client == "vscode":
        return [os.path.join(project, ".vscode", "mcp.json"), os.path.join(project, ".vscode", "settings.json")]
    if client == "codex":
        folders = [project]
        probe = project
        while not os.path.exists(os.path.join(probe, ".git")):
            parent = os.path.dirname(probe)
            if parent == probe:
                folders = [project]  # not in a repository: only the directory itself
                break
            probe = parent
            folders.append(probe)
        return [os.path.join(folder, ".codex", "config.toml") for folder in reversed(folders)]
    raise UserError(f"{CLIENTS[client]} has no project-scope MCP file; run without --project to import its servers into ~/.toolscript.json",
                    exit_code=2)


# --- reading -----------------------------------------------------------------------------


def read_source(client: str, *, project: bool, cwd: str, environ: Mapping[str, str], file: Optional[str] = None,
                platform: str = sys.platform) -> Source:
    """Every server ``client`` has for the user (or, with ``project``, for the project in ``cwd``), converted.

    ``file`` reads that file instead of the client's usual place.  A file that
    exists but does not parse raises ``UserError``; no file at all gives a
    ``Source`` with no ``files`` (the caller says "nothing to import").
    """
    if client not in CLIENTS:
        raise UserError(f"unknown client {client!r}; choose one of: {', '.join(CLIENTS)}", exit_code=2)
    scope = "project" if project else "user"
    if project and client not in PROJECT_CLIENTS:
        project_files(client, cwd)  # raises the usage error
    if file is not None:
        candidates = [os.path.abspath(os.path.expanduser(file))]
    else:
        candidates = project_files(client, cwd) if project else user_files(client, environ, platform)
    source = Source(client=client, scope=scope, looked=candidates)
    context = Context(client, cwd if project else None, home_dir(environ, platform), environ)
    if client == "codex":
        _read_codex(source, candidates, context, file is not None)
    else:
        _read_json_client(source, candidates, context)
    _rename(source)
    if any(s.entry and "command" in s.entry for s in source.servers):
        source.notes.append("toolscript starts a stdio server with a safe part of your environment (PATH, HOME, LANG, proxies, ...) "
                            "plus its env: add to env any other variable a server reads")
    return source


def _read_bytes(path: str) -> Optional[bytes]:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise UserError(f"{path} is a directory, not a config file", exit_code=1) from None
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _decode(path: str, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise UserError(f"{path}:{line}: not valid UTF-8; nothing was imported") from None


def read_jsonc(path: str, text: str) -> Any:
    """``text`` as JSON with comments and trailing commas (VS Code's JSONC; strict JSON is a subset)."""
    try:
        return json.loads(strip_jsonc(text))
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}; nothing was imported") from None
    except RecursionError:
        raise UserError(f"{path}: invalid JSON: nested too deeply; nothing was imported") from None


def strip_jsonc(text: str) -> str:
    """``text`` with ``//`` and ``/* */`` comments and trailing commas blanked out, every other character in place."""
    out = list(text)
    i, n = 0, len(text)
    in_string = False
    last_comma = -1  # the position of a comma not yet followed by anything but blanks and comments
    while i < n:
        char = text[i]
        if in_string:
            if char == "\\":
                i += 2
                continue
            if char == '"':
                in_string = False
            i += 1
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out[i:end] = " " * (end - i)
            i = end
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out[i:end] = [c if c == "\n" else " " for c in text[i:end]]
            i = end
            continue
        if char in "}]" and last_comma >= 0:
            out[last_comma] = " "
        if char == ",":
            last_comma = i
        elif not char.isspace():
            last_comma = -1
        if char == '"':
            in_string = True
        i += 1
    return "".join(out)


def _read_json_client(source: Source, candidates: List[str], context: Context) -> None:
    for path in candidates:
        data = _read_bytes(path)
        if data is None:
            continue
        document = read_jsonc(path, _decode(path, data))
        if not isinstance(document, dict):
            raise UserError(f"{path}: the top level is not a JSON object; nothing was imported")
        container, prefix = _json_servers(source.client, path, document)
        if container is None:
            continue  # a settings.json without servers: not this client's file for MCP
        source.files.append(path)
        holder = document.get("mcp", {}) if prefix == "mcp.servers" else document
        inputs = holder.get("inputs") if source.client == "vscode" else None
        context.inputs = {item["id"]: str(item.get("description") or "") for item in (inputs if isinstance(inputs, list) else [])
                          if isinstance(item, dict) and isinstance(item.get("id"), str)}
        for name, entry in container.items():
            found = Imported(name=str(name), source_name=str(name), file=path, key=f"{prefix}.{_key_part(str(name))}")
            found.entry, found.warnings, found.skipped = context.convert(entry, path)
            source.servers.append(found)
        return


def _json_servers(client: str, path: str, document: Dict[str, Any]) -> Tuple[Optional[Dict[str, Any]], str]:
    """The servers object of a JSON client's file and its key path; (None, "") for a VS Code settings.json without any."""
    if client == "vscode":
        if "servers" in document:
            servers, prefix = document["servers"], "servers"
        elif isinstance(document.get("mcp"), dict):  # settings.json before VS Code 1.102
            servers, prefix = document["mcp"].get("servers", {}), "mcp.servers"
        elif os.path.basename(path) == "settings.json":
            return None, ""
        else:
            servers, prefix = {}, "servers"
    else:
        servers, prefix = document.get("mcpServers", {}), "mcpServers"
    if not isinstance(servers, dict):
        raise UserError(f"{path}: {prefix} is not a JSON object; nothing was imported")
    return servers, prefix


def _key_part(name: str) -> str:
    """A server name as a part of a key path: bare when it can be, else quoted."""
    return name if re.match(r"[A-Za-z0-9_-]+\Z", name) else json.dumps(name, ensure_ascii=False)


def _read_codex(source: Source, candidates: List[str], context: Context, named: bool) -> None:
    from toolscript.config import toml

    merged: Dict[str, Imported] = {}
    for path in candidates:  # a project's files from the root down: a closer file's server wins
        data = _read_bytes(path)
        if data is None:
            continue
        try:
            document = toml.loads(_decode(path, data), path)
        except toml.TomlError as exc:
            raise UserError(f"{exc}; nothing was imported") from None
        source.files.append(path)
        servers = document.get("mcp_servers", {})
        if not isinstance(servers, dict):
            raise UserError(f"{path}: mcp_servers is not a table; nothing was imported")
        for name, entry in servers.items():
            found = Imported(name=name, source_name=name, file=path, key=f"mcp_servers.{_key_part(name)}")
            context.codex_base = os.path.dirname(os.path.dirname(path))  # the folder holding .codex/
            found.entry, found.warnings, found.skipped = context.convert(entry, path)
            merged.pop(name, None)
            merged[name] = found
    source.servers = list(merged.values())
    if source.scope == "project" and source.files and not named:
        trusted = _codex_trusts(context.project or "", context.environ)
        if not trusted:
            source.notes.append(f"Codex reads a project's .codex/config.toml only in a project it trusts, and no "
                                f"[projects.\"<path>\"] trust_level = \"trusted\" in {user_files('codex', context.environ)[0]} covers "
                                f"{context.project}: these servers may never have run in Codex here")


def _codex_trusts(project: str, environ: Mapping[str, str]) -> bool:
    """Whether Codex's user config marks ``project`` (or a folder above it) as trusted."""
    from toolscript.config import toml

    path = user_files("codex", environ)[0]
    data = _read_bytes(path)
    if data is None:
        return False
    try:
        projects = toml.loads(_decode(path, data), path).get("projects")
    except (toml.TomlError, UserError):
        return False
    if not isinstance(projects, dict):
        return False
    probe = os.path.abspath(project)
    while True:
        entry = projects.get(probe)
        if isinstance(entry, dict) and entry.get("trust_level") == "trusted":
            return True
        parent = os.path.dirname(probe)
        if parent == probe:
            return False
        probe = parent


def _rename(source: Source) -> None:
    """Give each server a name toolscript accepts; skip one whose new name another server already has."""
    taken = {s.name for s in source.servers if s.entry is not None and valid_name(s.name)}
    for server in source.servers:
        if valid_name(server.name):
            continue
        new = re.sub(r"_{2,}", "_", re.sub(r"[^A-Za-z0-9_.-]", "-", server.name)).strip("-") or ""
        if not new:
            server.entry, server.skipped = None, f"the name {server.name!r} has no letter or digit toolscript can use; add it by hand"
        elif new in taken:
            server.entry, server.skipped = None, f"renamed to {new!r} (toolscript names use only A-Z a-z 0-9 _ . -), but another server has that name"
        else:
            server.warnings.insert(0, f"renamed {server.name!r} to {new!r}: toolscript names use only A-Z a-z 0-9 _ . - and no '__'")
            server.name = new
            if server.entry is not None:
                taken.add(new)


def valid_name(name: str) -> bool:
    """Whether toolscript accepts ``name`` as a server name."""
    return bool(_NAME_RE.match(name)) and "__" not in name
