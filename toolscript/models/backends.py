"""Model backends: ask a Claude model one question, through the Messages API or the ``claude`` CLI.

Two ways to reach a model, one error type:

* ``api``: ``POST {ANTHROPIC_BASE_URL}/v1/messages`` with ``ANTHROPIC_API_KEY``
  (``x-api-key``) or ``ANTHROPIC_AUTH_TOKEN`` (``Authorization: Bearer``), non-streaming,
  retrying 429/529/5xx and dropped connections within one overall time budget.
  ``messages`` is the raw call (``ask`` reuses it with tools); ``complete`` builds a
  one-turn request and reads the text back.
* ``claude``: a ``claude -p`` subprocess, for people who log in with a subscription
  instead of a key.  It keeps the user's setting sources (auth and model config live
  there) but disables every hook in the inner call, and sets our own recursion guard
  (``TOOLSCRIPT_HOOKS_DISABLED``), so the UserPromptSubmit hook that calls this never
  triggers itself.  It costs ~0.45 s before the model says anything.

``choose_backend`` turns ``auto`` into one of them (or ``local``: no model) without
starting a process.  Every failure is a ``ModelError`` whose ``kind`` the caller can
act on (fall back to the local ranker, say) and whose text is one line that names the
cause and never contains a key or token.  Facts relied on are in the project notes
(claude-code.md sections 4 and 6): error shapes, the CLI's JSON result, model aliases.

Heavy imports (ssl, subprocess) happen inside the functions that need them: the hook
that imports this module may never call a model.  The Messages API call itself speaks
HTTP/1.1 over a raw socket (``http.client`` would cost the hook ~17 ms of imports);
only a proxied call uses ``http.client``.
"""

import json
import logging
import os
import sys
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Tuple

from toolscript import paths
from toolscript.errors import UserError

if TYPE_CHECKING:  # imported where it runs: the hooks that load this module never start a process
    import subprocess

BACKENDS = ("auto", "api", "claude", "local")

DEFAULT_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
# The API's default model when neither ``model`` nor ANTHROPIC_DEFAULT_HAIKU_MODEL says one.
# claude-haiku-4-5 is the small model every first-party key and every gateway we know of
# accepts (claude-haiku-5-5 is newer and cheaper but not yet served everywhere), and the
# request we send (no sampling parameters, no prefill, no thinking) is valid for both
# generations.  ANTHROPIC_DEFAULT_HAIKU_MODEL is the variable Claude Code itself reads for
# its "haiku" alias, so one setting picks the model for both backends.
DEFAULT_API_MODEL = "claude-haiku-4-5"
DEFAULT_CLI_MODEL = "haiku"  # the CLI's alias: it maps it to the current Haiku (and honours the same variable)
MAX_RESPONSE_BYTES = 4 * 1024 * 1024
# Levels of arrays/objects an answer may nest: a tool_use input deeper than this is no real call, and
# reading or re-encoding one much deeper (json recurses) would end in RecursionError, not a clear error.
MAX_RESPONSE_DEPTH = 200
MAX_ATTEMPTS = 4  # one call and up to three retries, all inside the caller's time budget
BACKOFF_BASE = 0.25  # seconds before the first retry when the server gives no retry-after
BACKOFF_MAX = 2.0
# Statuses worth another try: rate limited, overloaded (529), transient server trouble.
RETRY_STATUSES = (429, 500, 502, 503, 504, 529)
SPEND_LIMIT_CODE = "enforced_spend_limit_reached"  # a 429 that no amount of waiting fixes
MAX_DETAIL = 240  # characters of the server's own error message kept in ours

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

log = logging.getLogger("toolscript.models")


class ModelError(UserError):
    """A model call failed; ``kind`` says how, ``str(err)`` is one safe line saying what to do.

    kind: "auth" | "rate_limit" | "overloaded" | "server" | "timeout" | "network" |
    "bad_request" | "bad_reply" | "not_logged_in" | "unavailable".
    """

    def __init__(self, kind: str, message: str, status: Optional[int] = None) -> None:
        super().__init__(" ".join(message.split()))
        self.kind = kind
        self.status = status


class Reply(NamedTuple):
    text: str  # the concatenated text blocks (by block type; thinking blocks ignored)
    backend: str  # "api" | "claude"
    model: str  # the model id the backend reported (or asked for)
    usage: Dict[str, int]  # input_tokens / output_tokens when known
    ms: int  # wall time of the call


# --- choosing a backend ----------------------------------------------------------------


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
    config_dir = claude_config_dir(env)
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


claude_config_dir = paths.claude_config_dir


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


# --- one completion ----------------------------------------------------------------------


def complete(
    system: str,
    prompt: str,
    *,
    backend: str,
    model: Optional[str] = None,
    timeout: float = 5.0,
    max_tokens: int = 400,
    env: Optional[Mapping[str, str]] = None,
) -> Reply:
    """One user turn, one text answer, within ``timeout`` seconds overall (retries included).

    ``backend`` is "api" or "claude" ("auto" is resolved with ``choose_backend``;
    "local" is not a model: ValueError).  Raises ModelError.
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
        text, model_used, usage = _complete_api(system, prompt, model, timeout, max_tokens, env)
    else:
        text, model_used, usage = _complete_claude(system, prompt, model, timeout, env)
    ms = int((time.monotonic() - started) * 1000)
    log.debug("model %s via %s answered %d characters in %d ms", model_used, name, len(text), ms)
    return Reply(text=text, backend=name, model=model_used, usage=usage, ms=ms)


def _complete_api(
    system: str, prompt: str, model: Optional[str], timeout: float, max_tokens: int, env: Mapping[str, str]
) -> Tuple[str, str, Dict[str, int]]:
    model_id = model or _secret(env, "ANTHROPIC_DEFAULT_HAIKU_MODEL") or DEFAULT_API_MODEL
    # No temperature/top_p, no assistant prefill, no thinking parameters: the newest
    # models reject them with a 400, and the answer is short enough not to need them.
    body: Dict[str, Any] = {
        "model": model_id,
        "max_tokens": max_tokens,
        "messages": [{"role": "user", "content": prompt}],
    }
    if system:
        body["system"] = system
    reply = messages(body, timeout=timeout, env=env)
    content = reply.get("content")
    blocks = content if isinstance(content, list) else []
    # By type, never content[0]: thinking blocks may come first.
    text = "".join(str(b.get("text") or "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
    if reply.get("stop_reason") == "refusal":
        raise ModelError("bad_reply", f"the model ({model_id}) declined to answer (stop_reason refusal)")
    if not text.strip():
        raise ModelError("bad_reply", f"the model ({model_id}) answered with no text (stop_reason {reply.get('stop_reason')})")
    return text, str(reply.get("model") or model_id), _usage(reply.get("usage"))


def _usage(raw: Any) -> Dict[str, int]:
    if not isinstance(raw, dict):
        return {}
    return {k: raw[k] for k in ("input_tokens", "output_tokens") if isinstance(raw.get(k), int)}


# --- the Messages API ----------------------------------------------------------------------


def messages(body: Dict[str, Any], *, timeout: float, env: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
    """POST ``body`` to ``{base}/v1/messages`` (non-streaming); the response JSON.

    ``body`` goes out untouched (tools, tool_choice and all).  Retries 429, 529,
    500/502/503/504 and dropped connections, honouring ``retry-after`` when it fits in
    what is left of ``timeout``; gives up at once when it does not.  Raises ModelError.
    """
    env = os.environ if env is None else env
    deadline = time.monotonic() + timeout
    base = _secret(env, "ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL
    target = _Target(base)
    headers = _headers(env)
    # Everything that may carry a credential: never in an error, even when a server echoes it.
    secrets = [_secret(env, "ANTHROPIC_API_KEY"), _secret(env, "ANTHROPIC_AUTH_TOKEN")]
    secrets += [v for k, v in headers.items() if k.lower() not in ("anthropic-version", "content-type", "accept") and len(v) >= 8]
    if not any(h.lower() in ("x-api-key", "authorization") for h in headers) and base == DEFAULT_BASE_URL:
        raise ModelError("auth", "no API credentials: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN for a gateway)")
    for name, value in headers.items():
        if any(c in name + value for c in "\r\n\0"):
            # Not echoed: the value may be a key.  (Would split the request, or make http.client raise.)
            raise ModelError("bad_request", "ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN or ANTHROPIC_CUSTOM_HEADERS has a line break or NUL in it: fix it")
    payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
    attempt = 0
    while True:
        attempt += 1
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ModelError("timeout", f"no answer from {target.safe} within {timeout:g} s")
        try:
            status, response_headers, data = _post(target, payload, headers, deadline, env)
        except _Retryable as exc:
            problem = ModelError("network", f"{target.safe}: {exc}; check the network or ANTHROPIC_BASE_URL")
            wait = _backoff(attempt)
            log.debug("attempt %d: %s", attempt, exc)
        except ModelError:
            raise
        except OSError as exc:
            raise _network_error(target, exc, timeout) from None
        except _Malformed as exc:
            raise ModelError("network", scrub(f"{target.safe}: {exc}; check ANTHROPIC_BASE_URL", secrets)) from None
        else:
            if 200 <= status < 300:
                return _decode(data, target)
            problem = _http_error(status, response_headers, data, target, secrets)
            log.debug("attempt %d: HTTP %d from %s", attempt, status, target.safe)
            if not _should_retry(status, response_headers, data):
                raise problem
            asked = _retry_after(response_headers)
            wait = _backoff(attempt) if asked is None else asked
        if attempt >= MAX_ATTEMPTS or time.monotonic() + wait >= deadline:
            raise problem
        log.debug("retrying in %.2f s", wait)
        time.sleep(wait)


class _Target:
    """Where the Messages API lives: a base URL with or without a path prefix or trailing slash."""

    def __init__(self, base: str) -> None:
        from urllib.parse import urlsplit

        parts = urlsplit(base.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            # Not echoed: a mistyped URL may still carry credentials in it.
            raise ModelError("bad_request", "ANTHROPIC_BASE_URL is not an http(s) URL with a host name: fix or unset it")
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.path = parts.path.rstrip("/") + "/v1/messages"
        # What errors show: scheme, host, port and path, never userinfo or a query.
        self.safe = f"{self.scheme}://{self.host}:{self.port}{self.path}"


class _Retryable(Exception):
    """A dropped connection: the request may not have been seen; worth another try."""


def _headers(env: Mapping[str, str]) -> Dict[str, str]:
    headers: Dict[str, str] = {}
    # ANTHROPIC_CUSTOM_HEADERS: "Name: value" lines, as Claude Code reads them.  They go
    # first so ours win for the fields the protocol depends on.
    for line in (env.get("ANTHROPIC_CUSTOM_HEADERS") or "").splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip() and "\r" not in value:
            headers[name.strip()] = value.strip()
    headers["anthropic-version"] = ANTHROPIC_VERSION
    headers["content-type"] = "application/json"
    headers["accept"] = "application/json"
    key, token = _secret(env, "ANTHROPIC_API_KEY"), _secret(env, "ANTHROPIC_AUTH_TOKEN")
    if key:
        headers["x-api-key"] = key
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def _post(
    target: _Target, payload: bytes, headers: Dict[str, str], deadline: float, env: Mapping[str, str]
) -> Tuple[int, Dict[str, str], bytes]:
    """One attempt: (status, lower-cased headers, body up to the cap).

    Straight to the host over a raw socket (``http.client`` costs the hook ~17 ms of
    imports: it pulls in the email parser); through ``http.client`` when a proxy
    applies, since proxies are rare and CONNECT tunnels are its job.
    """
    if _proxy_for(target, env):
        return _post_via_proxy(target, payload, headers, deadline, env)
    return _post_direct(target, payload, headers, deadline)


class _Malformed(Exception):
    """The server's answer is not HTTP we can read (bad status line, headers too long, cut short)."""


MAX_HEAD_BYTES = 64 * 1024  # status line and headers of one response
MAX_CHUNK_LINE = 4096  # one chunk-size line of a chunked body, extensions included


def _post_direct(target: _Target, payload: bytes, headers: Dict[str, str], deadline: float) -> Tuple[int, Dict[str, str], bytes]:
    """One HTTP/1.1 request on a fresh connection (``Connection: close``), every wait inside ``deadline``."""
    import socket

    request = _request_head(target, headers, len(payload)) + payload
    remaining = max(0.01, deadline - time.monotonic())
    sock = socket.create_connection((target.host, target.port), timeout=remaining)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            if target.scheme == "https":
                import ssl  # only here: plain-HTTP base URLs (the local fake, gateways) never pay for it

                _set_sock_timeout(sock, deadline)  # the handshake waits too
                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=target.host)
            reader = _Reader(sock, deadline)
            _set_sock_timeout(sock, deadline)
            sock.sendall(request)
            status, response_headers = _read_head(reader)
        except (ConnectionResetError, ConnectionAbortedError, BrokenPipeError) as exc:
            raise _Retryable(f"the connection was dropped ({type(exc).__name__})") from None
        return status, response_headers, _read_body(reader, status, response_headers, target)
    finally:
        sock.close()


def _request_head(target: _Target, headers: Dict[str, str], length: int) -> bytes:
    default_port = 443 if target.scheme == "https" else 80
    host = f"[{target.host}]" if ":" in target.host else target.host
    authority = host if target.port == default_port else f"{host}:{target.port}"
    # A Host among the custom headers wins (as with http.client); the framing fields are ours.
    ours = ("host", "content-length", "transfer-encoding", "connection", "accept-encoding")
    lines = [f"POST {target.path} HTTP/1.1"]
    if not any(name.lower() == "host" for name in headers):
        lines.append(f"Host: {authority}")
    for name, value in headers.items():
        if name.lower() in ours[1:]:
            continue
        lines.append(f"{name}: {value}")
    # identity: a compressed answer would need zlib and a decoder the hook does not carry.
    lines += [f"Content-Length: {length}", "Accept-Encoding: identity", "Connection: close"]
    try:
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    except UnicodeEncodeError:
        raise ModelError("bad_request", "a header value is not Latin-1 text: fix ANTHROPIC_CUSTOM_HEADERS") from None


class _Reader:
    """Buffered reads from the response socket; each wait gets what is left of the budget.

    One ``recv`` per wait, so a server trickling one byte at a time cannot stretch the
    budget (a read of n bytes would wait for all n).
    """

    def __init__(self, sock: Any, deadline: float) -> None:
        self.sock = sock
        self.deadline = deadline
        self.buffer = bytearray()
        self.eof = False

    def fill(self) -> bool:
        """One more piece into the buffer; False once the server has closed its side."""
        if self.eof:
            return False
        _set_sock_timeout(self.sock, self.deadline)
        piece = self.sock.recv(65536)
        if not piece:
            self.eof = True
            return False
        self.buffer += piece
        return True

    def take(self, n: int) -> bytes:
        data = bytes(self.buffer[:n])
        del self.buffer[:n]
        return data

    def line(self, limit: int, what: str) -> bytes:
        """One CRLF- (or LF-) terminated line without its ending, at most ``limit`` bytes."""
        while True:
            end = self.buffer.find(b"\n")
            if end >= 0:
                return self.take(end + 1).rstrip(b"\r\n")
            if len(self.buffer) > limit:
                raise _Malformed(f"the answer's {what} is longer than {limit} bytes")
            if not self.fill():
                raise _Malformed(f"the connection closed inside the answer's {what}")

    def exactly(self, n: int, what: str) -> bytes:
        while len(self.buffer) < n:
            if not self.fill():
                raise _Malformed(f"the connection closed before the end of the answer's {what}")
        return self.take(n)


def _read_head(reader: _Reader) -> Tuple[int, Dict[str, str]]:
    """The status and lower-cased headers (the last of a repeated name wins), skipping 1xx answers."""
    while True:
        while b"\r\n\r\n" not in reader.buffer and b"\n\n" not in reader.buffer:
            if len(reader.buffer) > MAX_HEAD_BYTES:
                raise _Malformed(f"the answer's headers are larger than {MAX_HEAD_BYTES // 1024} KiB")
            if not reader.fill():
                if not reader.buffer:  # closed without a word: the request may never have been seen
                    raise _Retryable("the connection was dropped before an answer")
                raise _Malformed("the connection closed inside the answer's headers")
        ends = [i for i in (reader.buffer.find(b"\r\n\r\n"), reader.buffer.find(b"\n\n")) if i >= 0]
        end = min(ends)
        if end > MAX_HEAD_BYTES:
            raise _Malformed(f"the answer's headers are larger than {MAX_HEAD_BYTES // 1024} KiB")
        head = reader.take(end).decode("latin-1")
        reader.take(4 if reader.buffer.startswith(b"\r\n\r\n") else 2)
        lines = head.replace("\r\n", "\n").split("\n")
        fields = lines[0].split(None, 2)
        if len(fields) < 2 or not fields[0].startswith("HTTP/1.") or len(fields[1]) != 3 or not fields[1].isdigit():
            raise _Malformed(f"the answer is not HTTP (status line {_clip(lines[0], 40)!r})")
        status = int(fields[1])
        headers: Dict[str, str] = {}
        name = ""
        for line in lines[1:]:
            if line[:1] in (" ", "\t") and name:  # an obsolete folded continuation line
                headers[name] += " " + line.strip()
                continue
            raw_name, sep, value = line.partition(":")
            if sep and raw_name.strip():
                name = raw_name.strip().lower()
                headers[name] = value.strip()
        if status >= 200:
            return status, headers
        # 100 Continue / 103 Early Hints: an interim answer; the real one follows.


def _read_body(reader: _Reader, status: int, headers: Mapping[str, str], target: _Target) -> bytes:
    """By chunked transfer coding, Content-Length, or to the end of the stream; never over the cap."""
    too_big = ModelError("bad_reply", f"the answer from {target.safe} is larger than {MAX_RESPONSE_BYTES // (1024 * 1024)} MiB")
    if status in (204, 304):
        return b""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        chunks: List[bytes] = []
        size = 0
        while True:
            size_line = reader.line(MAX_CHUNK_LINE, "chunk size")
            digits = size_line.split(b";", 1)[0].strip()
            try:
                length = int(digits, 16)
            except ValueError:
                raise _Malformed(f"the answer has a bad chunk size {_clip(digits[:20].decode('latin-1'), 20)!r}") from None
            if length < 0:
                raise _Malformed("the answer has a negative chunk size")
            if length == 0:
                break
            size += length
            if size > MAX_RESPONSE_BYTES:
                raise too_big
            chunks.append(reader.exactly(length, "chunk"))
            if reader.line(MAX_CHUNK_LINE, "chunk end"):  # the data ends with a bare CRLF
                raise _Malformed("the answer's chunk is longer than its size says")
        # Trailers (rare) are not read: the connection closes after this one answer, and
        # waiting for them would only let a server that never sends the last CRLF stall us.
        return b"".join(chunks)
    raw_length = headers.get("content-length")
    if raw_length is not None:
        if not raw_length.strip().isdigit():
            raise _Malformed(f"the answer has a bad Content-Length {_clip(raw_length, 20)!r}")
        length = int(raw_length.strip())
        if length > MAX_RESPONSE_BYTES:
            raise too_big
        return reader.exactly(length, "body")
    # Neither: the body runs to the end of the stream (we asked for Connection: close).
    while reader.fill():
        if len(reader.buffer) > MAX_RESPONSE_BYTES:
            raise too_big
    return reader.take(len(reader.buffer))


def _set_sock_timeout(sock: Any, deadline: float) -> None:
    """Give the next socket wait what is left of the overall budget (none left: a timeout now)."""
    import socket

    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise socket.timeout("the overall time budget is spent")
    sock.settimeout(remaining)


def _post_via_proxy(
    target: _Target, payload: bytes, headers: Dict[str, str], deadline: float, env: Mapping[str, str]
) -> Tuple[int, Dict[str, str], bytes]:
    """``_post`` through HTTPS_PROXY/HTTP_PROXY, with ``http.client`` (CONNECT tunnels included)."""
    import http.client
    import socket

    remaining = max(0.01, deadline - time.monotonic())
    conn, request_target = _connection(target, remaining, env)
    try:
        try:
            conn.connect()
            if conn.sock is not None:
                conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.request("POST", request_target, body=payload, headers=headers)
            _set_timeout(conn, deadline)
            response = conn.getresponse()
        except (ConnectionResetError, ConnectionAbortedError, BrokenPipeError, http.client.RemoteDisconnected) as exc:
            raise _Retryable(f"the connection was dropped ({type(exc).__name__})") from None
        response_headers = {k.lower(): v for k, v in response.getheaders()}
        chunks: List[bytes] = []
        size = 0
        while True:
            _set_timeout(conn, deadline, response)
            # read1: one socket wait per chunk, so a server trickling bytes cannot
            # stretch the budget (read(n) would block until all n bytes came).
            chunk = response.read1(65536)
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_RESPONSE_BYTES:
                raise ModelError("bad_reply", f"the answer from {target.safe} is larger than {MAX_RESPONSE_BYTES // (1024 * 1024)} MiB")
            chunks.append(chunk)
        return response.status, response_headers, b"".join(chunks)
    except http.client.HTTPException as exc:
        raise _Malformed(f"the answer is not HTTP we can read ({_clip(str(exc) or type(exc).__name__, 80)})") from None
    finally:
        conn.close()


def _connection(target: _Target, timeout: float, env: Mapping[str, str]) -> Tuple[Any, str]:
    """(an http.client connection to ``target``, the request target), through HTTPS_PROXY/HTTP_PROXY when set."""
    import http.client

    proxy = _proxy_for(target, env)
    if target.scheme == "https":
        if proxy:
            conn: Any = http.client.HTTPSConnection(proxy[0], proxy[1], timeout=timeout)
            conn.set_tunnel(target.host, target.port)
            return conn, target.path
        return http.client.HTTPSConnection(target.host, target.port, timeout=timeout), target.path
    if proxy:
        # A plain-HTTP proxy wants the absolute URL in the request line.
        conn = http.client.HTTPConnection(proxy[0], proxy[1], timeout=timeout)
        return conn, f"http://{target.host}:{target.port}{target.path}"
    return http.client.HTTPConnection(target.host, target.port, timeout=timeout), target.path


def _proxy_for(target: _Target, env: Mapping[str, str]) -> Optional[Tuple[str, int]]:
    """The proxy (host, port) the environment names for ``target``, unless NO_PROXY exempts it."""
    from urllib.parse import urlsplit

    name = "https_proxy" if target.scheme == "https" else "http_proxy"
    url = (env.get(name) or env.get(name.upper()) or "").strip()
    if not url:
        return None
    no_proxy = env.get("no_proxy") or env.get("NO_PROXY") or ""
    for entry in (e.strip().lower() for e in no_proxy.split(",")):
        if entry == "*":
            return None
        entry = entry.split(":")[0].lstrip(".")
        if entry and (target.host == entry or target.host.endswith("." + entry)):
            return None
    parts = urlsplit(url if "://" in url else "http://" + url)
    if not parts.hostname:
        return None
    return parts.hostname, parts.port or 80


def _set_timeout(conn: Any, deadline: float, response: Any = None) -> None:
    """Each socket wait gets what is left of the overall budget, so a slow drip cannot outlast it."""
    import socket

    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise socket.timeout("the overall time budget is spent")
    sock = conn.sock
    if sock is None and response is not None:  # "connection: close": the response owns the socket
        sock = getattr(getattr(getattr(response, "fp", None), "raw", None), "_sock", None)
    if sock is not None:
        sock.settimeout(remaining)


def _decode(data: bytes, target: _Target) -> Dict[str, Any]:
    too_deep = f"{target.safe} answered with JSON nested more than {MAX_RESPONSE_DEPTH} levels deep; it is not a usable answer"
    try:
        value = json.loads(data.decode("utf-8"))
    except RecursionError:
        raise ModelError("bad_reply", too_deep) from None
    except (UnicodeDecodeError, ValueError):
        start = _clip(data[:80].decode("utf-8", "replace"), 80)
        raise ModelError("bad_reply", f"{target.safe} answered with something that is not JSON: {start!r}") from None
    if not isinstance(value, dict):
        raise ModelError("bad_reply", f"{target.safe} answered with JSON that is not an object")
    if _nests_deeper(value, MAX_RESPONSE_DEPTH):
        raise ModelError("bad_reply", too_deep)
    return value


def _nests_deeper(value: Any, limit: int) -> bool:
    """Does ``value`` have more than ``limit`` levels of arrays/objects?  Iterative, so any depth is safe."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        for child in children:
            if isinstance(child, (dict, list)):
                if depth >= limit:
                    return True
                stack.append((child, depth + 1))
    return False


def _error_fields(data: bytes) -> Tuple[str, str, str]:
    """(error.type, error.message, error code) from an Anthropic-shaped error body, or blanks."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return "", _clip(data[:MAX_DETAIL].decode("utf-8", "replace"), MAX_DETAIL), ""
    error = value.get("error") if isinstance(value, dict) else None
    if not isinstance(error, dict):
        return "", "", ""
    details = error.get("details")
    code = str(details.get("error_code") or "") if isinstance(details, dict) else ""
    return str(error.get("type") or ""), str(error.get("message") or ""), code


def _should_retry(status: int, headers: Mapping[str, str], data: bytes) -> bool:
    should = headers.get("x-should-retry", "").strip().lower()
    if should == "false":
        return False
    if status == 429 and _error_fields(data)[2] == SPEND_LIMIT_CODE:
        return False
    return status in RETRY_STATUSES or should == "true"


def _retry_after(headers: Mapping[str, str]) -> Optional[float]:
    """The server's ``retry-after`` in seconds (an HTTP date is treated as absent)."""
    raw = headers.get("retry-after-ms")
    try:
        if raw is not None:
            return max(0.0, float(raw) / 1000)
        raw = headers.get("retry-after")
        return max(0.0, float(raw)) if raw is not None else None
    except ValueError:
        return None


def _backoff(attempt: int) -> float:
    # Jitter so clients that failed together do not retry together (os.urandom: the
    # random module costs an import the hook process would pay for this alone).
    jitter = 0.75 + 0.25 * int.from_bytes(os.urandom(2), "big") / 65535
    return min(BACKOFF_MAX, BACKOFF_BASE * 2 ** (attempt - 1)) * jitter


_STATUS_KINDS = {401: "auth", 402: "auth", 403: "auth", 429: "rate_limit", 529: "overloaded"}
_ADVICE = {
    "auth": "check ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) and the account's access",
    "rate_limit": "the account is rate limited; try again later",
    "overloaded": "the API is overloaded; try again later",
    "server": "the API had a server-side problem; try again later",
    "bad_request": "check the model id and ANTHROPIC_BASE_URL",
}


def _http_error(status: int, headers: Mapping[str, str], data: bytes, target: _Target, secrets: List[str]) -> ModelError:
    if status in _STATUS_KINDS:
        kind = _STATUS_KINDS[status]
    elif status >= 500:
        kind = "server"
    else:
        kind = "bad_request"
    error_type, detail, code = _error_fields(data)
    advice = _ADVICE[kind]
    if code == SPEND_LIMIT_CODE:
        advice = "the account's spend limit is reached; raise it in the Anthropic console"
    said = " ".join(p for p in (error_type, _clip(detail, MAX_DETAIL)) if p)
    message = f"the Messages API at {target.safe} answered {status}" + (f" ({said})" if said else "") + f": {advice}"
    return ModelError(kind, scrub(message, secrets), status)


def _network_error(target: _Target, exc: BaseException, timeout: float) -> ModelError:
    import socket

    if isinstance(exc, socket.timeout):
        return ModelError("timeout", f"no answer from {target.safe} within {timeout:g} s")
    if isinstance(exc, socket.gaierror):
        return ModelError("network", f"cannot resolve {target.host}: check the network or ANTHROPIC_BASE_URL")
    if isinstance(exc, ConnectionRefusedError):
        return ModelError("network", f"nothing listens at {target.host}:{target.port}: check ANTHROPIC_BASE_URL")
    reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return ModelError("network", f"cannot reach {target.safe} ({_clip(str(reason), 120)}): check the network or ANTHROPIC_BASE_URL")


def scrub(text: str, secrets: List[str]) -> str:
    """``text`` with every secret in it replaced by ``****`` (servers sometimes echo what they got)."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "****")
    return text


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- the claude CLI ------------------------------------------------------------------------


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


def claude_env(env: Mapping[str, str]) -> Dict[str, str]:
    """The inner call's environment: the caller's, plus our guards."""
    child = dict(env)
    # As the Agent SDK does: the child is its own session, not a tool of the outer one.
    child.pop("CLAUDECODE", None)
    child.update(CLAUDE_ENV)
    return child


def _complete_claude(
    system: str, prompt: str, model: Optional[str], timeout: float, env: Mapping[str, str]
) -> Tuple[str, str, Dict[str, int]]:
    import shutil
    import tempfile

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
    import signal
    import subprocess

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
    import subprocess

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
    secrets = [_secret(env, n) for n in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")]
    try:
        result = json.loads(stdout.strip())
    except (ValueError, RecursionError):
        result = None
    if not isinstance(result, dict):
        first = next((line.strip() for line in (stderr or stdout).splitlines() if line.strip()), "")
        said = scrub(_clip(first, MAX_DETAIL), secrets) or "no output"
        raise ModelError("bad_reply", f"the claude CLI (exit {returncode}) did not print its JSON result: {said}")
    text = result.get("result")
    text = text if isinstance(text, str) else ""
    if result.get("is_error"):
        status = result.get("api_error_status")
        status = status if isinstance(status, int) else None
        said = scrub(_clip(text or str(result.get("subtype") or ""), MAX_DETAIL), secrets)
        if "not logged in" in text.lower():
            raise ModelError("not_logged_in", "the claude CLI is not logged in: run 'claude' and /login, or set ANTHROPIC_API_KEY")
        if status is None:
            raise ModelError("bad_reply", f"the claude CLI failed: {said}")
        kind = _STATUS_KINDS.get(status) or ("server" if status >= 500 else "bad_request")
        raise ModelError(kind, f"the claude CLI's model call failed ({said}): {_CLI_STATUS_ADVICE[kind]}", status)
    if result.get("stop_reason") == "refusal":
        raise ModelError("bad_reply", "the model declined to answer (stop_reason refusal)")
    if not text.strip():
        raise ModelError("bad_reply", "the claude CLI's model answered with no text")
    model_usage = result.get("modelUsage")
    reported = next(iter(model_usage), None) if isinstance(model_usage, dict) and model_usage else None
    return text, str(reported or model), _usage(result.get("usage"))
