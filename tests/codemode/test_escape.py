"""The escape suite of ``toolscript exec``: every way out, tried for real, must fail.

Each probe is a small Python script in ``tests/codemode/escape_probes/`` run through the
real ``exec`` path (``sandbox.run`` in this process, or ``python -m toolscript
exec --json``).  The test prepends ``CONFIG = {...}`` (paths and ports of what
the test planted outside the sandbox) and ``_prelude.py``, whose
``attempt(name, action)`` prints one ``PROBE {...}`` line per escape: escaped,
or blocked -- by the guard (its ``toolscript sandbox:`` PermissionError) or by
the OS (an OSError such as EACCES/EPERM/ENOSYS/ESRCH, no answer, or the script
killed by a signal).  Outside the script the test also checks what an escape
would leave: the sleeper it started is alive, nothing appeared outside the work
dir, its TCP/UDP/abstract-unix listeners heard nothing, the SysV shared memory,
message and semaphore it planted are as they were.

Every probe runs three times:

* ``guard-on``: the default: the in-process audit-hook guard plus the OS layer;
* ``guard-off``: ``TOOLSCRIPT_EXEC_GUARD=off`` (the documented test-only switch):
  only the OS layer, and every refusal must come from the OS;
* ``guard-bypassed``: the default mode with ``escape_probes/guard_bypass.py``
  first: the script switches the guard off itself (closure cells, event table,
  the patched ``_imp``/``_posixsubprocess``), as a hostile script would.

Then: the real tool path still works under the policy (built-ins and
server-everything's ``echo``, in Python and ``--lang ts``) while the same
script reaches nothing else; and one test per rung of the fallback ladder
(``TOOLSCRIPT_EXEC_LAYER=landlock|bubblewrap|namespaces|guard``) with the
probes that rung claims to stop.  Networking is loopback-only, ports are
ephemeral, every probe has a timeout; safe under pytest-xdist.
"""

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import uuid
from typing import Any, Dict, Iterator, List, Optional, Sequence

import pytest

import peers
from conftest import REPO_ROOT, Output, missing_prerequisite, require_peers, run_cli, running_gateway
from toolscript.codemode import sandbox
from toolscript.config.load import ServerConfig

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the escape suite probes Linux's kernel isolation (Landlock, seccomp, namespaces)")

PROBES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "escape_probes")
GUARD_ENV = "TOOLSCRIPT_EXEC_GUARD"
LAYER_ENV = "TOOLSCRIPT_EXEC_LAYER"
PROBE_TIMEOUT = 20.0  # seconds per probe script; each attempt inside waits at most a few seconds
SECRET_TEXT = "escape-suite-secret-"  # + a fresh uuid per test
GUARD_MODES = ["on", "off", "bypassed"]
# Probes that only touch the network also run with a gateway: then the script keeps the host's
# network stack (no network namespace) and only the policy stands between it and other ports.
PROBES = [
    "read_secrets", "write_outside", "make_nodes", "run_program", "exec_program", "signals",
    "fork_bomb", "proc_and_fds", "links", "native_syscalls", "network", "sysv_ipc", "resources",
]


def probe_source(name: str) -> str:
    with open(os.path.join(PROBES_DIR, name + ".py"), encoding="utf-8") as f:
        return f.read()


def probe_code(body: str, guard: str, config: Dict[str, Any]) -> str:
    """The script exec runs: [the guard bypass] + CONFIG + the prelude + ``body``."""
    parts = [probe_source("guard_bypass")] if guard == "bypassed" else []
    parts.append("CONFIG = __import__('json').loads(%r)\n" % json.dumps(config))
    parts.append(probe_source("_prelude"))
    parts.append(body)
    return "\n".join(parts)


# -- what the test plants outside the sandbox ------------------------------------------------------


class SysvObjects:
    """A SysV shared memory segment, message queue and semaphore set of the host's, each holding a known value."""

    IPC_CREAT, IPC_EXCL, IPC_NOWAIT, IPC_RMID, GETVAL, SETVAL = 0o1000, 0o2000, 0o4000, 0, 12, 16
    SEMAPHORE = 42

    def __init__(self, text: str) -> None:
        import ctypes

        self.ctypes = ctypes
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.syscall.restype = ctypes.c_long
        self.text = text.encode()
        self.ids: Dict[str, int] = {}
        base = int.from_bytes(os.urandom(3), "big") << 6
        self.keys = {"shm_key": base + 1, "msg_key": base + 2, "sem_key": base + 3}
        flags = self.IPC_CREAT | self.IPC_EXCL | 0o600
        self.ids["shm"] = self.call("shmget", self.keys["shm_key"], ctypes.c_size_t(4096), flags)
        address = self.call("shmat", self.ids["shm"], None, 0)
        ctypes.memmove(address, self.text, len(self.text))
        self.call("shmdt", ctypes.c_void_p(address))
        self.ids["msg"] = self.call("msgget", self.keys["msg_key"], flags)
        message = ctypes.create_string_buffer(8 + len(self.text))
        ctypes.c_long.from_buffer(message).value = 1  # mtype
        ctypes.memmove(ctypes.addressof(message) + 8, self.text, len(self.text))
        self.call("msgsnd", self.ids["msg"], message, ctypes.c_size_t(len(self.text)), 0)
        self.ids["sem"] = self.call("semget", self.keys["sem_key"], 1, flags)
        self.call("semctl", self.ids["sem"], 0, self.SETVAL, self.SEMAPHORE)

    def call(self, name: str, *args: Any) -> int:
        result = self.libc.syscall(self.ctypes.c_long(SYSV_NUMBERS[name][SYSV_ARCHES.index(os.uname().machine)]), *args)
        if result < 0:
            code = self.ctypes.get_errno()
            raise OSError(code, f"{name}: {os.strerror(code)}")
        return int(result)

    def untouched(self) -> List[str]:
        """What a script changed or took: [] when the segment, the queued message and the semaphore are as planted."""
        ctypes, changed = self.ctypes, []
        address = self.call("shmat", self.ids["shm"], None, 0o10000)  # SHM_RDONLY
        if ctypes.string_at(address, len(self.text)) != self.text:
            changed.append("the shared memory segment")
        self.call("shmdt", ctypes.c_void_p(address))
        buffer = ctypes.create_string_buffer(8 + 256)
        try:
            size = self.call("msgrcv", self.ids["msg"], buffer, ctypes.c_size_t(256), ctypes.c_long(0), self.IPC_NOWAIT)
            if buffer.raw[8:8 + size] != self.text:
                changed.append("the queued message")
        except OSError:
            changed.append("the queued message (taken)")
        if self.call("semctl", self.ids["sem"], 0, self.GETVAL) != self.SEMAPHORE:
            changed.append("the semaphore")
        return changed

    def remove(self) -> None:
        removals = {"shm": ("shmctl", (self.IPC_RMID, None)), "msg": ("msgctl", (self.IPC_RMID, None)), "sem": ("semctl", (0, self.IPC_RMID))}
        for name, (control, args) in removals.items():
            if name in self.ids:
                with contextlib.suppress(OSError):
                    self.call(control, self.ids[name], *args)


SYSV_ARCHES = ("x86_64", "aarch64")
SYSV_NUMBERS = {  # name: (x86_64, aarch64)
    "shmget": (29, 194), "shmat": (30, 196), "shmdt": (67, 197), "shmctl": (31, 195),
    "msgget": (68, 186), "msgsnd": (69, 189), "msgrcv": (70, 188), "msgctl": (71, 187),
    "semget": (64, 190), "semctl": (66, 191),
}


def sysv_supported() -> bool:
    return sys.platform.startswith("linux") and os.uname().machine in SYSV_ARCHES


class Listener:
    """A loopback listener (TCP, UDP or abstract unix) on its own thread that records who reached it."""

    def __init__(self, family: int, kind: int, address: Any) -> None:
        self.sock = socket.socket(family, kind)
        self.sock.bind(address)
        if kind == socket.SOCK_STREAM:
            self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.heard: List[str] = []
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopped.is_set():
            try:
                if self.sock.type == socket.SOCK_STREAM:
                    conn, _ = self.sock.accept()
                    self.heard.append("connection")
                    with conn:
                        conn.sendall(b"SECRET-LISTENER\n")
                else:
                    data, peer = self.sock.recvfrom(512)
                    self.heard.append(repr(data[:40]))
                    self.sock.sendto(b"SECRET-LISTENER\n", peer)
            except OSError:
                continue

    def close(self) -> None:
        self.stopped.set()
        self.thread.join(2)
        self.sock.close()


@pytest.fixture(scope="module")
def gateways(tmp_path_factory):
    """Two real gateways (built-ins only) in this process: the script's own and "another session's"."""
    with running_gateway([], tmp_path_factory.mktemp("own")) as (_, own), running_gateway([], tmp_path_factory.mktemp("other")) as (_, other):
        yield own, other


@pytest.fixture
def planted(tmp_path, gateways, monkeypatch) -> Iterator[Dict[str, Any]]:
    """Secrets, a sleeper process, listeners and an empty dir outside the sandbox.

    ``HOME`` (with ``.ssh/id_rsa``) and ``TOOLSCRIPT_STATE_DIR`` (with a gateway
    state file holding another gateway's token URL) are set to them in this
    process, so exec's parent really has them.  Yields the CONFIG the probes get
    plus the handles ``assert_nothing_touched`` checks.
    """
    secret_text = SECRET_TEXT + uuid.uuid4().hex
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    ssh_key = home / ".ssh" / "id_rsa"
    ssh_key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n" + secret_text + "\n")
    state = tmp_path / "state" / "gateways"
    state.mkdir(parents=True)
    state.parent.chmod(0o700)
    state.chmod(0o700)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TOOLSCRIPT_STATE_DIR", str(state.parent))
    state_file = state / "default.json"
    state_file.write_text(json.dumps({"url": gateways[1], "pid": os.getpid()}))
    secret = tmp_path / "secret.txt"
    secret.write_text(secret_text)
    secret.chmod(0o600)
    outside = tmp_path / "outside"
    outside.mkdir()
    tmp_marker = os.path.join(tempfile.gettempdir(), f"escape-probe-{uuid.uuid4().hex}")
    sleeper = subprocess.Popen(
        ["sleep", "120"], start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={"PATH": "/usr/bin:/bin", "ESCAPE_SECRET": secret_text},
    )
    abstract = f"escape-probe-{uuid.uuid4().hex}"
    tcp = Listener(socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", 0))
    udp = Listener(socket.AF_INET, socket.SOCK_DGRAM, ("127.0.0.1", 0))
    unix = Listener(socket.AF_UNIX, socket.SOCK_STREAM, "\0" + abstract)
    # An inheritable descriptor of the secret, open while the script runs: exec must not pass it on.
    inherited = os.open(str(secret), os.O_RDONLY)
    os.set_inheritable(inherited, True)
    sysv = SysvObjects(secret_text) if sysv_supported() else None
    config = {
        "secret": str(secret), "secret_text": secret_text, "ssh_key": str(ssh_key), "state_file": str(state_file),
        "outside_dir": str(outside), "tmp_marker": tmp_marker, "sleeper": sleeper.pid, "tcp_port": tcp.sock.getsockname()[1],
        "udp_port": udp.sock.getsockname()[1], "abstract": abstract, "other_gateway": gateways[1],
        **(sysv.keys if sysv else {}),
    }
    listeners = {"tcp": tcp, "udp": udp, "abstract unix": unix}
    try:
        yield dict(config, _listeners=listeners, _sleeper=sleeper, _secret_stat=secret.stat(), _sysv=sysv)
    finally:
        if sysv is not None:
            sysv.remove()
        os.close(inherited)
        for listener in listeners.values():
            listener.close()
        sleeper.kill()
        sleeper.wait(10)
        if os.path.lexists(tmp_marker):
            os.remove(tmp_marker)


def probe_config(planted: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in planted.items() if not k.startswith("_")}


def assert_nothing_touched(planted: Dict[str, Any]) -> None:
    """What an escape would have left behind outside the sandbox."""
    assert planted["_sleeper"].poll() is None, "the sleeper outside the sandbox was killed"
    assert os.listdir(planted["outside_dir"]) == [], "the script created files outside its work dir"
    assert not os.path.lexists(planted["tmp_marker"]), "the script wrote into the system temp dir"
    with open(planted["secret"]) as f:
        assert f.read() == planted["secret_text"], "the script changed a file outside its work dir"
    before, after = planted["_secret_stat"], os.stat(planted["secret"])
    assert after.st_mode == before.st_mode, "the script chmod-ed a file outside its work dir"
    assert (after.st_uid, after.st_gid) == (before.st_uid, before.st_gid), "the script chown-ed a file outside its work dir"
    assert after.st_mtime_ns == before.st_mtime_ns, "the script changed the times of a file outside its work dir"
    with contextlib.suppress(OSError):
        assert os.listxattr(planted["secret"]) == [], "the script set attributes on a file outside its work dir"
    for name, listener in planted["_listeners"].items():
        assert listener.heard == [], f"the test's {name} listener was reached: {listener.heard}"
    if planted["_sysv"] is not None:
        assert planted["_sysv"].untouched() == [], "the script reached the host's SysV IPC"


# -- running probes and reading their report ------------------------------------------------------


class ProbeRun:
    """How one probe script ended: exit status, isolation mode, output, and its PROBE lines."""

    def __init__(self, exit_code: int, mode: str, timed_out: bool, stdout: str, stderr: str) -> None:
        self.exit_code, self.mode, self.timed_out, self.stdout, self.stderr = exit_code, mode, timed_out, stdout, stderr
        self.attempts = [line[len("ATTEMPT "):] for line in stdout.splitlines() if line.startswith("ATTEMPT ")]
        self.outcomes = [json.loads(line[len("PROBE "):]) for line in stdout.splitlines() if line.startswith("PROBE ")]
        self.controls = [line[len("CONTROL "):] for line in stdout.splitlines() if line.startswith("CONTROL ")]
        self.done = "DONE" in stdout.splitlines()

    def context(self) -> str:
        return f"mode {self.mode!r}, exit {self.exit_code}\n--- stdout:\n{self.stdout}\n--- stderr:\n{self.stderr[-4000:]}"


def run_probe(body: str, guard: str, config: Dict[str, Any], gateway_url: Optional[str] = None) -> ProbeRun:
    """The probe through ``sandbox.run`` in this process (the environment switches come from os.environ)."""
    out, err = Output(), Output()
    result = sandbox.run(probe_code(body, guard, config), filename="<probe>", gateway_url=gateway_url, timeout=PROBE_TIMEOUT, stdout=out, stderr=err)
    return ProbeRun(result.exit_code, result.mode, result.timed_out, out.text, err.text)


def run_probe_cli(body: str, guard: str, config: Dict[str, Any], env: Dict[str, str], gateway_url: Optional[str] = None) -> ProbeRun:
    """The probe through ``python -m toolscript exec --json`` (the path the model's scripts take)."""
    code = probe_code(body, guard, config)
    args: List[str] = []
    if gateway_url:
        args = ["--gateway-url", gateway_url]
        code = "# toolscript: this script gets a gateway\n" + code  # exec connects when the script names the runtime
    proc = run_cli(*args, "exec", "--json", "--timeout", str(PROBE_TIMEOUT), code, env=env, timeout=PROBE_TIMEOUT + 30)
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError(f"exec --json printed no JSON (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}") from None
    return ProbeRun(report["exitCode"], report["mode"], report["timedOut"], report["stdout"], report["stderr"])


def assert_escaped_nothing(run: ProbeRun, guard: str, only: Optional[Sequence[str]] = None) -> None:
    """No attempt escaped; with the guard off or bypassed, each one was stopped by the OS.

    ``only``: judge just these attempts (a rung of the ladder claims no more).
    """
    context = run.context()
    if guard == "bypassed":
        assert "BYPASS bypassed" in run.stdout, "the guard bypass did not run: " + context
    if guard == "off":
        assert "guard-off" in run.mode, "TOOLSCRIPT_EXEC_GUARD=off must show as guard-off in exec's mode: " + context
    assert not run.timed_out, "the probe ran into its timeout: " + context
    ran = [line for line in run.stdout.splitlines() if line.startswith("ESCAPED-")]
    assert ran == [], f"a program the script started ran: {ran}\n" + context
    outcomes = [o for o in run.outcomes if only is None or o["probe"] in only]
    escaped = [o for o in outcomes if o["outcome"] == "escaped"]
    assert escaped == [], f"escaped: {escaped}\n" + context
    broken = [o for o in outcomes if o["by"] == "error"]
    assert broken == [], f"the probe itself failed (not a refusal): {broken}\n" + context
    if guard != "on":
        by_guard = [o for o in outcomes if o["by"] != "os"]
        assert by_guard == [], f"stopped by the guard, not by the OS: {by_guard}\n" + context
    killed = run.exit_code > 128  # a signal: seccomp's kill, a resource limit
    assert run.done or killed, "the probe stopped before its end without a signal: " + context
    answered = {o["probe"] for o in run.outcomes}
    unanswered = [name for name in run.attempts if name not in answered]
    assert unanswered == [] or (killed and unanswered == run.attempts[-1:]), f"attempts without an outcome: {unanswered}\n" + context


@pytest.fixture(params=GUARD_MODES, ids=["guard-" + m for m in GUARD_MODES])
def guard(request, monkeypatch) -> str:
    """The guard mode of one run of the suite; sets (or clears) the test-only switch."""
    monkeypatch.delenv(LAYER_ENV, raising=False)
    if request.param == "off":
        monkeypatch.setenv(GUARD_ENV, "off")
    else:
        monkeypatch.delenv(GUARD_ENV, raising=False)
    return request.param


# -- 1 + 2: every probe, guard on / off / bypassed -------------------------------------------------


@pytest.mark.timeout(90)
@pytest.mark.parametrize("probe", PROBES)
def test_probe_escapes_nothing(probe, guard, planted):
    if probe == "resources" and sandbox.task_limit()["by"] == "count":
        pytest.skip("root without a writable pids cgroup: exec counts threads every 0.1 s, a burst in between passes the limit")
    run = run_probe(probe_source(probe), guard, probe_config(planted))
    assert_escaped_nothing(run, guard)
    assert_nothing_touched(planted)


@pytest.mark.timeout(90)
def test_network_probe_with_a_gateway_reaches_only_the_gateway(guard, planted, gateways):
    """With a gateway the script keeps the host's network stack: the policy alone must narrow it."""
    run = run_probe(probe_source("network"), guard, probe_config(planted), gateway_url=gateways[0])
    assert run.controls == ["own gateway ok"], "the script's own gateway must stay reachable: " + run.context()
    assert_escaped_nothing(run, guard)
    assert_nothing_touched(planted)


def test_the_bypass_really_switches_the_guard_off():
    """The guard-bypassed runs mean something only if the bypass works: here it lets ctypes load."""
    code = probe_source("guard_bypass") + "import ctypes\nprint('ctypes', ctypes.sizeof(ctypes.c_int))\n"
    out, err = Output(), Output()
    result = sandbox.run(code, stdout=out, stderr=err, timeout=PROBE_TIMEOUT)
    assert (result.exit_code, out.text) == (0, "BYPASS bypassed\nctypes 4\n"), err.text


# -- 3: the real tool path still works under the policy ---------------------------------------------


@pytest.fixture(scope="module")
def everything_gateway(tmp_path_factory):
    """A real gateway in this process: the built-ins and server-everything over stdio (server ``everything``)."""
    try:
        command = peers.everything_stdio_command()
    except peers.PeerMissing as exc:
        missing_prerequisite(str(exc))
    server = ServerConfig(name="everything", type="stdio", source="t", command=command[0], args=command[1:], timeout=30)
    with running_gateway([server], tmp_path_factory.mktemp("everything")) as (gw, url):
        assert gw.wait_for_servers() == []
        yield url


TOOLS_SCRIPT = """\
from toolscript import tools
print("builtin", json.dumps(tools.builtin.tools_echo(message="hi from the sandbox")))
print("everything", json.dumps(tools.everything.echo(message="hello everything")))
import socket
attempt("tcp to another loopback port", lambda: socket.create_connection(("127.0.0.1", CONFIG["tcp_port"]), timeout=1).recv(9))
attempt("call another gateway", lambda: __import__("urllib.request").request.urlopen(CONFIG["other_gateway"] + "/runtime/names", timeout=3).read(9))
attempt("read ~/.ssh/id_rsa", lambda: read_text(CONFIG["ssh_key"]))
attempt("read a gateway state file", lambda: read_text(CONFIG["state_file"]))
done()
"""


@pytest.mark.timeout(120)
def test_python_script_calls_builtins_and_server_everything_and_reaches_nothing_else(guard, planted, everything_gateway):
    env = dict(os.environ)  # the guard fixture set (or cleared) the switch there
    run = run_probe_cli("import json\n" + TOOLS_SCRIPT, guard, probe_config(planted), env, gateway_url=everything_gateway)
    lines = run.stdout.splitlines()
    assert any(line.startswith("builtin ") and "hi from the sandbox" in line for line in lines), run.context()
    assert any(line.startswith("everything ") and "hello everything" in line for line in lines), run.context()
    assert_escaped_nothing(run, guard)
    assert_nothing_touched(planted)


TS_SCRIPT = """\
import { tools } from "toolscript";
console.log("builtin", JSON.stringify(await tools.builtin.tools_echo({ message: "hi from deno" })));
console.log("everything", JSON.stringify(await tools.everything.echo({ message: "hello everything" })));
const CONFIG = %s;
const attempts: [string, () => Promise<unknown>][] = [
  ["tcp to another loopback port", () => Deno.connect({ hostname: "127.0.0.1", port: CONFIG.tcp_port })],
  ["call another gateway", () => fetch(CONFIG.other_gateway + "/runtime/names").then((r) => r.text())],
  ["read ~/.ssh/id_rsa", () => Deno.readTextFile(CONFIG.ssh_key)],
  ["read a gateway state file", () => Deno.readTextFile(CONFIG.state_file)],
  ["write outside", () => Deno.writeTextFile(CONFIG.outside_dir + "/written", "escaped")],
  ["run /bin/sh", () => new Deno.Command("/bin/sh", { args: ["-c", "echo ESCAPED-deno-sh"] }).output()],
];
for (const [name, action] of attempts) {
  try {
    await action();
    console.log("PROBE " + JSON.stringify({ probe: name, outcome: "escaped", by: "", detail: "" }));
  } catch (e) {
    console.log("PROBE " + JSON.stringify({ probe: name, outcome: "blocked", by: "os", detail: String(e).slice(0, 200) }));
  }
}
console.log("DONE");
"""


@pytest.mark.timeout(120)
def test_typescript_script_calls_builtins_and_server_everything_and_reaches_nothing_else(planted, everything_gateway):
    try:
        deno_path = peers.deno_binary()
    except peers.PeerMissing as exc:
        missing_prerequisite(str(exc))
    env = dict(os.environ, PATH=os.path.dirname(deno_path) + os.pathsep + os.environ.get("PATH", ""))
    env.pop(GUARD_ENV, None)
    code = TS_SCRIPT % json.dumps(probe_config(planted))
    proc = run_cli("--gateway-url", everything_gateway, "exec", "--lang", "ts", "--json", "--timeout", "60", code, env=env, timeout=120)
    report = json.loads(proc.stdout)
    run = ProbeRun(report["exitCode"], report["mode"], report["timedOut"], report["stdout"], report["stderr"])
    lines = run.stdout.splitlines()
    assert any(line.startswith("builtin ") and "hi from deno" in line for line in lines), run.context()
    assert any(line.startswith("everything ") and "hello everything" in line for line in lines), run.context()
    assert_escaped_nothing(run, "on")  # Deno's permissions answer first: who refused is not told apart here
    assert_nothing_touched(planted)


# -- 4: the fallback ladder, one rung at a time ------------------------------------------------------

# Per rung: the guard mode it is judged in, the probes run (one script), the attempts it claims to
# stop (None = all of them), the gateway, and how exec's mode string names it.  The OS rungs run
# with the guard off: what they claim must hold without it.
NETWORK_BY_NAMESPACE = ["tcp to another loopback port", "call another gateway", "abstract unix socket", "UDP to a listener"]
RUNGS = {
    "landlock": dict(
        # From ABI 6 no namespaces run on this rung: Landlock's scoping and file rules must stop signals and /proc alone.
        guard="off", gateway=True,
        probes=["read_secrets", "write_outside", "make_nodes", "links", "network", "signals", "proc_and_fds", "sysv_ipc"]
        + ([] if sandbox.task_limit()["by"] == "count" else ["resources"]),
        only=None, names=lambda mode: "landlock(abi " in mode,
    ),
    "bubblewrap": dict(
        guard="off", gateway=False, probes=["read_secrets", "write_outside", "links", "network", "sysv_ipc"],
        only=None, names=lambda mode: mode.startswith("bubblewrap"),
    ),
    "namespaces": dict(
        guard="off", gateway=False, probes=["signals", "proc_and_fds", "network"],
        only=["os.kill SIGKILL", "os.killpg SIGKILL", "signal.pidfd_send_signal", "kill(2) via ctypes", "open /proc/<pid>/mem",
              "read /proc/<pid>/maps"] + NETWORK_BY_NAMESPACE,
        names=lambda mode: mode.replace(sandbox.CGROUP_MODE + "+", "").startswith("namespace(") and "landlock" not in mode and "bubblewrap" not in mode,
    ),
    "guard": dict(
        guard="on", gateway=False, probes=["read_secrets", "write_outside", "run_program", "network"],
        only=None, names=lambda mode: mode in ("guard", sandbox.CGROUP_MODE + "+guard"),
    ),
}
# The guard lets an AF_INET raw socket through, and has no event for listen() (the OS rungs stop them).
RUNG_GAPS = {"guard": ["raw ICMP socket", "listen on an unbound TCP socket", "listen on an unbound TCP6 socket"]}


def landlock_abi() -> int:
    """The Landlock ABI this kernel offers (0 = none), asked the way confine.py asks."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        abi = libc.syscall(ctypes.c_long(444), None, ctypes.c_size_t(0), ctypes.c_uint32(1))  # landlock_create_ruleset, VERSION
    except (ImportError, OSError, AttributeError):
        return 0
    return max(int(abi), 0) if os.uname().machine == "x86_64" else 0


def bwrap_path() -> Optional[str]:
    return os.environ.get("TOOLSCRIPT_BWRAP") or shutil.which("bwrap")


def bwrap_installed_by_make_test() -> bool:
    """True when ``make test`` installs bubblewrap (then a missing bwrap is a failure under REQUIRE_PEERS)."""
    try:
        with open(os.path.join(REPO_ROOT, "Makefile"), encoding="utf-8") as f:
            return "bubblewrap" in f.read()
    except OSError:
        return False


def require_rung(rung: str) -> None:
    """Skip (named reason) or fail when this machine cannot offer the rung."""
    if rung == "landlock" and landlock_abi() == 0:
        missing_prerequisite("landlock rung: this kernel has no Landlock (needs Linux >= 5.13 with landlock in the LSM list)")
    if rung == "bubblewrap" and not bwrap_path():
        reason = "bubblewrap rung: bwrap not installed (Debian package bubblewrap); install it or set TOOLSCRIPT_BWRAP=/path/to/bwrap"
        if require_peers() and bwrap_installed_by_make_test():
            pytest.fail(reason + " (TOOLSCRIPT_REQUIRE_PEERS=1, and make test installs it)", pytrace=False)
        pytest.skip(reason)
    if rung == "namespaces" and sandbox.namespace_prefix(net=True) is None:
        missing_prerequisite("namespaces rung: unshare cannot create user, mount and PID namespaces here")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("rung", list(RUNGS))
def test_each_rung_of_the_ladder_reports_itself_and_stops_what_it_claims(rung, planted, gateways, monkeypatch):
    require_rung(rung)
    spec = RUNGS[rung]
    env = {k: v for k, v in os.environ.items() if k != GUARD_ENV}
    env[LAYER_ENV] = rung
    if spec["guard"] == "off":
        env[GUARD_ENV] = "off"
    body = "\n".join(probe_source(name) for name in spec["probes"])
    run = run_probe_cli(body, spec["guard"], probe_config(planted), env, gateway_url=gateways[0] if spec["gateway"] else None)
    assert spec["names"](run.mode), f"exec's mode does not name the {rung} rung: " + run.context()
    only = spec["only"]
    if only is None:
        only = [name for name in run.attempts if name not in RUNG_GAPS.get(rung, [])]
    missing = [name for name in only if name not in run.attempts]
    assert missing == [], f"these probes did not run: {missing}\n" + run.context()
    assert_escaped_nothing(run, spec["guard"], only=only)
    if spec["gateway"]:
        assert run.controls == ["own gateway ok"], "the gateway must stay reachable: " + run.context()
    assert_nothing_touched(planted)
    # isolation_report says the same as exec, with what the rung does not stop.
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    report = sandbox.isolation_report(gateway=spec["gateway"])
    assert report["layer"] == rung, report
    assert isinstance(report["stops"], list) and isinstance(report["gaps"], list), report
    if rung == "guard":
        assert report["gaps"], "the guard rung must say what it does not stop"
