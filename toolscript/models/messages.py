"""The Messages API: ``POST {ANTHROPIC_BASE_URL}/v1/messages``, non-streaming.

Credentials: ``ANTHROPIC_API_KEY`` (sent as ``x-api-key``) or ``ANTHROPIC_AUTH_TOKEN``
(``Authorization: Bearer``, for gateways), plus any ``ANTHROPIC_CUSTOM_HEADERS``.  A call
retries 429/529/5xx and dropped connections within one overall time budget.
``messages`` is the raw call (the ask loop sends tools through it); ``complete`` builds a
one-turn request and reads the text back (``toolscript.models.backends.complete`` calls it).

The request goes out over ``toolscript.http1``, straight to the host or through
HTTPS_PROXY/HTTP_PROXY (a CONNECT tunnel for https, the absolute URL for plain http):
no ``http.client`` (its email parser costs a hook ~17 ms of imports), and ``ssl`` only
for an https URL.  Every failure is a ``ModelError`` whose text is one line that names
the cause and never contains a key or token (``scrub``); the claude CLI backend reports
API statuses in the same words (``STATUS_KINDS``, ``scrub``, ``clip``, ``usage``).
"""

import json
import logging
import os
import socket
import time
from typing import Any, Dict, List, Mapping, Optional, Tuple

from toolscript import http1
from toolscript.models import ModelError

DEFAULT_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
# The API's default model when neither ``model`` nor ANTHROPIC_DEFAULT_HAIKU_MODEL says one.
# claude-haiku-4-5 is the small model every first-party key and every gateway we know of
# accepts (claude-haiku-5-5 is newer and cheaper but not yet served everywhere), and the
# request we send (no sampling parameters, no prefill, no thinking) is valid for both
# generations.  ANTHROPIC_DEFAULT_HAIKU_MODEL is the variable Claude Code itself reads for
# its "haiku" alias, so one setting picks the model for both backends.
DEFAULT_API_MODEL = "claude-haiku-4-5"
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
# Headers we set ourselves: a custom header of the same name is dropped (ours win).
OWN_HEADERS = ("anthropic-version", "content-type", "accept", "accept-encoding")

log = logging.getLogger("toolscript.models")


def complete(
    system: str, prompt: str, model: Optional[str], timeout: float, max_tokens: int, env: Mapping[str, str]
) -> Tuple[str, str, Dict[str, int]]:
    """One user turn through the API: (its text, the model that answered, usage).  Raises ModelError."""
    model_id = model or secret(env, "ANTHROPIC_DEFAULT_HAIKU_MODEL") or DEFAULT_API_MODEL
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
    return text, str(reply.get("model") or model_id), usage(reply.get("usage"))


def usage(raw: Any) -> Dict[str, int]:
    """input_tokens / output_tokens of an API ``usage`` object, those that are numbers."""
    if not isinstance(raw, dict):
        return {}
    return {k: raw[k] for k in ("input_tokens", "output_tokens") if isinstance(raw.get(k), int)}


def messages(body: Dict[str, Any], *, timeout: float, env: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
    """POST ``body`` to ``{base}/v1/messages`` (non-streaming); the response JSON.

    ``body`` goes out untouched (tools, tool_choice and all).  Retries 429, 529,
    500/502/503/504 and dropped connections, honouring ``retry-after`` when it fits in
    what is left of ``timeout``; gives up at once when it does not.  Raises ModelError.
    """
    env = os.environ if env is None else env
    deadline = time.monotonic() + timeout
    base = secret(env, "ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL
    target = _Target(base)
    headers = _headers(env)
    # Everything that may carry a credential: never in an error, even when a server echoes it.
    secrets = [secret(env, "ANTHROPIC_API_KEY"), secret(env, "ANTHROPIC_AUTH_TOKEN")]
    secrets += [v for k, v in headers.items() if k.lower() not in OWN_HEADERS and len(v) >= 8]
    if not any(h.lower() in ("x-api-key", "authorization") for h in headers) and base == DEFAULT_BASE_URL:
        raise ModelError("auth", "no API credentials: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN for a gateway)")
    for name, value in headers.items():
        if any(c in name + value for c in "\r\n\0"):
            # Not echoed: the value may be a key.  (It would split the request.)
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
        except http1.Dropped as exc:  # the request may not have been seen: worth another try
            problem = ModelError("network", f"{target.safe}: {exc}; check the network or ANTHROPIC_BASE_URL")
            wait = _backoff(attempt)
            log.debug("attempt %d: %s", attempt, exc)
        except OSError as exc:
            raise _network_error(target, exc, timeout) from None
        except http1.TooLarge:
            raise ModelError("bad_reply", f"the answer from {target.safe} is larger than {MAX_RESPONSE_BYTES // (1024 * 1024)} MiB") from None
        except http1.Malformed as exc:
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


def _headers(env: Mapping[str, str]) -> Dict[str, str]:
    headers: Dict[str, str] = {}
    # ANTHROPIC_CUSTOM_HEADERS: "Name: value" lines, as Claude Code reads them.  They go
    # first so ours win for the fields the protocol depends on.
    for line in (env.get("ANTHROPIC_CUSTOM_HEADERS") or "").splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip() and "\r" not in value and name.strip().lower() not in OWN_HEADERS:
            headers[name.strip()] = value.strip()
    headers["anthropic-version"] = ANTHROPIC_VERSION
    headers["content-type"] = "application/json"
    headers["accept"] = "application/json"
    # identity: a compressed answer would need zlib and a decoder the hook does not carry.
    headers["accept-encoding"] = "identity"
    key, token = secret(env, "ANTHROPIC_API_KEY"), secret(env, "ANTHROPIC_AUTH_TOKEN")
    if key:
        headers["x-api-key"] = key
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def _post(target: _Target, payload: bytes, headers: Dict[str, str], deadline: float, env: Mapping[str, str]) -> http1.Response:
    """One attempt on a fresh connection, every wait inside ``deadline``.

    Raises http1.Dropped (worth another try), http1.TooLarge, http1.Malformed, OSError.
    """
    tls = target.scheme == "https"
    host, port, request_target = target.host, target.port, target.path
    proxy = _proxy_for(target, env)
    tunnel = proxy if proxy and tls else None
    if proxy and not tls:
        # A plain-HTTP proxy wants the absolute URL in the request line.
        host, port = proxy
        request_target = f"http://{target.host}:{target.port}{target.path}"
    try:
        head = http1.request_head("POST", request_target, http1.authority(target.host, target.port, tls), headers, len(payload))
    except ValueError:
        raise ModelError("bad_request", "a header value is not Latin-1 text: fix ANTHROPIC_CUSTOM_HEADERS") from None
    sock = http1.connect(host, port, deadline=deadline, tls=tls, tunnel=tunnel)
    try:
        return http1.exchange(sock, head + payload, deadline=deadline, max_body=MAX_RESPONSE_BYTES)
    finally:
        sock.close()


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


def _decode(data: bytes, target: _Target) -> Dict[str, Any]:
    try:
        value = http1.decode_json(data, MAX_RESPONSE_DEPTH)
    except http1.JsonTooDeep:
        raise ModelError(
            "bad_reply", f"{target.safe} answered with JSON nested more than {MAX_RESPONSE_DEPTH} levels deep; it is not a usable answer"
        ) from None
    except ValueError:  # not UTF-8, or not JSON
        start = clip(data[:80].decode("utf-8", "replace"), 80)
        raise ModelError("bad_reply", f"{target.safe} answered with something that is not JSON: {start!r}") from None
    if not isinstance(value, dict):
        raise ModelError("bad_reply", f"{target.safe} answered with JSON that is not an object")
    return value


def _error_fields(data: bytes) -> Tuple[str, str, str]:
    """(error.type, error.message, error code) from an Anthropic-shaped error body, or blanks."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return "", clip(data[:MAX_DETAIL].decode("utf-8", "replace"), MAX_DETAIL), ""
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


STATUS_KINDS = {401: "auth", 402: "auth", 403: "auth", 429: "rate_limit", 529: "overloaded"}
_ADVICE = {
    "auth": "check ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) and the account's access",
    "rate_limit": "the account is rate limited; try again later",
    "overloaded": "the API is overloaded; try again later",
    "server": "the API had a server-side problem; try again later",
    "bad_request": "check the model id and ANTHROPIC_BASE_URL",
}


def _http_error(status: int, headers: Mapping[str, str], data: bytes, target: _Target, secrets: List[str]) -> ModelError:
    if status in STATUS_KINDS:
        kind = STATUS_KINDS[status]
    elif status >= 500:
        kind = "server"
    else:
        kind = "bad_request"
    error_type, detail, code = _error_fields(data)
    advice = _ADVICE[kind]
    if code == SPEND_LIMIT_CODE:
        advice = "the account's spend limit is reached; raise it in the Anthropic console"
    said = " ".join(p for p in (error_type, clip(detail, MAX_DETAIL)) if p)
    message = f"the Messages API at {target.safe} answered {status}" + (f" ({said})" if said else "") + f": {advice}"
    return ModelError(kind, scrub(message, secrets), status)


def _network_error(target: _Target, exc: BaseException, timeout: float) -> ModelError:
    if isinstance(exc, socket.timeout):
        return ModelError("timeout", f"no answer from {target.safe} within {timeout:g} s")
    if isinstance(exc, socket.gaierror):
        return ModelError("network", f"cannot resolve {target.host}: check the network or ANTHROPIC_BASE_URL")
    if isinstance(exc, ConnectionRefusedError):
        return ModelError("network", f"nothing listens at {target.host}:{target.port}: check ANTHROPIC_BASE_URL")
    reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return ModelError("network", f"cannot reach {target.safe} ({clip(str(reason), 120)}): check the network or ANTHROPIC_BASE_URL")


def secret(env: Mapping[str, str], name: str) -> str:
    """The variable ``name`` of ``env``, stripped ("" when unset)."""
    return (env.get(name) or "").strip()


def scrub(text: str, secrets: List[str]) -> str:
    """``text`` with every secret in it replaced by ``****`` (servers sometimes echo what they got)."""
    for value in secrets:
        if value:
            text = text.replace(value, "****")
    return text


def clip(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters (with "..." when cut)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
