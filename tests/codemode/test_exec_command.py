"""``toolscript exec`` as a command: ``--require-isolation`` / ``requireIsolation``, ``--workspace``,
what ``-v`` says, doctor's ``exec`` check, and that the script ends with exec.

The kill tests run ``python -m toolscript exec`` as a real process, find the
script among exec's descendants in ``/proc`` (inside a PID namespace the
script itself sees pid 1, so it cannot say), kill exec, and check
that nothing of the script is left and that its temp dir goes.  They run in
every isolation mode this machine offers.
"""

import json
import logging
import os
import signal
import subprocess
import sys

import pytest

from conftest import REPO_ROOT, run_cli, trust_project_file, wait_for
from toolscript.cli import frame as cli
from toolscript.config import load as configuration
from toolscript.config.view import masked_view
from toolscript.cli import doctor
from toolscript.codemode import sandbox
from toolscript.cli.commands import exec as exec_command

LANDLOCK_REPORT = {
    "layer": "landlock", "mode": "landlock(abi 7)+seccomp+namespace(user,mount,pid)+guard", "landlockAbi": 7, "seccomp": True,
    "namespaces": ["user", "mount", "pid"], "bwrap": None, "stops": ["reading files outside the work dir"],
    "gaps": ["stat() of any path", "every tool the gateway exposes", "CPU time up to the limit"],
}


def report(layer, mode=None, gaps=("a gap",)):
    return dict(LANDLOCK_REPORT, layer=layer, mode=mode or f"{layer}+guard", gaps=list(gaps))


def write(path, document):
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return str(path)


@pytest.fixture
def env(tmp_path, clean_env):
    """No config but what a test writes: HOME and cwd of our own, TMPDIR for exec's temp dirs."""
    for name in ("work", "tmp"):
        (tmp_path / name).mkdir()
    return dict(clean_env, TMPDIR=str(tmp_path / "tmp"))  # HOME: clean_env's empty one


# -- the config key --------------------------------------------------------------------------


def test_require_isolation_is_a_validated_top_level_boolean(tmp_path):
    on = write(tmp_path / "on.json", {"requireIsolation": True, "mcpServers": {}})
    config = configuration.load_config([on])
    assert config.require_isolation is True and config.warnings == []
    assert masked_view(config)["requireIsolation"] is True
    assert configuration.load_config([write(tmp_path / "none.json", {"mcpServers": {}})]).require_isolation is False
    # A later file wins, as for the other top-level keys.
    off = write(tmp_path / "off.json", {"requireIsolation": False})
    assert configuration.load_config([on, off]).require_isolation is False
    bad = write(tmp_path / "bad.json", {"requireIsolation": "yes", "mcpServers": {}})
    with pytest.raises(configuration.ConfigError) as caught:
        configuration.load_config([bad])
    assert caught.value.problems == [f"{bad}: requireIsolation: expected true or false, got string"]


def test_config_show_and_validate_know_require_isolation(tmp_path, env):
    path = write(tmp_path / "c.json", {"requireIsolation": True, "mcpServers": {}})
    shown = run_cli("--config", path, "config", "show", "--json", env=env)
    assert shown.returncode == 0 and json.loads(shown.stdout)["requireIsolation"] is True, shown.stderr
    checked = run_cli("--config", path, "config", "validate", env=env)
    assert checked.returncode == 0 and "warning" not in checked.stdout, checked.stdout


@pytest.mark.parametrize(
    "files, named, toolscript_config, expected",
    [
        ({}, None, None, False),
        ({"home/.toolscript.json": {"requireIsolation": True}}, None, None, True),
        ({"home/.toolscript.json": {"requireIsolation": True}, "work/.toolscript.json": {"requireIsolation": False}}, None, None, False),
        ({"home/.toolscript.json": {"requireIsolation": True}, "work/.toolscript.json": {"mcpServers": {}}}, None, None, True),
        ({"a.json": {"requireIsolation": True}, "home/.toolscript.json": {"requireIsolation": False}}, None, "../a.json", True),
        ({"a.json": {"requireIsolation": True}, "b.json": {"requireIsolation": False}}, ["../b.json", "../a.json"], "../b.json", True),
        ({"work/.toolscript.json": {"requireIsolation": False}, "home/.toolscript.json": {"requireIsolation": True}}, ["~/.toolscript.json"], None, True),
    ],
)
def test_exec_reads_require_isolation_as_the_config_loader_does(tmp_path, files, named, toolscript_config, expected):
    """exec reads the one key itself (importing the config module costs ~10 ms): same files, same answer."""
    for name in ("home", "work"):
        (tmp_path / name).mkdir()
    environ = {"HOME": str(tmp_path / "home")}
    for name, document in files.items():
        written = write(tmp_path / name, document)
        if name == "work/.toolscript.json":
            trust_project_file(written, environ)  # the case below shows an unapproved one counts for neither
    if toolscript_config:
        environ["TOOLSCRIPT_CONFIG"] = toolscript_config
    cwd = str(tmp_path / "work")
    assert exec_command._config_requires_isolation(named, cwd, environ) is expected
    if named is not None or toolscript_config:
        # A named file that does not exist is the loader's error; the rest must agree.
        assert configuration.load_config(named, cwd=cwd, environ=environ).require_isolation is expected
    else:
        assert configuration.load_config(None, cwd=cwd, environ=environ).require_isolation is expected


def test_an_unapproved_project_file_cannot_turn_require_isolation_off(tmp_path):
    for name in ("home", "work"):
        (tmp_path / name).mkdir()
    write(tmp_path / "home" / ".toolscript.json", {"requireIsolation": True})
    project = write(tmp_path / "work" / ".toolscript.json", {"requireIsolation": False})
    environ, cwd = {"HOME": str(tmp_path / "home")}, str(tmp_path / "work")
    assert exec_command._config_requires_isolation(None, cwd, environ) is True
    assert configuration.load_config(None, cwd=cwd, environ=environ).require_isolation is True
    trust_project_file(project, environ)
    assert exec_command._config_requires_isolation(None, cwd, environ) is False
    with open(project, "a") as f:
        f.write("\n")  # changed content: approval needed again
    assert exec_command._config_requires_isolation(None, cwd, environ) is True


def test_exec_refuses_a_config_whose_require_isolation_it_cannot_read(tmp_path, env):
    wrong = write(tmp_path / "wrong.json", {"requireIsolation": 1})
    proc = run_cli("--config", wrong, "exec", "print('ran')", env=env, cwd=tmp_path / "work")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"toolscript: error: {wrong}: requireIsolation: expected true or false, got 1; fix it (toolscript config validate)\n"
    broken = write(tmp_path / "broken.json", '{"requireIsolation": true,}')
    proc = run_cli("--config", broken, "exec", "print('ran')", env=env, cwd=tmp_path / "work")
    assert (proc.returncode, proc.stdout) == (2, "") and "not a valid config file, so its 'requireIsolation' cannot be read" in proc.stderr
    assert len(proc.stderr.splitlines()) == 1


def test_exec_ignores_a_broken_config_that_does_not_mention_the_key(tmp_path, env):
    """Only a file naming requireIsolation is parsed: exec needs no valid config otherwise, as before."""
    broken = write(tmp_path / "broken.json", '{"mcpServers": {,}')
    proc = run_cli("--config", broken, "exec", "print('ran')", env=env, cwd=tmp_path / "work")
    assert (proc.returncode, proc.stdout) == (0, "ran\n"), proc.stderr


# -- exec's flags reach sandbox.run (in process, with sandbox.run replaced) -------------------


@pytest.fixture
def fake_sandbox(monkeypatch, tmp_path):
    """sandbox.run and sandbox.isolation_report replaced: record what exec passes."""
    calls = {"run": [], "report": []}

    def fake_run(code, **kwargs):
        calls["run"].append(kwargs)
        return sandbox.ExecResult(0, "fake", False, False, 1)

    def fake_report(gateway=True):
        calls["report"].append(gateway)
        return dict(LANDLOCK_REPORT)

    monkeypatch.setattr(sandbox, "run", fake_run)
    monkeypatch.setattr(sandbox, "isolation_report", fake_report, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("TOOLSCRIPT_CONFIG", raising=False)
    return calls


def test_exec_passes_require_isolation_and_workspace_to_the_sandbox(fake_sandbox, tmp_path):
    assert cli.main(["exec", "print(1)"]) == 0
    assert "require_isolation" not in fake_sandbox["run"][-1] and "workspace" not in fake_sandbox["run"][-1]
    (tmp_path / "ws").mkdir()
    assert cli.main(["exec", "--require-isolation", "--workspace", "ws", "print(1)"]) == 0
    passed = fake_sandbox["run"][-1]
    assert passed["require_isolation"] is True and passed["workspace"] == os.path.realpath(str(tmp_path / "ws"))
    write(tmp_path / ".toolscript.json", {"requireIsolation": True})
    assert cli.main(["exec", "print(1)"]) == 0
    assert fake_sandbox["run"][-1]["require_isolation"] is True


def test_exec_refuses_a_workspace_that_is_not_a_directory(fake_sandbox, tmp_path, capsys):
    assert cli.main(["exec", "--workspace", "missing", "print(1)"]) == 2
    assert capsys.readouterr().err == "toolscript: error: --workspace missing: no such directory; create it first or name an existing one\n"
    (tmp_path / "f").write_text("")
    assert cli.main(["exec", "--workspace", "f", "print(1)"]) == 2
    assert cli.main(["exec", "--lang", "ts", "--workspace", "missing", "console.log(1)"]) == 2
    assert capsys.readouterr().err.count("--workspace missing: no such directory") == 1
    assert fake_sandbox["run"] == []


def test_verbose_exec_names_the_layer_and_each_gap(fake_sandbox):
    records = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(record.getMessage())  # the CLI's own handler keeps the stderr of its first setup
    logging.getLogger("toolscript").addHandler(handler)
    try:
        assert cli.main(["-v", "exec", "print(1)"]) == 0
        assert f"exec: isolation {LANDLOCK_REPORT['mode']}" in records
        assert [line for line in records if "not stopped" in line] == [f"exec: not stopped: {gap}" for gap in LANDLOCK_REPORT["gaps"]]
        assert fake_sandbox["report"] == [False]  # no gateway: the script does not name toolscript
        del records[:]
        assert cli.main(["exec", "print(1)"]) == 0
        assert records == [] and fake_sandbox["report"] == [False]  # not asked for: not probed
    finally:
        logging.getLogger("toolscript").removeHandler(handler)


def test_typescript_with_require_isolation_refuses_on_the_guard_alone(fake_sandbox, monkeypatch, capsys):
    monkeypatch.setattr(sandbox, "isolation_report", lambda gateway=True: report("guard", "guard"), raising=False)
    assert cli.main(["exec", "--lang", "ts", "--require-isolation", "console.log(1)"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("toolscript: error: exec refuses to run: isolation is required but only the in-process guard is available")
    assert "Landlock" in line and "--require-isolation" in line


# -- exec against the real kernel layer ------------------------------------------------------


def test_require_isolation_refuses_when_only_the_guard_is_available(tmp_path, env):
    forced = dict(env, TOOLSCRIPT_EXEC_LAYER="guard")
    proc = run_cli("exec", "--require-isolation", "print('ran')", env=forced, cwd=tmp_path / "work")
    assert (proc.returncode, proc.stdout) == (2, ""), proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and "guard" in proc.stderr and "Landlock" in proc.stderr
    trust_project_file(write(tmp_path / "work" / ".toolscript.json", {"requireIsolation": True}), forced)
    proc = run_cli("exec", "print('ran')", env=forced, cwd=tmp_path / "work")
    assert (proc.returncode, proc.stdout) == (2, ""), proc.stderr
    # Without the requirement the same layer runs the script.
    proc = run_cli("exec", "print('ran')", env=dict(forced, TOOLSCRIPT_CONFIG=os.devnull), cwd=tmp_path / "work")
    assert (proc.returncode, proc.stdout) == (0, "ran\n"), proc.stderr


def test_require_isolation_runs_under_a_kernel_layer(tmp_path, env):
    if sandbox.isolation_report(gateway=False)["layer"] == "guard":
        pytest.skip("no kernel layer on this machine: only the guard (Landlock, bubblewrap and namespaces are all missing)")
    proc = run_cli("--json", "exec", "--require-isolation", "print('ran')", env=env, cwd=tmp_path / "work")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["stdout"] == "ran\n" and result["mode"] != "guard"


def test_workspace_is_readable_and_writable_only_when_given(tmp_path, env):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "in.txt").write_text("input")
    code = f"p = {str(workspace)!r}\nprint(open(p + '/in.txt').read())\nopen(p + '/out.txt', 'w').write('written')\n"
    without = run_cli("exec", code, env=env, cwd=tmp_path / "work")
    assert without.returncode != 0 and "PermissionError" in without.stderr and not (workspace / "out.txt").exists()
    given = run_cli("exec", "--workspace", str(workspace), code, env=env, cwd=tmp_path / "work")
    assert (given.returncode, given.stdout) == (0, "input\n"), given.stderr
    assert (workspace / "out.txt").read_text() == "written"


def test_verbose_exec_prints_the_real_report(tmp_path, env):
    proc = run_cli("-v", "exec", "print('hi')", env=env, cwd=tmp_path / "work")
    assert (proc.returncode, proc.stdout) == (0, "hi\n"), proc.stderr
    expected = sandbox.isolation_report(gateway=False)
    assert f"exec: isolation {expected['mode']}" in proc.stderr
    assert proc.stderr.count("exec: not stopped: ") == len(expected["gaps"])


# -- doctor ----------------------------------------------------------------------------------


def loaded(require=False):
    return doctor._Loaded(configuration.Config(servers={}, files=[], warnings=[], require_isolation=require), None, [])


def test_doctor_exec_line_per_layer():
    ok = doctor.check_exec_isolation(loaded(), LANDLOCK_REPORT)
    assert (ok.check, ok.status, ok.fix) == ("exec", "ok", "")
    assert ok.detail == f"scripts run under {LANDLOCK_REPORT['mode']}; does not stop: stat() of any path (+2 more: toolscript doctor --json)"
    assert ok.as_dict()["isolation"] == LANDLOCK_REPORT

    bwrap = doctor.check_exec_isolation(loaded(), report("bubblewrap"))
    assert bwrap.status == "warn" and "Landlock" in bwrap.fix and "bubblewrap" not in bwrap.fix
    namespaces = doctor.check_exec_isolation(loaded(True), report("namespaces"))
    assert namespaces.status == "warn" and "Landlock" in namespaces.fix and "apt install bubblewrap" in namespaces.fix

    guard = doctor.check_exec_isolation(loaded(), report("guard", "guard"))
    assert guard.status == "warn" and "not a boundary" in guard.detail and "apt install bubblewrap" in guard.fix
    required = doctor.check_exec_isolation(loaded(True), report("guard", "guard"))
    assert required.status == "fail" and "requireIsolation is set" in required.detail and required.fix == guard.fix
    unloaded = doctor._Loaded(None, configuration.ConfigError(["broken"]), [])
    assert doctor.check_exec_isolation(unloaded, report("guard", "guard")).status == "warn"

    off = doctor.check_exec_isolation(loaded(), report("landlock", "landlock(abi 7)+seccomp+guard-off"))
    assert off.status == "warn" and "TOOLSCRIPT_EXEC_GUARD" in off.fix
    assert all(line.detail and "\n" not in line.detail for line in (ok, bwrap, namespaces, guard, required, off))


def test_doctor_exec_line_for_an_unavailable_forced_layer(monkeypatch):
    def forced(gateway=True):
        raise configuration.UserError("TOOLSCRIPT_EXEC_LAYER=bubblewrap but bwrap is not installed")

    monkeypatch.setattr(sandbox, "isolation_report", forced, raising=False)
    line = doctor.check_exec_isolation(loaded())
    assert line.status == "fail" and "bwrap is not installed" in line.detail and "TOOLSCRIPT_EXEC_LAYER" in line.fix


def test_doctor_runs_the_exec_check_with_the_config_it_loaded(monkeypatch, tmp_path):
    monkeypatch.setattr(sandbox, "isolation_report", lambda gateway=True: report("guard", "guard"), raising=False)
    path = write(tmp_path / "c.json", {"requireIsolation": True, "mcpServers": {}})
    env = {"HOME": str(tmp_path), "PATH": str(tmp_path), "TOOLSCRIPT_STATE_DIR": str(tmp_path / "state")}
    results = doctor.run_checks(config_paths=[path], environ=env, cwd=str(tmp_path), servers=False)
    (line,) = [r for r in results if r.check == "exec"]
    assert line.status == "fail"
    assert doctor.exit_code(results) == 1


def test_doctor_json_carries_the_isolation_report(tmp_path, env):
    proc = run_cli("doctor", "--json", "--no-servers", env=dict(env, TOOLSCRIPT_STATE_DIR=str(tmp_path / "state")), cwd=tmp_path / "work")
    (line,) = [item for item in json.loads(proc.stdout) if item["check"] == "exec"]
    expected = sandbox.isolation_report(gateway=True)
    assert line["isolation"]["layer"] == expected["layer"] and line["isolation"]["mode"] == expected["mode"]
    assert line["status"] == ("ok" if expected["layer"] == "landlock" else "warn")


# -- the script ends with exec ----------------------------------------------------------------

NAMESPACES = sandbox.namespace_prefix(net=True) is not None
MODES = [pytest.param("1", id="auto")] + ([pytest.param("0", id="guard-only")] if NAMESPACES else [])
SLEEPER = "import time\nprint('started', flush=True)\ntime.sleep(60)\n"
# Dying with exec is Linux-only (PR_SET_PDEATHSIG).
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="dying with the parent is Linux-only (PR_SET_PDEATHSIG)")


def start_exec(tmp_path, namespaces, code=SLEEPER, *args):
    """``python -m toolscript exec CODE`` with its own temp dir (TMPDIR); returns once the script printed."""
    env = dict(os.environ, PYTHONPATH=REPO_ROOT, TMPDIR=str(tmp_path), TOOLSCRIPT_EXEC_NAMESPACES=namespaces)
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolscript", "exec", *args, code],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert proc.stdout.readline() == b"started\n"
    return proc, env


def _process_table():
    """{pid: (parent pid, state)} of every process now."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        table[int(entry)] = (int(fields[1]), fields[0])
    return table


def script_processes(exec_pid):
    """exec's descendants now: ``unshare`` (namespace mode) and the script's interpreter."""
    table = _process_table()
    found, frontier = [], [exec_pid]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, (ppid, _) in table.items() if ppid == parent]
        found += children
        frontier += children
    return found


def alive(pids):
    """Those of ``pids`` still running (zombies count as gone: they run nothing)."""
    table = _process_table()
    return [pid for pid in pids if pid in table and table[pid][1] != b"Z"]


def temp_dirs(tmp_path):
    return sorted(name for name in os.listdir(tmp_path) if name.startswith("toolscript-"))


@linux_only
@pytest.mark.timeout(60)
@pytest.mark.parametrize("namespaces", MODES)
def test_sigkilled_exec_takes_its_script_along_and_the_next_exec_sweeps_its_temp_dir(tmp_path, namespaces):
    proc, env = start_exec(tmp_path, namespaces)
    script = script_processes(proc.pid)
    assert script, "the script should be running"
    (left,) = temp_dirs(tmp_path)
    proc.kill()
    proc.wait()
    assert wait_for(lambda: not alive(script), timeout=15), "the script outlived exec's SIGKILL"
    assert temp_dirs(tmp_path) == [left]  # exec could not clean up after SIGKILL ...
    assert left.startswith(f"toolscript-exec-{proc.pid}-")  # ... but named its dir after itself
    after = subprocess.run([sys.executable, "-m", "toolscript", "exec", "print('next')"], env=env, capture_output=True, text=True, timeout=60)
    assert (after.returncode, after.stdout) == (0, "next\n"), after.stderr
    assert temp_dirs(tmp_path) == []  # ... the next exec did


@linux_only
@pytest.mark.timeout(60)
@pytest.mark.parametrize("namespaces", MODES)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=["TERM", "HUP", "INT"])
def test_exec_stopped_by_a_signal_kills_its_script_and_removes_its_temp_dir(tmp_path, namespaces, signum):
    proc, _ = start_exec(tmp_path, namespaces)
    script = script_processes(proc.pid)
    assert script, "the script should be running"
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=30)
    assert wait_for(lambda: not alive(script), timeout=15), "the script outlived exec"
    assert temp_dirs(tmp_path) == []  # at once: exec removed it itself
    assert proc.returncode == 128 + signum, err
    assert f"exec stopped by {signal.Signals(signum).name}" in err.decode()


# -- -v says what exec does ------------------------------------------------------------------


def test_verbose_exec_reports_isolation_timing_and_exit(tmp_path):
    proc = run_cli("-v", "exec", "print('hi')", env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert (proc.returncode, proc.stdout) == (0, "hi\n"), proc.stderr
    assert "exec: no gateway" in proc.stderr
    assert "exec: isolation " in proc.stderr and ("guard" in proc.stderr)
    assert "exec: exited with status 0 after " in proc.stderr
    quiet = run_cli("exec", "print('hi')", env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert quiet.stderr == ""


def test_verbose_exec_names_the_gateway_without_its_token(gateway, tmp_path):
    _, url = gateway()
    env = dict(os.environ, TMPDIR=str(tmp_path), TOOLSCRIPT_GATEWAY_URL=url)
    token = url.rsplit("/t/", 1)[1]
    for flag in ("-v", "-vv"):
        proc = run_cli(flag, "exec", "from toolscript import tools\nprint(sorted(dir(tools))[:1])", env=env)
        assert proc.returncode == 0, proc.stderr
        assert "exec: gateway " + url.rsplit("/t/", 1)[0] + "/t/****" in proc.stderr
        assert token not in proc.stderr and token not in proc.stdout
