"""``toolscript exec``'s sandbox: the runner, the runtime guard, and the in-script tools API.

Tool tests run a real gateway in this process with the stdlib fixture server
as three upstreams (stdio, Streamable HTTP, legacy SSE); the name map the gateway
builds from the stubs is written by hand here.  Escape attempts run in every
isolation mode this machine offers (namespaces + guard, and guard only), and
each must be refused with a clear message and leave no process behind.
"""

import http.server
import json
import os
import signal
import socket
import sys
import time

import pytest

from conftest import FAKE_TOOL_RESULTS, REPO_ROOT, Output, fake_gateway_api, running_gateway
from mcp_servers.launch import FIXTURE, start_fixture
from toolscript.codemode import process, runtime, sandbox
from toolscript.config.load import ServerConfig

NAMESPACES = sandbox.namespace_prefix(net=True) is not None
_ABI = process.kernel_probe()["landlockAbi"]
# The kernel layer comes first in the mode string when this kernel has Landlock and seccomp.
KERNEL = f"landlock(abi {_ABI})+seccomp+" + ("cgroup(pids)+" if sandbox.task_limit()["by"] == "cgroup" else "") if _ABI and process.kernel_probe()["seccomp"] else ""
SCOPED = bool(KERNEL) and _ABI >= sandbox.SCOPE_ABI  # then the default plan runs no namespaces
MODES = [pytest.param(None, id="auto")] + ([pytest.param(False, id="guard-only")] if NAMESPACES else [])
SANDBOX_ERROR = "toolscript sandbox:"
CODEMODE = os.path.join(REPO_ROOT, "toolscript", "codemode")


def run(code, **kwargs):
    """sandbox.run with captured output: (ExecResult, stdout text, stderr text)."""
    out, err = Output(), Output()
    result = sandbox.run(code, stdout=out, stderr=err, **kwargs)
    return result, out.text, err.text


def processes_left(marker):
    """Pids of processes whose command line or working directory mentions ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().decode("utf-8", "replace")
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        if marker in cmdline or marker in cwd:
            found.append(int(entry))
    return found


def assert_nothing_left(result, workdir=None):
    """The child's process group is gone, and nothing runs in (or names) its temp dir."""
    assert result.pid > 0
    with pytest.raises(ProcessLookupError):
        os.killpg(result.pid, 0)
    if workdir:
        root = os.path.dirname(workdir)
        assert not os.path.exists(root), "the temp dir was not removed"
        assert processes_left(root) == []


def first_line(text):
    return text.splitlines()[0] if text else ""


# -- the gateway, with stdio/http/sse upstreams ----------------------------------------------


def _tools_of(server, args_by_tool):
    return {fn: {"id": f"{server}__{tool}", "args": args} for fn, (tool, args) in args_by_tool.items()}


FIXTURE_FUNCS = {
    "add": ("add", {"a": "a", "b": "b"}),
    "echo": ("echo", {"message": "message"}),
    "fail": ("fail", {"message": "message"}),
    "meta": ("meta", {}),
    "whoami": ("whoami", {}),
}
NAMES = {
    "servers": {
        "alpha": _tools_of("alpha", FIXTURE_FUNCS),
        "beta": _tools_of("beta", FIXTURE_FUNCS),
        "gamma": _tools_of("gamma", FIXTURE_FUNCS),
        "builtin": {
            "time_now": {"id": "builtin__time.now", "args": {}},
            "tools_echo": {"id": "builtin__tools.echo", "args": {"message": "message"}},
        },
    }
}


@pytest.fixture(scope="module")
def gateway_url(tmp_path_factory):
    """A gateway with the fixture server over stdio (alpha), Streamable HTTP (beta) and SSE (gamma)."""
    http_peer = start_fixture("http")
    sse_peer = start_fixture("sse")
    servers = [
        ServerConfig(name="alpha", type="stdio", source="t", command=sys.executable, args=[FIXTURE, "stdio"], timeout=10),
        ServerConfig(name="beta", type="http", source="t", url=http_peer.url, timeout=10),
        ServerConfig(name="gamma", type="sse", source="t", url=sse_peer.url, timeout=10),
    ]
    try:
        with running_gateway(servers, tmp_path_factory.mktemp("ws")) as (gw, url):
            assert gw.wait_for_servers() == []
            yield url
    finally:
        http_peer.stop()
        sse_peer.stop()


class FakeHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, payload, status=200):
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path.startswith("/t/tok/search?"):
            self.server.calls.append(self.path)
            self._send({"results": [{"id": "x__plain_text", "server": "x", "name": "plain_text", "score": 0.9, "description": "says hello"}]})
        else:
            self._send({"error": "no such endpoint"}, 404)

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.calls.append(request)
        tool = request["tool"]
        if tool.startswith("builtin__"):
            self._send({"ok": True, "data": {"content": "raw builtin data"}, "error": None, "meta": {}})
        else:
            self._send({"ok": True, "data": FAKE_TOOL_RESULTS[tool], "error": None, "meta": {}})


@pytest.fixture
def fake_gateway():
    """Canned /call and /search answers, to pin down the result rules and tools.search."""
    with fake_gateway_api(FakeHandler) as server:
        yield server


# -- running code ---------------------------------------------------------------------------------


def test_print_exit_status_and_no_stdin():
    result, out, err = run("print('hello')\nprint(1 + 1)")
    assert (result.exit_code, out, err) == (0, "hello\n2\n", "")
    assert result.timed_out is False and result.truncated is False and result.duration_ms >= 0
    assert run("import sys; sys.exit(3)")[0].exit_code == 3
    result, out, err = run("raise SystemExit('bye')")
    assert result.exit_code == 1 and err == "bye\n"
    result, out, err = run("import sys\nprint(repr(sys.stdin.read()))\ninput()")
    assert out == "''\n" and result.exit_code == 1 and "EOFError" in err


def test_utf8_output_and_script_arguments():
    result, out, _ = run("import sys\nprint('héllo ✓', sys.argv)", args=["a b", "c"], filename="/somewhere/job.py")
    assert out == "héllo ✓ ['/somewhere/job.py', 'a b', 'c']\n"


def test_syntax_error_is_reported_with_line_and_column_before_anything_runs():
    code = "print('ran')\nx = 1\nif x\n    print(x)\n"
    message = sandbox.check_syntax(code, "<exec>")
    assert message.startswith("<exec>:3:") and ": SyntaxError: " in message  # the wording varies across Pythons
    result, out, err = run(code)
    assert out == "" and result.exit_code == 1 and result.mode == "none" and result.pid == 0
    assert err.startswith("<exec>:3:") and "SyntaxError" in err and "    if x\n" in err and "^" in err
    assert sandbox.check_syntax("def f(:\n", "job.py").startswith("job.py:1:")
    assert sandbox.check_syntax("x = 1\n", "<exec>") is None
    assert sandbox.check_syntax("a\0b", "<exec>").startswith("<exec>:1:1: SyntaxError")


def test_traceback_points_at_the_users_lines():
    code = "import json\n\ndef inner():\n    return {}['missing']\n\ninner()\n"
    result, out, err = run(code)
    assert result.exit_code == 1
    assert 'File "<exec>", line 6, in <module>' in err and 'File "<exec>", line 4, in inner' in err
    assert "return {}['missing']" in err and "KeyError: 'missing'" in err
    assert "_toolscript_guard" not in err and "toolscript.py" not in err
    assert first_line(err) == "Traceback (most recent call last):"
    # -f FILE: the real path, with its source lines (the file itself is outside the sandbox).
    result, _, err = run("x = 1\nraise ValueError('boom')\n", filename="/home/someone/job.py")
    assert 'File "/home/someone/job.py", line 2, in <module>' in err and "raise ValueError('boom')" in err


def test_output_streams_as_it_is_produced():
    out, err = Output(), Output()
    code = "import sys, time\nprint('first')\nprint('err line', file=sys.stderr)\ntime.sleep(1.5)\nprint('second')\n"
    sandbox.run(code, stdout=out, stderr=err)
    end = time.monotonic()
    first_at = next(t for t, c in out.chunks if b"first" in c)
    assert end - first_at > 1.0, "the first line only arrived when the script ended"
    assert out.text == "first\nsecond\n" and err.text == "err line\n"
    assert end - err.chunks[0][0] > 1.0


def test_environment_is_empty_and_home_is_the_temp_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("TOOLSCRIPT_TEST_SECRET", "hunter2")
    monkeypatch.setenv("HOME", str(tmp_path))
    code = "import json, os\nprint(json.dumps({'env': dict(os.environ), 'cwd': os.getcwd(), 'home': os.path.expanduser('~')}))"
    result, out, _ = run(code)
    seen = json.loads(out)
    assert "hunter2" not in out and "TOOLSCRIPT_TEST_SECRET" not in seen["env"]
    assert set(seen["env"]) <= {"PATH", "HOME", "TMPDIR", "LANG", "PYTHONIOENCODING", "MALLOC_ARENA_MAX"}
    assert seen["home"] == seen["cwd"] == seen["env"]["TMPDIR"] and str(tmp_path) not in out
    assert "TOOLSCRIPT_GATEWAY_URL" not in seen["env"]
    assert_nothing_left(result, seen["cwd"])


def test_temp_dir_is_removed_after_the_run_and_after_a_timeout(monkeypatch):
    # The kernel layer refuses chmod (Landlock has no right for metadata): a read-only
    # dir can only be made under the namespaces rung, and must still be removed.
    code = "import os\nos.makedirs('a/b')\nopen('a/b/f.txt', 'w').write('x')\nos.chmod('a', 0o500)\nprint(os.getcwd(), flush=True)\n"
    with monkeypatch.context() as patch:
        patch.setenv("TOOLSCRIPT_EXEC_LAYER", "namespaces")
        result, out, _ = run(code)
    assert result.exit_code == 0 and not os.path.exists(out.strip())
    result, out, err = run("import os\nprint(os.getcwd(), flush=True)\nos.makedirs('a')\nos.chmod('a', 0o500)\n")
    assert result.exit_code == 1 and "PermissionError" in err and out.strip() and not os.path.exists(out.strip())
    result, out, err = run("import os, time\nprint(os.getcwd(), flush=True)\ntime.sleep(100)", timeout=0.5)
    assert result.timed_out and result.exit_code == 124
    assert "toolscript: script timed out after 0.5s (--timeout)" in err
    assert_nothing_left(result, out.strip())


@pytest.mark.parametrize("namespaces", MODES)
@pytest.mark.parametrize("code", ["while True:\n    pass\n", "import time\ntime.sleep(100)\n"], ids=["busy-loop", "sleep"])
def test_timeout_kills_the_whole_group(code, namespaces):
    started = time.monotonic()
    result, out, err = run("import os\nprint(os.getcwd(), flush=True)\n" + code, timeout=1, namespaces=namespaces)
    assert result.exit_code == 124 and result.timed_out
    assert err.strip().endswith("toolscript: script timed out after 1s (--timeout)")
    assert time.monotonic() - started < 10  # the 1 s timeout fired (the script never ends by itself)
    assert_nothing_left(result, out.strip())


def test_cpu_time_limit_stops_the_script_with_a_message():
    # The limit is set (soft: the timeout rounded up + 1 s, SIGKILL a second later), and the kernel's
    # SIGXCPU is reported as the limit. Burning the CPU time for real would need more than one free
    # core (CPU time faster than the wall clock): on a loaded machine the wall timeout won instead.
    code = "import os, resource, signal\nprint(*resource.getrlimit(resource.RLIMIT_CPU), flush=True)\nos.kill(os.getpid(), signal.SIGXCPU)\n"
    result, out, err = run(code, timeout=2)
    assert out == "3 4\n"
    assert result.exit_code == 128 + signal.SIGXCPU and not result.timed_out
    assert "toolscript: the script used up its CPU time limit (3 s) and was stopped" in err
    assert_nothing_left(result)


def test_top_level_await():
    result, out, _ = run("import asyncio\nawait asyncio.sleep(0)\nprint('awaited')")
    assert (result.exit_code, out) == (0, "awaited\n")


def test_killed_by_a_signal_is_128_plus_the_signal():
    result, _, err = run("import os\nos.abort()", namespaces=False)
    assert result.exit_code == 128 + signal.SIGABRT and "SIGABRT" in err


def test_setup_problems_are_user_errors(tmp_path):
    from toolscript.errors import UserError

    with pytest.raises(UserError, match="no such executable"):
        run("pass", python=str(tmp_path / "nopython"))
    with pytest.raises(UserError, match="positive number of seconds"):
        run("pass", timeout=0)
    with pytest.raises(UserError, match="http://127.0.0.1:PORT/t/TOKEN"):
        run("pass", gateway_url="ftp://example.com/")


def test_mode_reports_the_isolation_that_ran(fake_gateway):
    without, out, _ = run("import os; print(os.getpid())")
    with_gateway = run("pass", gateway_url=fake_gateway.url)[0].mode
    if SCOPED:  # Landlock scopes signals itself: no namespaces unless asked for
        assert with_gateway == without.mode == KERNEL + "guard"
        assert int(out) > 2  # a host PID, not a namespace's 1 or 2
        if NAMESPACES:
            asked, out, _ = run("import os; print(os.getpid())", namespaces=True)
            assert asked.mode == KERNEL + "namespace(user,mount,pid,net)+guard" and out == "2\n"
    elif NAMESPACES:
        assert without.mode == KERNEL + "namespace(user,mount,pid,net)+guard"
        assert with_gateway == KERNEL + "namespace(user,mount,pid)+guard"
        # PID 1 of its own namespace, or 2 under the kernel layer (its init is confine.py's reaper)
        assert out == ("2\n" if KERNEL else "1\n")
    elif KERNEL:
        assert with_gateway == without.mode == KERNEL + "guard"
    result, out, _ = run("print('x')", namespaces=False)
    assert result.mode == (KERNEL + "guard" if KERNEL else sandbox.isolation_report()["mode"]) and out == "x\n"


def test_namespaces_can_be_switched_off_by_environment(monkeypatch):
    monkeypatch.setenv("TOOLSCRIPT_EXEC_NAMESPACES", "0")
    assert "namespace" not in run("pass")[0].mode


def test_allowed_things_still_work():
    code = (
        "import json, os, pathlib, tempfile, threading, shutil, zoneinfo, datetime, sys\n"
        "pathlib.Path('data').mkdir()\n"
        "pathlib.Path('data/a.json').write_text(json.dumps({'k': 1}))\n"
        "print(json.loads(open('data/a.json').read()), sorted(os.listdir('data')))\n"
        "with tempfile.NamedTemporaryFile('w', delete=False) as f: f.write('t')\n"
        "if sys.version_info >= (3, 10):  # 3.9 has no sqlite3 audit events, so the guard refuses sqlite3 there\n"
        "    import sqlite3; db = sqlite3.connect('x.db'); db.execute('create table t(a)'); db.commit(); db.close()\n"
        "threads = [threading.Thread(target=lambda: None) for _ in range(16)]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]\n"
        "shutil.rmtree('data'); print(os.path.exists('data'))\n"
        "print(datetime.datetime(2020, 1, 1, tzinfo=zoneinfo.ZoneInfo('UTC')).year)\n"
    )
    result, out, err = run(code)
    assert result.exit_code == 0, err
    assert out == "{'k': 1} ['a.json']\nFalse\n2020\n"


# -- escape attempts ---------------------------------------------------------------------------------

ESCAPES = {
    "read-home": ("open({secret!r}).read()", "toolscript sandbox: reading {secret} is not allowed"),
    "list-home": ("import os\nos.listdir({home!r})", "toolscript sandbox: listing {home} is not allowed"),
    "write-outside": ("open({outside!r}, 'w').write('x')", "toolscript sandbox: writing to {outside} is not allowed"),
    "connect-local-port": (
        "import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)",
        "toolscript sandbox: connecting to 127.0.0.1:{port} is not allowed",
    ),
    "subprocess": ("import subprocess\nsubprocess.run(['/bin/sh', '-c', 'echo escaped'])", "toolscript sandbox: starting a program (subprocess) is not allowed"),
    "os-system": ("import os\nos.system('echo escaped')", "toolscript sandbox: running a shell command (os.system) is not allowed"),
    "exec": ("import os\nos.execv('/bin/sh', ['sh', '-c', 'echo escaped'])", "toolscript sandbox: starting a program (os.exec*) is not allowed"),
    "ctypes": ("import ctypes\nctypes.CDLL(None)", "toolscript sandbox: importing ctypes is not allowed"),
    "fork-bomb": ("import os\nwhile True:\n    os.fork()", "toolscript sandbox: starting a process (os.fork) is not allowed"),
    "multiprocessing": (
        "import multiprocessing\nmultiprocessing.Process(target=print).start()",
        "toolscript sandbox: starting a process (os.fork) is not allowed",
    ),
    "memory-hog": ("chunks = []\nwhile True:\n    chunks.append(bytearray(50 * 1024 * 1024))", "toolscript: the script ran out of memory"),
    # Signal 0 only checks: if the guard let it through, nothing would happen to this test process.
    "signal-another-process": ("import os\nos.kill({me}, 0)", "toolscript sandbox: signalling process {me} is not allowed"),
}


@pytest.fixture
def listener():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(5)
    sock.settimeout(0)
    yield sock
    sock.close()


@pytest.mark.parametrize("namespaces", MODES)
@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_escape_attempts_are_stopped(name, namespaces, tmp_path, monkeypatch, listener):
    home = tmp_path / "home"
    home.mkdir()
    secret = home / "secret.txt"
    secret.write_text("hunter2")
    monkeypatch.setenv("HOME", str(home))
    outside = str(tmp_path / "escaped.txt")
    port = listener.getsockname()[1]
    values = {"secret": str(secret), "home": str(home), "outside": outside, "port": port, "me": os.getpid()}
    code, expected = ESCAPES[name]
    prologue = "import os\nprint(os.getcwd(), flush=True)\n"
    result, out, err = run(prologue + code.format(**values), timeout=10, namespaces=namespaces)
    assert result.exit_code == 1, (out, err)
    assert expected.format(**values) in err, err
    assert "escaped" not in out and "hunter2" not in out + err
    assert not os.path.exists(outside)
    with pytest.raises(BlockingIOError):
        listener.accept()  # nobody connected
    assert_nothing_left(result, out.splitlines()[0])


@pytest.mark.parametrize("namespaces", MODES)
def test_endless_output_is_cut_off(namespaces):
    result, out, err = run("import os\nprint(os.getcwd(), flush=True)\nwhile True:\n    print('x' * 99)", max_output=100_000, namespaces=namespaces)
    assert result.truncated and not result.timed_out and result.exit_code == 1
    assert len(out.encode()) == 100_000
    assert err.endswith("\n[toolscript: output truncated after 100000 bytes]\n")
    assert_nothing_left(result, out.splitlines()[0])


def test_more_escape_routes_are_refused():
    """Routes around the obvious ones: each line must fail with the guard's message."""
    attempts = [
        "open('../../etc/hostname')",
        "import os; os.symlink('/etc/passwd', 'p')",
        "import os; os.chdir('/')",
        "import os; os.open('/', os.O_RDONLY)",
        "import sys; open(sys.prefix + '/evil.py', 'w')",
        "import _posixsubprocess; _posixsubprocess.fork_exec()",
        "import sys; del sys.modules['_posixsubprocess']; import _posixsubprocess",
        "import socket; socket.getaddrinfo('example.com', 80)",
        "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'x', ('127.0.0.1', 9))",
        "import socket; socket.socket().bind(('127.0.0.1', 0))",
        "import gc; gc.get_objects()",
        "import resource; resource.setrlimit(resource.RLIMIT_NOFILE, (10, 10))",
        "import sqlite3; sqlite3.connect('/tmp/elsewhere.db')",
        "import importlib.machinery as m, importlib.util as u, os\nopen('evil.so', 'wb').write(b'\\x7fELF')\n"
        "u.module_from_spec(u.spec_from_loader('evil', m.ExtensionFileLoader('evil', os.path.abspath('evil.so'))))",
        "import os\nclass P:\n    def __fspath__(self):\n        return '/etc/hostname'\nopen(P())",
        "import pty; pty.spawn('/bin/sh')",
        "import importlib.util as u; u.module_from_spec(u.find_spec('_ctypes'))",
        "import dbm.gnu",
        "import os; os.link('/etc/hostname', 'h')",
        "open('/proc/self/environ').read()",
        # The hook must never run the script's code while it checks (here: a str subclass's methods).
        "class S(str):\n    def startswith(self, *a):\n        return True\nopen(S('/etc/hostname'))",
        "import builtins, os\nbuiltins.type = lambda o: str\nos.lstat = None\nopen('/etc/hostname')",
        "import os; os.posix_spawn('/bin/sh', ['sh'], {})",
    ]
    for attempt in attempts:
        result, out, err = run(attempt)
        assert result.exit_code == 1 and SANDBOX_ERROR in err and "is not allowed" in err, (attempt, err)


# -- the tools API ---------------------------------------------------------------------------------


def test_chained_calls_across_stdio_http_and_sse(gateway_url):
    code = (
        "from toolscript import tools\n"
        "a = tools.alpha.add(a=2, b=3)\n"
        "b = tools.beta.echo(message=f\"got {a['sum']}\")\n"
        "c = tools.gamma.add(a=a['sum'], b=10)\n"
        "t = tools.builtin.time_now()\n"
        "print(a, b, c, sorted(t))\n"
        "print(tools.call('gamma__echo', {'message': 'dynamic'}), tools.call('beta__add', a=1, b=1))\n"
        "print(tools.alpha.meta(), tools.gamma.whoami()['transport'])\n"
        "for i in range(200):\n"
        "    assert tools.beta.add(a=i, b=1) == {'sum': i + 1}\n"
        "print('200 calls')\n"
    )
    result, out, err = run(code, gateway_url=gateway_url, names=NAMES)
    assert result.exit_code == 0, err
    lines = out.splitlines()
    assert lines[0] == "{'sum': 5} Echo: got 5 {'sum': 15} ['iso', 'timestamp']"
    assert lines[1] == "Echo: dynamic {'sum': 2}"
    assert lines[2].startswith("meta ") and lines[3] == "200 calls"
    if NAMESPACES:
        assert result.mode == KERNEL + ("guard" if SCOPED else "namespace(user,mount,pid)+guard")


def test_tool_errors_raise_tool_error(gateway_url):
    code = (
        "from toolscript import tools, ToolError\n"
        "for call in (lambda: tools.beta.fail(message='no luck'), lambda: tools.alpha.add(a='x', b=1),\n"
        "             lambda: tools.call('nosuch__tool', {})):\n"
        "    try:\n"
        "        call()\n"
        "    except ToolError as e:\n"
        "        print(type(e).__name__, e.tool, e.code, '|', e)\n"
        "tools.gamma.fail(message='uncaught')\n"
    )
    result, out, err = run(code, gateway_url=gateway_url, names=NAMES)
    lines = out.splitlines()
    assert lines[0] == "ToolError beta__fail execution_error | beta__fail: no luck"
    assert lines[1].startswith("ToolError alpha__add invalid_args | alpha__add: ") and "/a" in lines[1]
    assert lines[2].startswith("ToolError nosuch__tool tool_not_found | nosuch__tool: ")
    assert result.exit_code == 1
    assert 'File "<exec>", line 8, in <module>' in err and err.strip().endswith("toolscript.ToolError: gamma__fail: uncaught")
    assert "toolscript.py" not in err


def test_discovery_and_helpful_attribute_errors(gateway_url):
    code = (
        "from toolscript import tools\n"
        "print(sorted(t['name'] for t in tools.list('alpha'))[:3])\n"
        "print(sorted(dir(tools))[:3], sorted(dir(tools.alpha))[:2])\n"
        "try:\n    tools.alpha.ad\nexcept AttributeError as e:\n    print(e)\n"
        "try:\n    tools.alpah\nexcept AttributeError as e:\n    print(e)\n"
        "tools.alpha.add(2, 3)\n"
    )
    result, out, err = run(code, gateway_url=gateway_url, names=NAMES)
    lines = out.splitlines()
    assert lines[0] == "['add', 'big', 'change_tools']"
    assert lines[1] == "['alpha', 'beta', 'builtin'] ['add', 'echo']"
    assert lines[2].startswith("tools.alpha has no tool 'ad'; did you mean add")
    assert lines[3].startswith("tools has no server 'alpah'; did you mean alpha")
    assert "TypeError: tools.alpha.add() takes keyword arguments only: tools.alpha.add(a=..., b=...)" in err


def test_result_rules_search_and_builtins_against_a_fake_gateway(fake_gateway):
    names = {"servers": {"x": {k.split("__")[1]: {"id": k, "args": {}} for k in FAKE_TOOL_RESULTS}, "builtin": {"raw": {"id": "builtin__raw", "args": {}}}}}
    code = (
        "from toolscript import tools\n"
        "for name in ['structured', 'json_text', 'plain_text', 'two_texts', 'image', 'empty']:\n"
        "    print(name, repr(getattr(tools.x, name)()))\n"
        "print(repr(tools.builtin.raw()))\n"
        "print(tools.search('say hello & more', limit=3))\n"
        "print(tools.x.plain_text(keep=1, dropped=None))\n"
    )
    result, out, err = run(code, gateway_url=fake_gateway.url, names=names)
    assert result.exit_code == 0, err
    assert out.splitlines()[:7] == [
        "structured {'b': 2}",
        "json_text {'a': [1, 2]}",
        "plain_text 'hello'",
        "two_texts 'one\\ntwo'",
        "image [{'type': 'image', 'data': 'AAAA', 'mimeType': 'image/png'}]",
        "empty []",
        "{'content': 'raw builtin data'}",
    ]
    assert "'id': 'x__plain_text'" in out.splitlines()[7]
    assert "/t/tok/search?q=say%20hello%20%26%20more&limit=3" in fake_gateway.calls
    assert fake_gateway.calls[-1] == {"tool": "x__plain_text", "arguments": {"keep": 1}, "source": "exec"}


def test_result_rules_in_process():
    value = runtime._result_value
    assert value("s__t", {"content": [{"type": "text", "text": "5"}]}) == 5
    assert value("s__t", {"content": [{"type": "text", "text": "x"}], "structuredContent": None}) == "x"
    assert value("builtin__time.now", {"content": [{"type": "text", "text": "5"}]}) == {"content": [{"type": "text", "text": "5"}]}
    err = runtime.ToolError("s__t", "execution_error", "boom")
    assert str(err) == "s__t: boom" and err.code == "execution_error"


def test_scripts_without_a_gateway_get_a_clear_error():
    result, out, err = run("from toolscript import tools\ntools.call('a__b', {})", names=NAMES)
    assert result.exit_code == 1 and "ToolError: a__b: this script has no gateway" in err


def test_the_gateway_is_the_only_reachable_port(gateway_url, listener):
    port = listener.getsockname()[1]
    code = (
        "import socket\nfrom toolscript import tools\n"
        "print(tools.alpha.add(a=1, b=2))\n"
        f"socket.create_connection(('127.0.0.1', {port}))\n"
    )
    result, out, err = run(code, gateway_url=gateway_url, names=NAMES)
    assert out == "{'sum': 3}\n" and result.exit_code == 1
    assert f"connecting to 127.0.0.1:{port} is not allowed (only the toolscript gateway can be reached)" in err


# -- a configured server that failed says why ------------------------------------------------

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


# -- other interpreters and the zipapp ---------------------------------------------------------------


def test_runs_on_python39_with_tools(python39, gateway_url):
    code = "import sys\nfrom toolscript import tools\nprint(sys.version_info[:2], tools.beta.add(a=1, b=2))\nopen('/etc/hostname')"
    result, out, err = run(code, gateway_url=gateway_url, names=NAMES, python=python39)
    assert out == "(3, 9) {'sum': 3}\n" and result.exit_code == 1
    assert "toolscript sandbox: reading /etc/hostname is not allowed" in err


def test_works_from_the_zipapp(pyz, tmp_path):
    import subprocess

    driver = (
        "import sys\nsys.path.insert(0, sys.argv[1])\n"
        "from toolscript.codemode import sandbox\n"
        "r = sandbox.run('print(6 * 7)', stdout=sys.stdout.buffer, stderr=sys.stderr.buffer)\n"
        "sys.exit(r.exit_code)\n"
    )
    proc = subprocess.run([sys.executable, "-I", "-c", driver, pyz], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60, cwd=str(tmp_path))
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"42\n", b"")


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


# -- the code ----------------------------------------------------------------------------------------


def test_the_child_reads_the_files_by_the_names_the_parent_writes():
    from toolscript.codemode import guard

    assert guard.POLICY_NAME == sandbox.POLICY_NAME
    assert guard.CONFINE_MODULE + ".py" == process.CONFINE_NAME
    assert runtime.NAMES_FILE == sandbox.NAMES_NAME


def test_the_sandbox_names_no_flag_or_function_that_does_not_exist():
    assert not hasattr(sandbox, "isolation_mode")  # ExecResult.mode and exec -v report the mode
    for name in os.listdir(CODEMODE):
        if not name.endswith((".py", ".ts")):
            continue
        with open(os.path.join(CODEMODE, name), encoding="utf-8") as f:
            text = f.read()
        assert "--namespaces" not in text, f"{name} mentions a --namespaces flag that does not exist"
    assert "README section" not in (sandbox.__doc__ or "")  # the module explains itself
