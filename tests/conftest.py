"""Shared test support: the built zipapp, CLI runners, a Python 3.9 finder, a hard per-test limit.

Stdlib only (plus pytest) and Python 3.9 compatible, like everything in tests/.

* ``pyz`` (session fixture): ``build_pyz.build()`` into a temp dir; the path of the archive.
* ``run_cli(*args, env=None, cwd=None, input=None, python=sys.executable, timeout=60)``:
  ``python -m toolscript ARGS`` from the checkout (PYTHONPATH = repo root).
* ``run_pyz(pyz, *args, python=sys.executable, isolated=True, ...)``: ``python -I PYZ ARGS``.
* ``find_python39()``: a working Python 3.9 interpreter, or skip (fail under
  ``TOOLSCRIPT_REQUIRE_PEERS=1``).
* ``wait_for(predicate, timeout)``: poll until true.
* ``clean_env``: an environment with ``HOME`` set to an empty temp dir and none of the
  variables that change toolscript's behaviour (``TOOLSCRIPT_CONFIG``, ``DEBUG``).
* ``trust_project_file(path, env)``: approve a project's ``.toolscript.json`` (``toolscript trust --yes``).

Every subprocess call here has a timeout.  On top of that each test has a hard
limit (SIGALRM, where available): ``TOOLSCRIPT_TEST_TIMEOUT`` seconds (default
300), or ``@pytest.mark.timeout(N)`` for one test.

Isolation: each test process (the main one, or each pytest-xdist worker) runs with
``HOME`` set to an empty temp dir of its own and without the variables that point
toolscript at a user's state, session or gateway (``_CALLER_STATE_VARS``).  So a test
that starts a gateway without naming a state dir never touches the real
``~/.local/state/toolscript``, nor the default session of another worker.
"""

import contextlib
import glob
import importlib.util
import io
import json
import os
import signal
import subprocess
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional

import pytest

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(TESTS_DIR)

# ``import peers`` from tests, and ``import toolscript`` / ``import build_pyz`` from the checkout.
for _path in (REPO_ROOT, TESTS_DIR):
    if _path not in sys.path:
        sys.path.insert(0, _path)

DEFAULT_TIMEOUT = 60.0  # seconds, for every subprocess a test starts
_HARD_LIMIT_ENV = "TOOLSCRIPT_TEST_TIMEOUT"
_HARD_LIMIT_DEFAULT = 300.0
# Variables that change what toolscript does; tests start without them.
_BEHAVIOUR_VARS = ("TOOLSCRIPT_CONFIG", "DEBUG", "PYTHONSTARTUP", "PYTHONWARNINGS", "PYTHONHOME")
# Variables that would point a test at the caller's state dir, gateway or Claude Code session.
_CALLER_STATE_VARS = (
    "TOOLSCRIPT_CONFIG", "TOOLSCRIPT_GATEWAY_URL", "TOOLSCRIPT_GATEWAY_LOG", "TOOLSCRIPT_STATE_DIR",
    "TOOLSCRIPT_HOOKS_DISABLED", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "CLAUDE_CODE_SESSION_ID",
    "CLAUDE_CONFIG_DIR", "CLAUDE_ENV_FILE", "CLAUDE_PID", "CLAUDE_PLUGIN_ROOT", "CLAUDE_PROJECT_DIR",
    # A developer's real model credentials must never reach a test (the suggestion hook would call the real API).
    "TOOLSCRIPT_SUGGEST", "TOOLSCRIPT_SUGGEST_BACKEND", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_CUSTOM_HEADERS", "CLAUDE_CODE_OAUTH_TOKEN",
)
# The caller's real home, read before the tests get their own (a pyenv Python 3.9 lives there).
# xdist workers inherit the main process's test HOME, so it is passed on in this variable.
_REAL_HOME_ENV = "TOOLSCRIPT_TEST_REAL_HOME"
REAL_HOME = os.environ.get(_REAL_HOME_ENV) or os.path.expanduser("~")


def require_peers() -> bool:
    """True when a missing prerequisite must fail the run instead of skipping (CI)."""
    return os.environ.get("TOOLSCRIPT_REQUIRE_PEERS") == "1"


def missing_prerequisite(reason: str) -> None:
    """Skip the test, or fail it under ``TOOLSCRIPT_REQUIRE_PEERS=1``."""
    if require_peers():
        pytest.fail(f"{reason} (TOOLSCRIPT_REQUIRE_PEERS=1)", pytrace=False)
    pytest.skip(reason)


# --- running toolscript -----------------------------------------------------


def _with_pythonpath(env: Optional[Mapping[str, str]]) -> Dict[str, str]:
    result = dict(os.environ if env is None else env)
    result["PYTHONPATH"] = REPO_ROOT
    return result


def sigint_as_at_a_terminal() -> None:
    """``preexec_fn`` for a child a test will Ctrl-C: SIGINT back to its default, as at a terminal.

    A test run started in the background (``make test &``, nohup) ignores
    SIGINT; children inherit that, and a Python child then never raises
    KeyboardInterrupt, so the test would time out though the code is right.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_cli(
    *args: str,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[str] = None,
    input: Optional[str] = None,
    python: str = sys.executable,
    timeout: float = DEFAULT_TIMEOUT,
) -> "subprocess.CompletedProcess[str]":
    """Run ``python -m toolscript ARGS`` from the checkout; text stdout/stderr, never raises on exit status.

    ``env`` is the whole environment (default: this process's); PYTHONPATH is
    always set to the repository root so the checkout's package is the one run.
    """
    return _run_text([python, "-m", "toolscript", *map(str, args)], _with_pythonpath(env), cwd, input, timeout)


def run_pyz(
    pyz: str,
    *args: str,
    python: str = sys.executable,
    isolated: bool = True,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[str] = None,
    input: Optional[str] = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> "subprocess.CompletedProcess[str]":
    """Run the zipapp: ``python -I PYZ ARGS`` (``isolated=False`` drops the ``-I``)."""
    argv: List[str] = [python] + (["-I"] if isolated else []) + [str(pyz)] + list(map(str, args))
    return _run_text(argv, None if env is None else dict(env), cwd, input, timeout)


def load_script(path: str) -> Any:
    """A fresh module of a script of the repository that is not a package (``path`` from the root, e.g.
    ``bench/search.py``), for tests that check a bench grid computes what the product does."""
    spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0] + "_under_test",
                                                  os.path.join(REPO_ROOT, path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _run_text(
    argv: List[str], env: Optional[Dict[str, str]], cwd: Optional[str], input: Optional[str], timeout: float
) -> "subprocess.CompletedProcess[str]":
    """``argv`` with stdout and stderr captured as text and stdin from ``input`` (none without it)."""
    return subprocess.run(
        argv,
        env=env,
        cwd=None if cwd is None else str(cwd),
        input=input,
        stdin=None if input is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        timeout=timeout,
    )


# The word-vector table before its tuning on tool requests (VECTORS-V3; distill/README.md).
VECTORS_V3 = os.path.join(REPO_ROOT, "distill", "embeddings-v3.bin")


@pytest.fixture
def no_thesaurus(monkeypatch):
    """Search without its thesaurus for one test.

    The mechanism tests of the vectors and similar words were written before the thesaurus: each needs a request
    whose words reach no tool, and the thesaurus now reaches some ("changed lately" -> the commit log).  That says
    nothing about the mechanism under test; tests/test_thesaurus.py tests the thesaurus itself.
    """
    from toolscript.search import thesaurus

    monkeypatch.setattr(thesaurus, "load", lambda: {})


@pytest.fixture
def vectors_v3():
    """VECTORS-V3 in place of the shipped table for one test, then the shipped one again.

    The fusion's mechanism tests were written against V3's cosines: each shows a case the mechanism decides
    and, with it switched off, one it gets wrong.  A better table may get that case right on its own, which
    says nothing about the mechanism; so those tests pin the table they were written for.
    """
    from toolscript.search import vectors

    with open(VECTORS_V3, "rb") as f:
        vectors.use_table(f.read())
    try:
        yield
    finally:
        vectors.reset()  # read from the package again on next use


@pytest.fixture(name="run_cli")
def _run_cli_fixture():
    """The :func:`run_cli` function."""
    return run_cli


@pytest.fixture(name="run_pyz")
def _run_pyz_fixture():
    """The :func:`run_pyz` function."""
    return run_pyz


@pytest.fixture(scope="session")
def deno_path() -> str:
    """The pinned Deno binary (``peers.deno_binary()``); skips when it is not installed (fails under
    ``TOOLSCRIPT_REQUIRE_PEERS=1``)."""
    import peers

    try:
        return peers.deno_binary()
    except peers.PeerMissing as exc:
        missing_prerequisite(str(exc))
        raise  # not reached: missing_prerequisite skips or fails


def deno_on_runtime(deno: str, workdir: Any, names: Dict[str, Any], main_ts: str, *args: str) -> "subprocess.CompletedProcess[str]":
    """``deno ARGS`` in ``workdir``, where it finds the TypeScript tools runtime for ``names`` as
    tools.ts and ``main_ts`` as main.ts; a Deno cache and HOME of its own there, no colour."""
    from toolscript.gateway import tsruntime

    (workdir / "tools.ts").write_text(tsruntime.typescript_runtime(names))
    (workdir / "main.ts").write_text(main_ts)
    env = {"DENO_DIR": str(workdir / "cache"), "NO_COLOR": "1", "DENO_NO_UPDATE_CHECK": "1", "HOME": str(workdir)}
    return subprocess.run([deno, *args], cwd=str(workdir), env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="session")
def conformance() -> List[str]:
    """The argv prefix of the MCP conformance CLI (``peers.conformance_cli()``); skips when it is not
    installed (fails under ``TOOLSCRIPT_REQUIRE_PEERS=1``)."""
    import peers

    try:
        return peers.conformance_cli()
    except peers.PeerMissing as exc:
        missing_prerequisite(str(exc))
        raise  # not reached: missing_prerequisite skips or fails


@pytest.fixture(scope="session")
def pyz(tmp_path_factory) -> str:
    """``build_pyz.build()`` of the checkout into a temp dir; the archive's path."""
    import build_pyz

    out = tmp_path_factory.mktemp("pyz") / "toolscript.pyz"
    return build_pyz.build(str(out))


@pytest.fixture
def empty_home(tmp_path) -> str:
    """An empty directory to use as ``HOME``."""
    home = tmp_path / "home"
    home.mkdir()
    return str(home)


@pytest.fixture
def workdir(tmp_path) -> str:
    """An empty directory to run commands in (no ./.toolscript.json)."""
    work = tmp_path / "work"
    work.mkdir()
    return str(work)


def trust_project_file(path: Any, env: Mapping[str, str]) -> None:
    """Approve a project's ``.toolscript.json`` as the user's ``toolscript trust --yes`` would.

    A project file counts only once approved; tests whose subject is what such a file
    configures approve it first, in the state directory ``env`` names.
    """
    from toolscript.config import trust

    with open(path, "rb") as f:
        trust.approve(str(path), f.read(), environ=env)


@pytest.fixture
def clean_env(empty_home) -> Dict[str, str]:
    """This process's environment with ``HOME`` empty and no toolscript-relevant variables."""
    env = {k: v for k, v in os.environ.items() if k not in _BEHAVIOUR_VARS}
    env["HOME"] = empty_home
    return env


# The variables Claude Code's hooks and toolscript's own settings read: a test of memory or hooks in this
# process starts without any of them from the outside.
_HOOK_VARS = ("USER_PROMPT", "TOOL_NAME", "TOOL_INPUT", "TOOL_OUTPUT", "RESPONSE_SUMMARY", "SESSION_SUMMARY")


@pytest.fixture
def scratch_dirs(tmp_path, monkeypatch) -> Path:
    """``tmp_path``, made this process's ``HOME`` (tmp_path/home) and toolscript's data and state directories
    (tmp_path/data, tmp_path/state), with no TOOLSCRIPT_*, CLAUDE_* or hook variable from the outside."""
    for name in list(os.environ):
        if name.startswith(("TOOLSCRIPT_", "CLAUDE_")) or name in _HOOK_VARS:
            monkeypatch.delenv(name)
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TOOLSCRIPT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("TOOLSCRIPT_STATE_DIR", str(tmp_path / "state"))
    return tmp_path


def git_project(path: Path) -> Path:
    """``path`` made a project root (it holds a ``.git``), which memory keys its memories by."""
    (path / ".git").mkdir(parents=True)
    return path


# --- Python 3.9 ---------------------------------------------------------------


def _python_version(python: str) -> Optional[tuple]:
    """``sys.version_info[:2]`` of ``python``, or None if it does not run (e.g. a pyenv shim)."""
    try:
        proc = subprocess.run(
            [python, "-c", "import sys;print(sys.version_info[:2])"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    try:
        major, minor = proc.stdout.strip().strip("()").split(",")
        return int(major), int(minor)
    except ValueError:
        return None


def python39_candidates() -> List[str]:
    """Where a Python 3.9 may live, in the order they are tried."""
    import shutil

    candidates: List[str] = []
    explicit = os.environ.get("TOOLSCRIPT_PYTHON39", "").strip()
    if explicit:
        candidates.append(explicit)
    on_path = shutil.which("python3.9")
    if on_path:
        candidates.append(on_path)
    candidates += sorted(glob.glob(os.path.join(REAL_HOME, ".pyenv/versions/3.9*/bin/python3")), reverse=True)
    candidates.append("/usr/bin/python3.9")
    return candidates


def find_python39() -> str:
    """The path of a working Python 3.9 interpreter; skip (or fail under REQUIRE_PEERS) if none.

    ``TOOLSCRIPT_PYTHON39`` wins; then ``python3.9`` on PATH if it really runs
    (pyenv shims exist but fail), then ``~/.pyenv/versions/3.9*/bin/python3``
    and ``/usr/bin/python3.9``.
    """
    tried = []
    for candidate in python39_candidates():
        if candidate in tried:
            continue
        tried.append(candidate)
        if _python_version(candidate) == (3, 9):
            return candidate
    missing_prerequisite(
        "no working Python 3.9 found (tried: " + ", ".join(tried) + "); "
        "set TOOLSCRIPT_PYTHON39=/path/to/python3.9"
    )
    raise AssertionError("unreachable")  # pragma: no cover


@pytest.fixture(scope="session")
def python39() -> str:
    """:func:`find_python39` as a fixture."""
    return find_python39()


# --- hard per-test limit --------------------------------------------------------


class HardTimeout(Exception):
    """A test ran past its hard limit."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        f"timeout(seconds): hard limit for one test (default ${_HARD_LIMIT_ENV} or {_HARD_LIMIT_DEFAULT:g} s)",
    )
    _isolate_environment(config)


def _isolate_environment(config) -> None:
    """Give this test process a HOME of its own and drop the caller's state variables (see the module doc)."""
    home = tempfile.mkdtemp(prefix="toolscript-test-home-")
    config.add_cleanup(lambda: shutil.rmtree(home, ignore_errors=True))
    for name in _CALLER_STATE_VARS:
        os.environ.pop(name, None)
    os.environ[_REAL_HOME_ENV] = REAL_HOME
    os.environ["HOME"] = home


@pytest.fixture(autouse=True)
def _no_remembered_eras():
    """Each test starts with no remembered protocol eras (toolscript/gateway/eras.py).

    In-process gateways of one pytest process share its HOME, so a hint left by
    one test (say "handshake" for a fixture command) would skip the discovery
    probe another test expects to see.
    """
    from toolscript import paths

    try:
        os.unlink(os.path.join(paths.state_dir_path(), "eras.json"))
    except OSError:
        pass
    yield


def _limit_for(item) -> float:
    marker = item.get_closest_marker("timeout")
    if marker is not None and marker.args:
        return float(marker.args[0])
    try:
        return float(os.environ.get(_HARD_LIMIT_ENV, _HARD_LIMIT_DEFAULT))
    except ValueError:
        return _HARD_LIMIT_DEFAULT


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem) -> Iterator[None]:
    """Interrupt a test (setup, call and teardown together) that runs past its limit.

    Uses SIGALRM, so it only works on POSIX and in the main thread; elsewhere
    the subprocess timeouts are the only guard.
    """
    limit = _limit_for(item)
    usable = (
        limit > 0
        and hasattr(signal, "SIGALRM")
        and threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, signal.SIG_IGN, None)
    )
    if not usable:
        yield
        return

    def on_alarm(signum, frame):
        raise HardTimeout(f"{item.nodeid} exceeded its hard limit of {limit:g} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --- shared helpers for tests that run a gateway or a sandbox ---------------------


@contextlib.contextmanager
def running_gateway(servers, workspace, **settings):
    """A Gateway for ``servers`` served from this process: yields (gateway, url), then stops it."""
    from toolscript.config.load import Config
    from toolscript.gateway.http_api import serve
    from toolscript.gateway.service import Gateway

    config = Config(servers={s.name: s for s in servers}, files=[], warnings=[], **settings)
    gw = Gateway(config, workspace=str(workspace))
    server, _ = serve(gw)
    gw.start()
    try:
        yield gw, server.url
    finally:
        server.shutdown_all()
        gw.stop()


@pytest.fixture
def fixture_session():
    """fixture_session(transport, *fixture options, timeout=10, headers=None, max_message_bytes=None,
    **open_session callbacks) -> an initialized session to tests/mcp_servers/fixture_server.py over
    "stdio", "http", "http-json" (JSON answers) or "sse"; every session and server ends with the test."""
    from mcp_servers.launch import start_fixture, stdio_command
    from toolscript.config.load import ServerConfig
    from toolscript.mcp.client.connect import open_session

    opened, started = [], []

    def _open(transport, *options, timeout=10.0, headers=None, max_message_bytes=None, **callbacks):
        limit = {} if max_message_bytes is None else {"max_message_bytes": max_message_bytes}
        if transport == "stdio":
            cmd = stdio_command(*options)
            server = ServerConfig(name="fixture", type="stdio", source="test", command=cmd[0], args=cmd[1:], timeout=timeout, **limit)
        else:
            mode = "sse" if transport == "sse" else "http"
            peer = start_fixture(mode, *(["--json-response"] if transport == "http-json" else []), *options)
            started.append(peer)
            server = ServerConfig(name="fixture", type=mode, source="test", url=peer.url, headers=headers or {}, timeout=timeout, **limit)
        session = open_session(server, **callbacks)
        opened.append(session)
        return session

    yield _open
    for session in opened:
        session.close()
    for peer in started:
        peer.stop()


@pytest.fixture
def gateway(tmp_path):
    """gateway(*servers, **config settings) -> (Gateway, url), served from this process; stopped afterwards."""
    with contextlib.ExitStack() as stack:
        yield lambda *servers, **settings: stack.enter_context(running_gateway(servers, tmp_path, **settings))


# What a fake gateway's tools x__* answer: one result of each shape the runtimes' result rules tell apart.
FAKE_TOOL_RESULTS = {
    "x__structured": {"content": [{"type": "text", "text": "{\"a\": 1}"}], "structuredContent": {"b": 2}},
    "x__json_text": {"content": [{"type": "text", "text": "{\"a\": [1, 2]}"}]},
    "x__plain_text": {"content": [{"type": "text", "text": "hello"}]},
    "x__two_texts": {"content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]},
    "x__image": {"content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]},
    "x__empty": {"content": []},
}


@contextlib.contextmanager
def fake_gateway_api(handler: type) -> Iterator[Any]:
    """A stand-in for the gateway's code-mode API, answering with ``handler`` (an http.server request
    handler) at ``server.url`` (token "tok"), served from a thread until the block ends.  ``server.calls``
    is a list for the handler to record what it was asked."""
    import http.server

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    server.calls = []
    server.url = f"http://127.0.0.1:{server.server_address[1]}/t/tok"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def wait_for(predicate, timeout: float = 10.0):
    """Poll ``predicate`` until it is true or ``timeout`` passes; return its last value."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    return predicate()


class Output(io.RawIOBase):
    """A binary stream that records when each chunk arrived (for streaming tests)."""

    def __init__(self) -> None:
        super().__init__()
        self.chunks = []

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        import time

        self.chunks.append((time.monotonic(), bytes(data)))
        return len(data)

    @property
    def text(self) -> str:
        return b"".join(c for _, c in self.chunks).decode("utf-8", "replace")


# --- running as an unprivileged user (the suite runs as root in CI) --------------------


def as_unprivileged_user(job):
    """``job()``'s JSON-able result, run as ``nobody`` in a forked child when we are root.

    Root writes through any mode bits, so an unwritable directory needs an unprivileged
    process. A fork, not a subprocess: this interpreter may live where ``nobody`` cannot
    read it (under /root), and the child needs nothing but the code already loaded.
    """
    if os.geteuid() != 0:
        return job()
    import pwd
    import traceback

    nobody = pwd.getpwnam("nobody")
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop root for good, run the job, report through the pipe
        code = 1
        try:
            os.close(read_fd)
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            payload = json.dumps(job())
            code = 0
        except BaseException:
            payload = traceback.format_exc()
        try:
            os.write(write_fd, payload.encode())
        finally:
            os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        output = pipe.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, output
    return json.loads(output)


@pytest.fixture(autouse=True)
def _toolscript_logger_as_found():
    """Each test leaves the ``toolscript`` logger as it found it.

    An in-process ``main()`` calls ``log.setup()``, which attaches a handler to
    the stderr pytest captured for that test (closed afterwards) and stops
    propagation, so a later test's ``caplog`` would see nothing.
    """
    import logging

    logger = logging.getLogger("toolscript")
    handlers, level, propagate = list(logger.handlers), logger.level, logger.propagate
    yield
    for handler in logger.handlers:
        if handler not in handlers:
            logger.removeHandler(handler)
            handler.close()
    logger.setLevel(level)
    logger.propagate = propagate
