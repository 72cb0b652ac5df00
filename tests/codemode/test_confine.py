"""The kernel layer of ``exec`` (``toolscript/codemode/confine.py``): Landlock, seccomp, the kill timer.

Every check runs in a child interpreter that applies a policy and then tries
something (a confined process stays confined: never in the pytest process).
The child imports ``confine.py`` straight from the source tree, as the
sandbox's lib dir does, applies a policy whose only writable dir is its
working dir, prints the report as its first line, then runs the test's code.
Where the kernel lacks Landlock or seccomp the tests say so by name
(``missing_prerequisite``: a failure under ``TOOLSCRIPT_REQUIRE_PEERS=1``).

The last part runs it as exec does: the sandbox's isolation ladder (which rung
runs, what its report says, each rung forced) and Deno under the launcher.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from conftest import REPO_ROOT, Output, missing_prerequisite
from toolscript.codemode import deno, process, sandbox
from toolscript.errors import UserError

CODEMODE = os.path.join(REPO_ROOT, "toolscript", "codemode")
sys.path.insert(0, CODEMODE)
import confine  # noqa: E402  # the standalone module, as the sandbox loads it

CHILD = (
    "import json, os, sys\n"
    "sys.path.insert(0, sys.argv[1])\n"
    "import confine\n"
    "report = confine.apply(json.loads(sys.argv[2]))\n"
    "del sys.path[0]\n"
    "print(json.dumps(report), flush=True)\n"
    "exec(compile(sys.argv[3], '<test>', 'exec'))\n"
)


def kernel():
    probe = process.kernel_probe()
    if not probe["landlockAbi"]:
        missing_prerequisite(f"Landlock is not available in this kernel ({os.uname().release}); the kernel layer cannot be tested")
    if not probe["seccomp"]:
        missing_prerequisite("seccomp is not available in this kernel; the kernel layer cannot be tested")
    return probe


def base_policy(work, **extra):
    policy = {
        "python": True,
        "read": list(confine.SYSTEM_READ_PATHS) + list(confine.DEVICE_READ),
        "write": [str(work)] + list(confine.DEVICE_WRITE),
        "landlock": True,
        "seccomp": True,
    }
    policy.update(extra)
    return policy


def confined(tmp_path, code, timeout=30, started=None, **extra):
    """Run ``code`` confined (work dir = tmp_path/work): (report, stdout after the report, stderr, returncode).

    ``started(pid)`` is called as soon as the child runs (as exec moves it into its cgroup).
    """
    kernel()
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    argv = [sys.executable, "-I", "-S", "-c", CHILD, CODEMODE, json.dumps(base_policy(work, **extra)), code]
    with subprocess.Popen(argv, cwd=str(work), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={"PATH": "/usr/bin:/bin"}) as proc:
        if started is not None:
            started(proc.pid)
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    first, _, rest = stdout.partition("\n")
    report = json.loads(first) if first.startswith("{") else None
    assert report is not None, (proc.returncode, stdout, stderr)
    return report, rest, stderr, proc.returncode


TRY = (
    "def attempt(label, action):\n"
    "    try:\n"
    "        action()\n"
    "        print(label, 'ok')\n"
    "    except OSError as exc:\n"
    "        print(label, 'refused', exc.errno)\n"
)


def outcomes(out):
    """{label: "ok" | "refused <errno>"} from the child's ``attempt`` lines."""
    result = {}
    for line in out.splitlines():
        label, _, rest = line.partition(" ")
        result[label] = rest
    return result


# -- probe and report -----------------------------------------------------------------------------


def test_probe_tells_what_the_kernel_offers():
    probe = process.kernel_probe()
    assert set(probe) == {"landlockAbi", "seccomp", "arch"}
    assert isinstance(probe["landlockAbi"], int) and probe["landlockAbi"] >= 0
    assert isinstance(probe["seccomp"], bool) and probe["arch"] == os.uname().machine
    kernel()


def test_apply_reports_every_layer_and_leaves_no_ctypes(tmp_path):
    probe = kernel()
    code = "print(sorted(n for n in sys.modules if 'ctypes' in n))"
    report, out, err, rc = confined(tmp_path, code, deadlineMs=60000)
    assert rc == 0, err
    assert report["noNewPrivs"] and report["seccomp"] and report["deadline"]
    assert report["landlockAbi"] == probe["landlockAbi"] and report["landlock"]["rules"] > 0
    assert report["landlock"]["net"] == (probe["landlockAbi"] >= 4)
    assert report["landlock"]["scoped"] == (probe["landlockAbi"] >= 6)
    assert report["capabilities"] == "dropped" and report["skipped"] == []
    assert out == "[]\n"


def test_the_filter_is_built_for_known_architectures_only():
    with pytest.raises(KeyError):
        confine.seccomp_program("mips")
    program = confine.seccomp_program(os.uname().machine)
    assert len(program) % 8 == 0 and len(program) // 8 < 255


# -- files ----------------------------------------------------------------------------------------


def test_files_outside_the_policy_cannot_be_read_or_written(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2")
    code = TRY + (
        f"attempt('shadow', lambda: open('/etc/shadow').read())\n"
        f"attempt('passwd', lambda: open('/etc/passwd').read())\n"
        f"attempt('secret', lambda: open({str(secret)!r}).read())\n"
        f"attempt('overwrite', lambda: open({str(secret)!r}, 'w').write('x'))\n"
        f"attempt('create', lambda: open({str(tmp_path / 'new.txt')!r}, 'w').write('x'))\n"
        f"attempt('proc', lambda: open('/proc/self/environ').read())\n"
        f"attempt('listing', lambda: os.listdir({str(tmp_path)!r}))\n"
        "attempt('work', lambda: (open('mine.txt', 'w').write('x'), os.mkdir('d'), os.rename('mine.txt', 'd/m'), os.remove('d/m')))\n"
        "attempt('stdlib', lambda: __import__('decimal') and __import__('zoneinfo').ZoneInfo('Europe/Paris'))\n"
        "attempt('devnull', lambda: open('/dev/null', 'w').write('x'))\n"
        "attempt('urandom', lambda: open('/dev/urandom', 'rb').read(4))\n"
    )
    report, out, err, rc = confined(tmp_path, code)
    assert rc == 0, err
    seen = outcomes(out)
    for label in ("shadow", "passwd", "secret", "overwrite", "create", "proc", "listing"):
        assert seen[label] == "refused 13", (label, seen)
    for label in ("work", "stdlib", "devnull", "urandom"):
        assert seen[label] == "ok", (label, seen, err)
    assert secret.read_text() == "hunter2" and not (tmp_path / "new.txt").exists()


def test_no_device_nodes_and_no_fifos_outside(tmp_path):
    code = TRY + (
        f"attempt('fifo_outside', lambda: os.mkfifo({str(tmp_path / 'fifo')!r}))\n"
        "attempt('fifo_inside', lambda: os.mkfifo('fifo'))\n"
        "attempt('char_inside', lambda: os.mknod('null', 0o20666, os.makedev(1, 3)))\n"
        f"attempt('char_outside', lambda: os.mknod({str(tmp_path / 'null')!r}, 0o20666, os.makedev(1, 3)))\n"
    )
    report, out, err, rc = confined(tmp_path, code)
    seen = outcomes(out)
    assert seen["fifo_outside"] == "refused 13" and seen["fifo_inside"] == "ok"
    assert seen["char_inside"].startswith("refused") and seen["char_outside"].startswith("refused")
    assert not (tmp_path / "fifo").exists() and not (tmp_path / "null").exists() and not (tmp_path / "work" / "null").exists()


# -- network --------------------------------------------------------------------------------------


@pytest.fixture
def two_listeners():
    socks = []
    for _ in range(2):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(5)
        sock.settimeout(0)
        socks.append(sock)
    yield socks
    for sock in socks:
        sock.close()


def test_tcp_only_to_the_allowed_port_and_no_other_kind_of_socket(tmp_path, two_listeners):
    if kernel()["landlockAbi"] < 4:
        missing_prerequisite("Landlock ABI < 4 has no TCP rules")
    allowed, other = (s.getsockname()[1] for s in two_listeners)
    code = TRY + (
        "import socket\n"
        f"attempt('allowed', lambda: socket.create_connection(('127.0.0.1', {allowed}), timeout=5))\n"
        f"attempt('other', lambda: socket.create_connection(('127.0.0.1', {other}), timeout=5))\n"
        "attempt('bind', lambda: socket.socket().bind(('127.0.0.1', 0)))\n"
        "attempt('udp', lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))\n"
        "attempt('raw', lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))\n"
        "attempt('unix', lambda: socket.socket(socket.AF_UNIX))\n"
        "attempt('sctp', lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM, 132))\n"
        "attempt('netlink', lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0))\n"
        "attempt('pair', lambda: socket.socketpair())\n"
    )
    report, out, err, rc = confined(tmp_path, code, connectPorts=[allowed])
    assert rc == 0, err
    seen = outcomes(out)
    assert seen["allowed"] == "ok" and seen["other"] == "refused 13" and seen["bind"] == "refused 13"
    for label in ("udp", "raw", "unix", "sctp", "netlink"):
        assert seen[label] == "refused 1", (label, seen)
    assert seen["pair"] == "ok"  # asyncio's self-pipe needs it; it reaches nobody
    two_listeners[0].accept()
    with pytest.raises(BlockingIOError):
        two_listeners[1].accept()


# -- processes and signals ------------------------------------------------------------------------


def test_no_programs_no_processes_but_threads(tmp_path):
    code = TRY + (
        "import subprocess, threading\n"
        "attempt('execv', lambda: os.execv('/bin/true', ['true']))\n"
        "attempt('fork', lambda: os.fork())\n"
        "attempt('subprocess', lambda: subprocess.run(['/bin/true']))\n"
        "attempt('posix_spawn', lambda: os.posix_spawn('/bin/true', ['true'], {}))\n"
        "attempt('unshare', lambda: os.unshare(os.CLONE_NEWUSER) if hasattr(os, 'unshare') else (_ for _ in ()).throw(PermissionError(1, 'x')))\n"
        "box = []\n"
        "threads = [threading.Thread(target=box.append, args=(i,)) for i in range(8)]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]\n"
        "print('threads', len(box))\n"
    )
    report, out, err, rc = confined(tmp_path, code)
    assert rc == 0, err
    seen = outcomes(out)
    for label in ("execv", "fork", "subprocess", "posix_spawn", "unshare"):
        assert seen[label] == "refused 1", (label, seen)
    assert seen["threads"] == "8"


def test_no_signals_to_processes_outside(tmp_path):
    if kernel()["landlockAbi"] < 6:
        missing_prerequisite("Landlock ABI < 6 has no signal scoping")
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        code = TRY + (
            f"attempt('other', lambda: os.kill({sleeper.pid}, 15))\n"
            "import signal\n"
            "signal.signal(signal.SIGUSR1, lambda *a: print('self got it'))\n"
            "attempt('self', lambda: os.kill(os.getpid(), signal.SIGUSR1))\n"
        )
        report, out, err, rc = confined(tmp_path, code)
        seen = outcomes(out)
        assert seen["other"] == "refused 1" and "self got it" in out and seen["self"] == "ok", (out, err)
        assert sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait()


@pytest.mark.timeout(60)
def test_the_kernel_deadline_kills_a_sleeping_script_and_cannot_be_cancelled(tmp_path):
    code = TRY + (
        "import ctypes, time\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "def call(nr, *args):\n"
        "    if libc.syscall(nr, *args) != 0:\n"
        "        raise OSError(ctypes.get_errno(), 'x')\n"
        f"nrs = {json.dumps({n: confine.SYS[n][0 if os.uname().machine == 'x86_64' else 1] for n in ('timer_delete', 'timer_settime', 'timer_create')})}\n"
        "attempt('delete', lambda: call(nrs['timer_delete'], 0))\n"
        "attempt('settime', lambda: call(nrs['timer_settime'], 0, 0, ctypes.create_string_buffer(32), None))\n"
        "attempt('create', lambda: call(nrs['timer_create'], 1, None, ctypes.byref(ctypes.c_int())))\n"
        "print('sleeping', flush=True)\n"
        "time.sleep(60)\n"
        "print('woke up')\n"
    )
    started = time.monotonic()
    report, out, err, rc = confined(tmp_path, code, timeout=50, deadlineMs=1500)
    elapsed = time.monotonic() - started
    seen = outcomes(out)
    assert report["deadline"] is True
    assert seen["delete"] == seen["settime"] == seen["create"] == "refused 1", seen
    assert "sleeping" in seen and "woke" not in out
    assert rc == -signal.SIGKILL
    assert elapsed < 30  # the 1.5 s timer fired, not the 60 s sleep


@pytest.mark.timeout(60)
def test_the_kernel_deadline_also_holds_for_a_pid_namespaces_init(tmp_path):
    """The kernel drops SIGKILLs an init sends itself: confine.py forks, and its init reports the signal."""
    from toolscript.codemode import sandbox

    kernel()
    prefix = sandbox.namespace_prefix(net=True)
    if prefix is None:
        missing_prerequisite("Linux namespaces are not available here (unshare failed or is missing)")
    work = tmp_path / "work"
    work.mkdir()
    policy = base_policy(work, deadlineMs=1500, signalFile=str(tmp_path / "signal"))
    code = "import os, time\nprint('pid', os.getpid(), flush=True)\ntime.sleep(60)\nprint('woke up')\n"
    argv = list(prefix) + [sys.executable, "-I", "-S", "-c", CHILD, CODEMODE, json.dumps(policy), code]
    started = time.monotonic()
    proc = subprocess.run(argv, cwd=str(work), capture_output=True, text=True, timeout=50, env={"PATH": "/usr/bin:/bin"})
    assert time.monotonic() - started < 30  # the 1.5 s timer fired, not the 60 s sleep
    report = json.loads(proc.stdout.splitlines()[0])
    assert report["init"] == "reaper" and report["deadline"] is True
    assert "pid 2" in proc.stdout and "woke up" not in proc.stdout
    assert proc.returncode == 128 + signal.SIGKILL, proc.stderr
    assert (tmp_path / "signal").read_text() == str(int(signal.SIGKILL))


# System calls the filter refuses that nothing else would: (x86_64, aarch64) numbers, and arguments that make
# each fail harmlessly (a key nobody uses, id -1) where the filter lets it through to the kernel.
SYSV_CALLS = {
    "shmget": ((29, 194), (0x7E57AB1E, 0, 0)), "shmat": ((30, 196), (-1, 0, 0)), "shmctl": ((31, 195), (-1, 0, 0)),
    "shmdt": ((67, 197), (0,)), "msgget": ((68, 186), (0x7E57AB1E, 0)), "msgsnd": ((69, 189), (-1, 0, 0, 0)),
    "msgrcv": ((70, 188), (-1, 0, 0, 0, 0)), "msgctl": ((71, 187), (-1, 0, 0)), "semget": ((64, 190), (0x7E57AB1E, 1, 0)),
    "semop": ((65, 193), (-1, 0, 0)), "semctl": ((66, 191), (-1, 0, 0)), "semtimedop": ((220, 192), (-1, 0, 0, 0)),
}


def test_no_listening_no_sysv_ipc_no_memfd_no_passing_descriptors(tmp_path):
    column = 0 if os.uname().machine == "x86_64" else 1
    sysv = {name: [numbers[column], list(args)] for name, (numbers, args) in SYSV_CALLS.items()}
    code = TRY + (
        "import ctypes, socket\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "def call(nr, args):\n"
        "    if libc.syscall(nr, *args) < 0:\n"
        "        raise OSError(ctypes.get_errno(), 'x')\n"
        "attempt('listen', lambda: socket.socket().listen(1))\n"
        "attempt('listen6', lambda: socket.socket(socket.AF_INET6).listen(1))\n"
        "attempt('memfd', lambda: os.memfd_create('x'))\n"
        "left, right = socket.socketpair()\n"
        "attempt('send_fds', lambda: socket.send_fds(left, [b'x'], [0]))\n"
        "attempt('sendmsg', lambda: left.sendmsg([b'x']))\n"
        "attempt('send', lambda: left.send(b'x') and right.recv(1))\n"
        f"for name, (nr, args) in {json.dumps(sysv)}.items():\n"
        "    attempt(name, lambda: call(nr, args))\n"
    )
    report, out, err, rc = confined(tmp_path, code)
    assert rc == 0, err
    seen = outcomes(out)
    for label in ["listen", "listen6", "memfd", "send_fds", "sendmsg"] + list(SYSV_CALLS):
        assert seen[label] == "refused 1", (label, seen)
    assert seen["send"] == "ok"  # a socketpair still carries bytes (asyncio's self-pipe)


@pytest.mark.parametrize("join", ["itself", "by-the-parent"])
def test_the_cgroup_caps_threads_also_for_root(tmp_path, join):
    """RLIMIT_NPROC does not bind uid 0; the cgroup's pids.max does, and the script cannot leave it.

    The child joins it itself before Landlock, or (cgroup v2) the parent moves it in while it starts and the child
    waits for that before Landlock: either way nothing of the script runs outside the cgroup.
    """
    from toolscript.system import cgroups

    kernel()
    group = cgroups.create("exec", 16)
    if group is None:
        missing_prerequisite("no writable cgroup hierarchy with the pids controller here (needs root, or a delegated cgroup v2)")
    try:
        code = TRY + (
            "import threading\n"
            "threading.stack_size(64 * 1024)\n"
            "stop, started = threading.Event(), 0\n"
            "try:\n"
            "    for _ in range(200):\n"
            "        threading.Thread(target=stop.wait, daemon=True).start()\n"
            "        started += 1\n"
            "except RuntimeError as exc:\n"
            "    print('stopped', exc)\n"
            "print('threads', started)\n"
            "stop.set()\n"
            "attempt('leave', lambda: open('/sys/fs/cgroup/pids/cgroup.procs', 'w').write('0'))\n"
            "attempt('leave2', lambda: open('/sys/fs/cgroup/cgroup.procs', 'w').write('0'))\n"
        )
        if join == "itself":
            report, out, err, rc = confined(tmp_path, code, cgroup={"name": group.name, "join": group.self_join})
        else:
            report, out, err, rc = confined(tmp_path, code, started=group.add, cgroup={"name": group.name, "join": None})
        assert rc == 0, err
        seen = outcomes(out)
        assert report["cgroup"] is True
        assert int(seen["threads"]) < 16 and "stopped" in seen, out
        assert seen["leave"].startswith("refused") and seen["leave2"].startswith("refused"), seen
    finally:
        group.remove()
    assert not os.path.exists(group.path)


@pytest.mark.timeout(60)
def test_a_child_never_moved_into_its_cgroup_does_not_run(tmp_path):
    kernel()
    work = tmp_path / "work"
    work.mkdir()
    policy = base_policy(work, cgroup={"name": "/toolscript-exec-0-00000000", "join": None})
    child = "import json, sys\nsys.path.insert(0, sys.argv[1])\nimport confine\nconfine.CGROUP_WAIT = 0.2\nconfine.apply(json.loads(sys.argv[2]))\nprint('ran')\n"
    argv = [sys.executable, "-I", "-S", "-c", child, CODEMODE, json.dumps(policy)]
    proc = subprocess.run(argv, cwd=str(work), capture_output=True, text=True, timeout=30, env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode != 0 and "ran" not in proc.stdout and "did not move this process into its cgroup" in proc.stderr


def test_limits_cannot_be_raised_and_capabilities_are_gone(tmp_path):
    code = TRY + (
        "import resource\n"
        "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        "try:\n"
        "    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))\n"
        "    print('set ok')\n"
        "except ValueError as exc:\n"  # Python's word for EPERM from setrlimit
        "    print('set refused', exc)\n"
        "print('read', resource.getrlimit(resource.RLIMIT_NOFILE) == (soft, hard))\n"
        "status = open('/proc/self/status').read()\n"
        "print('caps', [l.split()[1] for l in status.splitlines() if l.startswith(('CapEff', 'CapPrm'))])\n"
    )
    report, out, err, rc = confined(tmp_path, code, read=list(confine.SYSTEM_READ_PATHS) + ["/proc/self/status"])
    seen = outcomes(out)
    assert seen["set"].startswith("refused") and seen["read"] == "True", (out, err)
    assert report["capabilities"] == "dropped" and seen["caps"] == "['0000000000000000', '0000000000000000']", out


# -- the launcher ---------------------------------------------------------------------------------


def test_the_launcher_confines_the_program_it_starts(tmp_path):
    kernel()
    work = tmp_path / "work"
    work.mkdir()
    (work / "mine.txt").write_text("mine\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2\n")
    cat = os.path.realpath("/bin/cat")
    policy = base_policy(work, python=False, execute=[cat] + confine.elf_interpreters(cat), allowExec=True)
    policy_file = tmp_path / "policy.json"
    policy_file.write_text(json.dumps(policy))
    launcher = [sys.executable, "-I", "-S", os.path.join(CODEMODE, "confine.py"), str(policy_file), "--"]
    ok = subprocess.run(launcher + [cat, str(work / "mine.txt")], capture_output=True, text=True, timeout=30)
    assert (ok.returncode, ok.stdout) == (0, "mine\n"), ok.stderr
    refused = subprocess.run(launcher + [cat, str(secret)], capture_output=True, text=True, timeout=30)
    assert refused.returncode != 0 and "hunter2" not in refused.stdout and "Permission denied" in refused.stderr
    # Only the named program may run: a shell is refused by Landlock before it starts.
    sh = subprocess.run(launcher + [os.path.realpath("/bin/sh"), "-c", "echo escaped"], capture_output=True, text=True, timeout=30)
    assert sh.returncode != 0 and "escaped" not in sh.stdout


# -- the sandbox's ladder -------------------------------------------------------------------------

BWRAP = os.path.join(REPO_ROOT, ".venv", "peers", "bwrap", "usr", "bin", "bwrap")
# The task cap's cgroup, in every rung's mode where this system lets exec make one.
TASKS = sandbox.CGROUP_MODE + "+" if sandbox.task_limit()["by"] == "cgroup" else ""


def sandbox_run(code, **kwargs):
    out, err = Output(), Output()
    result = sandbox.run(code, stdout=out, stderr=err, **kwargs)
    return result, out.text, err.text


def test_isolation_report_names_the_layer_the_run_uses_and_its_gaps():
    probe = kernel()
    report = sandbox.isolation_report(gateway=False)
    assert set(report) == {"layer", "mode", "landlockAbi", "seccomp", "namespaces", "bwrap", "stops", "gaps", "limits"}
    assert set(report["limits"]) == {"tasks", "memory", "fileSize", "workDir", "openFiles"}
    assert report["layer"] == "landlock" and report["landlockAbi"] == probe["landlockAbi"] and report["seccomp"] is True
    assert report["mode"].startswith(f"landlock(abi {probe['landlockAbi']})+seccomp+") and report["mode"].endswith("+guard")
    assert report["stops"] and report["gaps"] and all(isinstance(line, str) and "\n" not in line for line in report["stops"] + report["gaps"])
    result, out, err = sandbox_run("print('hi')")
    assert (result.exit_code, out) == (0, "hi\n") and result.mode == report["mode"]


def test_with_the_guard_switched_off_the_kernel_layer_alone_holds(monkeypatch, tmp_path):
    kernel()
    monkeypatch.setenv("TOOLSCRIPT_EXEC_GUARD", "off")
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2")
    code = TRY + (
        f"attempt('secret', lambda: open({str(secret)!r}).read())\n"
        "attempt('shadow', lambda: open('/etc/shadow').read())\n"
        "import ctypes\n"  # the guard would refuse this import: it is really off
        "attempt('sh', lambda: os.execv('/bin/sh', ['sh', '-c', 'echo escaped']))\n"
        "attempt('fork', lambda: os.fork())\n"
        "attempt('kill', lambda: os.kill(1, 0))\n"
        "print('ctypes', 'loaded')\n"
    )
    result, out, err = sandbox_run("import os\n" + code)
    assert result.exit_code == 0, err
    assert result.mode.endswith("+guard-off") and sandbox.isolation_report()["mode"].endswith("+guard-off")
    seen = outcomes(out)
    assert seen["secret"] == seen["shadow"] == "refused 13" and seen["sh"] == seen["fork"] == "refused 1"
    assert seen["ctypes"] == "loaded" and "escaped" not in out and "hunter2" not in out


def test_the_workspace_is_readable_and_writable_and_nothing_next_to_it(monkeypatch, tmp_path):
    kernel()
    monkeypatch.setenv("TOOLSCRIPT_EXEC_GUARD", "off")  # the kernel's word, not the guard's
    workspace, sibling = tmp_path / "ws", tmp_path / "other"
    workspace.mkdir()
    sibling.mkdir()
    (workspace / "in.txt").write_text("input")
    (sibling / "no.txt").write_text("no")
    code = TRY + (
        f"attempt('read', lambda: print('got', open({str(workspace / 'in.txt')!r}).read()))\n"
        f"attempt('write', lambda: open({str(workspace / 'out.txt')!r}, 'w').write('done'))\n"
        f"attempt('sibling', lambda: open({str(sibling / 'no.txt')!r}).read())\n"
    )
    result, out, err = sandbox_run("import os\n" + code, workspace=str(workspace))
    seen = outcomes(out)
    assert seen["got"] == "input" and seen["write"] == "ok" and seen["sibling"] == "refused 13", (out, err)
    assert (workspace / "out.txt").read_text() == "done"
    monkeypatch.delenv("TOOLSCRIPT_EXEC_GUARD")
    result, out, err = sandbox_run(f"print(open({str(workspace / 'in.txt')!r}).read())", workspace=str(workspace))
    assert (result.exit_code, out) == (0, "input\n"), err  # the guard lets it through too
    with pytest.raises(UserError, match="not a directory"):
        sandbox_run("pass", workspace=str(tmp_path / "missing"))


def test_require_isolation_refuses_the_guard_alone(monkeypatch):
    monkeypatch.setenv("TOOLSCRIPT_EXEC_LAYER", "guard")
    with pytest.raises(UserError, match="only the in-process guard is available") as caught:
        sandbox_run("print('ran')", require_isolation=True)
    assert caught.value.exit_code == 2
    result, out, _ = sandbox_run("print('ran')")
    assert result.mode == TASKS + "guard" and out == "ran\n"
    monkeypatch.delenv("TOOLSCRIPT_EXEC_LAYER")
    if sandbox.isolation_report()["layer"] != "guard":
        assert sandbox_run("print('ran')", require_isolation=True)[1] == "ran\n"


def test_forced_rungs_name_themselves_and_a_bad_one_is_an_error(monkeypatch):
    monkeypatch.setenv("TOOLSCRIPT_EXEC_LAYER", "namespaces")
    if sandbox.namespace_prefix(net=True) is None:
        with pytest.raises(UserError, match="namespaces are not available"):
            sandbox_run("pass")
    else:
        assert sandbox_run("pass")[0].mode == TASKS + "namespace(user,mount,pid,net)+guard"
    monkeypatch.setenv("TOOLSCRIPT_EXEC_LAYER", "chroot")
    with pytest.raises(UserError, match="is not a layer"):
        sandbox_run("pass")
    monkeypatch.setenv("TOOLSCRIPT_EXEC_LAYER", "landlock")
    if kernel():
        assert sandbox_run("pass")[0].mode.startswith("landlock(abi ")


def bwrap_or_skip(monkeypatch):
    if os.access(BWRAP, os.X_OK) and not os.environ.get("TOOLSCRIPT_BWRAP"):
        monkeypatch.setenv("TOOLSCRIPT_BWRAP", BWRAP)
    found = sandbox.find_bwrap()
    if not found:
        pytest.skip("bubblewrap is not available: install Debian's bubblewrap package, or run `make bwrap` "
                    "(unpacks it into .venv/peers/bwrap), or point TOOLSCRIPT_BWRAP at a bwrap")
    return found


def test_the_bubblewrap_rung(monkeypatch, tmp_path):
    bwrap_or_skip(monkeypatch)
    monkeypatch.setenv("TOOLSCRIPT_EXEC_LAYER", "bubblewrap")
    monkeypatch.setenv("TOOLSCRIPT_EXEC_GUARD", "off")
    (tmp_path / "secret.txt").write_text("hunter2")
    code = TRY + (
        "import socket\n"
        f"attempt('secret', lambda: open({str(tmp_path / 'secret.txt')!r}).read())\n"
        "attempt('hostname', lambda: open('/etc/hostname').read())\n"
        "attempt('net', lambda: socket.create_connection(('127.0.0.1', 1), timeout=2))\n"
        "attempt('fork', lambda: os.fork())\n"
        "attempt('work', lambda: open('mine.txt', 'w').write('x'))\n"
    )
    result, out, err = sandbox_run("import os\n" + code)
    assert result.exit_code == 0, err
    assert result.mode == "bubblewrap+seccomp+" + TASKS + "guard-off"
    seen = outcomes(out)
    assert seen["secret"] == seen["hostname"] == "refused 2"  # not even there
    assert seen["net"].startswith("refused") and seen["fork"] == "refused 1" and seen["work"] == "ok"


@pytest.mark.timeout(120)
def test_deno_runs_confined_even_with_every_deno_permission(deno_path, tmp_path, two_listeners):
    """The launcher's policy holds where Deno's flags do not: give Deno --allow-all and it still cannot."""
    kernel()
    root = tmp_path / "root"
    work, cache = root / "work", root / "cache"
    work.mkdir(parents=True)
    cache.mkdir()
    (tmp_path / "secret.txt").write_text("hunter2")
    allowed, other = (s.getsockname()[1] for s in two_listeners)
    script = work / "main.ts"
    script.write_text(
        "const tries: Record<string, () => unknown> = {\n"
        f"  secret: () => Deno.readTextFileSync({json.dumps(str(tmp_path / 'secret.txt'))}),\n"
        "  run: () => new Deno.Command('/bin/sh', { args: ['-c', 'echo escaped'] }).outputSync(),\n"
        "  write: () => Deno.writeTextFileSync('mine.txt', 'x'),\n"
        "};\n"
        "for (const [name, f] of Object.entries(tries)) {\n"
        "  try { f(); console.log(name, 'ok'); } catch (e) { console.log(name, 'refused', (e as Error).name); }\n"
        "}\n"
        f"for (const port of [{allowed}, {other}]) {{\n"
        "  try { (await Deno.connect({ hostname: '127.0.0.1', port })).close(); console.log(`port${port}`, 'ok'); }\n"
        "  catch (e) { console.log(`port${port}`, 'refused', (e as Error).name); }\n"
        "}\n"
    )
    argv = [deno_path, "run", "--allow-all", "--no-config", "--no-lock", "--no-npm", "--no-remote", str(script)]
    confined_argv = deno._confined_argv(argv, str(root), str(work), str(cache), f"http://127.0.0.1:{allowed}/t/x", 60)
    env = {"DENO_DIR": str(cache), "DENO_NO_UPDATE_CHECK": "1", "NO_COLOR": "1", "HOME": str(work)}
    proc = subprocess.run(confined_argv, cwd=str(work), env=env, capture_output=True, text=True, timeout=100)
    seen = outcomes(proc.stdout)
    assert seen["secret"].startswith("refused") and seen["run"].startswith("refused"), (proc.stdout, proc.stderr)
    assert seen["write"] == "ok" and seen[f"port{allowed}"] == "ok" and seen[f"port{other}"].startswith("refused")
    assert "escaped" not in proc.stdout and "hunter2" not in proc.stdout


def test_without_landlock_the_ladder_falls_back_and_keeps_seccomp(monkeypatch):
    """Landlock missing (simulated): bubblewrap when it works here, else namespaces, each with seccomp."""
    kernel()
    monkeypatch.setattr(process, "kernel_probe", lambda: {"landlockAbi": 0, "seccomp": True, "arch": os.uname().machine})
    report = sandbox.isolation_report(gateway=False)
    result, out, err = sandbox_run("import os\nos.fork()\n")
    assert result.mode == report["mode"] and "landlock" not in result.mode
    if report["layer"] == "bubblewrap":
        assert result.mode == "bubblewrap+seccomp+" + TASKS + "guard"
    elif report["layer"] == "namespaces":
        assert result.mode == "seccomp+" + TASKS + "namespace(user,mount,pid,net)+guard"
    else:
        assert result.mode == "seccomp+" + TASKS + "guard"
    assert result.exit_code == 1 and "os.fork" in err  # the guard's message comes first
    monkeypatch.setenv("TOOLSCRIPT_EXEC_GUARD", "off")
    result, out, err = sandbox_run("import os\ntry:\n    os.fork()\nexcept OSError as e:\n    print(e.errno)\n")
    assert out == "1\n", err  # EPERM from the seccomp filter: the fallback still has no fork
    monkeypatch.setenv("TOOLSCRIPT_EXEC_LAYER", "landlock")
    with pytest.raises(UserError, match="offers no Landlock"):
        sandbox_run("pass")


class _OneToolGateway(__import__("http.server").server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        body = json.dumps({"ok": True, "data": {"content": [{"type": "text", "text": "5"}]}, "error": None, "meta": {}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_a_gateway_named_localhost_is_reachable_under_the_kernel_layer(monkeypatch):
    """The C library reads /etc/hosts to resolve it: the policy lets it, only for a gateway given by name."""
    import http.server
    import threading

    kernel()
    monkeypatch.setenv("TOOLSCRIPT_EXEC_GUARD", "off")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _OneToolGateway)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        code = "from toolscript import tools\nprint(tools.call('a__b', {}))\nprint(open('/etc/hostname').read())\n"
        result, out, err = sandbox_run(code, gateway_url=f"http://localhost:{server.server_address[1]}/t/tok")
    finally:
        server.shutdown()
        server.server_close()
    assert out == "5\n" and result.exit_code == 1 and "PermissionError" in err, (out, err)


def test_what_the_kernel_layer_refuses_is_told_as_the_sandboxs_doing():
    kernel()
    result, out, err = sandbox_run("import socket\nsocket.socket().listen(1)\n")
    assert result.exit_code == 1 and "PermissionError" in err and "sandbox's kernel filter refused" in err, err
    threads = (
        "import threading\nthreading.stack_size(64 * 1024)\nstop = threading.Event()\n"
        "try:\n    for _ in range(1000):\n        threading.Thread(target=stop.wait, daemon=True).start()\nfinally:\n    stop.set()\n"
    )
    if sandbox.task_limit()["by"] != "count":
        result, out, err = sandbox_run(threads)
        assert result.exit_code == 1 and "limit on threads" in err, err


def test_the_report_names_a_forced_layer_it_cannot_honour(monkeypatch):
    monkeypatch.setenv("TOOLSCRIPT_EXEC_LAYER", "chroot")
    report = sandbox.isolation_report()
    assert "is not a layer" in report["error"] and report["layer"] in sandbox.LAYERS
    monkeypatch.delenv("TOOLSCRIPT_EXEC_LAYER")
    assert "error" not in sandbox.isolation_report()
