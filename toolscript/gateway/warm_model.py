"""The session's warm model conversation: one long-lived model process the prompt hook asks through ``POST /model``.

A cold ``claude -p`` costs the prompt hook ~0.5 s of process start on every
prompt; a conversation that stays up answers in the model's time plus a few
tens of milliseconds.  The gateway lives as long as its Claude Code session, so
it owns that conversation: ``WarmModels`` starts it (at the gateway's start when
the suggestion backend is the ``claude`` CLI, else on the first question), hands
it one question at a time, and replaces it when it is retired (its process
ended, its context passed a bound, it is stuck), starting the replacement at
once so the next prompt finds it warm.  It is stopped after ``IDLE_SECONDS``
without a question and with the gateway.

What a conversation is comes from above (this layer knows no model): the
gateway's starter passes ``start(system, model)``, which returns an object with
``ask(prompt, timeout) -> dict``, ``retired`` and ``close()`` (``toolscript.models
.claude_cli.Conversation``), whose errors carry a ``kind`` ("timeout",
"unavailable", "bad_reply", ...).

``POST /model`` wants the ``X-Toolscript-Model-Key`` header to hold ``key``,
which the gateway writes into the session's state file (0600, in the private
state directory) and nowhere else: the gateway's token alone, which scripts
in the sandbox hold, does not reach the user's model login.

    POST /model  {"system": str, "prompt": str, "model": str|null, "timeout": seconds}
      200 {"result": {the CLI's result object}, "started": bool, "ms": int}
      503 {"error", "kind": "unavailable"}   no conversation can be had here
      504 {"error", "kind": "timeout"}       no answer within the timeout
      502 {"error", "kind": "bad_reply"}     the conversation failed
      400 / 403                              a bad request / a missing or wrong key
"""

import hmac
import json
import secrets
import threading
import time
from typing import Any, Callable, Dict, Optional, Tuple

from toolscript import log

logger = log.get("gateway.model")

IDLE_SECONDS = 1800.0  # a conversation nobody asked for this long is stopped (the next question starts one)
MAX_PROMPT_CHARS = 200_000  # of one question (the suggestion hook sends a few thousand)
MAX_SYSTEM_CHARS = 200_000
ANSWER_MARGIN = 0.1  # seconds of the caller's timeout kept for the answer to travel back
KEY_HEADER = "X-Toolscript-Model-Key"
STATUS_OF_KIND = {"timeout": 504, "unavailable": 503}

Start = Callable[[str, Optional[str]], Any]


class WarmModels:
    """At most one warm conversation, for one (system prompt, model) pair at a time."""

    def __init__(self, start: Start, prewarm: Optional[Tuple[str, Optional[str]]] = None,
                 idle_seconds: float = IDLE_SECONDS) -> None:
        self.key = secrets.token_urlsafe(32)
        self._start = start
        self._idle_seconds = idle_seconds
        self._lock = threading.Lock()
        self._key: Optional[Tuple[str, Optional[str]]] = None  # (system, model) of the conversation below
        self._conversation: Any = None
        self._last_used = time.monotonic()
        self._closed = threading.Event()
        self._prewarm = prewarm

    def begin(self) -> None:
        """Serve: watch for idleness, and start the ``prewarm`` conversation now (the gateway listens)."""
        threading.Thread(target=self._stop_when_idle, name="warm-model-idle", daemon=True).start()
        if self._prewarm is not None:
            threading.Thread(target=self._prepare, args=(self._prewarm,), name="warm-model-start", daemon=True).start()

    def ask(self, system: str, prompt: str, model: Optional[str], timeout: float) -> Tuple[Dict[str, Any], bool]:
        """(the conversation's answer, whether this question had to start it); raises its errors."""
        deadline = time.monotonic() + timeout
        conversation, started = self._conversation_for((system, model))
        try:
            return conversation.ask(prompt, max(0.0, deadline - time.monotonic())), started
        finally:
            self._last_used = time.monotonic()
            if conversation.retired:
                self._replace(conversation)

    def close(self) -> None:
        """Stop the conversation, for good (the gateway is stopping)."""
        self._closed.set()
        with self._lock:
            conversation, self._conversation, self._key = self._conversation, None, None
        if conversation is not None:
            conversation.close()

    def running(self) -> bool:
        with self._lock:
            return self._conversation is not None

    # -- keeping one conversation ------------------------------------------------------------

    def _conversation_for(self, key: Tuple[str, Optional[str]]) -> Tuple[Any, bool]:
        old = None
        with self._lock:
            if self._closed.is_set():
                raise _Refused("unavailable", "the gateway is stopping")
            if self._conversation is not None and (self._key != key or self._conversation.retired):
                old, self._conversation = self._conversation, None
            started = self._conversation is None
            if started:
                self._conversation = self._start(key[0], key[1])
                self._key = key
                logger.info("warm model: started a conversation (model %s)", key[1] or "default")
            conversation = self._conversation
        if old is not None:
            old.close()
        return conversation, started

    def _prepare(self, key: Tuple[str, Optional[str]]) -> None:
        try:
            self._conversation_for(key)
        except Exception as exc:  # noqa: BLE001 - a failed start is retried by the first question
            logger.warning("warm model: could not start a conversation ahead of the first question: %s", exc)

    def _replace(self, conversation: Any) -> None:
        """Retire ``conversation`` and start its successor now, so the next prompt finds it warm."""
        with self._lock:
            if self._conversation is not conversation:
                return
            key = self._key
            self._conversation = None
        logger.info("warm model: retiring a conversation after %s turn(s); starting a fresh one",
                    getattr(conversation, "turns", "?"))
        conversation.close()
        if key is not None and not self._closed.is_set():
            threading.Thread(target=self._prepare, args=(key,), name="warm-model-start", daemon=True).start()

    def _stop_when_idle(self) -> None:
        while not self._closed.wait(min(60.0, self._idle_seconds)):
            with self._lock:
                idle = self._conversation is not None and time.monotonic() - self._last_used > self._idle_seconds
                conversation = self._conversation if idle else None
                if idle:
                    self._conversation = self._key = None
            if conversation is not None:
                logger.info("warm model: no question for %d s; stopping the conversation", self._idle_seconds)
                conversation.close()


class _Refused(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def answer(models: Optional[WarmModels], key: Optional[str], body: bytes) -> Tuple[int, Dict[str, Any]]:
    """``POST /model``: (HTTP status, JSON answer) for one request (see the module docstring)."""
    if models is None:
        return 503, {"error": "this gateway keeps no warm model (it was started without one)", "kind": "unavailable"}
    if not key or not hmac.compare_digest(key.encode("utf-8", "replace"), models.key.encode("utf-8")):
        return 403, {"error": f"missing or wrong {KEY_HEADER}: it is in the session's state file", "kind": "forbidden"}
    try:
        request = json.loads(body or b"null")
    except (ValueError, RecursionError):
        request = None
    if not isinstance(request, dict):
        return 400, {"error": 'the body must be {"system": str, "prompt": str, "model": str|null, "timeout": s}'}
    system, prompt, model, timeout = (request.get(k) for k in ("system", "prompt", "model", "timeout"))
    if not (isinstance(system, str) and isinstance(prompt, str) and (model is None or isinstance(model, str))):
        return 400, {"error": "system and prompt must be strings, model a string or null"}
    if len(system) > MAX_SYSTEM_CHARS or len(prompt) > MAX_PROMPT_CHARS:
        return 400, {"error": f"system and prompt are limited to {MAX_SYSTEM_CHARS} characters each"}
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 60:
        return 400, {"error": "timeout must be a number of seconds, above 0 and at most 60"}
    started = time.monotonic()
    try:
        result, fresh = models.ask(system, prompt, model, max(0.05, float(timeout) - ANSWER_MARGIN))
    except Exception as exc:  # noqa: BLE001 - the conversation's errors carry a kind; anything else is a failure
        kind = str(getattr(exc, "kind", "") or "bad_reply")
        logger.info("warm model: no answer (%s): %s", kind, exc)
        return STATUS_OF_KIND.get(kind, 502), {"error": str(exc), "kind": kind}
    return 200, {"result": result, "started": fresh, "ms": int((time.monotonic() - started) * 1000)}
