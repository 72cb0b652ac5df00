"""Where OAuth grants (tokens) for remote MCP servers are kept between runs.

One JSON file per server in ``<state dir>/oauth/<server>.json`` (the state dir
of ``paths.py``; the directory is 0700).  Each file is written atomically by
``paths.write_private``: a 0600 temp file beside it, fsync, rename, so a token
is never readable by others, not even for a moment, and a crash mid-write
leaves the old file whole.  One file per server keeps a refresh by the gateway
and a ``toolscript auth`` of another server from ever racing on one file.

A file that cannot be read as a grant (hand-edited, truncated by a full disk)
is not deleted: it is renamed to ``<server>.json.corrupt-<time>`` and a warning
says where it went and what to do (``toolscript auth SERVER``); the server then
counts as not authorized.

A grant is bound to the URL it was issued for: ``load`` ignores a grant whose
protected resource does not cover the configured URL, so pointing a server name
at another host never sends it the old host's token.

Refreshing is serialized across processes (the gateway and a CLI command may
hold the same grant): ``StoredBearerAuth`` refreshes under an exclusive lock
on ``<server>.lock`` beside the grant and first rereads the file, so a process
that waited uses the grant the other just stored instead of presenting a
refresh token that was already rotated (which an authorization server with
reuse detection answers by revoking the whole sign-in).

Nothing here logs or prints a token; ``flow.mask`` is how to show one.
"""

import contextlib
import json
import os
import shlex
import time
import urllib.parse
from typing import Any, Dict, Iterator, List, Optional, Tuple

from toolscript import log, paths
from toolscript.mcp.auth.bearer import BearerAuth
from toolscript.mcp.auth.flow import AuthRequired, ClientSettings, Grant, bearer_challenge, mask

logger = log.get("mcp.oauth_store")

STORE_DIR = "oauth"
FILE_VERSION = 1


def store_dir() -> str:
    """The private directory holding the grants (created 0700 if needed)."""
    return paths.ensure_private_dir(os.path.join(paths.state_dir(), STORE_DIR))


def grant_path(server_name: str) -> str:
    """The file of ``server_name``'s grant (it may not exist)."""
    return os.path.join(store_dir(), paths.safe_name(server_name) + ".json")


def load(server_name: str, server_url: str) -> Optional[Grant]:
    """The stored grant of ``server_name`` when it was issued for ``server_url``; else None."""
    found = _read(grant_path(server_name))
    if found is None:
        return None
    _, grant = found
    if not covers(grant.resource, server_url):
        logger.info("%s: the stored token was issued for another URL; it is not used", server_name)
        return None
    return grant


def read(server_name: str) -> Optional[Grant]:
    """The stored grant of ``server_name`` whatever URL it was issued for (for logout); None when there is none."""
    found = _read(grant_path(server_name))
    return found[1] if found is not None else None


def save(server_name: str, grant: Grant) -> None:
    """Store ``grant`` as ``server_name``'s (0600 from creation, atomic)."""
    document = {"version": FILE_VERSION, "server": server_name, "savedAt": time.time(), "grant": grant.to_dict()}
    paths.write_private(grant_path(server_name), json.dumps(document, indent=2) + "\n")


@contextlib.contextmanager
def refresh_lock(server_name: str) -> Iterator[None]:
    """Hold the exclusive cross-process lock of ``server_name``'s grant (a no-op where ``fcntl`` is missing)."""
    try:
        import fcntl
    except ImportError:  # Windows: no advisory locks in the stdlib that fit; refreshes there stay unserialized
        yield
        return
    path = os.path.join(store_dir(), paths.safe_name(server_name) + ".lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # bounded: the holder's refresh has a timeout
        yield
    finally:
        os.close(fd)  # closing releases the lock


def delete(server_name: str) -> bool:
    """Forget ``server_name``'s grant; False when there was none."""
    try:
        os.unlink(grant_path(server_name))
    except FileNotFoundError:
        return False
    return True


def list_grants() -> List[Tuple[str, Grant]]:
    """Every stored grant as ``(server name, grant)``, sorted by name (unreadable files are moved aside)."""
    directory = store_dir()
    grants: List[Tuple[str, Grant]] = []
    for entry in sorted(os.listdir(directory)):
        if not entry.endswith(".json") or entry.startswith("."):
            continue
        found = _read(os.path.join(directory, entry))
        if found is not None:
            grants.append(found)
    return sorted(grants, key=lambda item: item[0])


def signature(server_name: str) -> Optional[Tuple[int, int, int]]:
    """A cheap fingerprint of the stored file (inode, size, mtime), None when absent: it changes on every save/delete."""
    try:
        info = os.stat(grant_path(server_name))
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)


def covers(resource: str, server_url: str) -> bool:
    """Whether a grant for protected resource ``resource`` may be sent to ``server_url``.

    Same scheme and host (case-insensitive, default ports folded) and the
    server's path is the resource's path or below it.
    """
    a, b = _canonical(resource), _canonical(server_url)
    if a is None or b is None or a[:2] != b[:2]:
        return False
    prefix, path = a[2].rstrip("/"), b[2].rstrip("/")
    return path == prefix or path.startswith(prefix + "/")


# -- building what the transports need ------------------------------------------------------


def client_settings(oauth: Any, scope: Optional[str] = None) -> ClientSettings:
    """The ``flow.ClientSettings`` for a server's ``oauth`` config (``config.load.OAuthConfig``, duck-typed); ``scope`` overrides."""
    return ClientSettings(
        client_id=getattr(oauth, "client_id", None),
        client_secret=getattr(oauth, "client_secret", None),
        scope=scope or getattr(oauth, "scope", None),
        client_metadata_url=getattr(oauth, "client_metadata_url", None),
    )


class StepUpRequired(AuthRequired):
    """A tool needs more scope than the stored sign-in has: only that call fails, with the command that fixes it."""

    def __init__(self, server_name: str, scope: Optional[str]) -> None:
        super().__init__(server_name, "the server asks for more scope")
        self.scope = scope
        wanted = f" --scope {shlex.quote(scope)}" if scope else ""
        # Replaces AuthRequired's message: same words, plus the scope to ask for.
        self.args = (f"needs auth: run toolscript auth {server_name}{wanted} (this tool needs more scope than the sign-in has)",)


class StoredBearerAuth(BearerAuth):
    """``BearerAuth`` over this store that notices a new sign-in at once.

    ``toolscript auth`` writes the store from another process; each request
    here looks at the file's signature (one stat) and rereads the grant when it
    changed, so a gateway uses a new sign-in (or a step-up's larger scope)
    without a restart.  A 403 for more scope that a newer stored grant may
    already have is retried with it; otherwise it is a ``StepUpRequired``.
    """

    def __init__(self, server_name: str, server_url: str) -> None:
        super().__init__(server_name, lambda: load(server_name, server_url), lambda grant: save(server_name, grant))
        self.server_url = server_url
        self._seen = signature(server_name)

    def _current(self) -> Optional[Grant]:
        now = signature(self.server_name)
        if now != self._seen:
            self._seen = now
            self._loaded = False  # someone else stored a grant (or removed it): read it again
        return super()._current()

    def _adopt(self, grant: Grant) -> None:
        super()._adopt(grant)
        self._seen = signature(self.server_name)  # our own save is not news

    def _try_refresh(self, grant: Grant) -> bool:
        with refresh_lock(self.server_name):
            stored = load(self.server_name, self.server_url)
            if stored is None:
                return False  # signed out (auth --logout) since this grant was read: a refresh must not bring it back
            if stored.access_token != grant.access_token:
                # Another process refreshed (or signed in) while we waited for the lock: use its grant, do not refresh again.
                self._grant, self._loaded = stored, True
                self._seen = signature(self.server_name)
                self._adopted = (stored.access_token, time.monotonic())
                return True
            return super()._try_refresh(grant)

    def on_unauthorized(self, status: int, www_authenticate: Optional[str], used: Optional[str] = None) -> bool:
        with self._lock:
            if status == 403 and used is not None:
                grant = self._current()
                if grant is not None and used != "Bearer " + grant.access_token:
                    return True  # a newer sign-in arrived since this request left: try it
            try:
                return super().on_unauthorized(status, www_authenticate, used)
            except AuthRequired as exc:
                if status == 403:
                    raise StepUpRequired(self.server_name, bearer_challenge(www_authenticate).get("scope")) from exc
                raise


def bearer_auth(server: Any) -> Optional[StoredBearerAuth]:
    """A ``BearerAuth`` reading and writing this store for an http/sse ``server``; None when OAuth does not apply.

    It does not apply to stdio servers, to servers whose config says
    ``"oauth": false``, or to servers that send their own ``Authorization``
    header (a static token in ``headers`` wins: sending both would be ambiguous).
    """
    if getattr(server, "type", None) not in ("http", "sse") or not getattr(server, "url", None):
        return None
    oauth = getattr(server, "oauth", None)
    if oauth is not None and not getattr(oauth, "enabled", True):
        return None
    if any(key.lower() == "authorization" for key in (getattr(server, "headers", None) or {})):
        return None
    return StoredBearerAuth(server.name, server.url)


# -- reading ----------------------------------------------------------------------------------


def _read(path: str) -> Optional[Tuple[str, Grant]]:
    """``(server name, grant)`` from one file; None when it is absent or unreadable (then moved aside)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
            mode = os.fstat(f.fileno()).st_mode
            if mode & 0o077:  # restored from a backup, copied by hand: a token must not stay readable by others
                os.chmod(path, 0o600)
                logger.warning("the stored OAuth token %s was readable by others (mode %o); made it 0600", path, mode & 0o777)
    except FileNotFoundError:
        return None
    except OSError as exc:
        logger.warning("cannot read the stored OAuth token %s: %s (check its permissions)", path, exc.strerror or exc)
        return None
    try:
        document = json.loads(data.decode("utf-8"))
        if not isinstance(document, dict) or not isinstance(document.get("grant"), dict):
            raise ValueError("no grant in it")
        grant = Grant.from_dict(document["grant"])
        if not isinstance(grant.access_token, str) or not grant.access_token:
            raise ValueError("no access token in it")
        name = document.get("server")
        if not isinstance(name, str) or not name:
            name = os.path.basename(path)[: -len(".json")]
    except Exception as exc:  # any shape problem: the file is kept aside, never trusted
        _set_aside(path, exc)
        return None
    return name, grant


def _set_aside(path: str, problem: Exception) -> None:
    """Rename an unreadable grant file out of the way (it is evidence, not garbage) and say what to do."""
    server = os.path.basename(path)[: -len(".json")] if path.endswith(".json") else os.path.basename(path)
    aside = f"{path}.corrupt-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}"
    try:
        os.replace(path, aside)
        where = f"moved it to {aside}"
    except OSError as exc:
        where = f"could not move it aside ({exc.strerror or exc})"
    # The reason names the shape problem only: a JSON error message could quote a token.
    logger.warning(
        "the stored OAuth token of server %r is unreadable (%s); %s; run 'toolscript auth %s' to sign in again",
        server, type(problem).__name__, where, server,
    )


def _canonical(url: str) -> Optional[Tuple[str, str, str]]:
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if not scheme or not host:
        return None
    default = {"http": 80, "https": 443}.get(scheme)
    netloc = host if port in (None, default) else f"{host}:{port}"
    return scheme, netloc, parts.path or "/"


def describe(grant: Grant, now: Optional[float] = None) -> Dict[str, Any]:
    """A grant as ``auth --list`` shows it: no secret unmasked."""
    now = time.time() if now is None else now
    expires = grant.expires_at
    return {
        "resource": grant.resource,
        "issuer": grant.issuer,
        "scope": grant.scope,
        "clientId": grant.client_id,
        "expiresAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(expires)) if expires else None,
        "expired": bool(expires and expires <= now),
        "refreshable": bool(grant.refresh_token),
        "accessToken": mask(grant.access_token),
    }
