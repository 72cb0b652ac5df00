"""Config changes apply live, in a gateway started as a user starts it (``gateway start --detach``).

The files are edited under the running gateway and the commands a user runs
(``list-servers``, ``search``, ``gateway status``, ``doctor``, ``trust``) are
asked what they see; server processes are told apart by a marker in their
arguments.  The gateway checks its files every second: every wait is bounded,
and no duration is asserted.
"""

import json
import os
import sys

import pytest

from conftest import REPO_ROOT, wait_for
from live_config import fixture_entry, marker, server_pids, write_json, write_text
from gateway_processes import toolscript
from toolscript.gateway.client import GatewayClient

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds server processes in /proc"),
              pytest.mark.timeout(240)]

WAIT = 30.0  # seconds: a bound, never asserted as a duration


class Running:
    """A scratch HOME and project, and the gateway of one session started in the project."""

    def __init__(self, tmp_path):
        self.tmp_path = tmp_path
        self.home = os.path.realpath(str(tmp_path / "home"))
        self.project = os.path.realpath(str(tmp_path / "project"))
        for directory in (self.home, self.project, os.path.join(self.project, ".git")):
            os.makedirs(directory, exist_ok=True)
        self.session = f"live-{tmp_path.name}"
        self.env = {"PATH": os.environ["PATH"], "HOME": self.home, "PYTHONPATH": REPO_ROOT,
                    "TOOLSCRIPT_STATE_DIR": str(tmp_path / "state")}
        self.user_file = os.path.join(self.home, ".toolscript.json")
        self.url = None
        self.log = None

    def marker(self, name):
        return marker(self.tmp_path, name)

    def servers(self, *names):
        write_json(self.user_file, {"mcpServers": {name: fixture_entry(self.marker(name)) for name in names}})

    def cli(self, *args):
        return toolscript(*args, "--session", self.session, env=self.env, cwd=self.project)

    def start(self):
        started = self.cli("gateway", "start", "--detach", "--json")
        assert started.returncode == 0, started.stderr
        info = json.loads(started.stdout)
        self.url, self.log = info["url"], info["log"]
        return GatewayClient(self.url, timeout=30)

    def stop(self):
        if self.url is not None:
            self.cli("gateway", "stop")

    def listed(self):
        proc = self.cli("list-servers", "--json")
        assert proc.returncode == 0, proc.stderr
        return {s["name"]: s for s in json.loads(proc.stdout)["servers"]}

    def ready(self, *names):
        assert wait_for(lambda: all(self.listed().get(n, {}).get("state") == "ready" for n in names), WAIT), self.listed()
        return {name: self.pid(name) for name in names}

    def pid(self, name):
        found = wait_for(lambda: server_pids(self.marker(name)), WAIT)
        assert len(found) == 1, found
        return found[0]

    def status(self):
        proc = self.cli("gateway", "status", "--json")
        return proc.returncode, json.loads(proc.stdout)

    def log_text(self):
        with open(self.log, encoding="utf-8", errors="replace") as f:
            return f.read()


@pytest.fixture
def running(tmp_path):
    made = Running(tmp_path)
    try:
        yield made
    finally:
        made.stop()


def test_servers_added_changed_removed_and_a_broken_file_under_a_running_gateway(running):
    running.servers("alpha", "beta")
    running.start()
    before = running.ready("alpha", "beta")

    running.servers("alpha", "beta", "gamma")  # added: served, searched
    running.ready("gamma")
    found = running.cli("search", "echo", "--server", "gamma", "--json")
    assert found.returncode == 0 and [r["id"] for r in json.loads(found.stdout)][:1] == ["gamma__echo"], found.stdout + found.stderr
    gamma = running.pid("gamma")

    entries = {name: fixture_entry(running.marker(name)) for name in ("alpha", "beta", "gamma")}
    entries["beta"]["args"] += ["--tools", "3"]  # changed: only beta reconnects
    write_json(running.user_file, {"mcpServers": entries})
    assert wait_for(lambda: before["beta"] not in server_pids(running.marker("beta")), WAIT), "the old beta still runs"
    assert wait_for(lambda: running.listed()["beta"]["tools"] > running.listed()["alpha"]["tools"], WAIT)
    running.ready("beta")
    assert running.pid("alpha") == before["alpha"] and running.pid("gamma") == gamma

    del entries["gamma"]  # removed: its process ends
    write_json(running.user_file, {"mcpServers": entries})
    assert wait_for(lambda: not server_pids(running.marker("gamma")), WAIT), "gamma still runs"
    assert "gamma" not in running.listed()

    write_text(running.user_file, '{"mcpServers": {\n  "alpha": {"command": "nope"},,\n}}\n')  # broken: the last good stays
    assert wait_for(lambda: running.status()[1]["health"]["configProblem"], WAIT)
    code, report = running.status()
    problem = report["health"]["configProblem"]
    assert code == 1 and problem.startswith(f"{running.user_file}:2:") and "invalid JSON" in problem
    assert "reads it again once it is saved" in report["next"]
    text = running.cli("gateway", "status")
    assert text.returncode == 1 and f"config: {running.user_file}:2:" in text.stdout and "the last good configuration stays in use" in text.stdout
    checks = {c["check"]: c for c in json.loads(running.cli("doctor", "--json", "--no-servers").stdout)}
    assert checks["gateway"]["status"] == "warn" and problem in checks["gateway"]["detail"]
    assert running.listed()["alpha"]["state"] == "ready" and running.pid("alpha") == before["alpha"]

    write_json(running.user_file, {"mcpServers": entries})  # fixed: recovers without a restart
    assert wait_for(lambda: running.status()[0] == 0, WAIT), running.status()
    assert running.status()[1]["health"]["configProblem"] is None
    assert running.pid("alpha") == before["alpha"]

    log = running.log_text()
    assert f"config: {running.user_file} changed: added gamma" in log
    assert f"config: {running.user_file} changed: reconnected beta" in log
    assert f"config: {running.user_file} changed: removed gamma" in log
    assert "the last good configuration stays in use" in log


def test_approving_the_project_file_with_trust_starts_its_servers_and_revoking_stops_them(running):
    running.servers()
    write_json(os.path.join(running.project, ".toolscript.json"), {"mcpServers": {"proj": fixture_entry(running.marker("proj"))}})
    running.start()
    assert running.listed()["proj"]["state"] == "untrusted"
    approved = running.cli("trust", "--yes")
    assert approved.returncode == 0, approved.stderr
    running.ready("proj")
    revoked = running.cli("trust", "--revoke")
    assert revoked.returncode == 0, revoked.stderr
    assert wait_for(lambda: running.listed()["proj"]["state"] == "untrusted", WAIT)
    assert wait_for(lambda: not server_pids(running.marker("proj")), WAIT), "the project's server still runs"


def test_a_server_added_to_claude_codes_file_appears_with_its_source(running):
    running.servers("alpha")
    claude_json = os.path.join(running.home, ".claude.json")
    write_json(claude_json, {"numStartups": 1})
    running.start()
    before = running.ready("alpha")
    write_json(claude_json, {"numStartups": 1, "mcpServers": {"cc": fixture_entry(running.marker("cc"))}})
    listed = wait_for(lambda: running.listed().get("cc"), WAIT)
    assert listed["source"] == "~/.claude.json (user scope)" and listed["lazy"] is True
    assert wait_for(lambda: running.listed()["cc"]["tools"] > 0, WAIT)  # listed once, in the background
    assert running.pid("alpha") == before["alpha"]
