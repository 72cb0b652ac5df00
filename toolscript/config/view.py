"""``toolscript config show``'s view of the configuration: JSON-ready, secrets masked.

Values that came from ``${VAR}`` templates are shown as the template (it holds
no secret); literal ``env``/``headers`` values, URL passwords, secret-looking
URL query parameters and arguments, and an OAuth client secret are shown as
``****``.  The masking rules for a single URL live in ``toolscript.config.load``
(``mask_url``), which also uses them so a problem message never prints a
substituted secret.
"""

from typing import Any, Dict, List

from toolscript.config.load import MASK, OAUTH_KEYS, Config, OAuthConfig, is_secret_name, mask_url, references_variable


def masked_view(config: Config) -> Dict[str, Any]:
    """The configuration as a JSON-ready dict with secrets masked (see the module's docstring for what is masked)."""
    servers: Dict[str, Any] = {}
    for name, server in config.servers.items():
        raw = server.raw if isinstance(server.raw, dict) else {}
        view: Dict[str, Any] = {"type": server.type}
        if server.command is not None:
            view["command"] = server.command
        if server.args:
            view["args"] = _mask_args(server.args, raw.get("args"))
        # An imported server's env is the whole environment it starts with: show only what its entry sets.
        env = server.imported.env if server.imported is not None else server.env
        if env:
            view["env"] = _mask_mapping(env, raw.get("env"))
        if server.cwd is not None:
            view["cwd"] = server.cwd
        if server.url is not None:
            raw_url = raw.get("url")
            shown = raw_url if isinstance(raw_url, str) and references_variable(raw_url) else server.url
            view["url"] = mask_url(shown)
        if server.headers:
            view["headers"] = _mask_mapping(server.headers, raw.get("headers"))
        if server.include_tools:
            view["includeTools"] = list(server.include_tools)
        if server.exclude_tools:
            view["excludeTools"] = list(server.exclude_tools)
        if server.timeout is not None:
            view["timeout"] = server.timeout
        if "maxMessageBytes" in raw or server.max_message_bytes != config.max_message_bytes:
            view["maxMessageBytes"] = server.max_message_bytes
        if server.disabled:
            view["disabled"] = True
        if "oauth" in raw and server.type != "stdio":
            view["oauth"] = _mask_oauth(server.oauth, raw.get("oauth"))
        if server.config_error:
            view["error"] = server.config_error
        view["source"] = server.source
        if server.imported is not None:
            view["from"] = {"client": "Claude Code", "scope": server.imported.scope, "file": server.imported.shown,
                            "approval": server.imported.approval or None, "described": server.imported.describe(),
                            "lazy": True}
            if server.imported.headers_helper:
                view["headersHelper"] = server.imported.headers_helper
            if server.imported.call_seconds is not None:
                view["callTimeout"] = server.imported.call_seconds
            if server.imported.unset:
                view["unset"] = list(server.imported.unset)
        servers[name] = view
    return {
        "files": list(config.files),
        "servers": servers,
        "builtinTools": config.builtin_tools,
        "workspaceRoots": list(config.workspace_roots),
        "mcpToolNames": config.mcp_tool_names,
        "maxMessageBytes": config.max_message_bytes,
        "requireIsolation": config.require_isolation,
        "suggestions": dict(config.suggestions),
        "memory": dict(config.memory),
        "warnings": list(config.warnings),
        "untrusted": [file.as_dict() for file in config.untrusted],
        "claudeCodeServers": config.claude_code_servers,
        "claudeCodeFiles": list(config.claude_code_files),
        "notImported": [item.as_dict() for item in config.not_imported],
    }


def _mask_oauth(oauth: OAuthConfig, raw: Any) -> Any:
    """The ``oauth`` setting for ``config show``: the client secret masked unless written as ``${VAR}``."""
    if not isinstance(raw, dict):
        return oauth.enabled
    raw = raw if isinstance(raw, dict) else {}
    shown: Dict[str, Any] = {}
    for key, attribute in OAUTH_KEYS.items():
        value = getattr(oauth, attribute)
        template = raw.get(key)
        if value is None and not (isinstance(template, str) and references_variable(template)):
            continue
        if key == "clientSecret":
            value = template if isinstance(template, str) and references_variable(template) else MASK
        elif isinstance(template, str) and references_variable(template):
            value = template
        shown[key] = value
    return shown


def _mask_mapping(values: Dict[str, str], raw: Any) -> Dict[str, str]:
    """Templates stay visible (they hold no secret); literal values are masked."""
    raw = raw if isinstance(raw, dict) else {}
    shown = {}
    for key in values:
        template = raw.get(key)
        shown[key] = template if isinstance(template, str) and references_variable(template) else MASK
    return shown


def _mask_args(args: List[str], raw: Any) -> List[str]:
    raw = raw if isinstance(raw, list) else []
    shown = []
    after_secret_flag = False
    for i, arg in enumerate(args):
        template = raw[i] if i < len(raw) else None
        if isinstance(template, str) and references_variable(template):
            shown.append(template)
        elif after_secret_flag:
            shown.append(MASK)
        elif arg.startswith("-") and "=" in arg and is_secret_name(arg.split("=", 1)[0]):
            shown.append(arg.split("=", 1)[0] + "=" + MASK)
        else:
            shown.append(arg)
        after_secret_flag = arg.startswith("-") and "=" not in arg and is_secret_name(arg)
    return shown


def masked_entry(entry: Dict[str, Any]) -> Dict[str, Any]:
    """One ``mcpServers`` entry as written (nothing expanded), with the same values masked as in ``config show``."""
    shown = dict(entry)
    for key in ("env", "headers"):
        if isinstance(entry.get(key), dict):
            shown[key] = {k: v if isinstance(v, str) and references_variable(v) else MASK for k, v in entry[key].items()}
    if isinstance(entry.get("args"), list) and all(isinstance(arg, str) for arg in entry["args"]):
        shown["args"] = _mask_args(entry["args"], entry["args"])
    if isinstance(entry.get("url"), str) and not references_variable(entry["url"]):
        shown["url"] = mask_url(entry["url"])
    oauth = entry.get("oauth")
    if isinstance(oauth, dict) and isinstance(oauth.get("clientSecret"), str) and not references_variable(oauth["clientSecret"]):
        shown["oauth"] = dict(oauth, clientSecret=MASK)
    return shown
