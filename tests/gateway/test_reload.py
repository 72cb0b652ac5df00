"""Config changes apply live: a running Gateway follows its config files.

Each test serves a Gateway from this process over a scratch HOME, project
directory and state directory, with its ``ConfigWatcher`` polling every 50 ms
(the gateway's own interval is a second), and real stdio fixture servers whose
processes are told apart by a marker in their arguments.  The rule that turns a
burst of writes into one reload is tested on its own, without a clock.
"""

import json
import os
import sys

import pytest

from conftest import REPO_ROOT, run_cli, wait_for
from live_config import fixture_entry, marker, server_pids, write_json, write_text
from toolscript.config.load import load_config
from toolscript.gateway import reload
from toolscript.gateway.reload import Changes, ConfigWatcher, Settle, diff_servers
from toolscript.gateway.service import Gateway
from toolscript.gateway.upstream import IDLE, LazyUpstream

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds server processes in /proc")

WAIT = 20.0  # seconds: generous bounds, never asserted as a duration


class Scene:
    """A scratch HOME (with ~/.toolscript.json), a project directory, a state directory, and a live gateway over them."""

    def __init__(self, tmp_path):
        self.tmp_path = tmp_path
        self.home = os.path.realpath(str(tmp_path / "home"))
        self.project = os.path.realpath(str(tmp_path / "project"))
        for directory in (self.home, self.project, os.path.join(self.project, ".git")):
            os.makedirs(directory, exist_ok=True)
        self.env = {"HOME": self.home, "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                    "TOOLSCRIPT_STATE_DIR": str(tmp_path / "state")}
        self.user_file = os.path.join(self.home, ".toolscript.json")
        self.project_file = os.path.join(self.project, ".toolscript.json")
        self.claude_json = os.path.join(self.home, ".claude.json")
        self.gateway = None

    def marker(self, name):
        return marker(self.tmp_path, name)

    def servers(self, *names, **settings):
        """Write ~/.toolscript.json with a fixture server per name (each named after its marker) and ``settings``."""
        write_json(self.user_file, dict({"mcpServers": {name: fixture_entry(self.marker(name)) for name in names}}, **settings))

    def start(self):
        watcher = ConfigWatcher(None, self.project, self.env, poll=0.05, quiet=0.1)
        self.gateway = Gateway(load_config(cwd=self.project, environ=self.env), workspace=self.project)
        self.gateway.start()
        self.gateway.watch(watcher)
        return self.gateway

    def stop(self):
        if self.gateway is not None:
            self.gateway.stop()

    def ready(self, *names):
        """Wait until every named server is ready; return {name: its one pid}."""
        def all_ready():
            upstreams = self.gateway.upstreams
            return all(name in upstreams and upstreams[name].state == "ready" for name in names)

        assert wait_for(all_ready, WAIT), {u.name: (u.state, u.error) for u in self.gateway.upstreams.values()}
        return {name: self.pids(name) for name in names}

    def pids(self, name):
        found = wait_for(lambda: server_pids(self.marker(name)), WAIT)
        assert len(found) == 1, found
        return found[0]

    def tool_ids(self):
        return {entry.id for entry in self.gateway.catalog.entries()}

    def cli(self, *args):
        return run_cli(*args, env=dict(self.env, PYTHONPATH=REPO_ROOT), cwd=self.project)


@pytest.fixture
def scene(tmp_path):
    made = Scene(tmp_path)
    try:
        yield made
    finally:
        made.stop()


def test_a_server_added_to_the_file_is_served_searched_and_stubbed_and_the_others_keep_running(scene):
    scene.servers("alpha")
    gateway = scene.start()
    before = scene.ready("alpha")
    scene.servers("alpha", "beta")
    scene.ready("beta")
    assert wait_for(lambda: "beta__echo" in scene.tool_ids(), WAIT)
    hits = wait_for(lambda: [h["id"] for h in gateway.derived.search("echo", limit=10, threshold=0.0, servers=["beta"])], WAIT)
    assert "beta__echo" in hits
    assert "def echo(" in gateway.derived.types(lang="python", selection=["beta"])["code"]
    assert scene.pids("alpha") == before["alpha"]  # untouched


def test_a_changed_server_alone_reconnects_and_its_old_process_ends(scene):
    scene.servers("alpha", "beta")
    gateway = scene.start()
    before = scene.ready("alpha", "beta")
    entries = {name: fixture_entry(scene.marker(name)) for name in ("alpha", "beta")}
    entries["beta"]["env"] = {"FIXTURE_SETTING": "changed"}
    write_json(scene.user_file, {"mcpServers": entries})
    assert wait_for(lambda: before["beta"] not in server_pids(scene.marker("beta")), WAIT), "the old copy of beta still runs"
    after = scene.ready("beta")
    assert after["beta"] != before["beta"]
    assert gateway.upstreams["beta"].server.env == {"FIXTURE_SETTING": "changed"}
    assert scene.pids("alpha") == before["alpha"]
    assert gateway.upstreams["alpha"].restarts == 0


def test_a_removed_server_stops_and_its_tools_leave_the_catalog(scene):
    scene.servers("alpha", "beta")
    gateway = scene.start()
    before = scene.ready("alpha", "beta")
    scene.servers("alpha")
    assert wait_for(lambda: not server_pids(scene.marker("beta")), WAIT), "beta still runs"
    assert "beta" not in gateway.upstreams
    assert wait_for(lambda: not any(i.startswith("beta__") for i in scene.tool_ids()), WAIT)
    assert "beta" not in gateway.health()["servers"]
    assert scene.pids("alpha") == before["alpha"]


def test_a_file_that_stops_parsing_keeps_the_last_good_configuration_until_it_is_fixed(scene):
    scene.servers("alpha")
    gateway = scene.start()
    before = scene.ready("alpha")
    write_text(scene.user_file, '{"mcpServers": {\n  "alpha": {"command": "x",}\n}}\n')
    problem = wait_for(lambda: gateway.health()["configProblem"], WAIT)
    assert problem.startswith(f"{scene.user_file}:2:") and "invalid JSON" in problem
    assert gateway.upstreams["alpha"].state == "ready" and scene.pids("alpha") == before["alpha"]
    assert "alpha__echo" in scene.tool_ids()
    scene.servers("alpha", "beta")  # fixed, and a server more
    assert wait_for(lambda: gateway.health()["configProblem"] is None, WAIT)
    scene.ready("beta")
    assert scene.pids("alpha") == before["alpha"]


def test_a_server_entry_that_fails_validation_keeps_the_last_good_configuration(scene):
    scene.servers("alpha")
    gateway = scene.start()
    scene.ready("alpha")
    write_json(scene.user_file, {"mcpServers": {"alpha": {"command": 42}}})
    problem = wait_for(lambda: gateway.health()["configProblem"], WAIT)
    assert "mcpServers.alpha.command" in problem
    assert gateway.upstreams["alpha"].server.command == sys.executable


def test_approving_the_project_file_starts_its_servers_and_revoking_stops_them(scene):
    scene.servers()
    write_json(scene.project_file, {"mcpServers": {"proj": fixture_entry(scene.marker("proj"))}})
    gateway = scene.start()
    assert gateway.health()["untrusted"] == ["proj"] and "proj" not in gateway.upstreams
    approved = scene.cli("trust", "--yes")
    assert approved.returncode == 0, approved.stderr
    scene.ready("proj")
    assert gateway.health()["untrusted"] == []
    revoked = scene.cli("trust", "--revoke")
    assert revoked.returncode == 0, revoked.stderr
    assert wait_for(lambda: not server_pids(scene.marker("proj")), WAIT), "the project's server still runs"
    assert gateway.health()["untrusted"] == ["proj"] and "proj" not in gateway.upstreams


def test_an_edit_of_an_approved_project_file_stops_its_servers_until_approved_again(scene):
    scene.servers()
    write_json(scene.project_file, {"mcpServers": {"proj": fixture_entry(scene.marker("proj"))}})
    assert scene.cli("trust", "--yes").returncode == 0
    gateway = scene.start()
    scene.ready("proj")
    write_json(scene.project_file, {"mcpServers": {"proj": fixture_entry(scene.marker("proj")),
                                                   "extra": fixture_entry(scene.marker("extra"))}})
    assert wait_for(lambda: not server_pids(scene.marker("proj")), WAIT), "a server of the edited file still runs"
    assert gateway.health()["untrusted"] == ["extra", "proj"] and not server_pids(scene.marker("extra"))
    assert "changed since it was approved" in gateway.servers(wait=False)["servers"][-1]["error"]


def test_a_server_added_in_claude_code_is_served_as_claude_codes(scene):
    scene.servers("alpha")
    write_json(scene.claude_json, {"numStartups": 3})
    gateway = scene.start()
    before = scene.ready("alpha")
    write_json(scene.claude_json, {"numStartups": 3, "mcpServers": {"cc": fixture_entry(scene.marker("cc"))}})
    upstream = wait_for(lambda: gateway.upstreams.get("cc"), WAIT)
    assert isinstance(upstream, LazyUpstream)
    assert upstream.describe()["source"] == "~/.claude.json (user scope)"
    # Listed once (a few seconds after it appeared, as Claude Code's own copy comes first), then released.
    assert wait_for(lambda: "cc__echo" in scene.tool_ids(), WAIT + 5)
    assert wait_for(lambda: upstream.state == IDLE, WAIT)
    assert scene.pids("alpha") == before["alpha"]


def test_a_project_server_approved_in_claude_codes_settings_is_served_and_rejecting_it_stops_it(scene):
    scene.servers()
    write_json(os.path.join(scene.project, ".mcp.json"), {"mcpServers": {"shared": fixture_entry(scene.marker("shared"))}})
    settings = os.path.join(scene.home, ".claude", "settings.json")
    gateway = scene.start()
    assert gateway.health()["untrusted"] == ["shared"]
    write_json(settings, {"enabledMcpjsonServers": ["shared"]})
    upstream = wait_for(lambda: gateway.upstreams.get("shared"), WAIT)
    assert upstream.describe()["source"] == ".mcp.json (project scope, approved in ~/.claude/settings.json)"
    assert gateway.health()["untrusted"] == []
    write_json(settings, {"disabledMcpjsonServers": ["shared"]})
    assert wait_for(lambda: "shared" not in gateway.upstreams, WAIT)
    assert gateway.health()["untrusted"] == []  # rejected in Claude Code: off, not awaiting approval


def test_claude_code_rewriting_its_file_without_touching_servers_changes_nothing(scene):
    write_json(scene.claude_json, {"numStartups": 1, "mcpServers": {"cc": fixture_entry(scene.marker("cc"))}})
    scene.servers("alpha")
    gateway = scene.start()
    before = scene.ready("alpha")
    upstream = gateway.upstreams["cc"]
    reloads = gateway.config_reloads
    write_json(scene.claude_json, {"numStartups": 2, "tipsHistory": {"x": 1}, "mcpServers": {"cc": fixture_entry(scene.marker("cc"))}})
    assert wait_for(lambda: gateway.config_reloads > reloads, WAIT)
    assert gateway.upstreams["cc"] is upstream and scene.pids("alpha") == before["alpha"]


def test_a_broken_claude_json_keeps_its_servers_until_it_parses_again(scene, caplog):
    write_json(scene.claude_json, {"mcpServers": {"cc": fixture_entry(scene.marker("cc"))}})
    scene.servers()
    gateway = scene.start()
    upstream = gateway.upstreams["cc"]
    write_text(scene.claude_json, '{"mcpServers": {"cc": ')
    problem = wait_for(lambda: gateway.health()["configProblem"], WAIT)
    assert problem.startswith(f"{scene.claude_json}:1:") and "Claude Code's file" in problem
    assert gateway.upstreams["cc"] is upstream
    with caplog.at_level("WARNING", logger="toolscript.gateway.reload"):
        scene.servers("alpha")  # another file changes meanwhile: still the problem, still the last good configuration
        assert wait_for(lambda: any(r.getMessage().startswith(f"config: {scene.user_file} changed but cannot be used: {problem}")
                                    for r in caplog.records), WAIT)
    assert gateway.health()["configProblem"] == problem
    assert gateway.upstreams["cc"] is upstream and "alpha" not in gateway.upstreams
    write_json(scene.claude_json, {"mcpServers": {}})
    assert wait_for(lambda: gateway.health()["configProblem"] is None and "cc" not in gateway.upstreams, WAIT)
    scene.ready("alpha")


def test_builtin_tools_apply_live_and_mcp_tool_names_waits_for_a_restart(scene):
    scene.servers("alpha")
    gateway = scene.start()
    assert "builtin__fs.read_file" in scene.tool_ids()
    scene.servers("alpha", builtinTools=["time.now"], mcpToolNames="plain")
    assert wait_for(lambda: "builtin__fs.read_file" not in scene.tool_ids(), WAIT)
    assert "builtin__time.now" in scene.tool_ids()
    assert gateway.health()["restartToApply"] == ["mcpToolNames"]
    scene.servers("alpha", builtinTools=["time.now"])  # back to the value it started with
    assert wait_for(lambda: gateway.health()["restartToApply"] == [], WAIT)


def test_workspace_roots_apply_live(scene, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "note.txt").write_text("found")
    scene.servers()
    gateway = scene.start()
    arguments = {"path": str(elsewhere / "note.txt")}
    assert gateway.call("builtin__fs.read_file", arguments, source="test").ok is False
    scene.servers(workspaceRoots=[str(elsewhere)])
    assert wait_for(lambda: gateway.call("builtin__fs.read_file", arguments, source="test").ok, WAIT)
    assert gateway.context.workspace_roots[0] == scene.project


def test_a_stopped_gateway_applies_nothing_and_leaves_no_server(scene):
    scene.servers("alpha")
    gateway = scene.start()
    scene.ready("alpha")
    gateway.stop()
    config = load_config(cwd=scene.project, environ=dict(scene.env))
    assert not gateway.apply_config(config)
    assert wait_for(lambda: not server_pids(scene.marker("alpha")), WAIT)


# -- the parts, without a gateway ---------------------------------------------------------------


def test_reading_the_same_files_twice_gives_equal_servers(scene):
    """Nothing in a server's entry differs from one reading to the next: a reload of unchanged files restarts nothing."""
    scene.servers("alpha")
    write_json(scene.claude_json, {"mcpServers": {"cc": fixture_entry(scene.marker("cc"))}, "projects": {
        scene.project: {"mcpServers": {"local": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"A": "${HOME}"}}}}}})
    write_json(os.path.join(scene.project, ".mcp.json"), {"mcpServers": {"shared": fixture_entry(scene.marker("shared"))}})
    write_json(os.path.join(scene.home, ".claude", "settings.json"), {"enableAllProjectMcpServers": True})
    first = load_config(cwd=scene.project, environ=scene.env)
    second = load_config(cwd=scene.project, environ=dict(scene.env))
    assert sorted(first.servers) == ["alpha", "cc", "local", "shared"]
    assert not diff_servers(first.servers, second.servers)


def test_diff_names_added_changed_and_removed_servers():
    from toolscript.config.load import ServerConfig

    def server(name, *args):
        return ServerConfig(name=name, type="stdio", source="f", command="x", args=list(args))

    old = {"same": server("same"), "edited": server("edited", "1"), "gone": server("gone")}
    new = {"same": server("same"), "edited": server("edited", "2"), "fresh": server("fresh")}
    changes = diff_servers(old, new)
    assert (changes.added, changes.changed, changes.removed) == (["fresh"], ["edited"], ["gone"])
    assert changes.describe() == "added fresh; reconnected edited; removed gone"
    assert not Changes() and Changes().describe() == "no server or setting changed"


def test_the_watched_files_include_those_that_do_not_exist_yet(scene):
    files = reload.watched_files(None, scene.project, scene.env)
    for path in (scene.user_file, scene.project_file, scene.claude_json, os.path.join(scene.project, ".mcp.json"),
                 os.path.join(os.path.dirname(scene.project), ".mcp.json"), os.path.join(scene.home, ".claude", "settings.json"),
                 os.path.join(scene.project, ".claude", "settings.local.json"),
                 os.path.join(scene.env["TOOLSCRIPT_STATE_DIR"], "trusted-configs.json")):
        assert path in files and not os.path.exists(path)
    named = reload.watched_files([str(scene.tmp_path / "a.json")], scene.project, scene.env)
    assert str(scene.tmp_path / "a.json") in named and scene.user_file not in named


def test_a_burst_of_writes_is_one_reload_once_the_files_are_quiet():
    settle = Settle({"f": 1}, quiet=0.3, longest=5.0)
    assert not settle.due({"f": 1}, 0.0)
    assert not settle.pending
    # Three writes, each seen before the previous one went quiet: none is due.
    for at, version in ((1.0, 2), (1.2, 3), (1.4, 4)):
        assert not settle.due({"f": version}, at)
        assert settle.pending
    assert not settle.due({"f": 4}, 1.6)
    assert settle.due({"f": 4}, 1.7)  # quiet for 0.3 s: one reload
    settle.reloaded({"f": 4})
    assert not settle.pending and not settle.due({"f": 4}, 9.0)


def test_files_that_keep_changing_are_reloaded_after_the_longest_wait_and_a_change_undone_is_none():
    settle = Settle({"f": 0}, quiet=0.3, longest=2.0)
    due = [settle.due({"f": version}, version * 0.25) for version in range(1, 10)]
    assert due.index(True) == 8  # the first change at 0.25 s, due at 2.25 s although it never went quiet
    settle = Settle({"f": 0}, quiet=0.3, longest=2.0)
    assert not settle.due({"f": 1}, 1.0)
    assert not settle.due({"f": 0}, 1.1) and not settle.pending  # written back as it was
    assert not settle.due({"f": 0}, 5.0)


def test_a_reload_is_logged_with_the_file_and_what_changed(scene, caplog):
    scene.servers("alpha")
    scene.start()
    scene.ready("alpha")
    with caplog.at_level("INFO", logger="toolscript.gateway.reload"):
        scene.servers("alpha", "beta")
        scene.ready("beta")
        assert wait_for(lambda: any("added beta" in r.getMessage() for r in caplog.records), WAIT)
    line = next(r.getMessage() for r in caplog.records if "added beta" in r.getMessage())
    assert line == f"config: {scene.user_file} changed: added beta"


def test_a_problem_is_logged_once_per_change(scene, caplog):
    scene.servers("alpha")
    gateway = scene.start()
    with caplog.at_level("WARNING", logger="toolscript.gateway.reload"):
        write_text(scene.user_file, "{")
        assert wait_for(lambda: gateway.health()["configProblem"], WAIT)
        messages = [r.getMessage() for r in caplog.records if r.name == "toolscript.gateway.reload"]
    assert len(messages) == 1 and "the last good configuration stays in use" in messages[0]
    assert json.loads(json.dumps(gateway.health()))["configProblem"].startswith(scene.user_file + ":1:2:")


def test_status_and_doctor_name_a_key_that_waits_for_a_restart(tmp_path):
    from gateway_http import served

    env = dict(os.environ, HOME=str(tmp_path), TOOLSCRIPT_STATE_DIR=str(tmp_path / "state"))
    with served(tmp_path) as (gateway, _server, url):
        gateway.restart_to_apply = ["mcpToolNames"]
        status = run_cli("--gateway-url", url, "gateway", "status", env=env, cwd=str(tmp_path))
        assert status.returncode == 0, status.stdout + status.stderr
        assert "restart to apply: mcpToolNames (the other changes are applied)" in status.stdout
        checks = {c["check"]: c for c in json.loads(run_cli("--gateway-url", url, "doctor", "--json", "--no-servers",
                                                             env=env, cwd=str(tmp_path)).stdout)}
        assert checks["gateway"]["status"] == "warn" and "changed mcpToolNames" in checks["gateway"]["detail"]
        assert "gateway stop" in checks["gateway"]["fix"]
