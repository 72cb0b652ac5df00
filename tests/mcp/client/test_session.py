"""``ClientSession`` and ``open_session``: log routing, closing while connecting, cancellation.

Log messages reach the call they belong to (and no guessed one); a session
closed during its handshake raises at once and leaves no process behind;
cancelling wakes the waiting request without polling.  Real servers over real
transports; nothing is mocked.
"""

import os
import sys
import threading

import pytest

from conftest import wait_for
from mcp_fixtures import spew_server, text_of
from mcp_servers.launch import stdio_command
from toolscript.config.load import ServerConfig
from toolscript.gateway.state import pid_alive
from toolscript.mcp.cancel import Cancel
from toolscript.mcp.client.connect import open_session
from toolscript.mcp.errors import ConnectionClosed, McpError, RequestCancelled


# -- log messages go to the request they belong to -------------------------------------------------


@pytest.mark.parametrize("transport", ["http", "sse", "stdio"])
def test_a_calls_own_log_messages_reach_its_on_log(fixture_session, transport):
    every = []
    session = fixture_session(transport, on_log=every.append)
    mine = []
    assert text_of(session.call_tool("log", {"count": 3}, on_log=mine.append)) == "logged 3"
    assert wait_for(lambda: len(every) == 3)
    assert [m["data"] for m in mine] == ["log message 1", "log message 2", "log message 3"]


def test_over_streamable_http_concurrent_calls_get_only_their_own_logs(fixture_session):
    every = []
    session = fixture_session("http", on_log=every.append)
    logs = {2: [], 5: []}

    def call(count):
        session.call_tool("log", {"count": count}, on_log=logs[count].append)

    threads = [threading.Thread(target=call, args=(n,)) for n in (2, 5) for _ in range(1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert len(logs[2]) == 2 and len(logs[5]) == 5
    assert wait_for(lambda: len(every) == 7)  # the session's own on_log still hears everything


def test_on_stdio_two_calls_with_on_log_in_flight_get_no_guessed_logs():
    session = open_session(spew_server())
    try:
        first, second = [], []
        done = threading.Event()
        started = threading.Event()

        def hold():
            started.set()
            try:
                session.call_tool("spew", {"bytes": 0}, on_log=first.append, timeout=2)  # never answers
            except McpError:
                pass
            done.set()

        threading.Thread(target=hold, daemon=True).start()
        started.wait(5)
        assert wait_for(lambda: len(session._log_routes) == 1)
        session.call_tool("log", {"count": 2}, on_log=second.append)
        assert first == [] and second == []  # two candidates: nobody can tell whose they are
        done.wait(10)
    finally:
        session.close()


# -- closing a session that is still connecting ----------------------------------------------------


def _group_members(pgid):
    """Pids still running (not zombies) in process group ``pgid``."""
    members = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(pid))
    return members


@pytest.mark.timeout(60)
def test_closing_mid_handshake_raises_promptly_and_leaves_no_process(tmp_path):
    pidfile = tmp_path / "child.pid"
    code = (
        "import signal, subprocess, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"  # stubborn: only SIGKILL ends it
        f"child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(child.pid))\n"
        "sys.stdin.read()\n"  # never answers initialize
        "time.sleep(120)\n"
    )
    server = ServerConfig(name="mute", type="stdio", source="test", command=sys.executable, args=["-c", code], timeout=45)
    sessions = []
    closer_done = threading.Event()

    def closer():
        assert wait_for(lambda: sessions and sessions[0].transport.process is not None and pidfile.exists(), timeout=20)
        sessions[0].close()
        closer_done.set()

    threading.Thread(target=closer, daemon=True).start()
    with pytest.raises(ConnectionClosed):  # not RequestTimeout after the 45 s connect timeout
        open_session(server, on_session=sessions.append)
    assert closer_done.wait(30)
    proc = sessions[0].transport.process
    assert proc.poll() is not None  # reaped
    child = int(pidfile.read_text())
    assert wait_for(lambda: not pid_alive(child) and not _group_members(proc.pid), timeout=10)


def test_a_session_closed_before_it_starts_spawns_nothing():
    cmd = stdio_command()
    server = ServerConfig(name="f", type="stdio", source="test", command=cmd[0], args=cmd[1:])
    sessions = []
    with pytest.raises(ConnectionClosed):
        open_session(server, on_session=lambda s: (sessions.append(s), s.close()))
    assert sessions[0].transport.process is None


# -- cancellation wakes the waiting request; nothing polls -----------------------------------------


class CountingCancel(Cancel):
    def __init__(self):
        super().__init__()
        self.checks = 0

    def is_set(self):
        self.checks += 1
        return super().is_set()


@pytest.mark.timeout(30)
def test_cancel_wakes_the_request_without_polling_the_flag():
    cmd = stdio_command()
    server = ServerConfig(name="f", type="stdio", source="test", command=cmd[0], args=cmd[1:])
    with open_session(server) as session:
        cancel = CountingCancel()
        threading.Timer(1.0, cancel.set).start()
        with pytest.raises(RequestCancelled):
            session.call_tool("hang", timeout=20, cancel=cancel)
        assert cancel.checks <= 5, cancel.checks  # polling every 50 ms would check ~20 times a second


def test_set_log_level_is_gone():
    from toolscript.mcp.client.session import ClientSession

    assert not hasattr(ClientSession, "set_log_level")
