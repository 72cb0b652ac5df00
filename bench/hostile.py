#!/usr/bin/env python3
"""Hostile input against a real gateway: how fast it refuses, and what it costs.

The gateway runs as its own process (``python -m toolscript gateway start
--json``, no upstream servers: the built-in tools suffice) on 127.0.0.1, in a
private temp HOME.  Figures, printed as one JSON document (progress on stderr):

- body: time from sending a request head until the refusal arrives, while the
  client keeps sending body bytes, for ``Content-Length: -1`` without and with
  the token, a repeated Content-Length, and a declared 17 MiB body (over the
  16 MiB limit); the gateway's RSS before and after;
- headers: status and time for 99, 100 and 1,000 headers, a 1 MB header line
  and a 1 MB request line (http.server's own limits: 99 headers, as it counts
  the blank line too, and 64 KiB per line);
- idle: 2,000 connections opened and left idle (the cap is 256): the gateway's
  RSS and thread count before and while they are held, how many of them the
  gateway closed to stay under its cap, and the latency of a legitimate
  ``/call`` of ``builtin__time.now`` (a fresh connection each) meanwhile.

Bounded: every socket has a timeout; the whole run takes well under a minute.

    .venv/bin/python bench/hostile.py [--idle 2000] [--rounds 20]
"""

import argparse
import http.client
import json
import os
import platform
import select
import socket
import sys
import threading
import time
from urllib.parse import urlsplit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from stats import summary  # noqa: E402  (bench/stats.py)
import gateway as gateway_bench  # noqa: E402  (bench/gateway.py: starts and stops a gateway process)

SOCKET_TIMEOUT = 10.0


def progress(message):
    print(f"[bench/hostile] {message}", file=sys.stderr, flush=True)


def proc_status(pid):
    """(VmRSS KiB, thread count) of a process, or (None, None) when it is gone."""
    rss = threads = None
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("Threads:"):
                    threads = int(line.split()[1])
    except OSError:
        pass
    return rss, threads


class GatewayProcess(gateway_bench.GatewayProcess):
    """bench/gateway.py's gateway process with no servers, started at once, with raw-socket helpers."""

    def __init__(self):
        super().__init__({})
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        parts = urlsplit(self.url)
        self.host, self.port, self.prefix = parts.hostname, parts.port, parts.path

    @property
    def pid(self):
        return self.proc.pid

    def call_ms(self, tool="builtin__time.now", arguments=None):
        """One /call on a fresh connection: (ms, HTTP status)."""
        body = json.dumps({"tool": tool, "arguments": arguments or {}}).encode()
        started = time.perf_counter()
        conn = http.client.HTTPConnection(self.host, self.port, timeout=SOCKET_TIMEOUT)
        try:
            conn.request("POST", self.prefix + "/call", body=body, headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            response.read()
            return (time.perf_counter() - started) * 1000, response.status
        finally:
            conn.close()


def refusal(gateway, head, keep_sending=True):
    """Send ``head`` (and body bytes after it, nonstop); (ms until the answer's head arrived, status, closed)."""
    sock = socket.create_connection((gateway.host, gateway.port), timeout=SOCKET_TIMEOUT)
    stop = threading.Event()

    def send_forever():
        chunk = b"x" * 16384
        while not stop.is_set():
            try:
                sock.sendall(chunk)
            except OSError:
                return

    started = time.perf_counter()
    sender = None
    try:
        sock.sendall(head)
        if keep_sending:
            sender = threading.Thread(target=send_forever, daemon=True)
            sender.start()
        data = b""
        elapsed = None
        closed = False
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                closed = True
                break
            except socket.timeout:
                break
            if not chunk:
                closed = True
                break
            data += chunk
            if elapsed is None and b"\r\n\r\n" in data:
                elapsed = (time.perf_counter() - started) * 1000
        status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else None
        return elapsed, status, closed
    finally:
        stop.set()
        if sender is not None:
            sender.join(SOCKET_TIMEOUT)
        sock.close()


def measure_refusals(gateway, name, head, rounds):
    times, statuses, closed_all = [], set(), True
    for _ in range(rounds):
        elapsed, status, closed = refusal(gateway, head)
        if elapsed is not None:
            times.append(elapsed)
        statuses.add(status)
        closed_all = closed_all and closed
    progress(f"{name}: {sorted(s for s in statuses if s is not None)}")
    result = {"status": sorted(s for s in statuses if s is not None), "connection_closed": closed_all}
    result.update(summary(times) if times else {"n": 0})
    return result


def body_figures(gateway, rounds):
    host = f"Host: {gateway.host}:{gateway.port}\r\n"
    heads = {
        "content_length_-1_no_token": f"POST /call HTTP/1.1\r\n{host}Content-Length: -1\r\n\r\n",
        "content_length_-1_with_token": f"POST {gateway.prefix}/call HTTP/1.1\r\n{host}Content-Length: -1\r\n\r\n",
        "content_length_repeated": f"POST {gateway.prefix}/call HTTP/1.1\r\n{host}Content-Length: 5\r\nContent-Length: 5\r\n\r\n",
        "content_length_17MiB": f"POST {gateway.prefix}/call HTTP/1.1\r\n{host}Content-Length: {17 * 1024 * 1024}\r\n\r\n",
        "valid_1MB_body_no_token": f"POST /t/wrong/call HTTP/1.1\r\n{host}Content-Length: 1000000\r\n\r\n",
        "transfer_encoding_chunked": f"POST {gateway.prefix}/call HTTP/1.1\r\n{host}Transfer-Encoding: chunked\r\n\r\n",
    }
    rss_before, _ = proc_status(gateway.pid)
    figures = {name: measure_refusals(gateway, name, head.encode(), rounds) for name, head in heads.items()}
    rss_after, _ = proc_status(gateway.pid)
    figures["rss_kib"] = {"before": rss_before, "after": rss_after}
    return figures


def header_figures(gateway, rounds):
    host = f"Host: {gateway.host}:{gateway.port}\r\n"
    many = "".join(f"X-H{i}: v\r\n" for i in range(1000))
    heads = {
        "1000_headers": f"GET {gateway.prefix}/health HTTP/1.1\r\n{host}{many}\r\n",
        "1MB_header_line": f"GET {gateway.prefix}/health HTTP/1.1\r\n{host}X-Big: {'a' * 1_000_000}\r\n\r\n",
        "1MB_request_line": f"GET {gateway.prefix}/health?{'a' * 1_000_000} HTTP/1.1\r\n{host}\r\n",
        # http.server counts the blank line ending the head too: 99 headers is the most it takes.
        "99_headers": f"GET {gateway.prefix}/health HTTP/1.1\r\n{host}Connection: close\r\n" + "".join(f"X-H{i}: v\r\n" for i in range(97)) + "\r\n",
        "100_headers": f"GET {gateway.prefix}/health HTTP/1.1\r\n{host}Connection: close\r\n" + "".join(f"X-H{i}: v\r\n" for i in range(98)) + "\r\n",
    }
    figures = {}
    for name, head in heads.items():
        times, statuses = [], set()
        for _ in range(rounds):
            elapsed, status, _ = refusal(gateway, head.encode(), keep_sending=False) if name.startswith("9") or name.startswith("100") else refusal(gateway, head.encode())
            if elapsed is not None:
                times.append(elapsed)
            statuses.add(status)
        figures[name] = {"status": sorted(s for s in statuses if s is not None)}
        figures[name].update(summary(times) if times else {"n": 0})
        progress(f"{name}: {figures[name]['status']}")
    return figures


def idle_figures(gateway, count, rounds):
    rss_before, threads_before = proc_status(gateway.pid)
    before = summary([gateway.call_ms()[0] for _ in range(rounds)])
    sockets = []
    started = time.perf_counter()
    for _ in range(count):
        sock = socket.create_connection((gateway.host, gateway.port), timeout=SOCKET_TIMEOUT)
        sockets.append(sock)
    open_ms = (time.perf_counter() - started) * 1000
    progress(f"{count} idle connections open")
    try:
        first_ms, first_status = gateway.call_ms()  # queued behind every connect not yet accepted
        time.sleep(1.0)  # let the gateway accept (and evict) them all
        rss_held, threads_held = proc_status(gateway.pid)
        latencies, statuses = [], set()
        for _ in range(rounds):
            elapsed, status = gateway.call_ms()
            latencies.append(elapsed)
            statuses.add(status)
        # Which of ours did the gateway close to stay under its cap?
        poller = select.poll()  # select() stops at fd 1024
        by_fd = {sock.fileno(): sock for sock in sockets}
        for fd in by_fd:
            poller.register(fd, select.POLLIN)
        closed = 0
        for fd, _ in poller.poll(500):
            sock = by_fd[fd]
            try:
                if sock.recv(1, socket.MSG_PEEK) == b"":
                    closed += 1
            except OSError:
                closed += 1
    finally:
        for sock in sockets:
            sock.close()
    time.sleep(1.0)
    rss_after, threads_after = proc_status(gateway.pid)
    return {
        "connections": count,
        "open_all_ms": round(open_ms, 1),
        "closed_by_gateway": closed,
        "still_open": count - closed,
        "call_before": before,
        "first_call_right_after_opening": {"ms": round(first_ms, 3), "status": first_status},
        "call_while_held": dict(summary(latencies), status=sorted(statuses)),
        "gateway_threads": {"before": threads_before, "held": threads_held, "after_release": threads_after},
        "gateway_rss_kib": {"before": rss_before, "held": rss_held, "after_release": rss_after},
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--idle", type=int, default=2000, help="idle connections to hold")
    parser.add_argument("--rounds", type=int, default=20, help="samples per figure")
    args = parser.parse_args(argv)
    gateway = GatewayProcess()
    try:
        results = {
            "benchmark": "hostile",
            "python": platform.python_version(),
            "machine": f"{platform.machine()}, {os.cpu_count()} cpus",
            "body": body_figures(gateway, args.rounds),
            "headers": header_figures(gateway, args.rounds),
            "idle": idle_figures(gateway, args.idle, args.rounds),
        }
    finally:
        gateway.stop()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
