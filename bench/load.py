#!/usr/bin/env python3
"""Load on a real gateway: sequential and concurrent ``/call`` latency, and its memory.

The gateway runs as its own process (``python -m toolscript gateway start
--json``, no upstream servers) on 127.0.0.1; every call is ``POST /call`` of
``builtin__tools.echo``, so the figures are the gateway's HTTP + dispatch cost.
Printed as one JSON document (progress on stderr):

- sequential: 1,000 calls one after another on one kept-open connection;
- concurrent: 200 clients (threads, each with its own kept-open
  ``http.client`` connection) making 20 calls each at once.  A kept-open
  connection the gateway closed meanwhile (its cap evicts idle ones) is
  reconnected once, as the sandbox runtime does; the figures count those
  reconnects, any 503 and any error;
- rss: the gateway's VmRSS and thread count before, after each phase.

    .venv/bin/python bench/load.py [--sequential 1000] [--clients 200] [--calls 20]
"""

import argparse
import http.client
import json
import os
import platform
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from hostile import SOCKET_TIMEOUT, GatewayProcess, proc_status  # noqa: E402  (bench/hostile.py)
from stats import summary  # noqa: E402  (bench/stats.py)


def progress(message):
    print(f"[bench/load] {message}", file=sys.stderr, flush=True)


class Client:
    """One kept-open connection; reconnects once when the gateway closed it meanwhile."""

    def __init__(self, gateway):
        self.gateway = gateway
        self.conn = None
        self.reconnects = 0
        self.body = json.dumps({"tool": "builtin__tools.echo", "arguments": {"text": "hello", "n": 1}}).encode()

    def call(self):
        """(ms, status) of one call."""
        started = time.perf_counter()
        for attempt in (1, 2):
            fresh = self.conn is None
            if fresh:
                self.conn = http.client.HTTPConnection(self.gateway.host, self.gateway.port, timeout=SOCKET_TIMEOUT)
            try:
                self.conn.request("POST", self.gateway.prefix + "/call", body=self.body, headers={"Content-Type": "application/json"})
                response = self.conn.getresponse()
                response.read()
            except (ConnectionError, http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = None
                if fresh or attempt == 2:
                    raise
                self.reconnects += 1
                continue
            if response.getheader("Connection", "").lower() == "close":
                self.conn.close()
                self.conn = None
            return (time.perf_counter() - started) * 1000, response.status
        raise AssertionError("unreachable")

    def close(self):
        if self.conn is not None:
            self.conn.close()


def sequential(gateway, count):
    client = Client(gateway)
    try:
        for _ in range(20):
            client.call()  # warm-up
        samples, statuses = [], {}
        for _ in range(count):
            elapsed, status = client.call()
            samples.append(elapsed)
            statuses[status] = statuses.get(status, 0) + 1
    finally:
        client.close()
    return dict(summary(samples), statuses=statuses, reconnects=client.reconnects)


def concurrent(gateway, clients, calls):
    samples, statuses, errors, reconnects = [], {}, [], [0]
    lock = threading.Lock()
    start = threading.Barrier(clients)

    def run():
        client = Client(gateway)
        mine, my_statuses = [], {}
        try:
            start.wait(30)
            for _ in range(calls):
                try:
                    elapsed, status = client.call()
                except Exception as exc:  # noqa: BLE001 - counted, the run goes on
                    with lock:
                        errors.append(type(exc).__name__)
                    continue
                mine.append(elapsed)
                my_statuses[status] = my_statuses.get(status, 0) + 1
        finally:
            client.close()
            with lock:
                samples.extend(mine)
                for status, n in my_statuses.items():
                    statuses[status] = statuses.get(status, 0) + n
                reconnects[0] += client.reconnects

    threads = [threading.Thread(target=run, daemon=True) for _ in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    wall = time.perf_counter() - started
    error_counts = {name: errors.count(name) for name in set(errors)}
    return dict(
        summary(samples),
        clients=clients,
        calls_each=calls,
        wall_s=round(wall, 2),
        calls_per_s=round(len(samples) / wall, 1),
        statuses=statuses,
        reconnects=reconnects[0],
        errors=error_counts,
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sequential", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args(argv)
    gateway = GatewayProcess()
    try:
        memory = {"start": proc_status(gateway.pid)}
        progress(f"{args.sequential} sequential calls")
        seq = sequential(gateway, args.sequential)
        memory["after_sequential"] = proc_status(gateway.pid)
        progress(f"{args.clients} clients x {args.calls} calls")
        conc = concurrent(gateway, args.clients, args.calls)
        memory["after_concurrent"] = proc_status(gateway.pid)
        time.sleep(1.0)
        memory["1s_later"] = proc_status(gateway.pid)
    finally:
        gateway.stop()
    results = {
        "benchmark": "load",
        "tool": "builtin__tools.echo via POST /call",
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus",
        "sequential": seq,
        "concurrent": conc,
        "gateway": {name: {"rss_kib": rss, "threads": threads} for name, (rss, threads) in memory.items()},
    }
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
