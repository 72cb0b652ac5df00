"""The fix to name when a stdio server says it lacks an environment variable.

toolscript starts a stdio server with a few variables of its own environment
(``mcp.client.stdio.child_environment``: HOME, PATH, proxies, ...) plus the
entry's ``env``, not everything the shell exported: tokens of other tools live
there.  A server that needs ``BRAVE_API_KEY`` then exits with "BRAVE_API_KEY
environment variable is required" although the user exported it.  Every place
that reports a failed server (``servers check``, ``doctor``, the gateway's
``/servers`` behind ``gateway status`` and ``list-servers``) passes what the
server said through :func:`with_hint`, which adds the line to write:

    add "env": {"BRAVE_API_KEY": "${BRAVE_API_KEY}"} to server "brave" in ~/.toolscript.json

and, when the variable is not set here either, to export it first.  A name is
taken only from the phrasings servers use for a missing variable ("X is
required", "X is not set", "Missing X", "set X", "environment variable X",
``KeyError: 'X'``); one the server was given already gets no hint (its value is
what is wrong, not its absence).
"""

import json
import os
import re
from typing import Dict, List, Mapping, Optional, Tuple

from toolscript.config.load import ServerConfig

# What a variable's name looks like: upper case, digits and underscores, starting with a letter.
_NAME = r"([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)"
_QUOTE = r"[`'\"]?"
_END = r"(?![A-Za-z0-9_])"
_START = r"(?<![A-Za-z0-9_.$])"
_ENV_WORDS = r"(?:environment|env)(?:\s+var(?:iable)?s?)?"
# Each pattern captures the name; the "env" words around it, when present, make the match a sure one.
_PATTERNS = [
    # BRAVE_API_KEY environment variable is required / FOO is not set / "FOO" must be set
    re.compile(_START + _QUOTE + _NAME + _QUOTE + r"\s*(?i:" + _ENV_WORDS + r"\s+)?(?i:(?:is|was|are|has)\s+)?(?i:"
               r"not\s+set|unset|required|missing|undefined|not\s+defined|not\s+provided|not\s+found|empty|not\s+been\s+set"
               r"|must\s+be\s+(?:set|provided|defined)|needs\s+to\s+be\s+(?:set|provided))" + r"(?![A-Za-z])"),
    # Missing FOO / set FOO / Please set the GITHUB_TOKEN environment variable / missing environment variable: FOO
    re.compile(r"(?i:\b(?:missing|set|export|provide|define|requires?|needs?)\s+(?:(?:the|an?|your)\s+)?(?:required\s+)?"
               r"(?:" + _ENV_WORDS + r"[:\s]+)?)" + _QUOTE + r"\$?" + _NAME + _QUOTE + _END),
    # environment variable FOO ... / env var FOO
    re.compile(r"(?i:\b" + _ENV_WORDS + r")[:\s]+" + _QUOTE + r"\$?" + _NAME + _QUOTE + _END),
    # process.env.FOO, os.environ["FOO"], KeyError: 'FOO' (a Python server reading os.environ[...])
    re.compile(r"process\.env\." + _NAME + _END),
    re.compile(r"(?:environ|KeyError:?\s*)\[?['\"]" + _NAME + r"['\"]"),
]
_SURE = re.compile(r"(?i)\benv(?:ironment)?\b|process\.env|environ")
# Upper-case words that are never the variable meant ("ERROR: missing ..." names no variable).
_NOT_VARIABLES = frozenset({"ERROR", "WARN", "WARNING", "INFO", "DEBUG", "FATAL", "NOTE", "TODO", "JSON", "HTTP", "HTTPS",
                            "URL", "API", "MCP", "SDK", "CLI", "NPM", "NODE", "THE", "AND", "NOT", "YOU", "FOR"})


def asked_variables(text: str) -> List[Tuple[str, bool]]:
    """The variables ``text`` says are missing, in order: (name, sure), sure when it says "env"/"environment" there."""
    found: Dict[str, bool] = {}
    for pattern in _PATTERNS:
        for match in pattern.finditer(text):
            name = match.group(1)
            if len(name) < 3 or name in _NOT_VARIABLES:
                continue
            sure = bool(_SURE.search(match.group(0)))
            found[name] = found.get(name, False) or sure
    # Keep the order the server wrote them in.
    return sorted(found.items(), key=lambda item: text.find(item[0]))


def missing_variable_hint(server: ServerConfig, said: str, environ: Optional[Mapping[str, str]] = None,
                          passed: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """The fix for a stdio server that said (``said``: its error and stderr) it lacks a variable it was not given; or None.

    ``environ`` is where the user's variables are looked up (default: this
    process's, which is what the server would have inherited);
    ``passed`` is the environment the server was started with (default: what
    ``child_environment`` gives it).
    """
    if server.type != "stdio" or not said:
        return None
    environ = os.environ if environ is None else environ
    if passed is None:
        from toolscript.mcp.client.stdio import child_environment

        passed = child_environment(server.env, environ)
    names = []
    for name, sure in asked_variables(said):
        if name in passed:
            continue  # given, so its value is the problem: nothing to add
        if name in environ or sure or "_" in name:
            names.append(name)
    if not names:
        return None
    unset = [name for name in names if name not in environ]
    if server.imported is not None:  # Claude Code's entry: it gets the whole environment, so exporting is the fix
        exports = " ".join(f"{name}=..." for name in names)
        return (f"{_listing(names)} {'is' if len(names) == 1 else 'are'} not set: export {exports} where Claude Code and "
                f"toolscript start (server {json.dumps(server.name)} of {server.describe_source()} gets your whole environment)")
    where = f"server {json.dumps(server.name)} in {_shown_path(server.source)}"
    pairs = ", ".join(f"{json.dumps(name)}: {json.dumps('${' + name + '}')}" for name in names)
    if server.raw.get("env"):
        add = f"add {pairs} to the \"env\" of {where}"
    else:
        add = f"add \"env\": {{{pairs}}} to {where}"
    if not unset:
        said_names = _listing(names)
        return f"{said_names} {'is' if len(names) == 1 else 'are'} set in your environment but not passed to stdio servers: {add}"
    exports = " ".join(f"{name}=..." for name in unset)
    return f"{_listing(unset)} {'is' if len(unset) == 1 else 'are'} not set: export {exports}, then {add}"


def with_hint(server: ServerConfig, error: str, stderr_tail: str = "", environ: Optional[Mapping[str, str]] = None) -> str:
    """``error`` with the missing-variable fix appended (``"; "``), when the server's words call for one."""
    hint = missing_variable_hint(server, f"{stderr_tail}\n{error}", environ)
    if not hint or hint in error:
        return error
    return f"{error}; {hint}"


def _listing(names: List[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _shown_path(path: str) -> str:
    """The config file as a person writes it: ``~/.toolscript.json`` for one in the home directory."""
    home = os.path.expanduser("~")
    if home and home != "/" and path.startswith(home.rstrip("/") + "/"):
        return "~/" + path[len(home.rstrip("/")) + 1:]
    return path
