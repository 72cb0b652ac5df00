"""What a configuration is made of: servers, where they came from, and the files set aside.

``toolscript.config.load`` reads toolscript's files into these, and
``toolscript.config.claude_code`` Claude Code's; both import them from here
(``load`` re-exports them, so ``from toolscript.config.load import
ServerConfig`` keeps working).
"""

import fnmatch
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Union

from toolscript.config import keys as configkeys

DEFAULT_CONNECT_TIMEOUT = 30.0  # seconds
DEFAULT_CALL_TIMEOUT = 60.0  # seconds
# The largest JSON-RPC message (a stdio line, an SSE event, an HTTP body) taken
# from an upstream: a larger tool result fails with an error naming this limit.
DEFAULT_MAX_MESSAGE_BYTES = 8 * 1024 * 1024


@dataclass
class OAuthConfig:
    """A server's ``"oauth"`` setting: how ``toolscript auth`` registers and signs in (all optional).

    ``enabled`` is False for ``"oauth": false``: the server never gets a token
    (nor a "needs auth" state); a 401 from it is an error like any other.
    """

    enabled: bool = True
    client_id: Optional[str] = None  # "clientId": a client registered with the authorization server by hand
    client_secret: Optional[str] = None  # "clientSecret": its secret (write it as ${VAR})
    scope: Optional[str] = None  # "scope": asked for instead of what the server suggests
    client_metadata_url: Optional[str] = None  # "clientMetadataUrl": an https URL of a client ID metadata document
    redirect_port: Optional[int] = None  # "redirectPort": the loopback callback port (a client registered with a fixed redirect URI)


@dataclass
class Imported:
    """Where a server taken from Claude Code's configuration came from, and what it keeps of Claude Code's rules.

    Such a server is *lazy* in the gateway: Claude Code runs its own copy, and a
    stateful server (a lock, a fixed port, a browser profile) breaks when two
    copies run at once, so toolscript starts it only to list its tools (once
    per entry: the list is cached) and to call it, and stops it when idle.
    """

    scope: str  # "user" | "local" | "project": Claude Code's scope
    shown: str  # the file, as people read it: "~/.claude.json", ".mcp.json"
    approval: str = ""  # a project server: what approved it ("approved in .claude/settings.local.json")
    key: str = ""  # the SHA-256 of the entry as written: names its cached tool list
    env: Dict[str, str] = field(default_factory=dict)  # the entry's own "env", expanded (ServerConfig.env is the whole environment)
    headers_helper: Optional[str] = None  # "headersHelper": a shell command printing a JSON object of headers
    helper_cwd: Optional[str] = None  # where the helper runs (Claude Code's config directory)
    connect_seconds: Optional[float] = None  # from MCP_TIMEOUT (milliseconds), as Claude Code reads it
    call_seconds: Optional[float] = None  # "timeout" (milliseconds in Claude Code's file; ignored below 1000)
    unset: List[str] = field(default_factory=list)  # ${VAR}s not set: passed on literally, as Claude Code does

    def describe(self) -> str:
        """``~/.claude.json (user scope)``, ``.mcp.json (project scope, approved in .claude/settings.local.json)``."""
        detail = f"{self.scope} scope" + (f", {self.approval}" if self.approval else "")
        return f"{self.shown} ({detail})"


@dataclass
class ServerConfig:
    """One MCP server as configured, after ``${VAR}`` substitution."""

    name: str
    type: str  # "stdio" | "http" | "sse"
    source: str  # path of the file this entry came from
    command: Optional[str] = None
    args: List[str] = field(default_factory=list)
    env: Dict[str, str] = field(default_factory=dict)
    cwd: Optional[str] = None
    url: Optional[str] = None
    headers: Dict[str, str] = field(default_factory=dict)
    include_tools: List[str] = field(default_factory=list)  # empty = all
    exclude_tools: List[str] = field(default_factory=list)
    timeout: Optional[float] = None  # seconds; None = the defaults above
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES  # "maxMessageBytes"
    disabled: bool = False
    oauth: OAuthConfig = field(default_factory=OAuthConfig)  # "oauth" (http/sse servers only)
    raw: Dict[str, Any] = field(default_factory=dict)  # the entry as written, before substitution
    # Why this server cannot be started though the file is valid (an unset
    # ``${VAR}``), or None.  Only this server fails; the others still work.
    config_error: Optional[str] = None
    # A server taken from Claude Code's configuration (toolscript.config.claude_code): where from, and its
    # Claude Code rules.  Its ``env`` is then the whole environment the server starts with.
    imported: Optional[Imported] = None

    @property
    def lazy(self) -> bool:
        """Started only to list its tools and to call them, stopped when idle (see ``Imported``)."""
        return self.imported is not None

    def describe_source(self) -> str:
        """Where the entry is written, for people: the file, and for an imported server its scope."""
        return self.imported.describe() if self.imported is not None else self.source

    def allows_tool(self, tool_name: str) -> bool:
        """Whether ``includeTools``/``excludeTools`` let this tool through.

        Patterns are exact names or ``*``/``?`` globs, matched case-sensitively.
        """
        if self.include_tools and not _matches_any(tool_name, self.include_tools):
            return False
        return not _matches_any(tool_name, self.exclude_tools)

    @property
    def connect_timeout(self) -> float:
        if self.imported is not None and self.imported.connect_seconds is not None:
            return self.imported.connect_seconds
        return DEFAULT_CONNECT_TIMEOUT if self.timeout is None else self.timeout

    @property
    def call_timeout(self) -> float:
        if self.imported is not None and self.imported.call_seconds is not None:
            return self.imported.call_seconds
        return DEFAULT_CALL_TIMEOUT if self.timeout is None else self.timeout


def _matches_any(name: str, patterns: List[str]) -> bool:
    # fnmatchcase, not fnmatch: tool names are case-sensitive on every platform.
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


@dataclass
class UntrustedFile:
    """A project config file the user has not approved (or whose content changed since): ignored as a whole."""

    path: str
    status: str  # trust.UNTRUSTED (never approved) or trust.CHANGED (approved once, different content now)
    sha256: str
    servers: Dict[str, Any] = field(default_factory=dict)  # name -> the entry as written (nothing expanded)
    settings: List[str] = field(default_factory=list)  # the gateway-wide keys it sets, ignored with it
    problem: Optional[str] = None  # why its content could not be read as a config file
    # A Claude Code project file (.mcp.json) whose servers Claude Code has not approved: only those are listed.
    claude_code: bool = False

    def reason(self) -> str:
        """One line: why the file's servers are not started, and who approves it how."""
        if self.claude_code:
            what = "changed since it was trusted" if self.status == "changed" else "is not trusted in toolscript"
            return (f"{self.path}: Claude Code has not approved these servers for this project and the file {what}, "
                    f"so toolscript does not start them; the user approves them in Claude Code, or in a terminal with "
                    f"`{self.fix()}`")
        what = "has changed since it was approved" if self.status == "changed" else "is not trusted yet"
        return f"{self.path} {what}, so nothing in it is used; {_how_to_approve()}"

    def fix(self) -> str:
        """The command that approves this file."""
        import shlex

        return f"toolscript trust {shlex.quote(self.path)}" if self.claude_code else "toolscript trust"

    def as_dict(self) -> Dict[str, Any]:
        return {"path": self.path, "status": self.status, "sha256": self.sha256, "servers": sorted(self.servers),
                "settings": list(self.settings), "problem": self.problem, "fix": self.fix(),
                **({"client": "Claude Code"} if self.claude_code else {})}


def _how_to_approve() -> str:
    from toolscript.config import trust

    return trust.HOW_TO_APPROVE


@dataclass
class NotImported:
    """A server Claude Code is configured with that toolscript does not serve, and why."""

    name: str
    source: str  # the file and scope, as people read it ("~/.claude.json (user scope)")
    reason: str
    warn: bool = True  # False when the user chose it (turned off, rejected, or a toolscript entry of the same name)

    def as_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "source": self.source, "reason": self.reason}


@dataclass
class Config:
    """The merged configuration of all files read."""

    servers: Dict[str, ServerConfig]  # insertion-ordered, disabled ones included
    files: List[str]  # files that existed and were read, in order
    warnings: List[str]  # one line each
    # Built-in tools: True (all), False (none) or the names allowed.
    builtin_tools: Union[bool, List[str]] = True
    # Extra directories the file built-ins may read, besides the workspace itself.
    workspace_roots: List[str] = field(default_factory=list)
    # How the gateway's MCP endpoint names tools: "prefixed" (server__tool) or
    # "plain" (the server's own name, prefixed only where two servers collide).
    mcp_tool_names: str = "prefixed"
    # The top-level "maxMessageBytes": the default for servers that set none.
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    # "requireIsolation": exec refuses to run a script when only the in-process guard
    # (no kernel-enforced layer) is available, as ``exec --require-isolation`` does.
    require_isolation: bool = False
    # "suggestions": the per-prompt suggestion hook's settings, defaults filled in (configkeys.SUGGESTION_DEFAULTS).
    suggestions: Dict[str, Any] = field(default_factory=lambda: dict(configkeys.SUGGESTION_DEFAULTS))
    # "memory": the memory hooks' settings, defaults filled in (configkeys.MEMORY_DEFAULTS).
    memory: Dict[str, Any] = field(default_factory=lambda: dict(configkeys.MEMORY_DEFAULTS))
    # The project file, when the user has not approved its content: read, never used.
    untrusted: List[UntrustedFile] = field(default_factory=list)
    # "claudeCodeServers": also serve the MCP servers Claude Code is configured with for this project.
    claude_code_servers: bool = True
    # Claude Code's files that were read for them, and its entries that are not served, with why.
    claude_code_files: List[str] = field(default_factory=list)
    not_imported: List["NotImported"] = field(default_factory=list)

    def untrusted_servers(self) -> Dict[str, UntrustedFile]:
        """{server name: the unapproved file that names it}, for servers no approved file defines."""
        return {name: file for file in self.untrusted for name in file.servers if name not in self.servers}

    def enabled_servers(self) -> List[ServerConfig]:
        return [server for server in self.servers.values() if not server.disabled]
