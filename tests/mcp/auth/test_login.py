"""``toolscript.mcp.auth.login``: the loopback listener that catches the browser's callback.

Only the answer with the right ``state`` ends the wait; a second callback is
refused; idle or half-sent connections do not block it; it answers only its
path, on loopback only.
"""

import contextlib
import http.client
import socket
from typing import Iterator, Tuple
from urllib.parse import urlsplit

import pytest

from toolscript.mcp.auth import login as oauth_login


def _get(url: str, timeout: float = 10.0) -> Tuple[int, bytes]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout)
    try:
        conn.request("GET", parts.path + ("?" + parts.query if parts.query else ""))
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


# -- the loopback callback listener -----------------------------------------------------------------


@contextlib.contextmanager
def _listening(expected_state: str) -> Iterator[oauth_login.CallbackListener]:
    """A callback listener waiting for ``expected_state``, closed afterwards."""
    listener = oauth_login.CallbackListener()
    try:
        listener.expected_state = expected_state
        yield listener
    finally:
        listener.close()


def test_a_callback_with_the_wrong_state_does_not_end_the_wait_for_the_right_one() -> None:
    with _listening("the-right-state") as listener:
        status, _ = _get(listener.redirect_uri + "?code=forged&state=someone-elses")
        assert status == 400
        status, _ = _get(listener.redirect_uri + "?code=forged")  # no state at all
        assert status == 400
        status, _ = _get(listener.redirect_uri + "?code=real&state=the-right-state")
        assert status == 200
        arrived = listener.wait(10)
    assert arrived is not None and "code=real" in arrived


def test_a_second_callback_is_refused_and_the_first_answer_kept() -> None:
    with _listening("s") as listener:
        assert _get(listener.redirect_uri + "?code=first&state=s")[0] == 200
        status, body = _get(listener.redirect_uri + "?code=second&state=s")
        arrived = listener.wait(10)
    assert status == 409 and b"already" in body
    assert arrived is not None and "code=first" in arrived


@pytest.mark.timeout(60)
def test_an_idle_connection_to_the_listener_does_not_block_the_real_callback() -> None:
    # Browsers open speculative connections and leave them idle; any local process can too.
    listener = oauth_login.CallbackListener()
    idle = socket.create_connection(("127.0.0.1", listener.port))
    half = socket.create_connection(("127.0.0.1", listener.port))
    try:
        half.sendall(b"GET /callback?code=x HTTP/1.1\r\n")  # a request line, then nothing
        listener.expected_state = "s"
        status, _ = _get(listener.redirect_uri + "?code=real&state=s", timeout=20)
        arrived = listener.wait(10)
    finally:
        idle.close()
        half.close()
        listener.close()
    assert status == 200
    assert arrived is not None and "code=real" in arrived


def test_the_listener_answers_only_its_path_and_listens_on_loopback_only() -> None:
    with _listening("s") as listener:
        assert _get(f"http://127.0.0.1:{listener.port}/favicon.ico")[0] == 404
        assert _get(f"http://127.0.0.1:{listener.port}/callbackx?state=s&code=c")[0] == 404
        assert listener.wait(0.2) is None
        assert listener._server.server_address[0] == "127.0.0.1"


def test_an_oversized_request_line_is_refused_without_ending_the_wait() -> None:
    with _listening("s") as listener:
        status, _ = _get(listener.redirect_uri + "?state=s&pad=" + "x" * 70000)
        assert status == 414
        assert listener.wait(0.2) is None
