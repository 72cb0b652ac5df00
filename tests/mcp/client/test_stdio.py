"""The stdio transport's close: a server that never finished its handshake gets no grace; the grace is a parameter."""

import signal
import sys
import time

import pytest

from toolscript.mcp.client.stdio import StdioTransport


STUBBORN = "import signal, sys, time\nsys.stdin.read()\ntime.sleep(120)\n"  # ignores stdin EOF; SIGTERM ends it


@pytest.mark.timeout(60)
def test_close_does_not_wait_the_grace_for_a_server_that_never_initialized():
    transport = StdioTransport(sys.executable, ["-c", STUBBORN], close_grace=30)
    transport.start(lambda m, related=None: None, lambda e: None, lambda i, e: None)
    started = time.monotonic()
    transport.close()
    assert time.monotonic() - started < 10  # waiting the 30 s grace would fail this
    assert transport.process.returncode == -signal.SIGTERM


@pytest.mark.timeout(60)
def test_close_grace_is_a_parameter():
    transport = StdioTransport(sys.executable, ["-c", STUBBORN], close_grace=0.2)
    transport.start(lambda m, related=None: None, lambda e: None, lambda i, e: None)
    transport.initialized()
    transport.close()  # stdin EOF is ignored: SIGTERM after 0.2 s instead of the default 2 s
    assert transport.process.returncode == -signal.SIGTERM
