"""The ``claude`` CLI as a model: one ``claude -p`` call, for people who log in with a subscription.

It keeps the user's setting sources (the login and model config live there) but
disables every hook in the inner call and sets our own recursion guard
(``TOOLSCRIPT_HOOKS_DISABLED``), so the UserPromptSubmit hook that calls this never
triggers itself.  It costs ~0.45 s before the model says anything.  The call runs in a
process group of its own (``start_group``), killed whole on timeout (``kill_group``);
``toolscript.models.ask_claude`` runs its longer ``claude -p`` the same way.

Failures are ``ModelError``s in the Messages API backend's words (an API status the CLI
reports maps to the same kind), never with a key or token in them.
"""

import json
import os
import shutil
import signal
import subprocess
import tempfile
from typing import Dict, List, Mapping, Optional, Tuple

from toolscript.models import ModelError
from toolscript.models.messages import MAX_DETAIL, STATUS_KINDS, clip, scrub, secret, usage

DEFAULT_CLI_MODEL = "haiku"  # the CLI's alias: it maps it to the current Haiku (and honours ANTHROPIC_DEFAULT_HAIKU_MODEL)
# The inner ``claude -p`` call: one turn, no tools, no session file, no hooks (the
# user's settings still load: they carry the login and model config).
CLAUDE_SETTINGS = '{"disableAllHooks": true}'
HOOKS_DISABLED_VAR = "TOOLSCRIPT_HOOKS_DISABLED"  # the guard toolscript.claude_code.hooks honours
CLAUDE_ENV = {
    HOOKS_DISABLED_VAR: "1",
    "CLAUDE_CODE_MAX_RETRIES": "1",  # its default retries for minutes; our budget is seconds
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",  # no reachability probe, no telemetry
    # The CLI asks for adaptive thinking by default; a short suggestion does not need it
    # and the seconds matter (the API backend sends no thinking parameters either).
    "CLAUDE_CODE_DISABLE_THINKING": "1",
}
# argv strings longer than this go through a file (Linux refuses one argument over 128 KiB).
MAX_ARG_BYTES = 100 * 1024
KILL_WAIT = 2.0  # seconds to collect a killed CLI's output before giving up on it


def claude_command(claude: str, system_arg: List[str], model: Optional[str]) -> List[str]:
    """The argv of the inner ``claude -p`` call (the prompt goes on stdin)."""
    return [
        claude,
        "-p",
        "--model",
        model or DEFAULT_CLI_MODEL,
        "--output-format",
        "json",
        *system_arg,
        "--tools",
        "",
        "--max-turns",
        "1",
        "--no-session-persistence",
        "--settings",
        CLAUDE_SETTINGS,
    ]


def claude_env(env: Mapping[str, str], variables: Mapping[str, str] = CLAUDE_ENV) -> Dict[str, str]:
    """The inner call's environment: the caller's, plus ``variables`` (our guards)."""
    child = dict(env)
    # As the Agent SDK does: the child is its own session, not a tool of the outer one.
    child.pop("CLAUDECODE", None)
    child.update(variables)
    return child


def complete(system: str, prompt: str, model: Optional[str], timeout: float, env: Mapping[str, str]) -> Tuple[str, str, Dict[str, int]]:
    """One ``claude -p`` turn: (its text, the model that answered, usage).  Raises ModelError."""
    claude = shutil.which("claude", path=env.get("PATH"))
    if not claude:
        raise ModelError("unavailable", "the claude CLI is not on PATH: install Claude Code, or set ANTHROPIC_API_KEY")
    system_file = None
    if len(system.encode("utf-8")) > MAX_ARG_BYTES:
        fd, system_file = tempfile.mkstemp(prefix="toolscript-system-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(system)
        system_arg = ["--system-prompt-file", system_file]
    else:
        system_arg = ["--system-prompt", system]
    argv = claude_command(claude, system_arg, model)
    try:
        stdout, stderr, returncode = _run_group(argv, prompt, claude_env(env), timeout)
    finally:
        if system_file:
            try:
                os.unlink(system_file)
            except OSError:
                pass
    return _claude_result(stdout, stderr, returncode, model or DEFAULT_CLI_MODEL, env)


def _run_group(argv: List[str], stdin_text: str, env: Dict[str, str], timeout: float) -> Tuple[str, str, int]:
    """Run ``argv`` in its own process group; kill the whole group if it outlives ``timeout``."""
    try:
        proc = start_group(argv, env)
    except OSError as exc:
        raise ModelError("unavailable", f"cannot start the claude CLI ({exc.strerror or exc})") from None
    try:
        out, err = proc.communicate(stdin_text.encode("utf-8"), timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid, signal.SIGKILL)
        try:
            proc.communicate(timeout=KILL_WAIT)
        except subprocess.TimeoutExpired:
            pass  # a grandchild that left our group still holds the pipes; do not wait for it
        raise ModelError("timeout", f"the claude CLI did not answer within {timeout:g} s") from None
    except BaseException:
        # Interrupted (KeyboardInterrupt, a signal handler raising): no orphan either.
        kill_group(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    return out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), proc.returncode


def start_group(argv: List[str], env: Dict[str, str], cwd: Optional[str] = None) -> "subprocess.Popen[bytes]":
    """Start ``argv`` with pipes on all three streams, in a process group of its own so that a
    timeout can end whatever it started too (``kill_group``); raises OSError when it cannot start."""
    return subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )


def kill_group(pgid: int, sig: int) -> None:
    """Signal the process group ``start_group`` made (its leader's pid), if it is still there."""
    # Called before the leader is reaped, so the group id cannot belong to anyone else yet.
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


_CLI_STATUS_ADVICE = {
    "auth": "the claude CLI's credentials were refused: log in again with 'claude' (/login)",
    "rate_limit": "the claude CLI's account is rate limited; try again later",
    "overloaded": "the API is overloaded; try again later",
    "server": "the API had a server-side problem; try again later",
    "bad_request": "the API refused the request; check the model (ANTHROPIC_DEFAULT_HAIKU_MODEL)",
}


def _claude_result(stdout: str, stderr: str, returncode: int, model: str, env: Mapping[str, str]) -> Tuple[str, str, Dict[str, int]]:
    """Read ``claude -p --output-format json``: one JSON object (``is_error``, ``result``...)."""
    secrets = [secret(env, n) for n in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")]
    try:
        result = json.loads(stdout.strip())
    except (ValueError, RecursionError):
        result = None
    if not isinstance(result, dict):
        first = next((line.strip() for line in (stderr or stdout).splitlines() if line.strip()), "")
        said = scrub(clip(first, MAX_DETAIL), secrets) or "no output"
        raise ModelError("bad_reply", f"the claude CLI (exit {returncode}) did not print its JSON result: {said}")
    text = result.get("result")
    text = text if isinstance(text, str) else ""
    if result.get("is_error"):
        status = result.get("api_error_status")
        status = status if isinstance(status, int) else None
        said = scrub(clip(text or str(result.get("subtype") or ""), MAX_DETAIL), secrets)
        if "not logged in" in text.lower():
            raise ModelError("not_logged_in", "the claude CLI is not logged in: run 'claude' and /login, or set ANTHROPIC_API_KEY")
        if status is None:
            raise ModelError("bad_reply", f"the claude CLI failed: {said}")
        kind = STATUS_KINDS.get(status) or ("server" if status >= 500 else "bad_request")
        raise ModelError(kind, f"the claude CLI's model call failed ({said}): {_CLI_STATUS_ADVICE[kind]}", status)
    if result.get("stop_reason") == "refusal":
        raise ModelError("bad_reply", "the model declined to answer (stop_reason refusal)")
    if not text.strip():
        raise ModelError("bad_reply", "the claude CLI's model answered with no text")
    model_usage = result.get("modelUsage")
    reported = next(iter(model_usage), None) if isinstance(model_usage, dict) and model_usage else None
    return text, str(reported or model), usage(result.get("usage"))
