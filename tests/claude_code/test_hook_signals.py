"""A hook stopped by SIGTERM answers with what it has, without touching a lock in the signal handler.

The handler runs between two bytecodes of the main thread, which may be in
the middle of a locked write: here the hooks log is a FIFO nobody reads, so
the main thread is stuck inside a log write when the signal comes.  A
handler that logs (or prints) re-enters that write: Python answers with a
"reentrant call" RuntimeError traceback on the hook's stderr.
"""

import array
import fcntl
import os
import signal
import subprocess
import sys
import termios
import threading
import time

import pytest

from conftest import REPO_ROOT

PROBE = '''
import logging

def first(event):
    return "partial answer"

def second(event):
    log = logging.getLogger("toolscript.hooks")
    while True:  # fills the log pipe; the next write blocks inside the log stream's lock
        log.warning("x" * 1000)
'''

HOOK = """
import sys
import hookprobe
from toolscript.claude_code import events
events.EVENTS["probe"] = ("SessionStart", (hookprobe.first, hookprobe.second))
sys.exit(events.run_event("probe"))
"""


def _queued(fd):
    count = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, count)
    return count[0]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="FIONREAD on a FIFO, as Linux has it")
@pytest.mark.timeout(60)
def test_sigterm_during_a_blocked_log_write_gives_the_partial_answer_and_a_clean_stderr(tmp_path):
    (tmp_path / "hookprobe.py").write_text(PROBE)
    state = tmp_path / "state"
    state.mkdir()
    fifo = state / "hooks.log"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # before the hook opens it for writing
    env = dict(os.environ, PYTHONPATH=f"{REPO_ROOT}{os.pathsep}{tmp_path}", TOOLSCRIPT_STATE_DIR=str(state))
    env.pop("TOOLSCRIPT_HOOKS_DISABLED", None)
    child = subprocess.Popen([sys.executable, "-c", HOOK], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env, cwd=REPO_ROOT)
    drained = []
    stop = threading.Event()
    try:
        child.stdin.write(b"{}")
        child.stdin.close()
        child.stdin = None
        # Wait until the pipe stops filling: the hook is then blocked in a log write.
        deadline = time.monotonic() + 30
        last = -1
        while time.monotonic() < deadline:
            now = _queued(reader)
            if now == last and now > 0:
                break
            last = now
            time.sleep(0.3)
        assert last > 0, "the hook never wrote its log"
        child.send_signal(signal.SIGTERM)

        def drain():
            while not stop.is_set():
                try:
                    chunk = os.read(reader, 65536)
                except BlockingIOError:
                    time.sleep(0.01)
                    continue
                if not chunk:
                    return
                drained.append(chunk)

        drainer = threading.Thread(target=drain, daemon=True)
        drainer.start()
        out, err = child.communicate(timeout=30)
        drainer.join(10)  # the FIFO ends once the hook has exited
    finally:
        stop.set()
        if child.poll() is None:
            child.kill()
            child.wait(10)
        os.close(reader)
    assert child.returncode == 0
    assert err == b"", err.decode("utf-8", "replace")
    assert out == b'{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "partial answer"}}\n'
    assert b"SessionStart: timeout after" in b"".join(drained)
