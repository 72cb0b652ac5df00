"""Hardening of ``toolscript exec`` (issue 8): the script dies with exec, failed servers say why, -v speaks.

The kill tests run ``python -m toolscript exec`` as a real process, find the
script among exec's descendants in ``/proc`` (inside a PID namespace the
script itself sees pid 1, so it cannot say), kill exec, and check
that nothing of the script is left and that its temp dir goes.  They run in
every isolation mode this machine offers.
"""

import ast
import json
import os
import pkgutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import REPO_ROOT, Output, deno_on_runtime, run_cli, wait_for
from toolscript.codemode import deno, sandbox
from toolscript.gateway import tsruntime

NAMESPACES = sandbox.namespace_prefix(net=True) is not None
MODES = [pytest.param("1", id="auto")] + ([pytest.param("0", id="guard-only")] if NAMESPACES else [])
CODEMODE = os.path.join(REPO_ROOT, "toolscript", "codemode")
SLEEPER = "import time\nprint('started', flush=True)\ntime.sleep(60)\n"


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


@pytest.fixture(autouse=True)
def _linux_only():
    if not sys.platform.startswith("linux"):
        pytest.skip("dying with the parent is Linux-only (PR_SET_PDEATHSIG)")


# -- item 4: the script dies with exec ------------------------------------------------------------


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


@pytest.mark.timeout(60)
def test_the_guard_ends_the_script_at_its_deadline_without_any_parent(tmp_path):
    """The guard's watchdog: the wall-clock limit that holds when exec is gone (and on macOS)."""
    lib, work = tmp_path / "lib", tmp_path / "work"
    lib.mkdir()
    work.mkdir()
    guard = lib / sandbox.GUARD_NAME
    guard.write_bytes(pkgutil.get_data("toolscript.codemode", "guard.py"))
    code = lib / sandbox.CODE_NAME
    code.write_text("import time, signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('started', flush=True)\ntime.sleep(60)\n")
    limits = "30,0,0,0,0,1000"  # cpu, memory, fsize, nofile, nproc, wall-clock ms
    argv = [sys.executable, "-I", "-S", "-B", "-u", str(guard), str(lib), str(work), str(code), "<exec>", "", "", limits]
    started = time.monotonic()
    proc = subprocess.run(argv, cwd=str(work), env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=30)
    elapsed = time.monotonic() - started
    assert proc.returncode == 124 and proc.stdout == "started\n"
    assert "ran past its wall-clock limit (1 s)" in proc.stderr
    assert elapsed < 15  # 1 s expected: proves the watchdog fired, not the 60 s sleep


def test_scripts_cannot_reach_the_watchdogs_frame():
    for what in ["_current_frames", "_current_exceptions"]:
        if not hasattr(sys, what):
            continue  # sys._current_exceptions is new in 3.12
        out, err = Output(), Output()
        result = sandbox.run(f"import sys\nsys.{what}()", stdout=out, stderr=err, namespaces=False)
        assert result.exit_code == 1 and "toolscript sandbox:" in err.text and "watchdog" in err.text, what


def test_exec_sets_its_runner_to_die_with_it():
    """The preexec hook sets PR_SET_PDEATHSIG=SIGKILL (read back from /proc: field 'PDeathSig' is not there, so ask prctl)."""
    from toolscript.codemode import process

    hook = process.die_with_parent()
    assert hook is not None
    code = (
        "import ctypes, signal\n"
        "libc = ctypes.CDLL(None)\n"
        "value = ctypes.c_int()\n"
        "libc.prctl(2, ctypes.byref(value), 0, 0, 0)\n"  # PR_GET_PDEATHSIG
        "print(value.value)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], preexec_fn=hook, capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == str(int(signal.SIGKILL)), out.stderr


def test_sweep_removes_only_our_dirs_whose_owner_is_gone(tmp_path):
    from toolscript.codemode import process

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = os.getppid()
    (tmp_path / f"toolscript-exec-{dead.pid}-abc123_x").mkdir()
    (tmp_path / f"toolscript-deno-{dead.pid}-abc123_y").mkdir()
    keep = [
        f"toolscript-exec-{live}-abc123_z",  # its owner lives
        f"toolscript-exec-{os.getpid()}-abc123_w",  # ours
        "toolscript-exec-abc123_v",  # the old naming: no owner to ask
        f"other-exec-{dead.pid}-abc123_u",  # not ours
    ]
    for name in keep:
        (tmp_path / name).mkdir()
    target = tmp_path / "target"
    target.mkdir()
    (target / "precious").write_text("x")
    os.symlink(str(target), str(tmp_path / f"toolscript-exec-{dead.pid}-link"))
    (tmp_path / f"toolscript-exec-{dead.pid}-file").write_text("not a dir")
    removed = process.sweep_temp_dirs(str(tmp_path))
    assert sorted(os.path.basename(p) for p in removed) == sorted([f"toolscript-exec-{dead.pid}-abc123_x", f"toolscript-deno-{dead.pid}-abc123_y"])
    left = set(os.listdir(tmp_path))
    assert set(keep) <= left and (target / "precious").exists()
    assert f"toolscript-exec-{dead.pid}-link" in left and f"toolscript-exec-{dead.pid}-file" in left


# -- the work dir's size ------------------------------------------------------------------------------

# 1 MiB at a time, 200 times: past an 8 MiB limit long before the end.  The pause keeps the writes slower
# than exec's look every 0.1 s, so what is left on disk stays small.
WRITERS = {
    "files": "for i in range(200):\n    with open(f'part{i}', 'wb') as f:\n        f.write(CHUNK)\n    time.sleep(0.01)\n",
    # No name, so no directory listing shows it: exec counts the script's open files too.
    "unlinked": "f = open('hidden', 'wb')\nos.unlink('hidden')\nfor i in range(60):\n    f.write(CHUNK)\n    f.flush()\n    time.sleep(0.02)\n",
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("how", list(WRITERS))
def test_a_script_writing_past_the_work_dir_limit_is_stopped(how):
    code = "import os, time\nCHUNK = b'x' * (1 << 20)\n" + WRITERS[how] + "print('wrote it all')\n"
    out, err = Output(), Output()
    result = sandbox.run(code, stdout=out, stderr=err, timeout=30, work_dir_limit=8 << 20)
    assert "wrote it all" not in out.text and not result.timed_out
    assert result.exit_code == 1, err.text
    assert "the script was stopped: its files passed the sandbox's disk limit (8 MiB in its work dir)" in err.text


@pytest.mark.timeout(60)
def test_a_script_making_too_many_files_is_stopped(monkeypatch):
    monkeypatch.setattr(sandbox, "WORK_DIR_ENTRIES_LIMIT", 100)
    code = "import time\nfor i in range(2000):\n    open(f'f{i}', 'w').close()\n    time.sleep(0.001)\nprint('made them all')\n"
    out, err = Output(), Output()
    result = sandbox.run(code, stdout=out, stderr=err, timeout=30)
    assert "made them all" not in out.text and result.exit_code == 1, err.text
    assert "its work dir passed 100 files and directories" in err.text


# -- the task cap's cgroup ----------------------------------------------------------------------------

THREAD_BOMB = (
    "import threading\nthreading.stack_size(64 * 1024)\nstop, started = threading.Event(), 0\n"
    "try:\n    for _ in range(500):\n        threading.Thread(target=stop.wait, daemon=True).start()\n        started += 1\n"
    "except RuntimeError:\n    pass\nstop.set()\nprint(started)\n"
)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("join", ["itself", "moved-by-exec"])
def test_the_script_runs_in_a_cgroup_that_caps_its_threads(monkeypatch, join):
    """Root is exempt from RLIMIT_NPROC: the cap is the cgroup's pids.max (joined by the child, or, as on cgroup v2
    where joining is slow, exec moves it in while it starts); the cgroup goes with the run."""
    from toolscript.system import cgroups

    if cgroups.hierarchy() is None:
        pytest.skip("no writable pids cgroup here: the cap is RLIMIT_NPROC (non-root) or a count every 0.1 s (root)")
    made = []
    create = cgroups.create

    def recording_create(kind, pids_max=0):
        group = create(kind, pids_max)
        if group is not None and join == "moved-by-exec":
            group.fast_self_join = False
        made.append(group)
        return group

    monkeypatch.setattr(cgroups, "create", recording_create)
    out, err = Output(), Output()
    result = sandbox.run(THREAD_BOMB, stdout=out, stderr=err, timeout=30)
    assert result.exit_code == 0, err.text
    assert sandbox.CGROUP_MODE in result.mode
    assert int(out.text) < sandbox.TASK_LIMIT
    (group,) = made
    assert group is not None and not os.path.exists(group.path)


@pytest.mark.timeout(60)
def test_as_root_without_a_cgroup_exec_counts_the_threads(monkeypatch):
    """The fallback for root where no pids cgroup is writable: a look every 0.1 s, which stops a steady climb."""
    from toolscript.system import cgroups

    if os.getuid() != 0:
        pytest.skip("not root: RLIMIT_NPROC caps the threads")
    monkeypatch.setattr(cgroups, "hierarchy", lambda: None)
    assert sandbox.task_limit()["by"] == "count"
    code = THREAD_BOMB.replace("        started += 1\n", "        started += 1\n        __import__('time').sleep(0.01)\n")
    out, err = Output(), Output()
    result = sandbox.run(code, stdout=out, stderr=err, timeout=30)
    assert result.exit_code == 1 and out.text == "" and sandbox.CGROUP_MODE not in result.mode, err.text
    assert f"it ran more than {sandbox.TASK_LIMIT} threads at once" in err.text
    assert any("between two counts" in gap for gap in sandbox.isolation_report()["gaps"])


def test_a_work_dir_exec_cannot_read_stops_the_script():
    """Its size could not be checked (a user who is not root cannot list a directory made without read permission)."""
    code = "import os, time\nos.mkdir('blind', 0o300)\nif os.getuid() == 0:\n    os.rmdir('blind')\ntime.sleep(1)\nprint('done')\n"
    out, err = Output(), Output()
    result = sandbox.run(code, stdout=out, stderr=err, timeout=30)
    if os.getuid() == 0:
        assert (result.exit_code, out.text) == (0, "done\n"), err.text  # root reads any directory: nothing to stop
    else:
        assert result.exit_code == 1 and "cannot read" in err.text, err.text


def test_cgroup_sweep_removes_only_empty_groups_whose_owner_is_gone(tmp_path):
    from toolscript.system import cgroups

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    gone = [f"toolscript-exec-{dead.pid}-0a1b2c3d", f"toolscript-server-{dead.pid}-ff"]
    kept = [f"toolscript-exec-{os.getpid()}-0a1b2c3d", f"toolscript-exec-{dead.pid}-notHEX", "user.slice", f"toolscript-other-{dead.pid}-ab"]
    for name in gone + kept:
        (tmp_path / name).mkdir()
    busy = tmp_path / f"toolscript-exec-{dead.pid}-beef"  # still holds something: rmdir refuses, as with a cgroup with members
    busy.mkdir()
    (busy / "member").write_text("x")
    removed = cgroups.sweep(str(tmp_path))
    assert sorted(os.path.basename(p) for p in removed) == sorted(gone)
    assert sorted(os.listdir(tmp_path)) == sorted(kept + [busy.name])


# -- item 13: a configured server that failed says why ------------------------------------------------

UNAVAILABLE_NAMES = {
    "servers": {"fixture": {"add": {"id": "fixture__add", "args": {"a": "a", "b": "b"}}}},
    "unavailable": {"crashy": "exited with status 3 during the handshake: boom"},
}


def test_a_failed_server_says_why_in_python():
    code = (
        "from toolscript import tools, ToolError\n"
        "print(hasattr(tools, 'crashy'))\n"
        "try:\n"
        "    tools.crashy.anything\n"
        "except ToolError as err:\n"
        "    print(err.code)\n"
        "try:\n"
        "    tools.fixtur\n"
        "except AttributeError as err:\n"
        "    print(err)\n"
        "tools.crashy.x()\n"
    )
    out, err = Output(), Output()
    result = sandbox.run(code, names=UNAVAILABLE_NAMES, stdout=out, stderr=err)
    lines = out.text.splitlines()
    assert lines[0] == "False" and lines[1] == "server_unavailable"
    assert "tools has no server 'fixtur'; did you mean fixture?" in lines[2]
    assert result.exit_code == 1
    last = err.text.strip().splitlines()[-1]
    assert last == "toolscript.ServerUnavailable: tools.crashy: the server 'crashy' is configured but not available: exited with status 3 during the handshake: boom"


def test_the_runtime_tolerates_a_names_map_without_unavailable():
    out, err = Output(), Output()
    names = {"servers": UNAVAILABLE_NAMES["servers"]}
    result = sandbox.run("from toolscript import tools\ntools.crashy", names=names, stdout=out, stderr=err)
    assert result.exit_code == 1 and "AttributeError: tools has no server 'crashy'" in err.text


@pytest.mark.timeout(120)
def test_a_failed_server_says_why_in_typescript(deno_path, tmp_path):
    main_ts = (
        'import { tools, ToolError } from "./tools.ts";\n'
        'console.log(typeof tools.fixture.add);\n'
        'try { tools.crashy.x; } catch (e) { console.log(e instanceof ToolError, e.code, e.message); }\n'
        'try { tools.fixtur; } catch (e) { console.log(e.message); }\n'
    )
    proc = deno_on_runtime(deno_path, tmp_path, UNAVAILABLE_NAMES, main_ts, "run", "--no-config", "main.ts")
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0, proc.stderr
    assert lines[0] == "function"
    assert lines[1] == 'true server_unavailable tools.crashy: the server "crashy" is configured but not available: exited with status 3 during the handshake: boom'
    assert 'tools has no server "fixtur"; did you mean fixture?' in lines[2]


# -- item 14: -v says what exec does ---------------------------------------------------------------


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


# -- items 15, 17, 19, 21: the code ------------------------------------------------------------------


def test_runners_use_no_private_name_of_another_module():
    """deno.py and sandbox.py share process.py's public functions, not each other's ``_helpers``."""
    offenders = []
    for name in ("deno.py", "sandbox.py", "process.py"):
        with open(os.path.join(CODEMODE, name), "rb") as f:
            tree = ast.parse(f.read())
        modules = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("toolscript") for alias in node.names}
        modules |= {(alias.asname or alias.name).split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names if alias.name.startswith("toolscript")}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules and node.attr.startswith("_") and not node.attr.startswith("__"):
                offenders.append(f"{name}: {node.value.id}.{node.attr}")
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("toolscript"):
                offenders += [f"{name}: from {node.module} import {a.name}" for a in node.names if a.name.startswith("_")]
    assert offenders == []


def test_the_typescript_runtime_is_package_data():
    with open(os.path.join(os.path.dirname(CODEMODE), "gateway", "runtime.ts"), encoding="utf-8") as f:
        source = f.read()
    assert source.count(tsruntime.NAMES_LINE) == 1
    served = tsruntime.typescript_runtime(UNAVAILABLE_NAMES)
    (line,) = [l for l in served.splitlines() if l.startswith("const NAMES: any = JSON.parse(")]
    assert served.replace(line, tsruntime.NAMES_LINE) == source
    assert json.loads(json.loads(line[len("const NAMES: any = JSON.parse("):-len(");")])) == UNAVAILABLE_NAMES


def test_the_typescript_runtime_loads_from_the_zipapp(pyz):
    code = "from toolscript.gateway import tsruntime; print(tsruntime.typescript_runtime({'servers': {'s': {}}})[-60:])"
    proc = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {pyz!r}); {code}"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "export default tools;" in proc.stdout, proc.stderr


def test_no_dead_code_or_stale_docs_in_the_sandbox():
    assert not hasattr(sandbox, "isolation_mode")  # only tests called it; ExecResult.mode and exec -v report the mode
    for name in os.listdir(CODEMODE):
        if not name.endswith((".py", ".ts")):
            continue
        with open(os.path.join(CODEMODE, name), encoding="utf-8") as f:
            text = f.read()
        assert "--namespaces" not in text, f"{name} mentions a --namespaces flag that does not exist"
    assert "README section" not in (sandbox.__doc__ or "")


def test_deno_heap_cap_and_kill_grace_are_parameters(deno_path):
    argv = deno.deno_argv("deno", "main.ts", "map.json", None, heap_mib=48)
    assert "--v8-flags=--max-old-space-size=48" in argv
    out, err = Output(), Output()
    code = "const keep: string[] = [];\nwhile (true) keep.push(\"x\".repeat(1 << 16) + keep.length);\n"
    result = deno.run(code, stdout=out, stderr=err, deno=deno_path, timeout=60, heap_mib=48, kill_grace=0.05)
    assert result.exit_code >= 128 and not result.timed_out
    assert "out of memory" in err.text.lower() and "48 MiB heap" in err.text
