"""The runner behind ``toolscript exec``: Python code in a sandboxed child interpreter.

``run(code, ...)`` checks the syntax in this process first (nothing runs when
it is wrong), then starts ``python -I -S -B -u -X utf8`` on the guard
(``guard.py``, copied into a fresh temp dir together with the runtime
``toolscript.py`` and the name map), streams the child's stdout and stderr to
the given binary streams as they come, and returns an ``ExecResult`` whose
``exit_code`` is the script's own exit status.

What the child gets:

* an empty environment except ``PATH=/usr/bin:/bin``, ``HOME`` and ``TMPDIR``
  (the temp working dir), ``LANG=C.UTF-8``, ``MALLOC_ARENA_MAX=2`` and, only
  when a gateway is given, ``TOOLSCRIPT_GATEWAY_URL``;
* a fresh temp working dir (``mkdtemp``), removed afterwards, also on timeout;
* resource limits: CPU seconds (timeout + 1), 1 GiB of address space, 64 MiB
  per written file, 256 open files, and (not as root, where the kernel ignores
  it) a process/thread cap of what the user runs now plus 64;
* a new session; on ``timeout`` the whole process group gets SIGTERM, then
  SIGKILL after a short grace, and the exit status is 124; output past
  ``max_output`` bytes is dropped, a notice is written and the child killed;
* Linux namespaces when ``unshare`` (util-linux) can create them here:
  new user, mount and PID namespaces with a private ``/proc`` (the script
  sees no other process, killing its PID 1 ends everything in it), plus a new
  network namespace (no network at all) when no gateway is given;
  ``ExecResult.mode`` says which isolation ran;
* the runtime guard (see ``guard.py``).

README section (the lead may paste it):

    ### What `exec` isolates, and what it does not

    `toolscript exec` runs your code in a separate Python process with an empty
    environment (only `TOOLSCRIPT_GATEWAY_URL` when tools are used), a fresh
    temporary working directory (also `HOME` and `TMPDIR`) that is deleted
    afterwards, resource limits (CPU time, 1 GiB of memory, 64 MiB per file, 256
    open files, processes), a wall-clock `--timeout` (30 s; the whole process
    group is killed, exit status 124) and a cap on captured output. On Linux,
    when `unshare` can create user namespaces, it also runs in new user, mount
    and PID namespaces (the script sees no other process, and killing it kills
    everything it started) and, when the script needs no gateway, in a new
    network namespace with no network at all. The mode that ran is reported:
    `namespace(user,mount,pid[,net])+guard`, or `guard` where namespaces are not
    available (`TOOLSCRIPT_EXEC_NAMESPACES=0` turns them off).

    Inside, a runtime guard (a Python audit hook, which cannot be removed)
    refuses with `PermissionError: toolscript sandbox: ... is not allowed (...)`:
    reading files outside the temp dir other than Python's standard library;
    writing outside the temp dir; listing other directories; symbolic links;
    network connections and name lookups other than the gateway; subprocesses,
    `os.system`, `exec*`, `fork`; signalling other processes; raising limits;
    `ctypes`/`cffi` and extension modules from anywhere but the interpreter's
    own directories. Only the standard library is importable.

    The guard is a guardrail against mistakes in model-written code, not a
    security boundary against a determined attacker. Python can inspect and
    rewrite itself, so code written to defeat the guard (unwrapping the
    functions it patches, racing a path between check and use from a second
    thread, exploiting an interpreter bug) can get past it. It does not hide
    file metadata (`os.stat` and `os.path.exists` work everywhere) nor files
    the C library reads on its own (`/etc/passwd` through `pwd`, `/etc/hosts`);
    the total disk space a script writes is bounded only by the per-file limit
    and the timeout; and every tool the gateway exposes is callable. When the
    guard is bypassed, what still holds is the OS layer: the separate process,
    the limits, the timeout and, on Linux, the namespaces. Run code from
    untrusted sources in a VM or container.
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from typing import BinaryIO, Callable, Dict, List, Optional, Sequence, Tuple

from toolscript import log
from toolscript.errors import UserError

logger = log.get("codemode.sandbox")

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_OUTPUT = 1_000_000
MEMORY_LIMIT = 1 << 30  # bytes of address space
FILE_SIZE_LIMIT = 64 << 20  # bytes per written file
OPEN_FILES_LIMIT = 256
THREAD_ALLOWANCE = 64  # tasks on top of what the user already runs (RLIMIT_NPROC counts threads)
KILL_GRACE = 0.3  # seconds between SIGTERM and SIGKILL
READER_JOIN = 5.0
GROUP_GONE_WAIT = 2.0  # seconds to wait for killed processes outside our reach (the namespace's PID 1) to vanish  # seconds to wait for the output pipes to drain after the child died
PyCF_ALLOW_TOP_LEVEL_AWAIT = 0x2000

GUARD_NAME = "_toolscript_guard.py"
RUNTIME_NAME = "toolscript.py"
NAMES_NAME = "_toolscript_names.json"
CODE_NAME = "_toolscript_script"
NAMESPACES_ENV = "TOOLSCRIPT_EXEC_NAMESPACES"  # "0" turns the namespace layer off
EXIT_TIMEOUT = 124
EXIT_TRUNCATED = 1
EXIT_SYNTAX = 1


@dataclass
class ExecResult:
    exit_code: int
    mode: str  # which isolation actually ran: "namespace(user,mount,pid[,net])+guard", "guard", or "none" (not run)
    timed_out: bool
    truncated: bool
    duration_ms: int
    pid: int = 0  # the child's pid, also its process group id (0 when nothing ran)


# -- syntax ------------------------------------------------------------------------------------


def check_syntax(code: str, filename: str) -> Optional[str]:
    """``"file:line:col: SyntaxError: message"`` when ``code`` does not compile, else None."""
    error = _syntax_error(code, filename)
    return None if error is None else error[0]


def _syntax_error(code: str, filename: str) -> Optional[Tuple[str, int, int]]:
    """(message, line, column) of the first syntax error, or None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the child shows SyntaxWarnings itself, once
            compile(code, filename, "exec", flags=PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    except SyntaxError as exc:
        line, col = exc.lineno or 1, exc.offset or 1
        return f"{exc.filename or filename}:{line}:{col}: {type(exc).__name__}: {exc.msg}", line, col
    except ValueError as exc:  # NUL bytes
        return f"{filename}:1:1: SyntaxError: {exc}", 1, 1
    return None


def _syntax_report(code: str, error: Tuple[str, int, int]) -> str:
    """The message plus the offending line and a caret under the column, as Python shows them."""
    message, lineno, col = error
    lines = code.splitlines()
    if not 1 <= lineno <= len(lines):
        return message + "\n"
    text = lines[lineno - 1]
    stripped = text.lstrip()
    caret = " " * max(0, col - 1 - (len(text) - len(stripped))) + "^"
    return f"{message}\n    {stripped}\n    {caret}\n"


# -- isolation modes ---------------------------------------------------------------------------

_NAMESPACE_PREFIXES: Dict[bool, Optional[Tuple[str, ...]]] = {}
_NAMESPACE_LOCK = threading.Lock()


def namespace_prefix(net: bool) -> Optional[Tuple[str, ...]]:
    """The ``unshare ...`` argv prefix that works here (probed once per process), or None."""
    with _NAMESPACE_LOCK:
        if net not in _NAMESPACE_PREFIXES:
            _NAMESPACE_PREFIXES[net] = _probe_namespaces(net)
        return _NAMESPACE_PREFIXES[net]


def _probe_namespaces(net: bool) -> Optional[Tuple[str, ...]]:
    if not sys.platform.startswith("linux"):
        return None
    unshare = shutil.which("unshare", path="/usr/bin:/bin:/usr/sbin:/sbin")
    true = shutil.which("true", path="/usr/bin:/bin")
    if not unshare or not true:
        return None
    tail = ["--mount", "--pid", "--fork", "--kill-child", "--mount-proc"] + (["--net"] if net else [])
    # --map-current-user keeps the script's own uid (no capabilities inside); older util-linux lacks it.
    for mapping in ("--map-current-user", "--map-root-user"):
        argv = [unshare, mapping] + tail
        try:
            proc = subprocess.run(argv + [true], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=5, env={"PATH": "/usr/bin:/bin"})
        except (OSError, subprocess.SubprocessError) as exc:
            logger.debug("namespaces unavailable (%s): %s", mapping, exc)
            continue
        if proc.returncode == 0:
            return tuple(argv)
        logger.debug("namespaces unavailable (%s): %s", mapping, proc.stderr.decode(errors="replace").strip())
    return None


def _mode_name(prefix: Optional[Sequence[str]]) -> str:
    if not prefix:
        return "guard"
    kinds = ["user", "mount", "pid"] + (["net"] if "--net" in prefix else [])
    return f"namespace({','.join(kinds)})+guard"


def isolation_mode(gateway: bool = True, namespaces: Optional[bool] = None) -> str:
    """The mode ``run`` would use here (for ``exec -v`` / diagnostics)."""
    return _mode_name(_choose_prefix(not gateway, namespaces))


def _choose_prefix(net: bool, namespaces: Optional[bool]) -> Optional[Tuple[str, ...]]:
    if namespaces is False or (namespaces is None and os.environ.get(NAMESPACES_ENV, "").strip() == "0"):
        return None
    prefix = namespace_prefix(net)
    if prefix is None and namespaces is True:
        raise UserError("Linux namespaces are not available here (unshare failed or is missing); run without --namespaces")
    return prefix


# -- the child's files, environment and limits -------------------------------------------------

_SOURCES: Dict[str, bytes] = {}


def _source(name: str) -> bytes:
    """guard.py / runtime.py, from the package (works from the zipapp too)."""
    if name not in _SOURCES:
        import pkgutil

        data = pkgutil.get_data("toolscript.codemode", name)
        if data is None:
            raise UserError(f"toolscript is incomplete: toolscript/codemode/{name} is missing; reinstall it")
        _SOURCES[name] = data
    return _SOURCES[name]


def _gateway_address(url: Optional[str]) -> Tuple[str, str]:
    if not url:
        return "", ""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise UserError(f"the gateway URL must look like http://127.0.0.1:PORT/t/TOKEN, not {url!r}")
    try:
        port = parts.port or 80
    except ValueError:
        raise UserError(f"the gateway URL has a bad port: {url!r}") from None
    return parts.hostname, str(port)


def _thread_allowance() -> int:
    """RLIMIT_NPROC for the child: 0 (not set) as root, else the user's tasks now plus an allowance."""
    if not hasattr(os, "getuid") or os.getuid() == 0 or not os.path.isdir("/proc"):
        return 0  # root ignores RLIMIT_NPROC; the guard refusing fork/exec is the defence there
    uid, tasks = os.getuid(), 0
    try:
        with os.scandir("/proc") as entries:
            for entry in entries:
                if not entry.name.isdigit():
                    continue
                try:
                    if entry.stat().st_uid != uid:
                        continue
                    with open(f"/proc/{entry.name}/stat", "rb") as f:
                        fields = f.read().rsplit(b")", 1)[1].split()
                    tasks += int(fields[17])  # num_threads (field 20 of stat)
                except (OSError, IndexError, ValueError):
                    tasks += 1
    except OSError:
        return 0
    return tasks + THREAD_ALLOWANCE


def _child_env(work: str, gateway_url: Optional[str]) -> Dict[str, str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": work,
        "TMPDIR": work,
        "LANG": "C.UTF-8",
        "PYTHONIOENCODING": "utf-8",  # ignored under -I, kept for tools that look
        "MALLOC_ARENA_MAX": "2",  # fewer malloc arenas: threads stay inside the address-space limit
    }
    if gateway_url:
        env["TOOLSCRIPT_GATEWAY_URL"] = gateway_url
    return env


def _remove_tree(path: str) -> None:
    """rmtree that also gets past directories the script made read-only or unreadable."""
    shutil.rmtree(path, ignore_errors=True)
    if not os.path.lexists(path):
        return
    for dirpath, dirnames, _ in os.walk(path):
        for name in [""] + dirnames if dirpath == path else dirnames:
            target = os.path.join(dirpath, name) if name else dirpath
            try:
                if not os.path.islink(target):
                    os.chmod(target, 0o700)
            except OSError:
                pass
    shutil.rmtree(path, ignore_errors=True)
    if os.path.lexists(path):
        logger.warning("could not remove the sandbox's temp dir %s", path)


# -- running ------------------------------------------------------------------------------------


class _Child:
    """The running child: its output pumps, its process group, and how it ended."""

    def __init__(self, proc: subprocess.Popen, stdout: BinaryIO, stderr: BinaryIO, max_output: int, grace: float) -> None:
        self.proc = proc
        self.grace = grace
        self.pgid = proc.pid
        self.max_output = max_output
        self.forwarded = 0
        self.truncated = False
        self.timed_out = False
        self.killed = False  # by us (timeout, output cap, broken pipe)
        self.reaped = False
        self.lock = threading.Lock()
        self.exited = threading.Event()
        self.readers = [
            threading.Thread(target=self._pump, args=(proc.stdout, stdout), name="exec-stdout", daemon=True),
            threading.Thread(target=self._pump, args=(proc.stderr, stderr), name="exec-stderr", daemon=True),
        ]
        self.out_lock = threading.Lock()
        self.stderr = stderr
        for reader in self.readers:
            reader.start()

    def signal_group(self, signum: int) -> None:
        """Signal the whole process group, never after the leader was reaped (its id could be reused)."""
        with self.lock:
            if self.reaped:
                return
            try:
                if hasattr(os, "killpg"):
                    os.killpg(self.pgid, signum)
                else:  # pragma: no cover - Windows
                    self.proc.kill()
            except (ProcessLookupError, PermissionError):
                pass

    def stop(self, grace: Optional[float] = None) -> None:
        """SIGTERM the group, then SIGKILL it after ``grace`` seconds (at once if the child is gone by then)."""
        self.killed = True
        grace = self.grace if grace is None else grace
        if grace > 0:
            self.signal_group(signal.SIGTERM)
            self.exited.wait(grace)
        self.signal_group(getattr(signal, "SIGKILL", signal.SIGTERM))

    def on_timeout(self) -> None:
        if self.exited.is_set():
            return
        self.timed_out = True
        self.stop()

    def _pump(self, pipe, stream: BinaryIO) -> None:
        fd = pipe.fileno()
        broken = False
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            with self.out_lock:
                if self.truncated or broken:
                    continue  # keep draining so the child never blocks on a full pipe
                room = self.max_output - self.forwarded
                if len(chunk) > room:
                    chunk = chunk[: max(room, 0)]
                    self.truncated = True
                self.forwarded += len(chunk)
                try:
                    if chunk:
                        stream.write(chunk)
                        stream.flush()
                    if self.truncated:
                        self.stderr.write(f"\n[toolscript: output truncated after {self.max_output} bytes]\n".encode())
                        self.stderr.flush()
                except (BrokenPipeError, OSError, ValueError):
                    broken = True  # whoever reads us went away: stop the script, as a pipe would
            if self.truncated or broken:
                threading.Thread(target=self.stop, kwargs={"grace": 0}, daemon=True).start()

    def wait(self) -> int:
        """Wait for the child; kill what is left of its group; reap it; drain the pipes."""
        pid = self.proc.pid
        if hasattr(os, "waitid") and hasattr(os, "WNOWAIT"):
            while True:
                try:
                    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # leaves the zombie: the group id stays ours
                    break
                except InterruptedError:
                    continue
                except ChildProcessError:
                    break
            self.exited.set()
            self.signal_group(getattr(signal, "SIGKILL", signal.SIGTERM))
            with self.lock:
                self.proc.wait()
                self.reaped = True
        else:  # pragma: no cover - macOS has no waitid
            self.proc.wait()
            self.exited.set()
            self.signal_group(getattr(signal, "SIGKILL", signal.SIGTERM))
            with self.lock:
                self.reaped = True
        self._wait_group_gone()
        for reader in self.readers:
            reader.join(READER_JOIN)
        for pipe in (self.proc.stdout, self.proc.stderr):
            try:
                pipe.close()
            except OSError:
                pass
        return self.proc.returncode

    def _wait_group_gone(self, limit: float = GROUP_GONE_WAIT) -> None:
        """Wait (bounded) until no process of the group is left.

        After a kill, the namespace's PID 1 is reaped by the system's init, not
        by us (its parent was ``unshare``): give that a moment, so that when
        ``run`` returns nothing of the script is still there.
        """
        if not hasattr(os, "killpg"):
            return  # pragma: no cover
        deadline = time.monotonic() + limit
        while True:
            try:
                os.killpg(self.pgid, 0)
            except (ProcessLookupError, PermissionError):
                return
            if time.monotonic() > deadline:
                logger.debug("exec: process group %d still has members after %.1fs", self.pgid, limit)
                return
            time.sleep(0.005)

    def kill_now(self) -> None:
        """For an interrupted parent: SIGKILL the group and reap."""
        self.killed = True
        self.signal_group(getattr(signal, "SIGKILL", signal.SIGTERM))
        with self.lock:
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:  # pragma: no cover
                pass
            self.reaped = True


def _signal_message(signum: int, cpu: int, memory: int) -> str:
    name = _signal_name(signum)
    if signum == getattr(signal, "SIGXCPU", -1):
        return f"toolscript: the script was stopped by its CPU time limit ({cpu} s)"
    if signum == getattr(signal, "SIGKILL", -1):
        return f"toolscript: the script was killed ({name}): probably a resource limit (CPU time {cpu} s, memory {memory >> 20} MiB) or the system's out-of-memory killer"
    if signum == getattr(signal, "SIGXFSZ", -1):
        return "toolscript: the script wrote past the file size limit"
    if signum == getattr(signal, "SIGSEGV", -1):
        return f"toolscript: the interpreter crashed ({name}), e.g. from very deep recursion"
    return f"toolscript: the script was killed by {name}"


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _write(stream: BinaryIO, text: str) -> None:
    try:
        stream.write(text.encode("utf-8", "replace"))
        stream.flush()
    except (OSError, ValueError):
        pass


def run(
    code: str,
    *,
    filename: str = "<exec>",
    gateway_url: Optional[str] = None,
    names: Optional[dict] = None,
    timeout: float = DEFAULT_TIMEOUT,
    max_output: int = DEFAULT_MAX_OUTPUT,
    stdout: BinaryIO,
    stderr: BinaryIO,
    python: str = sys.executable,
    args: Sequence[str] = (),
    namespaces: Optional[bool] = None,
    memory_limit: int = MEMORY_LIMIT,
) -> ExecResult:
    """Run ``code`` in the sandbox; stream its output; return how it ended.

    ``gateway_url`` (``http://127.0.0.1:PORT/t/TOKEN``) is given to the script
    as ``TOOLSCRIPT_GATEWAY_URL`` and is the only address it may connect to;
    without it the script has no network (a network namespace when
    available).  ``names`` is the attribute map of the runtime
    (``{"servers": {attr: {fn: {"id": "server__tool", "args": {kwarg: json}}}}}``).
    ``namespaces``: None = use them when available (unless
    ``TOOLSCRIPT_EXEC_NAMESPACES=0``), False = never, True = required.
    Raises ``UserError`` only when the sandbox cannot be set up at all.
    """
    started = time.monotonic()
    if os.name != "posix":
        raise UserError("toolscript exec needs a POSIX system (Linux or macOS): its sandbox relies on process groups and resource limits")
    problem = _syntax_error(code, filename)
    if problem is not None:
        _write(stderr, _syntax_report(code, problem))
        return ExecResult(EXIT_SYNTAX, "none", False, False, _elapsed(started))
    if not python:
        raise UserError("cannot tell which Python to run the script with (sys.executable is empty)")
    resolved = python if os.sep in python else shutil.which(python)
    if not resolved or not os.access(resolved, os.X_OK):
        raise UserError(f"cannot run the script with {python!r}: no such executable")
    if not (0 < timeout < float("inf")):
        raise UserError(f"the timeout must be a positive number of seconds, not {timeout!r}")
    gw_host, gw_port = _gateway_address(gateway_url)
    prefix = _choose_prefix(not gateway_url, namespaces)
    mode = _mode_name(prefix)
    cpu = max(1, int(timeout + 0.999) + 1)
    limits = f"{cpu},{int(memory_limit)},{FILE_SIZE_LIMIT},{OPEN_FILES_LIMIT},{_thread_allowance()}"

    root = tempfile.mkdtemp(prefix="toolscript-exec-")
    try:
        lib, work = os.path.join(root, "lib"), os.path.join(root, "work")
        os.mkdir(lib, 0o700)
        os.mkdir(work, 0o700)
        import json

        files = {
            GUARD_NAME: _source("guard.py"),
            RUNTIME_NAME: _source("runtime.py"),
            NAMES_NAME: json.dumps(names if isinstance(names, dict) else {"servers": {}}).encode("utf-8"),
            CODE_NAME: code.encode("utf-8", "surrogateescape"),
        }
        for name, data in files.items():
            with open(os.path.join(lib, name), "wb") as f:
                f.write(data)
        argv: List[str] = list(prefix or ()) + [
            resolved, "-I", "-S", "-B", "-u", "-X", "utf8",
            os.path.join(lib, GUARD_NAME), lib, work, os.path.join(lib, CODE_NAME), filename,
            gw_host, gw_port, limits,
        ] + [str(a) for a in args]
        logger.debug("exec: mode %s, argv %s", mode, argv)
        exit_code, child = supervise(
            argv,
            cwd=work,
            env=_child_env(work, gateway_url),
            stdout=stdout,
            stderr=stderr,
            timeout=timeout,
            max_output=max_output,
            # In a PID namespace the script is PID 1, which ignores SIGTERM: no point waiting for it there.
            grace=0.0 if prefix else KILL_GRACE,
            signal_message=lambda signum: _signal_message(signum, cpu, memory_limit),
        )
    finally:
        _remove_tree(root)
    return ExecResult(exit_code, mode, child.timed_out, child.truncated, _elapsed(started), child.pgid)


def supervise(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Dict[str, str],
    stdout: BinaryIO,
    stderr: BinaryIO,
    timeout: float,
    max_output: int,
    grace: float,
    signal_message: Callable[[int], str],
) -> Tuple[int, _Child]:
    """Run ``argv`` as a script runner: its own session, output streamed and capped, a wall-clock limit.

    Returns ``(exit_code, child)``: the script's own status, or 124 after
    ``timeout`` (with a notice on ``stderr``), 1 when ``max_output`` stopped it,
    128 + N when signal N killed it (``signal_message(N)`` on ``stderr``
    unless we sent it).  ``child`` tells ``timed_out``, ``truncated`` and its
    process group id ``pgid``; nothing of the group is left when this returns,
    also when it raises.
    """
    child: Optional[_Child] = None
    try:
        try:
            proc = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            raise UserError(f"cannot start {argv[0]}: {exc.strerror or exc}") from exc
        child = _Child(proc, stdout, stderr, max_output, grace)
        timer = threading.Timer(max(timeout, 0.001), child.on_timeout)
        timer.daemon = True
        timer.start()
        try:
            returncode = child.wait()
        finally:
            timer.cancel()
    except BaseException:
        if child is not None and not child.reaped:
            child.kill_now()
        raise

    if child.timed_out:
        _write(stderr, f"toolscript: script timed out after {timeout:g}s (--timeout)\n")
        exit_code = EXIT_TIMEOUT
    elif child.truncated and child.killed:
        exit_code = EXIT_TRUNCATED
    elif returncode < 0:
        signum = -returncode
        if not child.killed:
            _write(stderr, signal_message(signum) + "\n")
        exit_code = 128 + signum
    else:
        exit_code = returncode
    return exit_code, child


def _elapsed(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
