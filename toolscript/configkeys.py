"""Config keys read on a hot path, without loading the whole configuration.

``toolscript.config`` validates every server entry and costs ~10 ms to
import; ``exec`` (``requireIsolation``) and the per-prompt suggestion hook
(``suggestions``) run on every script and every prompt, so they read just
their key here: a file that does not mention it is not even parsed.  The
rules for each key's value live here too, and ``toolscript.config`` uses the
same functions, so ``config validate`` and the hot path never disagree.
"""

import json
import os
from typing import Any, Dict, List, Mapping, Optional, Tuple

from toolscript.errors import UserError

DEFAULT_PATHS = ("~/.toolscript.json", "./.toolscript.json")
CONFIG_ENV = "TOOLSCRIPT_CONFIG"

SUGGESTIONS_KEY = "suggestions"
SUGGESTION_BACKENDS = ("auto", "api", "claude", "local")
# "suggestions": what the UserPromptSubmit hook does by default.
SUGGESTION_DEFAULTS: Dict[str, Any] = {
    "enabled": True,  # false: the hook adds nothing (TOOLSCRIPT_SUGGEST=0 does the same)
    "backend": "auto",  # auto | api | claude | local
    "model": None,  # None: the backend's small model ("haiku")
    "timeout": 5.0,  # seconds for the whole suggestion, model included (spec 000: 5 s)
    "minInterval": 5.0,  # seconds between two model calls of one session; sooner -> the local ranker answers
    "maxTools": 5,
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


def read_key(key: str, named: Optional[List[str]] = None, cwd: Optional[str] = None,
             environ: Optional[Mapping[str, str]] = None) -> List[Tuple[str, Any]]:
    """``[(path, value)]`` for each config file that sets top-level ``key``, in reading order (later wins).

    A missing or unreadable file sets nothing (``config validate`` reports
    it).  A file that mentions ``key`` but is not a JSON object raises
    ``UserError`` (exit 2): the user meant to set something there, and
    guessing the default could be the opposite of what they asked for.
    """
    found: List[Tuple[str, Any]] = []
    needle = json.dumps(key).encode("utf-8")  # the quoted key: a file that never writes it sets nothing
    for path in select_paths(named, cwd, environ)[0]:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        if needle not in data:
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


def _json_type(value: Any) -> str:
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


def parse_suggestions(value: Any, source: str) -> Tuple[Dict[str, Any], List[str]]:
    """The ``suggestions`` settings one file gives (only the keys it sets), and its problems (one line each)."""
    where = f"{source}: {SUGGESTIONS_KEY}"
    if isinstance(value, bool):
        return {"enabled": value}, []
    if not isinstance(value, dict):
        return {}, [f"{where}: expected an object (or true/false), got {_json_type(value)}"]
    settings: Dict[str, Any] = {}
    problems: List[str] = []
    for name, item in value.items():
        if name == "enabled":
            if isinstance(item, bool):
                settings[name] = item
            else:
                problems.append(f"{where}.enabled: expected true or false, got {_json_type(item)}")
        elif name == "backend":
            if item in SUGGESTION_BACKENDS:
                settings[name] = item
            else:
                problems.append(f"{where}.backend: expected one of {', '.join(SUGGESTION_BACKENDS)}, got {json.dumps(item)}")
        elif name == "model":
            if item is None or (isinstance(item, str) and item.strip()):
                settings[name] = item.strip() if isinstance(item, str) else None
            else:
                problems.append(f"{where}.model: expected a model name (e.g. \"claude-haiku-4-5\"), got {_json_type(item)}")
        elif name in ("timeout", "minInterval"):
            if isinstance(item, (int, float)) and not isinstance(item, bool) and 0 <= item <= 60 and (item > 0 or name == "minInterval"):
                settings[name] = float(item)
            else:
                low = "0" if name == "minInterval" else "more than 0"
                problems.append(f"{where}.{name}: expected seconds, {low} to 60, got {json.dumps(item) if not isinstance(item, (dict, list)) else _json_type(item)}")
        elif name == "maxTools":
            if isinstance(item, int) and not isinstance(item, bool) and 0 <= item <= 10:
                settings[name] = item
            else:
                problems.append(f"{where}.maxTools: expected a whole number from 0 to 10, got {json.dumps(item) if not isinstance(item, (dict, list)) else _json_type(item)}")
        else:
            known = ", ".join(SUGGESTION_DEFAULTS)
            problems.append(f"{where}: unknown key {json.dumps(name)} (known: {known})")
    return settings, problems


def suggestion_settings(named: Optional[List[str]] = None, cwd: Optional[str] = None,
                        environ: Optional[Mapping[str, str]] = None) -> Tuple[Dict[str, Any], List[str]]:
    """The merged ``suggestions`` settings (defaults, then each file, later wins) and every problem found.

    A bad value is reported and ignored (the default stays): the hook must
    still answer, and ``config validate`` fails on the same problems.
    """
    settings = dict(SUGGESTION_DEFAULTS)
    problems: List[str] = []
    try:
        found = read_key(SUGGESTIONS_KEY, named, cwd, environ)
    except UserError as exc:
        return settings, [str(exc)]
    for path, value in found:
        given, trouble = parse_suggestions(value, path)
        settings.update(given)
        problems += trouble
    return settings, problems
