"""Config keys read on a hot path, without loading the whole configuration.

``toolscript.config.load`` validates every server entry and costs ~10 ms to
import; ``exec`` (``requireIsolation``) and the per-prompt suggestion hook
(``suggestions``) run on every script and every prompt, so they read just
their key here: a file that does not mention it is not even parsed.  The
rules for each key's value live here too, and ``toolscript.config.load`` uses the
same functions, so ``config validate`` and the hot path never disagree.
"""

import json
import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from toolscript.errors import UserError

USER_PATH = "~/.toolscript.json"
# A project's own file: it comes with the repository, so it counts only once the user approved it (toolscript.config.trust).
PROJECT_PATH = "./.toolscript.json"
DEFAULT_PATHS = (USER_PATH, PROJECT_PATH)
CONFIG_ENV = "TOOLSCRIPT_CONFIG"

# "claudeCodeServers": false stops serving the MCP servers Claude Code is configured with (toolscript.config.claude_code).
CLAUDE_CODE_SERVERS_KEY = "claudeCodeServers"

SUGGESTIONS_KEY = "suggestions"
SUGGESTION_BACKENDS = ("auto", "api", "claude", "local")
# "suggestions": what the UserPromptSubmit hook does by default.
SUGGESTION_DEFAULTS: Dict[str, Any] = {
    "enabled": True,  # false: the hook adds nothing (TOOLSCRIPT_SUGGEST=0 does the same)
    "backend": "auto",  # auto | api | claude | local
    "model": None,  # None: the backend's small model ("haiku")
    "timeout": 1.5,  # seconds for the whole suggestion, model included (the prompt hook has 2 s in all)
    "minInterval": 5.0,  # seconds between two model calls of one session; sooner -> the local ranker answers
    "maxTools": 5,
}
MEMORY_KEY = "memory"
# "memory": capture and injection across sessions (the memory hooks and commands).
MEMORY_DEFAULTS: Dict[str, Any] = {
    "enabled": True,  # false: the hooks neither record nor inject (TOOLSCRIPT_MEMORY=0 does the same)
    "dataDir": None,  # None: TOOLSCRIPT_DATA_DIR, else ~/.toolscript
    "captureReadOnly": False,  # also record Read/Grep/Glob/LS calls
    "injectBudget": 600,  # tokens of related memories added at SessionStart and per prompt
    "briefBudget": 200,  # tokens of the brief added before an Edit/Write/Bash runs (PreToolUse); 0: no brief
    "briefInterval": 60.0,  # seconds between two briefs of one session
    "summaryBackend": "none",  # none | auto | api | claude: a model rewrites the SessionEnd summary (optional)
    "summaryModel": None,  # the model for it (default: the backend's haiku)
}


def resolve_path(path: str, base: str, environ: Mapping[str, str]) -> str:
    """``path`` with ``~`` expanded (from ``environ["HOME"]``) and made absolute against ``base``."""
    if path == "~" or path.startswith("~/") or path.startswith("~" + os.sep):
        home = environ.get("HOME") or os.path.expanduser("~")
        path = os.path.join(home, path[2:])
    elif path.startswith("~"):  # ~user/...
        path = os.path.expanduser(path)
    if not os.path.isabs(path):
        path = os.path.normpath(os.path.join(base, path))
    return path


def select_paths(named: Optional[List[str]], cwd: Optional[str], environ: Optional[Mapping[str, str]]) -> Tuple[List[str], bool]:
    """The config files to read, resolved and de-duplicated, and whether the user named them.

    ``named`` (``--config``) replaces everything; else ``TOOLSCRIPT_CONFIG``
    (comma-separated); else ``~/.toolscript.json`` then ``./.toolscript.json``.
    """
    env = os.environ if environ is None else environ
    base = os.getcwd() if cwd is None else cwd
    if named is not None:
        chosen, explicit = [p.strip() for p in named if p.strip()], True
    elif env.get(CONFIG_ENV, "").strip():
        chosen, explicit = [p.strip() for p in env[CONFIG_ENV].split(",") if p.strip()], True
    else:
        chosen, explicit = list(DEFAULT_PATHS), False
    resolved: List[str] = []
    for path in chosen:
        path = resolve_path(path, base, env)
        if path not in resolved:  # run from $HOME, both defaults are the same file: read it once
            resolved.append(path)
    return resolved, explicit


def project_path(named: Optional[List[str]], cwd: Optional[str], environ: Optional[Mapping[str, str]]) -> Optional[str]:
    """The project file among the files read, which needs the user's approval: None when the user named the files.

    ``--config`` and ``TOOLSCRIPT_CONFIG`` are the user's own choice; so is
    ``./.toolscript.json`` when the current directory is the home directory
    (it is then ``~/.toolscript.json``).
    """
    env = os.environ if environ is None else environ
    if named is not None or env.get(CONFIG_ENV, "").strip():
        return None
    base = os.getcwd() if cwd is None else cwd
    project = resolve_path(PROJECT_PATH, base, env)
    return None if project == resolve_path(USER_PATH, base, env) else project


def read_key(key: str, named: Optional[List[str]] = None, cwd: Optional[str] = None,
             environ: Optional[Mapping[str, str]] = None) -> List[Tuple[str, Any]]:
    """``[(path, value)]`` for each config file that sets top-level ``key``, in reading order (later wins).

    A missing or unreadable file sets nothing (``config validate`` reports
    it), nor does a project file the user has not approved (``toolscript.config.trust``).
    A file that mentions ``key`` but is not a JSON object raises
    ``UserError`` (exit 2): the user meant to set something there, and
    guessing the default could be the opposite of what they asked for.
    """
    found: List[Tuple[str, Any]] = []
    needle = json.dumps(key).encode("utf-8")  # the quoted key: a file that never writes it sets nothing
    project = project_path(named, cwd, environ)
    for path in select_paths(named, cwd, environ)[0]:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        if needle not in data:
            continue
        if path == project:
            from toolscript.config import trust  # only when a project file would set the key

            if trust.status(path, data, environ) != trust.TRUSTED:
                continue
        try:
            document = json.loads(data.decode("utf-8-sig"))
        except (ValueError, RecursionError):
            document = None
        if not isinstance(document, dict):
            raise UserError(f"{path}: not a valid config file, so its {key!r} cannot be read; run 'toolscript config validate'", exit_code=2)
        if key in document:
            found.append((path, document[key]))
    return found


def json_type(value: Any) -> str:
    """A JSON value's type with its article, for messages: "a string", "an array", "null"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _shown(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, (dict, list)) else json_type(value)


def _boolean(item: Any) -> Tuple[bool, Any, str]:
    return isinstance(item, bool), item, "true or false"


def _seconds(low: float, high: float, zero_ok: bool) -> Callable[[Any], Tuple[bool, Any, str]]:
    def check(item: Any) -> Tuple[bool, Any, str]:
        ok = isinstance(item, (int, float)) and not isinstance(item, bool) and low <= item <= high and (zero_ok or item > 0)
        return ok, float(item) if ok else None, f"seconds, {'0' if zero_ok else 'more than 0'} to {high:g}"
    return check


def _whole(low: int, high: int) -> Callable[[Any], Tuple[bool, Any, str]]:
    def check(item: Any) -> Tuple[bool, Any, str]:
        ok = isinstance(item, int) and not isinstance(item, bool) and low <= item <= high
        return ok, item, f"a whole number from {low} to {high}"
    return check


def _one_of(choices: Sequence[str]) -> Callable[[Any], Tuple[bool, Any, str]]:
    def check(item: Any) -> Tuple[bool, Any, str]:
        return item in choices, item, "one of " + ", ".join(choices)
    return check


def _name_or_null(example: str) -> Callable[[Any], Tuple[bool, Any, str]]:
    def check(item: Any) -> Tuple[bool, Any, str]:
        ok = item is None or (isinstance(item, str) and bool(item.strip()))
        return ok, item.strip() if isinstance(item, str) else None, example
    return check


# Each section's keys: name -> check(value) -> (ok, value to keep, what was expected).
_SECTIONS: Dict[str, Dict[str, Callable[[Any], Tuple[bool, Any, str]]]] = {
    SUGGESTIONS_KEY: {
        "enabled": _boolean,
        "backend": _one_of(SUGGESTION_BACKENDS),
        "model": _name_or_null('a model name (e.g. "claude-haiku-4-5")'),
        "timeout": _seconds(0, 60, zero_ok=False),
        "minInterval": _seconds(0, 60, zero_ok=True),
        "maxTools": _whole(0, 10),
    },
    MEMORY_KEY: {
        "enabled": _boolean,
        "dataDir": _name_or_null('a directory (e.g. "~/.toolscript")'),
        "captureReadOnly": _boolean,
        "injectBudget": _whole(0, 4000),
        "briefBudget": _whole(0, 1000),
        "briefInterval": _seconds(0, 3600, zero_ok=True),
        "summaryBackend": _one_of(("none", "auto", "api", "claude")),
        "summaryModel": _name_or_null('a model name (e.g. "claude-haiku-4-5")'),
    },
}
_DEFAULTS = {SUGGESTIONS_KEY: SUGGESTION_DEFAULTS, MEMORY_KEY: MEMORY_DEFAULTS}


def parse_section(key: str, value: Any, source: str) -> Tuple[Dict[str, Any], List[str]]:
    """The settings one file gives in section ``key`` (only the keys it sets), and its problems (one line each)."""
    where = f"{source}: {key}"
    if isinstance(value, bool):
        return {"enabled": value}, []
    if not isinstance(value, dict):
        return {}, [f"{where}: expected an object (or true/false), got {json_type(value)}"]
    rules = _SECTIONS[key]
    settings: Dict[str, Any] = {}
    problems: List[str] = []
    for name, item in value.items():
        check = rules.get(name)
        if check is None:
            problems.append(f"{where}: unknown key {json.dumps(name)} (known: {', '.join(rules)})")
            continue
        ok, kept, expected = check(item)
        if ok:
            settings[name] = kept
        else:
            problems.append(f"{where}.{name}: expected {expected}, got {_shown(item)}")
    return settings, problems


def section_settings(key: str, named: Optional[List[str]] = None, cwd: Optional[str] = None,
                     environ: Optional[Mapping[str, str]] = None) -> Tuple[Dict[str, Any], List[str]]:
    """Section ``key``'s merged settings (defaults, then each file, later wins per key) and every problem found.

    A bad value is reported and ignored (the default stays): a hook must
    still answer, and ``config validate`` fails on the same problems.
    """
    settings = dict(_DEFAULTS[key])
    problems: List[str] = []
    try:
        found = read_key(key, named, cwd, environ)
    except UserError as exc:
        return settings, [str(exc)]
    for path, value in found:
        given, trouble = parse_section(key, value, path)
        settings.update(given)
        problems += trouble
    return settings, problems


def suggestion_settings(named: Optional[List[str]] = None, cwd: Optional[str] = None,
                        environ: Optional[Mapping[str, str]] = None) -> Tuple[Dict[str, Any], List[str]]:
    return section_settings(SUGGESTIONS_KEY, named, cwd, environ)


def memory_settings(named: Optional[List[str]] = None, cwd: Optional[str] = None,
                    environ: Optional[Mapping[str, str]] = None) -> Tuple[Dict[str, Any], List[str]]:
    """The memory section's settings; a project file turns memory off even before the user trusts it.

    Trust guards what a repository could make toolscript do (run a server,
    read a directory); ``"memory": false`` or ``{"enabled": false}`` only
    makes it do less, so a project that asks to be left out of memory is
    left out at once.  Its other memory keys still wait for trust.
    """
    settings, problems = section_settings(MEMORY_KEY, named, cwd, environ)
    project = project_path(named, cwd, environ)
    if settings["enabled"] and project is not None and _turned_off(project):
        settings["enabled"] = False
    return settings, problems


def _turned_off(path: str) -> bool:
    """Whether the file at ``path`` says ``"memory": false`` or ``"memory": {"enabled": false}`` (unreadable: no)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return False
    if json.dumps(MEMORY_KEY).encode("utf-8") not in data:
        return False
    try:
        value = json.loads(data.decode("utf-8-sig")).get(MEMORY_KEY)
    except (ValueError, AttributeError, RecursionError):
        return False
    return value is False or (isinstance(value, dict) and value.get("enabled") is False)
