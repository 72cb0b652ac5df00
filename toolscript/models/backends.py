"""Model backends: which way to reach a Claude model, and one question, one answer through it.

Two ways to reach a model, one error type (``toolscript.models.ModelError``):

* ``api``: the Messages API (``toolscript.models.messages``), with ANTHROPIC_API_KEY or
  ANTHROPIC_AUTH_TOKEN.
* ``claude``: a ``claude -p`` subprocess (``toolscript.models.claude_cli``), for people
  who log in with a subscription instead of a key.

``choose_backend`` turns ``auto`` into one of them (or ``local``: no model) without
starting a process; ``complete`` asks the chosen one a question and returns a ``Reply``.
Every failure is a ``ModelError`` whose ``kind`` the caller can act on (fall back to
the local ranker, say) and whose text is one line that names the cause and never
contains a key or token.

The prompt hook imports this module on every prompt (to choose a backend) and may never
call a model: the backends themselves are imported inside ``complete``.
"""

import json
import logging
import os
import sys
import time
from typing import Any, Callable, Dict, Mapping, NamedTuple, Optional, Tuple

from toolscript import paths
from toolscript.models import ModelError

BACKENDS = ("auto", "api", "claude", "local")

log = logging.getLogger("toolscript.models")


class Reply(NamedTuple):
    text: str  # the concatenated text blocks (by block type; thinking blocks ignored)
    backend: str  # "api" | "claude"
    model: str  # the model id the backend reported (or asked for)
    usage: Dict[str, int]  # input_tokens / output_tokens when known
    ms: int  # wall time of the call


def complete(
    system: str,
    prompt: str,
    *,
    backend: str,
    model: Optional[str] = None,
    timeout: float = 5.0,
    max_tokens: int = 400,
    env: Optional[Mapping[str, str]] = None,
    gateway: Optional[Tuple[str, str]] = None,
) -> Reply:
    """One user turn, one text answer, within ``timeout`` seconds overall (retries included).

    ``backend`` is "api" or "claude" ("auto" is resolved with ``choose_backend``;
    "local" is not a model: ValueError).  Raises ModelError.  ``gateway``: (URL, model key)
    of the session's gateway, whose warm conversation the claude backend asks first.
    """
    env = os.environ if env is None else env
    name = choose_backend(backend, env)
    if name == "local":
        if (backend or "").strip().lower() == "auto":
            raise ModelError(
                "unavailable",
                "no model backend: set ANTHROPIC_API_KEY, or install the claude CLI and log in with 'claude'",
            )
        raise ValueError("the 'local' backend has no model to complete with: use 'api' or 'claude'")
    started = time.monotonic()
    if name == "api":
        from toolscript.models import messages

        text, model_used, usage = messages.complete(system, prompt, model, timeout, max_tokens, env)
    else:
        from toolscript.models import claude_cli

        text, model_used, usage = claude_cli.complete(system, prompt, model, timeout, env, gateway)
    ms = int((time.monotonic() - started) * 1000)
    log.debug("model %s via %s answered %d characters in %d ms", model_used, name, len(text), ms)
    return Reply(text=text, backend=name, model=model_used, usage=usage, ms=ms)


def choose_backend(
    requested: str = "auto",
    env: Optional[Mapping[str, str]] = None,
    which: Optional[Callable[[str], Optional[str]]] = None,
) -> str:
    """``requested`` validated; ``auto`` becomes "api", "claude" or "local".

    auto: "api" when ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN is set, else "claude"
    when ``claude`` is on PATH and looks logged in (files only: no process), else
    "local".  An unknown name raises ValueError listing the valid ones.
    """
    name = (requested or "auto").strip().lower()
    if name not in BACKENDS:
        raise ValueError(f"unknown model backend {requested!r}: use one of {', '.join(BACKENDS)}")
    if name != "auto":
        return name
    env = os.environ if env is None else env
    if _secret(env, "ANTHROPIC_API_KEY") or _secret(env, "ANTHROPIC_AUTH_TOKEN"):
        return "api"
    if which is None:
        import shutil  # here: the prompt hook's start pays for nothing it does not use

        found = shutil.which("claude", path=env.get("PATH"))
    else:
        found = which("claude")
    if found and claude_looks_logged_in(env):
        return "claude"
    return "local"


def claude_looks_logged_in(env: Mapping[str, str]) -> bool:
    """Whether the ``claude`` CLI has some credentials, judged from files and variables.

    ``claude auth status`` knows for sure but costs ~0.45 s.  What it counts, as
    observed on 2.1.330 with a scratch HOME: CLAUDE_CODE_OAUTH_TOKEN or
    ANTHROPIC_AUTH_TOKEN/API_KEY; a cloud provider (CLAUDE_CODE_USE_BEDROCK/VERTEX/
    FOUNDRY); ``<config dir>/.credentials.json`` with a ``claudeAiOauth`` entry holding an
    ``accessToken`` and the ``user:inference`` scope (what ``/login`` with a subscription
    writes on Linux; without that scope, or ``{}``, the CLI says logged out; an expired
    token still counts: the CLI refreshes it); ``primaryApiKey`` in the global
    config (``~/.claude.json``, or ``$CLAUDE_CONFIG_DIR/.claude.json``: a console
    login); an ``apiKeyHelper`` in the user's settings.  On macOS the login lives in
    the keychain, which we cannot read cheaply: there we assume logged in.
    """
    names = ("CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
    if any(_secret(env, name) for name in names):
        return True
    providers = ("CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY")
    if any(env.get(name, "").strip().lower() not in ("", "0", "false") for name in providers):
        return True
    if sys.platform == "darwin":
        return True
    config_dir = paths.claude_config_dir(env)
    credentials = _read_json(os.path.join(config_dir, ".credentials.json"))
    oauth = credentials.get("claudeAiOauth") if isinstance(credentials, dict) else None
    if isinstance(oauth, dict) and oauth.get("accessToken") and "user:inference" in (oauth.get("scopes") or ()):
        return True
    settings = _read_json(os.path.join(config_dir, "settings.json"))
    if isinstance(settings, dict):
        if settings.get("apiKeyHelper"):
            return True
        settings_env = settings.get("env")
        if isinstance(settings_env, dict) and any(settings_env.get(name) for name in names):
            return True
    if env.get("CLAUDE_CONFIG_DIR"):
        global_config = os.path.join(config_dir, ".claude.json")
    else:
        global_config = os.path.join(env.get("HOME") or os.path.expanduser("~"), ".claude.json")
    # The global config can be megabytes of project history: look before parsing.
    config = _read_json(global_config, must_contain=b'"primaryApiKey"')
    return isinstance(config, dict) and bool(config.get("primaryApiKey"))


def _read_json(path: str, must_contain: bytes = b"") -> Any:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
        if must_contain and must_contain not in data:
            return None
        return json.loads(data.decode("utf-8-sig"))
    except (OSError, ValueError):
        return None


def _secret(env: Mapping[str, str], name: str) -> str:
    return (env.get(name) or "").strip()
