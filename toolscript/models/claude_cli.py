"""The ``claude`` CLI as a model, for people who log in with a subscription: one ``claude -p``
call per question, or a warm conversation that a session's gateway keeps.

It keeps the user's setting sources (the login and model config live there) but
disables every hook in the inner call and sets our own recursion guard
(``TOOLSCRIPT_HOOKS_DISABLED``), so the UserPromptSubmit hook that calls this never
triggers itself.  A cold ``claude -p`` costs ~0.5 s before the model says anything.  The
call runs in a process group of its own (``start_group``), killed whole on timeout
(``kill_group``); ``toolscript.models.ask_claude`` runs its longer ``claude -p`` the same way.

``Conversation`` is one ``claude -p --input-format stream-json --output-format stream-json``
process answering one question after another: a user message in, one ``result`` object
out (the same object ``--output-format json`` prints), then ``/clear`` so the next
question starts from an empty conversation (the CLI answers ``/clear`` itself, with a
``conversation_reset`` message and a ``result`` of no turns: no model call).  The
session's gateway owns one (``toolscript.gateway.warm_model``) and the prompt hook asks
it over HTTP (``complete_warm``): the answer comes in the model's time plus ~0.05 s.
Observed on 2.1.330 and 2.1.337 against a fake Messages API.

Failures are ``ModelError``s in the Messages API backend's words (an API status the CLI
reports maps to the same kind), never with a key or token in them.
"""

import collections
import json
import logging
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from typing import Any, Deque, Dict, List, Mapping, Optional, Tuple

from toolscript.models import ModelError
from toolscript.models.messages import MAX_DETAIL, STATUS_KINDS, clip, scrub, secret, usage

logger = logging.getLogger("toolscript.models.claude")

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
    return [claude, "-p", "--model", model or DEFAULT_CLI_MODEL, "--output-format", "json", *_inner_flags(system_arg)]


def stream_command(claude: str, system_arg: List[str], model: Optional[str]) -> List[str]:
    """The argv of a ``Conversation``: the same call, reading user messages and writing events as JSON lines."""
    return [claude, "-p", "--model", model or DEFAULT_CLI_MODEL, "--input-format", "stream-json",
            "--output-format", "stream-json", "--verbose",  # the CLI wants --verbose for stream-json with -p
            *_inner_flags(system_arg)]


def _inner_flags(system_arg: List[str]) -> List[str]:
    return [*system_arg, "--tools", "", "--max-turns", "1", "--no-session-persistence", "--settings", CLAUDE_SETTINGS]


def claude_env(env: Mapping[str, str], variables: Mapping[str, str] = CLAUDE_ENV) -> Dict[str, str]:
    """The inner call's environment: the caller's, plus ``variables`` (our guards)."""
    child = dict(env)
    # As the Agent SDK does: the child is its own session, not a tool of the outer one.
    child.pop("CLAUDECODE", None)
    child.update(variables)
    return child


def _system_arg(system: str) -> Tuple[List[str], Optional[str]]:
    """``--system-prompt TEXT``, or ``--system-prompt-file PATH`` for a long one (and that file, to remove later)."""
    if len(system.encode("utf-8")) <= MAX_ARG_BYTES:
        return ["--system-prompt", system], None
    fd, system_file = tempfile.mkstemp(prefix="toolscript-system-", suffix=".txt")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(system)
    return ["--system-prompt-file", system_file], system_file


def _find_claude(env: Mapping[str, str]) -> str:
    claude = shutil.which("claude", path=env.get("PATH"))
    if not claude:
        raise ModelError("unavailable", "the claude CLI is not on PATH: install Claude Code, or set ANTHROPIC_API_KEY")
    return claude


def _remove(path: Optional[str]) -> None:
    if path:
        try:
            os.unlink(path)
        except OSError:
            pass


def complete(system: str, prompt: str, model: Optional[str], timeout: float, env: Mapping[str, str],
             gateway: Optional[Tuple[str, str]] = None) -> Tuple[str, str, Dict[str, int]]:
    """One turn: (its text, the model that answered, usage).  Raises ModelError.

    ``gateway``: (URL, model key) of the session's gateway, which keeps a warm
    conversation (``complete_warm``); a gateway without one (an older gateway,
    or none configured) leaves the question to a cold ``claude -p`` when at
    least ``COLD_MINIMUM`` seconds of the budget are left.
    """
    started = time.monotonic()
    if gateway is not None:
        try:
            answered = complete_warm(gateway[0], gateway[1], system, prompt, model, timeout, env)
            logger.info("claude: the gateway's warm conversation answered in %d ms", (time.monotonic() - started) * 1000)
            return answered
        except WarmUnavailable as exc:
            logger.info("claude: %s; a cold claude -p instead", exc)
            timeout -= time.monotonic() - started
            if timeout < COLD_MINIMUM:
                raise ModelError("timeout", f"{exc}; {timeout:.2f}s left is too little for a cold claude -p") from None
    claude = _find_claude(env)
    system_arg, system_file = _system_arg(system)
    argv = claude_command(claude, system_arg, model)
    try:
        stdout, stderr, returncode = _run_group(argv, prompt, claude_env(env), timeout)
    finally:
        _remove(system_file)
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


def _secrets(env: Mapping[str, str]) -> List[str]:
    return [secret(env, n) for n in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")]


def _claude_result(stdout: str, stderr: str, returncode: int, model: str, env: Mapping[str, str]) -> Tuple[str, str, Dict[str, int]]:
    """Read ``claude -p --output-format json``: one JSON object (``is_error``, ``result``...)."""
    try:
        result = json.loads(stdout.strip())
    except (ValueError, RecursionError):
        result = None
    if not isinstance(result, dict):
        first = next((line.strip() for line in (stderr or stdout).splitlines() if line.strip()), "")
        said = scrub(clip(first, MAX_DETAIL), _secrets(env)) or "no output"
        raise ModelError("bad_reply", f"the claude CLI (exit {returncode}) did not print its JSON result: {said}")
    return result_of(result, model, env)


def result_of(result: Dict[str, Any], model: str, env: Mapping[str, str]) -> Tuple[str, str, Dict[str, int]]:
    """(text, model, usage) of the CLI's ``result`` object, or the ModelError it reports."""
    secrets = _secrets(env)
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


# -- a warm conversation ------------------------------------------------------------------------

CLEAR = "/clear"  # answered by the CLI itself: a conversation_reset and a result of no turns
COLD_MINIMUM = 0.9  # seconds a cold claude -p needs at least (on a quiet machine), when the warm path is not there
# A conversation is retired (and a fresh process started) past either bound.  /clear keeps its
# context at one question; the characters bound catches a CLI on which /clear stopped working.
MAX_CONTEXT_CHARS = 200_000  # of questions sent since the conversation was last cleared
MAX_TURNS = 2000
WEDGED_SECONDS = 60.0  # an answer this overdue means the process is stuck: it is retired
MAX_EVENT_BYTES = 16 * 1024 * 1024  # one line of the CLI's output; a longer one ends the conversation
STDERR_TAIL = 2000  # characters of the CLI's stderr kept to explain its exit
MODEL_KEY_HEADER = "X-Toolscript-Model-Key"  # the gateway's /model wants its key (from the session's state file)


class WarmUnavailable(Exception):
    """The gateway keeps no warm conversation (an older gateway, or none configured): ask a cold claude -p."""


class Conversation:
    """One ``claude`` process in stream-json mode, answering one question at a time (see the module docstring).

    ``ask`` may be called from any thread; questions wait their turn.  A
    question that runs out of time is not cut off: its answer, when it comes,
    is read and dropped by the next ``ask`` (a process ``WEDGED_SECONDS``
    late is retired instead).  ``retired`` says when the owner should start
    a fresh one: the process ended, a bound was passed, or it is wedged.
    """

    def __init__(self, system: str, model: Optional[str], env: Mapping[str, str], cwd: Optional[str] = None) -> None:
        claude = _find_claude(env)
        system_arg, self._system_file = _system_arg(system)
        self._env = env
        self.model = model or DEFAULT_CLI_MODEL
        try:
            self._proc = start_group(stream_command(claude, system_arg, model), claude_env(env), cwd)
        except OSError as exc:
            _remove(self._system_file)
            raise ModelError("unavailable", f"cannot start the claude CLI ({exc.strerror or exc})") from None
        self.started = time.monotonic()
        self.turns = 0
        self.context_chars = 0  # of questions sent since the last conversation_reset
        self._events: "queue.Queue[Optional[Dict[str, Any]]]" = queue.Queue()
        self._stderr: Deque[str] = collections.deque(maxlen=50)
        self._lock = threading.Lock()
        self._owed: Deque[str] = collections.deque()  # results still to come: "question" (abandoned) or "clear"
        self._late_since: Optional[float] = None  # when the oldest abandoned question was sent
        self._clears = True  # until a /clear is seen not to reset the conversation
        self._reset_seen = False
        self._ended = False
        threading.Thread(target=self._read_events, name="claude-events", daemon=True).start()
        threading.Thread(target=self._read_stderr, name="claude-stderr", daemon=True).start()

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def retired(self) -> bool:
        late = self._late_since is not None and time.monotonic() - self._late_since > WEDGED_SECONDS
        return self._ended or late or self.context_chars > MAX_CONTEXT_CHARS or self.turns >= MAX_TURNS

    def ask(self, prompt: str, timeout: float) -> Dict[str, Any]:
        """The CLI's ``result`` object for one question (read it with ``result_of``).  Raises ModelError."""
        deadline = time.monotonic() + timeout
        if not self._lock.acquire(timeout=max(0.0, timeout)):
            raise ModelError("timeout", f"the warm claude conversation was busy with another question for {timeout:g} s")
        try:
            if self.retired:
                raise ModelError("unavailable", "the warm claude conversation has ended; a fresh one is starting")
            while self._owed:  # the answers of abandoned questions, and of the last /clear
                kind = self._owed[0]
                self._next_result(deadline, "an earlier question")
                self._owed.popleft()
                if kind == "clear" and not self._reset_seen:
                    self._clears = False  # this CLI answers /clear as a question: the bound restarts it instead
                if not any(k == "question" for k in self._owed):
                    self._late_since = None
            self._send(prompt)
            self.turns += 1
            self.context_chars += len(prompt)
            try:
                result = self._next_result(deadline, "the question")
            except ModelError as exc:
                if exc.kind == "timeout":
                    self._owed.append("question")
                    self._late_since = self._late_since or time.monotonic()
                raise
            if self._clears:
                self._reset_seen = False
                self._send(CLEAR)
                self._owed.append("clear")
            return result
        finally:
            self._lock.release()

    def close(self) -> None:
        """End the process (and whatever it started)."""
        self._ended = True
        kill_group(self._proc.pid, signal.SIGKILL)
        try:
            self._proc.wait(timeout=KILL_WAIT)
        except subprocess.TimeoutExpired:
            pass
        for stream in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        _remove(self._system_file)

    # -- the process's streams --------------------------------------------------------------------

    def _send(self, text: str) -> None:
        line = json.dumps({"type": "user", "message": {"role": "user", "content": text}}) + "\n"
        try:
            assert self._proc.stdin is not None
            self._proc.stdin.write(line.encode("utf-8"))
            self._proc.stdin.flush()
        except (OSError, ValueError):
            self._ended = True
            raise ModelError("bad_reply", f"the warm claude CLI is gone{self._said()}") from None

    def _next_result(self, deadline: float, what: str) -> Dict[str, Any]:
        while True:
            remaining = deadline - time.monotonic()
            try:
                event = self._events.get(timeout=max(0.0, remaining)) if remaining > 0 else self._events.get_nowait()
            except queue.Empty:
                raise ModelError("timeout", f"the warm claude CLI did not answer {what} in time") from None
            if event is None:
                self._ended = True
                self._events.put(None)  # every later read sees the end too
                raise ModelError("bad_reply", f"the warm claude CLI exited{self._said()}")
            if event.get("type") == "conversation_reset":
                self.context_chars = 0
                self._reset_seen = True
            elif event.get("type") == "result":
                return event

    def _read_events(self) -> None:
        stdout = self._proc.stdout
        try:
            while stdout is not None:
                line = stdout.readline(MAX_EVENT_BYTES + 1)
                if not line or len(line) > MAX_EVENT_BYTES:
                    break
                try:
                    event = json.loads(line)
                except (ValueError, RecursionError):
                    continue  # not an event: the CLI printed something else
                if isinstance(event, dict):
                    self._events.put(event)
        except (OSError, ValueError):
            pass
        self._ended = True
        self._events.put(None)

    def _read_stderr(self) -> None:
        try:
            for raw in iter(lambda: self._proc.stderr.readline(8192) if self._proc.stderr else b"", b""):
                self._stderr.append(raw.decode("utf-8", "replace"))
        except (OSError, ValueError):
            pass

    def _said(self) -> str:
        text = "".join(self._stderr).strip()
        first = next((line.strip() for line in text.splitlines() if line.strip()), "")
        said = scrub(clip(first, MAX_DETAIL), _secrets(self._env))
        return f": {said}" if said else ""


def complete_warm(url: str, key: str, system: str, prompt: str, model: Optional[str], timeout: float,
                  env: Mapping[str, str]) -> Tuple[str, str, Dict[str, int]]:
    """One question to the warm conversation of the gateway at ``url`` (its POST /model).

    Raises WarmUnavailable when that gateway keeps none, else ModelError as ``complete`` does.
    """
    from toolscript import http1
    from toolscript.gateway.client import GatewayClient, redact_text

    client = GatewayClient(url, timeout=timeout)  # parses and checks the URL
    body = json.dumps({"system": system, "prompt": prompt, "model": model, "timeout": timeout}).encode("utf-8")
    headers = {"Content-Type": "application/json", "Accept": "application/json", MODEL_KEY_HEADER: key}
    try:
        status, _, data = http1.request(client.host, client.port, "POST", client.prefix + "/model", headers=headers,
                                        body=body, timeout=timeout, deadline=time.monotonic() + timeout,
                                        max_body=MAX_EVENT_BYTES)
    except (OSError, ValueError, http1.TooLarge) as exc:
        kind = "timeout" if "timed out" in str(exc) else "network"  # socket.timeout says so on every version
        raise ModelError(kind, f"the gateway's warm claude did not answer: {redact_text(str(exc))}") from None
    try:
        answer = json.loads(data) if data else None
    except (ValueError, RecursionError):
        answer = None
    if not isinstance(answer, dict):
        raise ModelError("bad_reply", f"the gateway's /model gave no JSON answer (HTTP {status})")
    if status in (404, 503) and answer.get("kind") in (None, "unavailable"):
        raise WarmUnavailable(f"the gateway keeps no warm claude ({redact_text(str(answer.get('error') or status))})")
    if status != 200 or not isinstance(answer.get("result"), dict):
        said = answer.get("kind")
        failure = said if isinstance(said, str) and said in ("timeout", "bad_reply", "unavailable") else "bad_reply"
        raise ModelError(failure, f"the gateway's warm claude: {redact_text(str(answer.get('error') or status))}")
    return result_of(answer["result"], model or DEFAULT_CLI_MODEL, env)
