"""How CLI commands find a gateway and read its answers, and what they say when there is none."""

import json
import os
import subprocess
import sys
import threading

import pytest

import peers
from conftest import REPO_ROOT
from gateway_processes import toolscript


def test_client_commands_without_a_gateway_say_how_to_start_one(tmp_path):
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": REPO_ROOT, "TOOLSCRIPT_STATE_DIR": str(tmp_path / "state")}
    listed = toolscript("list-servers", env=env, cwd=tmp_path)
    assert listed.returncode == 1 and "toolscript gateway start --detach" in listed.stderr
    assert len(listed.stderr.strip().splitlines()) == 1
    # Built-ins still work in-process.
    now = toolscript("tools", "invoke", "time.now", env=env, cwd=tmp_path)
    assert now.returncode == 0 and json.loads(now.stdout)["meta"]["tool"] == "time.now"
    mcp_tool = toolscript("tools", "invoke", "github__search", env=env, cwd=tmp_path)
    assert mcp_tool.returncode == 1 and "needs the gateway" in mcp_tool.stderr
    dead = dict(env, TOOLSCRIPT_GATEWAY_URL=f"http://127.0.0.1:{peers.free_port()}/t/abc")
    unreachable = toolscript("list-servers", env=dead, cwd=tmp_path)
    assert unreachable.returncode == 1 and "not reachable" in unreachable.stderr


def _one_answer_server(answer: bytes):
    """A loopback listener that answers one connection with ``answer`` and hangs up; its port."""
    import socket as socket_module

    listener = socket_module.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def serve():
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(answer)
        listener.close()

    threading.Thread(target=serve, daemon=True).start()
    return listener.getsockname()[1]


@pytest.mark.parametrize(
    "answer, words",
    [
        (b"SSH-2.0-OpenSSH_9.2\r\n", "malformed answer"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"ok\": 1}", "ended early"),
    ],
    ids=["not-http", "cut-short"],
)
def test_the_gateway_client_says_when_an_answer_is_not_a_gateways(answer, words):
    from toolscript.gateway.client import GatewayClient, GatewayUnavailable

    port = _one_answer_server(answer)
    with pytest.raises(GatewayUnavailable) as caught:
        GatewayClient(f"http://127.0.0.1:{port}/t/secret-token", timeout=10).get("/health")
    assert words in str(caught.value) and "secret-token" not in str(caught.value)


def test_the_gateway_client_stops_reading_at_its_cap_and_names_it(monkeypatch):
    from toolscript.gateway import client

    monkeypatch.setattr(client, "MAX_RESPONSE_BYTES", 1024)
    port = _one_answer_server(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + b"[" + b"1," * 4096 + b"1]")
    with pytest.raises(client.GatewayUnavailable) as caught:
        client.GatewayClient(f"http://127.0.0.1:{port}/t/secret-token", timeout=10).get("/tools")
    assert "larger than the 1 KiB limit" in str(caught.value) and "secret-token" not in str(caught.value)


def test_the_gateway_client_reads_status_and_body_and_imports_no_http_client():
    from toolscript.gateway.client import GatewayClient, GatewayHttpError

    port = _one_answer_server(b"HTTP/1.1 404 Not Found\r\nContent-Length: 24\r\nContent-Type: application/json\r\n\r\n{\"error\": \"no such one\"}")
    with pytest.raises(GatewayHttpError) as caught:
        GatewayClient(f"http://127.0.0.1:{port}/t/x", timeout=10).get("/tools")
    assert caught.value.status == 404 and caught.value.payload == {"error": "no such one"}
    # http.client (with email and ssl) costs ~20 ms to import on every command that talks to the gateway.
    probe = f"import sys; sys.path.insert(0, {REPO_ROOT!r}); import toolscript.gateway.client; print(sorted(m for m in ('http.client', 'ssl', 'email.parser') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-I", "-S", "-c", probe], capture_output=True, text=True, timeout=60, cwd=REPO_ROOT)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr
