"""What the HTTP transports hold for a server that needs OAuth: ``BearerAuth``.

It puts ``Authorization: Bearer`` on every request, refreshes a token about to
expire, and decides what a 401 or a 403 ``insufficient_scope`` means (refresh,
run ``interactive`` again for a step-up, or raise ``AuthRequired``).  Getting
and refreshing grants is ``flow.py``'s; keeping them between runs is
``store.py``'s (its ``StoredBearerAuth`` builds on this class).
"""

import threading
import time
from typing import Callable, Optional, Tuple

from toolscript import log
from toolscript.mcp.auth.flow import AuthRequired, Grant, OAuthError, bearer_challenge, refresh

logger = log.get("mcp.oauth")

REFRESH_MARGIN_SECONDS = 60.0  # refresh a token that expires sooner than this
MAX_INTERACTIVE_RUNS = 3  # authorizations one BearerAuth may start before it gives up (a server that never accepts)
_UNKNOWN = "\0unknown"  # on_unauthorized's ``used`` when the caller did not say what the request carried


class BearerAuth:
    """The Authorization header of one server's requests, and what to do when the server refuses it."""

    def __init__(
        self,
        server_name: str,
        load: Callable[[], Optional[Grant]],
        save: Callable[[Grant], None],
        interactive: Optional[Callable[[Optional[str]], Grant]] = None,
        *,
        timeout: float = 30.0,
    ) -> None:
        self.server_name = server_name
        self._load = load
        self._save = save
        self._interactive = interactive
        self._timeout = timeout
        self._grant: Optional[Grant] = None
        self._loaded = False
        self._refresh_dead: Optional[str] = None  # a refresh token the server refused
        self._interactive_runs = 0
        self._adopted: Tuple[str, float] = ("", 0.0)  # the token this object last obtained, and when
        self._lock = threading.RLock()

    @property
    def grant(self) -> Optional[Grant]:
        with self._lock:
            return self._current()

    def _current(self) -> Optional[Grant]:
        if not self._loaded:
            self._grant = self._load()
            self._loaded = True
        return self._grant

    def _adopt(self, grant: Grant) -> None:
        self._save(grant)
        self._grant = grant
        self._loaded = True
        self._adopted = (grant.access_token, time.monotonic())

    def _just_obtained(self, grant: Grant) -> bool:
        """True for a token this object got moments ago: one that lives under a minute is used, not refreshed again."""
        token, when = self._adopted
        return token == grant.access_token and time.monotonic() - when < REFRESH_MARGIN_SECONDS / 2

    def _try_refresh(self, grant: Grant) -> bool:
        """Refresh ``grant``; False when it cannot be (no refresh token, or the server refused it)."""
        if not grant.refresh_token or grant.refresh_token == self._refresh_dead:
            return False
        try:
            self._adopt(refresh(grant, self._timeout))
        except AuthRequired as exc:
            logger.debug("%s: refresh refused: %s", self.server_name, exc.reason)
            self._refresh_dead = grant.refresh_token
            return False
        logger.debug("%s: token refreshed", self.server_name)
        return True

    def authorization(self) -> Optional[str]:
        """``Bearer <token>``, refreshed first when it expires within a minute; None without a grant."""
        with self._lock:
            grant = self._current()
            if grant is None:
                return None
            if grant.expires_within(REFRESH_MARGIN_SECONDS) and not self._just_obtained(grant):
                try:
                    self._try_refresh(grant)
                except OAuthError as exc:  # the server may still take the old token; a 401 will tell
                    logger.debug("%s: refresh failed: %s", self.server_name, exc)
                grant = self._grant or grant
            return "Bearer " + grant.access_token

    def on_unauthorized(self, status: int, www_authenticate: Optional[str], used: Optional[str] = _UNKNOWN) -> bool:
        """The server answered 401 or 403: True when the request should be sent once more.

        ``used`` is the Authorization value the refused request carried (None:
        none): when the grant changed since (another request or process
        renewed it), the retry needs nothing else.  A 401 refreshes, else runs ``interactive``,
        else raises ``AuthRequired``; a 403 ``insufficient_scope`` asks
        ``interactive`` for the larger scope (a step-up), else raises
        ``AuthRequired``; any other 403 is not ours to fix (False).
        """
        challenge = bearer_challenge(www_authenticate)
        with self._lock:
            if status == 403:
                if challenge.get("error") != "insufficient_scope":
                    return False
                grant = self._current()
                wanted = set((challenge.get("scope") or "").split())
                if grant is not None and wanted and wanted <= set((grant.scope or "").split()):
                    raise OAuthError(
                        f"{self.server_name} refuses the token for insufficient scope even though it was granted "
                        f"{' '.join(sorted(wanted))}; check the account's permissions on that server"
                    )
                return self._run_interactive(www_authenticate, "the server asks for more scope")
            if status != 401:
                return False
            grant = self._current()
            if grant is not None and used != _UNKNOWN and used != "Bearer " + grant.access_token:
                return True  # already renewed by another request
            stored = self._load()
            if stored is not None and (grant is None or stored.access_token != grant.access_token):
                self._grant = stored  # renewed by another process (toolscript auth)
                return True
            if grant is not None and self._try_refresh(grant):
                return True
            return self._run_interactive(www_authenticate, "the server refused the token" if grant else "no token yet")

    def _run_interactive(self, www_authenticate: Optional[str], reason: str) -> bool:
        if self._interactive is None:
            raise AuthRequired(self.server_name, reason)
        if self._interactive_runs >= MAX_INTERACTIVE_RUNS:
            raise OAuthError(f"{self.server_name} still refuses after {MAX_INTERACTIVE_RUNS} authorizations ({reason}); check the account's access")
        self._interactive_runs += 1
        self._adopt(self._interactive(www_authenticate))
        return True
